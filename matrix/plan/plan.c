/* SPDX-License-Identifier: MIT */
/*
 * Building a plan (plan.h): resolve the feature and pins, then add candidate
 * configurations in protocol order; each candidate is deduplicated by
 * identity, checked against exclude and rules, and either kept as a run or
 * listed as skipped with the reason.
 */
#include "plan.h"
#include "order.h"
#include "expand.h"
#include "ident.h"

#include <inttypes.h>

static const char *const strategy_table[_MX_PLAN_STRATEGY_MAX] = {
        [MX_PLAN_DEFAULT] = "default",
        [MX_PLAN_PAIRWISE] = "pairwise",
        [MX_PLAN_3WAY] = "3way",
        [MX_PLAN_FULL] = "full",
};

const char *mx_plan_strategy_to_string(enum mx_plan_strategy s)
{
        return s >= 0 && s < _MX_PLAN_STRATEGY_MAX ? strategy_table[s] : NULL;
}

enum mx_plan_strategy mx_plan_strategy_from_string(const char *s)
{
        for (int i = 0; s && i < _MX_PLAN_STRATEGY_MAX; i++)
                if (streq(strategy_table[i], s))
                        return i;
        return _MX_PLAN_STRATEGY_INVALID;
}

/* ---- resolving names ---- */

/* Levenshtein distance, for "did you mean" suggestions (names are at most 64 characters). */
static size_t edit_distance(const char *a, const char *b)
{
        size_t la = MX_MIN(strlen(a), (size_t)MX_MATRIX_MAX_NAME),
               lb = MX_MIN(strlen(b), (size_t)MX_MATRIX_MAX_NAME);
        size_t row[MX_MATRIX_MAX_NAME + 1];

        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t diag = row[0];

                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t up = row[j];

                        row[j] = MX_MIN(MX_MIN(row[j] + 1, row[j - 1] + 1), diag + (a[i - 1] != b[j - 1]));
                        diag = up;
                }
        }
        return row[lb];
}

/* Close enough to suggest: a small edit distance or a substring either way. */
static bool close_name(const char *x, const char *name)
{
        size_t d = edit_distance(x, name);

        return d <= MX_MAX((size_t)1, strlen(x) / 3) || strcasestr(name, x) || strcasestr(x, name);
}

/* Unknown feature: list the close feature and value names, or all features. */
static int unknown_feature_error(const struct mx_matrix *m, const char *x, char **reterr)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *e = mx_escape(x, MX_MATRIX_MAX_NAME);
        size_t n = 0;

        for (size_t i = 0; i < m->n_features; i++)
                if (close_name(x, m->features[i].name))
                        mx_buf_printf(&b, "%sfeature '%s'", n++ ? ", " : "", m->features[i].name);
        for (size_t a = 0; a < m->n_axes; a++)
                for (size_t v = 0; v < m->axes[a].n_values; v++) {
                        const struct mx_matrix_value *val = &m->axes[a].values[v];
                        bool close = close_name(x, val->name);

                        for (size_t k = 0; val->aliases && val->aliases[k]; k++)
                                close = close || close_name(x, val->aliases[k]);
                        if (close)
                                mx_buf_printf(&b, "%s%s=%s", n++ ? ", " : "", m->axes[a].name, val->name);
                }
        if (n == 0)
                for (size_t i = 0; i < m->n_features; i++)
                        mx_buf_printf(&b, "%sfeature '%s'", n++ ? ", " : "", m->features[i].name);
        if (reterr)
                *reterr = xasprintf("no feature or axis value is named '%s'; %s %s%s", e,
                                    n ? "did you mean" : "the matrix has no features;",
                                    n ? strempty(b.data) : "name an axis value",
                                    n ? "? (any axis value works too: see mxmatrix matrix show)" : "");
        return -ENOENT;
}

/* The feature whose assignment is exactly config, if exactly one is; else -1. */
static int feature_with_assignment(const struct mx_matrix *m, const int *config)
{
        int found = -1;

        for (size_t i = 0; i < m->n_features; i++)
                if (mx_config_equal(m, m->features[i].set, config)) {
                        if (found >= 0)
                                return -1;
                        found = (int)i;
                }
        return found;
}

int mx_plan_parse_pin(const struct mx_matrix *m, const char *s, int *ret_axis, int *ret_value, char **reterr)
{
        const char *eq = strchr(s, '=');
        _cleanup_free_ char *axis = NULL, *e = mx_escape(s, MX_MATRIX_MAX_STRING);
        int a, v;

        if (!eq || eq == s) {
                if (reterr)
                        *reterr = xasprintf("'%s' is not of the form axis=value", e);
                return -EINVAL;
        }
        axis = xstrndup(s, (size_t)(eq - s));
        a = mx_matrix_axis_index(m, axis);
        if (a < 0) {
                _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

                for (size_t i = 0; i < m->n_axes; i++)
                        mx_buf_printf(&b, "%s%s", i ? ", " : "", m->axes[i].name);
                if (reterr)
                        *reterr = xasprintf("'%s': no such axis (axes: %s)", e, b.data);
                return -ENOENT;
        }
        v = mx_matrix_value_index(&m->axes[a], eq + 1);
        if (v < 0) {
                _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

                for (size_t i = 0; i < m->axes[a].n_values; i++)
                        mx_buf_printf(&b, "%s%s", i ? ", " : "", m->axes[a].values[i].name);
                if (reterr)
                        *reterr = xasprintf("'%s': axis '%s' has no such value (values: %s)", e,
                                            m->axes[a].name, b.data);
                return -ENOENT;
        }
        *ret_axis = a;
        *ret_value = v;
        return 0;
}

