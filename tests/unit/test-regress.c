/* SPDX-License-Identifier: MIT */
/*
 * L5's comparison (matrix/analysis/regress.c) on synthetic L4 results: Student's t
 * and Welch's test against values computed independently; the decision on
 * per-start summaries (same / different / unknown) and its A/A level where
 * the per-request test had none; rows paired by their fields (the pp row per
 * tg defect); TTFT p99 judged as a tail; memory in the seed's GB.
 */
#include "test.h"

#include "plan.h"
#include "regress.h"

#include <math.h>

#define ASSERT_NEAR(a, b, tol)                                                                              \
        do {                                                                                                \
                double _a = (a), _b = (b);                                                                  \
                if (!(fabs(_a - _b) <= (tol)))                                                              \
                        test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g != %.9g", #a, #b, _a, _b);             \
        } while (0)

TEST(student_t_and_welch_match_reference_values)
{
        const double a[] = {1, 2, 3, 4, 5}, b[] = {2, 4, 6, 8, 10}, c[] = {3, 3, 3}, d[] = {4, 4, 4};

        /* df 1 is Cauchy: P(T <= 1) = 3/4; df 2 has a closed form: 1/2 + t / (2 sqrt(2 + t^2)) */
        ASSERT_NEAR(mx_student_t_cdf(1, 1), 0.75, 1e-12);
        ASSERT_NEAR(mx_student_t_cdf(0, 7), 0.5, 1e-12);
        ASSERT_NEAR(mx_student_t_cdf(1.5, 2), 0.5 + 1.5 / (2 * sqrt(2 + 1.5 * 1.5)), 1e-12);
        ASSERT_NEAR(mx_student_t_cdf(-1.5, 2), 0.5 - 1.5 / (2 * sqrt(2 + 1.5 * 1.5)), 1e-12);
        /* printed tables: t(0.975; 1) = 12.706, t(0.975; 10) = 2.228, t(0.975; 5) = 2.571 */
        ASSERT_NEAR(mx_student_t_q975(1), 12.7062, 1e-3);
        ASSERT_NEAR(mx_student_t_q975(10), 2.2281, 1e-3);
        ASSERT_NEAR(mx_student_t_q975(5), 2.5706, 1e-3);
        /*
         * Welch: t = -3 / sqrt(2.5), df = 6.25 / 1.0625; P(T <= t) by Simpson's rule on the t density
         * (independent of the incomplete beta): 0.0537656 (scipy's ttest_ind(..., equal_var=False,
         * alternative='less') gives the same).
         */
        ASSERT_NEAR(mx_welch_p_less(a, 5, b, 5), 0.0537656, 1e-6);
        ASSERT_NEAR(mx_welch_p_less(b, 5, a, 5), 1 - 0.0537656, 1e-6);
        ASSERT_TRUE(isnan(mx_welch_p_less(a, 1, b, 5)));
        ASSERT_NEAR(mx_welch_p_less(c, 3, d, 3), 0, 0);
        ASSERT_NEAR(mx_welch_p_less(d, 3, c, 3), 1, 0);
        ASSERT_NEAR(mx_welch_p_less(c, 3, c, 3), 1, 0);
}

/* A reproducible normal sample (xorshift64* and Box-Muller). */
static uint64_t rng = 88172645463325252ULL;

static double uniform(void)
{
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return ((double)((rng * 2685821657736338717ULL) >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(double mean, double sd)
{
        return mean + sd * sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

static json_t *values(double mean, double sd, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, json_real(normal(mean, sd)));
        return a;
}

/* An L4 document as L4 stores it, with the parts L5 reads: rows, depth-0 TTFT samples, memory. */
static json_t *doc(double tg_mean, double tg_sd, double ttft_mean, double ttft_sd, double mem_gib)
{
        return json_pack("{s:[{s:s,s:s,s:{s:o}},{s:s,s:s,s:{s:o}}],s:[{s:i,s:{s:o}}],s:{s:s,s:I}}", "tests",
                         "test", "tg32", "kind", "tg", "tps", "values", values(tg_mean, tg_sd, 10), "test",
                         "pp2048", "kind", "pp", "tps", "values", values(4800, 10, 10), "serving", "depth",
                         0, "ttft_ms", "values", values(ttft_mean, ttft_sd, 10), "memory", "figure", "gpu",
                         "peak", (json_int_t)(mem_gib * (1 << 30)));
}

static json_t *compare(json_t *cur, json_t *ref, const struct mx_regress_opts *o)
{
        _cleanup_json_ json_t *curs = json_pack("[O]", cur), *refs = json_pack("[O]", ref);

        return mx_regress_compare(curs, refs, o);
}

static json_t *check(json_t *report, const char *metric)
{
        json_t *c;
        size_t i;

        json_array_foreach (json_object_get(report, "checks"), i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "metric")), metric))
                        return c;
        test_fail(__FILE__, __LINE__, "no check of %s", metric);
}

TEST(noise_within_one_start_each_side_is_never_a_regression)
{
        struct mx_regress_opts o;
        unsigned regressions = 0, trials = 200;

        mx_regress_opts_defaults(&o);
        for (unsigned t = 0; t < trials; t++) {
                /* the same distribution on both sides: 1 % spread on tg and on TTFT */
                _cleanup_json_ json_t *cur = doc(60, 0.6, 400, 4, 70), *ref = doc(60, 0.6, 400, 4, 70);
                _cleanup_json_ json_t *r = compare(cur, ref, &o);

                regressions += json_is_true(json_object_get(r, "regression"));
        }
        ASSERT_EQ(regressions, 0);
}

TEST(one_start_each_side_says_what_it_rests_on)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = doc(54, 0.6, 400, 8, 70), *ref = doc(60, 0.6, 400, 8, 70), *r = NULL;
        json_t *c;

        mx_regress_opts_defaults(&o);
        r = compare(cur, ref, &o);
        c = check(r, "tg32");
        ASSERT_STREQ(json_string_value(json_object_get(c, "decision")), "regression");
        ASSERT_STREQ(json_string_value(json_object_get(c, "family")), "primary");
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(c, "starts"), 0)), 1);
        ASSERT_NEAR(json_number_value(json_object_get(c, "delta_pct")), -10, 1.0);
        if (!strstr(json_string_value(json_object_get(c, "rule")), "1 start each side: threshold and within-start"))
                test_fail(__FILE__, __LINE__, "rule: %s", json_string_value(json_object_get(c, "rule")));
        ASSERT_FALSE(json_is_true(json_object_get(check(r, "pp2048"), "regression")));
        /* with confirmation possible the same evidence is only suspicious: unknown, needs more starts */
        o.can_confirm = true;
        json_decref(r);
        r = compare(cur, ref, &o);
        ASSERT_STREQ(json_string_value(json_object_get(r, "decision")), "unknown");
        ASSERT_TRUE(json_integer_value(json_object_get(r, "more_starts")) >= 1);
}

