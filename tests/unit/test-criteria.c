/* SPDX-License-Identifier: MIT */
/*
 * Success criteria and gates (matrix/analysis/criteria.c) on hand-made evidence: the
 * rows of seed 000's table with absolute and relative targets, measured and
 * declared baselines, missing numbers, invalid L4 results, the hard
 * constraints; and every kind of gate passing, failing and unknown.
 */
#include "criteria.h"
#include "matrix-helpers.h"

#define MATRIX                                                                                              \
        "{\"matrix\": 1, \"name\": \"t\", \"target\": {\"command\": [\"srv\", \"--port\", \"{port}\"]},\n"  \
        " \"axes\": [{\"name\": \"k\", \"values\": [{\"name\": \"m\"}, {\"name\": \"c\"}]},\n"              \
        "          {\"name\": \"s\", \"values\": [{\"name\": \"off\"}, {\"name\": \"on\"}]}],\n"            \
        " \"baseline\": {\"k\": \"m\", \"s\": \"off\"},\n"                                                  \
        " \"features\": [\n"                                                                                \
        "  {\"name\": \"fast\", \"priority\": 1, \"set\": {\"k\": \"c\"}, \"hypothesis\": \"h1\",\n"        \
        "   \"status\": \"in-progress\", \"criteria\": [\n"                                                 \
        "    {\"metric\": \"tg32_tps\", \"target\": \">= +10 %\", \"baseline\": 29},\n"                     \
        "    {\"metric\": \"tg32_tps\", \"target\": \">= 30\"},\n"                                          \
        "    {\"metric\": \"startup_s\", \"target\": \"<= 60\"}]},\n"                                       \
        "  {\"name\": \"code\", \"priority\": 2, \"set\": {}, \"hypothesis\": \"h2\",\n"                    \
        "   \"status\": \"not-started\", \"depends_on\": [\"fast\"], \"criteria\": [\n"                     \
        "    {\"metric\": \"tg32_tps\", \"target\": \">= +10 %\"},\n"                                       \
        "    {\"metric\": \"pp2048_tps\", \"target\": \">= -5 %\", \"baseline\": 4800}],\n"                 \
        "   \"gate\": [{\"kernels_verified\": true}, {\"metric\": \"ttft_p50_ms\", \"op\": \"<\", "         \
        "\"value\": 1000},\n"                                                                               \
        "            {\"level\": \"L2\"}]},\n"                                                              \
        "  {\"name\": \"spec\", \"priority\": 3, \"set\": {\"s\": \"on\"}, \"hypothesis\": \"h3\",\n"       \
        "   \"status\": \"not-started\", \"depends_on\": [\"code\"], \"criteria\": [\n"                     \
        "    {\"metric\": \"tg32_tps\", \"target\": \">= +50 %\"}],\n"                                      \
        "   \"gate\": [{\"of\": \"fast\", \"metric\": \"crashes\", \"op\": \"<=\", \"value\": 0},\n"        \
        "            {\"of\": \"code\", \"speedup_vs\": \"fast\", \"metric\": \"tg32_tps\", "               \
        "\"min_percent\": 30}]}\n"                                                                          \
        " ]}\n"

/* A run of a job's evidence (criteria.h's shape): its reasons comma-separated. */
static json_t *ev_run(int id, const char *reasons, const char *outcome)
{
        _cleanup_free_ char *copy = xstrdup(reasons);
        json_t *rs = json_array();

        for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
                json_array_append_new(rs, json_string(t));
        return json_pack("{s:i,s:o,s:s,s:s,s:{}}", "run", id, "reasons", rs, "state", "done", "outcome",
                         outcome, "levels");
}

static void ev_level(json_t *run, const char *level, const char *verdict, const char *message)
{
        json_object_set_new(json_object_get(run, "levels"), level,
                            json_pack("{s:s,s:s?}", "verdict", verdict, "message", message));
}

/* L4 as the level stores it (the engine's results, ready_s, the memory summary's peak in bytes); valid: 1,
 * 0, -1. */
