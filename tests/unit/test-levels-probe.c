/* SPDX-License-Identifier: MIT */
/*
 * L1 runs the probe after its smoke completion and records it in its metrics
 * (mxsim as vLLM, driven through the target runner as test-levels does): ten
 * checks, what the sim really is; a profile naming another kind is a failed
 * assumption that L1 names without failing; L1.probe false records none.
 */
#include "rig.h"
#include "runner.h"
#include "test.h"

static json_t *spec(const char *base, const char *settings)
{
        return rig_json_text(
                "{\"argv\": [\"%s/tests/sim/mxsim\", \"serve\", \"{model}\", \"--host\", \"{host}\", "
                "\"--port\", \"{port}\", \"--served-model-name\", \"{served_model_name}\", \"--enforce-eager\"], "
                "\"env\": [\"MXSIM_LOAD_S=0.1\", \"MXSIM_SHUTDOWN_WAIT_S=1\", \"MXSIM_TOKEN_MS=0.2\", "
                "\"MXSIM_GPU_LOCK={run_dir}/gpu.lock\"], "
                "\"model\": \"openai/gpt-oss-120b\", \"served_model_name\": \"gpt-oss-120b\", "
                "\"expect\": null, \"level_settings\": %s, "
                "\"profile\": {\"name\": \"p\", \"base\": \"%s\", \"identifier\": \"mxsim\", "
                "\"host\": \"127.0.0.1\", \"port\": 0, "
                "\"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 20000, \"interval_ms\": 100}, "
                "\"health\": {\"path\": \"/health\", \"dead_status\": [503]}, "
                "\"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\", "
                "\"max_tokens\": 4}, "
                "\"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 5000}, {\"signal\": 9, \"grace_ms\": 5000}], "
                "\"command\": null, \"timeout_ms\": 10000}, "
                "\"logs\": null, \"crash_signatures\": [], \"profiler\": null}}",
                MX_BUILD_DIR, settings, base);
}

static json_t *l1(struct rig *g)
{
        return json_object_get(g->recorded, "L1");
}

static const char *status_of(json_t *probe, const char *check)
{
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(probe, "checks"), i, c)
                if (streq(json_string_value(json_object_get(c, "check")), check))
                        return json_string_value(json_object_get(c, "status"));
        return NULL;
}

TEST(l1_records_the_probe)
{
        struct rig g;
        json_t *probe;

        rig_init(&g, "l1-probe", spec("vllm", "{}"), "[\"L1\"]");
        rig_start(&g, 120000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        probe = json_object_get(json_object_get(l1(&g), "metrics"), "probe");
        ASSERT_NOT_NULL(probe);
        ASSERT_STREQ(json_string_value(json_object_get(probe, "server")), "vllm");
        ASSERT_EQ(json_array_size(json_object_get(probe, "checks")), 10u);
        ASSERT_STREQ(status_of(probe, "tokenize"), "pass");
        ASSERT_STREQ(status_of(probe, "cache_defeat"), "pass");
        ASSERT_EQ(json_integer_value(json_object_get(probe, "failed")), 0);
        rig_done(&g);
}

TEST(l1_names_a_failed_assumption_without_failing)
{
        struct rig g;
        json_t *probe;

        /* the profile says llama-server; the server is vLLM */
        rig_init(&g, "l1-probe-kind", spec("llama-server", "{}"), "[\"L1\"]");
        rig_start(&g, 120000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        ASSERT_CONTAINS(json_string_value(json_object_get(l1(&g), "message")), "assumptions failed: server_kind");
        probe = json_object_get(json_object_get(l1(&g), "metrics"), "probe");
        ASSERT_STREQ(status_of(probe, "server_kind"), "fail");
        rig_done(&g);
}

TEST(l1_probe_false_records_none)
{
        struct rig g;

        rig_init(&g, "l1-no-probe", spec("vllm", "{\"L1\": {\"probe\": false}}"), "[\"L1\"]");
        rig_start(&g, 120000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        ASSERT_NULL(json_object_get(json_object_get(l1(&g), "metrics"), "probe"));
        rig_done(&g);
}
