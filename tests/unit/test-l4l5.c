/* SPDX-License-Identifier: MIT */
/*
 * L4 (benchmark) as a level against mxsim through the target runner on a
 * private loop: its numbers against the sim's exact token schedule
 * (--mxsim-decode-tps, --mxsim-prefill-tps), its metrics contract (the
 * engine's document plus ready_s, memory, valid), its evidence files, an
 * invalid verdict under a failed kernel gate and a fail naming the requests
 * that did not get their tokens.
 */
#include "bench-yaml.h"
#include "http.h"
#include "proc-reaper.h"
#include "proc.h"
#include "runner.h"
#include "rig.h"
#include "test.h"

#include <math.h>
#include <signal.h>
#include <sys/stat.h>

#define DECODE_TPS 250.0
#define PREFILL_TPS 10000.0

/* mxsim as vLLM on an exact schedule; faults in MXSIM_FAULTS; expectations and level settings as JSON. */
static json_t *sim_spec(const char *faults, const char *expect, const char *settings)
{
        return rig_json_text(
                "{\"argv\": [\"%s/tests/sim/mxsim\", \"serve\", \"{model}\", \"--host\", \"{host}\", "
                "\"--port\", \"{port}\", \"--served-model-name\", \"{served_model_name}\", "
                "\"--mxsim-decode-tps\", \"%g\", \"--mxsim-prefill-tps\", \"%g\", "
                "\"--mxsim-token-log\", \"{run_dir}/tokens.jsonl\", \"--disable-uvicorn-access-log\"], "
                "\"env\": [\"MXSIM_LOAD_S=0.1\", \"MXSIM_WATCHDOG_S=1\", \"MXSIM_SHUTDOWN_WAIT_S=1\", "
                "\"MXSIM_GPU_LOCK={run_dir}/gpu.lock\", \"VLLM_MXFP4_MOE_KERNEL=gemm\", "
                "\"MXSIM_FAULTS=%s\"], "
                "\"model\": \"openai/gpt-oss-120b\", \"served_model_name\": \"gpt-oss-120b\", "
                "\"expect\": %s, \"level_settings\": %s, "
                "\"profile\": {\"name\": \"vllm\", \"base\": \"vllm\", \"identifier\": \"mxsim\", "
                "\"host\": \"127.0.0.1\", \"port\": 0, "
                "\"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 20000, "
                "\"interval_ms\": 100}, "
                "\"health\": {\"path\": \"/health\", \"dead_status\": [503]}, "
                "\"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\", "
                "\"max_tokens\": 4}, "
                "\"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 5000}, "
                "{\"signal\": 9, \"grace_ms\": 5000}], "
                "\"command\": null, \"timeout_ms\": 10000}, "
                "\"logs\": null, \"crash_signatures\": [], \"profiler\": null}}",
                MX_BUILD_DIR, DECODE_TPS, PREFILL_TPS, faults, expect, settings);
}

#define L4_SMALL                                                                                            \
        "{\"L4\": {\"pp\": [2048], \"tg\": [64], \"depth\": [0], \"runs\": 3, \"warmup\": 1, "              \
        "\"memory_interval\": \"50ms\"}}"

static json_t *level_rec(struct rig *g, const char *level)
{
        return json_object_get(g->recorded, level);
}

static json_t *metrics(struct rig *g, const char *level)
{
        return json_object_get(json_object_get(g->recorded, level), "metrics");
}

static json_t *row(json_t *m, const char *test)
{
        json_t *r;
        size_t i;

        json_array_foreach (json_object_get(m, "tests"), i, r)
                if (streq_ptr(json_string_value(json_object_get(r, "test")), test))
                        return r;
        test_fail(__FILE__, __LINE__, "no row %s", test);
}

static double num(json_t *o, const char *a, const char *b)
{
        json_t *v = json_object_get(json_object_get(o, a), b);

        if (!json_is_number(v))
                test_fail(__FILE__, __LINE__, "%s.%s is not a number", a, b);
        return json_number_value(v);
}

/*
 * Within pct % or abs_ok of what mxsim really did (its token log): mxsim keeps its schedule only as well as the
 * machine lets it (ctest -j2 on 2 cores, the ASan tree), so the truth is its writes, not its schedule (issue
 * 14); the engine's fine fidelity is test-bench's, this test checks L4's contract and figures on top of it.
 */
