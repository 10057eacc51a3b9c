/* SPDX-License-Identifier: MIT */
/* Target profiles: built-in defaults, overrides, custom profiles, errors with positions. */
#include "crash.h"
#include "profile.h"
#include "test.h"

#include <signal.h>

#define HEAD "{\"matrix\": 1, \"name\": \"p\",\n"
#define TAIL                                                                                                        \
        " \"axes\": [{\"name\": \"a\", \"values\": [{\"name\": \"x\"}]}],\n"                                        \
        " \"baseline\": {\"a\": \"x\"}}\n"

static struct mx_matrix *load(const char *text, char **reterr)
{
        struct mx_matrix *m = NULL;

        if (mx_matrix_load_string("p.json", text, strlen(text), &m, reterr) < 0)
                return NULL;
        return m;
}

static json_t *get(json_t *p, const char *section, const char *key)
{
        return key ? json_object_get(json_object_get(p, section), key) : json_object_get(p, section);
}

TEST(builtin_defaults)
{
        static const char *const text = HEAD " \"target\": {\"command\": [\"vllm\", \"serve\"]},\n" TAIL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load(text, &err);
        json_t *p;

        ASSERT_NOT_NULL(m);
        p = m->profile_resolved;
        ASSERT_STREQ(json_string_value(json_object_get(p, "base")), "vllm");
        ASSERT_STREQ(json_string_value(get(p, "ready", "path")), "/health");
        ASSERT_EQ(json_integer_value(get(p, "ready", "timeout_ms")), 300000); /* seed Level 1: 5 minutes */
        ASSERT_EQ(json_integer_value(json_array_get(get(p, "health", "dead_status"), 0)), 503);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(get(p, "stop", "steps"), 0), "signal")), 15);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(get(p, "stop", "steps"), 1), "signal")), 9);
        ASSERT_EQ(json_array_size(json_object_get(p, "crash_signatures")), mx_n_crash_signatures_builtin);
        ASSERT_TRUE(json_is_null(json_object_get(p, "profiler")));
}

TEST(overrides_and_custom_profile)
{
        static const char *const text =
                HEAD " \"profiles\": {\"docker-vllm\": {\"base\": \"vllm\", \"stop\": {\"command\": [\"docker\", "
                     "\"compose\", \"down\"], \"timeout\": \"2m\"}, \"logs\": {\"command\": [\"docker\", \"logs\", "
                     "\"-f\", \"serve\"]}}},\n"
                     " \"target\": {\"profile\": \"docker-vllm\", \"command\": [\"docker\", \"compose\", \"up\"],\n"
                     "  \"ready\": {\"timeout\": \"10m\", \"interval\": \"250ms\"}, \"port\": 8000,\n"
                     "  \"stop\": {\"signals\": [{\"signal\": \"SIGINT\", \"grace\": 5}]},\n"
                     "  \"crash_signatures\": [{\"class\": \"tma-layout\", \"pattern\": \"CTA_Tile and SLayout\"}],\n"
                     "  \"profiler\": {\"format\": \"ncu\", \"report\": \"{run_dir}/ncu.csv\"}},\n" TAIL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load(text, &err);
        json_t *p, *sig0;

        if (!m)
                test_fail(__FILE__, __LINE__, "%s", err);
        p = m->profile_resolved;
        ASSERT_STREQ(json_string_value(json_object_get(p, "name")), "docker-vllm");
        ASSERT_STREQ(json_string_value(json_object_get(p, "base")), "vllm");
        ASSERT_EQ(json_integer_value(get(p, "ready", "timeout_ms")), 600000);
        ASSERT_EQ(json_integer_value(get(p, "ready", "interval_ms")), 250);
        ASSERT_STREQ(json_string_value(get(p, "ready", "path")), "/health"); /* untouched key keeps its default */
        ASSERT_EQ(json_integer_value(json_object_get(p, "port")), 8000);
        ASSERT_EQ(json_array_size(get(p, "stop", "steps")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(get(p, "stop", "steps"), 0), "signal")), SIGINT);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(get(p, "stop", "steps"), 0), "grace_ms")), 5000);
        ASSERT_STREQ(json_string_value(json_array_get(get(p, "stop", "command"), 0)), "docker");
        ASSERT_EQ(json_integer_value(get(p, "stop", "timeout_ms")), 120000);
        ASSERT_STREQ(json_string_value(json_array_get(get(p, "logs", "command"), 1)), "logs");
        sig0 = json_array_get(json_object_get(p, "crash_signatures"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(sig0, "class")), "tma-layout"); /* the matrix's own first */
        ASSERT_EQ(json_array_size(json_object_get(p, "crash_signatures")), mx_n_crash_signatures_builtin + 1);
        ASSERT_STREQ(json_string_value(get(p, "profiler", "format")), "ncu");
}

static void expect_error(const char *text, const char *want)
{
        _cleanup_free_ char *err = NULL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load(text, &err);

        if (m)
                test_fail(__FILE__, __LINE__, "loaded, but expected the error '%s'", want);
        ASSERT_CONTAINS(err, want);
}

