/* SPDX-License-Identifier: MIT */
/*
 * The constraint solver behind covering arrays: decides whether a partial row
 * can be completed without matching any forbidden pattern.
 *
 * Only parameters that some pattern mentions take part; each keeps a domain
 * (a bitset of values still possible). Propagation is the usual unit rule: a
 * pattern whose terms are all certainly satisfied but one forces that one
 * parameter out of the term's set; one whose terms are all certain is a
 * conflict. The search then splits a live pattern on one of its undecided
 * terms (inside the set, or outside it), so every branch strictly shrinks a
 * domain and the search ends. Real matrices have a handful of patterns over a
 * few parameters, where this answers in microseconds.
 */
#include "cover-solve.h"
#include "util.h"

struct solve_term {
        uint32_t slot; /* index of the parameter among the constrained ones */
        uint64_t set;
};

struct solve_forbid {
        uint32_t first, n_terms;
};

struct cover_solver {
        size_t n;
        bool never; /* some pattern matches every row */

        struct solve_term *terms;
        struct solve_forbid *forbids;
        size_t n_forbids;

        int32_t *slot_of;   /* parameter -> slot, -1 when unconstrained */
        uint32_t *param_of; /* slot -> parameter */
        uint64_t *full;     /* slot -> all values */
        size_t n_slots;

        uint32_t *pf_start; /* parameter -> first index in pf_list (n + 1 entries) */
        uint32_t *pf_list;  /* forbid indices, grouped by parameter */

        uint64_t *stack; /* search scratch: one domain vector per level */
        size_t stack_levels;
};

static uint64_t full_mask(unsigned nv)
{
        return nv >= 64 ? UINT64_MAX : (UINT64_C(1) << nv) - 1;
}

struct cover_solver *cover_solver_free(struct cover_solver *s)
{
        if (!s)
                return NULL;
        free(s->terms);
        free(s->forbids);
        free(s->slot_of);
        free(s->param_of);
        free(s->full);
        free(s->pf_start);
        free(s->pf_list);
        free(s->stack);
        free(s);
        return NULL;
}

/* Merge one pattern's terms per parameter (a conjunction intersects the sets); false if it can never match.
 */
static bool normalise_forbid(const struct mx_cover_model *m, const struct mx_cover_forbid *f, uint64_t *sets,
                             bool *touched)
{
        for (size_t j = 0; j < f->n_terms; j++) {
                unsigned p = f->terms[j].param;
                uint64_t set = f->terms[j].set & full_mask(m->n_values[p]);
                sets[p] = touched[p] ? (sets[p] & set) : set;
                touched[p] = true;
        }
        for (size_t j = 0; j < f->n_terms; j++)
                if (sets[f->terms[j].param] == 0)
                        return false;
        return true;
}

/* Record the normalised pattern f, dropping terms that every value satisfies. */
static void add_forbid(struct cover_solver *s, const struct mx_cover_model *m,
                       const struct mx_cover_forbid *f, uint64_t *sets, bool *touched, size_t *n_terms)
{
        struct solve_forbid *sf = &s->forbids[s->n_forbids];
        sf->first = (uint32_t)*n_terms;
        sf->n_terms = 0;
        for (size_t j = 0; j < f->n_terms; j++) {
                unsigned p = f->terms[j].param;
                if (!touched[p])
                        continue; /* a repeated parameter, already merged */
                touched[p] = false;
                if (sets[p] == full_mask(m->n_values[p]))
                        continue;
                if (s->slot_of[p] < 0) {
                        s->slot_of[p] = (int32_t)s->n_slots;
                        s->param_of[s->n_slots] = p;
                        s->full[s->n_slots] = full_mask(m->n_values[p]);
                        s->n_slots++;
                }
                s->terms[*n_terms] = (struct solve_term){ (uint32_t)s->slot_of[p], sets[p] };
                (*n_terms)++;
                sf->n_terms++;
        }
        if (sf->n_terms == 0)
                s->never = true;
        else
                s->n_forbids++;
}

/* Index the patterns by parameter so a row check after one cell change looks at few of them. */
static void index_by_param(struct cover_solver *s)
{
        s->pf_start = xcalloc(s->n + 1, sizeof(uint32_t));
        for (size_t f = 0; f < s->n_forbids; f++)
                for (uint32_t j = 0; j < s->forbids[f].n_terms; j++)
                        s->pf_start[s->param_of[s->terms[s->forbids[f].first + j].slot] + 1]++;
        for (size_t p = 0; p < s->n; p++)
                s->pf_start[p + 1] += s->pf_start[p];
        s->pf_list = xcalloc(MX_MAX(s->pf_start[s->n], 1u), sizeof(uint32_t));
        _cleanup_free_ uint32_t *fill = xcalloc(s->n, sizeof(uint32_t));
        for (size_t f = 0; f < s->n_forbids; f++)
                for (uint32_t j = 0; j < s->forbids[f].n_terms; j++) {
                        size_t p = s->param_of[s->terms[s->forbids[f].first + j].slot];
                        s->pf_list[s->pf_start[p] + fill[p]++] = (uint32_t)f;
                }
}

struct cover_solver *cover_solver_new(const struct mx_cover_model *m)
{
        size_t total = 0;
        for (size_t f = 0; f < m->n_forbidden; f++)
                total += m->forbidden[f].n_terms;
        if (m->n_forbidden == 0)
                return NULL;

