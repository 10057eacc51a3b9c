/* SPDX-License-Identifier: MIT */
/* The SQLite queue: migrations, the job/run/attempt life cycle, reply shapes. */
#include "test.h"
#include "embedded.h"
#include "protocol.h"
#include "queue.h"

#include <sys/stat.h>

extern const struct mx_embedded mx_migrations[];

static struct mx_db *open_db(const char *name)
{
        _cleanup_free_ char *path = xasprintf("%s/%s", test_tmpdir(), name);
        _cleanup_free_ char *err = NULL;
        struct mx_db *db = NULL;

        ASSERT_OK(db_open(path, &db, &err));
        return db;
}

static void check_shape(const char *type, json_t *v)
{
        const struct mx_proto *p = mx_proto_get();
        _cleanup_json_ json_t *ref = json_pack("{s:s}", "ref", type);
        _cleanup_free_ char *err = NULL;

        if (mx_proto_check_value(p, ref, v, type, &err) < 0)
                test_fail(__FILE__, __LINE__, "reply shape: %s", err);
}

static int64_t submit(struct mx_db *db, uid_t uid, int priority, int n_runs)
{
        _cleanup_json_ json_t *levels = json_pack("[s,s]", "L1", "L1.5");
        _cleanup_json_ json_t *req = json_pack("{s:s}", "feature", "cutlass");
        struct queue_job_new job = {
                .uid = uid, .gid = uid, .user_name = "tester", .matrix_path = "/m.json",
                .matrix_digest = "0123456789abcdef", .feature = "cutlass", .strategy = "default",
                .levels = levels, .priority = priority, .request = req,
        };
        struct queue_run_new *runs = xcalloc(n_runs, sizeof(*runs));
        int64_t id = 0;

        for (int i = 0; i < n_runs; i++) {
                runs[i].config_key = xasprintf("kernel=k%d", i);
                runs[i].config_hash = "0000000000000000";
                runs[i].config = json_pack("{s:s}", "kernel", runs[i].config_key + 7);
                runs[i].reasons = json_pack("[s]", "L6");
                runs[i].spec = json_pack("{s:[s]}", "argv", "true");
                runs[i].expect_fail = i == 2 ? "known crash" : NULL;
        }
        ASSERT_OK(queue_submit(db, &job, runs, n_runs, &id));
        for (int i = 0; i < n_runs; i++) {
                free((char *)runs[i].config_key);
                json_decref(runs[i].config);
                json_decref(runs[i].reasons);
                json_decref(runs[i].spec);
        }
        free(runs);
        return id;
}

TEST(open_migrates_and_reopens)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("a.db");
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ char *path = xasprintf("%s/a.db", test_tmpdir());

        ASSERT_EQ(db->version, db_schema_version());
        ASSERT_TRUE(db_schema_version() >= 1);
        db = db_close(db);
        ASSERT_OK(db_open(path, &db, &err)); /* idempotent */
        ASSERT_EQ(db->version, db_schema_version());
}

TEST(newer_database_refused)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("newer.db");
        _cleanup_free_ char *path = xasprintf("%s/newer.db", test_tmpdir());
        _cleanup_free_ char *err = NULL;

        ASSERT_OK(db_exec(db, "PRAGMA user_version = 999"));
        db = db_close(db);
        ASSERT_ERR(db_open(path, &db, &err), EPROTO);
        ASSERT_CONTAINS(err, "schema version 999");
}

TEST(garbage_file_refused)
{
        _cleanup_free_ char *path = xasprintf("%s/garbage.db", test_tmpdir());
        _cleanup_free_ char *err = NULL;
        struct mx_db *db = NULL;

        test_write_file(path, "this is not a database, it is a text file that is long enough to look like one\n");
        ASSERT_TRUE(db_open(path, &db, &err) < 0);
        ASSERT_NOT_NULL(err);
        ASSERT_NULL(db);
}

TEST(priority_then_fifo)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("prio.db");
        int64_t j1 = submit(db, 1000, 0, 2);
        int64_t j2 = submit(db, 1000, 5, 1);
        int64_t j3 = submit(db, 1000, 0, 1);
        struct queue_next n = {};
        int64_t order[4], att;
        int num;

        for (int i = 0; i < 4; i++) {
                struct queue_finish f = { .outcome = MX_OUTCOME_COMPLETED, .exit_status = 0 };
                char tag[16];

                snprintf(tag, sizeof(tag), "tag-%d", i);
                ASSERT_OK(queue_pick_next(db, &n));
                order[i] = n.job;
                ASSERT_NOT_NULL(n.spec);
                ASSERT_OK(queue_attempt_start(db, n.run, tag, "boot", &att, &num));
                ASSERT_EQ(num, 1);
                ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
                queue_next_done(&n);
        }
        ASSERT_EQ(order[0], j2);
        ASSERT_EQ(order[1], j1);
        ASSERT_EQ(order[2], j1);
        ASSERT_EQ(order[3], j3);
        ASSERT_ERR(queue_pick_next(db, &n), ENOENT);
}

TEST(attempt_results_and_levels)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("results.db");
        int64_t job = submit(db, 1000, 0, 3), att;
        _cleanup_json_ json_t *runs = NULL, *jj = NULL;
        const char *expect[3] = { "pass", "fail", "xfail" };
        int num;

        for (int i = 0; i < 3; i++) {
                struct queue_next n = {};
                struct queue_level l1 = { .level = "L1", .verdict = "pass", .started_at = 1, .finished_at = 2 };
                struct queue_level l15 = { .level = "L1.5", .verdict = i == 1 ? "fail" : "pass",
                                           .started_at = 3, .finished_at = 4, .message = "wrong kernel" };
                struct queue_finish f = { .outcome = i == 2 ? MX_OUTCOME_CRASHED : MX_OUTCOME_COMPLETED,
                                          .crash_class = i == 2 ? "illegal-instruction" : NULL,
                                          .exit_status = -1 };
                _cleanup_free_ char *result = NULL, *tag = xasprintf("t%d", i);

                ASSERT_OK(queue_pick_next(db, &n));
                ASSERT_OK(queue_attempt_start(db, n.run, tag, "boot", &att, &num));
                ASSERT_OK(queue_attempt_process(db, att, 100 + i, 100 + i, 5555));
                ASSERT_OK(queue_level_record(db, att, &l1));
                if (i != 2)
                        ASSERT_OK(queue_level_record(db, att, &l15));
                ASSERT_OK(queue_attempt_finish(db, att, &f, &result));
                ASSERT_STREQ(result, expect[i]);
                queue_next_done(&n);
        }
        ASSERT_OK(queue_job_runs_json(db, job, 0, 0, &runs, NULL, NULL));
        ASSERT_EQ(json_array_size(runs), 3);
        for (size_t i = 0; i < 3; i++) {
                json_t *r = json_array_get(runs, i);
                check_shape("run_summary", r);
                ASSERT_STREQ(json_string_value(json_object_get(r, "result")), expect[i]);
        }
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(runs, 2), "crash_class")),
                     "illegal-instruction");
        ASSERT_OK(queue_job_json(db, job, &jj));
        check_shape("job_summary", jj);
        ASSERT_STREQ(json_string_value(json_object_get(jj, "state")), "done");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(jj, "counts"), "fail")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(jj, "counts"), "total")), 3);
}