/*
 * The pairing defect: L4 writes a pp row per tg (the pp2048 requests of the tg32 test and of the tg128
 * test differ); identical current and reference runs paired "pp2048" with the reference's first pp2048
 * row and gave "regression: pp2048 4505 t/s vs 4806 t/s (-6.3 %; welch p=5e-21)".
 */
static json_t *pp_per_tg_doc(void)
{
        json_t *tests = json_array();
        static const long tgs[] = {32, 128};
        static const double pp_tps[] = {4806, 4505};

        for (size_t t = 0; t < 2; t++) {
                json_t *v = json_array(), *g = json_array();

                for (int i = 0; i < 10; i++) {
                        json_array_append_new(v, json_real(pp_tps[t] * (1 + 0.001 * (i % 3 - 1))));
                        json_array_append_new(g, json_real(29 * (1 + 0.001 * (i % 3 - 1))));
                }
                json_array_append_new(tests, json_pack("{s:s,s:s,s:i,s:I,s:i,s:i,s:{s:o}}", "test", "pp2048",
                                                       "kind", "pp", "pp", 2048, "tg", (json_int_t)tgs[t],
                                                       "depth", 0, "concurrency", 1, "tps", "values", v));
                json_array_append_new(tests, json_pack("{s:s,s:s,s:i,s:I,s:i,s:i,s:{s:o}}", "test",
                                                       t ? "tg128" : "tg32", "kind", "tg", "pp", 2048, "tg",
                                                       (json_int_t)tgs[t], "depth", 0, "concurrency", 1, "tps",
                                                       "values", g));
        }
        return json_pack("{s:o}", "tests", tests);
}

TEST(rows_pair_by_kind_pp_tg_depth_and_concurrency_not_by_name)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = pp_per_tg_doc(), *ref = pp_per_tg_doc(), *r = NULL;
        json_t *c;
        size_t i, pp_rows = 0;

        mx_regress_opts_defaults(&o);
        r = compare(cur, ref, &o);
        ASSERT_STREQ(json_string_value(json_object_get(r, "decision")), "no regression");
        json_array_foreach (json_object_get(r, "checks"), i, c) {
                if (!streq_ptr(json_string_value(json_object_get(c, "metric")), "pp2048"))
                        continue;
                pp_rows++;
                ASSERT_NEAR(json_number_value(json_object_get(c, "delta_pct")), 0, 1e-9);
                ASSERT_NEAR(json_number_value(json_object_get(c, "current")),
                            json_number_value(json_object_get(c, "reference")), 1e-9);
        }
        ASSERT_EQ(pp_rows, 2);
        /* one pp row per (pp, depth) on both sides (the benchmark document's other shape) pairs too */
        json_array_remove(json_object_get(cur, "tests"), 2);
        json_array_remove(json_object_get(ref, "tests"), 2);
        json_decref(r);
        r = compare(cur, ref, &o);
        ASSERT_STREQ(json_string_value(json_object_get(r, "decision")), "no regression");
}