static void near(const char *what, double got, double want, double pct, double abs_ok)
{
        if (fabs(got - want) > MX_MAX(pct / 100 * fabs(want), abs_ok))
                test_fail(__FILE__, __LINE__, "%s = %.4f, what the sim really did says %.4f", what, got, want);
}

/*
 * From the sim's token log ({run_dir}/tokens.jsonl, tests/sim/README.md), over the last `measured` requests for
 * max_tokens tokens (the warm-up comes first): the mean tg as the definitions say, (N - 1) tokens over the
 * first to the last token's write, and the mean time from a request's arrival to the sim's write of its first
 * token (the prefill as it really went).
 */
static void sim_truth(struct rig *g, int64_t max_tokens, size_t measured, double *ret_tg, double *ret_ppt_ms)
{
        _cleanup_free_ char *path = xasprintf("%s/tokens.jsonl", g->dir);
        _cleanup_free_ char *text = test_read_file(path, NULL);
        char ids[64][80];
        int64_t recv[64], first[64], last[64], tokens[64];
        size_t n = 0, from;
        double tg = 0, ppt = 0;

        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                json_auto_t *o = json_loads(line, 0, NULL);
                const char *ev = json_string_value(json_object_get(o, "ev"));
                const char *id = json_string_value(json_object_get(o, "id"));

                ASSERT_NOT_NULL(o);
                if (streq_ptr(ev, "req") && json_integer_value(json_object_get(o, "max_tokens")) == max_tokens) {
                        ASSERT_TRUE(n < ELEMENTSOF(ids));
                        snprintf(ids[n], sizeof(ids[n]), "%s", id);
                        recv[n] = json_integer_value(json_object_get(o, "recv_us"));
                        first[n] = last[n] = -1;
                        tokens[n++] = 0;
                } else if (streq_ptr(ev, "tok")) {
                        for (size_t i = n; i-- > 0;)
                                if (streq(ids[i], id)) {
                                        int64_t sent = json_integer_value(json_object_get(o, "sent_us"));

                                        if (first[i] < 0)
                                                first[i] = sent;
                                        last[i] = sent;
                                        tokens[i] = json_integer_value(json_object_get(o, "tokens"));
                                        break;
                                }
                }
        }
        ASSERT_TRUE(n >= measured && measured > 0);
        from = n - measured;
        for (size_t i = from; i < n; i++) {
                ASSERT_EQ(tokens[i], max_tokens);
                ASSERT_TRUE(last[i] > first[i]);
                tg += (double)(tokens[i] - 1) * 1e6 / (double)(last[i] - first[i]);
                ppt += (double)(first[i] - recv[i]) / 1000.0;
        }
        *ret_tg = tg / (double)measured;
        *ret_ppt_ms = ppt / (double)measured;
}

static char *read_artifact(struct rig *g, const char *level, const char *name)
{
        json_t *a;
        size_t i;

        json_array_foreach (json_object_get(json_object_get(g->recorded, level), "artifacts"), i, a)
                if (streq_ptr(json_string_value(json_object_get(a, "name")), name)) {
                        _cleanup_free_ char *p =
                                xasprintf("%s/%s", g->dir, json_string_value(json_object_get(a, "path")));
                        return test_read_file(p, NULL);
                }
        test_fail(__FILE__, __LINE__, "%s has no artifact %s", level, name);
}