TEST(open_attempts_for_recovery)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("recover.db");
        struct queue_open_attempt *open = NULL;
        struct queue_next n = {};
        size_t n_open = 0;
        int64_t att;
        int num;

        submit(db, 1000, 0, 2);
        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_OK(queue_attempt_start(db, n.run, "boot-1", "bootid", &att, &num));
        ASSERT_OK(queue_attempt_process(db, att, 4242, 4242, 123456789));
        ASSERT_OK(queue_open_attempts(db, &open, &n_open));
        ASSERT_EQ(n_open, 1);
        ASSERT_EQ(open[0].pid, 4242);
        ASSERT_EQ(open[0].proc_start, 123456789);
        ASSERT_STREQ(open[0].tag, "boot-1");
        ASSERT_TRUE(open[0].has_process);
        {
                struct queue_finish f = { .outcome = MX_OUTCOME_INTERRUPTED, .exit_status = -1, .requeue = true };
                _cleanup_free_ char *res = NULL;

                ASSERT_OK(queue_attempt_finish(db, open[0].attempt, &f, &res));
                ASSERT_STREQ(res, "interrupted");
        }
        queue_open_attempts_free(open, n_open);
        /* Requeued: the same run comes back first, and its next attempt is number 2. */
        {
                struct queue_next again = {};
                ASSERT_OK(queue_pick_next(db, &again));
                ASSERT_EQ(again.run, n.run);
                ASSERT_OK(queue_attempt_start(db, again.run, "boot-2", "bootid", &att, &num));
                ASSERT_EQ(num, 2);
                queue_next_done(&again);
        }
        /* Finishing an already finished attempt is refused. */
        {
                struct queue_finish f = { .outcome = MX_OUTCOME_COMPLETED, .exit_status = 0 };
                ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
                ASSERT_ERR(queue_attempt_finish(db, att, &f, NULL), ENOENT);
        }
        queue_next_done(&n);
}

TEST(cancel_and_retry)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("cancel.db");
        int64_t job = submit(db, 1000, 0, 4), cancelled, running, requeued, att;
        _cleanup_json_ json_t *jj = NULL;
        struct queue_next n = {};
        uid_t owner;
        int num;

        ASSERT_OK(queue_job_owner(db, job, &owner));
        ASSERT_EQ(owner, 1000);
        ASSERT_ERR(queue_job_owner(db, job + 100, &owner), ENOENT);
        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_OK(queue_attempt_start(db, n.run, "c1", "b", &att, &num));
        ASSERT_OK(queue_cancel(db, job, 0, 1000, &cancelled, &running));
        ASSERT_EQ(cancelled, 3);
        ASSERT_EQ(running, n.run);
        {
                struct queue_finish f = { .outcome = MX_OUTCOME_CANCELLED, .exit_status = -1 };
                ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
        }
        ASSERT_OK(queue_job_json(db, job, &jj));
        ASSERT_STREQ(json_string_value(json_object_get(jj, "state")), "cancelled");
        /* Plain retry leaves cancelled runs alone (nothing to do: -ESTALE); --all brings every run back. */
        ASSERT_ERR(queue_retry(db, job, 0, false, 1000, 0, &requeued), ESTALE);
        ASSERT_OK(queue_retry(db, job, 0, true, 1000, 0, &requeued));
        ASSERT_EQ(requeued, 4);
        json_decref(jj);
        ASSERT_OK(queue_job_json(db, job, &jj));
        ASSERT_STREQ(json_string_value(json_object_get(jj, "state")), "queued");
        /* Retrying a queued run is refused. */
        ASSERT_ERR(queue_retry(db, 0, n.run, false, 1000, 0, &requeued), EBUSY);
        queue_next_done(&n);
}

/*
 * A cancel of a running run is acknowledged before the run has stopped: if
 * the daemon dies in between (kill -9 during the server's stop grace), the
 * recovery that ends the open attempt must not put the run back in the queue.
 */
TEST(cancel_of_a_running_run_survives_recovery)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("cancel-recover.db");
        int64_t job = submit(db, 1000, 0, 2), other = submit(db, 1000, 0, 1), cancelled, running, att;
        struct queue_finish interrupted = {
                .outcome = MX_OUTCOME_INTERRUPTED, .exit_status = -1, .requeue = true,
        };
        struct queue_next n = {}, next = {};
        _cleanup_json_ json_t *run = NULL, *jj = NULL;
        _cleanup_free_ char *result = NULL;
        int num;

        /* One run, cancelled by its number while it runs, then recovered as interrupted. */
        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_EQ(n.job, job);
        ASSERT_OK(queue_attempt_start(db, n.run, "cr1", "b", &att, &num));
        ASSERT_OK(queue_cancel(db, 0, n.run, 1000, &cancelled, &running));
        ASSERT_EQ(running, n.run);
        ASSERT_OK(queue_attempt_finish(db, att, &interrupted, &result));
        ASSERT_STREQ(result, "cancelled");
        ASSERT_OK(queue_run_json(db, n.run, false, &run));
        ASSERT_STREQ(json_string_value(json_object_get(run, "state")), "done");
        ASSERT_STREQ(json_string_value(json_object_get(run, "result")), "cancelled");
        /* The job's other run was not cancelled and is next. */
        ASSERT_OK(queue_pick_next(db, &next));
        ASSERT_EQ(next.job, job);
        ASSERT_TRUE(next.run != n.run);
        queue_next_done(&n);
        /* A whole job, cancelled while its last run runs: nothing of it comes back. */
        ASSERT_OK(queue_attempt_start(db, next.run, "cr2", "b", &att, &num));
        ASSERT_OK(queue_cancel(db, job, 0, 1000, &cancelled, &running));
        ASSERT_EQ(running, next.run);
        ASSERT_OK(queue_attempt_finish(db, att, &interrupted, NULL));
        ASSERT_OK(queue_job_json(db, job, &jj));
        ASSERT_STREQ(json_string_value(json_object_get(jj, "state")), "cancelled");
        queue_next_done(&next);
        ASSERT_OK(queue_pick_next(db, &next));
        ASSERT_EQ(next.job, other);
        /* An interrupted run that nobody cancelled is still requeued. */
        ASSERT_OK(queue_attempt_start(db, next.run, "cr3", "b", &att, &num));
        ASSERT_OK(queue_attempt_finish(db, att, &interrupted, NULL));
        queue_next_done(&next);
        ASSERT_OK(queue_pick_next(db, &next));
        ASSERT_EQ(next.job, other);
        queue_next_done(&next);
        /* retry --all brings the cancelled runs back, and they run normally. */
        ASSERT_OK(queue_retry(db, job, 0, true, 1000, 0, &cancelled));
        ASSERT_EQ(cancelled, 2);
}

/* Cancelling what has already ended is refused and changes nothing: a passed job stays done. */
TEST(cancel_with_nothing_left_changes_nothing)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("cancel-done.db");
        int64_t job = submit(db, 1000, 0, 1), cancelled = -1, running = -1, att, events_before;
        struct queue_finish f = { .outcome = MX_OUTCOME_COMPLETED, .exit_status = 0 };
        _cleanup_json_ json_t *jj = NULL, *events = NULL;
        struct queue_next n = {};
        int num;

        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_OK(queue_attempt_start(db, n.run, "d1", "b", &att, &num));
        ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
        ASSERT_OK(queue_events(db, job, 0, 100, &events));
        events_before = (int64_t)json_array_size(events);
        ASSERT_ERR(queue_cancel(db, job, 0, 1000, &cancelled, &running), ESTALE);
        ASSERT_ERR(queue_cancel(db, 0, n.run, 1000, &cancelled, &running), ESTALE);
        ASSERT_EQ(cancelled, -1); /* untouched on failure */
        ASSERT_EQ(running, -1);
        ASSERT_OK(queue_job_json(db, job, &jj));
        ASSERT_STREQ(json_string_value(json_object_get(jj, "state")), "done");
        ASSERT_TRUE(json_is_null(json_object_get(jj, "cancelled_at")));
        json_decref(events);
        ASSERT_OK(queue_events(db, job, 0, 100, &events));
        ASSERT_EQ((int64_t)json_array_size(events), events_before);
        queue_next_done(&n);
}

