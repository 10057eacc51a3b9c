/* SPDX-License-Identifier: MIT */
/* Target profiles: the built-in ones, the matrix's own, and their merge into a target (profile.h). */
#include "profile.h"
#include "placeholder.h"

#include <inttypes.h>
#include <regex.h>
#include <signal.h>

const char *const mx_profile_builtins[] = { "vllm", "sglang", "llama-server", "command", NULL };

/*
 * Root causes first, generic symptoms last: a run's crash class is the first
 * signature of this list (after the matrix's own) that its log matched.
 */
const struct mx_crash_signature mx_crash_signatures_builtin[] = {
        { "illegal-instruction", "cudaErrorIllegalInstruction|an illegal instruction was encountered" },
        { "launch-failure", "cudaErrorLaunchFailure|unspecified launch failure" },
        /* the last one is llama.cpp's (ggml-cuda) */
        { "cuda-oom", "CUDA out of memory|OutOfMemoryError|cudaErrorMemoryAllocation|"
                      "cudaMalloc failed: out of memory" },
        { "ptxas", "ptxas (error|fatal)" },
        { "no-cuda-arch", "No supported CUDA architectures found" },
        { "cuda-error", "CUDA error|cudaError[A-Za-z]+|CUDA initialization" },
        { "segfault", "Segmentation fault|SIGSEGV" },
        { "ggml-assert", "GGML_ASSERT|ggml_cuda_error" },
        { "model-load-failed", "failed to load model" },
        { "engine-dead", "EngineDeadError|Engine core proc [^ ]+ died unexpectedly|EngineCore encountered a fatal "
                         "error|Engine core initialization failed|Scheduler hit an exception" },
        { "import-error", "ModuleNotFoundError|ImportError" },
        { "python-traceback", "Traceback \\(most recent call last\\)" },
};
const size_t mx_n_crash_signatures_builtin = ELEMENTSOF(mx_crash_signatures_builtin);

/* Built-in defaults, target-surfaces.md §A (vLLM), §B (llama-server), §C (SGLang). */
static const char builtin_json[] = "{"
        "\"vllm\": {"
        "  \"identifier\": \"vllm\", \"host\": \"127.0.0.1\", \"port\": 0,"
        /* vLLM refuses connections while loading; /health is 200 once ready, 503 after engine death. */
        "  \"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 300000, \"interval_ms\": 1000},"
        "  \"health\": {\"path\": \"/health\", \"dead_status\": [503]},"
        "  \"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\","
        "                  \"max_tokens\": 16},"
        "  \"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 30000}, {\"signal\": 9, \"grace_ms\": 10000}],"
        "            \"command\": null, \"timeout_ms\": 60000},"
        "  \"logs\": null, \"profiler\": null},"
        "\"sglang\": {"
        "  \"identifier\": \"sglang\", \"host\": \"127.0.0.1\", \"port\": 0,"
        "  \"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 300000, \"interval_ms\": 1000},"
        /* The HTTP server can outlive a dead scheduler: /health_generate runs a generation. */
        "  \"health\": {\"path\": \"/health_generate\", \"dead_status\": [503]},"
        "  \"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\","
        "                  \"max_tokens\": 16},"
        "  \"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 30000}, {\"signal\": 9, \"grace_ms\": 10000}],"
        "            \"command\": null, \"timeout_ms\": 60000},"
        "  \"logs\": null, \"profiler\": null},"
        "\"llama-server\": {"
        "  \"identifier\": \"llama-server\", \"host\": \"127.0.0.1\", \"port\": 0,"
        /* 503 {"message": "Loading model"} while loading, 200 {"status": "ok"} when ready. */
        "  \"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 300000, \"interval_ms\": 1000},"
        "  \"health\": {\"path\": \"/health\", \"dead_status\": [500]},"
        "  \"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\","
        "                  \"max_tokens\": 16},"
        "  \"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 10000}, {\"signal\": 9, \"grace_ms\": 10000}],"
        "            \"command\": null, \"timeout_ms\": 60000},"
        "  \"logs\": null, \"profiler\": null},"
        "\"command\": {"
        "  \"identifier\": \"command\", \"host\": \"127.0.0.1\", \"port\": 0,"
        "  \"ready\": null, \"health\": null, \"completion\": null,"
        "  \"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 10000}, {\"signal\": 9, \"grace_ms\": 10000}],"
        "            \"command\": null, \"timeout_ms\": 60000},"
        "  \"logs\": null, \"profiler\": null}"
        "}";

