/* SPDX-License-Identifier: MIT */
/*
 * Compact text form of a covering-array model ("3^4 2^2 | forbid 0:{1} 2:{0,1}
 * | t=2 | pict=9"), for fixtures, tests and benchmarks. See cover-spec.c for
 * the grammar. Matrix files never use it.
 */
#pragma once

#include "cover-model.h"
#include "util.h"

struct mx_cover_spec {
        struct mx_cover_model model; /* points into the arrays below */
        unsigned *n_values;
        struct mx_cover_forbid *forbidden;
        struct mx_cover_term *terms;
        size_t n_terms;
        unsigned t; /* 0 when the text gives none */
        long pict;  /* PICT's row count, -1 when not given */
        long best;  /* best known row count, -1 when not given */
};

/* Parse one spec line; -EINVAL with "column N: what" in *reterr. */
int mx_cover_spec_parse(const char *text, struct mx_cover_spec **ret, char **reterr);
struct mx_cover_spec *mx_cover_spec_free(struct mx_cover_spec *s);
DEFINE_POINTER_CLEANUP(struct mx_cover_spec, mx_cover_spec_free)