static void ev_l4(json_t *run, double tg32, double ttft50, double mem_gb, double ready_s, int valid)
{
        json_t *l4 = json_pack("{s:s,s:{s:{s:f,s:f},s:{s:f,s:f}},s:f,s:I,s:s}", "verdict", "pass", "results",
                               "throughput", "tg32_tps", tg32, "pp2048_tps", 4900.0, "latency",
                               "ttft_p50_ms", ttft50, "ttft_p99_ms", ttft50 * 2, "ready_s", ready_s,
                               "memory_peak_bytes", (json_int_t)(mem_gb * 1e9), "memory_figure",
                               "gpu");

        if (valid >= 0)
                json_object_set_new(l4, "valid", json_boolean(valid));
        json_object_set_new(json_object_get(run, "levels"), "L4", l4);
}

static json_t *row(json_t *c, const char *list, size_t i)
{
        return json_array_get(json_object_get(c, list), i);
}

static const char *row_pass(json_t *c, const char *list, size_t i)
{
        return json_string_value(json_object_get(row(c, list, i), "pass"));
}

static double row_num(json_t *c, const char *list, size_t i, const char *key)
{
        return json_number_value(json_object_get(row(c, list, i), key));
}

static bool near(double a, double b)
{
        return a > b - 1e-6 && a < b + 1e-6;
}

/* The baseline off and the feature on, both measured and within every bound. */
static json_t *good_job(void)
{
        json_t *runs = json_array(), *r1 = ev_run(1, "baseline,feature-off", "completed"),
               *r2 = ev_run(2, "feature-on", "completed");

        ev_l4(r1, 29.0, 100, 60, 80, 1);
        ev_level(r1, "L3", "pass", NULL);
        ev_l4(r2, 33.0, 102, 61.5, 55, 1);
        ev_level(r2, "L1.5", "pass", NULL);
        ev_level(r2, "L3", "pass", NULL);
        json_array_append_new(runs, r1);
        json_array_append_new(runs, r2);
        return runs;
}

static json_t *run_of(json_t *runs, int id)
{
        json_t *r;
        size_t i;

        json_array_foreach (runs, i, r)
                if (json_integer_value(json_object_get(r, "run")) == id)
                        return r;
        return NULL;
}

static json_t *l4_of(json_t *runs, int id)
{
        return json_object_get(json_object_get(run_of(runs, id), "levels"), "L4");
}

static void set_result(json_t *runs, int id, const char *group, const char *metric, double v)
{
        json_object_set_new(json_object_get(json_object_get(l4_of(runs, id), "results"), group), metric,
                            json_real(v));
}

TEST(criteria_pass_relative_and_absolute)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        _cleanup_(json_decrefp) json_t *runs = good_job();
        _cleanup_(json_decrefp) json_t *c = criteria_job_json(m, 0, runs);

        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(c, "compared"), "basis")),
                     "baseline");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(c, "compared"), "on")), 2);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(c, "compared"), "off")), 1);
        /* tg32 >= +10 % against the measured 29 (not the declared one): 31.9; actual 33. */
        ASSERT_STREQ(row_pass(c, "rows", 0), "pass");
        ASSERT_TRUE(near(row_num(c, "rows", 0, "baseline"), 29.0));
        ASSERT_STREQ(json_string_value(json_object_get(row(c, "rows", 0), "baseline_from")), "r1 L4");
        ASSERT_TRUE(near(row_num(c, "rows", 0, "target_value"), 31.9));
        ASSERT_TRUE(near(row_num(c, "rows", 0, "actual"), 33.0));
        ASSERT_TRUE(near(row_num(c, "rows", 0, "change_pct"), 100.0 * 4 / 29));
        ASSERT_STREQ(json_string_value(json_object_get(row(c, "rows", 0), "target")), ">= +10 %");
        ASSERT_STREQ(row_pass(c, "rows", 1), "pass");
        ASSERT_TRUE(near(row_num(c, "rows", 2, "actual"), 55)); /* startup_s is L4's ready_s */
        /* Seed 000's hard constraints: TTFT +2 %, memory +1.5 GB, no crash with L3 run. */
        ASSERT_EQ(json_array_size(json_object_get(c, "constraints")), 3);
        ASSERT_STREQ(row_pass(c, "constraints", 0), "pass");
        ASSERT_TRUE(near(row_num(c, "constraints", 0, "target_value"), 103));
        ASSERT_STREQ(row_pass(c, "constraints", 1), "pass");
        ASSERT_TRUE(near(row_num(c, "constraints", 1, "target_value"), 62));
        ASSERT_STREQ(row_pass(c, "constraints", 2), "pass");
        ASSERT_TRUE(near(row_num(c, "constraints", 2, "actual"), 0));
        ASSERT_EQ(json_array_size(json_object_get(c, "missing")), 0);
}