/* Keys of target that the matrix engine owns; everything else is the profile's. */
static const char *const matrix_owned[] = { "profile", "command", "env", "model", "served_model_name", NULL };

struct resolver {
        const struct mx_matrix *m;
        char **reterr;
};

static int fail(struct resolver *rs, json_t *node, const char *key, const char *fmt, ...) _printf_(4, 5);
static int fail(struct resolver *rs, json_t *node, const char *key, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = mx_matrix_verror_at(rs->m, node, key, SIZE_MAX, rs->reterr, fmt, ap);
        va_end(ap);
        return r;
}

static int parse_duration(struct resolver *rs, json_t *obj, const char *key, json_t *v, int64_t *ret)
{
        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 86400 * 7) {
                *ret = json_integer_value(v) * 1000;
                return 0;
        }
        if (json_is_string(v) && mx_parse_duration_ms(json_string_value(v), ret) >= 0 && *ret > 0 &&
            *ret < 86400LL * 7 * 1000)
                return 0;
        return fail(rs, obj, key, "expected a duration: seconds, or a string such as \"30s\", \"5m\", \"250ms\"");
}

static int parse_signal(struct resolver *rs, json_t *obj, const char *key, json_t *v, int *ret)
{
        const char *s = json_string_value(v);

        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < NSIG) {
                *ret = (int)json_integer_value(v);
                return 0;
        }
        if (s) {
                if (startswith(s, "SIG"))
                        s += 3;
                for (int i = 1; i < NSIG; i++)
                        if (sigabbrev_np(i) && streq(s, sigabbrev_np(i))) {
                                *ret = i;
                                return 0;
                        }
        }
        return fail(rs, obj, key, "expected a signal such as \"SIGTERM\" or a number");
}

static int check_strings(struct resolver *rs, json_t *obj, const char *key, json_t *v, bool allow_null)
{
        size_t i;
        json_t *w;

        if (allow_null && json_is_null(v))
                return 0;
        if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MX_MATRIX_MAX_COMMAND)
                return fail(rs, obj, key, "expected a non-empty array of at most %d strings", MX_MATRIX_MAX_COMMAND);
        json_array_foreach (v, i, w) {
                _cleanup_free_ char *why = NULL;

                if (!json_is_string(w) || json_string_length(w) > MX_MATRIX_MAX_STRING)
                        return fail(rs, v, NULL, "element %zu: expected a string of at most %d bytes", i,
                                    MX_MATRIX_MAX_STRING);
                if (mx_placeholder_check(json_string_value(w), &why) < 0)
                        return fail(rs, v, NULL, "element %zu: %s", i, why);
        }
        return 0;
}

static int check_string(struct resolver *rs, json_t *obj, const char *key, json_t *v)
{
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > MX_MATRIX_MAX_STRING)
                return fail(rs, obj, key, "expected a non-empty string of at most %d bytes", MX_MATRIX_MAX_STRING);
        return 0;
}

static int check_path(struct resolver *rs, json_t *obj, const char *key, json_t *v)
{
        int r = check_string(rs, obj, key, v);

        if (r >= 0 && json_string_value(v)[0] != '/')
                return fail(rs, obj, key, "an HTTP path must start with '/'");
        return r;
}

static int check_status(struct resolver *rs, json_t *obj, const char *key, json_t *v)
{
        if (!json_is_integer(v) || json_integer_value(v) < 100 || json_integer_value(v) > 599)
                return fail(rs, obj, key, "expected an HTTP status between 100 and 599");
        return 0;
}

/*
 * profiler.workload: the decode work the profiling pass captures, {"prompt_tokens", "output_tokens",
 * "requests"}, each defaulting to seed 001's Phase 0 profile (2048, 64, 3).
 */
