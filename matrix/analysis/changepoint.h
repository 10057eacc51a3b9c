/* SPDX-License-Identifier: MIT */
/*
 * Change points in a configuration's stored L4 history (issue 19 item 2):
 * E-divisive means (Matteson & James 2014, "A nonparametric approach for
 * multiple change point analysis of multivariate data", as MongoDB's
 * signal-processing-algorithms and Apache Otava use it): the energy-distance
 * statistic with alpha = 1, the best split of a segment found by bisection,
 * kept when a permutation test (a fixed seed per segment, so the same series
 * gives the same answer every time) finds it significant, then each side
 * split again. Points are server starts (one attempt's L4 document each, as
 * L5 decides on starts); a split falls only between two commits, never
 * between two starts of one commit.
 *
 * Pure functions, no I/O: the history method (daemon/control), the client
 * and tests/unit/test-changepoint.c use them.
 */
#pragma once

#include "util.h"

#include <jansson.h>
#include <stdint.h>

/*
 * The cost bound of one search (the history method runs it on the daemon's
 * loop): at most this many distances |x_i - x_k| over all best splits,
 * shuffled or not: about 0.15 s of one core of the 2-core test machine
 * (test-changepoint's work_bound prints it). A 500-point series with one
 * change costs 2^26.2 of them, in full (199 shuffles a segment).
 */
#define MX_CP_WORK_MAX (UINT64_C(1) << 27)

struct mx_cp_opts {
        double alpha;              /* a split is kept when its permutation p is below it (0.05) */
        size_t min_size;           /* the fewest points a segment may have (3) */
        unsigned permutations;     /* of the permutation test (199: p's resolution 0.005) */
        unsigned permutations_min; /* fewer than permutations where work_max runs short, never below this
                                      (99: p's resolution 0.01); a segment that cannot get them is untested */
        uint64_t work_max;         /* distances computed in one search at most (MX_CP_WORK_MAX) */
        uint64_t seed;             /* of the permutations; mixed with the segment's place */
};
void mx_cp_opts_defaults(struct mx_cp_opts *o);

struct mx_cp_stats {
        size_t untested;           /* segments left untested: the work bound ran out before them */
        unsigned min_permutations; /* the fewest shuffles a tested segment got (0: none tested) */
        uint64_t work;             /* distances computed */
};

struct mx_cp {
        size_t at; /* the first point after the change */
        double q;  /* the energy statistic of the split */
        double p;  /* its permutation p-value */
};

/*
 * The change points of v[0..n) in increasing order of position. group
 * (optional, NULL: every point its own) gives each point's commit as a
 * non-decreasing number; splits fall only where it changes. Its cost is at
 * most o->work_max distances; *ret_stats (optional) says what it cost and
 * which segments it left untested. -EINVAL on bad options or a non-finite
 * value.
 */
int mx_changepoints(const double *v, const size_t *group, size_t n, const struct mx_cp_opts *o,
                    struct mx_cp **ret, size_t *ret_n, struct mx_cp_stats *ret_stats);

/*
 * One server start's value of metric ("tg32", "pp2048", "tg32@d4096": the
 * row's mean t/s; L5's row names) from an L4 metrics document, and the
 * spread of its requests (sample sd; NAN with one). -ENOENT: no such row.
 */
int mx_cp_metric(json_t *l4, const char *metric, double *ret_value, double *ret_sd);

/*
 * The history reply's analysis: points is an array of objects in commit order
 * {"commit", "committed_at" (s or null), "run", "attempt", "started_at", "l4"};
 * the result {"metric", "series": [{commit, committed_at, run, attempt,
 * started_at, value, sd}], "change_points": [{"index", "before", "after"
 * (commits), "mean_before", "mean_after", "change_pct", "n_before",
 * "n_after", "p", "summary"}], "untested_segments" (segments the work bound
 * left untested), "work" (distances computed)}. Points without the metric
 * are left out.
 */
int mx_cp_history_json(json_t *points, const char *metric, const struct mx_cp_opts *o, json_t **ret);