TEST(criteria_fail)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        _cleanup_(json_decrefp) json_t *runs = good_job();
        json_t *c;

        /* 31.5 tok/s is +8.6 %: the relative target fails, the absolute one (>= 30) still passes. */
        set_result(runs, 2, "throughput", "tg32_tps", 31.5);
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "rows", 0), "fail");
        ASSERT_STREQ(row_pass(c, "rows", 1), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "fail");
        json_decref(c);

        /* TTFT +4 %: the hard constraint (at most +3 %) fails the feature. */
        set_result(runs, 2, "throughput", "tg32_tps", 33);
        set_result(runs, 2, "latency", "ttft_p50_ms", 104);
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "rows", 0), "pass");
        ASSERT_STREQ(row_pass(c, "constraints", 0), "fail");
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "fail");
        json_decref(c);

        /* Memory +2.5 GB, as the engine's resource figure when it gives one (over the memory summary). */
        set_result(runs, 2, "latency", "ttft_p50_ms", 100);
        json_object_set_new(json_object_get(l4_of(runs, 2), "results"), "resource",
                            json_pack("{s:f}", "gpu_memory_peak_gb", 62.5));
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "constraints", 0), "pass");
        ASSERT_STREQ(row_pass(c, "constraints", 1), "fail");
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "fail");
        json_decref(c);
}

TEST(criteria_crashes)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        _cleanup_(json_decrefp) json_t *runs = good_job();
        json_t *c, *r3 = ev_run(3, "vary:s=on", "crashed");
        int64_t n;

        json_array_append_new(runs, r3);
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "constraints", 2), "fail");
        ASSERT_TRUE(near(row_num(c, "constraints", 2, "actual"), 1));
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "fail");
        json_decref(c);

        /* A run marked known-incompatible is expected to crash: not counted. */
        json_object_set_new(r3, "expect_fail", json_string("graphs + Eagle3"));
        ASSERT_OK(criteria_crashes(runs, true, &n, NULL));
        ASSERT_EQ(n, 0);
        /*
         * L3 losing the server (requests that got no answer) is a crash, once per attempt however many
         * requests it cut; a wrong text, an HTTP error (the server answered) and a timeout are not.
         */
        json_object_set_new(
                json_object_get(json_object_get(run_of(runs, 2), "levels"), "L3"), "failures",
                json_pack("[{s:s,s:s},{s:s},{s:s,s:s}]", "check", "http", "detail",
                          "the request failed: Couldn't connect to server", "check", "coherence", "check", "http",
                          "detail", "the request failed: Connection reset by peer"));
        ASSERT_OK(criteria_crashes(runs, true, &n, NULL));
        ASSERT_EQ(n, 1);
        /* The baseline crashing is not the feature's crash. */
        ASSERT_OK(criteria_crashes(runs, false, &n, NULL));
        ASSERT_EQ(n, 0);
}