static int check_workload(struct resolver *rs, json_t *obj, const char *key, json_t *v, json_t *out)
{
        static const struct {
                const char *name;
                int64_t def, max;
        } f[] = {
                {"prompt_tokens", MX_PROFILE_WORKLOAD_PROMPT_DEFAULT, MX_PROFILE_WORKLOAD_TOKENS_MAX},
                {"output_tokens", MX_PROFILE_WORKLOAD_OUTPUT_DEFAULT, MX_PROFILE_WORKLOAD_TOKENS_MAX},
                {"requests", MX_PROFILE_WORKLOAD_REQUESTS_DEFAULT, MX_PROFILE_WORKLOAD_REQUESTS_MAX},
        };
        json_t *w, *x;
        const char *k;

        if (!json_is_object(v))
                return fail(rs, obj, key, "expected an object {\"prompt_tokens\", \"output_tokens\", \"requests\"}");
        json_object_foreach (v, k, x) {
                size_t i = 0;

                while (i < ELEMENTSOF(f) && !streq(f[i].name, k))
                        i++;
                if (i == ELEMENTSOF(f))
                        return fail(rs, v, k, "unknown key in 'workload' (known: prompt_tokens, output_tokens, "
                                              "requests)");
                if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > f[i].max)
                        return fail(rs, v, k, "expected an integer between 1 and %" PRId64, f[i].max);
        }
        w = json_object();
        for (size_t i = 0; i < ELEMENTSOF(f); i++) {
                x = json_object_get(v, f[i].name);
                json_object_set_new(w, f[i].name, json_integer(x ? json_integer_value(x) : f[i].def));
        }
        json_object_set_new(out, key, w);
        return 0;
}

/*
 * profiler.control: the server's own profiling switch, POSTed around the workload so that the capture holds
 * only it (vLLM: /start_profile and /stop_profile with --profiler-config, under nsys
 * --capture-range=cudaProfilerApi). {"start", "stop"}: HTTP paths, vLLM's by default.
 */
static int check_control(struct resolver *rs, json_t *obj, const char *key, json_t *v, json_t *out)
{
        json_t *c, *x;
        const char *k;
        int r;

        if (!json_is_object(v))
                return fail(rs, obj, key, "expected an object {\"start\": PATH, \"stop\": PATH}");
        json_object_foreach (v, k, x) {
                if (!streq(k, "start") && !streq(k, "stop"))
                        return fail(rs, v, k, "unknown key in 'control' (known: start, stop)");
                if ((r = check_path(rs, v, k, x)) < 0)
                        return r;
        }
        c = json_pack("{s:s,s:s}", "start", "/start_profile", "stop", "/stop_profile");
        json_object_update(c, v);
        json_object_set_new(out, key, c);
        return 0;
}

/* The user's value for key of a sub-object, normalised into out (which holds the defaults). */
static int sub_key(struct resolver *rs, const char *section, json_t *obj, const char *key, json_t *v, json_t *out)
{
        int64_t ms;
        int r;

        if (endswith(key, "timeout") || streq(key, "interval")) {
                _cleanup_free_ char *k = xasprintf("%s_ms", key);

                r = parse_duration(rs, obj, key, v, &ms);
                if (r < 0)
                        return r;
                json_object_set_new(out, k, json_integer(ms));
                return 0;
        }
        if (streq(section, "profiler") && streq(key, "workload"))
                return check_workload(rs, obj, key, v, out);
        if (streq(section, "profiler") && streq(key, "control"))
                return check_control(rs, obj, key, v, out);
        if (streq(key, "path"))
                r = check_path(rs, obj, key, v);
        else if (streq(key, "status"))
                r = check_status(rs, obj, key, v);
        else if (streq(key, "dead_status")) {
                size_t i;
                json_t *s;

                if (!json_is_array(v) || json_array_size(v) > 16)
                        return fail(rs, obj, key, "expected an array of HTTP statuses");
                json_array_foreach (v, i, s)
                        if ((r = check_status(rs, v, NULL, s)) < 0)
                                return r;
                r = 0;
        } else if (streq(key, "prompt") || streq(key, "format"))
                r = check_string(rs, obj, key, v);
        else if (streq(key, "report")) {
                _cleanup_free_ char *why = NULL;

                r = check_string(rs, obj, key, v);
                if (r >= 0 && mx_placeholder_check(json_string_value(v), &why) < 0)
                        r = fail(rs, obj, key, "%s", why);
        } else if (streq(key, "max_tokens"))
                r = json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 4096
                            ? 0
                            : fail(rs, obj, key, "expected an integer between 1 and 4096");
        else if (streq(key, "command") || streq(key, "after_stop"))
                r = check_strings(rs, obj, key, v, true);
        else
                return fail(rs, obj, key, "unknown key in '%s'", section);
        if (r < 0)
                return r;
        if (streq(section, "profiler") && streq(key, "format") &&
            !streq(json_string_value(v), "auto") && !streq(json_string_value(v), "nsys") &&
            !streq(json_string_value(v), "ncu"))
                return fail(rs, obj, key, "expected \"auto\", \"nsys\" or \"ncu\"");
        json_object_set(out, key, v);
        return 0;
}

