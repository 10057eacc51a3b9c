/* SPDX-License-Identifier: MIT */
/* The progress line of follow and status (client/progress.c): counts, elapsed and the ETA. */
#include "progress.h"
#include "test.h"

#define S 1000000LL /* µs */

static json_t *job(const char *counts, const char *timing)
{
        json_error_t e;
        json_t *j = json_pack("{s:o,s:o?}", "counts", json_loads(counts, 0, &e), "progress",
                              timing ? json_loads(timing, 0, &e) : NULL);

        ASSERT_TRUE(j);
        return j;
}

TEST(eta_from_mean_of_finished_runs)
{
        /* 4 of 10 done in 400 s of attempts: 100 s each; the run in flight started 30 s ago. */
        _cleanup_json_ json_t *j = job("{\"total\":10,\"done\":4,\"running\":1,\"queued\":5,\"pass\":3,"
                                       "\"fail\":1}",
                                       "{\"started_at\":1000000000,\"timed_runs\":4,\"timed_us\":400000000,"
                                       "\"running_since\":1370000000}");
        struct progress p;
        _cleanup_free_ char *s = NULL;

        progress_from_job(j, 1000 * S + 400 * S, &p);
        ASSERT_EQ(p.total, 10);
        ASSERT_EQ(p.done, 4);
        ASSERT_EQ(p.elapsed_us, 400 * S);
        /* 6 runs left at 100 s, less the 30 s the current one has run */
        ASSERT_EQ(p.eta_us, 570 * S);
        s = progress_format(&p);
        ASSERT_STREQ(s, "4/10 runs: 3 pass, 1 fail, 6m40s elapsed, ETA 9m30s");
}

TEST(eta_run_in_flight_past_the_mean)
{
        /* The current run has taken 250 s, more than the 100 s mean: it counts as used up, not negative. */
        _cleanup_json_ json_t *j = job("{\"total\":3,\"done\":1,\"running\":1,\"queued\":1,\"pass\":1}",
                                       "{\"started_at\":0,\"timed_runs\":1,\"timed_us\":100000000,"
                                       "\"running_since\":100000000}");
        struct progress p;

        progress_from_job(j, 350 * S, &p);
        ASSERT_EQ(p.eta_us, 100 * S);
}

TEST(unknown_until_a_run_finished)
{
        _cleanup_json_ json_t *j = job("{\"total\":2,\"done\":0,\"running\":1,\"queued\":1}",
                                       "{\"started_at\":5000000,\"timed_runs\":0,\"timed_us\":0,"
                                       "\"running_since\":5000000}");
        _cleanup_json_ json_t *q = job("{\"total\":2,\"done\":0,\"queued\":2}", NULL);
        struct progress p;
        _cleanup_free_ char *s = NULL, *t = NULL;

        progress_from_job(j, 7 * S, &p);
        ASSERT_EQ(p.eta_us, -1);
        s = progress_format(&p);
        ASSERT_STREQ(s, "0/2 runs, 2.0s elapsed, ETA unknown (no run finished yet)");
        /* Nothing started: no elapsed time at all */
        progress_from_job(q, 7 * S, &p);
        ASSERT_EQ(p.elapsed_us, -1);
        t = progress_format(&p);
        ASSERT_STREQ(t, "0/2 runs, ETA unknown (no run finished yet)");
}

TEST(done_job_says_each_result_in_its_own_word)
{
        /* An xfail (known incompatible, failed) is never counted as a pass: each result in its own word. */
        _cleanup_json_ json_t *j = job("{\"total\":6,\"done\":6,\"pass\":2,\"xfail\":1,\"xpass\":1,"
                                       "\"crashed\":1,\"cancelled\":1}",
                                       "{\"started_at\":0,\"timed_runs\":5,\"timed_us\":50000000,"
                                       "\"running_since\":null}");
        struct progress p;
        _cleanup_free_ char *s = NULL;

        progress_from_job(j, 65 * S, &p);
        ASSERT_EQ(p.eta_us, 0);
        s = progress_format(&p);
        ASSERT_STREQ(s, "6/6 runs: 2 pass, 1 xfail, 1 xpass, 1 crashed, 1 cancelled, 1m05s elapsed");
}

TEST(no_eta_while_paused)
{
        _cleanup_json_ json_t *j = job("{\"total\":10,\"done\":4,\"queued\":6,\"pass\":4}",
                                       "{\"started_at\":1000000000,\"timed_runs\":4,\"timed_us\":400000000,"
                                       "\"paused\":true}");
        struct progress p;
        _cleanup_free_ char *s = NULL;

        progress_from_job(j, 1000 * S + 400 * S, &p);
        ASSERT_TRUE(p.paused);
        s = progress_format(&p);
        ASSERT_STREQ(s, "4/10 runs: 4 pass, 6m40s elapsed, paused: no ETA (mxmatrix resume)");
}

TEST(eta_from_stored_runs_before_the_first_ends)
{
        /* Nothing of this job finished; earlier attempts took 50 s each: 3 runs left, one in flight 20 s. */
        _cleanup_json_ json_t *j = job("{\"total\":3,\"done\":0,\"running\":1,\"queued\":2}",
                                       "{\"started_at\":1000000000,\"timed_runs\":0,\"timed_us\":0,"
                                       "\"running_since\":1000000000,\"stored_run_us\":50000000}");
        struct progress p;
        _cleanup_free_ char *s = NULL;

        progress_from_job(j, 1000 * S + 20 * S, &p);
        ASSERT_EQ(p.eta_us, 130 * S);
        s = progress_format(&p);
        ASSERT_CONTAINS(s, "ETA 2m10s (from stored runs)");
}