/* Issue 15: the crashed outcome and L3's in-flight request were two crashes; an HTTP 400 was one. */
TEST(criteria_crash_once_per_attempt)
{
        _cleanup_(json_decrefp) json_t *runs = good_job();
        json_t *l3 = json_object_get(json_object_get(run_of(runs, 2), "levels"), "L3");
        int64_t n = -1;

        /* The server died under L3: the attempt is crashed and L3's request in flight failed with it. */
        json_object_set_new(run_of(runs, 2), "outcome", json_string("crashed"));
        json_object_set_new(l3, "failures",
                            json_pack("[{s:s,s:s}]", "check", "http", "detail",
                                      "the request failed: Server returned nothing (no headers, no data)"));
        ASSERT_OK(criteria_crashes(runs, true, &n, NULL));
        ASSERT_EQ(n, 1);
        /* A server that refuses a request with HTTP 400 is alive: no crash. */
        json_object_set_new(run_of(runs, 2), "outcome", json_string("completed"));
        json_object_set_new(l3, "failures",
                            json_pack("[{s:s,s:s},{s:s,s:s}]", "check", "http", "detail",
                                      "HTTP 400: {\"error\": \"max_tokens is too large\"}", "check", "http",
                                      "detail", "the request failed: Timeout was reached"));
        ASSERT_OK(criteria_crashes(runs, true, &n, NULL));
        ASSERT_EQ(n, 0);
}

/* Memory in GB (10^9 bytes), the seeds' unit and L5's. Issue 15: a GPU peak against a host PSS read +54.6 GB, fail. Figures of different kinds are not compared. */
TEST(criteria_memory_like_with_like)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        _cleanup_(json_decrefp) json_t *runs = good_job();
        json_t *off = l4_of(runs, 1), *on = l4_of(runs, 2), *c, *r;

        /* The baseline's L4 saw no GPU figure (host PSS, 8 GB); the feature's saw the GPU's 62.6 GB. */
        json_object_set_new(off, "memory_figure", json_string("pss"));
        json_object_set_new(off, "memory_peak_bytes", json_integer((json_int_t)8e9));
        json_object_set_new(on, "memory_peak_bytes", json_integer((json_int_t)62.6e9));
        c = criteria_job_json(m, 0, runs);
        r = row(c, "constraints", 1);
        ASSERT_STREQ(json_string_value(json_object_get(r, "metric")), "memory_gb");
        ASSERT_STREQ(json_string_value(json_object_get(r, "pass")), "missing");
        ASSERT_CONTAINS(json_string_value(json_object_get(r, "why")), "r2's memory is gpu, r1's pss");
        ASSERT_CONTAINS(json_string_value(json_object_get(r, "why")), "not compared");
        json_decref(c);

        /* The feature's run has a complete host PSS too: that is the figure both share (+1.5 GB, pass). */
        json_object_set_new(on, "memory_kinds",
                            json_pack("{s:{s:I,s:b}}", "pss", "peak", (json_int_t)9.5e9, "complete",
                                      true));
        c = criteria_job_json(m, 0, runs);
        r = row(c, "constraints", 1);
        ASSERT_STREQ(json_string_value(json_object_get(r, "pass")), "pass");
        ASSERT_TRUE(near(json_number_value(json_object_get(r, "actual")), 9.5));
        ASSERT_TRUE(near(json_number_value(json_object_get(r, "baseline")), 8));
        ASSERT_CONTAINS(json_string_value(json_object_get(r, "actual_from")), "(pss)");
        json_decref(c);

        /* The same kind on both sides but a real rise of 3 GB: fail. */
        json_object_set_new(on, "memory_kinds",
                            json_pack("{s:{s:I,s:b}}", "pss", "peak", (json_int_t)11e9, "complete", true));
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "constraints", 1), "fail");
        json_decref(c);
}

