/* SPDX-License-Identifier: MIT */
/*
 * Greedy construction of a covering array, one row at a time (the AETG/PICT
 * family): each row starts from an uncovered tuple of the subset with the
 * most uncovered tuples, then every other parameter takes the value that
 * completes the most uncovered tuples with the parameters already placed
 * (ties: the value with more uncovered tuples overall, then the PRNG). Several
 * candidate rows are built with different parameter orders and the best one is
 * kept. With constraints, a value is only taken when the row still extends to
 * a valid one, so every row is valid and every valid tuple eventually lands in
 * one.
 */
#include "cover-build.h"
#include "util.h"

#include <math.h>

#define BUILD_MAX_CANDIDATES 32

static void row_grow(struct cover_gen *g)
{
        if (g->n_rows < g->cap_rows)
                return;
        g->cap_rows = MX_MAX(g->cap_rows * 2, 16u);
        g->rows = xreallocarray(g->rows, g->cap_rows, g->n * sizeof(int));
        g->fixed = xreallocarray(g->fixed, g->cap_rows, g->n);
}

/* Start the uncovered set as the valid tuples, with per-subset and per-value counts. */
static void uncovered_init(struct cover_gen *g)
{
        struct cover_tuples *tt = &g->tt;
        size_t words = (tt->n_tuples + 63) / 64;
        free(g->uncov);
        g->uncov = xmalloc(words * sizeof(uint64_t));
        memcpy(g->uncov, tt->valid, words * sizeof(uint64_t));
        g->n_uncov = tt->n_valid;
        free(g->unc_subset);
        free(g->unc_pv);
        g->unc_subset = xcalloc(tt->n_subsets, sizeof(uint32_t));
        g->unc_pv = xcalloc(g->n * 64, sizeof(uint64_t));

        unsigned c[MX_COVER_MAX_T];
        int vals[MX_COVER_MAX_T];
        for (unsigned j = 0; j < g->t; j++)
                c[j] = j;
        uint64_t r = 0;
        do {
                uint64_t first = tt->subset_off[r], size = tt->subset_off[r + 1] - first, n_valid = 0;
                for (uint64_t k = 0; k < size; k++) {
                        if (!bit_get(tt->valid, first + k))
                                continue;
                        n_valid++;
                        uint64_t x = k;
                        for (unsigned j = g->t; j-- > 0;) {
                                vals[j] = (int)(x % tt->nv[c[j]]);
                                x /= tt->nv[c[j]];
                        }
                        for (unsigned j = 0; j < g->t; j++)
                                g->unc_pv[c[j] * 64 + vals[j]]++;
                }
                g->unc_subset[r++] = (uint32_t)n_valid;
        } while (cover_subset_next(c, g->t, g->n));
}

/* Take the tuples of a finished row out of the uncovered set. */
static void cover_row(struct cover_gen *g, const int *row)
{
        struct cover_tuples *tt = &g->tt;
        unsigned c[MX_COVER_MAX_T];
        int vals[MX_COVER_MAX_T];
        for (unsigned j = 0; j < g->t; j++)
                c[j] = j;
        uint64_t r = 0;
        do {
                uint64_t local = 0;
                for (unsigned j = 0; j < g->t; j++) {
                        vals[j] = row[c[j]];
                        local = local * tt->nv[c[j]] + (uint64_t)vals[j];
                }
                uint64_t id = tt->subset_off[r] + local;
                if (bit_get(g->uncov, id)) {
                        bit_clear(g->uncov, id);
                        g->n_uncov--;
                        g->unc_subset[r]--;
                        for (unsigned j = 0; j < g->t; j++)
                                g->unc_pv[c[j] * 64 + vals[j]]--;
                }
                r++;
        } while (cover_subset_next(c, g->t, g->n));
        g->work += g->tt.n_subsets;
}

/*
 * For parameter p and the sorted placed parameters placed[0..k-1], add to
 * gain[v] the uncovered tuples that p = v would complete.
 */