TEST(paused_survives_reopen)
{
        _cleanup_free_ char *path = xasprintf("%s/paused.db", test_tmpdir());
        _cleanup_free_ char *err = NULL;
        struct mx_db *db = open_db("paused.db");
        bool paused = true;

        ASSERT_OK(queue_get_paused(db, &paused));
        ASSERT_FALSE(paused);
        ASSERT_OK(queue_set_paused(db, true, 0));
        db = db_close(db);
        ASSERT_OK(db_open(path, &db, &err));
        ASSERT_OK(queue_get_paused(db, &paused));
        ASSERT_TRUE(paused);
        db_close(db);
}

TEST(list_paging_and_filters)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("list.db");
        _cleanup_json_ json_t *jobs = NULL, *counts = NULL, *events = NULL;
        struct queue_list_filter f = { .limit = 3 };
        int64_t last = 0, cancelled, running;
        bool more = false;

        for (int i = 0; i < 7; i++)
                last = submit(db, i % 2 ? 1000 : 2000, 0, 1);
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 3);
        ASSERT_TRUE(more);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(jobs, 0), "id")), last);
        f.before = json_integer_value(json_object_get(json_array_get(jobs, 2), "id"));
        json_decref(jobs);
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(jobs, 0), "id")), last - 3);
        json_decref(jobs);
        f = (struct queue_list_filter){ .has_uid = true, .uid = 1000, .limit = 50 };
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 3);
        ASSERT_FALSE(more);
        json_decref(jobs);
        ASSERT_OK(queue_cancel(db, last, 0, 0, &cancelled, &running));
        f = (struct queue_list_filter){ .state = "cancelled", .limit = 50 };
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 1);
        ASSERT_OK(queue_counts_json(db, &counts));
        ASSERT_EQ(json_integer_value(json_object_get(counts, "queued")), 6);
        ASSERT_EQ(json_integer_value(json_object_get(counts, "cancelled")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(counts, "jobs")), 7);
        ASSERT_OK(queue_events(db, last, 0, 100, &events));
        ASSERT_EQ(json_array_size(events), 2);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(events, 0), "kind")), "job-accepted");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(events, 1), "kind")), "job-cancelled");
}

TEST(queued_count_per_uid)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("count.db");
        int64_t n = -1;

        submit(db, 1000, 0, 5);
        submit(db, 2000, 0, 2);
        ASSERT_OK(queue_count_queued(db, 1000, &n));
        ASSERT_EQ(n, 5);
        ASSERT_OK(queue_count_queued(db, 3000, &n));
        ASSERT_EQ(n, 0);
}

/* retry queues runs again: the owner's limit on queued runs holds for it as for submit. */
TEST(retry_keeps_the_queued_limit)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("retry-limit.db");
        int64_t job = submit(db, 1000, 0, 3), n = -1, cancelled, running, r1, r2;
        _cleanup_json_ json_t *jj = NULL, *runs = NULL;

        ASSERT_OK(queue_cancel(db, job, 0, 1000, &cancelled, &running));
        ASSERT_EQ(cancelled, 3);
        submit(db, 1000, 0, 2);
        submit(db, 2000, 0, 4); /* another user's runs do not count */
        /* 2 queued + 3 requeued > 4: refused, and nothing changed. */
        ASSERT_ERR(queue_retry(db, job, 0, true, 1000, 4, &n), EDQUOT);
        ASSERT_OK(queue_count_queued(db, 1000, &n));
        ASSERT_EQ(n, 2);
        ASSERT_OK(queue_job_json(db, job, &jj));
        ASSERT_STREQ(json_string_value(json_object_get(jj, "state")), "cancelled");
        /* One run fits, a second does not. */
        ASSERT_OK(queue_job_runs_json(db, job, 0, 0, &runs, NULL, NULL));
        r1 = json_integer_value(json_object_get(json_array_get(runs, 0), "id"));
        r2 = json_integer_value(json_object_get(json_array_get(runs, 1), "id"));
        ASSERT_OK(queue_retry(db, 0, r1, false, 1000, 3, &n));
        ASSERT_EQ(n, 1);
        ASSERT_ERR(queue_retry(db, 0, r2, false, 1000, 3, &n), EDQUOT);
        /* Exactly at the limit is allowed; 0 is no limit. */
        ASSERT_OK(queue_retry(db, job, 0, true, 1000, 5, &n));
        ASSERT_EQ(n, 2);
        ASSERT_OK(queue_count_queued(db, 1000, &n));
        ASSERT_EQ(n, 5);
}

/* Rows of one query (a count of mismatches) as an integer. */
static int64_t sql_int(struct mx_db *db, const char *sql)
{
        sqlite3_stmt *s = NULL;
        int64_t v = -1;

        ASSERT_EQ(sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL), SQLITE_OK);
        if (sqlite3_step(s) == SQLITE_ROW)
                v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return v;
}

/* job_counts and user_counts (migration 002) hold exactly what counting runs gives. */
static void check_counts_match_runs(struct mx_db *db)
{
        static const char jobs[] =
                "SELECT count(*) FROM (SELECT job_id, state, result, n FROM job_counts WHERE n > 0 EXCEPT "
                "SELECT job_id, state, coalesce(result, ''), count(*) FROM runs GROUP BY 1, 2, 3)";
        static const char jobs_back[] =
                "SELECT count(*) FROM (SELECT job_id, state, coalesce(result, ''), count(*) FROM runs "
                "GROUP BY 1, 2, 3 EXCEPT SELECT job_id, state, result, n FROM job_counts)";
        static const char users[] =
                "SELECT count(*) FROM (SELECT uid, state, result, n FROM user_counts WHERE n > 0 EXCEPT "
                "SELECT j.uid, r.state, coalesce(r.result, ''), count(*) FROM runs r JOIN jobs j "
                "ON j.id = r.job_id GROUP BY 1, 2, 3)";
        static const char users_back[] =
                "SELECT count(*) FROM (SELECT j.uid, r.state, coalesce(r.result, ''), count(*) FROM runs r "
                "JOIN jobs j ON j.id = r.job_id GROUP BY 1, 2, 3 EXCEPT SELECT uid, state, result, n "
                "FROM user_counts)";

        ASSERT_EQ(sql_int(db, jobs), 0);
        ASSERT_EQ(sql_int(db, jobs_back), 0);
        ASSERT_EQ(sql_int(db, users), 0);
        ASSERT_EQ(sql_int(db, users_back), 0);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM (SELECT uid, n FROM user_jobs WHERE n > 0 EXCEPT "
                              "SELECT uid, count(*) FROM jobs GROUP BY 1)"),
                  0);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM (SELECT uid, count(*) FROM jobs GROUP BY 1 EXCEPT "
                              "SELECT uid, n FROM user_jobs)"),
                  0);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM job_counts WHERE n < 0"), 0);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM user_counts WHERE n < 0"), 0);
}

/* Start and finish the next queued run with an outcome; requeue puts it back. */
static void run_next(struct mx_db *db, const char *tag, enum mx_outcome o, bool requeue)
{
        struct queue_finish f = { .outcome = o, .exit_status = -1, .requeue = requeue };
        struct queue_next n = {};
        int64_t att;
        int num;

        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_OK(queue_attempt_start(db, n.run, tag, "boot", &att, &num));
        ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
        queue_next_done(&n);
}