TEST(criteria_missing_numbers)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        _cleanup_(json_decrefp) json_t *runs = good_job();
        _cleanup_free_ char *why = NULL;
        json_t *c, *mis;
        double v;

        /* The feature's run has no L4: incomplete, naming what is missing; startup comes from L1 then. */
        json_object_del(json_object_get(run_of(runs, 2), "levels"), "L4");
        json_object_set_new(json_object_get(run_of(runs, 2), "levels"), "L1",
                            json_pack("{s:s,s:f}", "verdict", "pass", "ready_s", 42.0));
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "incomplete");
        ASSERT_STREQ(row_pass(c, "rows", 0), "missing");
        ASSERT_CONTAINS(json_string_value(json_object_get(row(c, "rows", 0), "why")),
                        "actual: r2 has no L4 (benchmark) level");
        ASSERT_STREQ(row_pass(c, "rows", 2), "pass");
        ASSERT_TRUE(near(row_num(c, "rows", 2, "actual"), 42));
        mis = json_object_get(c, "missing");
        ASSERT_CONTAINS(json_string_value(json_array_get(mis, 0)), "tg32_tps: actual: r2 has no L4");
        json_decref(c);

        /* No L3 anywhere: "no crash in stress" cannot be judged. */
        json_decref(runs);
        runs = good_job();
        json_object_del(json_object_get(run_of(runs, 2), "levels"), "L3");
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "constraints", 2), "missing");
        ASSERT_CONTAINS(json_string_value(json_object_get(row(c, "constraints", 2), "why")),
                        "no run with the feature on ran L3");
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "incomplete");
        json_decref(c);

        /* The baseline's L4 missing: the declared baseline (29) stands in for tg32; TTFT has none. */
        json_decref(runs);
        runs = good_job();
        json_object_del(json_object_get(run_of(runs, 1), "levels"), "L4");
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "rows", 0), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(row(c, "rows", 0), "baseline_from")), "declared");
        ASSERT_STREQ(row_pass(c, "constraints", 0), "missing");
        ASSERT_CONTAINS(json_string_value(json_object_get(row(c, "constraints", 0), "why")),
                        "baseline: r1 has no L4");
        json_decref(c);

        /* A metric L4 did not report. */
        json_object_del(json_object_get(json_object_get(l4_of(runs, 2), "results"), "throughput"),
                        "tg32_tps");
        ASSERT_ERR(criteria_run_metric(run_of(runs, 2), "tg32_tps", &v, NULL, &why), ENODATA);
        ASSERT_STREQ(why, "r2's L4 has no tg32_tps");
}

TEST(criteria_invalid_l4)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        _cleanup_(json_decrefp) json_t *runs = good_job();
        _cleanup_free_ char *why = NULL, *src = NULL;
        json_t *c;
        double v;

        /* L4 marked invalid (L1.5 was INVALID): its numbers, however good, never pass. */
        set_result(runs, 2, "throughput", "tg32_tps", 100);
        json_object_set_new(l4_of(runs, 2), "valid", json_false());
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "rows", 0), "invalid");
        ASSERT_STREQ(row_pass(c, "rows", 1), "invalid");
        ASSERT_TRUE(near(row_num(c, "rows", 0, "actual"), 100)); /* shown, not counted */
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "incomplete");
        ASSERT_CONTAINS(json_string_value(json_object_get(row(c, "rows", 0), "why")),
                        "r2's L4 is marked invalid");
        json_decref(c);

        /* The L1.5 verdict alone makes them invalid too (a wrong kernel path ran). */
        json_object_set_new(l4_of(runs, 2), "valid", json_true());
        ev_level(run_of(runs, 2), "L1.5", "fail", "the wrong kernel path ran");
        ASSERT_ERR(criteria_run_metric(run_of(runs, 2), "tg32_tps", &v, &src, &why), EINVAL);
        ASSERT_CONTAINS(why, "r2's numbers are invalid: L1.5 fail (the wrong kernel path ran)");
        ASSERT_TRUE(near(v, 100));
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(row_pass(c, "rows", 0), "invalid");
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "incomplete");
        json_decref(c);
}

