/* SPDX-License-Identifier: MIT */
/*
 * Kernel categories (issue 18): named groups of kernel-name patterns that sort
 * every kernel of a profiler report into one category, for the decode-profile
 * table of seed 001 Phase 0 (Kernel Category | Time % | Avg | Calls/Token).
 * Patterns are the L1.5 gate's (kgate.h: unanchored globs, "re:" for POSIX
 * extended regular expressions). The first category with a matching pattern
 * wins, so order is meaning; a kernel no category matches is "other".
 *
 * A matrix declares its own list ("kernel_categories", mxmatrix.json(5));
 * without one the built-in list applies: vLLM with FlashInfer and CUTLASS
 * (seed 004's names) and llama.cpp's CUDA back end.
 */
#pragma once

#include "util.h"

#define MX_KCAT_MAX 64          /* categories in one list */
#define MX_KCAT_PATTERNS_MAX 64 /* patterns per category */
#define MX_KCAT_NAME_MAX 64     /* bytes in a category name */
#define MX_KCAT_OTHER "other"   /* the name of what no category matches */

/* A category as written: its name and its patterns (NULL-terminated). */
struct mx_kcat_def {
        char *name;
        char **patterns;
};

void mx_kcat_def_done(struct mx_kcat_def *d);

/* The built-in list (static storage), *ret_n entries. */
const struct mx_kcat_def *mx_kcat_builtin(size_t *ret_n);

/* A compiled list. */
struct mx_kcat;

/* Compile defs (copied). -EINVAL with *reterr on a bad pattern, -E2BIG over the limits. */
int mx_kcat_new(const struct mx_kcat_def *defs, size_t n, struct mx_kcat **ret, char **reterr);
struct mx_kcat *mx_kcat_free(struct mx_kcat *c);
DEFINE_POINTER_CLEANUP(struct mx_kcat, mx_kcat_free)

/* Categories in order; "other" is index n (mx_kcat_count()), not counted. */
size_t mx_kcat_count(const struct mx_kcat *c);
/* The name of category i; i == count gives "other". */
const char *mx_kcat_name(const struct mx_kcat *c, size_t i);
/* The category of kernel name: the first whose pattern matches, else count ("other"). */
size_t mx_kcat_classify(const struct mx_kcat *c, const char *kernel);
/* The pattern of category i that matched kernel, or NULL (for "why is this kernel here"). */
const char *mx_kcat_matched_pattern(const struct mx_kcat *c, size_t i, const char *kernel);
