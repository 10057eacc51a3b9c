/* SPDX-License-Identifier: MIT */
/*
 * Post-optimisation of a covering array: take a row out, then repair the
 * coverage by local search, and repeat while the repair succeeds.
 *
 * The repair is a tabu search on single cells, in the manner of TCA (Lin et
 * al., 2015): pick an uncovered tuple at random; every row that differs from it
 * in exactly one changeable cell offers a move (set that cell), scored by
 * tuples gained minus tuples lost; the best move that is not tabu wins. When no
 * row is one cell away, a random row is rewritten to contain the tuple. A
 * per-tuple row count makes a move's score cost C(n - 1, t - 1) look-ups.
 *
 * Required rows stay first and keep their given cells; every move keeps its row
 * valid. All effort is counted in look-ups (g->work), never in time, and each
 * repair also ends after a number of steps without progress, so the result
 * depends on the seed and the effort only.
 */
#include "cover-optimise.h"
#include "util.h"

#define INVALID_TUPLE UINT16_MAX
#define MAX_OPT_ROWS (UINT16_MAX - 2)
#define MAX_OPT_CELLS ((size_t)8 << 20) /* rows x parameters, for the tabu table */
#define TABU_TENURE 6
/* Work units per subset visited (ranking it, two random counter reads), as in cover-build.c. */
#define OPT_LOOKUP_COST 10

struct opt {
        struct cover_gen *g;
        struct cover_tuples *tt;
        size_t n;
        unsigned t;
        uint16_t *cnt;    /* rows containing each tuple; INVALID_TUPLE for invalid ones */
        uint64_t *ulist;  /* uncovered tuples, lazily pruned */
        uint64_t *inlist; /* bitset: tuple is in ulist */
        size_t n_ulist, cap_ulist;
        uint64_t n_unc;
        uint64_t *tabu; /* row x param: step until which the cell may not change */
        uint64_t step;
        unsigned *others; /* scratch: all parameters but one */
};

static void ulist_push(struct opt *o, uint64_t id)
{
        if (bit_get(o->inlist, id))
                return;
        if (o->n_ulist == o->cap_ulist) {
                o->cap_ulist = MX_MAX(o->cap_ulist * 2, 64u);
                o->ulist = xreallocarray(o->ulist, o->cap_ulist, sizeof(uint64_t));
        }
        o->ulist[o->n_ulist++] = id;
        bit_set(o->inlist, id);
}

static inline void cnt_inc(struct opt *o, uint64_t id)
{
        if (o->cnt[id] == INVALID_TUPLE)
                return;
        if (o->cnt[id]++ == 0)
                o->n_unc--;
}

static inline void cnt_dec(struct opt *o, uint64_t id)
{
        if (o->cnt[id] == INVALID_TUPLE)
                return;
        if (--o->cnt[id] == 0) {
                o->n_unc++;
                ulist_push(o, id);
        }
}

/* Add (+1) or remove (-1) every tuple of a row. */
static void row_account(struct opt *o, const int *row, int sign)
{
        unsigned c[MX_COVER_MAX_T];
        for (unsigned j = 0; j < o->t; j++)
                c[j] = j;
        uint64_t r = 0;
        do {
                uint64_t local = 0;
                for (unsigned j = 0; j < o->t; j++)
                        local = local * o->tt->nv[c[j]] + (uint64_t)row[c[j]];
                uint64_t id = o->tt->subset_off[r++] + local;
                if (sign > 0)
                        cnt_inc(o, id);
                else
                        cnt_dec(o, id);
        } while (cover_subset_next(c, o->t, o->n));
        o->g->work += o->tt->n_subsets * OPT_LOOKUP_COST;
}

/*
 * Iterate the t-subsets that contain q: each is q plus a (t-1)-subset of the
 * other parameters. For row, yields the id of the tuple with q = 0 and the
 * stride of q's value.
 */
struct with_q {
        unsigned q, t1;
        size_t k;
        size_t idx[MX_COVER_MAX_T];
        bool done;
};