TEST(counts_follow_every_change)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("counts.db");
        int64_t j1 = submit(db, 1000, 0, 4), j2, cancelled, running, requeued, queued = -1;
        _cleanup_json_ json_t *counts = NULL, *jj = NULL;

        j2 = submit(db, 2000, 0, 3);
        check_counts_match_runs(db);
        run_next(db, "a", MX_OUTCOME_COMPLETED, false);
        run_next(db, "b", MX_OUTCOME_CRASHED, false);
        run_next(db, "c", MX_OUTCOME_INTERRUPTED, true); /* back to queued */
        check_counts_match_runs(db);
        ASSERT_OK(queue_cancel(db, j2, 0, 2000, &cancelled, &running));
        ASSERT_EQ(cancelled, 3);
        ASSERT_OK(queue_retry(db, j1, 0, false, 1000, 0, &requeued));
        ASSERT_EQ(requeued, 1); /* the crashed run */
        check_counts_match_runs(db);
        ASSERT_OK(queue_count_queued(db, 1000, &queued));
        ASSERT_EQ(queued, 3);
        ASSERT_OK(queue_count_queued(db, 2000, &queued));
        ASSERT_EQ(queued, 0);
        ASSERT_OK(queue_counts_json(db, &counts));
        ASSERT_EQ(json_integer_value(json_object_get(counts, "queued")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(counts, "done")), 4);
        ASSERT_EQ(json_integer_value(json_object_get(counts, "pass")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(counts, "cancelled")), 3);
        ASSERT_NULL(json_object_get(counts, "crashed")); /* retried: no longer counted */
        ASSERT_OK(queue_job_json(db, j1, &jj));
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(jj, "counts"), "total")), 4);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(jj, "counts"), "queued")), 3);
        /* Deleting a job (the schema cascades) takes its runs out of both tables. */
        ASSERT_OK(db_exec(db, "DELETE FROM jobs WHERE id = 1"));
        check_counts_match_runs(db);
        ASSERT_OK(queue_count_queued(db, 1000, &queued));
        ASSERT_EQ(queued, 0);
        json_decref(counts);
        ASSERT_OK(queue_counts_json(db, &counts));
        ASSERT_EQ(json_integer_value(json_object_get(counts, "jobs")), 1);
}

TEST(migration_counts_existing_runs)
{
        _cleanup_free_ char *path = xasprintf("%s/v1.db", test_tmpdir());
        _cleanup_free_ char *err = NULL;
        struct mx_db *db = NULL;
        sqlite3 *raw = NULL;
        int64_t queued = -1;

        /* A version-1 database with runs in it, as an mxmatrixd before migration 002 left it. */
        ASSERT_EQ(sqlite3_open(path, &raw), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, mx_migrations[0].data, NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw,
                               "PRAGMA user_version = 1;"
                               "INSERT INTO jobs (id, uid, gid, submitted_at, matrix_path, matrix_digest, "
                               "strategy, levels, request) VALUES (1, 1000, 1000, 0, 'm', 'd', 'default', '[]', "
                               "'{}');"
                               "INSERT INTO runs (job_id, seq, config_key, config_hash, config, reasons, spec, "
                               "queued_at, state, result) VALUES (1, 1, 'k', 'h', '{}', '[]', '{}', 0, 'done', "
                               "'pass'), (1, 2, 'k', 'h', '{}', '[]', '{}', 0, 'queued', NULL), "
                               "(1, 3, 'k', 'h', '{}', '[]', '{}', 0, 'queued', NULL);",
                               NULL, NULL, NULL),
                  SQLITE_OK);
        sqlite3_close(raw);
        ASSERT_OK(db_open(path, &db, &err));
        ASSERT_TRUE(db->version >= 2);
        check_counts_match_runs(db);
        ASSERT_OK(queue_count_queued(db, 1000, &queued));
        ASSERT_EQ(queued, 2);
        ASSERT_EQ(sql_int(db, "SELECT n FROM user_jobs WHERE uid = 1000"), 1);
        db_close(db);
}

TEST(list_state_filters_over_a_history)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("history.db");
        _cleanup_json_ json_t *jobs = NULL;
        struct queue_list_filter f = { .state = "active", .limit = 2 };
        int64_t old_active, cancelled, running, att;
        struct queue_next n = {};
        bool more = true;
        int num;

        /* The oldest job stays queued, 40 finished ones follow, then one running and one cancelled. */
        old_active = submit(db, 1000, 0, 2);
        for (int i = 0; i < 40; i++)
                submit(db, 1000, 1, 1);
        for (int i = 0; i < 40; i++) {
                char tag[16];

                snprintf(tag, sizeof(tag), "h%d", i);
                run_next(db, tag, MX_OUTCOME_COMPLETED, false);
        }
        submit(db, 2000, 2, 1);
        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_OK(queue_attempt_start(db, n.run, "live", "boot", &att, &num));
        ASSERT_OK(queue_cancel(db, submit(db, 1000, 0, 1), 0, 1000, &cancelled, &running));

        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 2);
        ASSERT_FALSE(more);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(jobs, 0), "id")), n.job);
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(jobs, 1), "id")), old_active);
        json_decref(jobs);
        f.limit = 1; /* a page of one, then the next from before it */
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_TRUE(more);
        f.before = n.job;
        json_decref(jobs);
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(jobs, 0), "id")), old_active);
        ASSERT_FALSE(more);
        json_decref(jobs);
        f = (struct queue_list_filter){ .state = "queued", .limit = 50 };
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 1);
        json_decref(jobs);
        f.state = "running";
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(jobs, 0), "state")), "running");
        json_decref(jobs);
        f.state = "cancelled";
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 1);
        json_decref(jobs);
        f = (struct queue_list_filter){ .state = "done", .limit = 30, .has_uid = true, .uid = 1000 };
        ASSERT_OK(queue_list_json(db, &f, &jobs, &more));
        ASSERT_EQ(json_array_size(jobs), 30);
        ASSERT_TRUE(more);
        for (size_t i = 0; i < json_array_size(jobs); i++)
                ASSERT_STREQ(json_string_value(json_object_get(json_array_get(jobs, i), "state")), "done");
        queue_next_done(&n);
}

/* Start the next queued run, record one L1 verdict, finish it with an outcome. */
static int64_t run_with_level(struct mx_db *db, const char *tag, const char *verdict, enum mx_outcome o)
{
        struct queue_level l1 = {.level = "L1", .verdict = verdict, .started_at = 1, .finished_at = 2};
        struct queue_finish f = {.outcome = o, .exit_status = -1};
        struct queue_next n = {};
        int64_t att, run;
        int num;

        ASSERT_OK(queue_pick_next(db, &n));
        run = n.run;
        ASSERT_OK(queue_attempt_start(db, n.run, tag, "boot", &att, &num));
        ASSERT_OK(queue_level_record(db, att, &l1));
        ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
        queue_next_done(&n);
        return run;
}

static json_t *run_json(struct mx_db *db, int64_t run, bool details)
{
        json_t *j = NULL;

        ASSERT_OK(queue_run_json(db, run, details, &j));
        check_shape("run_summary", j);
        return j;
}

static const char *verdict_of(json_t *levels, size_t i)
{
        return json_string_value(json_object_get(json_array_get(levels, i), "verdict"));
}