TEST(errors_name_the_place)
{
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"profile\": \"tgi\"},\n" TAIL,
                     "p.json:2:31: key 'target.profile': no profile 'tgi'");
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"ready\": {\"timeout\": \"soon\"}},\n" TAIL,
                     "key 'target.ready.timeout': expected a duration");
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"ready\": {\"path\": \"health\"}},\n" TAIL,
                     "key 'target.ready.path': an HTTP path must start with '/'");
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"stop\": {\"signals\": [{\"signal\": \"SIGFOO\"}]}},\n" TAIL,
                     "expected a signal such as \"SIGTERM\"");
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"crash_signatures\": [{\"class\": \"c\", \"pattern\": "
                          "\"(unclosed\"}]},\n" TAIL,
                     "not a valid POSIX extended regular expression");
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"profiler\": {\"format\": \"nsys\"}},\n" TAIL,
                     "a profiler needs 'report'");
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"port\": 70000},\n" TAIL, "expected a TCP port");
        expect_error(HEAD " \"profiles\": {\"mine\": {\"base\": \"tgi\"}},\n"
                          " \"target\": {\"command\": [\"x\"], \"profile\": \"mine\"},\n" TAIL,
                     "key 'profiles.mine.base': expected one of the built-in profiles");
        expect_error(HEAD " \"target\": {\"command\": [\"x\"], \"logs\": {\"command\": [\"{nope}\"]}},\n" TAIL,
                     "unknown placeholder");
}

TEST(crash_scan_prefers_root_causes)
{
        _cleanup_json_ json_t *sigs = json_array();
        _cleanup_(crash_scan_freep) struct crash_scan *cs = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_json_ json_t *seen = NULL;
        static const char *const log[] = {
                "Traceback (most recent call last):",
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
                "torch.AcceleratorError: CUDA error: an illegal instruction was encountered",
        };

        for (size_t i = 0; i < mx_n_crash_signatures_builtin; i++)
                json_array_append_new(sigs, json_pack("{s:s,s:s}", "class", mx_crash_signatures_builtin[i].cls,
                                                      "pattern", mx_crash_signatures_builtin[i].pattern));
        ASSERT_OK(crash_scan_new(sigs, &cs, &err));
        ASSERT_NULL(crash_scan_class(cs));
        crash_scan_line(cs, "INFO Using 'MARLIN' Mxfp4 MoE backend.", 38);
        ASSERT_NULL(crash_scan_class(cs));
        for (size_t i = 0; i < ELEMENTSOF(log); i++) {
                crash_scan_line(cs, log[i], strlen(log[i]));
                /* The class only ever gets more specific as root causes appear. */
                ASSERT_STREQ(crash_scan_class(cs), i == 0 ? "python-traceback" : i == 1 ? "engine-dead"
                                                                                        : "illegal-instruction");
        }
        ASSERT_CONTAINS(crash_scan_evidence(cs), "illegal instruction");
        seen = crash_scan_json(cs);
        ASSERT_EQ(json_array_size(seen), 4); /* illegal-instruction, cuda-error, engine-dead, traceback */
}

/* The first class the built-in signatures give a log, fed line by line. */
static char *builtin_class_of(const char *const *log, size_t n)
{
        _cleanup_json_ json_t *sigs = json_array();
        _cleanup_(crash_scan_freep) struct crash_scan *cs = NULL;
        _cleanup_free_ char *err = NULL;

        for (size_t i = 0; i < mx_n_crash_signatures_builtin; i++)
                json_array_append_new(sigs, json_pack("{s:s,s:s}", "class", mx_crash_signatures_builtin[i].cls,
                                                      "pattern", mx_crash_signatures_builtin[i].pattern));
        ASSERT_OK(crash_scan_new(sigs, &cs, &err));
        for (size_t i = 0; i < n; i++)
                crash_scan_line(cs, log[i], strlen(log[i]));
        return crash_scan_class(cs) ? xstrdup(crash_scan_class(cs)) : NULL;
}

TEST(crash_scan_llama_server_out_of_memory)
{
        /* llama.cpp when the GPU memory is taken (tests/sim/flavor-llama.c, as llama.cpp words it). */
        static const char *const log[] = {
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 61440.00 MiB on device 0: cudaMalloc "
                "failed: out of memory",
                "alloc_tensor_range: failed to allocate CUDA0 buffer of size 64424509440",
                "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
                "llama_model_load_from_file_impl: failed to load model",
                "main: exiting due to model loading error",
        };
        _cleanup_free_ char *cls = builtin_class_of(log, ELEMENTSOF(log));

        ASSERT_STREQ(cls, "cuda-oom");
}

TEST(crash_class_from_exit_status)
{
        _cleanup_free_ char *a = crash_class_from_status(11);       /* killed by SIGSEGV */
        _cleanup_free_ char *b = crash_class_from_status(1 << 8);   /* exit 1 */
        _cleanup_free_ char *c = crash_class_from_status(0);        /* exit 0: vLLM after engine death */

        ASSERT_STREQ(a, "signal-SEGV");
        ASSERT_STREQ(b, "exit-1");
        ASSERT_STREQ(c, "exit-0");
}
