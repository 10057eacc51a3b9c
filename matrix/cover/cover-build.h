/* SPDX-License-Identifier: MIT */
/*
 * The generation state of covering arrays, and the greedy construction that
 * fills it (cover-build.c); cover-optimise.c shortens what it built.
 */
#pragma once

#include "cover-tuples.h"

struct cover_gen {
        const struct mx_cover_model *m;
        size_t n;
        unsigned t;
        struct cover_solver *solver; /* NULL: no constraints */
        struct cover_tuples tt;
        struct cover_rng rng;

        /* rows built so far: n_rows x n, plus which cells a required row fixed */
        int *rows;
        uint8_t *fixed;
        size_t n_rows, cap_rows;
        size_t n_required;

        /* construction: uncovered valid tuples */
        uint64_t *uncov;
        uint64_t n_uncov;
        uint32_t *unc_subset; /* per subset */
        uint64_t *unc_pv;     /* per parameter x 64 values */

        uint64_t work;       /* tuple look-ups done, the effort currency */
        uint64_t work_limit; /* for the optimiser */
};

/* Start over: fill free cells of required rows, then add rows until every valid tuple is covered. */
int cover_build(struct cover_gen *g, const int *required, size_t n_required, char **reterr);