static int stop_steps(struct resolver *rs, json_t *obj, json_t *v, json_t *out)
{
        json_t *steps = json_array(), *s;
        size_t i;

        if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MX_PROFILE_MAX_STOP_STEPS) {
                json_decref(steps);
                return fail(rs, obj, "signals", "expected 1 to %d steps {\"signal\": ..., \"grace\": ...}",
                            MX_PROFILE_MAX_STOP_STEPS);
        }
        json_array_foreach (v, i, s) {
                int sig = 0, r;
                int64_t grace = 10000;
                const char *k;
                json_t *x;

                if (!json_is_object(s)) {
                        json_decref(steps);
                        return fail(rs, v, NULL, "step %zu: expected an object", i);
                }
                json_object_foreach (s, k, x) {
                        if (streq(k, "signal"))
                                r = parse_signal(rs, s, k, x, &sig);
                        else if (streq(k, "grace"))
                                r = parse_duration(rs, s, k, x, &grace);
                        else
                                r = fail(rs, s, k, "unknown key in a stop step (signal, grace)");
                        if (r < 0) {
                                json_decref(steps);
                                return r;
                        }
                }
                if (sig == 0) {
                        json_decref(steps);
                        return fail(rs, s, NULL, "a stop step needs a signal");
                }
                json_array_append_new(steps, json_pack("{s:i,s:I}", "signal", sig, "grace_ms", (json_int_t)grace));
        }
        json_object_set_new(out, "steps", steps);
        return 0;
}

/* The keys each section takes, as a user writes them (durations without _ms). */
static const struct {
        const char *section;
        const char *keys;
} section_keys[] = {
        { "ready", "path, status, timeout, interval" },
        { "health", "path, dead_status" },
        { "completion", "path, prompt, max_tokens" },
        { "stop", "signals, command, timeout" },
        { "logs", "command" },
        { "profiler", "format, report, after_stop, timeout, workload, control" },
};

