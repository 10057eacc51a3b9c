/* SPDX-License-Identifier: MIT */
/*
 * The levels L2 (correctness) and L3 (stress) against mxsim, driven through
 * the target runner on a private loop: a faithful server passes; every fault
 * the sim can inject for them (tests/sim/README.md) makes the level fail with
 * the check that caught it, the prompt or request it names, and the evidence
 * it kept. Each fault is a test that fails without its check.
 */
#include "http.h"
#include "proc-reaper.h"
#include "proc.h"
#include "runner.h"
#include "rig.h"
#include "test.h"

#include <signal.h>
#include <sys/stat.h>



/* mxsim as vLLM; faults in MXSIM_FAULTS; level settings as JSON text. */
static json_t *sim_spec(const char *faults, const char *settings)
{
        json_t *spec = rig_json_text(
                "{\"argv\": [\"%s/tests/sim/mxsim\", \"serve\", \"{model}\", \"--host\", \"{host}\", "
                "\"--port\", \"{port}\", \"--served-model-name\", \"{served_model_name}\", "
                "\"--enforce-eager\", \"--disable-uvicorn-access-log\"], "
                "\"env\": [\"MXSIM_LOAD_S=0.1\", \"MXSIM_WATCHDOG_S=1\", \"MXSIM_SHUTDOWN_WAIT_S=1\", "
                "\"MXSIM_TOKEN_MS=0.2\", \"MXSIM_RESIDENT_MB=64\", \"MXSIM_GPU_LOCK={run_dir}/gpu.lock\", \"VLLM_MXFP4_MOE_KERNEL=gemm\", "
                "\"MXSIM_FAULTS=%s\"], "
                "\"model\": \"openai/gpt-oss-120b\", \"served_model_name\": \"gpt-oss-120b\", "
                "\"expect\": null, \"level_settings\": %s, "
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
                MX_BUILD_DIR, faults, settings);

        return spec;
}

/* mxsim as llama-server (--flavor llama-server), run under a profile of this base. */
static json_t *sim_llama_spec(const char *base, const char *settings)
{
        return rig_json_text(
                "{\"argv\": [\"%s/tests/sim/mxsim\", \"serve\", \"{model}\", \"--host\", \"{host}\", "
                "\"--port\", \"{port}\", \"--alias\", \"{served_model_name}\", \"--flavor\", \"llama-server\"], "
                "\"env\": [\"MXSIM_LOAD_S=0.1\", \"MXSIM_TOKEN_MS=0.2\", \"MXSIM_GPU_LOCK={run_dir}/gpu.lock\"], "
                "\"model\": \"m.gguf\", \"served_model_name\": \"m\", \"expect\": null, \"level_settings\": %s, "
                "\"profile\": {\"name\": \"%s\", \"base\": \"%s\", \"identifier\": \"mxsim\", "
                "\"host\": \"127.0.0.1\", \"port\": 0, "
                "\"ready\": {\"path\": \"/health\", \"status\": 200, \"timeout_ms\": 20000, \"interval_ms\": 100}, "
                "\"health\": {\"path\": \"/health\", \"dead_status\": [500]}, "
                "\"completion\": {\"path\": \"/v1/completions\", \"prompt\": \"The capital of France is\", "
                "\"max_tokens\": 4}, "
                "\"stop\": {\"steps\": [{\"signal\": 15, \"grace_ms\": 5000}, {\"signal\": 9, \"grace_ms\": 5000}], "
                "\"command\": null, \"timeout_ms\": 10000}, "
                "\"logs\": null, \"crash_signatures\": [], \"profiler\": null}}",
                MX_BUILD_DIR, settings, base, base);
}

static json_t *level_rec(struct rig *g, const char *level)
{
        return json_object_get(g->recorded, level);
}

/* The first failure L2 kept: its check, and its evidence file exists. */
static json_t *first_failure(struct rig *g, const char *level)
{
        json_t *f = json_array_get(json_object_get(json_object_get(level_rec(g, level), "metrics"), "failures"), 0);
        const char *ev = json_string_value(json_object_get(f, "evidence"));

        ASSERT_NOT_NULL(f);
        if (ev) {
                _cleanup_free_ char *p = xasprintf("%s/%s", g->dir, ev);
                ASSERT_EQ(access(p, R_OK), 0);
        }
        return f;
}

