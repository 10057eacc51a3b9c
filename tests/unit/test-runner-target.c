/* SPDX-License-Identifier: MIT */
/*
 * The target runner against mxsim, through a real mxmatrixd: every injected
 * fault gets the right outcome, crash class and verdicts, and nothing any run
 * started is left running; a run cancelled while its server starts leaves
 * nothing; a daemon killed with SIGKILL mid-run kills, when it comes back, the
 * orphaned server and the engine that escaped into its own session.
 */
#include "proc.h"
#include "testd.h"

#include <signal.h>

static struct testd t;

static const char *const *daemon_args(void)
{
        static char *args[8];
        static char *matrix;

        if (!matrix)
                matrix = test_source_path("tests/fixtures/daemon/faults.json");
        args[0] = "--matrix";
        args[1] = matrix;
        args[2] = "--level-timeout=5s";
        args[3] = NULL;
        return (const char *const *)args;
}

static const char *const *daemon_env(void)
{
        static char *env[2];

        if (!env[0])
                env[0] = xasprintf("PATH=%s/tests/sim:%s", MX_BUILD_DIR, getenv("PATH"));
        return (const char *const *)env;
}

static json_t *call(int fd, const char *method, json_t *params)
{
        json_t *r = testd_request(fd, method, params);
        json_t *res = json_object_get(r, "result");

        if (!res) {
                _cleanup_free_ char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;
                test_fail(__FILE__, __LINE__, "%s failed: %s", method, strna(s));
        }
        json_incref(res);
        json_decref(r);
        return res;
}

static int64_t submit(int fd, const char *fault)
{
        _cleanup_json_ json_t *p = fault ? json_pack("{s:s,s:{s:s}}", "feature", "sim", "pins", "fault", fault)
                                         : json_pack("{s:s}", "feature", "sim");
        _cleanup_json_ json_t *r = call(fd, "submit", p);

        return json_integer_value(json_object_get(r, "job"));
}

static json_t *wait_job_state(int fd, int64_t job, const char *state)
{
        _cleanup_json_ json_t *p = json_pack("{s:I}", "job", (json_int_t)job);
        _cleanup_json_ json_t *done = call(fd, "follow", p);
        _cleanup_json_ json_t *shown = call(fd, "show", p);

        ASSERT_STREQ(json_string_value(json_object_get(done, "state")), state);
        return json_incref(json_object_get(shown, "runs"));
}

static json_t *wait_job(int fd, int64_t job)
{
        return wait_job_state(fd, job, "done");
}

static json_t *run_detail(int fd, int64_t run)
{
        _cleanup_json_ json_t *p = json_pack("{s:I}", "run", (json_int_t)run);
        _cleanup_json_ json_t *r = call(fd, "show", p);

        return json_incref(json_object_get(r, "run"));
}

static const char *level_verdict(json_t *run, const char *level)
{
        size_t i;
        json_t *l;

        json_array_foreach (json_object_get(run, "levels"), i, l)
                if (streq_ptr(json_string_value(json_object_get(l, "level")), level))
                        return json_string_value(json_object_get(l, "verdict"));
        return NULL;
}

/* No process carries the tag of any attempt of the run. */
static void assert_nothing_left(int fd, int64_t run)
{
        _cleanup_json_ json_t *d = run_detail(fd, run);
        size_t i;
        json_t *a;

        json_array_foreach (json_object_get(d, "attempt_history"), i, a) {
                const char *tag = json_string_value(json_object_get(a, "tag"));
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;

                ASSERT_NOT_NULL(tag);
                ASSERT_OK(proc_find_tagged(tag, &pids, &n));
                if (n > 0)
                        test_fail(__FILE__, __LINE__, "run %" PRId64 " left %zu processes (pid %d)", run, n,
                                  (int)pids[0]);
        }
}

static void start(const char *name)
{
        testd_start(&t, name, daemon_args(), daemon_env());
}

