/* SPDX-License-Identifier: MIT */
/*
 * The tuple table of covering arrays: dense numbering of every t-tuple of a
 * model (see cover-tuples.h), which of them are valid, and the seeded PRNG
 * the generator draws from.
 */
#include "cover-tuples.h"
#include "util.h"

/* ---- PRNG ---- */

static uint64_t splitmix64(uint64_t *x)
{
        uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

void cover_rng_seed(struct cover_rng *r, uint64_t seed)
{
        for (size_t i = 0; i < 4; i++)
                r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
        return (x << k) | (x >> (64 - k));
}

uint64_t cover_rng_next(struct cover_rng *r)
{
        uint64_t *s = r->s;
        uint64_t result = rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
}

uint64_t cover_rng_below(struct cover_rng *r, uint64_t n)
{
        return (uint64_t)(((unsigned __int128)cover_rng_next(r) * n) >> 64);
}

/* ---- subsets ---- */

bool cover_subset_next(unsigned *c, unsigned t, size_t n)
{
        for (unsigned j = 0; j < t; j++) {
                size_t limit = j + 1 < t ? c[j + 1] : n;
                if (c[j] + 1 < limit) {
                        c[j]++;
                        for (unsigned i = 0; i < j; i++)
                                c[i] = i;
                        return true;
                }
        }
        return false;
}

void cover_subset_unrank(const struct cover_tuples *tt, uint64_t r, unsigned *c)
{
        size_t hi = tt->n - 1;
        for (unsigned j = tt->t; j-- > 0;) {
                /* largest x in [j, hi] with C(x, j + 1) <= r */
                size_t lo = j, top = hi;
                while (lo < top) {
                        size_t mid = (lo + top + 1) / 2;
                        if (cover_binom(tt, mid, j + 1) <= r)
                                lo = mid;
                        else
                                top = mid - 1;
                }
                c[j] = (unsigned)lo;
                r -= cover_binom(tt, lo, j + 1);
                hi = lo > 0 ? lo - 1 : 0;
        }
}

void cover_tuple_decode(const struct cover_tuples *tt, uint64_t id, unsigned *c, int *vals)
{
        uint64_t lo = 0, hi = tt->n_subsets - 1;
        while (lo < hi) {
                uint64_t mid = (lo + hi + 1) / 2;
                if (tt->subset_off[mid] <= id)
                        lo = mid;
                else
                        hi = mid - 1;
        }
        cover_subset_unrank(tt, lo, c);
        uint64_t local = id - tt->subset_off[lo];
        for (unsigned j = tt->t; j-- > 0;) {
                vals[j] = (int)(local % tt->nv[c[j]]);
                local /= tt->nv[c[j]];
        }
}

/* ---- table ---- */

/* C(i, j) for i <= n, j <= t, saturating at 2^62 so sums of a few cannot wrap. */
static uint64_t *binom_table(size_t n, unsigned t)
{
        const uint64_t cap = UINT64_C(1) << 62;
        uint64_t *b = xcalloc((n + 1) * (t + 1), sizeof(uint64_t));
        for (size_t i = 0; i <= n; i++) {
                b[i * (t + 1)] = 1;
                for (unsigned j = 1; j <= t && i > 0; j++) {
                        uint64_t x = b[(i - 1) * (t + 1) + j - 1] + b[(i - 1) * (t + 1) + j];
                        b[i * (t + 1) + j] = MX_MIN(x, cap);
                }
        }
        return b;
}

int cover_tuples_init(struct cover_tuples *tt, size_t n, unsigned t, const unsigned *nv,
                      unsigned extra_bytes_per_tuple)
{
        *tt = (struct cover_tuples){ .n = n, .t = t, .nv = nv };
        tt->binom = binom_table(n, t);
        tt->n_subsets = cover_binom(tt, n, t);

        /* subset offsets and per-subset counters come first: refuse before allocating them */
        const uint64_t per_subset = sizeof(uint64_t) + sizeof(uint32_t);
        if (tt->n_subsets > MX_COVER_MAX_TABLE_BYTES / per_subset) {
                cover_tuples_done(tt);
                return -E2BIG;
        }
        tt->subset_off = xcalloc(tt->n_subsets + 1, sizeof(uint64_t));

        unsigned c[MX_COVER_MAX_T];
        for (unsigned j = 0; j < t; j++)
                c[j] = j;
        uint64_t total = 0, r = 0;
        const uint64_t max_tuples = MX_COVER_MAX_TABLE_BYTES * 8 / (2 + 8 * (uint64_t)extra_bytes_per_tuple);
        do {
                uint64_t prod = 1;
                for (unsigned j = 0; j < t; j++)
                        prod *= nv[c[j]];
                tt->subset_off[r++] = total;
                total += prod;
                if (total > max_tuples ||
                    tt->n_subsets * per_subset + total * (2 + 8 * (uint64_t)extra_bytes_per_tuple) / 8 >
                            MX_COVER_MAX_TABLE_BYTES) {
                        cover_tuples_done(tt);
                        return -E2BIG;
                }
        } while (cover_subset_next(c, t, n));
        tt->subset_off[r] = total;
        tt->n_tuples = total;

        tt->valid = xmalloc(((total + 63) / 64) * sizeof(uint64_t));
        memset(tt->valid, 0xff, ((total + 63) / 64) * sizeof(uint64_t));
        tt->n_valid = total;
        return 0;
}

void cover_tuples_done(struct cover_tuples *tt)
{
        free(tt->binom);
        free(tt->subset_off);
        free(tt->valid);
        *tt = (struct cover_tuples){ 0 };
}

/* Check every tuple of subset c against the solver; returns how many are valid. */
static uint64_t mark_subset(struct cover_tuples *tt, struct cover_solver *solver, const unsigned *c,
                            uint64_t first, int *partial)
{
        bool touched = false;
        for (unsigned j = 0; j < tt->t; j++)
                touched = touched || cover_solver_constrains(solver, c[j]);
        uint64_t size = 1;
        for (unsigned j = 0; j < tt->t; j++)
                size *= tt->nv[c[j]];
        if (!touched)
                return size;

        uint64_t n_valid = 0;
        for (uint64_t local = 0; local < size; local++) {
                uint64_t x = local;
                for (unsigned j = tt->t; j-- > 0;) {
                        partial[c[j]] = (int)(x % tt->nv[c[j]]);
                        x /= tt->nv[c[j]];
                }
                if (cover_solver_extendable(solver, partial))
                        n_valid++;
                else
                        bit_clear(tt->valid, first + local);
        }
        for (unsigned j = 0; j < tt->t; j++)
                partial[c[j]] = -1;
        return n_valid;
}

void cover_tuples_mark_valid(struct cover_tuples *tt, struct cover_solver *solver)
{
        unsigned c[MX_COVER_MAX_T];
        for (unsigned j = 0; j < tt->t; j++)
                c[j] = j;
        _cleanup_free_ int *partial = xmalloc(tt->n * sizeof(int));
        for (size_t p = 0; p < tt->n; p++)
                partial[p] = -1;

        tt->n_valid = 0;
        tt->max_subset_valid = 0;
        uint64_t r = 0;
        do {
                uint64_t k = solver ? mark_subset(tt, solver, c, tt->subset_off[r], partial)
                                    : tt->subset_off[r + 1] - tt->subset_off[r];
                tt->n_valid += k;
                tt->max_subset_valid = MX_MAX(tt->max_subset_valid, k);
                r++;
        } while (cover_subset_next(c, tt->t, tt->n));
}
