/* SPDX-License-Identifier: MIT */
/* The independent proof that a list of rows is a covering array (cover-verify.c). */
#pragma once

#include "cover-model.h"

/*
 * Prove that rows form a covering array of strength t for m: every value in
 * range, no row forbidden, every valid t-tuple present. Returns 0, or -EDOM with
 * *reterr naming the first offending row or missing tuple.
 */
int mx_cover_verify(const struct mx_cover_model *m, unsigned t, const int *rows, size_t n_rows, char **reterr);
