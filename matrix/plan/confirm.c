/* SPDX-License-Identifier: MIT */
/* Follow-up runs for attribution candidates (confirm.h). */
#include "confirm.h"

struct pending {
        int *configs; /* n x n_axes */
        char **reasons;
        size_t n, allocated;
        char **notes;
};

static void pending_add(const struct mx_matrix *m, struct pending *pd, const int *config, const char *reason)
{
        size_t na = MX_MAX(m->n_axes, (size_t)1);

        if (pd->n + 1 > pd->allocated) {
                pd->allocated = MX_MAX(pd->allocated * 2, (size_t)16);
                pd->configs = xreallocarray(pd->configs, pd->allocated, na * sizeof(int));
        }
        memcpy(pd->configs + pd->n * na, config, m->n_axes * sizeof(int));
        strv_push(&pd->reasons, reason);
        pd->n++;
}

static bool valid(const struct mx_matrix *m, const int *config)
{
        return mx_matrix_excluded(m, config) < 0 && mx_matrix_broken_rule(m, config) < 0;
}

/* A tried configuration in the matrix's terms; false when it names what the matrix does not know. */
static bool config_from_json(const struct mx_matrix *m, json_t *j, int *config)
{
        const char *k;
        json_t *v;

        for (size_t a = 0; a < m->n_axes; a++)
                config[a] = -1;
        json_object_foreach (j, k, v) {
                int a = mx_matrix_axis_index(m, k);
                int vi = a >= 0 ? mx_matrix_value_index(&m->axes[a], strempty(json_string_value(v))) : -1;

                if (vi < 0)
                        return false;
                config[a] = vi;
        }
        return true;
}

static bool holds(const int *config, const int *axes, const int *values, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                if (config[axes[i]] != values[i])
                        return false;
        return true;
}

/* The configurations tried so far (in the matrix's indices) and which of them passed. */
struct tried {
        const int *configs; /* n x n_axes */
        const bool *passed;
        size_t n;
};

/* A candidate set S: axes[i] takes values[i] for i < n; text names it for people. */
struct cand {
        const int *axes, *values;
        unsigned n;
        const char *text;
};

/* The work on one candidate set: what it reads, what it adds, and what it has seen so far. */
struct confirm {
        const struct mx_matrix *m;
        const struct tried *tr;
        const struct cand *s;
        struct pending *pd;
        const int *base; /* the first tried configuration that holds S */
        uint64_t *seen;  /* per axis, the values tried with S (bit v = value v) */
        int *row;        /* scratch configuration */
        char *reason;    /* "confirm: S" */
        unsigned rows;   /* runs added for S so far */
};

/* Note every value tried together with S and the first configuration holding S; false when none does. */
static bool confirm_scan(struct confirm *c)
{
        const struct mx_matrix *m = c->m;

        for (size_t i = 0; i < c->tr->n; i++) {
                const int *cfg = c->tr->configs + i * m->n_axes;

                if (!holds(cfg, c->s->axes, c->s->values, c->s->n))
                        continue;
                if (!c->base)
                        c->base = cfg;
                for (size_t a = 0; a < m->n_axes; a++)
                        if (cfg[a] >= 0)
                                c->seen[a] |= UINT64_C(1) << cfg[a];
        }
        return c->base != NULL;
}

/* c->row := tried configuration i with S added. */
static void row_with_set(struct confirm *c, size_t i)
{
        memcpy(c->row, c->tr->configs + i * c->m->n_axes, c->m->n_axes * sizeof(int));
        for (unsigned q = 0; q < c->s->n; q++)
                c->row[c->s->axes[q]] = c->s->values[q];
}

/* The unused passing configuration that stays valid with S added and brings most values not picked yet. */
static size_t best_passing(struct confirm *c, bool *used, const uint64_t *picked)
{
        size_t best = SIZE_MAX, best_gain = 0;

        for (size_t i = 0; i < c->tr->n; i++) {
                size_t gain = 0;

                if (!c->tr->passed[i] || used[i])
                        continue;
                row_with_set(c, i);
                if (!valid(c->m, c->row)) {
                        used[i] = true;
                        continue;
                }
                for (size_t a = 0; a < c->m->n_axes; a++)
                        gain += c->row[a] >= 0 && !(picked[a] & (UINT64_C(1) << c->row[a]));
                if (best == SIZE_MAX || gain > best_gain) {
                        best = i;
                        best_gain = gain;
                }
        }
        return best;
}

