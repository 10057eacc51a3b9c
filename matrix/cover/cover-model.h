/* SPDX-License-Identifier: MIT */
/*
 * The model a covering array is built for, and its limits.
 *
 * A model is a list of parameters, each with n_values values (0..n_values-1),
 * plus forbidden patterns. A row assigns one value to every parameter. A row is
 * valid when it matches no forbidden pattern. A t-tuple (t parameters, one value
 * each) is valid when at least one valid row contains it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MX_COVER_MAX_PARAMS 1024
#define MX_COVER_MAX_VALUES 64 /* values per parameter: one uint64_t bitset */
#define MX_COVER_MAX_T 6
#define MX_COVER_MAX_FORBIDDEN 65536 /* forbidden patterns per model */

/* One term of a forbidden pattern: parameter param takes a value in set (bit v = value v). */
struct mx_cover_term {
        unsigned param;
        uint64_t set;
};

/* A forbidden pattern: a row that satisfies every term is invalid. */
struct mx_cover_forbid {
        size_t n_terms;
        const struct mx_cover_term *terms;
};

struct mx_cover_model {
        size_t n_params;
        const unsigned *n_values; /* n_params entries, each 1..MX_COVER_MAX_VALUES */
        size_t n_forbidden;
        const struct mx_cover_forbid *forbidden;
};

/* Check the model's shape against the limits above: -EINVAL or -E2BIG with a reason. */
int cover_check_model(const struct mx_cover_model *m, char **reterr);
/* True when row (values in range) matches no pattern, checked directly against the model. */
bool cover_row_allowed(const struct mx_cover_model *m, const int *row, size_t *ret_forbid);