/* Small but complete L2 settings: every check runs, with few tokens. */
#define L2_SMALL "{\"L2\": {\"max_tokens\": 12, \"after_traffic\": 2}}"

static void run_levels(struct rig *g, const char *name, const char *faults, const char *settings,
                       const char *levels)
{
        rig_init(g, name, sim_spec(faults, settings), levels);
        rig_start(g, 120000);
        rig_finish(g);
}

TEST(l2_passes_on_a_faithful_server)
{
        struct rig g;
        json_t *m;

        run_levels(&g, "l2-pass", "", L2_SMALL, "[\"L1\",\"L2\"]");
        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "completed");
        ASSERT_STREQ(rig_verdict(&g, "L1"), "pass");
        if (!streq(rig_verdict(&g, "L2"), "pass"))
                test_fail(__FILE__, __LINE__, "L2: %s", strna(json_string_value(json_object_get(level_rec(&g, "L2"), "message"))));
        m = json_object_get(level_rec(&g, "L2"), "metrics");
        /* 6 prompts x 2 endpoints, then per endpoint: repeat, 2 of traffic, again. */
        ASSERT_EQ(json_integer_value(json_object_get(m, "requests")), 12 + 2 * 4);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(json_object_get(m, "prompts"), "code/chat"),
                                                     "completion_tokens")),
                  12);
        rig_done(&g);
}

TEST(l2_every_injected_fault_fails_with_its_check_and_evidence)
{
        static const struct {
                const char *fault, *check, *step, *message;
        } want[] = {
                { "short-output=1", "tokens", "main", "completion_tokens 11, asked for exactly 12" },
                { "nan-logprobs", "nan", "main", "NaN" },
                { "positive-logprobs", "logprobs", "main", "above 0" },
                { "seed-drift", "determinism", "again", "after other traffic" },
                { "degenerate-text", "coherence", "main", "degenerate text" },
                { "invalid-utf8", "utf8", "main", "not valid UTF-8" },
                { "null-content", "text", "main", "content and reasoning are null" },
        };

        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                _cleanup_free_ char *name = xasprintf("l2-%s", want[i].fault);
                const char *msg;
                struct rig g;
                json_t *f;

                /* Only chat shows null content; the others are caught on the first prompt. */
                run_levels(&g, name, want[i].fault,
                           streq(want[i].fault, "null-content")
                                   ? "{\"L2\": {\"max_tokens\": 12, \"after_traffic\": 2, \"endpoints\": [\"chat\"]}}"
                                   : L2_SMALL,
                           "[\"L2\"]");
                msg = json_string_value(json_object_get(level_rec(&g, "L2"), "message"));
                fprintf(stderr, "  %-20s %s: %s\n", want[i].fault, strna(rig_verdict(&g, "L2")), strna(msg));
                ASSERT_STREQ(rig_verdict(&g, "L2"), "fail");
                f = first_failure(&g, "L2");
                ASSERT_STREQ(json_string_value(json_object_get(f, "check")), want[i].check);
                ASSERT_STREQ(json_string_value(json_object_get(f, "step")), want[i].step);
                ASSERT_CONTAINS(msg, "prompt '");
                ASSERT_CONTAINS(msg, want[i].message);
                ASSERT_TRUE(json_array_size(json_object_get(level_rec(&g, "L2"), "artifacts")) > 0);
                rig_done(&g);
        }
}

TEST(l2_reference_perplexity_within_tolerance)
{
        _cleanup_free_ char *ref = NULL, *settings = NULL, *text = NULL;
        _cleanup_json_ json_t *measured = NULL;
        struct rig g;
        json_t *m, *v;
        const char *k;
        FILE *f;

        /* A reference with nonsense values: every prompt is out of tolerance. */
        ref = xasprintf("%s/reference.json", test_tmpdir());
        f = fopen(ref, "we");
        ASSERT_NOT_NULL(f);
        fputs("{\"capital\": 1.0, \"count\": 1.0, \"story\": 1.0, \"code\": 1.0, \"explain\": 1.0, "
              "\"translate\": 1.0}", f);
        fclose(f);
        settings = xasprintf("{\"L2\": {\"max_tokens\": 8, \"after_traffic\": 0, \"endpoints\": [\"completions\"], "
                             "\"reference\": \"%s\"}}", ref);
        run_levels(&g, "l2-ref-bad", "", settings, "[\"L2\"]");
        ASSERT_STREQ(rig_verdict(&g, "L2"), "fail");
        ASSERT_STREQ(json_string_value(json_object_get(first_failure(&g, "L2"), "check")), "perplexity");
        /* The measured values become the reference: within tolerance. */
        m = json_object_get(json_object_get(level_rec(&g, "L2"), "metrics"), "prompts");
        measured = json_object();
        json_object_foreach (m, k, v)
                if (json_object_get(v, "perplexity")) {
                        _cleanup_free_ char *name = xstrndup(k, strcspn(k, "/"));
                        json_object_set(measured, name, json_object_get(v, "perplexity"));
                }
        ASSERT_EQ(json_object_size(measured), 6);
        ASSERT_OK(json_dump_file(measured, ref, 0));
        rig_done(&g);
        run_levels(&g, "l2-ref-good", "", settings, "[\"L2\"]");
        ASSERT_STREQ(rig_verdict(&g, "L2"), "pass");
        rig_done(&g);
}