/*
 * S added to configurations that passed: the one change is S. The bases are picked to
 * differ from each other most (a value no base picked so far has counts), since S's
 * failing runs may owe their failure to another cause they share.
 */
static void confirm_on_passing(struct confirm *c)
{
        size_t na = MX_MAX(c->m->n_axes, (size_t)1);
        _cleanup_free_ bool *used = xcalloc(MX_MAX(c->tr->n, (size_t)1), sizeof(bool));
        _cleanup_free_ uint64_t *picked = xcalloc(na, sizeof(uint64_t));

        while (c->rows < MX_CONFIRM_MAX_PASSING) {
                size_t best = best_passing(c, used, picked);

                if (best == SIZE_MAX)
                        break;
                used[best] = true;
                row_with_set(c, best);
                pending_add(c->m, c->pd, c->row, c->reason);
                c->rows++;
                for (size_t a = 0; a < c->m->n_axes; a++)
                        if (c->row[a] >= 0) {
                                c->seen[a] |= UINT64_C(1) << c->row[a];
                                picked[a] |= UINT64_C(1) << c->row[a];
                        }
        }
}

static bool set_has_axis(const struct cand *s, size_t a)
{
        bool in_set = false;

        for (unsigned i = 0; i < s->n; i++)
                in_set = in_set || s->axes[i] == (int)a;
        return in_set;
}

/* Move axis a of c->row to the first product value not yet tried with S that keeps the row valid. */
static bool move_axis(struct confirm *c, size_t a)
{
        const struct mx_matrix_axis *ax = &c->m->axes[a];

        for (size_t v = 0; v < ax->n_values; v++) {
                int old = c->row[a];

                if (!(ax->product_set & (UINT64_C(1) << v)) || (c->seen[a] & (UINT64_C(1) << v)))
                        continue;
                c->row[a] = (int)v;
                if (valid(c->m, c->row))
                        return true;
                c->row[a] = old;
        }
        return false;
}

/* Holding S, every other axis moved to a value not yet tried with S, as far as the rules allow. */
static void confirm_vary_others(struct confirm *c)
{
        const struct mx_matrix *m = c->m;

        while (c->rows < MX_CONFIRM_MAX_ROWS) {
                bool moved = false;

                memcpy(c->row, c->base, m->n_axes * sizeof(int));
                for (size_t a = 0; a < m->n_axes; a++) {
                        if (set_has_axis(c->s, a) || !m->axes[a].product)
                                continue;
                        if (move_axis(c, a))
                                moved = true;
                }
                if (!moved)
                        break;
                pending_add(m, c->pd, c->row, c->reason);
                c->rows++;
                for (size_t a = 0; a < m->n_axes; a++)
                        if (c->row[a] >= 0)
                                c->seen[a] |= UINT64_C(1) << c->row[a];
        }
}

/* What S's element i yields to in c->row: the baseline's value, else the first the rules allow; -1: none. */
static int drop_pick(struct confirm *c, unsigned i)
{
        const struct mx_matrix *m = c->m;
        const struct mx_matrix_axis *ax = &m->axes[c->s->axes[i]];
        int pick = -1;

        for (int pass = 0; pass < 2 && pick < 0; pass++)
                for (size_t v = 0; v < ax->n_values && pick < 0; v++) {
                        int cand = pass == 0 ? m->baseline[c->s->axes[i]] : (int)v;

                        if (cand < 0 || cand == c->s->values[i])
                                continue;
                        c->row[c->s->axes[i]] = cand;
                        if (valid(m, c->row))
                                pick = cand;
                        if (pass == 0)
                                break;
                }
        return pick;
}