static void count_gains(struct cover_gen *g, const int *row, unsigned p, const unsigned *placed, size_t k,
                        uint64_t *gain)
{
        struct cover_tuples *tt = &g->tt;
        unsigned t1 = g->t - 1, nvp = tt->nv[p];
        size_t idx[MX_COVER_MAX_T];
        if (k < t1)
                return;
        for (unsigned j = 0; j < t1; j++)
                idx[j] = j;
        for (;;) {
                /* members: placed[idx[..]] with p inserted in order */
                unsigned c[MX_COVER_MAX_T];
                unsigned pos = 0, m = 0;
                for (unsigned j = 0; j < t1; j++) {
                        if (m == j && placed[idx[j]] > p)
                                c[m++] = p, pos = j;
                        c[m++] = placed[idx[j]];
                }
                if (m == t1)
                        c[m++] = p, pos = t1;
                uint64_t local = 0, mult = 1;
                for (unsigned j = 0; j < g->t; j++)
                        local = local * tt->nv[c[j]] + (j == pos ? 0 : (uint64_t)row[c[j]]);
                for (unsigned j = g->t; j-- > pos + 1;)
                        mult *= tt->nv[c[j]];
                uint64_t base = tt->subset_off[cover_subset_rank(tt, c)] + local;
                for (unsigned v = 0; v < nvp; v++)
                        gain[v] += bit_get(g->uncov, base + v * mult);
                g->work += nvp + 2 * g->t; /* the look-ups and ranking the subset */

                /* next (t-1)-combination of 0..k-1 */
                unsigned j = 0;
                while (j < t1 && idx[j] + 1 == (j + 1 < t1 ? idx[j + 1] : k))
                        j++;
                if (j == t1)
                        break;
                idx[j]++;
                for (unsigned i = 0; i < j; i++)
                        idx[i] = i;
        }
}

/* Choose p's value: most completed tuples, then most uncovered tuples overall, then the PRNG. */
static int pick_value(struct cover_gen *g, int *row, unsigned p, const unsigned *placed, size_t k,
                      uint64_t *ret_gain)
{
        uint64_t gain[MX_COVER_MAX_VALUES] = { 0 };
        count_gains(g, row, p, placed, k, gain);
        bool check = cover_solver_constrains(g->solver, p);
        int best = -1;
        uint64_t best_gain = 0, best_density = 0, ties = 0;
        for (unsigned v = 0; v < g->tt.nv[p]; v++) {
                uint64_t density = g->unc_pv[p * 64 + v];
                bool better =
                        best < 0 || gain[v] > best_gain || (gain[v] == best_gain && density > best_density);
                bool tie = best >= 0 && gain[v] == best_gain && density == best_density;
                if (!better && !tie)
                        continue;
                if (tie && cover_rng_below(&g->rng, ++ties) != 0)
                        continue;
                if (check) {
                        row[p] = (int)v;
                        bool ok = cover_solver_extendable(g->solver, row);
                        row[p] = -1;
                        if (!ok)
                                continue;
                }
                if (better)
                        ties = 1;
                best = (int)v;
                best_gain = gain[v];
                best_density = density;
        }
        *ret_gain = best_gain;
        return best;
}

static void insert_sorted(unsigned *placed, size_t *k, unsigned p)
{
        size_t i = *k;
        while (i > 0 && placed[i - 1] > p) {
                placed[i] = placed[i - 1];
                i--;
        }
        placed[i] = p;
        (*k)++;
}

/* Put an uncovered tuple from the subset with the most uncovered tuples into an empty row. */
static void seed_row(struct cover_gen *g, int *row, unsigned *placed, size_t *k)
{
        struct cover_tuples *tt = &g->tt;
        uint64_t best = 0, best_r = 0, ties = 0;
        for (uint64_t r = 0; r < tt->n_subsets; r++) {
                if (g->unc_subset[r] > best) {
                        best = g->unc_subset[r];
                        best_r = r;
                        ties = 1;
                } else if (g->unc_subset[r] == best && best > 0 && cover_rng_below(&g->rng, ++ties) == 0)
                        best_r = r;
        }
        g->work += tt->n_subsets;
        uint64_t first = tt->subset_off[best_r], pick = cover_rng_below(&g->rng, best), seen = 0;
        for (uint64_t id = first;; id++)
                if (bit_get(g->uncov, id) && seen++ == pick) {
                        unsigned c[MX_COVER_MAX_T];
                        int vals[MX_COVER_MAX_T];
                        cover_tuple_decode(tt, id, c, vals);
                        for (unsigned j = 0; j < g->t; j++) {
                                row[c[j]] = vals[j];
                                insert_sorted(placed, k, c[j]);
                        }
                        return;
                }
}

/* Order the free parameters: by uncovered tuples (first candidate) or at random. */
static void order_params(struct cover_gen *g, const int *row, unsigned *order, size_t *n_order,
                         bool by_density)
{
        *n_order = 0;
        for (size_t p = 0; p < g->n; p++)
                if (row[p] < 0)
                        order[(*n_order)++] = (unsigned)p;
        for (size_t i = *n_order; i > 1; i--) {
                size_t j = cover_rng_below(&g->rng, i);
                unsigned x = order[i - 1];
                order[i - 1] = order[j];
                order[j] = x;
        }
        if (!by_density)
                return;
        /* insertion sort on density, stable over the shuffled order */
        _cleanup_free_ uint64_t *dens = xcalloc(g->n, sizeof(uint64_t));
        for (size_t i = 0; i < *n_order; i++)
                for (unsigned v = 0; v < g->tt.nv[order[i]]; v++)
                        dens[order[i]] += g->unc_pv[order[i] * 64 + v];
        for (size_t i = 1; i < *n_order; i++) {
                unsigned x = order[i];
                size_t j = i;
                while (j > 0 && dens[order[j - 1]] < dens[x]) {
                        order[j] = order[j - 1];
                        j--;
                }
                order[j] = x;
        }
}

