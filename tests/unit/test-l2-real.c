/* SPDX-License-Identifier: MIT */
/*
 * L2 against the real llama-server (CPU, ../shared/targets) with the two
 * generated random-weight models, llama and gpt-oss (MXFP4 experts, sinks,
 * sliding window), through the target runner with the built-in llama-server
 * profile's shape: a clean configuration passes, its logprobs came in the
 * content form, its determinism pairs were the same with cache_prompt false,
 * and the perplexity reference it cannot give is "not measured".
 *
 * The server: MX_LLAMA_SERVER=PATH, else ../shared/targets/llama-server-cpu.xz
 * unpacked into the build directory; the models are generated there by
 * ../shared/targets/gguf-tools (MX_GGUF_TOOLS=DIR points elsewhere). Without
 * them the test skips, saying so. tests/real/ runs the whole daemon.
 */
#include "rig.h"
#include "test.h"

#include <stdlib.h>
#include <sys/stat.h>

static bool exists(const char *p)
{
        return access(p, R_OK) == 0;
}

static char *server_path(void)
{
        const char *env = getenv("MX_LLAMA_SERVER");
        _cleanup_free_ char *xz = xasprintf("%s/../shared/targets/llama-server-cpu.xz", MX_SOURCE_DIR);
        char *out = xasprintf("%s/tests/llama-server", MX_BUILD_DIR);
        _cleanup_free_ char *cmd = NULL;

        if (env && *env) {
                free(out);
                return xstrdup(env);
        }
        if (exists(out))
                return out;
        if (!exists(xz))
                test_skip("no llama-server: set MX_LLAMA_SERVER=PATH (or put ../shared/targets beside the source)");
        cmd = xasprintf("xz -dc '%s' > '%s.tmp' && chmod +x '%s.tmp' && mv '%s.tmp' '%s'", xz, out, out, out, out);
        if (system(cmd) != 0)
                test_skip("cannot unpack llama-server-cpu.xz (xz missing?)");
        return out;
}

/* A model from the generator (make-random-gguf.py or make-random-gptoss-gguf.py), made once. */
static char *model_path(const char *generator, const char *name)
{
        const char *env = getenv("MX_GGUF_TOOLS");
        _cleanup_free_ char *tools = env ? xstrdup(env) : xasprintf("%s/../shared/targets/gguf-tools", MX_SOURCE_DIR);
        _cleanup_free_ char *gen = xasprintf("%s/%s", tools, generator), *cmd = NULL;
        char *out = xasprintf("%s/tests/%s", MX_BUILD_DIR, name);

        if (exists(out))
                return out;
        if (!exists(gen))
                test_skip(xasprintf("no model generator %s (MX_GGUF_TOOLS=DIR)", gen));
        cmd = xasprintf("PYTHONPATH='%s' /usr/bin/python3 '%s' --out '%s.tmp' >/dev/null 2>&1 && mv '%s.tmp' '%s'",
                        tools, gen, out, out, out);
        if (system(cmd) != 0)
                test_skip(xasprintf("the model generator failed (python3 with numpy and PyYAML needed): %s", cmd));
        return out;
}

static json_t *real_spec(const char *server, const char *model, const char *settings)
{
        return rig_json_text(
                "{\"argv\": [\"%s\", \"-m\", \"%s\", \"--host\", \"{host}\", \"--port\", \"{port}\", \"-c\", "
                "\"4096\", \"-t\", \"2\"], \"env\": [], \"model\": \"%s\", \"served_model_name\": null, "
                "\"expect\": null, \"level_settings\": %s, "
                "\"profile\": {\"name\": \"llama-server\", \"base\": \"llama-server\", \"identifier\": "
                "\"llama-server\", \"host\": \"127.0.0.1\", \"port\": 0, "
                "\"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 120000, \"interval_ms\": 200}, "
                "\"health\": {\"path\": \"/health\", \"dead_status\": [500]}, "
                "\"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\", "
                "\"max_tokens\": 4}, "
                "\"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 10000}, {\"signal\": 9, \"grace_ms\": 5000}], "
                "\"command\": null, \"timeout_ms\": 30000}, "
                "\"logs\": null, \"crash_signatures\": [], \"profiler\": null}}",
                server, model, model, settings);
}

/* The reference file asks for a perplexity comparison llama-server cannot serve: not measured. */
static void l2_on(const char *generator, const char *name)
{
        _cleanup_free_ char *server = server_path(), *model = model_path(generator, name);
        _cleanup_free_ char *ref = xasprintf("%s/tests/l2-real-ref.json", MX_BUILD_DIR), *settings = NULL;
        _cleanup_free_ char *rig_name = xasprintf("l2-real-%s", name);
        const char *msg;
        struct rig g;
        json_t *m, *det;
        FILE *f = fopen(ref, "we");

        ASSERT_NOT_NULL(f);
        fputs("{\"capital\": 10.0}", f);
        fclose(f);
        /* Small by default (2 cores); MX_L2_REAL_MAX_TOKENS=64 MX_L2_REAL_TRAFFIC=4 are L2's defaults. */
        settings = xasprintf("{\"L2\": {\"max_tokens\": %s, \"after_traffic\": %s, \"reference\": \"%s\"}}",
                             getenv("MX_L2_REAL_MAX_TOKENS") ? getenv("MX_L2_REAL_MAX_TOKENS") : "16",
                             getenv("MX_L2_REAL_TRAFFIC") ? getenv("MX_L2_REAL_TRAFFIC") : "2", ref);
        rig_init(&g, rig_name, real_spec(server, model, settings), "[\"L1\", \"L2\"]");
        g.loop_timeout_ms = 580000; /* 2 shared cores: L2's defaults take minutes */
        rig_start(&g, 580000);
        rig_finish(&g);
        msg = json_string_value(json_object_get(json_object_get(g.recorded, "L2"), "message"));
        m = json_object_get(json_object_get(g.recorded, "L2"), "metrics");
        fprintf(stderr, "  %s: L2 %s: %s\n", name, strna(rig_verdict(&g, "L2")), strna(msg));
        {
                _cleanup_free_ char *det_text = json_dumps(json_object_get(m, "determinism"), JSON_COMPACT);

                fprintf(stderr, "  determinism: %s\n", strna(det_text));
        }
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        ASSERT_STREQ(rig_verdict(&g, "L2"), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(m, "server_kind")), "llama-server");
        det = json_object_get(m, "determinism");
        ASSERT_EQ(json_object_size(det), 4);
        ASSERT_TRUE(json_is_true(json_object_get(json_object_get(det, "completions/repeat"), "same")));
        ASSERT_TRUE(json_is_true(json_object_get(json_object_get(det, "chat/again"), "same")));
        /* No prompt_logprobs on llama-server: never "every check passed". */
        ASSERT_CONTAINS(msg, "not measured: perplexity: the server sent no prompt_logprobs");
        ASSERT_NULL(strstr(msg, "every check passed"));
        rig_done(&g);
}

TEST(l2_passes_on_the_real_llama_server_llama_model)
{
        l2_on("make-random-gguf.py", "l2-llama.gguf");
}

TEST(l2_passes_on_the_real_llama_server_gptoss_model)
{
        l2_on("make-random-gptoss-gguf.py", "l2-gptoss.gguf");
}