TEST(every_fault_classified_nothing_left)
{
        static const struct {
                const char *fault, *result, *crash_class, *l1, *l15;
        } want[] = {
                { "none", "pass", NULL, "pass", "pass" },
                { "hang-start", "timeout", NULL, "fail", "skipped" },
                { "slow-start", "timeout", NULL, "fail", "skipped" },
                { "crash-at-start", "crashed", "illegal-instruction", "fail", "skipped" },
                { "crash-after", "crashed", "illegal-instruction", "fail", "skipped" },
                { "launch-failure", "crashed", "launch-failure", "fail", "skipped" },
                { "segfault", "crashed", "segfault", "fail", "skipped" },
                { "oom", "crashed", "cuda-oom", "fail", "skipped" },
                { "import-error", "crashed", "import-error", "fail", "skipped" },
                { "ptxas", "crashed", "ptxas", "fail", "skipped" },
                { "hang-after", "timeout", NULL, "fail", "skipped" },
                { "health-503", "crashed", "engine-dead", "pass", "skipped" },
                { "engine-escape", "pass", NULL, "pass", "skipped" },
                { "engine-ignore-term", "pass", NULL, "pass", "skipped" },
                { "hang-stop", "pass", NULL, "pass", "skipped" },
                { "wrong-kernel", "fail", NULL, "pass", "fail" },
        };
        _cleanup_json_ json_t *runs = NULL;
        int fd;
        size_t i;
        json_t *r;

        start("faults");
        fd = testd_session(&t);
        runs = wait_job(fd, submit(fd, NULL));
        ASSERT_EQ(json_array_size(runs), ELEMENTSOF(want));
        json_array_foreach (runs, i, r) {
                const char *fault = json_string_value(json_object_get(json_object_get(r, "config"), "fault"));
                size_t k;

                for (k = 0; k < ELEMENTSOF(want); k++)
                        if (streq(want[k].fault, fault))
                                break;
                ASSERT_TRUE(k < ELEMENTSOF(want));
                fprintf(stderr, "  %-20s %-10s %s\n", fault, json_string_value(json_object_get(r, "result")),
                        strna(json_string_value(json_object_get(r, "crash_class"))));
                ASSERT_STREQ(json_string_value(json_object_get(r, "result")), want[k].result);
                ASSERT_STREQ(json_string_value(json_object_get(r, "crash_class")), want[k].crash_class);
                ASSERT_STREQ(level_verdict(r, "L1"), want[k].l1);
                ASSERT_STREQ(level_verdict(r, "L1.5"), want[k].l15);
                if (want[k].crash_class && !streq(want[k].crash_class, "engine-dead")) {
                        /* The evidence is kept with L1: the root cause first. */
                        json_t *l1 = json_array_get(json_object_get(r, "levels"), 0);
                        json_t *sig = json_array_get(
                                json_object_get(json_object_get(l1, "metrics"), "crash_signatures"), 0);

                        ASSERT_STREQ(json_string_value(json_object_get(l1, "level")), "L1");
                        ASSERT_STREQ(json_string_value(json_object_get(sig, "class")), want[k].crash_class);
                        ASSERT_NOT_NULL(json_string_value(json_object_get(sig, "line")));
                }
                assert_nothing_left(fd, json_integer_value(json_object_get(r, "id")));
        }
        close(fd);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

/* Wait until the daemon reports the run current in the given level (or "starting"). */
static void wait_current(int fd, int64_t run, const char *level)
{
        for (int i = 0; i < 200; i++) {
                _cleanup_json_ json_t *s = call(fd, "status", NULL);
                json_t *cur = json_object_get(s, "current");

                if (json_integer_value(json_object_get(cur, "run")) == run &&
                    streq_ptr(json_string_value(json_object_get(cur, "level")), level))
                        return;
                usleep(50000);
        }
        test_fail(__FILE__, __LINE__, "run %" PRId64 " never reached %s", run, level);
}

static unsigned count_lines_with(const char *text, const char *needle)
{
        unsigned n = 0;

        for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/*
 * Issue 7 item 6: the daemon logged "level L1 started" twice per run (once at
 * the server's start, once at the completion). One start per level.
 */
TEST(each_level_starts_once)
{
        _cleanup_json_ json_t *runs = NULL;
        _cleanup_free_ char *log = NULL, *l1 = NULL, *l15 = NULL;
        int64_t run;
        int fd;

        start("levels-once");
        fd = testd_session(&t);
        runs = wait_job(fd, submit(fd, "none"));
        ASSERT_EQ(json_array_size(runs), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(runs, 0), "result")), "pass");
        run = json_integer_value(json_object_get(json_array_get(runs, 0), "id"));
        close(fd);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        log = test_read_file(t.log, NULL);
        l1 = xasprintf("run %" PRId64 ": level L1 started", run);
        l15 = xasprintf("run %" PRId64 ": level L1.5 started", run);
        ASSERT_EQ(count_lines_with(log, l1), 1);
        ASSERT_TRUE(count_lines_with(log, l15) <= 1); /* the gate after the stop is not announced (yet) */
        testd_done(&t);
}