TEST(l4_numbers_follow_the_schedule_and_keep_the_contract)
{
        struct rig g;
        json_t *m, *tg, *pp, *mem;
        _cleanup_free_ char *yaml = NULL, *doc = NULL;
        double tg_true, ppt_ms;
        _cleanup_json_ json_t *file = NULL;

        rig_init(&g, "l4-pass", sim_spec("", "null", L4_SMALL), "[\"L1\", \"L4\"]");
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        if (!streq_ptr(rig_verdict(&g, "L4"), "pass"))
                test_fail(__FILE__, __LINE__, "L4: %s: %s", strna(rig_verdict(&g, "L4")),
                          strna(json_string_value(json_object_get(level_rec(&g, "L4"), "message"))));
        m = metrics(&g, "L4");
        /* the contract: the engine's document plus ready_s, memory, valid */
        ASSERT_TRUE(json_is_true(json_object_get(m, "valid")));
        ASSERT_STREQ(json_string_value(json_object_get(m, "kernel_gate")), "not run");
        ASSERT_TRUE(json_number_value(json_object_get(m, "ready_s")) > 0);
        ASSERT_EQ(json_integer_value(json_object_get(m, "measured")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(m, "failed")), 0);
        ASSERT_NOT_NULL(json_object_get(m, "definitions"));
        mem = json_object_get(m, "memory");
        ASSERT_TRUE(json_integer_value(json_object_get(mem, "samples")) >= 2);
        ASSERT_TRUE(json_integer_value(json_object_get(mem, "peak")) > 0);
        ASSERT_STREQ(json_string_value(json_object_get(mem, "figure")), "pss");
        /*
         * The numbers: tg is the rate the sim really decoded at, within 2 % (beside 3 busy loops the runner's
         * mean of three moved by 1.3 %; a token miscounted, 1.6 %, is test-bench's to catch, this test's are
         * a row mixed up or a rate in other units); pp's prefill time is the sim's, from a request's arrival
         * to its first token's write: not earlier than 1.5 % before it (the API latency L4 subtracts is under
         * a ms), at most 4 % later (beside 3 busy loops the runner, idle through the 205 ms prefill, woke for
         * the first token 5 ms late: 2.6 %); pp from another row, or from the prompt and its depth, is
         * off by far more.
         */
        tg = row(m, "tg64");
        pp = row(m, "pp2048");
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(tg, "tps"), "values")), 3);
        sim_truth(&g, 64, 3, &tg_true, &ppt_ms);
        fprintf(stderr, "tg64 %.3f t/s, the sim really sent %.3f; pp2048 prefill %.3f ms, the sim's %.3f ms\n",
                num(tg, "tps", "mean"), tg_true, 2048 * 1000.0 / num(pp, "tps", "mean"), ppt_ms);
        near("tg64 t/s", num(tg, "tps", "mean"), tg_true, 2, 0);
        /* (the schedule's prefill, 204.8 ms: the sim is never early) */
        ASSERT_TRUE(ppt_ms >= 2048 * 1000.0 / PREFILL_TPS);
        {
                double got = 2048 * 1000.0 / num(pp, "tps", "mean");

                if (!(got >= ppt_ms * 0.985 && got <= ppt_ms * 1.04))
                        test_fail(__FILE__, __LINE__, "pp2048 prefill %.3f ms, the sim's %.3f ms (1.5 %% earlier to "
                                  "4 %% later)", got, ppt_ms);
        }
        near("results tg64_tps", num(json_object_get(m, "results"), "throughput", "tg64_tps"), tg_true, 2, 0);
        /* the evidence: the same document, and seed 002's block */
        doc = read_artifact(&g, "L4", "l4-bench.json");
        file = json_loads(doc, 0, NULL);
        ASSERT_NOT_NULL(file);
        ASSERT_TRUE(json_equal(json_object_get(file, "tests"), json_object_get(m, "tests")));
        yaml = read_artifact(&g, "L4", "l4-results.yaml");
        ASSERT_NOT_NULL(strstr(yaml, "startup_time_s: "));
        ASSERT_NOT_NULL(strstr(yaml, "\nthroughput:\n  pp2048_tps: "));
        ASSERT_NOT_NULL(strstr(yaml, "\n  tg64_tps: 2"));
        ASSERT_NOT_NULL(strstr(yaml, "\n  ttft_p99_ms: "));
        ASSERT_NOT_NULL(strstr(yaml, "\n  gpu_memory_peak_gb: 0."));
        ASSERT_NULL(strstr(yaml, "INVALID"));
        rig_done(&g);
}

TEST(l4_under_a_failed_kernel_gate_is_invalid_with_its_numbers)
{
        struct rig g;
        json_t *m;
        _cleanup_free_ char *yaml = NULL;

        rig_init(
                &g, "l4-invalid",
                sim_spec(
                        "",
                        "{\"log\": {\"must_see\": [[\"a line mxsim never prints\"]], \"must_not_see\": []}}",
                        L4_SMALL),
                "[\"L1\", \"L1.5\", \"L4\"]");
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L1.5"), "fail");
        ASSERT_STREQ(rig_verdict(&g, "L4"), "invalid");
        m = metrics(&g, "L4");
        ASSERT_TRUE(json_is_false(json_object_get(m, "valid")));
        ASSERT_STREQ(json_string_value(json_object_get(m, "kernel_gate")), "fail");
        ASSERT_TRUE(num(row(m, "tg64"), "tps", "mean") > 0); /* the numbers are kept, flagged */
        ASSERT_NOT_NULL(
                strstr(json_string_value(json_object_get(level_rec(&g, "L4"), "message")), "invalid"));
        yaml = read_artifact(&g, "L4", "l4-results.yaml");
        ASSERT_TRUE(startswith(yaml, "# INVALID"));
        rig_done(&g);
}