/*
 * Issue 7 item 6: a retry followed by a cancel kept the cancel as the run's
 * result beside the levels of the attempt before it. The run shows the
 * latest attempt that came to a result, with that attempt's levels, and
 * every attempt stays in its history with its own.
 */
TEST(cancelled_retry_keeps_the_earlier_result)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("retry-cancel.db");
        int64_t job = submit(db, 1000, 0, 2), run, cancelled, running, requeued, att;
        _cleanup_json_ json_t *j = NULL, *jj = NULL;
        struct queue_next n = {};
        json_t *hist;
        int num;

        run = run_with_level(db, "p1", "pass", MX_OUTCOME_COMPLETED);
        (void)run_with_level(db, "f1", "fail", MX_OUTCOME_COMPLETED);
        ASSERT_OK(queue_retry(db, job, 0, true, 1000, 0, &requeued));
        ASSERT_EQ(requeued, 2);
        /* Queued again: no result, and no levels of the attempt before (they are in its history). */
        j = run_json(db, run, false);
        ASSERT_TRUE(json_is_null(json_object_get(j, "result")));
        ASSERT_EQ(json_array_size(json_object_get(j, "levels")), 0);
        json_decref(j);
        ASSERT_OK(queue_cancel(db, job, 0, 1000, &cancelled, &running));
        ASSERT_EQ(cancelled, 2);
        j = run_json(db, run, true);
        ASSERT_STREQ(json_string_value(json_object_get(j, "state")), "done");
        ASSERT_STREQ(json_string_value(json_object_get(j, "result")), "pass");
        ASSERT_EQ(json_integer_value(json_object_get(j, "result_attempt")), 1);
        ASSERT_STREQ(verdict_of(json_object_get(j, "levels"), 0), "pass");
        ASSERT_OK(queue_job_json(db, job, &jj));
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(jj, "counts"), "pass")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(jj, "counts"), "fail")), 1);
        ASSERT_NULL(json_object_get(json_object_get(jj, "counts"), "cancelled"));
        check_counts_match_runs(db);
        json_decref(j);

        /* A retry cancelled while it runs: attempt 2 ends cancelled with its own levels; the run shows 1. */
        ASSERT_OK(queue_retry(db, 0, run, false, 1000, 0, &requeued));
        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_EQ(n.run, run);
        ASSERT_OK(queue_attempt_start(db, n.run, "p2", "boot", &att, &num));
        ASSERT_EQ(num, 2);
        {
                struct queue_level l = {.level = "L1", .verdict = "fail", .started_at = 5, .finished_at = 6};
                struct queue_finish f = {.outcome = MX_OUTCOME_CANCELLED, .exit_status = -1};
                _cleanup_free_ char *result = NULL;

                ASSERT_OK(queue_level_record(db, att, &l));
                ASSERT_OK(queue_cancel(db, 0, run, 1000, &cancelled, &running));
                ASSERT_EQ(running, run);
                ASSERT_OK(queue_attempt_finish(db, att, &f, &result));
                ASSERT_STREQ(result, "cancelled"); /* what the attempt came to */
        }
        queue_next_done(&n);
        j = run_json(db, run, true);
        ASSERT_STREQ(json_string_value(json_object_get(j, "result")), "pass");
        ASSERT_EQ(json_integer_value(json_object_get(j, "result_attempt")), 1);
        ASSERT_EQ(json_array_size(json_object_get(j, "levels")), 1);
        ASSERT_STREQ(verdict_of(json_object_get(j, "levels"), 0), "pass");
        hist = json_object_get(j, "attempt_history");
        ASSERT_EQ(json_array_size(hist), 2);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(hist, 0), "result")), "pass");
        ASSERT_STREQ(verdict_of(json_object_get(json_array_get(hist, 0), "levels"), 0), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(hist, 1), "result")), "cancelled");
        ASSERT_STREQ(verdict_of(json_object_get(json_array_get(hist, 1), "levels"), 0), "fail");
        check_counts_match_runs(db);

        /* A plain retry takes the failed run back, not the one that passed. */
        ASSERT_OK(queue_retry(db, job, 0, false, 1000, 0, &requeued));
        ASSERT_EQ(requeued, 1);
}

/* A run cancelled before it ever ran, or whose only attempt was cancelled, is cancelled. */
TEST(cancel_without_an_earlier_result)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("cancel-plain.db");
        int64_t job = submit(db, 1000, 0, 2), cancelled, running, att;
        _cleanup_json_ json_t *j1 = NULL, *j2 = NULL;
        struct queue_next n = {};
        int num;

        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_OK(queue_attempt_start(db, n.run, "x", "boot", &att, &num));
        ASSERT_OK(queue_cancel(db, job, 0, 1000, &cancelled, &running));
        {
                struct queue_level l = {.level = "L1", .verdict = "pass", .started_at = 1, .finished_at = 2};
                struct queue_finish f = {.outcome = MX_OUTCOME_CANCELLED, .exit_status = -1};

                ASSERT_OK(queue_level_record(db, att, &l));
                ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
        }
        j1 = run_json(db, n.run, false);
        ASSERT_STREQ(json_string_value(json_object_get(j1, "result")), "cancelled");
        ASSERT_STREQ(json_string_value(json_object_get(j1, "outcome")), "cancelled");
        ASSERT_EQ(json_integer_value(json_object_get(j1, "result_attempt")), 1);
        ASSERT_EQ(json_array_size(json_object_get(j1, "levels")), 1); /* its own levels */
        j2 = run_json(db, n.run + 1, false);
        ASSERT_STREQ(json_string_value(json_object_get(j2, "result")), "cancelled");
        ASSERT_TRUE(json_is_null(json_object_get(j2, "result_attempt")));
        ASSERT_EQ(json_array_size(json_object_get(j2, "levels")), 0);
        check_counts_match_runs(db);
        queue_next_done(&n);
}

/* Submit n runs whose own snapshot part depends on i % distinct, under a shared part. */
static int64_t submit_specs(struct mx_db *db, int n_runs, int distinct, const char *base_text)
{
        _cleanup_json_ json_t *levels = json_pack("[s]", "L1");
        _cleanup_json_ json_t *req = json_object();
        _cleanup_json_ json_t *base =
                json_pack("{s:s,s:{s:s}}", "model", base_text, "profile", "name", "vllm");
        struct queue_job_new job = {
                .uid = 1000,
                .gid = 1000,
                .matrix_path = "/m.json",
                .matrix_digest = "d",
                .strategy = "full",
                .levels = levels,
                .request = req,
                .spec_base = base,
        };
        struct queue_run_new *runs = xcalloc(n_runs, sizeof(*runs));
        int64_t id = 0;

        for (int i = 0; i < n_runs; i++) {
                runs[i].config_key = xasprintf("k=%d", i);
                runs[i].config_hash = "0000000000000000";
                runs[i].config = json_object();
                runs[i].reasons = json_array();
                runs[i].spec = json_pack("{s:[s,s],s:s}", "argv", "serve", "--x", "env", distinct ? "" : "");
                json_object_set_new(runs[i].spec, "env", json_sprintf("K=%d", i % distinct));
        }
        ASSERT_OK(queue_submit(db, &job, runs, n_runs, &id));
        for (int i = 0; i < n_runs; i++) {
                free((char *)runs[i].config_key);
                json_decref(runs[i].config);
                json_decref(runs[i].reasons);
                json_decref(runs[i].spec);
        }
        free(runs);
        return id;
}

