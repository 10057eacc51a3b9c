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
#include "test.h"

#include <signal.h>
#include <sys/stat.h>

#define LOOP_TIMEOUT_MS 120000

struct rig {
        struct event_base *base;
        struct proc_reaper *reaper;
        struct mx_http *http;
        char *dir, *tag;
        json_t *spec, *levels;
        const struct mx_runner_ops *ops;
        struct mx_runner *runner;
        pid_t pid;
        json_t *recorded; /* {level: {"verdict", "message", "times"}} */
        unsigned n_finished;
        enum mx_outcome outcome;
        char *crash_class, *message;
};

static void ev_process(void *ud, pid_t pid, pid_t pgid, uint64_t start)
{
        struct rig *g = ud;

        (void)pgid, (void)start;
        g->pid = pid;
}

static void ev_log_opened(void *ud, const char *path)
{
        (void)ud, (void)path;
}

static void ev_log_appended(void *ud)
{
        (void)ud;
}

static void ev_level_started(void *ud, const char *level)
{
        (void)ud, (void)level;
}

static void ev_level_finished(void *ud, const struct mx_level_result *lr)
{
        struct rig *g = ud;
        json_t *prev = json_object_get(g->recorded, lr->level);
        json_int_t times = prev ? json_integer_value(json_object_get(prev, "times")) : 0;

        json_object_set_new(g->recorded, lr->level,
                            json_pack("{s:s,s:s?,s:I,s:O?,s:O?}", "verdict", lr->verdict, "message", lr->message,
                                      "times", times + 1, "metrics", lr->metrics, "artifacts", lr->artifacts));
}

static void ev_finished(void *ud, const struct mx_run_result *res)
{
        struct rig *g = ud;

        g->n_finished++;
        g->outcome = res->outcome;
        free(g->crash_class);
        free(g->message);
        g->crash_class = res->crash_class ? xstrdup(res->crash_class) : NULL;
        g->message = res->message ? xstrdup(res->message) : NULL;
}

static const struct mx_run_events events = {
        .process = ev_process,
        .log_opened = ev_log_opened,
        .log_appended = ev_log_appended,
        .level_started = ev_level_started,
        .level_finished = ev_level_finished,
        .finished = ev_finished,
};

/* A rig for one run of spec (taken over) with these levels. */
static void rig_init(struct rig *g, const char *name, json_t *spec, const char *levels)
{
        static unsigned n;

        *g = (struct rig){ .spec = spec, .recorded = json_object() };
        ASSERT_OK(proc_subreaper_enable());
        g->base = event_base_new();
        ASSERT_NOT_NULL(g->base);
        ASSERT_OK(proc_reaper_new(g->base, &g->reaper));
        ASSERT_OK(mx_http_new(g->base, &g->http, NULL));
        g->dir = xasprintf("%s/%s", test_tmpdir(), name);
        ASSERT_OK(mkdir(g->dir, 0750));
        g->tag = xasprintf("mxtest-runner-%d-%u", (int)getpid(), ++n);
        g->levels = json_loads(levels, 0, NULL);
        ASSERT_NOT_NULL(g->levels);
}

/* Start the runner; its return value, and its reason in *reterr on failure. */
static int rig_try_start(struct rig *g, int64_t level_timeout_ms, char **reterr)
{
        struct mx_run_ctx ctx = {
                .base = g->base, .reaper = g->reaper, .http = g->http, .job = 1, .run = 1, .attempt_id = 1,
                .attempt = 1, .tag = g->tag, .config_key = "test=1", .run_dir = g->dir, .spec = g->spec,
                .levels = g->levels, .level_timeout_ms = level_timeout_ms, .log_max_bytes = 1 << 20,
        };

        g->ops = runner_for_spec(g->spec);
        return g->ops->start(&ctx, &events, g, &g->runner, reterr);
}

static void rig_start(struct rig *g, int64_t level_timeout_ms)
{
        _cleanup_free_ char *err = NULL;

        if (rig_try_start(g, level_timeout_ms, &err) < 0)
                test_fail(__FILE__, __LINE__, "start: %s", strna(err));
}

static void expired_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        *(bool *)ud = true;
}

/* Run the loop until cond(g) holds, failing the test after LOOP_TIMEOUT_MS. */
static void run_until(struct rig *g, bool (*cond)(struct rig *g), const char *what)
{
        struct event *t;
        bool expired = false;

        t = evtimer_new(g->base, expired_cb, &expired);
        evtimer_add(t, &(struct timeval){ .tv_sec = LOOP_TIMEOUT_MS / 1000 });
        while (!cond(g) && !expired)
                event_base_loop(g->base, EVLOOP_ONCE);
        event_free(t);
        if (!cond(g))
                test_fail(__FILE__, __LINE__, "event loop timed out waiting for %s", what);
}

static bool finished(struct rig *g)
{
        return g->n_finished > 0;
}

/* The loop a little longer, so a second finished() or a late callback would show. */
static void run_a_while(struct rig *g, int ms)
{
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
        bool expired = false;
        struct event *t = evtimer_new(g->base, expired_cb, &expired);

        evtimer_add(t, &tv);
        while (!expired)
                event_base_loop(g->base, EVLOOP_ONCE);
        event_free(t);
}