/* A stored history for L2's reference "baseline": this run's keys, and the baseline's stored L2 results. */
struct fake_history {
        const char *config_key, *baseline_key;
        json_t *results; /* what results("L2", baseline_key) answers */
};

static int fake_self(void *ud, json_t **ret, char **reterr)
{
        struct fake_history *h = ud;

        (void)reterr;
        *ret = json_pack("{s:s,s:s}", "config_key", h->config_key, "baseline_key", h->baseline_key);
        return 0;
}

static int fake_results(void *ud, const char *level, const char *key, size_t limit, json_t **ret,
                        char **reterr)
{
        struct fake_history *h = ud;

        (void)limit, (void)reterr;
        *ret = streq(level, "L2") && streq(key, h->baseline_key) ? json_incref(h->results) : json_array();
        return 0;
}

TEST(l2_reference_baseline_from_stored_results)
{
        static const char settings[] = "{\"L2\": {\"max_tokens\": 8, \"after_traffic\": 0, "
                                       "\"endpoints\": [\"completions\"], \"reference\": \"baseline\"}}";
        struct fake_history fh = {.config_key = "kernel=marlin", .baseline_key = "kernel=marlin"};
        struct mx_history h = {.self = fake_self, .results = fake_results, .ud = &fh};
        _cleanup_json_ json_t *stored = NULL, *bad = NULL;
        struct rig g;
        json_t *m, *v;
        const char *k;

        /* The baseline run measures its perplexities and compares with nothing. */
        fh.results = json_array();
        rig_init(&g, "l2-base-self", sim_spec("", settings), "[\"L2\"]");
        g.history = &h;
        rig_start(&g, 120000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L2"), "pass");
        m = json_object_get(level_rec(&g, "L2"), "metrics");
        ASSERT_NULL(json_object_get(m, "reference_run"));
        stored = json_pack("[{s:i,s:O}]", "run", 7, "metrics", m);
        bad = json_deep_copy(stored);
        json_object_foreach (json_object_get(json_object_get(json_array_get(bad, 0), "metrics"), "prompts"),
                             k, v)
                if (json_object_get(v, "perplexity"))
                        json_object_set_new(v, "perplexity", json_real(1.0));
        json_decref(fh.results);
        rig_done(&g);

        /* Another configuration: the baseline's stored values are the reference (run 7 named). */
        fh.config_key = "kernel=cutlass";
        fh.results = stored;
        rig_init(&g, "l2-base-good", sim_spec("", settings), "[\"L2\"]");
        g.history = &h;
        rig_start(&g, 120000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L2"), "pass");
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(level_rec(&g, "L2"), "metrics"), "reference_run")),
                  7);
        rig_done(&g);

        /* A baseline that stored other perplexities: out of tolerance. */
        fh.results = bad;
        rig_init(&g, "l2-base-bad", sim_spec("", settings), "[\"L2\"]");
        g.history = &h;
        rig_start(&g, 120000);
        rig_finish(&g);
        ASSERT_STREQ(rig_verdict(&g, "L2"), "fail");
        ASSERT_STREQ(json_string_value(json_object_get(first_failure(&g, "L2"), "check")), "perplexity");
        rig_done(&g);
}