/* Issue 7 item 11: each distinct snapshot is stored once; the runner and show get the merged one. */
TEST(snapshots_stored_once)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("snapshots.db");
        _cleanup_json_ json_t *j = NULL;
        struct queue_next n = {};
        json_t *spec;

        submit_specs(db, 40, 8, "m1");
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM snapshots"), 8 + 1);
        submit_specs(db, 40, 8, "m1"); /* the same sweep again: nothing new */
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM snapshots"), 8 + 1);
        submit_specs(db, 10, 10, "m2"); /* 2 new run parts, a new shared part */
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM snapshots"), 10 + 2);
        /* A hash collision cannot share a snapshot: the text decides. */
        ASSERT_OK(db_exec(db, "UPDATE snapshots SET hash = 'collide'"));
        submit_specs(db, 1, 1, "m3");
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM snapshots"), 10 + 2 + 2);
        ASSERT_OK(queue_pick_next(db, &n));
        spec = n.spec;
        ASSERT_STREQ(json_string_value(json_object_get(spec, "model")), "m1");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(spec, "profile"), "name")), "vllm");
        ASSERT_STREQ(json_string_value(json_object_get(spec, "env")), "K=0");
        ASSERT_EQ(json_array_size(json_object_get(spec, "argv")), 2);
        j = run_json(db, n.run, true);
        ASSERT_TRUE(json_equal(json_object_get(j, "spec"), spec));
        queue_next_done(&n);
}

/* Issue 7 item 11: show JOB pages through a job's runs in plan order. */
TEST(job_runs_in_pages)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("pages.db");
        int64_t job = submit_specs(db, 25, 25, "m"), after = 0, last = -1, seen = 0;
        bool more = true;

        submit_specs(db, 5, 5, "m"); /* another job's runs in between must not show */
        while (more) {
                _cleanup_json_ json_t *page = NULL;

                ASSERT_OK(queue_job_runs_json(db, job, after, 10, &page, &last, &more));
                for (size_t i = 0; i < json_array_size(page); i++) {
                        json_t *r = json_array_get(page, i);

                        check_shape("run_summary", r);
                        ASSERT_EQ(json_integer_value(json_object_get(r, "seq")), seen + 1);
                        ASSERT_EQ(json_integer_value(json_object_get(r, "job")), job);
                        seen++;
                }
                ASSERT_EQ(last, seen);
                ASSERT_TRUE(json_array_size(page) == 10 || !more);
                after = last;
        }
        ASSERT_EQ(seen, 25);
        ASSERT_OK(queue_job_run_seq(db, job, 3, &last));
        ASSERT_EQ(last, 3);
        ASSERT_ERR(queue_job_run_seq(db, job, 27, &last), ENOENT); /* a run of the other job */
}

/*
 * Migration 003 on a database that 001 and 002 made, holding runs: every
 * run keeps its snapshot (now stored once per distinct text), each finished
 * attempt gets its result, and a run whose retry was cancelled shows the
 * result it had before.
 */
TEST(migration_006_moves_snapshots_and_results)
{
        _cleanup_free_ char *path = xasprintf("%s/v2.db", test_tmpdir());
        _cleanup_free_ char *err = NULL;
        _cleanup_json_ json_t *j1 = NULL, *j2 = NULL, *j3 = NULL, *j4 = NULL, *jj = NULL;
        struct mx_db *db = NULL;
        sqlite3 *raw = NULL;
        static const char spec_a[] = "{\"argv\":[\"a\"],\"env\":[\"X=1\"],\"profile\":{\"name\":\"vllm\"}}";
        static const char spec_b[] = "{\"argv\":[\"b\"],\"env\":[]}";
        _cleanup_free_ char *fill = xasprintf(
                "PRAGMA user_version = 2;"
                "INSERT INTO jobs (id, uid, gid, submitted_at, matrix_path, matrix_digest, strategy, "
                "levels, "
                "request) VALUES (1, 1000, 1000, 0, 'm', 'd', 'default', '[]', '{}');"
                "INSERT INTO runs (id, job_id, seq, config_key, config_hash, config, reasons, spec, "
                "queued_at, "
                "state, result, attempts, expect_fail, cancelled_at) VALUES "
                "(1, 1, 1, 'k1', 'h', '{}', '[]', '%s', 0, 'done', 'pass', 1, NULL, NULL),"
                "(2, 1, 2, 'k2', 'h', '{}', '[]', '%s', 0, 'done', 'cancelled', 1, NULL, 5),"
                "(3, 1, 3, 'k3', 'h', '{}', '[]', '%s', 0, 'done', 'xfail', 1, 'known', NULL),"
                "(4, 1, 4, 'k4', 'h', '{}', '[]', '%s', 0, 'queued', NULL, 0, NULL, NULL);"
                "INSERT INTO attempts (id, run_id, n, started_at, finished_at, outcome, tag) VALUES "
                "(1, 1, 1, 1, 2, 'completed', 't1'), (2, 2, 1, 1, 2, 'completed', 't2'), "
                "(3, 3, 1, 1, 2, 'crashed', 't3');"
                "INSERT INTO levels (attempt_id, level, verdict, started_at, finished_at) VALUES "
                "(1, 'L1', 'pass', 1, 2), (2, 'L1', 'fail', 1, 2), (3, 'L1', 'fail', 1, 2);",
                spec_a, spec_a, spec_b, spec_a);

        /* A version-2 database with runs in it, as an mxmatrixd before migrations 003-006 left it. */
        ASSERT_EQ(sqlite3_open(path, &raw), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, mx_migrations[0].data, NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, mx_migrations[1].data, NULL, NULL, NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, fill, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(raw);

        ASSERT_OK(db_open(path, &db, &err));
        ASSERT_TRUE(db->version >= 3);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM snapshots"), 2);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM runs WHERE snapshot IS NULL"), 0);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'spec'"), 0);
        j1 = run_json(db, 1, true);
        j4 = run_json(db, 4, true);
        ASSERT_STREQ(
                json_string_value(json_array_get(json_object_get(json_object_get(j1, "spec"), "argv"), 0)),
                "a");
        ASSERT_STREQ(json_string_value(json_object_get(
                             json_object_get(json_object_get(j4, "spec"), "profile"), "name")),
                     "vllm");
        ASSERT_STREQ(json_string_value(json_object_get(j1, "result")), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(
                             json_array_get(json_object_get(j1, "attempt_history"), 0), "result")),
                     "pass");
        /* Its retry was cancelled: it shows attempt 1's fail, with attempt 1's level. */
        j2 = run_json(db, 2, false);
        ASSERT_STREQ(json_string_value(json_object_get(j2, "result")), "fail");
        ASSERT_EQ(json_integer_value(json_object_get(j2, "result_attempt")), 1);
        ASSERT_STREQ(verdict_of(json_object_get(j2, "levels"), 0), "fail");
        j3 = run_json(db, 3, true);
        ASSERT_STREQ(json_string_value(json_object_get(j3, "result")), "xfail");
        ASSERT_STREQ(
                json_string_value(json_array_get(json_object_get(json_object_get(j3, "spec"), "argv"), 0)),
                "b");
        check_counts_match_runs(db);
        ASSERT_OK(queue_job_json(db, 1, &jj));
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(jj, "counts"), "fail")), 1);
        ASSERT_NULL(json_object_get(json_object_get(jj, "counts"), "cancelled"));
        /* The queue goes on: the queued run gets its snapshot, a new submit shares the stored one. */
        {
                struct queue_next n = {};

                ASSERT_OK(queue_pick_next(db, &n));
                ASSERT_EQ(n.run, 4);
                ASSERT_STREQ(json_string_value(json_array_get(json_object_get(n.spec, "env"), 0)), "X=1");
                queue_next_done(&n);
        }
        db_close(db);
}