/* Complete row (free cells are -1) greedily; returns the number of tuples it newly covers. */
static uint64_t complete_row(struct cover_gen *g, int *row, bool seed, bool by_density)
{
        _cleanup_free_ unsigned *placed = xmalloc(g->n * sizeof(unsigned));
        _cleanup_free_ unsigned *order = xmalloc(g->n * sizeof(unsigned));
        size_t k = 0, n_order;
        uint64_t total = 0;
        for (size_t p = 0; p < g->n; p++)
                if (row[p] >= 0)
                        insert_sorted(placed, &k, (unsigned)p);
        if (seed && k == 0)
                seed_row(g, row, placed, &k);
        order_params(g, row, order, &n_order, by_density);
        for (size_t i = 0; i < n_order; i++) {
                uint64_t gain;
                unsigned p = order[i];
                int v = pick_value(g, row, p, placed, k, &gain);
                if (v < 0)
                        mx_die("cover: no value of parameter %u keeps the row valid", p);
                row[p] = v;
                total += gain;
                insert_sorted(placed, &k, p);
        }
        return total;
}

/*
 * Candidates per row: about half the effort goes to construction. A candidate
 * costs about C(n, t) x (mean values + 2t) work units, and a greedy array has about
 * (lower bound) x ln(C(n, t)) / 2 rows.
 */
static size_t candidates_per_row(struct cover_gen *g)
{
        uint64_t sum_v = 0;
        for (size_t p = 0; p < g->n; p++)
                sum_v += g->tt.nv[p];
        double per = (double)g->tt.n_subsets * ((double)sum_v / (double)g->n + 2 * g->t);
        double rows =
                (double)MX_MAX(g->tt.max_subset_valid, 1u) * MX_MAX(log((double)g->tt.n_subsets) / 2, 1.0);
        double m = (double)g->work_limit / 2 / MX_MAX(per * rows, 1.0);
        return (size_t)MX_MAX(MX_MIN(m, (double)BUILD_MAX_CANDIDATES), 1.0);
}

/* Add the best of several candidate rows. */
static void add_row(struct cover_gen *g, size_t n_candidates, int *cand, int *best)
{
        uint64_t best_gain = 0;
        for (size_t c = 0; c < n_candidates; c++) {
                for (size_t p = 0; p < g->n; p++)
                        cand[p] = -1;
                uint64_t gain = complete_row(g, cand, true, c == 0);
                if (c == 0 || gain > best_gain) {
                        best_gain = gain;
                        memcpy(best, cand, g->n * sizeof(int));
                }
        }
        row_grow(g);
        memcpy(g->rows + g->n_rows * g->n, best, g->n * sizeof(int));
        memset(g->fixed + g->n_rows * g->n, 0, g->n);
        g->n_rows++;
        cover_row(g, best);
}

/* Complete the required rows in order; -EINVAL when one cannot be made valid. */
static int add_required(struct cover_gen *g, const int *required, size_t n_required, char **reterr)
{
        for (size_t i = 0; i < n_required; i++) {
                row_grow(g);
                int *row = g->rows + g->n_rows * g->n;
                uint8_t *fixed = g->fixed + g->n_rows * g->n;
                memcpy(row, required + i * g->n, g->n * sizeof(int));
                for (size_t p = 0; p < g->n; p++)
                        fixed[p] = row[p] >= 0;
                if (!cover_solver_extendable(g->solver, row)) {
                        if (reterr)
                                *reterr =
                                        xasprintf("required row %zu cannot be completed without matching a "
                                                  "forbidden pattern",
                                                  i);
                        return -EINVAL;
                }
                complete_row(g, row, false, true);
                g->n_rows++;
                cover_row(g, row);
        }
        g->n_required = n_required;
        return 0;
}

int cover_build(struct cover_gen *g, const int *required, size_t n_required, char **reterr)
{
        g->n_rows = 0;
        uncovered_init(g);
        int r = add_required(g, required, n_required, reterr);
        if (r < 0)
                return r;
        size_t m = candidates_per_row(g);
        _cleanup_free_ int *cand = xmalloc(g->n * sizeof(int));
        _cleanup_free_ int *best = xmalloc(g->n * sizeof(int));
        while (g->n_uncov > 0)
                add_row(g, m, cand, best);
        return 0;
}