TEST(l4_fails_naming_the_requests_without_their_tokens)
{
        struct rig g;
        const char *msg;

        rig_init(&g, "l4-short", sim_spec("short-output=2", "null", L4_SMALL), "[\"L1\", \"L4\"]");
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L4"), "fail");
        msg = json_string_value(json_object_get(level_rec(&g, "L4"), "message"));
        ASSERT_NOT_NULL(msg);
        if (!strstr(msg, "3 of 3 requests failed: pp2048 tg64 run 1: "))
                test_fail(__FILE__, __LINE__, "message: %s", msg);
        ASSERT_EQ(json_integer_value(json_object_get(metrics(&g, "L4"), "failed")), 3);
        rig_done(&g);
}

TEST(results_yaml_has_every_key_of_seed_002)
{
        _cleanup_json_ json_t *m =
                rig_json_text("{\"config\": {\"runs\": 10, \"concurrency\": 1, \"style\": \"llama-benchy\"}, "
                          "\"ready_s\": 71.25, "
                          "\"valid\": true, \"serving\": [{\"depth\": 0, \"valid\": 20}], "
                          "\"results\": {\"throughput\": {\"pp2048_tps\": 4812.5, \"tg32_tps\": 61.234, "
                          "\"tg128_tps\": null}, "
                          "\"latency\": {\"ttft_p50_ms\": 420.0, \"ttft_p99_ms\": 455.5}}, "
                          "\"memory\": {\"figure\": \"gpu\", \"peak\": 76450000000}}");
        _cleanup_free_ char *y = mx_bench_results_yaml(m);
        static const char *const want[] = {
                "startup_time_s: 71.2",          "\nthroughput:\n",           "  pp2048_tps: 4812.50\n",
                "  tg32_tps: 61.23\n",           "  tg128_tps: null\n",       "\nlatency:\n",
                "  ttft_p50_ms: 420.00\n",       "  ttft_p99_ms: 455.50\n",   "  tpot_p50_ms: null\n",
                "  itl_p99_ms: null\n",          "  e2e_p99_ms: null\n",      "\nresource:\n",
                "  gpu_memory_peak_gb: 71.20\n", "  cpu_usage_percent: null", "fewer than 459",
        };

        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                if (!strstr(y, want[i]))
                        test_fail(__FILE__, __LINE__, "no '%s' in:\n%s", want[i], y);
        ASSERT_NULL(strstr(y, "INVALID"));
}

/* ---- L5 against synthetic stored results (the history hook) ---- */

struct fake_history {
        struct mx_history ops;
        json_t *self;
        json_t *by_key; /* config key -> [results] */
        unsigned asked;
};

static int fake_self(void *ud, json_t **ret, char **reterr)
{
        struct fake_history *f = ud;

        (void)reterr;
        *ret = json_incref(f->self);
        return 0;
}

static int fake_results(void *ud, const char *level, const char *key, size_t limit, json_t **ret,
                        char **reterr)
{
        struct fake_history *f = ud;
        json_t *a = json_object_get(f->by_key, key);

        (void)reterr;
        ASSERT_STREQ(level, "L4");
        ASSERT_TRUE(limit > 0);
        f->asked++;
        *ret = a ? json_deep_copy(a) : json_array();
        return 0;
}

static void fake_init(struct fake_history *f, const char *gpu)
{
        *f = (struct fake_history){.ops = {.self = fake_self, .results = fake_results, .ud = f}};
        f->self = json_pack("{s:i,s:i,s:i,s:s,s:s,s:i,s:{s:s},s:s}", "job", 1, "run", 2, "attempt", 2,
                            "config_key", "test=1", "baseline_key", "test=0", "baseline_run", 1, "sources",
                            "vllm", "abc123", "gpu_name", gpu);
        f->by_key = json_object();
}

