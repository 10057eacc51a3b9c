/* SPDX-License-Identifier: MIT */
/*
 * Streaming expansion of a matrix: the cartesian product of the product axes
 * under the constraints, one configuration at a time, never holding the
 * product in memory (a 2^24-cell product streams in constant memory).
 *
 * Semantics are GitHub Actions' matrix semantics, then ours:
 *   1. the product: product axes in file order, the first axis varying
 *      slowest, each over its product values in file order;
 *   2. exclude: a cell that matches every pair of an exclude entry (a partial
 *      match) is removed;
 *   3. include: each entry, in order, adds its pairs to every remaining
 *      original cell none of whose original values it would change; added
 *      values may be overwritten by later entries. An entry that extends no
 *      original cell is appended as a configuration of its own pairs, after
 *      all original cells (this is what lets include be streamed);
 *   4. rules: a configuration that matches a rule's "if" but not its "then"
 *      is invalid and dropped;
 *   5. known-incompatible entries mark what remains (they drop nothing).
 *
 * Pins (per axis, -1 = free) restrict the expansion: a pinned axis behaves as
 * a product axis with the pinned value as its only value, whatever the file
 * says about its product flags.
 */
#pragma once

#include "matrix.h"

struct mx_expand;

/* Start an expansion; pins may be NULL. */
struct mx_expand *mx_expand_new(const struct mx_matrix *m, const int *pins);
struct mx_expand *mx_expand_free(struct mx_expand *it);
DEFINE_POINTER_CLEANUP(struct mx_expand, mx_expand_free)

/*
 * The next valid configuration: returns 1 and *ret_config (per axis, -1 =
 * unset; valid until the next call), or 0 at the end.
 */
int mx_expand_next(struct mx_expand *it, const int **ret_config);
/* For the configuration last returned: the include entry that appended it, or -1 for a product cell. */
int mx_expand_appended_by(const struct mx_expand *it);

struct mx_expand_counts {
        uint64_t product;            /* cells of the product (saturated at UINT64_MAX) */
        bool product_overflow;       /* the product does not fit in 64 bits */
        uint64_t excluded;           /* product cells removed by exclude */
        uint64_t invalid;            /* configurations dropped by rules */
        uint64_t appended;           /* valid configurations appended by include entries */
        uint64_t valid;              /* configurations the expansion yields */
        uint64_t known_incompatible; /* of those, marked by a known-incompatible entry */
};

/* The number of product cells, without expanding (saturating; *ret_overflow when it does not fit). */
uint64_t mx_expand_product_size(const struct mx_matrix *m, const int *pins, bool *ret_overflow);

/*
 * Count by streaming. Refuses with -E2BIG (before streaming) when the product
 * has more than max_cells cells.
 */
int mx_expand_count(const struct mx_matrix *m, const int *pins, uint64_t max_cells,
                    struct mx_expand_counts *ret);

/*
 * Stream the whole unpinned expansion and fail (-EINVAL, *reterr naming both
 * places) if an include entry turns a cell that broke no rule into one that
 * does. Used when loading a file whose includes interact with rules.
 */
int mx_expand_validate(const struct mx_matrix *m, uint64_t max_cells, struct mx_expand_counts *ret,
                       char **reterr);