TEST(criteria_stack_and_switchless_feature)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        _cleanup_(json_decrefp) json_t *runs = good_job(), *one = json_array();
        json_t *c, *r4 = ev_run(4, "feature-off:stack(P1)", "completed"),
                   *r5 = ev_run(5, "feature-on:stack(P1)", "completed"), *r;

        /* With a merged stack the feature is judged as it would be merged: r5 against r4. */
        ev_l4(r4, 40, 100, 60, 50, 1);
        ev_l4(r5, 41, 100, 60, 50, 1);
        json_array_append_new(runs, r4);
        json_array_append_new(runs, r5);
        c = criteria_job_json(m, 0, runs);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(c, "compared"), "basis")),
                     "merged stack");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(c, "compared"), "on")), 5);
        ASSERT_STREQ(row_pass(c, "rows", 0), "fail"); /* +2.5 % on the stack */
        json_decref(c);

        /* A feature that sets no axis is one run on and off: relative rows need a declared baseline. */
        r = ev_run(1, "baseline,feature-off,feature-on", "completed");
        ev_l4(r, 30, 100, 60, 50, 1);
        ev_level(r, "L3", "pass", NULL);
        json_array_append_new(one, r);
        c = criteria_job_json(m, 1, one);
        ASSERT_STREQ(row_pass(c, "rows", 0), "missing");
        ASSERT_CONTAINS(json_string_value(json_object_get(row(c, "rows", 0), "why")),
                        "the feature sets no axis: on and off are one run (r1)");
        /* pp2048 >= -5 % of the declared 4800: 4900 passes. */
        ASSERT_STREQ(row_pass(c, "rows", 1), "pass");
        ASSERT_TRUE(near(row_num(c, "rows", 1, "target_value"), 4560));
        ASSERT_STREQ(json_string_value(json_object_get(c, "overall")), "incomplete");
        json_decref(c);
}

/* ---- gates ---- */

/* jobs[i] for the three features, each an array of {"job", "runs"}; tests append. */
struct jobs {
        json_t *j[3];
};

static void jobs_init(struct jobs *js)
{
        for (size_t i = 0; i < 3; i++)
                js->j[i] = json_array();
}

static void jobs_done(struct jobs *js)
{
        for (size_t i = 0; i < 3; i++)
                json_decref(js->j[i]);
}

static void jobs_add(struct jobs *js, size_t feature, int job, json_t *runs)
{
        json_array_append_new(js->j[feature], json_pack("{s:i,s:o}", "job", job, "runs", runs));
}

/* Feature fi's gate k (over its first "of"): verdict and why. */
static json_t *gate_of(json_t *res, size_t fi, size_t k)
{
        return json_array_get(json_object_get(json_array_get(json_object_get(res, "features"), fi), "gates"),
                              k);
}

static const char *feature_verdict(json_t *res, size_t fi)
{
        return json_string_value(
                json_object_get(json_array_get(json_object_get(res, "features"), fi), "verdict"));
}

static const char *gate_verdict(json_t *res, size_t fi, size_t k)
{
        return json_string_value(json_object_get(gate_of(res, fi, k), "verdict"));
}

static const char *gate_why(json_t *res, size_t fi, size_t k)
{
        return json_string_value(json_object_get(gate_of(res, fi, k), "why"));
}

TEST(gates_nothing_measured)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        struct jobs js;
        json_t *res;

        jobs_init(&js);
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(feature_verdict(res, 0), "open"); /* no gate */
        ASSERT_TRUE(json_is_true(
                json_object_get(json_array_get(json_object_get(res, "features"), 0), "may_start")));
        ASSERT_STREQ(feature_verdict(res, 1), "unknown");
        for (size_t k = 0; k < 3; k++) {
                ASSERT_STREQ(gate_verdict(res, 1, k), "unknown");
                ASSERT_STREQ(gate_why(res, 1, k), "no run measured yet");
        }
        ASSERT_STREQ(json_string_value(json_object_get(gate_of(res, 1, 0), "of")), "fast");
        ASSERT_STREQ(json_string_value(json_object_get(gate_of(res, 1, 1), "condition")),
                     "ttft_p50_ms < 1000");
        ASSERT_STREQ(feature_verdict(res, 2), "unknown");
        json_decref(res);
        jobs_done(&js);
}