/* Migration 008: stored plan reasons named after levels are renamed; attempts gain their command. */
TEST(migration_008_renames_plan_reasons)
{
        _cleanup_free_ char *path = xasprintf("%s/v7.db", test_tmpdir());
        _cleanup_free_ char *err = NULL;
        _cleanup_json_ json_t *j1 = NULL, *j2 = NULL;
        struct mx_db *db = NULL;
        sqlite3 *raw = NULL;
        static const char fill[] =
                "DROP INDEX runs_config_key; "                                              /* 012 */
                "DROP TABLE bisect_runs; DROP TABLE bisect_steps; DROP TABLE bisections; " /* 010 */
                "DROP TABLE confirmations; ALTER TABLE attempts DROP COLUMN confirm_of; "
                "ALTER TABLE runs DROP COLUMN confirming; "
                "ALTER TABLE attempts DROP COLUMN command; ALTER TABLE runs DROP COLUMN pass; "
                "ALTER TABLE attempts DROP COLUMN pass; PRAGMA user_version = 7;"
                "INSERT INTO jobs (id, uid, gid, submitted_at, matrix_path, matrix_digest, strategy, levels, "
                "request) VALUES (1, 1000, 1000, 0, 'm', 'd', 'default', '[]', '{}');"
                "INSERT INTO runs (id, job_id, seq, config_key, config_hash, config, reasons, queued_at, state) "
                "VALUES (1, 1, 1, 'k1', 'h', '{}', '[\"baseline\",\"L1-off\",\"L5-prior:P1\"]', 0, 'queued'),"
                "(2, 1, 2, 'k2', 'h', '{}', '[\"L1-on:stack(P1)\",\"L5:cutlass\",\"L6:sinks=on\",\"cover\"]', "
                "0, 'queued');";

        /* A version-7 database with runs planned under the old names: today's, less migrations 008 to 012. */
        ASSERT_OK(db_open(path, &db, &err));
        db_close(db);
        ASSERT_EQ(sqlite3_open(path, &raw), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, fill, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(raw);

        ASSERT_OK(db_open(path, &db, &err));
        ASSERT_TRUE(db->version >= 8);
        j1 = run_json(db, 1, false);
        j2 = run_json(db, 2, false);
        _cleanup_free_ char *r1 = json_dumps(json_object_get(j1, "reasons"), JSON_COMPACT);
        _cleanup_free_ char *r2 = json_dumps(json_object_get(j2, "reasons"), JSON_COMPACT);
        ASSERT_STREQ(r1, "[\"baseline\",\"feature-off\",\"prior:P1\"]");
        ASSERT_STREQ(r2, "[\"feature-on:stack(P1)\",\"with:cutlass\",\"vary:sinks=on\",\"cover\"]");
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM pragma_table_info('attempts') WHERE name = 'command'"), 1);
        db_close(db);
}

/* A run requeued after an interrupted attempt is queued: criteria get none of that attempt's levels, as show. */
TEST(evidence_of_a_requeued_run_has_no_levels)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("evidence-requeued.db");
        int64_t job = submit(db, 1000, 0, 1), att;
        _cleanup_json_ json_t *ev = NULL, *shown = NULL;
        struct queue_next n = {};
        int num;

        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_OK(queue_attempt_start(db, n.run, "x", "boot", &att, &num));
        {
                struct queue_level l = {.level = "L1", .verdict = "pass", .started_at = 1, .finished_at = 2};
                struct queue_finish f = {.outcome = MX_OUTCOME_INTERRUPTED, .exit_status = -1, .requeue = true};

                ASSERT_OK(queue_level_record(db, att, &l));
                ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
        }
        shown = run_json(db, n.run, false);
        ASSERT_STREQ(json_string_value(json_object_get(shown, "state")), "queued");
        ASSERT_EQ(json_array_size(json_object_get(shown, "levels")), 0);
        ASSERT_OK(queue_job_evidence_json(db, job, &ev));
        ASSERT_EQ(json_array_size(ev), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(ev, 0), "state")), "queued");
        ASSERT_EQ(json_object_size(json_object_get(json_array_get(ev, 0), "levels")), 0);
        ASSERT_TRUE(json_is_null(json_object_get(json_array_get(ev, 0), "outcome")) ||
                    !json_object_get(json_array_get(ev, 0), "outcome"));
        queue_next_done(&n);
}

/*
 * Fail-fast (migration 011): every run's cheap pass (the job's L1 and L1.5
 * only) before any run's second pass; a run whose cheap pass failed is done
 * with that result and never makes the second; an interrupted cheap pass
 * stays a cheap pass; retry starts over with the cheap pass.
 */
TEST(fail_fast_passes)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("failfast.db");
        _cleanup_json_ json_t *levels = json_pack("[s,s,s]", "L1", "L1.5", "L4");
        _cleanup_json_ json_t *req = json_pack("{s:s}", "feature", "cutlass");
        struct queue_job_new job = {
                .uid = 1000, .gid = 1000, .user_name = "tester", .matrix_path = "/m.json",
                .matrix_digest = "0123456789abcdef", .feature = "cutlass", .strategy = "default",
                .levels = levels, .request = req,
        };
        struct queue_run_new runs[3];
        int64_t id = 0, order[8], requeued = 0;
        size_t n_order = 0;
        const char *want_levels[8];

        for (int i = 0; i < 3; i++)
                runs[i] = (struct queue_run_new){
                        .config_key = i == 0 ? "kernel=a" : i == 1 ? "kernel=b" : "kernel=c",
                        .config_hash = "0000000000000000",
                        .config = json_pack("{s:s}", "kernel", "x"),
                        .reasons = json_pack("[s]", "full"),
                        .spec = json_pack("{s:[s]}", "argv", "true"),
                        .fail_fast = true,
                };
        ASSERT_OK(queue_submit(db, &job, runs, 3, &id));
        for (int i = 0; i < 3; i++) {
                json_decref(runs[i].config);
                json_decref(runs[i].reasons);
                json_decref(runs[i].spec);
        }
        /* r1 cheap: pass; r2 cheap: interrupted, then fail; r3 cheap: pass; then r1, r3 with every level */
        for (;;) {
                struct queue_next n = {};
                struct queue_level l1 = {.level = "L1", .verdict = "pass", .started_at = 1, .finished_at = 2};
                struct queue_finish f = {.outcome = MX_OUTCOME_COMPLETED, .exit_status = -1};
                _cleanup_free_ char *tag = NULL, *lv = NULL;
                int64_t att;
                int num;

                if (queue_pick_next(db, &n) == -ENOENT)
                        break;
                ASSERT_TRUE(n_order < 8);
                lv = json_dumps(n.levels, JSON_COMPACT);
                want_levels[n_order] = n.cheap_pass ? "[\"L1\",\"L1.5\"]" : "[\"L1\",\"L1.5\",\"L4\"]";
                ASSERT_STREQ(lv, want_levels[n_order]);
                order[n_order++] = n.run;
                tag = xasprintf("ff-%zu", n_order);
                ASSERT_OK(queue_attempt_start(db, n.run, tag, "boot", &att, &num));
                if (n.run == 2 && n_order == 2) {
                        f.outcome = MX_OUTCOME_INTERRUPTED;
                        f.requeue = true;
                } else if (n.run == 2)
                        l1.verdict = "fail";
                ASSERT_OK(queue_level_record(db, att, &l1));
                ASSERT_OK(queue_attempt_finish(db, att, &f, NULL));
                queue_next_done(&n);
                check_counts_match_runs(db);
        }
        /* r1, r2 (interrupted), r2 again, r3: all cheap; then the second passes of r1 and r3 */
        ASSERT_EQ(n_order, 6u);
        ASSERT_EQ(order[0], 1);
        ASSERT_EQ(order[1], 2);
        ASSERT_EQ(order[2], 2);
        ASSERT_EQ(order[3], 3);
        ASSERT_EQ(order[4], 1);
        ASSERT_EQ(order[5], 3);
        ASSERT_STREQ(want_levels[2], "[\"L1\",\"L1.5\"]");
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM attempts WHERE pass = 1"), 4);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM runs WHERE state = 'done' AND result = 'pass' AND pass = 2"), 2);
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM runs WHERE id = 2 AND result = 'fail' AND pass = 1"), 1);
        /* the result of r1 is its second pass (attempt 2) */
        ASSERT_EQ(sql_int(db, "SELECT result_attempt FROM runs WHERE id = 1"), 2);
        /* show rN marks the cheap pass */
        {
                _cleanup_json_ json_t *r1 = run_json(db, 1, true);
                json_t *h = json_object_get(r1, "attempt_history");

                ASSERT_EQ(json_integer_value(json_object_get(json_array_get(h, 0), "pass")), 1);
                ASSERT_NULL(json_object_get(json_array_get(h, 1), "pass"));
        }
        /* retry: r2 back to its cheap pass */
        ASSERT_OK(queue_retry(db, 0, 2, false, 1000, 0, &requeued));
        ASSERT_EQ(sql_int(db, "SELECT pass FROM runs WHERE id = 2"), 1);
}