/* A stored L4 pass of run `run` with tg64 at `tps` t/s (10 runs, 0.2 % spread) on `gpu`. */
static void fake_add(struct fake_history *f, const char *key, int run, double tps, const char *gpu,
                     const char *sha)
{
        json_t *vals = json_array(), *a = json_object_get(f->by_key, key);

        for (int i = 0; i < 10; i++)
                json_array_append_new(vals, json_real(tps * (1 + 0.002 * ((i % 2) ? 1 : -1))));
        if (!a) {
                a = json_array();
                json_object_set_new(f->by_key, key, a);
        }
        json_array_append_new(a, json_pack("{s:i,s:i,s:i,s:I,s:s,s:{s:[{s:s,s:s,s:{s:o}}],s:b},s:{s:s},s:s}",
                                           "job", 1, "run", run, "attempt", run, "finished_at",
                                           (json_int_t)run, "verdict", "pass", "metrics", "tests", "test",
                                           "tg64", "kind", "tg", "tps", "values", vals, "valid", true,
                                           "sources", "vllm", sha, "gpu_name", gpu));
}

static void fake_done(struct fake_history *f)
{
        json_decref(f->self);
        json_decref(f->by_key);
}

#define L45 "[\"L1\", \"L4\", \"L5\"]"

static const char *message(struct rig *g, const char *level)
{
        return json_string_value(json_object_get(level_rec(g, level), "message"));
}

TEST(l5_without_a_measured_baseline_is_skipped_not_failed)
{
        struct rig g;
        struct fake_history f;

        fake_init(&f, "NVIDIA GB10");
        fake_add(&f, "test=0", 1, DECODE_TPS, "NVIDIA H100", "abc123"); /* another GPU: not comparable */
        rig_init(&g, "l5-none", sim_spec("", "null", L4_SMALL), L45);
        g.history = &f.ops;
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L4"), "pass");
        ASSERT_STREQ(rig_verdict(&g, "L5"), "skipped");
        if (!startswith(message(&g, "L5"), "no baseline measured"))
                test_fail(__FILE__, __LINE__, "L5: %s", message(&g, "L5"));
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(metrics(&g, "L5"), "left_out"), "other_gpu")),
                  1);
        ASSERT_TRUE(f.asked > 0);
        rig_done(&g);
        fake_done(&f);
}

TEST(l5_passes_against_a_baseline_as_fast_and_fails_against_a_faster_one)
{
        struct rig g;
        struct fake_history f;
        json_t *m;
        const char *rule;

        /* the job's baseline at the same rate: noise, no regression */
        fake_init(&f, "NVIDIA GB10");
        fake_add(&f, "test=0", 1, DECODE_TPS, "NVIDIA GB10", "abc123");
        rig_init(&g, "l5-pass", sim_spec("", "null", L4_SMALL), L45);
        g.history = &f.ops;
        rig_start(&g, 60000);
        rig_finish(&g);
        if (!streq_ptr(rig_verdict(&g, "L5"), "pass"))
                test_fail(__FILE__, __LINE__, "L5 %s: %s", rig_verdict(&g, "L5"), message(&g, "L5"));
        ASSERT_NOT_NULL(strstr(message(&g, "L5"), "no regression against the baseline r1 (1 vs 1 server starts)"));
        ASSERT_NOT_NULL(strstr(message(&g, "L5"), "GPU NVIDIA GB10"));
        rig_done(&g);
        fake_done(&f);

        /*
         * the baseline 40 % faster, and this configuration 30 % faster at other SHAs (10 % was within a loaded
         * machine's noise: the within-start test then left it undecided, seen under ctest -j2): the history group
         * (other SHAs, never started again) decides a regression on one start a side; the baseline group
         * could be confirmed on fresh starts (unknown), but the regression is decided already
         */
        fake_init(&f, "NVIDIA GB10");
        fake_add(&f, "test=0", 1, DECODE_TPS * 1.4, "NVIDIA GB10", "abc123");
        fake_add(&f, "test=1", 7, DECODE_TPS * 1.3, "NVIDIA GB10", "0ld5ha");
        rig_init(&g, "l5-fail", sim_spec("", "null", L4_SMALL), L45);
        g.history = &f.ops;
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L5"), "fail");
        if (!strstr(message(&g, "L5"), "tg64") || !strstr(message(&g, "L5"), "at other source SHAs r7"))
                test_fail(__FILE__, __LINE__, "L5: %s", message(&g, "L5"));
        m = metrics(&g, "L5");
        ASSERT_TRUE(json_is_true(json_object_get(m, "regression")));
        ASSERT_EQ(json_array_size(json_object_get(m, "groups")), 2);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(m, "groups"), 0),
                                                                       "comparison"),
                                                       "decision")),
                     "unknown");
        ASSERT_NULL(json_object_get(m, "confirm")); /* decided: no confirmation starts asked */
        rule = json_string_value(json_object_get(m, "rule"));
        /* one start each side: the rule says what it rests on */
        if (!startswith(rule, "tg64: 1 start each side: threshold and within-start test only") ||
            !strstr(rule, "> 5"))
                test_fail(__FILE__, __LINE__, "rule: %s", rule);
        rig_done(&g);
        fake_done(&f);
}

