/* SPDX-License-Identifier: MIT */
/*
 * What mxmatrixd tells the service manager, read from a NOTIFY_SOCKET the test
 * owns (testd.c), as systemd-practice.md §9(a) lists it: READY=1 only once
 * the socket serves a submit; STATUS= following the queue and the running
 * run; RELOADING=1 with MONOTONIC_USEC= then READY=1 on SIGHUP; STOPPING=1 on
 * SIGTERM with the running run interrupted, requeued and its processes gone;
 * watchdog pings at half of WATCHDOG_USEC that stop when the process is
 * stopped; STATUS= and ERRNO= before a failed start exits.
 */
#include "testd.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>

#define WAIT_MS 30000

/* Does the datagram hold this line (or, for "KEY=", a line starting with it)? */
static bool dgram_has(const char *d, const char *line)
{
        size_t n = strlen(line);

        for (const char *l = d; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                size_t len = strcspn(l, "\n");

                if ((endswith(line, "=") ? len >= n : len == n) && strncmp(l, line, n) == 0)
                        return true;
        }
        return false;
}

/* The value of KEY= in the datagram (caller frees), or NULL. */
static char *dgram_get(const char *d, const char *key)
{
        _cleanup_free_ char *k = xasprintf("%s=", key);

        for (const char *l = d; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (startswith(l, k))
                        return xstrndup(l + strlen(k), strcspn(l + strlen(k), "\n"));
        return NULL;
}

/* Read datagrams until one has line; the whole datagram (caller frees). Fails the test on timeout. */
static char *expect_dgram(struct testd *t, const char *line, int timeout_ms)
{
        int64_t deadline = mx_now_mono_us() + (int64_t)timeout_ms * 1000;

        for (;;) {
                int64_t left = (deadline - mx_now_mono_us()) / 1000;
                char *d = left > 0 ? testd_notify_next(t, (int)left, NULL) : NULL;

                if (!d) {
                        _cleanup_free_ char *log = test_read_file(t->log, NULL);
                        test_fail(__FILE__, __LINE__, "no '%s' from mxmatrixd in %d ms; its log:\n%s", line,
                                  timeout_ms, log);
                }
                if (dgram_has(d, line))
                        return d;
                free(d);
        }
}

/* Read datagrams until a STATUS= contains all of the given fragments; returns that STATUS value. */
static char *expect_status(struct testd *t, const char *a, const char *b, int timeout_ms)
{
        int64_t deadline = mx_now_mono_us() + (int64_t)timeout_ms * 1000;

        for (;;) {
                int left = (int)((deadline - mx_now_mono_us()) / 1000);
                _cleanup_free_ char *d = expect_dgram(t, "STATUS=", left);
                char *s = dgram_get(d, "STATUS");

                if (strstr(s, a) && (!b || strstr(s, b)))
                        return s;
                free(s);
        }
}

static uint64_t mono_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static char *matrix_arg(void)
{
        _cleanup_free_ char *m = test_source_path("tests/fixtures/daemon/command.json");

        return xasprintf("--matrix=%s", m);
}

/* Submit feature=fast with mode pinned over a fresh session; returns the job id. */
static int64_t submit_mode(struct testd *t, const char *mode)
{
        int fd = testd_session(t);
        _cleanup_json_ json_t *p = json_pack("{s:s,s:{s:s}}", "feature", "fast", "pins", "mode", mode);
        _cleanup_json_ json_t *r = testd_request(fd, "submit", p);
        json_t *job = json_object_get(json_object_get(r, "result"), "job");

        close(fd);
        if (!json_is_integer(job))
                test_fail(__FILE__, __LINE__, "submit mode=%s failed: %s", mode,
                          r ? json_dumps(r, JSON_COMPACT) : "no reply");
        return json_integer_value(job);
}

/* One value from the daemon's database, read-only, as an integer or text (caller frees). */
static char *db_text(struct testd *t, const char *sql)
{
        _cleanup_free_ char *path = xasprintf("%s/queue.db", t->state);
        sqlite3 *db = NULL;
        sqlite3_stmt *s = NULL;
        char *out = NULL;

        ASSERT_EQ(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
                out = xstrdup((const char *)sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
        sqlite3_close(db);
        return out;
}

TEST(ready_only_when_serving)
{
        _cleanup_free_ char *matrix = matrix_arg();
        const char *const args[] = { matrix, NULL };
        _cleanup_free_ char *first = NULL, *ready = NULL;
        struct testd t;
        int64_t job, deadline;
        int fd;

        testd_launch(&t, "ready", args, NULL);
        /* The first word is about the slow part of the start, before READY=1. */
        first = testd_notify_next(&t, WAIT_MS, NULL);
        ASSERT_NOT_NULL(first);
        ASSERT_TRUE(dgram_has(first, "STATUS=Opening the job database"));
        ASSERT_FALSE(dgram_has(first, "READY=1"));
        ready = expect_dgram(&t, "READY=1", WAIT_MS);
        ASSERT_TRUE(dgram_has(ready, "STATUS=idle, 0 queued"));
        /* At READY=1 the first connect must work and answer. */
        fd = testd_session(&t);
        {
                _cleanup_json_ json_t *r = testd_request(fd, "status", NULL);
                ASSERT_NOT_NULL(json_object_get(r, "result"));
        }
        close(fd);
        /*
         * Nothing after READY=1 may bring back a start-up status (one held back by the
         * once-a-second limit), nor repeat READY=1.
         */
        deadline = mx_now_mono_us() + 2000 * 1000;
        while (mx_now_mono_us() < deadline) {
                _cleanup_free_ char *d = testd_notify_next(&t, 100, NULL);

                ASSERT_FALSE(d && dgram_has(d, "READY=1"));
                ASSERT_FALSE(d && dgram_has(d, "STATUS="));
        }
        /* A submit round-trip: stored, then answered. */
        job = submit_mode(&t, "ok");
        ASSERT_EQ(job, 1);
        {
                _cleanup_free_ char *n = db_text(&t, "SELECT COUNT(*) FROM runs WHERE job_id = 1");
                ASSERT_STREQ(n, "2");
        }
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(status_follows_queue_and_run)
{
        _cleanup_free_ char *matrix = matrix_arg();
        const char *const args[] = { matrix, NULL };
        const char *const env[] = { "SLEEP=1000", NULL };
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *s3 = NULL;
        struct testd t;

        testd_start(&t, "status", args, env);
        submit_mode(&t, "sleep");
        s1 = expect_status(&t, "running r1 (L1, ", ", 1 queued", WAIT_MS);
        /* A submission while the run runs changes the queue count at once (rate limit: 1 s). */
        submit_mode(&t, "ok");
        s2 = expect_status(&t, "running r1 (L1, ", ", 3 queued", WAIT_MS);
        /* With nothing else happening, the elapsed time is refreshed while the run goes on. */
        s3 = expect_status(&t, "running r1 (L1, ", ", 3 queued", WAIT_MS);
        ASSERT_FALSE(streq(s2, s3));
        {
                int fd = testd_session(&t);
                _cleanup_json_ json_t *r = testd_request(fd, "pause", NULL);
                ASSERT_NOT_NULL(json_object_get(r, "result"));
                close(fd);
        }
        free(s3);
        s3 = expect_status(&t, "running r1 (L1, ", ", 3 queued, paused", WAIT_MS);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(sigterm_interrupts_the_run)
{
        _cleanup_free_ char *matrix = matrix_arg();
        _cleanup_free_ char *tag = xasprintf("MX_NOTIFY_TEST=%d-%u", (int)getpid(), (unsigned)mono_us());
        const char *const args[] = { matrix, NULL };
        const char *const env[] = { "SLEEP=1000", tag, NULL };
        _cleanup_free_ char *stop = NULL, *outcome = NULL, *state = NULL, *again = NULL;
        struct testd t;
        int64_t deadline;
        int status;

        testd_start(&t, "sigterm", args, env);
        /* mode=escape: sh, its sleep, and a grandchild in a session of its own. */
        submit_mode(&t, "escape");
        free(expect_status(&t, "running r1 (L1, ", NULL, WAIT_MS));
        deadline = mx_now_mono_us() + (int64_t)WAIT_MS * 1000;
        while (testd_count_env(tag) < 4) { /* the daemon and the three */
                ASSERT_TRUE(mx_now_mono_us() < deadline);
                usleep(20000);
        }
        kill(t.pid, SIGTERM);
        stop = expect_dgram(&t, "STOPPING=1", WAIT_MS);
        ASSERT_TRUE(dgram_has(stop, "STATUS=Stopping the current run"));
        status = testd_wait_exit(&t, WAIT_MS);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        /* Nothing of the run survives the daemon, not even the escaped grandchild. */
        ASSERT_EQ(testd_count_env(tag), 0);
        outcome = db_text(&t, "SELECT outcome FROM attempts WHERE run_id = 1 AND n = 1");
        ASSERT_STREQ(outcome, "interrupted");
        state = db_text(&t, "SELECT state || ',' || attempts FROM runs WHERE id = 1");
        ASSERT_STREQ(state, "queued,1");
        /* The next daemon runs it again, as attempt 2. */
        testd_restart(&t, args, env);
        free(expect_status(&t, "running r1 (L1, ", NULL, WAIT_MS));
        again = db_text(&t, "SELECT COUNT(*) FROM attempts WHERE run_id = 1 AND n = 2 "
                            "AND finished_at IS NULL");
        ASSERT_STREQ(again, "1");
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        ASSERT_EQ(testd_count_env(tag), 0);
        testd_done(&t);
}

TEST(stopping_status_is_final)
{
        _cleanup_free_ char *matrix = matrix_arg();
        const char *const args[] = { matrix, NULL };
        const char *const env[] = { "SLEEP=1000", NULL };
        _cleanup_free_ char *stop = NULL;
        struct testd t;
        int status;

        testd_start(&t, "stopping", args, env);
        /* mode=slowstop takes a second to exit after SIGTERM, as a server does. */
        submit_mode(&t, "slowstop");
        free(expect_status(&t, "running r1 (L1, ", NULL, WAIT_MS));
        /* A queue change just before the signal leaves a STATUS= waiting for the rate limit... */
        submit_mode(&t, "ok");
        kill(t.pid, SIGTERM);
        stop = expect_dgram(&t, "STOPPING=1", WAIT_MS);
        ASSERT_TRUE(dgram_has(stop, "STATUS=Stopping the current run"));
        /* ...which must not overwrite the stopping status while the run takes its time to stop. */
        for (;;) {
                _cleanup_free_ char *d = testd_notify_next(&t, 100, NULL);

                ASSERT_FALSE(d && dgram_has(d, "STATUS="));
                if (!d && (status = testd_wait_exit(&t, 0)) != -1)
                        break;
        }
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
        testd_done(&t);
}

TEST(sighup_reloads)
{
        _cleanup_free_ char *src = test_source_path("tests/fixtures/daemon/command.json");
        _cleanup_free_ char *copy = xasprintf("%s/hup-matrix.json", test_tmpdir());
        _cleanup_free_ char *text = test_read_file(src, NULL);
        _cleanup_free_ char *matrix = NULL;
        struct testd t;

        test_write_file(copy, text);
        matrix = xasprintf("--matrix=%s", copy);
        {
                const char *const args[] = { matrix, NULL };
                testd_start(&t, "hup", args, NULL);
        }
        for (int round = 0; round < 2; round++) {
                _cleanup_free_ char *reloading = NULL, *mono = NULL, *ready = NULL;
                int64_t before = (int64_t)mono_us(), at, after;

                /* Round 2 reloads a broken file: the old matrix stays, and READY=1 still follows. */
                if (round == 1)
                        test_write_file(copy, "{ \"matrix\": 1,");
                kill(t.pid, SIGHUP);
                reloading = expect_dgram(&t, "RELOADING=1", WAIT_MS);
                after = (int64_t)mono_us();
                mono = dgram_get(reloading, "MONOTONIC_USEC");
                ASSERT_NOT_NULL(mono);
                ASSERT_OK(mx_parse_int64(mono, 1, INT64_MAX, &at));
                ASSERT_LE(before, at);
                ASSERT_LE(at, after);
                ready = expect_dgram(&t, "READY=1", WAIT_MS);
                ASSERT_TRUE(dgram_has(ready, "STATUS="));
        }
        /* Still serving with the matrix it had. */
        ASSERT_EQ(submit_mode(&t, "ok"), 1);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(watchdog_pings)
{
        const char *const env[] = { "WATCHDOG_USEC=2000000", NULL };
        struct testd t;
        int64_t first = 0, last = 0, max_gap = 0, start, deadline;
        unsigned pings = 0;

        testd_start(&t, "watchdog", NULL, env);
        start = mx_now_mono_us();
        while (mx_now_mono_us() - start < 5500 * 1000) {
                int64_t at = 0;
                _cleanup_free_ char *d = testd_notify_next(&t, 2000, &at);

                ASSERT_NOT_NULL(d); /* a second without a ping is already late */
                if (!dgram_has(d, "WATCHDOG=1"))
                        continue;
                if (last > 0 && at - last > max_gap)
                        max_gap = at - last;
                last = at;
                if (!first)
                        first = last;
                pings++;
        }
        /*
         * Every second on average (half of WATCHDOG_USEC, as sd_watchdog_enabled(3) advises), and never
         * a gap that would let the service manager's 2 s deadline pass, even on a loaded machine.
         */
        ASSERT_LE(4, pings);
        ASSERT_LE((last - first) / (pings - 1), 1200 * 1000);
        ASSERT_LE(800 * 1000, (last - first) / (pings - 1));
        ASSERT_LT(max_gap, 2000 * 1000);

        /* A stopped daemon does not ping: the watchdog would catch a wedged one. */
        kill(t.pid, SIGSTOP);
        {
                _cleanup_free_ char *stat = NULL;
                _cleanup_free_ char *path = xasprintf("/proc/%d/stat", (int)t.pid);

                deadline = mx_now_mono_us() + (int64_t)WAIT_MS * 1000;
                for (;;) {
                        free(stat);
                        stat = test_read_file(path, NULL);
                        if (strstr(stat, ") T "))
                                break;
                        ASSERT_TRUE(mx_now_mono_us() < deadline);
                        usleep(10000);
                }
        }
        /* Pings sent before the stop may still be on their way to the reader thread. */
        usleep(300 * 1000);
        for (char *d; (d = testd_notify_next(&t, 0, NULL)); free(d))
                ;
        start = mx_now_mono_us();
        while (mx_now_mono_us() - start < 2500 * 1000) {
                _cleanup_free_ char *d = testd_notify_next(&t, 100, NULL);
                ASSERT_FALSE(d && dgram_has(d, "WATCHDOG=1"));
        }
        kill(t.pid, SIGCONT);
        free(expect_dgram(&t, "WATCHDOG=1", 3000));
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

/* Launch with args, expect STATUS=<status> and ERRNO=<errno> before a non-zero exit, and no READY=1. */
static void check_failed_start(const char *name, const char *const *args, const char *status, int error)
{
        _cleanup_free_ char *want = xasprintf("STATUS=%s", status), *err = NULL, *log = NULL;
        struct testd t;
        char *d;
        int exit_status;

        testd_launch(&t, name, args, NULL);
        d = expect_dgram(&t, want, WAIT_MS);
        err = dgram_get(d, "ERRNO");
        ASSERT_NOT_NULL(err);
        ASSERT_EQ(atoi(err), error);
        free(d);
        exit_status = testd_wait_exit(&t, WAIT_MS);
        ASSERT_TRUE(WIFEXITED(exit_status));
        ASSERT_NE(WEXITSTATUS(exit_status), 0);
        while ((d = testd_notify_next(&t, 0, NULL))) {
                ASSERT_FALSE(dgram_has(d, "READY=1"));
                free(d);
        }
        log = test_read_file(t.log, NULL);
        ASSERT_CONTAINS(log, "error");
        testd_done(&t);
}

TEST(startup_failures)
{
        _cleanup_free_ char *file = xasprintf("%s/not-a-directory", test_tmpdir());
        _cleanup_free_ char *arg_file = xasprintf("--state-dir=%s", file);
        _cleanup_free_ char *dbdir = xasprintf("%s/dbdir", test_tmpdir());
        _cleanup_free_ char *dbdir_db = xasprintf("%s/queue.db", dbdir);
        _cleanup_free_ char *arg_dbdir = xasprintf("--state-dir=%s", dbdir);
        _cleanup_free_ char *arg_sock = xasprintf("--socket=%s/missing/dir/control.sock", test_tmpdir());

        /* A file where the state directory should be. */
        test_write_file(file, "");
        {
                const char *const args[] = { arg_file, NULL };
                check_failed_start("fail-file", args, "Cannot create the state directory", ENOTDIR);
        }
        /* A directory where the database should be. */
        ASSERT_OK(mx_mkdir_p(dbdir_db, 0755));
        {
                const char *const args[] = { arg_dbdir, NULL };
                check_failed_start("fail-db", args, "Cannot open the job database", EISDIR);
        }
        /* A socket in a directory that does not exist. */
        {
                const char *const args[] = { arg_sock, NULL };
                check_failed_start("fail-socket", args, "Cannot open the control socket", ENOENT);
        }
}