/* A fail-fast run cancelled after its cheap pass passed has no result from it: cancelled, not pass. */
TEST(fail_fast_cancel_after_cheap_pass)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("failfast-cancel.db");
        _cleanup_json_ json_t *levels = json_pack("[s,s]", "L1", "L4");
        _cleanup_json_ json_t *req = json_pack("{s:s}", "feature", "cutlass");
        struct queue_job_new job = {
                .uid = 1000, .gid = 1000, .user_name = "tester", .matrix_path = "/m.json",
                .matrix_digest = "0123456789abcdef", .feature = "cutlass", .strategy = "default",
                .levels = levels, .request = req,
        };
        struct queue_run_new run = {
                .config_key = "kernel=a", .config_hash = "0000000000000000",
                .config = json_pack("{s:s}", "kernel", "a"), .reasons = json_pack("[s]", "full"),
                .spec = json_pack("{s:[s]}", "argv", "true"), .fail_fast = true,
        };
        int64_t id = 0, cancelled = 0, running = 0;

        ASSERT_OK(queue_submit(db, &job, &run, 1, &id));
        json_decref(run.config);
        json_decref(run.reasons);
        json_decref(run.spec);
        run_with_level(db, "ffc-1", "pass", MX_OUTCOME_COMPLETED);
        ASSERT_EQ(sql_int(db, "SELECT pass FROM runs WHERE id = 1"), 2);
        ASSERT_OK(queue_cancel(db, id, 0, 1000, &cancelled, &running));
        ASSERT_EQ(sql_int(db, "SELECT count(*) FROM runs WHERE id = 1 AND state = 'done' AND result = 'cancelled' "
                              "AND result_attempt IS NULL"),
                  1);
}

/* Pick the next start, which must be of run; start it (a confirmation start when planned so). */
static int64_t start_picked(struct mx_db *db, int64_t run, bool confirmation, const char *tag)
{
        struct queue_next n = {};
        int64_t att = 0;
        int num;

        ASSERT_OK(queue_pick_next(db, &n));
        ASSERT_EQ(n.run, run);
        ASSERT_EQ(n.confirm_row != 0, confirmation);
        if (n.confirm_row)
                ASSERT_OK(queue_confirm_attempt_start(db, n.confirm_row, tag, "boot", &att, &num));
        else
                ASSERT_OK(queue_attempt_start(db, n.run, tag, "boot", &att, &num));
        queue_next_done(&n);
        return att;
}

static int interruptions(struct mx_db *db, int64_t attempt, bool machine)
{
        int n = -1;

        ASSERT_OK(machine ? queue_attempt_machine_failures(db, attempt, &n)
                          : queue_attempt_interruptions(db, attempt, &n));
        return n;
}

/*
 * Issue 15: the confirmation starts of a reference run from an earlier job
 * have the bound of the decision they serve; they neither use up that job's
 * requeue bound nor inherit what its own attempts used.
 */
TEST(confirmation_starts_have_their_own_requeue_bound)
{
        _cleanup_(db_closep) struct mx_db *db = open_db("confirm-bound.db");
        struct queue_finish intr = {.outcome = MX_OUTCOME_INTERRUPTED, .exit_status = -1, .requeue = true},
                            done = {.outcome = MX_OUTCOME_COMPLETED, .exit_status = 0};
        int64_t j1 = submit(db, 1000, 0, 1), j2, b, a, b_own, a_first, att;
        _cleanup_free_ char *q = NULL;
        _cleanup_json_ json_t *l5 = NULL;

        /* the earlier job's run B: interrupted once (its own bound: 1), then done */
        q = xasprintf("SELECT id FROM runs WHERE job_id = %" PRId64, j1);
        b = sql_int(db, q);
        att = start_picked(db, b, false, "b1");
        ASSERT_OK(queue_attempt_finish(db, att, &intr, NULL));
        b_own = start_picked(db, b, false, "b2");
        ASSERT_EQ(interruptions(db, b_own, false), 1);
        ASSERT_OK(queue_attempt_finish(db, b_own, &done, NULL));

        /* this job's run A: L5 undecided against B asks for confirmation starts */
        j2 = submit(db, 1000, 0, 1);
        free(q);
        q = xasprintf("SELECT id FROM runs WHERE job_id = %" PRId64, j2);
        a = sql_int(db, q);
        a_first = start_picked(db, a, false, "a1");
        l5 = json_pack("{s:{s:I}}", "confirm", "reference_run", (json_int_t)b);
        ASSERT_OK(queue_level_record(db, a_first, &(struct queue_level){.level = "L5", .verdict = "skipped",
                                                                         .metrics = l5}));
        ASSERT_OK(queue_attempt_finish(db, a_first, &done, NULL));
        att = start_picked(db, a, true, "a-c1");
        ASSERT_EQ(interruptions(db, att, false), 0);
        ASSERT_OK(queue_attempt_finish(db, att, &done, NULL));

        /* B's confirmation start for A: B's own interruption is not in its bound */
        att = start_picked(db, b, true, "b-c1");
        ASSERT_EQ(interruptions(db, att, false), 0);
        ASSERT_EQ(interruptions(db, att, true), 0);
        ASSERT_OK(queue_attempt_finish(db, att, &intr, NULL));
        /* planned again: the second try counts the first, and only that */
        att = start_picked(db, b, true, "b-c2");
        ASSERT_EQ(interruptions(db, att, false), 1);
        ASSERT_EQ(interruptions(db, att, true), 1);
        /* and B's own bound still counts only B's own attempts */
        ASSERT_EQ(interruptions(db, b_own, false), 1);
        ASSERT_EQ(interruptions(db, a_first, false), 0);
        ASSERT_OK(queue_attempt_finish(db, att, &done, NULL));
        /* the round is in: the next pick decides A's L5 */
        {
                struct queue_next n = {};

                ASSERT_OK(queue_pick_next(db, &n));
                ASSERT_EQ(n.decide, a_first);
                queue_next_done(&n);
        }
}
