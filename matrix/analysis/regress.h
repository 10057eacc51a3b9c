/* SPDX-License-Identifier: MIT */
/*
 * L5's comparison of L4 results (seed 001 Level 5: "performance within 5 %
 * of previous measurements"; seed 000's Level 5: memory within 1 GB of the
 * baseline, its hard constraints: TTFT regression <= 3 %).
 *
 * The unit is the server start. Each L4 metrics document is one start (one
 * attempt); a check summarises it by one value per start and row (the
 * start's mean t/s of the row, its TTFT p99 over the depth-0 requests, its
 * memory peak), and the spread that decides is the spread between starts:
 * the reference's earlier starts (the baseline's history at the same source
 * SHAs) and confirmation starts of both sides. The requests of one start are
 * never treated as independent samples of the configuration; their test
 * (Welch or 95 % intervals on the per-request values, a bootstrap interval
 * for a quantile) only makes a comparison suspicious.
 *
 * The decision (mx_regress_decide(), Pinpoint's same / different / unknown)
 * tests the difference against the threshold, not against zero:
 *   regression     the worsening is beyond the threshold at alpha (one-sided
 *                  t-test of the per-start summaries against the threshold)
 *   no regression  the worsening is within the threshold at alpha, or with
 *                  one start each side nothing is suspicious (threshold only)
 *   unknown        neither: more starts would decide ("needs N more starts")
 * With one start each side and no confirmation possible the old rule is all
 * there is and the verdict says so ("1 start each side: threshold and
 * within-start test only").
 *
 * Multiplicity: the primary row (the feature's success criterion, tg32 at
 * depth 0 by default) is decided at alpha; every other check (the other rows,
 * TTFT p99, memory) at Holm's step-down levels over their number.
 * Rows are paired by (kind, pp, tg, depth, concurrency), never by name alone.
 *
 * Pure functions, no I/O: L5 (daemon/run/levels/l5-regress.c), bench/bench-l5.c
 * and the tests use them.
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
        double memory_max_rise_gb;    /* memory peak this much higher (GB, 10^9 bytes, as the seed writes) */
        double alpha;                 /* significance level of the primary check */
        double alpha_same;            /* of clearing a check: "no regression" needs p(within) below it */
        enum mx_regress_rule rule;    /* the within-start test */
        bool can_confirm;             /* more starts may still come: an undecided check is unknown */
        const char *primary;          /* the primary row ("tg32", "pp2048", "tg32@d4096"); NULL: none */
};

/*
 * Seed 001's 5 %, seed 000's +3 % TTFT and 1 GB; Welch; a regression at alpha 0.05, no regression at
 * 0.2 (80 % confidence); primary tg32; no confirmation.
 */
void mx_regress_opts_defaults(struct mx_regress_opts *o);

enum mx_regress_call {
        MX_REGRESS_SAME,      /* no regression */
        MX_REGRESS_DIFFERENT, /* regression */
        MX_REGRESS_UNKNOWN,   /* more starts needed */
        _MX_REGRESS_CALL_MAX,
};
/* "no regression", "regression", "unknown". */
const char *mx_regress_call_to_string(enum mx_regress_call c);

/* One check's evidence: one summary per server start on each side. */
struct mx_regress_input {
        const double *cur, *ref;
        size_t ncur, nref;
        double threshold; /* percent of the reference mean (relative) or absolute units */
        bool relative;
        int worse;         /* +1: higher is worse (TTFT, memory); -1: lower is worse (t/s) */
        double p_within;   /* the within-start test's one-sided p of "worse"; NAN: no such test */
        bool can_confirm;  /* more starts may still come */
};

struct mx_regress_decision {
        enum mx_regress_call call;
        double delta;    /* the worsening: percent of the reference mean or units; negative: better */
        double se, df;   /* of delta, from the spread between starts (df 0: no spread known) */
        double p_beyond; /* p of "worse by no more than the threshold" (small: a regression) */
        double p_inside; /* p of "worse by the threshold or more" (small: no regression) */
        unsigned more;   /* for unknown: more starts per side likely to decide it */
        char rule[256];  /* what decided, in words */
};

/*
 * Decide one check (same / different / unknown, see above) at alpha_reg for
 * calling a regression (the primary's alpha or its Holm level) and
 * alpha_same for clearing one.
 */
void mx_regress_decide(const struct mx_regress_input *in, double alpha_reg, double alpha_same,
                       struct mx_regress_decision *out);

/*
 * The bootstrap's one-sided p that quantile q (0-100) of a is not above
 * quantile q of b by more than rise_pct percent (small: a is higher), from
 * resamples with a fixed seed; *ret_lo is the 95 % lower bound of the
 * relative difference (percent). NAN with an empty side.
 */
double mx_quantile_rise_p(const double *a, size_t na, const double *b, size_t nb, double q, double rise_pct,
                          double *ret_lo);

/* A quantile of n values by linear interpolation (NumPy's default), as L4 computes its own. */
double mx_regress_percentile(const double *v, size_t n, double p);
/*
 * Welch's t-test of "mean of a < mean of b" (one-sided): the p-value, or NAN
 * with fewer than 2 finite values on a side. Equal constant samples give 1,
 * different constant ones 0 (or 1 in the other direction).
 */
double mx_welch_p_less(const double *a, size_t na, const double *b, size_t nb);
/* Is an L4 row (an element of "tests") the one named "tg32", "pp2048" or "tg32@d4096" (L5's primary spec)? */
bool mx_regress_row_is(json_t *row, const char *spec);
/* Student's t CDF P(T <= t) with df degrees of freedom (df > 0). */
double mx_student_t_cdf(double t, double df);
/* The two-sided 95 % t quantile for df degrees of freedom (12.706 at df 1, 1.96 as df grows). */
double mx_student_t_q975(double df);

/*
 * Compare curs (an array of L4 metrics documents, one per server start of
 * this configuration) with refs (the same, of the reference): a new object
 *   {"decision": "regression" | "no regression" | "unknown",
 *    "regression": bool, "more_starts": N (unknown), "starts": [cur, ref],
 *    "checks": [{"metric", "kind", "pp", "tg", "depth", "concurrency",
 *      "current", "reference", "delta_pct" | "delta_gb", "starts": [c, r],
 *      "n": [requests c, r], "se", "df", "p", "p_within", "significant",
 *      "beyond", "decision", "regression", "family": "primary" | "holm",
 *      "alpha", "rule", "tail" (a quantile's sample-size note)}],
 *    "regressions": ["..."], "unknown": ["..."], "compared": N,
 *    "rule": "<what decided>"}
 * Checks: every llama-benchy row (pp, tg, ctx_pp) present on both sides,
 * TTFT p99 over the depth-0 requests, the memory peak (the same figure
 * only).
 */
json_t *mx_regress_compare(json_t *curs, json_t *refs, const struct mx_regress_opts *o);