/* One "axis=value" part into out; -EINVAL when it is not one or contradicts an earlier pin. */
static int split_pin_add(json_t *out, const char *part, char **reterr)
{
        const char *eq = strchr(part, '=');
        _cleanup_free_ char *e = mx_escape(part, MX_MATRIX_MAX_STRING), *axis = NULL;
        const char *had;

        if (!eq || eq == part) {
                if (reterr)
                        *reterr = xasprintf("'%s' is not of the form axis=value", e);
                return -EINVAL;
        }
        axis = xstrndup(part, (size_t)(eq - part));
        had = json_string_value(json_object_get(out, axis));
        if (had && !streq(had, eq + 1)) {
                if (reterr)
                        *reterr = xasprintf("'%s': axis pinned twice (also to '%s')", e, had);
                return -EINVAL;
        }
        json_object_set_new(out, axis, json_string(eq + 1));
        return 0;
}

int mx_plan_split_pins(json_t *pins, json_t **ret, char **reterr)
{
        _cleanup_json_ json_t *out = json_object();
        const char *k;
        json_t *v;

        json_object_foreach (pins, k, v) {
                _cleanup_free_ char *w = NULL;
                char *p, *comma;
                int r;

                if (!json_is_string(v)) {
                        if (reterr)
                                *reterr = xasprintf("the pin of '%s' is not a string", k);
                        return -EINVAL;
                }
                w = xasprintf("%s=%s", k, json_string_value(v));
                for (p = w;; p = comma + 1) {
                        comma = strchr(p, ',');
                        if (comma)
                                *comma = '\0';
                        r = split_pin_add(out, p, reterr);
                        if (r < 0)
                                return r;
                        if (!comma)
                                break;
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* The feature whose id ("P" and its priority, as matrix show prints it) is x; *ret -1 when none. */
static int feature_by_id(const struct mx_matrix *m, const char *x, int *ret, char **reterr)
{
        int64_t prio;
        int found = -1;

        *ret = -1;
        if ((x[0] != 'P' && x[0] != 'p') || mx_parse_int64(x + 1, 1, 1000, &prio) < 0)
                return 0;
        for (size_t i = 0; i < m->n_features; i++) {
                if (m->features[i].priority != prio)
                        continue;
                if (found >= 0) {
                        if (reterr)
                                *reterr = xasprintf("'%s' is ambiguous: features '%s' and '%s' both have "
                                                    "priority %" PRId64 "; name the feature",
                                                    x, m->features[found].name, m->features[i].name, prio);
                        return -EINVAL;
                }
                found = (int)i;
        }
        *ret = found;
        return 0;
}

int mx_plan_resolve_feature(const struct mx_matrix *m, const char *x, int *ret_feature, int **ret_assignment,
                            char **reterr)
{
        _cleanup_free_ int *assignment = mx_config_new(m);
        _cleanup_buf_ struct mx_buf cands = MX_BUF_INIT;
        int f, hit_axis = -1, hit_value = -1, r;
        size_t n_values = 0;

        if (strchr(x, '=')) {
                r = mx_plan_parse_pin(m, x, &hit_axis, &hit_value, reterr);
                if (r < 0)
                        return r;
                assignment[hit_axis] = hit_value;
                *ret_feature = feature_with_assignment(m, assignment);
                *ret_assignment = TAKE_PTR(assignment);
                return 0;
        }

        f = mx_matrix_feature_index(m, x);
        if (f >= 0)
                mx_buf_printf(&cands, "feature '%s'", x);
        for (size_t a = 0; a < m->n_axes; a++) {
                int v = mx_matrix_value_index(&m->axes[a], x);

                if (v < 0)
                        continue;
                mx_buf_printf(&cands, "%s%s=%s", cands.len ? ", " : "", m->axes[a].name,
                              m->axes[a].values[v].name);
                hit_axis = (int)a;
                hit_value = v;
                n_values++;
        }
        if (f < 0 && n_values == 0) {
                /* "P5": the id matrix show prints for the feature of priority 5. */
                r = feature_by_id(m, x, &f, reterr);
                if (r < 0)
                        return r;
                if (f < 0)
                        return unknown_feature_error(m, x, reterr);
        }
        if (n_values == 1)
                assignment[hit_axis] = hit_value;
        if (n_values > 1 ||
            (f >= 0 && n_values == 1 && !mx_config_equal(m, m->features[f].set, assignment))) {
                if (reterr) {
                        _cleanup_free_ char *e = mx_escape(x, MX_MATRIX_MAX_NAME);

                        *reterr =
                                xasprintf("'%s' is ambiguous: it names %s; write axis=value to pick a value",
                                          e, cands.data);
                }
                return -EINVAL;
        }
        if (f >= 0) {
                *ret_feature = f;
                *ret_assignment = mx_config_copy(m, m->features[f].set);
                return 0;
        }
        *ret_feature = feature_with_assignment(m, assignment);
        *ret_assignment = TAKE_PTR(assignment);
        return 0;
}

/* ---- building ---- */

struct builder {
        struct mx_plan *p;
        size_t max_runs;
        /* identity -> run (index) or skip (index | SKIP_BIT); open addressing on the hash */
        uint64_t *slot_hash;
        size_t *slot_index;
        size_t n_slots, n_used;
};

#define SKIP_BIT ((size_t)1 << (sizeof(size_t) * 8 - 1))
#define EMPTY_SLOT SIZE_MAX

static const char *entry_key(const struct builder *b, size_t index)
{
        return index & SKIP_BIT ? b->p->skipped[index & ~SKIP_BIT].key : b->p->runs[index].key;
}

/* Double the identity table and rehash. */
static void slots_grow(struct builder *b)
{
        size_t n = b->n_slots ? b->n_slots * 2 : 64;
        uint64_t *h = xcalloc(n, sizeof(uint64_t));
        size_t *ix = xreallocarray(NULL, n, sizeof(size_t));

        for (size_t i = 0; i < n; i++)
                ix[i] = EMPTY_SLOT;
        for (size_t i = 0; i < b->n_slots; i++) {
                size_t s;

                if (b->slot_index[i] == EMPTY_SLOT)
                        continue;
                for (s = b->slot_hash[i] & (n - 1); ix[s] != EMPTY_SLOT; s = (s + 1) & (n - 1))
                        ;
                h[s] = b->slot_hash[i];
                ix[s] = b->slot_index[i];
        }
        free(b->slot_hash);
        free(b->slot_index);
        b->slot_hash = h;
        b->slot_index = ix;
        b->n_slots = n;
}

/* Find key's slot: its entry, or the empty slot where it goes. */
static size_t slot_find(struct builder *b, const char *key, uint64_t hash)
{
        size_t s;

        if ((b->n_used + 1) * 2 > b->n_slots)
                slots_grow(b);
        for (s = hash & (b->n_slots - 1); b->slot_index[s] != EMPTY_SLOT; s = (s + 1) & (b->n_slots - 1))
                if (b->slot_hash[s] == hash && streq(entry_key(b, b->slot_index[s]), key))
                        break;
        return s;
}

static void add_reason(char ***reasons, const char *reason)
{
        if (!strv_contains(*reasons, reason))
                strv_push(reasons, reason);
}

static void run_done(struct mx_plan_run *r)
{
        free(r->config);
        free(r->key);
        strv_free(r->reasons);
        strv_free(r->env);
        strv_free(r->flags);
        strv_free(r->argv);
        mx_kgate_expect_done(&r->expect);
        free(r->known_incompatible);
}

static void skip_done(struct mx_plan_skip *s)
{
        free(s->config);
        free(s->key);
        strv_free(s->reasons);
        free(s->why);
        free(s->where);
}

struct mx_plan *mx_plan_free(struct mx_plan *p)
{
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_runs; i++)
                run_done(&p->runs[i]);
        free(p->runs);
        for (size_t i = 0; i < p->n_skipped; i++)
                skip_done(&p->skipped[i]);
        free(p->skipped);
        free(p->input);
        free(p->resolved);
        free(p->assignment);
        free(p->pins);
        free(p->stack);
        free(p->stack_ids);
        free(p->stack_features);
        strv_free(p->notes);
        free(p);
        return NULL;
}

/* Record a planned configuration that exclude or a rule removed (takes key, why, where). */
static void add_skip(struct builder *b, size_t slot, const int *config, char *key, uint64_t hash,
                     const char *reason, char *why, char *where)
{
        struct mx_plan *p = b->p;

        p->skipped = xreallocarray(p->skipped, p->n_skipped + 1, sizeof(struct mx_plan_skip));
        p->skipped[p->n_skipped] = (struct mx_plan_skip){
                .config = mx_config_copy(p->m, config),
                .key = key,
                .why = why,
                .where = where,
        };
        add_reason(&p->skipped[p->n_skipped].reasons, reason);
        b->slot_hash[slot] = hash;
        b->slot_index[slot] = p->n_skipped++ | SKIP_BIT;
        b->n_used++;
}

/* Record a run with its snapshot: env, flags, argv, expectations, known-incompatible marks. */
static int add_run(struct builder *b, size_t slot, const int *config, char *key, uint64_t hash,
                   const char *reason, char **reterr)
{
        struct mx_plan *p = b->p;
        const struct mx_matrix *m = p->m;
        struct mx_plan_run *r;

        if (p->n_runs >= b->max_runs) {
                if (reterr)
                        *reterr = xasprintf("the plan has more than %zu runs (the limit; see --max-runs)",
                                            b->max_runs);
                free(key);
                return -E2BIG;
        }
        p->runs = xreallocarray(p->runs, p->n_runs + 1, sizeof(struct mx_plan_run));
        r = &p->runs[p->n_runs];
        *r = (struct mx_plan_run){
                .config = mx_config_copy(m, config),
                .key = key,
                .hash = hash,
                .env = mx_config_env(m, config),
                .flags = mx_config_flags(m, config),
                .argv = mx_config_argv(m, config),
                .known_incompatible = xcalloc(MX_MAX(m->n_known_incompatible, 1), sizeof(size_t)),
        };
        add_reason(&r->reasons, reason);
        mx_config_expect(m, config, &r->expect);
        r->n_known_incompatible = mx_matrix_known_incompatible(m, config, r->known_incompatible);
        b->slot_hash[slot] = hash;
        b->slot_index[slot] = p->n_runs++;
        b->n_used++;
        return 0;
}

/*
 * Add a candidate configuration planned for reason. Unless it comes from the
 * expansion (already extended and valid), it goes through the expansion's
 * steps: exclude on the configuration as planned, include (its assigned axes
 * are original), rules.
 */
static int add_candidate(struct builder *b, const int *planned, const char *reason, bool expanded,
                         char **reterr)
{
        const struct mx_matrix *m = b->p->m;
        _cleanup_free_ int *config = mx_config_copy(m, planned);
        _cleanup_free_ bool *original = xcalloc(MX_MAX(m->n_axes, 1), sizeof(bool));
        char *key;
        uint64_t hash;
        size_t slot;
        int i;

        if (!expanded && m->n_includes > 0) {
                for (size_t a = 0; a < m->n_axes; a++)
                        original[a] = config[a] >= 0;
                if (mx_matrix_excluded(m, config) < 0)
                        mx_matrix_apply_includes(m, config, original, NULL);
        }
        key = mx_ident_key(m, config);
        hash = mx_ident_hash(key);
        slot = slot_find(b, key, hash);
        if (b->slot_index[slot] != EMPTY_SLOT) {
                size_t ix = b->slot_index[slot];

                add_reason(ix & SKIP_BIT ? &b->p->skipped[ix & ~SKIP_BIT].reasons : &b->p->runs[ix].reasons,
                           reason);
                free(key);
                return 0;
        }
        if (!expanded) {
                i = mx_matrix_excluded(m, planned);
                if (i >= 0) {
                        char *where = mx_matrix_location(m, m->excludes[i].node);

                        add_skip(b, slot, config, key, hash, reason,
                                 xasprintf("matches the exclude entry at %s", where), where);
                        return 0;
                }
                i = mx_matrix_broken_rule(m, config);
                if (i >= 0) {
                        char *where = mx_matrix_location(m, m->rules[i].node);

                        add_skip(b, slot, config, key, hash, reason,
                                 xasprintf("breaks the rule at %s: %s", where, m->rules[i].reason), where);
                        return 0;
                }
        }
        return add_run(b, slot, config, key, hash, reason, reterr);
}

/* base overridden by the assigned axes of over (and of over2, may be NULL). */
static int *overlay(const struct mx_matrix *m, const int *base, const int *over, const int *over2)
{
        int *c = mx_config_copy(m, base);

        for (size_t a = 0; a < m->n_axes; a++) {
                if (over[a] >= 0)
                        c[a] = over[a];
                if (over2 && over2[a] >= 0)
                        c[a] = over2[a];
        }
        return c;
}

/* The first axis on which a and b assign different values, or -1. */
static int conflict_axis(const struct mx_matrix *m, const int *a, const int *b)
{
        for (size_t i = 0; i < m->n_axes; i++)
                if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i])
                        return (int)i;
        return -1;
}