/* L3 at a size a loaded 2-core machine runs in seconds; every phase included. */
#define L3_SMALL                                                                                                   \
        "{\"L3\": {\"sequential\": 20, \"concurrency\": 4, \"max_tokens\": 8, \"long_generation_tokens\": 1024, " \
        "\"long_context_tokens\": 32768, \"memory_every\": 5}}"

TEST(l3_passes_on_a_faithful_server)
{
        struct rig g;
        json_t *m;

        run_levels(&g, "l3-pass", "", L3_SMALL, "[\"L1\",\"L3\"]");
        if (!streq(rig_verdict(&g, "L3"), "pass"))
                test_fail(__FILE__, __LINE__, "L3: %s",
                          strna(json_string_value(json_object_get(level_rec(&g, "L3"), "message"))));
        m = json_object_get(level_rec(&g, "L3"), "metrics");
        ASSERT_EQ(json_integer_value(json_object_get(m, "requests")), 20 + 4 + 1 + 1);
        ASSERT_EQ(json_integer_value(json_object_get(m, "long_generation_tokens")), 1024);
        /* token-exact: the prompt was built with the server's /tokenize to exactly 32K */
        ASSERT_EQ(json_integer_value(json_object_get(m, "long_context_prompt_tokens")), 32768);
        ASSERT_TRUE(json_is_true(json_object_get(m, "long_context_exact")));
        ASSERT_EQ(json_integer_value(json_object_get(m, "max_model_len")), 131072);
        ASSERT_TRUE(json_integer_value(json_object_get(json_object_get(m, "memory"), "first_bytes")) > 0);
        ASSERT_TRUE(json_array_size(json_object_get(json_object_get(m, "memory"), "series")) >= 4);
        rig_done(&g);
}

TEST(l3_every_injected_fault_fails_with_its_check)
{
        static const struct {
                const char *fault, *check, *message;
        } want[] = {
                { "memory-growth=4", "memory", "memory grew" },
                { "die-under-concurrency=2", NULL, "concurrent request" }, /* 2: overlap survives a slow (ASan) client */
                { "zombie-child", "zombie", "is a zombie" },
                { "short-context=8192", "context", "max_model_len 8192" },
                { "short-output=2", "tokens", "sequential request 1: completion_tokens 6" },
                { "degenerate-text", "coherence", "sequential request 1: degenerate text" },
        };

        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                _cleanup_free_ char *name = xasprintf("l3-%s", want[i].fault);
                const char *msg;
                struct rig g;

                run_levels(&g, name, want[i].fault, L3_SMALL, "[\"L3\"]");
                msg = json_string_value(json_object_get(level_rec(&g, "L3"), "message"));
                fprintf(stderr, "  %-24s %s %s: %s\n", want[i].fault, mx_outcome_to_string(g.outcome),
                        strna(rig_verdict(&g, "L3")), strna(msg));
                ASSERT_STREQ(rig_verdict(&g, "L3"), "fail");
                if (want[i].check) {
                        ASSERT_STREQ(json_string_value(json_object_get(first_failure(&g, "L3"), "check")),
                                     want[i].check);
                        ASSERT_CONTAINS(msg, want[i].message);
                } else {
                        /* The engine died under the concurrent requests: the run crashed, L3 says where. */
                        ASSERT_STREQ(mx_outcome_to_string(g.outcome), "crashed");
                        ASSERT_CONTAINS(msg, want[i].message);
                }
                rig_done(&g);
        }
}

/*
 * The long-context prompt against the context the server has: 32768 prompt tokens and 16 generated fit a
 * context of 32784 exactly (the prompt is token-exact, so there is no slack to hide in), and one token less
 * fails naming both numbers: the matrix asked for more than the server has.
 */
