/* SPDX-License-Identifier: MIT */
/*
 * The tuple table of covering arrays (cover-tuples.c), the bit sets and the
 * seeded PRNG that the generator and the verifier share.
 *
 * Tuples are numbered densely: the t-subsets of parameters are ranked in
 * colexicographic order (rank = sum of C(p_j, j + 1) over the sorted members),
 * and inside a subset the values form a mixed-radix number, first member most
 * significant. subset_off[] turns a rank into the first tuple id of the subset.
 */
#pragma once

#include "cover-solve.h"

/* Largest tuple table (bitsets, counters, subset offsets) a model may need. */
#define MX_COVER_MAX_TABLE_BYTES ((uint64_t)256 << 20)

/* ---- PRNG: xoshiro256** seeded by splitmix64, so runs depend on the seed only ---- */

struct cover_rng {
        uint64_t s[4];
};

void cover_rng_seed(struct cover_rng *r, uint64_t seed);
uint64_t cover_rng_next(struct cover_rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t cover_rng_below(struct cover_rng *r, uint64_t n);

/* ---- the table ---- */

struct cover_tuples {
        size_t n;             /* parameters */
        unsigned t;           /* strength */
        const unsigned *nv;   /* values per parameter */
        uint64_t *binom;      /* (n + 1) x (t + 1): C(i, j) */
        uint64_t n_subsets;   /* C(n, t) */
        uint64_t *subset_off; /* n_subsets + 1 prefix offsets into the tuple ids */
        uint64_t n_tuples;
        uint64_t *valid; /* bitset: tuple extends to a valid row */
        uint64_t n_valid;
        uint64_t max_subset_valid; /* lower bound on the rows of any covering array */
};

/*
 * Size the table for (n, t) and allocate it if it fits in
 * MX_COVER_MAX_TABLE_BYTES (extra_bytes_per_tuple accounts for the caller's own
 * per-tuple arrays); -E2BIG otherwise. Every tuple starts valid.
 */
int cover_tuples_init(struct cover_tuples *tt, size_t n, unsigned t, const unsigned *nv,
                      unsigned extra_bytes_per_tuple);
void cover_tuples_done(struct cover_tuples *tt);
/* Mark tuples that cannot be completed to a valid row invalid (solver may be NULL). */
void cover_tuples_mark_valid(struct cover_tuples *tt, struct cover_solver *solver);

static inline uint64_t cover_binom(const struct cover_tuples *tt, size_t i, unsigned j)
{
        return tt->binom[i * (tt->t + 1) + j];
}

/* Colex rank of the sorted subset c[0..t-1]. */
static inline uint64_t cover_subset_rank(const struct cover_tuples *tt, const unsigned *c)
{
        uint64_t r = 0;
        for (unsigned j = 0; j < tt->t; j++)
                r += cover_binom(tt, c[j], j + 1);
        return r;
}

/* Tuple id of sorted parameters c[] taking values vals[] (vals[j] belongs to c[j]). */
static inline uint64_t cover_tuple_id(const struct cover_tuples *tt, const unsigned *c, const int *vals)
{
        uint64_t local = 0;
        for (unsigned j = 0; j < tt->t; j++)
                local = local * tt->nv[c[j]] + (uint64_t)vals[j];
        return tt->subset_off[cover_subset_rank(tt, c)] + local;
}

/* Inverse of the rank: the sorted members of subset r. */
void cover_subset_unrank(const struct cover_tuples *tt, uint64_t r, unsigned *c);
/* Decode a tuple id into its subset members and values. */
void cover_tuple_decode(const struct cover_tuples *tt, uint64_t id, unsigned *c, int *vals);
/* Advance c[] to the next t-subset of 0..n-1 in colex order; false after the last one. */
bool cover_subset_next(unsigned *c, unsigned t, size_t n);

/* ---- bit sets: bit i of b (tuples, values) ---- */

static inline bool bit_get(const uint64_t *b, uint64_t i)
{
        return (b[i >> 6] >> (i & 63)) & 1;
}
static inline void bit_set(uint64_t *b, uint64_t i)
{
        b[i >> 6] |= UINT64_C(1) << (i & 63);
}
static inline void bit_clear(uint64_t *b, uint64_t i)
{
        b[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}