/* L5: the feature with each completed feature, and each completed feature alone. */
static int plan_l5(struct builder *b, const int *base, const int *pinned, char **reterr)
{
        struct mx_plan *p = b->p;
        const struct mx_matrix *m = p->m;
        size_t n = 0;
        int r;

        for (size_t i = 0; i < m->n_features; i++) {
                const struct mx_matrix_feature *q = &m->features[i];
                _cleanup_free_ char *prior = NULL, *with = NULL;
                _cleanup_free_ int *alone = NULL, *both = NULL;
                int a;

                if (q->status != MX_FEATURE_COMPLETED || (int)i == p->feature)
                        continue;
                n++;
                prior = xasprintf("prior:%s", q->name);
                with = xasprintf("with:%s", q->name);
                a = conflict_axis(m, q->set, pinned);
                if (a >= 0) {
                        strv_consume(&p->notes,
                                     xasprintf("%s not planned: feature '%s' sets %s=%s, but this plan "
                                               "has %s=%s",
                                               with, q->name, m->axes[a].name,
                                               m->axes[a].values[q->set[a]].name, m->axes[a].name,
                                               m->axes[a].values[pinned[a]].name));
                        continue;
                }
                alone = overlay(m, base, q->set, p->pins);
                r = add_candidate(b, alone, prior, false, reterr);
                if (r < 0)
                        return r;
                both = overlay(m, base, q->set, pinned);
                r = add_candidate(b, both, with, false, reterr);
                if (r < 0)
                        return r;
        }
        if (n == 0)
                strv_push(&p->notes, "no feature is completed, so L5 has no combinations");
        return 0;
}