TEST(l3_context_fits_to_the_token)
{
        static const struct {
                const char *fault, *verdict;
        } want[] = {
                { "short-context=32784", "pass" },
                { "short-context=32783", "fail" },
        };
        const char *settings = "{\"L3\": {\"sequential\": 1, \"concurrency\": 0, \"long_generation_tokens\": 0, "
                               "\"long_context_tokens\": 32768}}";

        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                _cleanup_free_ char *name = xasprintf("l3-%s", want[i].fault);
                const char *msg;
                json_t *m;
                struct rig g;

                run_levels(&g, name, want[i].fault, settings, "[\"L3\"]");
                msg = json_string_value(json_object_get(level_rec(&g, "L3"), "message"));
                m = json_object_get(level_rec(&g, "L3"), "metrics");
                if (!streq_ptr(rig_verdict(&g, "L3"), want[i].verdict))
                        test_fail(__FILE__, __LINE__, "%s: L3 %s: %s", want[i].fault, strna(rig_verdict(&g, "L3")),
                                  strna(msg));
                ASSERT_EQ(json_integer_value(json_object_get(m, "long_context_tokens_asked")), 32768);
                if (streq(want[i].verdict, "pass")) {
                        ASSERT_EQ(json_integer_value(json_object_get(m, "long_context_prompt_tokens")), 32768);
                        ASSERT_CONTAINS(msg, "long context 32768 tokens of the server's max_model_len 32784");
                } else {
                        ASSERT_STREQ(json_string_value(json_object_get(first_failure(&g, "L3"), "check")), "context");
                        ASSERT_CONTAINS(msg, "max_model_len 32783, from /v1/models");
                        ASSERT_CONTAINS(msg, "prompt of 32768 tokens plus 16 generated");
                }
                rig_done(&g);
        }
}

TEST(l3_failure_skips_nothing_before_and_continue_on_fail_goes_on)
{
        struct rig g;

        /* L2 fails; without continue_on_fail L3 is skipped, with it L3 runs (and fails on the same fault). */
        run_levels(&g, "l2-stops-l3", "degenerate-text", "{\"L2\": {\"max_tokens\": 12}, \"L3\": {\"sequential\": 2}}",
                   "[\"L1\",\"L2\",\"L3\"]");
        ASSERT_STREQ(rig_verdict(&g, "L2"), "fail");
        ASSERT_STREQ(rig_verdict(&g, "L3"), "skipped");
        ASSERT_CONTAINS(json_string_value(json_object_get(level_rec(&g, "L3"), "message")), "L2 failed");
        rig_done(&g);
        run_levels(&g, "l2-goes-on", "degenerate-text",
                   "{\"L2\": {\"max_tokens\": 12, \"continue_on_fail\": true}, \"L3\": {\"sequential\": 2}}",
                   "[\"L1\",\"L2\",\"L3\"]");
        ASSERT_STREQ(rig_verdict(&g, "L2"), "fail");
        ASSERT_STREQ(rig_verdict(&g, "L3"), "fail");
        rig_done(&g);
}

/*
 * llama-server (mxsim's llama flavour, as the real one: logprobs in the
 * content form on /v1/completions, a prompt cache that changes the seeded
 * sampling of a request reusing a cached prefix). Under its own profile L2
 * sends cache_prompt false and passes; under a vLLM profile its cache_salt
 * means nothing to the server, the reused prefix flips the tokens, and the
 * failure reports the first divergence with both logprobs, the cache defeat
 * used and what the baseline configuration did. A difference the baseline
 * shows too is not blamed on the configuration.
 */