/* A job of "fast" in which everything P2's gates ask for holds. */
static json_t *fast_job(double ttft, bool profiler)
{
        json_t *runs = good_job();
        json_t *l15 = json_object_get(json_object_get(run_of(runs, 2), "levels"), "L1.5");

        json_object_set_new(l15, "kernel_evidence", json_boolean(profiler));
        ev_level(run_of(runs, 2), "L2", "pass", NULL);
        set_result(runs, 2, "latency", "ttft_p50_ms", ttft);
        return runs;
}

TEST(gates_kernels_metric_level)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        struct jobs js;
        json_t *res, *runs;

        jobs_init(&js);
        jobs_add(&js, 0, 3, fast_job(500, true));
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(feature_verdict(res, 1), "open");
        ASSERT_STREQ(gate_verdict(res, 1, 0), "pass");
        ASSERT_STREQ(gate_verdict(res, 1, 1), "pass");
        ASSERT_TRUE(near(json_number_value(json_object_get(gate_of(res, 1, 1), "actual")), 500));
        ASSERT_EQ(json_integer_value(json_object_get(gate_of(res, 1, 1), "run")), 2);
        ASSERT_EQ(json_integer_value(json_object_get(gate_of(res, 1, 1), "job")), 3);
        ASSERT_STREQ(gate_verdict(res, 1, 2), "pass");
        json_decref(res);
        jobs_done(&js);

        /* Newest job first: TTFT 1200 ms fails "< 1000"; L1.5 passed on the log alone: not verified. */
        jobs_init(&js);
        jobs_add(&js, 0, 9, fast_job(1200, false));
        jobs_add(&js, 0, 3, fast_job(500, true));
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(feature_verdict(res, 1), "held");
        ASSERT_TRUE(json_is_false(
                json_object_get(json_array_get(json_object_get(res, "features"), 1), "may_start")));
        ASSERT_STREQ(gate_verdict(res, 1, 0), "fail");
        ASSERT_CONTAINS(gate_why(res, 1, 0), "L1.5 passed without a profiler report");
        ASSERT_STREQ(gate_verdict(res, 1, 1), "fail");
        ASSERT_STREQ(gate_why(res, 1, 1), "ttft_p50_ms is 1200, the gate wants < 1000");
        ASSERT_EQ(json_integer_value(json_object_get(gate_of(res, 1, 1), "job")), 9);
        json_decref(res);
        jobs_done(&js);

        /* L1.5 failed (Marlin ran), L2 failed; the newest job's invalid L4 makes the older valid one count.
         */
        jobs_init(&js);
        runs = fast_job(500, true);
        ev_level(run_of(runs, 2), "L1.5", "fail", "the wrong kernel path ran");
        ev_level(run_of(runs, 2), "L2", "fail", "output is not deterministic");
        jobs_add(&js, 0, 9, runs);
        jobs_add(&js, 0, 3, fast_job(700, true));
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(gate_verdict(res, 1, 0), "fail");
        ASSERT_STREQ(gate_why(res, 1, 0), "L1.5 fail: the wrong kernel path ran");
        ASSERT_EQ(json_integer_value(json_object_get(gate_of(res, 1, 0), "run")), 2);
        ASSERT_STREQ(gate_verdict(res, 1, 1), "pass");
        ASSERT_EQ(json_integer_value(json_object_get(gate_of(res, 1, 1), "job")), 3);
        ASSERT_TRUE(near(json_number_value(json_object_get(gate_of(res, 1, 1), "actual")), 700));
        ASSERT_STREQ(gate_verdict(res, 1, 2), "fail");
        ASSERT_STREQ(gate_why(res, 1, 2), "L2 fail: output is not deterministic");
        json_decref(res);
        jobs_done(&js);

        /* kernels_verified judges the compared run: an L6 run failing its own L1.5 does not hold it back; L2
         * does. */
        jobs_init(&js);
        runs = fast_job(500, true);
        json_array_append_new(runs, ev_run(3, "vary:s=on", "completed"));
        ev_level(run_of(runs, 3), "L1.5", "fail", "s=on's log line is missing");
        ev_level(run_of(runs, 3), "L2", "fail", "NaN in the logprobs");
        jobs_add(&js, 0, 3, runs);
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(gate_verdict(res, 1, 0), "pass");
        ASSERT_STREQ(gate_verdict(res, 1, 2), "fail");
        ASSERT_EQ(json_integer_value(json_object_get(gate_of(res, 1, 2), "run")), 3);
        json_decref(res);
        jobs_done(&js);

        /* L2 not run, only an invalid TTFT: unknown, saying why. */
        jobs_init(&js);
        runs = fast_job(500, true);
        json_object_del(json_object_get(run_of(runs, 2), "levels"), "L2");
        json_object_set_new(l4_of(runs, 2), "valid", json_false());
        jobs_add(&js, 0, 4, runs);
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(feature_verdict(res, 1), "unknown");
        ASSERT_STREQ(gate_verdict(res, 1, 1), "unknown");
        ASSERT_CONTAINS(gate_why(res, 1, 1),
                        "no valid ttft_p50_ms measured yet (newest: job 4: r2's L4 is marked");
        ASSERT_STREQ(gate_verdict(res, 1, 2), "unknown");
        ASSERT_STREQ(gate_why(res, 1, 2), "no run with the feature on has recorded L2 yet");
        json_decref(res);
        jobs_done(&js);
}