/* A/A with spread between starts: the old test of the requests of one start called most rows significant. */
TEST(decision_on_starts_keeps_its_level_where_requests_did_not)
{
        unsigned trials = 400, regressions = 0, old_significant = 0, unknown = 0;

        for (unsigned t = 0; t < trials; t++) {
                double a[4], b[4], ra[40], rb[40];
                struct mx_regress_input in = {.cur = a, .ref = b, .ncur = 4, .nref = 4, .threshold = 5,
                                              .relative = true, .worse = -1, .p_within = NAN};
                struct mx_regress_decision d;

                /* 2.5 % between starts, 0.2 % within */
                for (int s = 0; s < 4; s++) {
                        double fa = normal(1, 0.025), fb = normal(1, 0.025);

                        a[s] = b[s] = 0;
                        for (int k = 0; k < 10; k++) {
                                ra[s * 10 + k] = 60 * fa * normal(1, 0.002);
                                rb[s * 10 + k] = 60 * fb * normal(1, 0.002);
                                a[s] += ra[s * 10 + k] / 10;
                                b[s] += rb[s * 10 + k] / 10;
                        }
                }
                old_significant += mx_welch_p_less(ra, 10, rb, 10) < 0.05;
                mx_regress_decide(&in, 0.05, 0.2, &d);
                regressions += d.call == MX_REGRESS_DIFFERENT;
                unknown += d.call == MX_REGRESS_UNKNOWN;
        }
        if (old_significant < trials / 4)
                test_fail(__FILE__, __LINE__, "the within-start test was significant in only %u of %u",
                          old_significant, trials);
        if (regressions > trials * 5 / 100)
                test_fail(__FILE__, __LINE__, "%u of %u A/A decisions called a regression", regressions, trials);
        /* most A/A comparisons of 4 starts a side are cleared, not left undecided */
        if (unknown > trials / 2)
                test_fail(__FILE__, __LINE__, "%u of %u A/A decisions unknown", unknown, trials);
}

TEST(decision_same_different_unknown)
{
        const double ref[] = {60, 61.5, 59, 60.5, 59.5, 60}, drop[] = {54, 55, 53.5, 54.5, 53, 54.2},
                     same[] = {60.2, 59.1, 61, 60, 59.8, 60.4}, edge[] = {57, 57.3, 56.5, 57.2, 56.8, 57};
        struct mx_regress_input in = {.ref = ref, .nref = 6, .ncur = 6, .threshold = 5, .relative = true,
                                      .worse = -1, .p_within = NAN};
        struct mx_regress_decision d;

        in.cur = drop;
        mx_regress_decide(&in, 0.05, 0.2, &d);
        ASSERT_EQ(d.call, MX_REGRESS_DIFFERENT);
        ASSERT_NEAR(d.delta, 10, 1);
        ASSERT_NOT_NULL(strstr(d.rule, "6 vs 6 starts"));
        in.cur = same;
        mx_regress_decide(&in, 0.05, 0.2, &d);
        ASSERT_EQ(d.call, MX_REGRESS_SAME);
        /* 5 % down against a 5 % threshold: neither, and how many more starts would tell */
        in.cur = edge;
        mx_regress_decide(&in, 0.05, 0.2, &d);
        ASSERT_EQ(d.call, MX_REGRESS_UNKNOWN);
        ASSERT_TRUE(d.more >= 1);
        /* one start each side, confirmation possible: a drop beyond the threshold is unknown */
        in.ncur = in.nref = 1;
        in.cur = drop;
        in.can_confirm = true;
        mx_regress_decide(&in, 0.05, 0.2, &d);
        ASSERT_EQ(d.call, MX_REGRESS_UNKNOWN);
        ASSERT_NOT_NULL(strstr(d.rule, "1 start each side"));
}

/*
 * The quantile defect: TTFT p99 was judged by a test of means. A distribution shifted by 1 % (means
 * significantly apart) with one slow request making the p99 of 20 (nearly the maximum) 10 % higher was a
 * regression; the bootstrap of the p99 difference sees that one request decides it.
 */