/* Is key one of the section's keys? Fails naming the known ones if not. */
static int section_key_known(struct resolver *rs, const char *name, json_t *v, const char *key)
{
        for (size_t i = 0; i < ELEMENTSOF(section_keys); i++) {
                const char *p;
                size_t n = strlen(key);

                if (!streq(section_keys[i].section, name))
                        continue;
                for (p = strstr(section_keys[i].keys, key); p; p = strstr(p + 1, key))
                        if ((p == section_keys[i].keys || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
                                return 0;
                return fail(rs, v, key, "unknown key in '%s' (known: %s)", name, section_keys[i].keys);
        }
        return fail(rs, v, key, "unknown key in '%s'", name);
}

/* Merge a user object for one section (ready, health, ...) over the defaults in out. */
static int section(struct resolver *rs, json_t *prof, const char *name, json_t *v, json_t *out)
{
        json_t *cur = json_object_get(out, name), *merged;
        const char *k;
        json_t *x;
        int r;

        if (json_is_null(v)) {
                json_object_set_new(out, name, json_null());
                return 0;
        }
        if (!json_is_object(v))
                return fail(rs, prof, name, "expected an object or null");
        if (json_is_object(cur))
                merged = json_deep_copy(cur);
        else if (streq(name, "profiler"))
                merged = json_pack("{s:s,s:n,s:i}", "format", "auto", "after_stop", "timeout_ms", 120000);
        else
                merged = json_object();
        json_object_foreach (v, k, x) {
                r = section_key_known(rs, name, v, k);
                if (r >= 0)
                        r = streq(name, "stop") && streq(k, "signals") ? stop_steps(rs, v, x, merged)
                                                                       : sub_key(rs, name, v, k, x, merged);
                if (r < 0) {
                        json_decref(merged);
                        return r;
                }
        }
        json_object_set_new(out, name, merged);
        return 0;
}

/* Prepend the user's signatures to those already in out (which end with the built-in ones). */
static int signatures(struct resolver *rs, json_t *prof, json_t *v, json_t *out)
{
        json_t *list = json_array(), *s;
        size_t i;

        if (!json_is_array(v) || json_array_size(v) > MX_PROFILE_MAX_SIGNATURES) {
                json_decref(list);
                return fail(rs, prof, "crash_signatures", "expected an array of {\"class\", \"pattern\"}");
        }
        json_array_foreach (v, i, s) {
                const char *cls = json_string_value(json_object_get(s, "class"));
                const char *pat = json_string_value(json_object_get(s, "pattern"));
                regex_t re;

                if (!json_is_object(s) || !cls || !pat || json_object_size(s) != 2 || strlen(cls) > MX_MATRIX_MAX_NAME) {
                        json_decref(list);
                        return fail(rs, v, NULL, "signature %zu: expected {\"class\": NAME, \"pattern\": REGEX}", i);
                }
                if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
                        json_decref(list);
                        return fail(rs, s, "pattern", "not a valid POSIX extended regular expression");
                }
                regfree(&re);
                json_array_append_new(list, json_pack("{s:s,s:s}", "class", cls, "pattern", pat));
        }
        json_array_extend(list, json_object_get(out, "crash_signatures"));
        json_object_set_new(out, "crash_signatures", list);
        return 0;
}

static json_t *builtin_signatures(void)
{
        json_t *list = json_array();

        for (size_t k = 0; k < mx_n_crash_signatures_builtin; k++)
                json_array_append_new(list, json_pack("{s:s,s:s}", "class", mx_crash_signatures_builtin[k].cls,
                                                      "pattern", mx_crash_signatures_builtin[k].pattern));
        return list;
}

static bool env_name_ok(const char *s)
{
        if (!*s || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
                        return false;
        return true;
}

/*
 * api_key (the bearer token itself) or api_key_env (the environment variable that holds it): one of the
 * two, the later setting replacing the other; null removes both. The runner sends the token on every
 * request of every level (vLLM's --api-key answers 401 on /v1 without it).
 */
static int api_key(struct resolver *rs, json_t *obj, const char *k, json_t *v, json_t *out)
{
        const char *s = json_string_value(v);

        if (json_is_null(v)) {
                json_object_del(out, "api_key");
                json_object_del(out, "api_key_env");
                return 0;
        }
        if (check_string(rs, obj, k, v) < 0)
                return -EINVAL;
        if (strpbrk(s, "\r\n") || (streq(k, "api_key") && strlen(s) > 1024))
                return fail(rs, obj, k, "an API key of at most 1024 bytes without line breaks");
        if (streq(k, "api_key_env") && !env_name_ok(s))
                return fail(rs, obj, k, "expected the name of an environment variable (letters, digits, _)");
        json_object_del(out, streq(k, "api_key") ? "api_key_env" : "api_key");
        json_object_set(out, k, v);
        return 0;
}

/* Apply the keys of one user object (a profiles entry or the target) over out. */
static int apply(struct resolver *rs, json_t *obj, json_t *out, bool is_target)
{
        const char *k;
        json_t *v;
        int r;

        json_object_foreach (obj, k, v) {
                if (is_target && strv_contains((char **)matrix_owned, k))
                        continue;
                if (!is_target && streq(k, "base"))
                        continue;
                if (streq(k, "ready") || streq(k, "health") || streq(k, "completion") || streq(k, "stop") ||
                    streq(k, "logs") || streq(k, "profiler"))
                        r = section(rs, obj, k, v, out);
                else if (streq(k, "crash_signatures"))
                        r = signatures(rs, obj, v, out);
                else if (streq(k, "identifier"))
                        r = check_string(rs, obj, k, v) < 0 ? -EINVAL : (json_object_set(out, k, v), 0);
                else if (streq(k, "host"))
                        r = check_string(rs, obj, k, v) < 0 ? -EINVAL : (json_object_set(out, k, v), 0);
                else if (streq(k, "api_key") || streq(k, "api_key_env"))
                        r = api_key(rs, obj, k, v, out);
                else if (streq(k, "port"))
                        r = json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < 65536
                                    ? (json_object_set(out, k, v), 0)
                                    : fail(rs, obj, k, "expected a TCP port, or 0 for a free port per run");
                else
                        r = fail(rs, obj, k,
                                 "unknown key%s (known: %sidentifier, host, port, api_key, api_key_env, ready, "
                                 "health, completion, stop, logs, crash_signatures, profiler)",
                                 is_target ? " in target" : " in a profile",
                                 is_target ? "profile, command, env, model, served_model_name, " : "base, ");
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool is_builtin(const char *name)
{
        return strv_contains((char **)mx_profile_builtins, name);
}

/* Built-in defaults of base, the profiles entry custom (or NULL) applied over them. */
static int profile_start(struct resolver *rs, json_t *builtins, const char *name, json_t *custom,
                         json_t **ret)
{
        const char *base = name;
        json_t *out;
        int r;

        if (custom) {
                if (!json_is_object(custom))
                        return fail(rs, rs->m->profiles, name, "a profile must be an object");
                if (!json_object_get(custom, "base"))
                        return fail(rs, rs->m->profiles, name,
                                    "a profile needs 'base': one of the built-in profiles vllm, sglang, "
                                    "llama-server, command");
                base = json_string_value(json_object_get(custom, "base"));
                if (!base || !is_builtin(base))
                        return fail(rs, custom, "base",
                                    "expected one of the built-in profiles: vllm, sglang, llama-server, "
                                    "command");
        } else if (!is_builtin(name))
                return fail(rs, rs->m->target, "profile",
                            "no profile '%s': not built in (vllm, sglang, "
                            "llama-server, command) and not under 'profiles'",
                            name);
        out = json_deep_copy(json_object_get(builtins, base));
        json_object_set_new(out, "name", json_string(name));
        json_object_set_new(out, "base", json_string(base));
        json_object_set_new(out, "crash_signatures", builtin_signatures());
        r = custom ? apply(rs, custom, out, false) : 0;
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

/* Checks on the merged profile; errors point at node (the target, or the profiles entry). */
static int profile_complete(struct resolver *rs, json_t *out, json_t *node)
{
        json_t *ready = json_object_get(out, "ready");

        if (json_is_object(json_object_get(out, "profiler")) &&
            !json_object_get(json_object_get(out, "profiler"), "report"))
                return fail(rs, node, "profiler",
                            "a profiler needs 'report': the file to read kernels from");
        if (json_is_object(json_object_get(out, "logs")) &&
            !json_is_array(json_object_get(json_object_get(out, "logs"), "command")))
                return fail(rs, node, "logs", "'logs' needs 'command': the command that prints the logs");
        if (json_is_object(ready) && !json_object_get(ready, "path"))
                return fail(rs, node, "ready", "'ready' needs 'path'");
        /* The target runner cannot tell when a server is up without a probe. */
        if (!json_is_object(ready) && !streq(json_string_value(json_object_get(out, "base")), "command"))
                return fail(rs, node, json_object_get(node, "ready") ? "ready" : NULL,
                            "a server profile needs 'ready' (only the command profile has none)");
        return 0;
}

/* Every entry of "profiles", used or not, so a file is refused as a whole. */
static int check_all_profiles(struct resolver *rs, json_t *builtins)
{
        const char *k;
        json_t *v;

        json_object_foreach (rs->m->profiles, k, v) {
                _cleanup_json_ json_t *out = NULL;
                int r = profile_start(rs, builtins, k, v, &out);

                if (r >= 0)
                        r = profile_complete(rs, out, v);
                if (r < 0)
                        return r;
        }
        return 0;
}

int mx_profile_resolve(const struct mx_matrix *m, json_t **ret, char **reterr)
{
        struct resolver rs = { .m = m, .reterr = reterr };
        const char *name = m->profile ? m->profile : "vllm";
        _cleanup_json_ json_t *builtins = json_loads(builtin_json, 0, NULL), *out = NULL;
        json_t *custom = m->profiles ? json_object_get(m->profiles, name) : NULL;
        int r;

        if (!builtins)
                mx_die("profile.c: the built-in profiles do not parse");
        r = check_all_profiles(&rs, builtins);
        if (r >= 0)
                r = profile_start(&rs, builtins, name, custom, &out);
        if (r >= 0)
                r = apply(&rs, m->target, out, true);
        if (r >= 0)
                r = profile_complete(&rs, out, m->target);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        return 0;
}