/* L6: one factor at a time from the feature-on configuration. */
static int plan_l6(struct builder *b, const int *on, const int *pinned, char **reterr)
{
        const struct mx_matrix *m = b->p->m;
        int r;

        for (size_t a = 0; a < m->n_axes; a++) {
                const struct mx_matrix_axis *ax = &m->axes[a];

                if (!ax->product || pinned[a] >= 0)
                        continue;
                for (size_t v = 0; v < ax->n_values; v++) {
                        _cleanup_free_ int *c = NULL;
                        _cleanup_free_ char *reason = NULL;

                        if (!ax->values[v].product || (int)v == on[a])
                                continue;
                        c = mx_config_copy(m, on);
                        c[a] = (int)v;
                        reason = xasprintf("vary:%s=%s", ax->name, ax->values[v].name);
                        r = add_candidate(b, c, reason, false, reterr);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Does config carry every pinned value (the feature and the pins)? */
static bool has_pins(const struct mx_matrix *m, const int *config, const int *pinned)
{
        for (size_t a = 0; a < m->n_axes; a++)
                if (pinned[a] >= 0 && config[a] != pinned[a])
                        return false;
        return true;
}

/* A planned run with the pins that the known-incompatible entry ki matches, or -1. */
static ssize_t run_matching(const struct mx_plan *p, const int *pinned, size_t ki)
{
        for (size_t i = 0; i < p->n_runs; i++)
                if (has_pins(p->m, p->runs[i].config, pinned) &&
                    mx_matrix_cond_matches(&p->m->known_incompatible[ki].when, p->runs[i].config))
                        return (ssize_t)i;
        return -1;
}

/*
 * The values the covering array set aside, each tested once: by a run the plan already has (the
 * one-factor-at-a-time runs usually), else by the first product configuration that matches (reason
 * "set-aside"). The note says which, so nobody reads the array as covering them.
 */
static int plan_set_aside(struct builder *b, const int *pinned, const bool *set_aside, char **reterr)
{
        struct mx_plan *p = b->p;
        const struct mx_matrix *m = p->m;
        _cleanup_buf_ struct mx_buf note = MX_BUF_INIT;
        int r = 0;

        for (size_t k = 0; k < m->n_known_incompatible; k++) {
                _cleanup_free_ char *what = NULL;
                ssize_t run;

                if (!set_aside[k])
                        continue;
                run = run_matching(p, pinned, k);
                if (run < 0) {
                        _cleanup_(mx_expand_freep) struct mx_expand *it = mx_expand_new(m, pinned);
                        const int *config;

                        while ((r = mx_expand_next(it, &config)) > 0)
                                if (mx_matrix_cond_matches(&m->known_incompatible[k].when, config))
                                        break;
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                r = add_candidate(b, config, "set-aside", false, reterr);
                                if (r < 0)
                                        return r;
                                run = run_matching(p, pinned, k);
                        }
                }
                what = mx_matrix_cond_describe(m, &m->known_incompatible[k].when);
                mx_buf_printf(&note, "%s %s [%zu]%s", note.data ? ";" : "", what, k + 1,
                              run >= 0 ? "" : " (no configuration of the product with the pins has it)");
                if (run >= 0) {
                        _cleanup_free_ char *key = xstrdup(p->runs[run].key);

                        mx_buf_printf(&note, " (tested once: %s)", key);
                }
        }
        if (note.data)
                strv_consume(&p->notes, xasprintf("the covering array leaves out the known-incompatible%s; every "
                                                  "pair it covers is in a run that can pass",
                                                  note.data));
        return 0;
}

/* pairwise / 3way: a covering array whose first rows are the runs that already carry the feature. */
static int plan_cover(struct builder *b, const int *pinned, unsigned t, char **reterr)
{
        struct mx_plan *p = b->p;
        const struct mx_matrix *m = p->m;
        struct mx_matrix_cover c = {};
        _cleanup_free_ int *required = NULL, *rows = NULL, *config = mx_config_new(m);
        _cleanup_free_ bool *set_aside = xcalloc(MX_MAX(m->n_known_incompatible, 1), sizeof(bool));
        size_t n_required = 0, n_rows = 0;
        int r = 0;

        /* Known-incompatible configurations cannot pass: the array's pairs must live in runs that can. */
        mx_matrix_cover_build_passable(m, pinned, set_aside, &c);
        p->cover_t = t;
        if (c.n_params == 0)
                goto finish;
        required = xreallocarray(NULL, (p->n_runs + 1) * c.n_params, sizeof(int));
        for (size_t k = 0; k < c.n_params; k++)
                required[k] = -1;
        if (!mx_cover_extendable(&c.model, required)) {
                strv_push(&p->notes, "no product configuration carries the feature and the pins without breaking "
                                     "an exclude entry or a rule, so there is nothing to cover");
                goto finish;
        }
        for (size_t i = 0; i < p->n_runs; i++)
                if (has_pins(m, p->runs[i].config, pinned) &&
                    mx_matrix_cover_config_to_row(&c, p->runs[i].config,
                                                  required + n_required * c.n_params) >= 0 &&
                    mx_cover_row_valid(&c.model, required + n_required * c.n_params))
                        n_required++;
        r = mx_cover_generate(
                &c.model,
                &(struct mx_cover_options){
                        .t = t, .seed = p->seed, .required = required, .n_required = n_required },
                &rows, &n_rows, reterr);
        if (r < 0)
                goto finish;
        p->cover_rows = n_rows;
        for (size_t i = n_required; i < n_rows; i++) {
                mx_matrix_cover_row_to_config(m, &c, pinned, rows + i * c.n_params, config);
                r = add_candidate(b, config, "cover", false, reterr);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                r = plan_set_aside(b, pinned, set_aside, reterr);
finish:
        mx_matrix_cover_done(&c);
        return r;
}

/* full: every valid configuration of the product with the feature and the pins pinned. */
static int plan_full(struct builder *b, const int *pinned, char **reterr)
{
        _cleanup_(mx_expand_freep) struct mx_expand *it = mx_expand_new(b->p->m, pinned);
        const int *config;
        int r;

        while ((r = mx_expand_next(it, &config)) > 0) {
                r = add_candidate(b, config, "full", true, reterr);
                if (r == -E2BIG && reterr) {
                        bool overflow;
                        uint64_t n = mx_expand_product_size(b->p->m, pinned, &overflow);

                        free(*reterr);
                        *reterr = xasprintf(
                                "--strategy full would plan more than %zu runs (the product with the "
                                "feature pinned has %s%" PRIu64 " cells); raise --max-runs or use "
                                "--strategy pairwise or 3way",
                                b->max_runs, overflow ? "more than " : "", n);
                }
                if (r < 0)
                        return r;
        }
        return r;
}

/* How X was understood, for the plan's header. */
static void describe_resolution(struct mx_plan *p)
{
        const struct mx_matrix *m = p->m;
        _cleanup_free_ char *desc = mx_config_describe(m, p->assignment);

        if (p->feature >= 0 && streq(p->input, m->features[p->feature].name))
                p->resolved = xasprintf("feature '%s'", p->input);
        else if (p->feature >= 0 && strchr("Pp", p->input[0]) && mx_matrix_feature_index(m, p->input) < 0 &&
                 atoi(p->input + 1) == m->features[p->feature].priority && !strchr(p->input, '='))
                p->resolved = xasprintf("feature '%s' (P%d)", m->features[p->feature].name,
                                        m->features[p->feature].priority);
        else if (p->feature >= 0)
                p->resolved = xasprintf("%s (feature '%s')", desc, m->features[p->feature].name);
        else
                p->resolved = xstrdup(desc);
}

/* Notes on the feature's own status and unmet dependencies. */
static void feature_notes(struct mx_plan *p)
{
        const struct mx_matrix *m = p->m;
        const struct mx_matrix_feature *f;

        if (p->feature < 0)
                return;
        f = &m->features[p->feature];
        if (f->status == MX_FEATURE_COMPLETED || f->status == MX_FEATURE_BLOCKED)
                strv_consume(&p->notes, xasprintf("feature '%s' is %s", f->name,
                                                  mx_feature_status_to_string(f->status)));
        for (size_t i = 0; i < f->n_depends_on; i++) {
                const struct mx_matrix_feature *d = &m->features[f->depends_on[i]];

                if (d->status != MX_FEATURE_COMPLETED)
                        strv_consume(&p->notes, xasprintf("depends on '%s', which is %s", d->name,
                                                          mx_feature_status_to_string(d->status)));
        }
}

/* Pins: one per axis, and none may contradict the feature. */
static int parse_pins(struct mx_plan *p, char *const *pins, char **reterr)
{
        const struct mx_matrix *m = p->m;
        int r;

        if (strv_length(pins) > MX_PLAN_MAX_PINS) {
                if (reterr)
                        *reterr = xasprintf("more than %d pins", MX_PLAN_MAX_PINS);
                return -E2BIG;
        }
        for (size_t i = 0; pins && pins[i]; i++) {
                int a, v;

                r = mx_plan_parse_pin(m, pins[i], &a, &v, reterr);
                if (r < 0)
                        return r;
                if (p->pins[a] >= 0) {
                        if (reterr)
                                *reterr = xasprintf("axis '%s' is pinned twice", m->axes[a].name);
                        return -EINVAL;
                }
                if (p->assignment[a] >= 0 && p->assignment[a] != v) {
                        if (reterr)
                                *reterr =
                                        xasprintf("pin %s=%s conflicts with %s, which sets %s=%s",
                                                  m->axes[a].name, m->axes[a].values[v].name, p->resolved,
                                                  m->axes[a].name, m->axes[a].values[p->assignment[a]].name);
                        return -EINVAL;
                }
                if (p->assignment[a] == v) {
                        /* Pinning it would turn the feature-off runs into feature-on runs. */
                        int b = m->baseline[a];
                        _cleanup_free_ char *off =
                                b >= 0 ? xasprintf("the baseline's %s=%s", m->axes[a].name,
                                                   m->axes[a].values[b].name)
                                       : xasprintf("%s unset", m->axes[a].name);

                        strv_consume(
                                &p->notes,
                                xasprintf("pin %s=%s repeats what the feature sets, so it applies to the "
                                          "feature-on runs only; the feature-off runs keep %s",
                                          m->axes[a].name, m->axes[a].values[v].name, off));
                        continue;
                }
                p->pins[a] = v;
        }
        return 0;
}

/* Completed features by priority (then file order): the order they were merged in. */
static int cmp_merge_order(const void *a, const void *b, void *userdata)
{
        const struct mx_matrix *m = userdata;
        size_t x = *(const size_t *)a, y = *(const size_t *)b;

        if (m->features[x].priority != m->features[y].priority)
                return m->features[x].priority < m->features[y].priority ? -1 : 1;
        return x < y ? -1 : x > y;
}

/*
 * The merged stack (seed 003, Configuration Combinations): every completed
 * feature but the one planned, applied over each other in merge order; a
 * later one wins an axis two of them set, with a note.
 */
static void build_stack(struct mx_plan *p)
{
        const struct mx_matrix *m = p->m;
        _cleanup_buf_ struct mx_buf ids = MX_BUF_INIT;
        _cleanup_free_ int *by = NULL;

        p->stack = mx_config_new(m);
        by = mx_config_new(m);
        p->stack_features = xcalloc(MX_MAX(m->n_features, 1), sizeof(size_t));
        for (size_t i = 0; i < m->n_features; i++)
                if (m->features[i].status == MX_FEATURE_COMPLETED && (int)i != p->feature)
                        p->stack_features[p->n_stack_features++] = i;
        qsort_r(p->stack_features, p->n_stack_features, sizeof(size_t), cmp_merge_order, (void *)m);
        for (size_t k = 0; k < p->n_stack_features; k++) {
                const struct mx_matrix_feature *f = &m->features[p->stack_features[k]];

                mx_buf_printf(&ids, "%sP%d", k ? "," : "", f->priority);
                for (size_t a = 0; a < m->n_axes; a++) {
                        if (f->set[a] < 0)
                                continue;
                        if (p->stack[a] >= 0 && p->stack[a] != f->set[a])
                                strv_consume(&p->notes,
                                             xasprintf("merged stack: '%s' sets %s=%s over %s=%s of '%s'",
                                                       f->name, m->axes[a].name,
                                                       m->axes[a].values[f->set[a]].name, m->axes[a].name,
                                                       m->axes[a].values[p->stack[a]].name,
                                                       m->features[by[a]].name));
                        p->stack[a] = f->set[a];
                        by[a] = (int)p->stack_features[k];
                }
        }
        if (p->n_stack_features > 0)
                p->stack_ids = mx_buf_steal(&ids);
        for (size_t a = 0; a < m->n_axes; a++) {
                if (p->stack[a] < 0)
                        continue;
                if (p->pins[a] >= 0 && p->pins[a] != p->stack[a])
                        strv_consume(&p->notes,
                                     xasprintf("merged stack: the pin %s=%s replaces %s=%s of '%s'",
                                               m->axes[a].name, m->axes[a].values[p->pins[a]].name,
                                               m->axes[a].name, m->axes[a].values[p->stack[a]].name,
                                               m->features[by[a]].name));
                else if (p->assignment[a] >= 0 && p->assignment[a] != p->stack[a])
                        strv_consume(&p->notes,
                                     xasprintf("merged stack: the feature's %s=%s replaces %s=%s of '%s'",
                                               m->axes[a].name, m->axes[a].values[p->assignment[a]].name,
                                               m->axes[a].name, m->axes[a].values[p->stack[a]].name,
                                               m->features[by[a]].name));
        }
}

/* The feature off and on, on the baseline and (when completed features change it) on the merged stack. */
static int plan_l1(struct builder *b, const int *base, const int *on, const int *stack_off,
                   const int *stack_on, char **reterr)
{
        struct mx_plan *p = b->p;
        _cleanup_free_ char *off_reason = NULL, *on_reason = NULL;
        int r;

        r = add_candidate(b, base, "baseline", false, reterr);
        if (r >= 0)
                r = add_candidate(b, base, "feature-off", false, reterr);
        if (r >= 0)
                r = add_candidate(b, on, "feature-on", false, reterr);
        if (r < 0 || mx_config_equal(p->m, stack_off, base))
                return r;
        off_reason = xasprintf("feature-off:stack(%s)", p->stack_ids);
        on_reason = xasprintf("feature-on:stack(%s)", p->stack_ids);
        r = add_candidate(b, stack_off, off_reason, false, reterr);
        if (r >= 0)
                r = add_candidate(b, stack_on, on_reason, false, reterr);
        return r;
}

/* Runs whose expectations no source can check: say so before they run and end L1.5 INVALID. */
static void evidence_notes(struct mx_plan *p)
{
        size_t any = 0, kernels = 0;

        for (size_t i = 0; i < p->n_runs; i++) {
                const struct mx_kgate_expect *e = &p->runs[i].expect;

                any += !mx_kgate_expect_empty(e);
                kernels +=
                        e->kernels.n_must_see > 0 || (e->kernels.must_not_see && e->kernels.must_not_see[0]);
        }
        if (!mx_matrix_has_gate(p->m) && any > 0)
                strv_consume(&p->notes,
                             xasprintf("%zu runs have expectations, but the command profile runs no "
                                       "kernel gate: they are never checked",
                                       any));
        else if (!mx_matrix_has_profiler(p->m) && kernels > 0)
                strv_consume(
                        &p->notes,
                        xasprintf(
                                "%zu runs expect kernel names, but profile '%s' has no profiler: their L1.5 "
                                "gate will be INVALID (see mxmatrix matrix check)",
                                kernels, p->m->profile));
}

int mx_plan_build(const struct mx_matrix *m, const struct mx_plan_request *req, struct mx_plan **ret,
                  char **reterr)
{
        _cleanup_(mx_plan_freep) struct mx_plan *p = xcalloc(1, sizeof(*p));
        struct builder b = { .p = p, .max_runs = req->max_runs ? req->max_runs : MX_PLAN_DEFAULT_MAX_RUNS };
        _cleanup_free_ int *base = NULL, *on = NULL, *pinned = NULL, *stack_off = NULL, *stack_on = NULL;
        int r;

        if (!req->feature || req->strategy < 0 || req->strategy >= _MX_PLAN_STRATEGY_MAX) {
                if (reterr)
                        *reterr = xstrdup(req->feature ? "unknown strategy" : "no feature given");
                return -EINVAL;
        }
        p->m = m;
        p->input = xstrdup(req->feature);
        p->strategy = req->strategy;
        p->seed = req->seed;
        r = mx_plan_resolve_feature(m, req->feature, &p->feature, &p->assignment, reterr);
        if (r < 0)
                return r;
        describe_resolution(p);
        p->pins = mx_config_new(m);
        r = parse_pins(p, req->pins, reterr);
        if (r < 0)
                return r;
        feature_notes(p);
        build_stack(p);
        p->settings = m->settings;
        if (p->feature >= 0)
                mx_matrix_settings_overlay(&p->settings, &m->features[p->feature].settings);

        base = overlay(m, m->baseline, p->pins, NULL);
        pinned = overlay(m, p->pins, p->assignment, NULL);
        on = overlay(m, base, p->assignment, NULL);
        stack_off = overlay(m, m->baseline, p->stack, p->pins);
        stack_on = overlay(m, stack_off, p->assignment, NULL);
        r = plan_l1(&b, base, on, stack_off, stack_on, reterr);
        if (r >= 0)
                r = plan_l5(&b, base, pinned, reterr);
        if (r >= 0)
                r = plan_l6(&b, stack_on, pinned, reterr);
        if (r >= 0 && (p->strategy == MX_PLAN_PAIRWISE || p->strategy == MX_PLAN_3WAY))
                r = plan_cover(&b, pinned, p->strategy == MX_PLAN_PAIRWISE ? 2 : 3, reterr);
        if (r >= 0 && p->strategy == MX_PLAN_FULL)
                r = plan_full(&b, pinned, reterr);
        if (r >= 0)
                evidence_notes(p);
        free(b.slot_hash);
        free(b.slot_index);
        if (r < 0)
                return r;
        mx_order_group_runs(p);
        *ret = TAKE_PTR(p);
        return 0;
}

int mx_plan_build_explicit(const struct mx_matrix *m, const char *input, const int *configs,
                           char *const *reasons, size_t n, size_t max_runs, struct mx_plan **ret, char **reterr)
{
        _cleanup_(mx_plan_freep) struct mx_plan *p = xcalloc(1, sizeof(*p));
        struct builder b = { .p = p, .max_runs = max_runs ? max_runs : MX_PLAN_DEFAULT_MAX_RUNS };
        int r = 0;

        p->m = m;
        p->input = xstrdup(input);
        p->resolved = xstrdup(input);
        p->feature = -1;
        p->assignment = mx_config_new(m);
        p->pins = mx_config_new(m);
        p->stack = mx_config_new(m);
        p->settings = m->settings;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = add_candidate(&b, configs + i * m->n_axes, reasons[i], false, reterr);
        free(b.slot_hash);
        free(b.slot_index);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

size_t mx_plan_n_known_incompatible(const struct mx_plan *p)
{
        size_t n = 0;

        for (size_t i = 0; i < p->n_runs; i++)
                n += p->runs[i].n_known_incompatible > 0;
        return n;
}

/* ---- JSON ---- */

json_t *mx_config_to_json(const struct mx_matrix *m, const int *config)
{
        json_t *o = json_object();

        for (size_t a = 0; a < m->n_axes; a++)
                if (config[a] >= 0)
                        json_object_set_new(o, m->axes[a].name,
                                            json_string(m->axes[a].values[config[a]].name));
        return o;
}

static json_t *strv_to_json(char *const *l)
{
        json_t *a = json_array();

        for (size_t i = 0; l && l[i]; i++)
                json_array_append_new(a, json_string(l[i]));
        return a;
}

static json_t *rules_to_json(const struct mx_kgate_rules *r)
{
        json_t *see = json_array();

        for (size_t i = 0; i < r->n_must_see; i++)
                json_array_append_new(see, strv_to_json(r->must_see[i].patterns));
        return json_pack("{s:o,s:o}", "must_see", see, "must_not_see", strv_to_json(r->must_not_see));
}

json_t *mx_expect_to_json(const struct mx_kgate_expect *e)
{
        return json_pack("{s:o,s:o}", "log", rules_to_json(&e->log), "kernels", rules_to_json(&e->kernels));
}

static int rules_from_json(json_t *j, struct mx_kgate_rules *r)
{
        json_t *see = json_object_get(j, "must_see"), *not = json_object_get(j, "must_not_see"), *e, *a;
        size_t i, k;

        json_array_foreach (see, i, e) {
                if (!json_is_array(e) || json_array_size(e) == 0)
                        return -EINVAL;
                json_array_foreach (e, k, a) {
                        if (!json_is_string(a))
                                return -EINVAL;
                        if (k == 0)
                                mx_kgate_rules_add_must_see(r, json_string_value(a));
                        else
                                (void)mx_kgate_rules_add_alternative(r, json_string_value(a));
                }
        }
        json_array_foreach (not, i, e) {
                if (!json_is_string(e))
                        return -EINVAL;
                mx_kgate_rules_add_must_not_see(r, json_string_value(e));
        }
        return 0;
}

int mx_expect_from_json(json_t *j, struct mx_kgate_expect *ret)
{
        struct mx_kgate_expect e = {};
        int r = rules_from_json(json_object_get(j, "log"), &e.log);

        if (r >= 0)
                r = rules_from_json(json_object_get(j, "kernels"), &e.kernels);
        if (r < 0) {
                mx_kgate_expect_done(&e);
                return r;
        }
        *ret = e;
        return 0;
}

json_t *mx_plan_run_to_json(const struct mx_plan *p, const struct mx_plan_run *r)
{
        char hash[MX_IDENT_HASH_LEN + 1];
        json_t *ki = json_array();

        for (size_t i = 0; i < r->n_known_incompatible; i++) {
                const struct mx_matrix_known_incompatible *k =
                        &p->m->known_incompatible[r->known_incompatible[i]];
                _cleanup_free_ char *at = mx_matrix_location(p->m, k->node);

                json_array_append_new(ki,
                                      json_pack("{s:s,s:s,s:s}", "expect", mx_ki_expect_to_string(k->expect),
                                                "reason", k->reason, "at", at));
        }
        return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "key", r->key, "hash",
                         mx_ident_hash_format(r->hash, hash), "config", mx_config_to_json(p->m, r->config),
                         "reasons", strv_to_json(r->reasons), "env", strv_to_json(r->env), "flags",
                         strv_to_json(r->flags), "argv", strv_to_json(r->argv), "expect",
                         mx_expect_to_json(&r->expect), "known_incompatible", ki, "settings",
                         mx_matrix_settings_to_json(&p->settings));
}

json_t *mx_plan_to_json(const struct mx_plan *p)
{
        const struct mx_matrix *m = p->m;
        json_t *runs = json_array(), *skipped = json_array(), *feature, *stack = json_null();
        _cleanup_free_ char *ev_log = mx_matrix_evidence_log(m), *ev_kernels = mx_matrix_evidence_kernels(m);

        for (size_t i = 0; i < p->n_runs; i++)
                json_array_append_new(runs, mx_plan_run_to_json(p, &p->runs[i]));
        for (size_t i = 0; i < p->n_skipped; i++) {
                const struct mx_plan_skip *s = &p->skipped[i];

                json_array_append_new(skipped, json_pack("{s:s,s:o,s:o,s:s,s:o}", "key", s->key, "config",
                                                         mx_config_to_json(m, s->config), "reasons",
                                                         strv_to_json(s->reasons), "why", s->why, "at",
                                                         s->where ? json_string(s->where) : json_null()));
        }
        feature = json_pack("{s:s,s:s,s:o}", "input", p->input, "resolved", p->resolved, "set",
                            mx_config_to_json(m, p->assignment));
        if (p->feature >= 0) {
                const struct mx_matrix_feature *f = &m->features[p->feature];

                json_object_set_new(feature, "name", json_string(f->name));
                json_object_set_new(feature, "priority", json_integer(f->priority));
                json_object_set_new(feature, "status", json_string(mx_feature_status_to_string(f->status)));
        } else
                json_object_set_new(feature, "name", json_null());
        if (p->n_stack_features > 0) {
                json_t *names = json_array();

                for (size_t i = 0; i < p->n_stack_features; i++)
                        json_array_append_new(names, json_string(m->features[p->stack_features[i]].name));
                stack = json_pack("{s:s,s:o,s:o}", "ids", p->stack_ids, "features", names, "set",
                                  mx_config_to_json(m, p->stack));
        }
        return json_pack(
                "{s:s,s:s,s:o,s:o,s:o,s:{s:s,s:s,s:b,s:b},s:o,s:s,s:I,s:o,s:o,s:o,s:o}", "matrix", m->name,
                "file", m->path, "feature", feature, "stack", stack, "settings",
                mx_matrix_settings_to_json(&p->settings), "evidence", "log", ev_log, "kernels", ev_kernels,
                "gate", mx_matrix_has_gate(m), "profiler", mx_matrix_has_profiler(m), "pins",
                mx_config_to_json(m, p->pins), "strategy", mx_plan_strategy_to_string(p->strategy), "seed",
                (json_int_t)p->seed, "cover",
                p->cover_t ? json_pack("{s:i,s:I}", "t", (int)p->cover_t, "rows", (json_int_t)p->cover_rows)
                           : json_null(),
                "runs", runs, "skipped", skipped, "notes", strv_to_json(p->notes));
}