static void with_q_start(struct opt *o, struct with_q *it, unsigned q)
{
        it->q = q;
        it->t1 = o->t - 1;
        it->k = o->n - 1;
        for (unsigned j = 0; j < it->t1; j++)
                it->idx[j] = j;
        it->done = it->k < it->t1;
}

static void with_q_tuple(struct opt *o, const struct with_q *it, const int *row, uint64_t *base,
                         uint64_t *mult)
{
        const struct cover_tuples *tt = o->tt;
        unsigned c[MX_COVER_MAX_T], pos = 0, m = 0;
        for (unsigned j = 0; j < it->t1; j++) {
                unsigned p = (unsigned)it->idx[j] + (it->idx[j] >= it->q);
                if (m == j && p > it->q)
                        c[m++] = it->q, pos = j;
                c[m++] = p;
        }
        if (m == it->t1)
                c[m++] = it->q, pos = it->t1;
        uint64_t local = 0, mu = 1;
        for (unsigned j = 0; j < o->t; j++)
                local = local * tt->nv[c[j]] + (j == pos ? 0 : (uint64_t)row[c[j]]);
        for (unsigned j = o->t; j-- > pos + 1;)
                mu *= tt->nv[c[j]];
        *base = tt->subset_off[cover_subset_rank(tt, c)] + local;
        *mult = mu;
}

static void with_q_next(struct with_q *it)
{
        unsigned j = 0;
        while (j < it->t1 && it->idx[j] + 1 == (j + 1 < it->t1 ? it->idx[j + 1] : it->k))
                j++;
        if (j == it->t1) {
                it->done = true;
                return;
        }
        it->idx[j]++;
        for (unsigned i = 0; i < j; i++)
                it->idx[i] = i;
}

/* Tuples gained minus tuples lost if row's cell q changed to b. */
static int64_t cell_delta(struct opt *o, const int *row, unsigned q, int b)
{
        int a = row[q];
        int64_t delta = 0;
        struct with_q it;
        for (with_q_start(o, &it, q); !it.done; with_q_next(&it)) {
                uint64_t base, mult;
                with_q_tuple(o, &it, row, &base, &mult);
                uint16_t old = o->cnt[base + (uint64_t)a * mult], new = o->cnt[base + (uint64_t)b * mult];
                delta -= old == 1;
                delta += new == 0;
        }
        o->g->work += o->tt->binom[(o->n - 1) * (o->t + 1) + o->t - 1] * OPT_LOOKUP_COST;
        return delta;
}

static void cell_apply(struct opt *o, int *row, unsigned q, int b)
{
        int a = row[q];
        struct with_q it;
        for (with_q_start(o, &it, q); !it.done; with_q_next(&it)) {
                uint64_t base, mult;
                with_q_tuple(o, &it, row, &base, &mult);
                cnt_dec(o, base + (uint64_t)a * mult);
                cnt_inc(o, base + (uint64_t)b * mult);
        }
        row[q] = b;
        o->g->work += o->tt->binom[(o->n - 1) * (o->t + 1) + o->t - 1] * OPT_LOOKUP_COST;
}

/* A random uncovered tuple, pruning stale list entries on the way. */
static uint64_t pick_uncovered(struct opt *o)
{
        for (;;) {
                size_t i = cover_rng_below(&o->g->rng, o->n_ulist);
                uint64_t id = o->ulist[i];
                if (o->cnt[id] == 0)
                        return id;
                bit_clear(o->inlist, id);
                o->ulist[i] = o->ulist[--o->n_ulist];
        }
}

static bool cell_change_ok(struct opt *o, int *row, const uint8_t *fixed, unsigned q, int b)
{
        if (fixed[q])
                return false;
        if (!o->g->solver)
                return true;
        int a = row[q];
        row[q] = b;
        bool ok = cover_solver_row_ok(o->g->solver, row, q);
        row[q] = a;
        return ok;
}