        struct cover_solver *s = xcalloc(1, sizeof(*s));
        s->n = m->n_params;
        s->terms = xcalloc(MX_MAX(total, 1u), sizeof(*s->terms));
        s->forbids = xcalloc(m->n_forbidden, sizeof(*s->forbids));
        s->slot_of = xmalloc(s->n * sizeof(int32_t));
        for (size_t p = 0; p < s->n; p++)
                s->slot_of[p] = -1;
        s->param_of = xcalloc(s->n, sizeof(uint32_t));
        s->full = xcalloc(s->n, sizeof(uint64_t));

        _cleanup_free_ uint64_t *sets = xcalloc(s->n, sizeof(uint64_t));
        _cleanup_free_ bool *touched = xcalloc(s->n, sizeof(bool));
        size_t n_terms = 0;
        for (size_t f = 0; f < m->n_forbidden; f++) {
                bool live = normalise_forbid(m, &m->forbidden[f], sets, touched);
                if (live) {
                        add_forbid(s, m, &m->forbidden[f], sets, touched, &n_terms);
                        continue;
                }
                for (size_t j = 0; j < m->forbidden[f].n_terms; j++)
                        touched[m->forbidden[f].terms[j].param] = false;
        }
        if (s->n_forbids == 0 && !s->never)
                return cover_solver_free(s);
        index_by_param(s);
        return s;
}

bool cover_solver_constrains(const struct cover_solver *s, size_t p)
{
        return s && (s->never || s->slot_of[p] >= 0);
}

static bool forbid_matches_row(const struct cover_solver *s, const struct solve_forbid *f, const int *row)
{
        for (uint32_t j = 0; j < f->n_terms; j++) {
                const struct solve_term *tm = &s->terms[f->first + j];
                if (!((tm->set >> row[s->param_of[tm->slot]]) & 1))
                        return false;
        }
        return true;
}

bool cover_solver_row_ok(const struct cover_solver *s, const int *row, size_t p)
{
        if (!s)
                return true;
        if (s->never)
                return false;
        if (p < s->n) {
                for (uint32_t k = s->pf_start[p]; k < s->pf_start[p + 1]; k++)
                        if (forbid_matches_row(s, &s->forbids[s->pf_list[k]], row))
                                return false;
                return true;
        }
        for (size_t f = 0; f < s->n_forbids; f++)
                if (forbid_matches_row(s, &s->forbids[f], row))
                        return false;
        return true;
}

/*
 * Apply the unit rule to a fixed point. Returns false on a conflict; otherwise
 * *ret_split is a live pattern with two or more undecided terms (or -1 when
 * every pattern is already impossible, so any completion of the domains works).
 */
static bool propagate(const struct cover_solver *s, uint64_t *d, ssize_t *ret_split)
{
        bool changed = true;
        ssize_t split = -1;
        while (changed) {
                changed = false;
                split = -1;
                for (size_t f = 0; f < s->n_forbids; f++) {
                        const struct solve_forbid *sf = &s->forbids[f];
                        uint32_t n_open = 0, open = 0;
                        bool dead = false;
                        for (uint32_t j = 0; j < sf->n_terms; j++) {
                                const struct solve_term *tm = &s->terms[sf->first + j];
                                uint64_t in = d[tm->slot] & tm->set;
                                if (in == 0) {
                                        dead = true;
                                        break;
                                }
                                if (in != d[tm->slot]) {
                                        n_open++;
                                        open = j;
                                }
                        }
                        if (dead)
                                continue;
                        if (n_open == 0)
                                return false;
                        if (n_open == 1) {
                                const struct solve_term *tm = &s->terms[sf->first + open];
                                d[tm->slot] &= ~tm->set;
                                changed = true;
                        } else if (split < 0)
                                split = (ssize_t)f;
                }
        }
        *ret_split = split;
        return true;
}

/* Depth-first search over splits; level indexes the scratch stack. */
static bool search(struct cover_solver *s, size_t level)
{
        uint64_t *d = s->stack + level * s->n_slots;
        ssize_t split;
        if (!propagate(s, d, &split))
                return false;
        if (split < 0)
                return true;

        if (level + 2 > s->stack_levels) {
                s->stack_levels = (level + 2) * 2;
                s->stack = xreallocarray(s->stack, s->stack_levels * s->n_slots, sizeof(uint64_t));
                d = s->stack + level * s->n_slots;
        }
        const struct solve_forbid *sf = &s->forbids[split];
        const struct solve_term *tm = NULL;
        for (uint32_t j = 0; j < sf->n_terms; j++) {
                tm = &s->terms[sf->first + j];
                if ((d[tm->slot] & tm->set) != d[tm->slot])
                        break;
        }
        for (int branch = 0; branch < 2; branch++) {
                d = s->stack + level * s->n_slots;
                uint64_t *next = d + s->n_slots;
                memcpy(next, d, s->n_slots * sizeof(uint64_t));
                next[tm->slot] &= branch == 0 ? ~tm->set : tm->set;
                if (search(s, level + 1))
                        return true;
        }
        return false;
}

bool cover_solver_extendable(struct cover_solver *s, const int *partial)
{
        if (!s)
                return true;
        if (s->never)
                return false;
        if (s->stack_levels == 0) {
                s->stack_levels = 16;
                s->stack = xcalloc(s->stack_levels * s->n_slots, sizeof(uint64_t));
        }
        for (size_t k = 0; k < s->n_slots; k++) {
                int v = partial[s->param_of[k]];
                s->stack[k] = v >= 0 ? UINT64_C(1) << v : s->full[k];
        }
        return search(s, 0);
}
