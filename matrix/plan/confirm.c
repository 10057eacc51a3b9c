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

/* The runs for one candidate set (already in the matrix's indices). */
static void confirm_set(const struct mx_matrix *m, const int *tried, const bool *passed, size_t n_tried,
                        const int *axes, const int *values, unsigned n, const char *text, struct pending *pd)
{
        _cleanup_free_ bool *used = xcalloc(MX_MAX(n_tried, (size_t)1), sizeof(bool));
        unsigned rows = 0;
        _cleanup_free_ uint64_t *seen = xcalloc(MX_MAX(m->n_axes, (size_t)1), sizeof(uint64_t));
        _cleanup_free_ uint64_t *picked = xcalloc(MX_MAX(m->n_axes, (size_t)1), sizeof(uint64_t));
        _cleanup_free_ int *row = mx_config_new(m);
        _cleanup_free_ char *reason = xasprintf("confirm: %s", text);
        const int *base = NULL;

        for (size_t i = 0; i < n_tried; i++) {
                const int *c = tried + i * m->n_axes;

                if (!holds(c, axes, values, n))
                        continue;
                if (!base)
                        base = c;
                for (size_t a = 0; a < m->n_axes; a++)
                        if (c[a] >= 0)
                                seen[a] |= UINT64_C(1) << c[a];
        }
        if (!base)
                return;
        /*
         * S added to configurations that passed: the one change is S. The bases are picked to
         * differ from each other most (a value no base picked so far has counts), since S's
         * failing runs may owe their failure to another cause they share.
         */
        while (rows < MX_CONFIRM_MAX_PASSING) {
                size_t best = SIZE_MAX, best_gain = 0;

                for (size_t i = 0; i < n_tried; i++) {
                        size_t gain = 0;

                        if (!passed[i] || used[i])
                                continue;
                        memcpy(row, tried + i * m->n_axes, m->n_axes * sizeof(int));
                        for (unsigned q = 0; q < n; q++)
                                row[axes[q]] = values[q];
                        if (!valid(m, row)) {
                                used[i] = true;
                                continue;
                        }
                        for (size_t a = 0; a < m->n_axes; a++)
                                gain += row[a] >= 0 && !(picked[a] & (UINT64_C(1) << row[a]));
                        if (best == SIZE_MAX || gain > best_gain) {
                                best = i;
                                best_gain = gain;
                        }
                }
                if (best == SIZE_MAX)
                        break;
                used[best] = true;
                memcpy(row, tried + best * m->n_axes, m->n_axes * sizeof(int));
                for (unsigned q = 0; q < n; q++)
                        row[axes[q]] = values[q];
                pending_add(m, pd, row, reason);
                rows++;
                for (size_t a = 0; a < m->n_axes; a++)
                        if (row[a] >= 0) {
                                seen[a] |= UINT64_C(1) << row[a];
                                picked[a] |= UINT64_C(1) << row[a];
                        }
        }
        /* Holding S, every other axis moved to a value not yet tried with S, as far as the rules allow. */
        while (rows < MX_CONFIRM_MAX_ROWS) {
                bool moved = false;

                memcpy(row, base, m->n_axes * sizeof(int));
                for (size_t a = 0; a < m->n_axes; a++) {
                        const struct mx_matrix_axis *ax = &m->axes[a];
                        bool in_set = false;

                        for (unsigned i = 0; i < n; i++)
                                in_set = in_set || axes[i] == (int)a;
                        if (in_set || !ax->product)
                                continue;
                        for (size_t v = 0; v < ax->n_values; v++) {
                                int old = row[a];

                                if (!(ax->product_set & (UINT64_C(1) << v)) ||
                                    (seen[a] & (UINT64_C(1) << v)))
                                        continue;
                                row[a] = (int)v;
                                if (valid(m, row)) {
                                        moved = true;
                                        break;
                                }
                                row[a] = old;
                        }
                }
                if (!moved)
                        break;
                pending_add(m, pd, row, reason);
                rows++;
                for (size_t a = 0; a < m->n_axes; a++)
                        if (row[a] >= 0)
                                seen[a] |= UINT64_C(1) << row[a];
        }
        /* S minus one element each: the baseline's value there, else the first other one the rules allow. */
        for (unsigned i = 0; i < n; i++) {
                const struct mx_matrix_axis *ax = &m->axes[axes[i]];
                int pick = -1;

                memcpy(row, base, m->n_axes * sizeof(int));
                for (int pass = 0; pass < 2 && pick < 0; pass++)
                        for (size_t v = 0; v < ax->n_values && pick < 0; v++) {
                                int cand = pass == 0 ? m->baseline[axes[i]] : (int)v;

                                if (cand < 0 || cand == values[i])
                                        continue;
                                row[axes[i]] = cand;
                                if (valid(m, row))
                                        pick = cand;
                                if (pass == 0)
                                        break;
                        }
                if (pick < 0) {
                        strv_consume(&pd->notes, xasprintf("%s: no valid configuration without %s=%s", text,
                                                           ax->name, ax->values[values[i]].name));
                        continue;
                }
                row[axes[i]] = pick;
                {
                        _cleanup_free_ char *r =
                                xasprintf("confirm: %s (without %s=%s: %s=%s)", text, ax->name,
                                          ax->values[values[i]].name, ax->name, ax->values[pick].name);

                        pending_add(m, pd, row, r);
                }
        }
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
                        confirm_set(m, tried, passed, n_tried, axes, values, set->n, text, &pd);
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