/* The best non-tabu single-cell move that covers tuple (c, vals); false if no row is one cell away. */
static bool best_move(struct opt *o, const unsigned *c, const int *vals, uint64_t best_unc, size_t *ret_r,
                      unsigned *ret_q)
{
        struct cover_gen *g = o->g;
        int64_t best = INT64_MIN;
        uint64_t ties = 0;
        for (size_t r = 0; r < g->n_rows; r++) {
                int *row = g->rows + r * o->n;
                unsigned miss = 0, q = 0;
                for (unsigned j = 0; j < o->t && miss < 2; j++)
                        if (row[c[j]] != vals[j])
                                miss++, q = j;
                if (miss != 1 || !cell_change_ok(o, row, g->fixed + r * o->n, c[q], vals[q]))
                        continue;
                int64_t d = cell_delta(o, row, c[q], vals[q]);
                bool tabu = o->tabu[r * o->n + c[q]] > o->step;
                if (tabu && (int64_t)o->n_unc - d >= (int64_t)best_unc)
                        continue;
                if (d > best) {
                        best = d;
                        ties = 1;
                } else if (d < best || cover_rng_below(&g->rng, ++ties) != 0)
                        continue;
                *ret_r = r;
                *ret_q = c[q];
        }
        g->work += g->n_rows;
        return best != INT64_MIN;
}

/*
 * Give trial (tuple cells already set) valid values in its other constrained
 * cells, keeping the old value where it still fits; false when impossible.
 */
static bool revalidate(struct opt *o, int *trial, const int *row, const uint8_t *fixed, const unsigned *c)
{
        struct cover_solver *solver = o->g->solver;
        if (cover_solver_row_ok(solver, trial, SIZE_MAX))
                return true;
        for (size_t p = 0; p < o->n; p++) {
                bool in_tuple = false;
                for (unsigned j = 0; j < o->t; j++)
                        in_tuple = in_tuple || c[j] == p;
                if (!in_tuple && !fixed[p] && cover_solver_constrains(solver, p))
                        trial[p] = -1;
        }
        if (!cover_solver_extendable(solver, trial))
                return false;
        for (size_t p = 0; p < o->n; p++) {
                if (trial[p] >= 0)
                        continue;
                unsigned nv = o->tt->nv[p], start = (unsigned)row[p];
                for (unsigned k = 0; k < nv; k++) {
                        trial[p] = (int)((start + k) % nv);
                        if (cover_solver_extendable(solver, trial))
                                break;
                }
        }
        return true;
}

/* Rewrite a random row so it contains the tuple; false when the row's fixed cells or validity forbid it. */
static bool force_tuple(struct opt *o, const unsigned *c, const int *vals)
{
        struct cover_gen *g = o->g;
        size_t r = cover_rng_below(&g->rng, g->n_rows);
        int *row = g->rows + r * o->n;
        const uint8_t *fixed = g->fixed + r * o->n;
        _cleanup_free_ int *trial = xmalloc(o->n * sizeof(int));
        memcpy(trial, row, o->n * sizeof(int));
        for (unsigned j = 0; j < o->t; j++) {
                if (trial[c[j]] != vals[j] && fixed[c[j]])
                        return false;
                trial[c[j]] = vals[j];
        }
        if (!revalidate(o, trial, row, fixed, c))
                return false;
        for (size_t p = 0; p < o->n; p++)
                if (row[p] != trial[p]) {
                        cell_apply(o, row, (unsigned)p, trial[p]);
                        o->tabu[r * o->n + p] = o->step + TABU_TENURE;
                }
        return true;
}

/* Local search until every valid tuple is covered again; false when it stalls or runs out of work. */
static bool repair(struct opt *o, uint64_t max_stall)
{
        struct cover_gen *g = o->g;
        uint64_t best_unc = o->n_unc, stall = 0;
        while (o->n_unc > 0) {
                if (g->work >= g->work_limit || stall >= max_stall)
                        return false;
                o->step++;
                unsigned c[MX_COVER_MAX_T];
                int vals[MX_COVER_MAX_T];
                cover_tuple_decode(o->tt, pick_uncovered(o), c, vals);
                size_t r;
                unsigned q;
                if (best_move(o, c, vals, best_unc, &r, &q)) {
                        int *row = g->rows + r * o->n;
                        int b = vals[0];
                        for (unsigned j = 0; j < o->t; j++)
                                if (c[j] == q)
                                        b = vals[j];
                        cell_apply(o, row, q, b);
                        o->tabu[r * o->n + q] = o->step + TABU_TENURE;
                } else
                        (void)force_tuple(o, c, vals);
                if (o->n_unc < best_unc) {
                        best_unc = o->n_unc;
                        stall = 0;
                } else
                        stall++;
        }
        return true;
}

