/* SPDX-License-Identifier: MIT */
/*
 * L5's comparison of two sets of L4 results (seed 001 Level 5: "performance
 * within 5 % of previous measurements"; seed 000: TTFT regression <= 3 %,
 * memory increase <= 2 GB), noise-aware: a regression must be statistically
 * significant AND beyond its threshold, so that two runs of the same server
 * that differ by noise are never called a regression, and a real change
 * smaller than the threshold is not either.
 *
 * The samples are the runs' per-run values that L4 stores (the engine's
 * rows' tps.values: one value per run at concurrency 1, per batch above;
 * serving ttft_ms.values at depth 0: one per request). References pool the
 * values of every reference run.
 *
 * Rules (settable):
 *   welch      Welch's unequal-variance t-test, one-sided in the direction of
 *              the regression, at alpha (Welch 1947; the p-value from
 *              Student's t distribution through the regularised incomplete
 *              beta function)
 *   intervals  the two 95 % confidence intervals of the means (t-based) do
 *              not overlap
 * Memory has one peak per run: the threshold alone decides it (against the
 * largest reference peak), and the report says so.
 *
 * Pure functions, no I/O: L5 (daemon/levels/l5-regress.c), the reports and
 * the tests use them.
 */
#pragma once

#include "util.h"

#include <jansson.h>

enum mx_regress_rule {
        MX_REGRESS_WELCH,
        MX_REGRESS_INTERVALS,
        _MX_REGRESS_RULE_MAX,
        _MX_REGRESS_RULE_INVALID = -EINVAL,
};
const char *mx_regress_rule_to_string(enum mx_regress_rule r);
enum mx_regress_rule mx_regress_rule_from_string(const char *s);

struct mx_regress_opts {
        double perf_max_drop_pct;     /* a t/s row this much slower (percent) is beyond the threshold */
        double ttft_p99_max_rise_pct; /* TTFT p99 this much higher (percent) */
        double memory_max_rise_gib;   /* memory peak this much higher (GiB, 2^30 bytes) */
        double alpha;                 /* significance level of the test */
        enum mx_regress_rule rule;
};

/* Seed 000/001's thresholds: 5 %, 3 %, 2 GiB; Welch at alpha 0.05. */
void mx_regress_opts_defaults(struct mx_regress_opts *o);

/*
 * Welch's t-test of "mean of a < mean of b" (one-sided): the p-value, or NAN
 * with fewer than 2 finite values on a side. Equal constant samples give 1,
 * different constant ones 0 (or 1 in the other direction).
 */
double mx_welch_p_less(const double *a, size_t na, const double *b, size_t nb);
/* Student's t CDF P(T <= t) with df degrees of freedom (df > 0). */
double mx_student_t_cdf(double t, double df);
/* The two-sided 95 % t quantile for df degrees of freedom (12.706 at df 1, 1.96 as df grows). */
double mx_student_t_q975(double df);

/*
 * Compare cur (one L4 metrics document) with refs (an array of L4 metrics
 * documents, pooled): a new object
 *   {"regression": bool, "checks": [{"metric", "current", "reference",
 *    "delta_pct" | "delta_gib", "n": [cur, ref], "p", "significant",
 *    "beyond", "regression", "rule"}], "regressions": ["..."],
 *    "compared": N, "rule": "<the rule that decided, or why none did>"}
 * Checks: every llama-benchy row (pp, tg, ctx_pp) present in both by test
 * name, TTFT p99 over the depth-0 requests, the memory peak (same figure
 * only).
 */
json_t *mx_regress_compare(json_t *cur, json_t *refs, const struct mx_regress_opts *o);