/* Issue 18: a baseline measured while a profiler traced its server is not compared with an untraced L4. */
TEST(l5_does_not_compare_traced_with_untraced)
{
        struct rig g;
        struct fake_history f;
        json_t *m;

        fake_init(&f, "NVIDIA GB10");
        fake_add(&f, "test=0", 1, DECODE_TPS * 1.2, "NVIDIA GB10", "abc123");
        json_object_set_new(json_object_get(json_array_get(json_object_get(f.by_key, "test=0"), 0), "metrics"),
                            "traced", json_true());
        rig_init(&g, "l5-traced", sim_spec("", "null", L4_SMALL), L45);
        g.history = &f.ops;
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L4"), "pass");
        ASSERT_TRUE(json_is_false(json_object_get(metrics(&g, "L4"), "traced")));
        ASSERT_STREQ(rig_verdict(&g, "L5"), "skipped");
        if (!startswith(message(&g, "L5"), "not compared: this run's L4 was measured without a profiler") ||
            !strstr(message(&g, "L5"), "the 1 stored result to compare with was (GPU"))
                test_fail(__FILE__, __LINE__, "L5: %s", message(&g, "L5"));
        m = metrics(&g, "L5");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(m, "left_out"), "traced")), 1);
        ASSERT_FALSE(json_is_true(json_object_get(m, "regression")));
        rig_done(&g);
        fake_done(&f);

        /* an untraced baseline beside the traced one: compared with it, the traced one still named */
        fake_init(&f, "NVIDIA GB10");
        fake_add(&f, "test=0", 1, DECODE_TPS * 1.2, "NVIDIA GB10", "abc123");
        json_object_set_new(json_object_get(json_array_get(json_object_get(f.by_key, "test=0"), 0), "metrics"),
                            "traced", json_true());
        fake_add(&f, "test=0", 3, DECODE_TPS, "NVIDIA GB10", "abc123");
        rig_init(&g, "l5-traced2", sim_spec("", "null", L4_SMALL), L45);
        g.history = &f.ops;
        rig_start(&g, 60000);
        rig_finish(&g);
        if (!strstr(message(&g, "L5"), "against the baseline r3") ||
            !strstr(message(&g, "L5"), "; not compared: 1 stored result measured while a profiler traced"))
                test_fail(__FILE__, __LINE__, "L5: %s", message(&g, "L5"));
        rig_done(&g);
        fake_done(&f);
}

TEST(l5_of_invalid_numbers_is_invalid)
{
        struct rig g;
        struct fake_history f;

        fake_init(&f, "NVIDIA GB10");
        fake_add(&f, "test=0", 1, DECODE_TPS * 2, "NVIDIA GB10", "abc123");
        rig_init(
                &g, "l5-invalid",
                sim_spec(
                        "",
                        "{\"log\": {\"must_see\": [[\"a line mxsim never prints\"]], \"must_not_see\": []}}",
                        L4_SMALL),
                "[\"L1\", \"L1.5\", \"L4\", \"L5\"]");
        g.history = &f.ops;
        rig_start(&g, 60000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L4"), "invalid");
        ASSERT_STREQ(rig_verdict(&g, "L5"), "invalid");
        rig_done(&g);
        fake_done(&f);
}
