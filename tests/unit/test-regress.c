/* SPDX-License-Identifier: MIT */
/*
 * L5's comparison (matrix/regress.c) on synthetic L4 results: Student's t
 * and Welch's test against values computed independently, noise (the same
 * distribution) never called a regression, a real 10 % drop called one, a
 * drop beyond the threshold drowned in noise not called one, TTFT p99 +5 %
 * and memory +3 GiB called regressions, and the rule that decided named.
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
        _cleanup_json_ json_t *refs = json_pack("[O]", ref);

        return mx_regress_compare(cur, refs, o);
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

TEST(noise_is_never_a_regression_and_the_test_keeps_its_level)
{
        struct mx_regress_opts o;
        unsigned regressions = 0, significant = 0, trials = 400;

        mx_regress_opts_defaults(&o);
        for (unsigned t = 0; t < trials; t++) {
                /* the same distribution on both sides: 1 % spread on tg and on TTFT */
                _cleanup_json_ json_t *cur = doc(60, 0.6, 400, 4, 70), *ref = doc(60, 0.6, 400, 4, 70);
                _cleanup_json_ json_t *r = compare(cur, ref, &o);

                regressions += json_is_true(json_object_get(r, "regression"));
                significant += json_is_true(json_object_get(check(r, "tg32"), "significant"));
        }
        ASSERT_EQ(regressions, 0);
        /* a one-sided test at 0.05 on noise: about 5 % significant, never beyond the 5 % threshold */
        if (significant < trials / 100 || significant > trials * 12 / 100)
                test_fail(__FILE__, __LINE__, "%u of %u noise comparisons significant at 0.05", significant,
                          trials);
}

TEST(a_real_ten_percent_drop_is_a_regression_named_by_its_rule)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = doc(54, 0.6, 400, 8, 70), *ref = doc(60, 0.6, 400, 8, 70), *r = NULL;
        json_t *c;
        const char *rule;

        mx_regress_opts_defaults(&o);
        r = compare(cur, ref, &o);
        ASSERT_TRUE(json_is_true(json_object_get(r, "regression")));
        c = check(r, "tg32");
        ASSERT_TRUE(json_is_true(json_object_get(c, "regression")));
        ASSERT_NEAR(json_number_value(json_object_get(c, "delta_pct")), -10, 1.0);
        ASSERT_TRUE(json_number_value(json_object_get(c, "p")) < 1e-6);
        rule = json_string_value(json_object_get(r, "rule"));
        if (!startswith(rule, "welch p=") || !strstr(rule, " < 0.05 and -") || !strstr(rule, " % < -5 %"))
                test_fail(__FILE__, __LINE__, "rule: %s", rule);
        ASSERT_FALSE(json_is_true(json_object_get(check(r, "pp2048"), "regression")));
        /* the other rule sees it too */
        o.rule = MX_REGRESS_INTERVALS;
        json_decref(r);
        r = compare(cur, ref, &o);
        ASSERT_TRUE(json_is_true(json_object_get(check(r, "tg32"), "regression")));
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(r, "rule")), "do not overlap"));
}

/* The tg32 values mean + a fixed spread of about 17 % (sample std 10.4), so that the means are exact. */
static json_t *doc_spread(double mean)
{
        static const double spread[] = {-15, 15, -10, 10, -5, 5, -12, 12, -8, 8};
        json_t *d = doc(60, 0.6, 400, 8, 70),
               *v = json_object_get(json_object_get(json_array_get(json_object_get(d, "tests"), 0), "tps"),
                                    "values");

        json_array_clear(v);
        for (size_t i = 0; i < ELEMENTSOF(spread); i++)
                json_array_append_new(v, json_real(mean + spread[i]));
        return d;
}

TEST(a_drop_beyond_the_threshold_in_huge_noise_is_not_significant)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = doc_spread(58.2), *ref = doc_spread(60), *r = NULL;
        json_t *c;

        mx_regress_opts_defaults(&o);
        o.perf_max_drop_pct = 2; /* a 3 % drop is beyond it */
        r = compare(cur, ref, &o);
        c = check(r, "tg32");
        if (!json_is_true(json_object_get(c, "beyond")))
                test_fail(__FILE__, __LINE__, "the drop is %.2f %%, not beyond -2 %%",
                          json_number_value(json_object_get(c, "delta_pct")));
        ASSERT_FALSE(json_is_true(json_object_get(c, "significant")));
        ASSERT_FALSE(json_is_true(json_object_get(r, "regression")));
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(c, "rule")), ">= 0.05"));
        ASSERT_STREQ(json_string_value(json_object_get(r, "rule")),
                     "no check is both significant and beyond its threshold");
}

TEST(ttft_p99_five_percent_higher_is_a_regression)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = doc(60, 0.6, 420, 1, 70), *ref = doc(60, 0.6, 400, 1, 70), *r = NULL;
        json_t *c;

        mx_regress_opts_defaults(&o);
        r = compare(cur, ref, &o);
        c = check(r, "ttft_p99_ms");
        ASSERT_NEAR(json_number_value(json_object_get(c, "delta_pct")), 5, 1.5);
        ASSERT_TRUE(json_is_true(json_object_get(c, "regression")));
        ASSERT_TRUE(json_is_true(json_object_get(r, "regression")));
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(r, "rule")), "> +3 %"));
        /* +1 %: within the threshold */
        json_decref(cur);
        json_decref(r);
        cur = doc(60, 0.6, 404, 1, 70);
        r = compare(cur, ref, &o);
        ASSERT_FALSE(json_is_true(json_object_get(check(r, "ttft_p99_ms"), "regression")));
}

TEST(memory_three_gib_higher_is_a_regression)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = doc(60, 0.6, 400, 8, 73), *ref = doc(60, 0.6, 400, 8, 70), *r = NULL;
        json_t *c;

        mx_regress_opts_defaults(&o);
        r = compare(cur, ref, &o);
        c = check(r, "memory_peak");
        ASSERT_NEAR(json_number_value(json_object_get(c, "delta_gib")), 3, 1e-6);
        ASSERT_TRUE(json_is_true(json_object_get(c, "regression")));
        ASSERT_NOT_NULL(strstr(json_string_value(json_object_get(r, "rule")), "peak +3.00 GiB > +2 GiB"));
        json_decref(cur);
        json_decref(r);
        cur = doc(60, 0.6, 400, 8, 71);
        r = compare(cur, ref, &o);
        ASSERT_FALSE(json_is_true(json_object_get(r, "regression")));
}

TEST(references_pool_and_unknown_rows_are_not_compared)
{
        struct mx_regress_opts o;
        _cleanup_json_ json_t *cur = doc(54, 0.6, 400, 8, 70);
        _cleanup_json_ json_t *refs =
                json_pack("[o,o,{s:[]}]", doc(60, 0.6, 400, 8, 70), doc(60, 0.6, 400, 8, 70), "tests");
        _cleanup_json_ json_t *r = NULL, *none = json_array();

        mx_regress_opts_defaults(&o);
        r = mx_regress_compare(cur, refs, &o);
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(check(r, "tg32"), "n"), 1)), 20);
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