TEST(l2_llama_server_cache_defeat_and_divergence_beside_the_baseline)
{
        static const char settings[] = "{\"L2\": {\"max_tokens\": 12, \"after_traffic\": 1}}";
        struct fake_history fh = {.config_key = "fa=on", .baseline_key = "fa=off"};
        struct mx_history h = {.self = fake_self, .results = fake_results, .ud = &fh};
        const char *msg;
        struct rig g;
        json_t *m, *f, *d;

        rig_init(&g, "l2-llama", sim_llama_spec("llama-server", settings), "[\"L1\", \"L2\"]");
        rig_start(&g, 120000);
        rig_finish(&g);
        msg = json_string_value(json_object_get(level_rec(&g, "L2"), "message"));
        fprintf(stderr, "  llama-server profile: %s: %s\n", strna(rig_verdict(&g, "L2")), strna(msg));
        ASSERT_STREQ(rig_verdict(&g, "L2"), "pass");
        ASSERT_CONTAINS(msg, "every check passed");
        m = json_object_get(level_rec(&g, "L2"), "metrics");
        ASSERT_STREQ(json_string_value(json_object_get(m, "server_kind")), "llama-server");
        ASSERT_TRUE(json_is_true(json_object_get(json_object_get(json_object_get(m, "determinism"),
                                                                 "completions/repeat"), "same")));
        rig_done(&g);

        /* The same server under a vLLM profile: its prompt cache is not defeated. The baseline gave the same. */
        fh.results = json_pack("[{s:i,s:{s:{s:{s:b},s:{s:b},s:{s:b},s:{s:b}}}}]", "run", 3, "metrics", "determinism",
                               "completions/repeat", "same", 1, "completions/again", "same", 1, "chat/repeat",
                               "same", 1, "chat/again", "same", 1);
        rig_init(&g, "l2-llama-as-vllm", sim_llama_spec("vllm", settings), "[\"L2\"]");
        g.history = &h;
        rig_start(&g, 120000);
        rig_finish(&g);
        msg = json_string_value(json_object_get(level_rec(&g, "L2"), "message"));
        fprintf(stderr, "  vllm profile: %s: %s\n", strna(rig_verdict(&g, "L2")), strna(msg));
        ASSERT_STREQ(rig_verdict(&g, "L2"), "fail");
        f = first_failure(&g, "L2");
        ASSERT_STREQ(json_string_value(json_object_get(f, "check")), "determinism");
        ASSERT_CONTAINS(msg, "prompt 'capital' (chat, again): the same seed gave different output after other traffic");
        ASSERT_CONTAINS(msg, "differs: '");
        ASSERT_CONTAINS(msg, "(logprob ");
        ASSERT_CONTAINS(msg, "gap ");
        ASSERT_CONTAINS(msg, "every request had a cache_salt of its own");
        ASSERT_CONTAINS(msg, "the baseline configuration's L2 (r3) gave the same output");
        ASSERT_CONTAINS(msg, "VLLM_BATCH_INVARIANT=1");
        d = json_object_get(json_object_get(json_object_get(level_rec(&g, "L2"), "metrics"), "determinism"),
                            "chat/again");
        ASSERT_TRUE(json_is_false(json_object_get(d, "same")));
        ASSERT_TRUE(json_is_number(json_object_get(d, "gap")));
        ASSERT_TRUE(json_is_boolean(json_object_get(d, "near_tie")));
        ASSERT_TRUE(json_is_string(json_object_get(json_object_get(d, "second"), "token")));
        rig_done(&g);

        /* The baseline configuration differed the same way: noted, not failed. */
        json_decref(fh.results);
        fh.results = json_pack("[{s:i,s:{s:{s:{s:b},s:{s:b},s:{s:b},s:{s:b}}}}]", "run", 4, "metrics", "determinism",
                               "completions/repeat", "same", 0, "completions/again", "same", 0, "chat/repeat",
                               "same", 0, "chat/again", "same", 0);
        rig_init(&g, "l2-llama-as-vllm-base", sim_llama_spec("vllm", settings), "[\"L2\"]");
        g.history = &h;
        rig_start(&g, 120000);
        rig_finish(&g);
        msg = json_string_value(json_object_get(level_rec(&g, "L2"), "message"));
        fprintf(stderr, "  vllm profile, baseline differs too: %s: %s\n", strna(rig_verdict(&g, "L2")), strna(msg));
        ASSERT_STREQ(rig_verdict(&g, "L2"), "pass");
        ASSERT_CONTAINS(msg, "every check that ran passed but determinism, which differed as in the baseline");
        ASSERT_CONTAINS(msg, "as the baseline configuration's L2 (r4) does too");
        json_decref(fh.results);
        rig_done(&g);
}

/* SGLang has no per-request cache switch: the compared prompt goes right before each compared request. */
TEST(l2_sglang_primes_the_compared_prompt)
{
        struct rig g;
        json_t *m;

        rig_init(&g, "l2-sglang", sim_llama_spec("sglang", "{\"L2\": {\"max_tokens\": 8, \"after_traffic\": 1}}"),
                 "[\"L2\"]");
        rig_start(&g, 120000);
        rig_finish(&g);
        m = json_object_get(level_rec(&g, "L2"), "metrics");
        fprintf(stderr, "  sglang: %s: %s\n", strna(rig_verdict(&g, "L2")),
                strna(json_string_value(json_object_get(level_rec(&g, "L2"), "message"))));
        /* The llama sim's cache stands in for SGLang's radix cache: primed alike, the pairs agree. */
        ASSERT_STREQ(rig_verdict(&g, "L2"), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(m, "server_kind")), "sglang");
        /* 6 prompts x 2 endpoints + per endpoint repeat, 1 traffic, again; plus 3 primes per endpoint. */
        ASSERT_EQ(json_integer_value(json_object_get(m, "requests")), 12 + 2 * 3 + 2 * 3);
        rig_done(&g);
}