/* A job of "code" (sets no axis): one run, tg32 as given. */
static json_t *code_job(double tg32)
{
        json_t *runs = json_array(), *r = ev_run(11, "baseline,feature-off,feature-on", "completed");

        ev_l4(r, tg32, 100, 60, 50, 1);
        json_array_append_new(runs, r);
        return runs;
}

TEST(gates_crashes_and_speedup)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(MATRIX);
        struct jobs js;
        json_t *res, *runs;

        /* fast: tg32 33 on r2, no crash; code: 44 tok/s, +33 % against fast. */
        jobs_init(&js);
        jobs_add(&js, 0, 3, fast_job(500, true));
        jobs_add(&js, 1, 5, code_job(44));
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(gate_verdict(res, 2, 0), "pass");
        ASSERT_TRUE(near(json_number_value(json_object_get(gate_of(res, 2, 0), "actual")), 0));
        ASSERT_STREQ(gate_verdict(res, 2, 1), "pass");
        ASSERT_TRUE(near(json_number_value(json_object_get(gate_of(res, 2, 1), "actual")), 100.0 * 11 / 33));
        ASSERT_CONTAINS(gate_why(res, 2, 1), "+33.3 % against P1's r2 (job 3)");
        ASSERT_STREQ(feature_verdict(res, 2), "open");
        json_decref(res);
        jobs_done(&js);

        /* A crash in fast's job, and only +15 %: held on both. */
        jobs_init(&js);
        runs = fast_job(500, true);
        json_array_append_new(runs, ev_run(3, "vary:s=on", "crashed"));
        jobs_add(&js, 0, 3, runs);
        jobs_add(&js, 1, 5, code_job(38));
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(gate_verdict(res, 2, 0), "fail");
        ASSERT_STREQ(gate_why(res, 2, 0), "crashes is 1, the gate wants <= 0");
        ASSERT_STREQ(gate_verdict(res, 2, 1), "fail");
        ASSERT_CONTAINS(gate_why(res, 2, 1), "below the gate's minimum");
        ASSERT_STREQ(feature_verdict(res, 2), "held");
        json_decref(res);
        jobs_done(&js);

        /* Nothing measured of the feature compared against: unknown. */
        jobs_init(&js);
        jobs_add(&js, 1, 5, code_job(44));
        res = criteria_gates_json(m, js.j);
        ASSERT_STREQ(gate_verdict(res, 2, 1), "unknown");
        ASSERT_CONTAINS(gate_why(res, 2, 1), "P1 (fast): no run measured yet");
        ASSERT_STREQ(gate_verdict(res, 2, 0), "unknown");
        json_decref(res);
        jobs_done(&js);
}