/* Tuples only row r covers. */
static uint64_t row_unique(struct opt *o, const int *row)
{
        unsigned c[MX_COVER_MAX_T];
        for (unsigned j = 0; j < o->t; j++)
                c[j] = j;
        uint64_t r = 0, unique = 0;
        do {
                uint64_t local = 0;
                for (unsigned j = 0; j < o->t; j++)
                        local = local * o->tt->nv[c[j]] + (uint64_t)row[c[j]];
                unique += o->cnt[o->tt->subset_off[r++] + local] == 1;
        } while (cover_subset_next(c, o->t, o->n));
        o->g->work += o->tt->n_subsets * OPT_LOOKUP_COST;
        return unique;
}

/* Take out the optional row whose tuples are least often covered only by it. */
static void remove_row(struct opt *o)
{
        struct cover_gen *g = o->g;
        size_t victim = g->n_required;
        uint64_t best = UINT64_MAX, ties = 0;
        for (size_t r = g->n_required; r < g->n_rows; r++) {
                uint64_t u = row_unique(o, g->rows + r * o->n);
                if (u < best) {
                        best = u;
                        victim = r;
                        ties = 1;
                } else if (u == best && cover_rng_below(&g->rng, ++ties) == 0)
                        victim = r;
        }
        row_account(o, g->rows + victim * o->n, -1);
        size_t last = g->n_rows - 1;
        memmove(g->rows + victim * o->n, g->rows + last * o->n, o->n * sizeof(int));
        memmove(g->fixed + victim * o->n, g->fixed + last * o->n, o->n);
        memmove(o->tabu + victim * o->n, o->tabu + last * o->n, o->n * sizeof(uint64_t));
        g->n_rows--;
}

static void opt_init(struct opt *o, struct cover_gen *g)
{
        *o = (struct opt){ .g = g, .tt = &g->tt, .n = g->n, .t = g->t };
        o->cnt = xcalloc(o->tt->n_tuples, sizeof(uint16_t));
        for (uint64_t id = 0; id < o->tt->n_tuples; id++)
                if (!bit_get(o->tt->valid, id))
                        o->cnt[id] = INVALID_TUPLE;
        o->inlist = xcalloc((o->tt->n_tuples + 63) / 64, sizeof(uint64_t));
        o->tabu = xcalloc(g->n_rows * g->n, sizeof(uint64_t));
        for (size_t r = 0; r < g->n_rows; r++)
                row_account(o, g->rows + r * g->n, +1);
        o->n_unc = 0;
}

static void opt_done(struct opt *o)
{
        free(o->cnt);
        free(o->ulist);
        free(o->inlist);
        free(o->tabu);
}

void cover_optimise(struct cover_gen *g)
{
        if (g->n_rows <= g->n_required || g->n_rows > MAX_OPT_ROWS || g->n_rows * g->n > MAX_OPT_CELLS ||
            g->work >= g->work_limit)
                return;
        struct opt o;
        opt_init(&o, g);
        size_t best_n = g->n_rows;
        _cleanup_free_ int *best = xmalloc(best_n * g->n * sizeof(int));
        memcpy(best, g->rows, best_n * g->n * sizeof(int));

        /* a repair that has not improved for this many steps is given up */
        uint64_t max_stall = MX_MAX((uint64_t)g->n_rows * g->n * 4, 5000u);
        while (g->n_rows > g->n_required && g->n_rows > g->tt.max_subset_valid && g->work < g->work_limit) {
                remove_row(&o);
                if (!repair(&o, max_stall))
                        break;
                best_n = g->n_rows;
                memcpy(best, g->rows, best_n * g->n * sizeof(int));
        }
        /* rows past best_n still hold their fixed flags; the kept rows are a prefix of the same layout */
        g->n_rows = best_n;
        memcpy(g->rows, best, best_n * g->n * sizeof(int));
        opt_done(&o);
}