/* Kill whatever still carries the tag (after a failed assertion's evidence was taken). */
static size_t kill_tagged(const char *tag)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        ASSERT_OK(proc_find_tagged(tag, &pids, &n));
        for (size_t i = 0; i < n; i++)
                kill(pids[i], SIGKILL);
        return n;
}

/* Wait for the end, check the common promises, free the runner. */
static void rig_finish(struct rig *g)
{
        const char *level;
        json_t *v;
        size_t left;

        run_until(g, finished, "finished()");
        run_a_while(g, 200);
        ASSERT_EQ(g->n_finished, 1);
        json_object_foreach (g->recorded, level, v)
                if (json_integer_value(json_object_get(v, "times")) != 1)
                        test_fail(__FILE__, __LINE__, "level %s recorded %" JSON_INTEGER_FORMAT " times",
                                  level, json_integer_value(json_object_get(v, "times")));
        g->runner = g->ops->free(g->runner);
        left = kill_tagged(g->tag);
        if (left > 0)
                test_fail(__FILE__, __LINE__, "%zu processes of the run outlived it", left);
}

static void rig_done(struct rig *g)
{
        if (g->runner)
                g->ops->free(g->runner);
        (void)kill_tagged(g->tag);
        g->http = mx_http_free(g->http);
        g->reaper = proc_reaper_free(g->reaper);
        event_base_free(g->base);
        json_decref(g->spec);
        json_decref(g->levels);
        json_decref(g->recorded);
        free(g->crash_class);
        free(g->message);
        free(g->dir);
        free(g->tag);
}

static const char *verdict(struct rig *g, const char *level)
{
        return json_string_value(json_object_get(json_object_get(g->recorded, level), "verdict"));
}

/* JSON text with placeholders filled by xasprintf(), parsed; the test fails on bad JSON. */
static json_t *json_text(const char *fmt, ...) _printf_(1, 2);
static json_t *json_text(const char *fmt, ...)
{
        _cleanup_free_ char *text = NULL;
        json_error_t e;
        json_t *j;
        va_list ap;

        va_start(ap, fmt);
        text = xvasprintf(fmt, ap);
        va_end(ap);
        j = json_loads(text, 0, &e);
        if (!j)
                test_fail(__FILE__, __LINE__, "bad JSON in a test (%s): %s", e.text, text);
        return j;
}


/* mxsim as vLLM; faults in MXSIM_FAULTS; level settings as JSON text. */
static json_t *sim_spec(const char *faults, const char *settings)
{
        json_t *spec = json_text(
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
        ASSERT_STREQ(verdict(&g, "L1"), "pass");
        if (!streq(verdict(&g, "L2"), "pass"))
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
                fprintf(stderr, "  %-20s %s: %s\n", want[i].fault, strna(verdict(&g, "L2")), strna(msg));
                ASSERT_STREQ(verdict(&g, "L2"), "fail");
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
        ASSERT_STREQ(verdict(&g, "L2"), "fail");
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
        ASSERT_STREQ(verdict(&g, "L2"), "pass");
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
        if (!streq(verdict(&g, "L3"), "pass"))
                test_fail(__FILE__, __LINE__, "L3: %s",
                          strna(json_string_value(json_object_get(level_rec(&g, "L3"), "message"))));
        m = json_object_get(level_rec(&g, "L3"), "metrics");
        ASSERT_EQ(json_integer_value(json_object_get(m, "requests")), 20 + 4 + 1 + 1);
        ASSERT_EQ(json_integer_value(json_object_get(m, "long_generation_tokens")), 1024);
        ASSERT_TRUE(json_integer_value(json_object_get(m, "long_context_prompt_tokens")) >= 32768);
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
                { "die-under-concurrency=3", NULL, "concurrent request" },
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
                        strna(verdict(&g, "L3")), strna(msg));
                ASSERT_STREQ(verdict(&g, "L3"), "fail");
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

TEST(l3_failure_skips_nothing_before_and_continue_on_fail_goes_on)
{
        struct rig g;

        /* L2 fails; without continue_on_fail L3 is skipped, with it L3 runs (and fails on the same fault). */
        run_levels(&g, "l2-stops-l3", "degenerate-text", "{\"L2\": {\"max_tokens\": 12}, \"L3\": {\"sequential\": 2}}",
                   "[\"L1\",\"L2\",\"L3\"]");
        ASSERT_STREQ(verdict(&g, "L2"), "fail");
        ASSERT_STREQ(verdict(&g, "L3"), "skipped");
        ASSERT_CONTAINS(json_string_value(json_object_get(level_rec(&g, "L3"), "message")), "L2 failed");
        rig_done(&g);
        run_levels(&g, "l2-goes-on", "degenerate-text",
                   "{\"L2\": {\"max_tokens\": 12, \"continue_on_fail\": true}, \"L3\": {\"sequential\": 2}}",
                   "[\"L1\",\"L2\",\"L3\"]");
        ASSERT_STREQ(verdict(&g, "L2"), "fail");
        ASSERT_STREQ(verdict(&g, "L3"), "fail");
        rig_done(&g);
}
