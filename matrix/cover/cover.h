/* SPDX-License-Identifier: MIT */
/*
 * t-way covering arrays under constraints: generating one for a model
 * (cover-model.h). A covering array of strength t is a list of valid rows in
 * which every valid t-tuple appears; cover-verify.h proves that a list is one.
 *
 * The matrix engine compiles a matrix file's exclude entries and boolean rules
 * into forbidden patterns (matrix.c); this module knows nothing of matrix files.
 *
 * Everything here is deterministic for a given seed: no clocks, no addresses,
 * no unseeded randomness.
 */
#pragma once

#include "cover-model.h"

#define MX_COVER_MAX_REQUIRED 65536 /* required rows per call */
/*
 * Largest effort used when mx_cover_options.effort is 0 (smaller models get
 * less: about a thousand look-ups per valid tuple, at least 16 units). One unit
 * is 2^20 tuple look-ups, a few milliseconds; the default keeps 10^20 at t = 3
 * well under four seconds on one core.
 */
#define MX_COVER_DEFAULT_EFFORT 1600
/* One unit of mx_cover_options.effort, in tuple look-ups. */
#define MX_COVER_EFFORT_UNIT (UINT64_C(1) << 20)

struct mx_cover_options {
        unsigned t;    /* strength, 1..MX_COVER_MAX_T (clamped to n_params) */
        uint64_t seed; /* same seed, same model -> same rows */
        /*
         * Rows that must appear first, in this order (n_required x n_params
         * values). A value of -1 means "free": the generator fills it.
         * Required rows must be valid (else -EINVAL with a reason). Their
         * tuples count toward coverage.
         */
        const int *required;
        size_t n_required;
        /*
         * Effort for construction and post-optimisation, in units of 2^20
         * look-ups (0 = default, scaled to the model up to
         * MX_COVER_DEFAULT_EFFORT). Bounded by work done, never by wall-clock
         * time, so results stay deterministic.
         */
        unsigned effort;
};

/*
 * Generate a covering array. On success *ret_rows is an n x n_params array of
 * values (caller frees) and *ret_n_rows is n. Errors: -EINVAL (bad model or
 * required row; *reterr says why), -E2BIG (the model exceeds the limits above
 * or the tuple table would not fit in memory), -ENOENT (no valid row exists).
 */
int mx_cover_generate(const struct mx_cover_model *m, const struct mx_cover_options *opt, int **ret_rows,
                      size_t *ret_n_rows, char **reterr);

/* True when row (n_params values) matches no forbidden pattern. */
bool mx_cover_row_valid(const struct mx_cover_model *m, const int *row);

/*
 * True when the partial assignment (values, -1 = unassigned) can be completed
 * to a valid row. Exact (a backtracking search), fast for the small constraint
 * sets real matrices have. A model without forbidden patterns answers true at
 * once, without reading partial; otherwise out-of-range values give false.
 */
bool mx_cover_extendable(const struct mx_cover_model *m, const int *partial);

/*
 * Number of valid t-tuples of the model (for reports); t is clamped to
 * n_params like in generation. -EINVAL for a bad model or t, -E2BIG if too
 * many to count.
 */
int mx_cover_count_tuples(const struct mx_cover_model *m, unsigned t, uint64_t *ret_count);