/* S minus one element each: the baseline's value there, else the first other one the rules allow. */
static void confirm_drop_each(struct confirm *c)
{
        const struct cand *s = c->s;

        for (unsigned i = 0; i < s->n; i++) {
                const struct mx_matrix_axis *ax = &c->m->axes[s->axes[i]];
                const char *without = ax->values[s->values[i]].name;
                _cleanup_free_ char *r = NULL;
                int pick;

                memcpy(c->row, c->base, c->m->n_axes * sizeof(int));
                pick = drop_pick(c, i);
                if (pick < 0) {
                        strv_consume(&c->pd->notes, xasprintf("%s: no valid configuration without %s=%s",
                                                              s->text, ax->name, without));
                        continue;
                }
                c->row[s->axes[i]] = pick;
                r = xasprintf("confirm: %s (without %s=%s: %s=%s)", s->text, ax->name, without, ax->name,
                              ax->values[pick].name);
                pending_add(c->m, c->pd, c->row, r);
        }
}

/* The runs for one candidate set (already in the matrix's indices). */
static void confirm_set(const struct mx_matrix *m, const struct tried *tr, const struct cand *s,
                        struct pending *pd)
{
        size_t na = MX_MAX(m->n_axes, (size_t)1);
        _cleanup_free_ uint64_t *seen = xcalloc(na, sizeof(uint64_t));
        _cleanup_free_ int *row = mx_config_new(m);
        _cleanup_free_ char *reason = xasprintf("confirm: %s", s->text);
        struct confirm c = {
                .m = m, .tr = tr, .s = s, .pd = pd, .seen = seen, .row = row, .reason = reason,
        };

        if (!confirm_scan(&c))
                return;
        confirm_on_passing(&c);
        confirm_vary_others(&c);
        confirm_drop_each(&c);
}

int mx_confirm_plan(const struct mx_matrix *m, const struct mx_attrib_result *res, json_t *tried_json,
                    const char *input, size_t max_runs, struct mx_plan **ret, char **reterr)
{
        size_t na = MX_MAX(m->n_axes, (size_t)1), n_tried = 0, n_sets = 0, i;
        _cleanup_free_ int *tried =
                xcalloc(MX_MAX(json_array_size(tried_json), (size_t)1) * na, sizeof(int));
        _cleanup_free_ bool *passed = xcalloc(MX_MAX(json_array_size(tried_json), (size_t)1), sizeof(bool));
        struct pending pd = {};
        json_t *c;
        int r;

        json_array_foreach (tried_json, i, c)
                if (config_from_json(m, json_object_get(c, "config"), tried + n_tried * na)) {
                        passed[n_tried] = json_is_true(json_object_get(c, "pass"));
                        n_tried++;
                }
        struct tried tr = { .configs = tried, .passed = passed, .n = n_tried };
        for (size_t k = 0; k < res->n_classes && n_sets < MX_CONFIRM_MAX_SETS; k++)
                for (size_t s = 0; s < res->classes[k].n_sets && n_sets < MX_CONFIRM_MAX_SETS; s++) {
                        const struct mx_attrib_set *set = &res->classes[k].sets[s];
                        _cleanup_free_ char *text = mx_attrib_set_describe(res, set);
                        int axes[MX_ATTRIB_MAX_T], values[MX_ATTRIB_MAX_T];
                        bool known = true;

                        for (unsigned q = 0; q < set->n; q++) {
                                axes[q] = mx_matrix_axis_index(m, res->axes[set->pairs[q].axis]);
                                values[q] = axes[q] >= 0
                                                    ? mx_matrix_value_index(&m->axes[axes[q]],
                                                                            res->values[set->pairs[q].axis]
                                                                                       [set->pairs[q].value])
                                                    : -1;
                                known = known && values[q] >= 0;
                        }
                        if (!known) {
                                strv_consume(&pd.notes,
                                             xasprintf("%s: not in the matrix %s", text, m->path));
                                continue;
                        }
                        confirm_set(m, &tr, &(struct cand){ axes, values, set->n, text }, &pd);
                        n_sets++;
                }
        if (pd.n == 0) {
                *reterr = xstrdup(res->n_classes == 0 ? "the job has no failures to confirm"
                                                      : "no candidate set gives a follow-up run");
                r = -ENOENT;
        } else {
                r = mx_plan_build_explicit(m, input, pd.configs, pd.reasons, pd.n, max_runs, ret, reterr);
                if (r >= 0)
                        for (size_t k = 0; pd.notes && pd.notes[k]; k++)
                                strv_push(&(*ret)->notes, pd.notes[k]);
        }
        free(pd.configs);
        strv_free(pd.reasons);
        strv_free(pd.notes);
        return r;
}