TEST(cancel_while_starting_leaves_nothing)
{
        _cleanup_json_ json_t *runs = NULL, *p = NULL, *c = NULL;
        int64_t job, run;
        int fd;

        start("cancel");
        fd = testd_session(&t);
        job = submit(fd, "hang-start");
        p = json_pack("{s:I}", "job", (json_int_t)job);
        runs = call(fd, "show", p);
        run = json_integer_value(json_object_get(json_array_get(json_object_get(runs, "runs"), 0), "id"));
        wait_current(fd, run, "starting");
        c = call(fd, "cancel", p);
        ASSERT_EQ(json_integer_value(json_object_get(c, "stopping")), run);
        json_decref(runs);
        runs = wait_job_state(fd, job, "cancelled");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(runs, 0), "result")), "cancelled");
        ASSERT_STREQ(level_verdict(json_array_get(runs, 0), "L1"), "skipped");
        assert_nothing_left(fd, run);
        close(fd);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(sigkill_mid_run_then_restart_kills_orphans)
{
        _cleanup_json_ json_t *p = NULL, *runs = NULL, *d = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        _cleanup_free_ char *tag = NULL;
        size_t n = 0;
        int64_t job, run;
        int fd;

        start("kill9");
        fd = testd_session(&t);
        job = submit(fd, "escape-hang");
        p = json_pack("{s:I}", "job", (json_int_t)job);
        runs = call(fd, "show", p);
        run = json_integer_value(json_object_get(json_array_get(json_object_get(runs, "runs"), 0), "id"));
        /* Ready and in L1, where the completion hangs: the server and its escaped engine are alive. */
        wait_current(fd, run, "L1");
        d = run_detail(fd, run);
        tag = xstrdup(json_string_value(json_object_get(json_array_get(json_object_get(d, "attempt_history"), 0), "tag")));
        close(fd);
        ASSERT_EQ(WTERMSIG(testd_stop(&t, SIGKILL)), SIGKILL);
        ASSERT_OK(proc_find_tagged(tag, &pids, &n));
        ASSERT_TRUE(n >= 2); /* the API server and the engine in its own session, orphaned */
        free(pids);
        pids = NULL;
        /* Pause on restart so the requeued run does not start again before we look. */
        {
                const char *args[8] = { daemon_args()[0], daemon_args()[1], daemon_args()[2], "--recovery=pause", NULL };
                testd_restart(&t, args, daemon_env());
        }
        ASSERT_OK(proc_find_tagged(tag, &pids, &n));
        ASSERT_EQ(n, 0);
        fd = testd_session(&t);
        json_decref(d);
        d = run_detail(fd, run);
        ASSERT_STREQ(json_string_value(json_object_get(d, "state")), "queued");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(json_object_get(d, "attempt_history"), 0),
                                                       "outcome")),
                     "interrupted");
        {
                _cleanup_json_ json_t *s = call(fd, "status", NULL);
                ASSERT_TRUE(json_is_true(json_object_get(s, "paused")));
        }
        {
                _cleanup_json_ json_t *c = call(fd, "cancel", p);
                ASSERT_EQ(json_integer_value(json_object_get(c, "cancelled")), 1);
        }
        close(fd);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}
