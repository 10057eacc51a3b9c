/* SPDX-License-Identifier: MIT */
/*
 * t-way covering arrays under constraints: the public entry points, the top
 * of the folder. Input checks live here; the work is split over the files
 * below, each calling only lower ones: cover-model.c (the model's shape),
 * cover-solve.c (can a partial row be completed?), cover-tuples.c (tuple
 * numbering and validity), cover-build.c (greedy construction) and
 * cover-optimise.c (row removal and repair). cover-verify.c, the independent
 * proof of coverage, stands beside this file.
 */
#include "cover.h"
#include "cover-build.h"
#include "cover-optimise.h"
#include "util.h"

#include <inttypes.h>

static bool row_in_range(const struct mx_cover_model *m, const int *row, bool allow_free)
{
        for (size_t p = 0; p < m->n_params; p++)
                if (row[p] < (allow_free ? -1 : 0) || row[p] >= (int)m->n_values[p])
                        return false;
        return true;
}

bool mx_cover_row_valid(const struct mx_cover_model *m, const int *row)
{
        return row_in_range(m, row, false) && cover_row_allowed(m, row, NULL);
}

bool mx_cover_extendable(const struct mx_cover_model *m, const int *partial)
{
        if (m->n_forbidden == 0)
                return true;
        if (!row_in_range(m, partial, true))
                return false;
        struct cover_solver *s = cover_solver_new(m);
        bool ok = cover_solver_extendable(s, partial);
        cover_solver_free(s);
        return ok;
}

int mx_cover_count_tuples(const struct mx_cover_model *m, unsigned t, uint64_t *ret_count)
{
        int r = cover_check_model(m, NULL);
        if (r < 0)
                return r;
        if (t < 1 || t > MX_COVER_MAX_T)
                return -EINVAL;
        t = (unsigned)MX_MIN((size_t)t, m->n_params);

        struct cover_tuples tt;
        r = cover_tuples_init(&tt, m->n_params, t, m->n_values, 0);
        if (r < 0)
                return r;
        struct cover_solver *s = cover_solver_new(m);
        _cleanup_free_ int *free_row = xmalloc(m->n_params * sizeof(int));
        for (size_t p = 0; p < m->n_params; p++)
                free_row[p] = -1;
        if (cover_solver_extendable(s, free_row))
                cover_tuples_mark_valid(&tt, s);
        else
                tt.n_valid = 0;
        *ret_count = tt.n_valid;
        cover_solver_free(s);
        cover_tuples_done(&tt);
        return 0;
}

static int check_options(const struct mx_cover_model *m, const struct mx_cover_options *opt, char **reterr)
{
        if (opt->t < 1 || opt->t > MX_COVER_MAX_T) {
                if (reterr)
                        *reterr = xasprintf("strength %u is outside 1..%d", opt->t, MX_COVER_MAX_T);
                return -EINVAL;
        }
        if (opt->n_required > MX_COVER_MAX_REQUIRED) {
                if (reterr)
                        *reterr = xasprintf("%zu required rows, more than %d", opt->n_required,
                                            MX_COVER_MAX_REQUIRED);
                return -E2BIG;
        }
        if (opt->n_required > 0 && !opt->required) {
                if (reterr)
                        *reterr = xstrdup("required rows announced but not given");
                return -EINVAL;
        }
        for (size_t r = 0; r < opt->n_required; r++)
                for (size_t p = 0; p < m->n_params; p++) {
                        int v = opt->required[r * m->n_params + p];
                        if (v < -1 || v >= (int)m->n_values[p]) {
                                if (reterr)
                                        *reterr = xasprintf("required row %zu: parameter %zu has value %d, "
                                                            "not -1 (free) or 0..%u",
                                                            r, p, v, m->n_values[p] - 1);
                                return -EINVAL;
                        }
                }
        return 0;
}

static void gen_done(struct cover_gen *g)
{
        cover_solver_free(g->solver);
        cover_tuples_done(&g->tt);
        free(g->rows);
        free(g->fixed);
        free(g->uncov);
        free(g->unc_subset);
        free(g->unc_pv);
}

/*
 * The default effort grows with the number of valid tuples (small models get
 * many restarts, large ones one construction and what optimisation fits) up to
 * MX_COVER_DEFAULT_EFFORT units.
 */
static uint64_t default_work(const struct cover_tuples *tt)
{
        uint64_t w = tt->n_valid * 3000;
        return MX_MIN(MX_MAX(w, 16 * MX_COVER_EFFORT_UNIT), MX_COVER_DEFAULT_EFFORT * MX_COVER_EFFORT_UNIT);
}

/* Solver, satisfiability and the tuple table: everything the construction needs. */
static int gen_setup(struct cover_gen *g, const struct mx_cover_model *m, const struct mx_cover_options *opt,
                     char **reterr)
{
        *g = (struct cover_gen){ .m = m, .n = m->n_params };
        g->t = (unsigned)MX_MIN((size_t)opt->t, m->n_params);
        g->solver = cover_solver_new(m);
        cover_rng_seed(&g->rng, opt->seed);

        _cleanup_free_ int *free_row = xmalloc(g->n * sizeof(int));
        for (size_t p = 0; p < g->n; p++)
                free_row[p] = -1;
        if (!cover_solver_extendable(g->solver, free_row)) {
                if (reterr)
                        *reterr = xstrdup("no row avoids every forbidden pattern");
                return -ENOENT;
        }
        /* room for the optimiser's per-tuple counters too (two bytes and a bit) */
        int r = cover_tuples_init(&g->tt, g->n, g->t, m->n_values, 3);
        if (r < 0) {
                if (reterr)
                        *reterr = xasprintf("the %u-tuple table of %zu parameters would exceed %" PRIu64
                                            " MiB",
                                            g->t, g->n, MX_COVER_MAX_TABLE_BYTES >> 20);
                return r;
        }
        cover_tuples_mark_valid(&g->tt, g->solver);
        g->work_limit = opt->effort ? opt->effort * MX_COVER_EFFORT_UNIT : default_work(&g->tt);
        return 0;
}

int mx_cover_generate(const struct mx_cover_model *m, const struct mx_cover_options *opt, int **ret_rows,
                      size_t *ret_n_rows, char **reterr)
{
        int r = cover_check_model(m, reterr);
        if (r < 0)
                return r;
        r = check_options(m, opt, reterr);
        if (r < 0)
                return r;

        struct cover_gen g;
        r = gen_setup(&g, m, opt, reterr);
        if (r < 0) {
                gen_done(&g);
                return r;
        }

        /* construct and optimise again while effort remains, keeping the shortest array */
        _cleanup_free_ int *best = NULL;
        size_t best_n = SIZE_MAX;
        for (;;) {
                r = cover_build(&g, opt->required, opt->n_required, reterr);
                if (r < 0) {
                        gen_done(&g);
                        return r;
                }
                cover_optimise(&g);
                if (g.n_rows < best_n) {
                        best_n = g.n_rows;
                        free(best);
                        best = xmalloc(MX_MAX(best_n, 1u) * g.n * sizeof(int));
                        memcpy(best, g.rows, best_n * g.n * sizeof(int));
                }
                if (g.work >= g.work_limit ||
                    best_n <= MX_MAX(g.tt.max_subset_valid, (uint64_t)opt->n_required))
                        break;
        }
        free(g.rows);
        g.rows = TAKE_PTR(best);
        g.n_rows = best_n;

        *ret_rows = xreallocarray(TAKE_PTR(g.rows), MX_MAX(g.n_rows, 1u), g.n * sizeof(int));
        *ret_n_rows = g.n_rows;
        gen_done(&g);
        return 0;
}