TEST(ttft_p99_is_judged_as_a_tail_with_its_sample_size)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = doc(60, 0.6, 404, 0.5, 70), *ref = doc(60, 0.6, 400, 0.5, 70), *r = NULL;
        json_t *vals = json_object_get(json_object_get(json_array_get(json_object_get(cur, "serving"), 0),
                                                       "ttft_ms"),
                                       "values"),
               *c;
        double lo;

        json_array_set_new(vals, 0, json_real(445));
        mx_regress_opts_defaults(&o);
        r = compare(cur, ref, &o);
        c = check(r, "ttft_p99_ms");
        ASSERT_TRUE(json_number_value(json_object_get(c, "delta_pct")) > 3);
        ASSERT_FALSE(json_is_true(json_object_get(c, "regression")));
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(c, "tail")), "p99 of 10 requests"));
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(c, "rule")), "bootstrap"));
        /* every request 6 % slower: the p99 is beyond doubt higher */
        json_decref(cur);
        json_decref(r);
        cur = doc(60, 0.6, 424, 0.5, 70);
        r = compare(cur, ref, &o);
        ASSERT_TRUE(json_is_true(json_object_get(check(r, "ttft_p99_ms"), "regression")));
        {
                const double a[] = {1, 2, 3, 4, 5}, b[] = {1, 2, 3, 4, 5};
                ASSERT_TRUE(mx_quantile_rise_p(a, 5, b, 5, 99, 3, &lo) > 0.5);
        }
}

TEST(memory_is_compared_in_gb_as_the_seed_writes)
{
        struct mx_regress_opts o;
        /* 70 GiB + 1.1 GB: 1.02 GiB, beyond the seed's 1 GB */
        _cleanup_json_ json_t *cur = doc(60, 0.6, 400, 8, 70 + 1.1e9 / (1 << 30)),
                              *ref = doc(60, 0.6, 400, 8, 70), *r = NULL;
        json_t *c;

        mx_regress_opts_defaults(&o);
        ASSERT_NEAR(o.memory_max_rise_gb, 1, 0);
        r = compare(cur, ref, &o);
        c = check(r, "memory_peak_gb");
        ASSERT_NEAR(json_number_value(json_object_get(c, "delta_gb")), 1.1, 1e-3);
        ASSERT_TRUE(json_is_true(json_object_get(c, "regression")));
        json_decref(cur);
        json_decref(r);
        cur = doc(60, 0.6, 400, 8, 70 + 0.9e9 / (1 << 30));
        r = compare(cur, ref, &o);
        ASSERT_FALSE(json_is_true(json_object_get(check(r, "memory_peak_gb"), "regression")));
}

TEST(starts_pool_and_unknown_rows_are_not_compared)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = json_pack("[o]", doc(54, 0.6, 400, 8, 70));
        _cleanup_json_ json_t *refs =
                json_pack("[o,o,{s:[]}]", doc(60, 0.6, 400, 8, 70), doc(60, 0.6, 400, 8, 70), "tests");
        _cleanup_json_ json_t *r = NULL, *none = json_array();
        json_t *c;

        mx_regress_opts_defaults(&o);
        r = mx_regress_compare(cur, refs, &o);
        c = check(r, "tg32");
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(c, "n"), 1)), 20);
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(c, "starts"), 1)), 2);
        json_decref(r);
        r = mx_regress_compare(cur, none, &o);
        ASSERT_EQ(json_integer_value(json_object_get(r, "compared")), 0);
        ASSERT_FALSE(json_is_true(json_object_get(r, "regression")));
}

/* L5 needs the baseline's numbers before the other runs': every strategy's plan puts the baseline first. */
TEST(plans_run_the_baseline_first)
{
        _cleanup_free_ char *path = test_source_path("matrix/demo-sim.json");
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_free_ char *err = NULL;
        static const char *const features[] = {"cutlass", "P3", "tile-64x128", "spec-decode"};
        static const enum mx_plan_strategy strategies[] = {MX_PLAN_DEFAULT, MX_PLAN_PAIRWISE, MX_PLAN_FULL};

        ASSERT_OK(mx_matrix_load_file(path, &m, &err));
        for (size_t f = 0; f < ELEMENTSOF(features); f++)
                for (size_t s = 0; s < ELEMENTSOF(strategies); s++) {
                        struct mx_plan_request req = {.feature = features[f], .strategy = strategies[s]};
                        _cleanup_(mx_plan_freep) struct mx_plan *p = NULL;
                        _cleanup_free_ char *e = NULL;

                        ASSERT_OK(mx_plan_build(m, &req, &p, &e));
                        ASSERT_TRUE(p->n_runs > 1);
                        if (!strv_contains(p->runs[0].reasons, "baseline"))
                                test_fail(__FILE__, __LINE__, "%s (%s): the first run is %s", features[f],
                                          mx_plan_strategy_to_string(strategies[s]), p->runs[0].key);
                        for (size_t i = 1; i < p->n_runs; i++)
                                ASSERT_FALSE(strv_contains(p->runs[i].reasons, "baseline"));
                }
}
