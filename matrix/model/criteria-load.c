/* SPDX-License-Identifier: MIT */
/*
 * Success criteria, hard constraints and gates between phases in the matrix
 * file (docs/mxmatrix.json.5, FEATURES): seed 000's hypothesis table (metric,
 * baseline, target) per feature, its hard constraints (TTFT, memory, crashes)
 * for every feature, and seed 001's "Gate Criteria Between Phases" on the
 * feature each gate holds back. Parsed here, judged by daemon/criteria.c.
 */
#include "matrix.h"

#include <math.h>

char *mx_feature_id(const struct mx_matrix_feature *f)
{
        return xasprintf("P%d", f->priority);
}

const struct mx_matrix_criterion *mx_feature_hard(const struct mx_matrix *m,
                                                  const struct mx_matrix_feature *f, size_t *ret_n)
{
        *ret_n = f->has_hard ? f->n_hard : m->n_hard;
        return f->has_hard ? f->hard : m->hard;
}

char *mx_criterion_target(const struct mx_matrix_criterion *c)
{
        const struct mx_metric_info *mi = mx_metric_lookup(c->metric);
        bool up = mi && mi->higher_is_better;

        switch (c->op) {
        case MX_CRITERION_MIN_GAIN_PCT:
                return up ? xasprintf(">= +%g %%", c->value) : xasprintf("<= -%g %%", c->value);
        case MX_CRITERION_MAX_REGRESSION_PCT:
                return up ? xasprintf(">= -%g %%", c->value) : xasprintf("<= +%g %%", c->value);
        case MX_CRITERION_MAX_INCREASE:
                return xasprintf("<= +%g", c->value);
        case MX_CRITERION_MAX_DECREASE:
                return xasprintf(">= -%g", c->value);
        case MX_CRITERION_MAX:
                return xasprintf("<= %g", c->value);
        case MX_CRITERION_MIN:
                return xasprintf(">= %g", c->value);
        default:
                return xstrdup("?");
        }
}

/* A target's words: ">=" or "<=", a number with or without its sign, and "%" or nothing. */
struct target_words {
        bool ge, sign, minus, pct;
        double v;
};

static const char *skip_spaces(const char *p)
{
        while (*p == ' ')
                p++;
        return p;
}

/* Read the words of target s into t: 0, or -EINVAL when s is no target at all. */
static int target_scan(const char *s, struct target_words *t)
{
        const char *p = skip_spaces(s);
        char *end;

        *t = (struct target_words){};
        if (startswith(p, ">="))
                t->ge = true;
        else if (!startswith(p, "<="))
                return -EINVAL;
        p = skip_spaces(p + 2);
        if (*p == '+' || *p == '-') {
                t->sign = true;
                t->minus = *p == '-';
                p++;
        }
        if (!(*p >= '0' && *p <= '9') && *p != '.')
                return -EINVAL;
        errno = 0;
        t->v = strtod(p, &end);
        if (errno != 0 || end == p || !isfinite(t->v))
                return -EINVAL;
        p = skip_spaces(end);
        if (*p == '%') {
                t->pct = true;
                p = skip_spaces(p + 1);
        }
        return *p ? -EINVAL : 0;
}

/* A change in percent against the baseline (up: the metric is better higher): a gain or a bound. */
static int target_pct(const char *metric, const char *s, bool up, const struct target_words *t,
                      enum mx_criterion_op *ret_op, char **reterr)
{
        /* Better by X % reads ">= +X %" for throughputs and "<= -X %" for latencies. */
        bool better = up ? (t->ge && !t->minus) : (!t->ge && t->minus);
        bool worse_bound = up ? (t->ge && t->minus) : (!t->ge && !t->minus);

        if (better || (t->v == 0 && (t->ge == up))) {
                *ret_op = MX_CRITERION_MIN_GAIN_PCT;
                return 0;
        }
        if (worse_bound) {
                *ret_op = MX_CRITERION_MAX_REGRESSION_PCT;
                return 0;
        }
        if (reterr)
                *reterr = xasprintf("'%s': %s is better %s, so a relative target reads %s X %% (better by "
                                    "at least X %%) or %s X %% (worse by at most X %%)",
                                    s, metric, up ? "higher" : "lower", up ? ">= +" : "<= -",
                                    up ? ">= -" : "<= +");
        return -EINVAL;
}

/* A change in units against the baseline: at most X above (<= +X) or below (>= -X). */
static int target_units(const char *s, const struct target_words *t, enum mx_criterion_op *ret_op,
                        char **reterr)
{
        if (!t->ge && !t->minus) {
                *ret_op = MX_CRITERION_MAX_INCREASE;
                return 0;
        }
        if (t->ge && t->minus) {
                *ret_op = MX_CRITERION_MAX_DECREASE;
                return 0;
        }
        if (reterr)
                *reterr = xasprintf("'%s': a change in units reads <= +X (at most X above the baseline) or "
                                    ">= -X (at most X below); for a gain write a percentage",
                                    s);
        return -EINVAL;
}

int mx_criterion_parse_target(const char *metric, const char *s, enum mx_criterion_op *ret_op,
                              double *ret_value, char **reterr)
{
        const struct mx_metric_info *mi = mx_metric_lookup(metric);
        bool up = mi && mi->higher_is_better;
        struct target_words t;
        enum mx_criterion_op op;
        int r;

        if (target_scan(s, &t) < 0) {
                if (reterr)
                        *reterr = xasprintf("'%s' is not a target: write '>= 52' or '<= 500' (absolute), "
                                            "'>= +10 %%' or '<= +3 %%' (percent against the baseline), "
                                            "'<= +2' (units against the baseline)",
                                            s);
                return -EINVAL;
        }
        if (t.pct && !t.sign) {
                if (reterr)
                        *reterr = xasprintf("'%s': a percentage is a change against the baseline: write it "
                                            "with its sign (>= +10 %%, <= +3 %%)",
                                            s);
                return -EINVAL;
        }
        if (!t.sign)
                op = t.ge ? MX_CRITERION_MIN : MX_CRITERION_MAX;
        else {
                r = t.pct ? target_pct(metric, s, up, &t, &op, reterr) : target_units(s, &t, &op, reterr);
                if (r < 0)
                        return r;
        }
        *ret_op = op;
        *ret_value = t.v;
        return 0;
}

/* An optional string member of at most max bytes (a copy in *ret), NULL when absent. */
static int opt_string(const struct mx_matrix *m, json_t *obj, const char *key, size_t max, char **ret,
                      char **reterr)
{
        json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_string(v))
                return mx_matrix_error_at(m, obj, key, reterr, "expected a string, got %s", mx_json_kind(v));
        if (json_string_length(v) > max)
                return mx_matrix_error_at(m, obj, key, reterr,
                                          "string of %zu bytes is longer than the limit of %zu",
                                          json_string_length(v), max);
        *ret = xstrdup(json_string_value(v));
        return 0;
}

/* A known metric name at obj.metric (required). */
static int metric_member(const struct mx_matrix *m, json_t *obj, char **ret, char **reterr)
{
        _cleanup_free_ char *s = NULL;
        int r;

        if (!json_object_get(obj, "metric"))
                return mx_matrix_error_at(m, obj, NULL, reterr, "missing required key 'metric'");
        r = opt_string(m, obj, "metric", MX_MATRIX_MAX_NAME, &s, reterr);
        if (r < 0)
                return r;
        if (!mx_metric_lookup(s)) {
                _cleanup_buf_ struct mx_buf known = MX_BUF_INIT;
                _cleanup_free_ char *e = mx_escape(s, MX_MATRIX_MAX_NAME);

                for (size_t i = 0; i < mx_n_metrics; i++)
                        mx_buf_printf(&known, "%s%s", i > 0 ? ", " : "", mx_metrics[i].name);
                return mx_matrix_error_at(m, obj, "metric", reterr, "unknown metric '%s' (metrics: %s)", e,
                                          known.data);
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int mx_criterion_load(const struct mx_matrix *m, json_t *node, struct mx_matrix_criterion *c, char **reterr)
{
        static const char *const keys[] = {"metric",
                                           "min_gain_pct",
                                           "max_regression_pct",
                                           "max_increase",
                                           "max_decrease",
                                           "max",
                                           "min",
                                           "target",
                                           "baseline",
                                           "note",
                                           NULL};
        _cleanup_free_ char *target = NULL;
        json_t *b;
        int found = 0, r;

        if (!json_is_object(node))
                return mx_matrix_error_at(m, node, NULL, reterr, "expected an object, got %s",
                                          mx_json_kind(node));
        r = mx_matrix_check_keys(m, node, keys, "a criterion", reterr);
        if (r < 0)
                return r;
        r = metric_member(m, node, &c->metric, reterr);
        if (r < 0)
                return r;
        for (int op = 0; op < _MX_CRITERION_OP_MAX; op++) {
                const char *k = mx_criterion_op_to_string(op);
                json_t *v = json_object_get(node, k);

                if (!v)
                        continue;
                if (!json_is_number(v))
                        return mx_matrix_error_at(m, node, k, reterr, "expected a number, got %s",
                                                  mx_json_kind(v));
                if (found++)
                        return mx_matrix_error_at(m, node, k, reterr,
                                                  "a criterion has exactly one comparison; split it in two");
                c->op = op;
                c->value = json_number_value(v);
                if (!isfinite(c->value) ||
                    (op != MX_CRITERION_MAX && op != MX_CRITERION_MIN && c->value < 0))
                        return mx_matrix_error_at(m, node, k, reterr, "expected a non-negative number");
        }
        r = opt_string(m, node, "target", MX_MATRIX_MAX_NAME, &target, reterr);
        if (r < 0)
                return r;
        if (target) {
                _cleanup_free_ char *why = NULL;

                if (found++)
                        return mx_matrix_error_at(m, node, "target", reterr,
                                                  "a criterion has exactly one comparison; split it in two");
                r = mx_criterion_parse_target(c->metric, target, &c->op, &c->value, &why);
                if (r < 0)
                        return mx_matrix_error_at(m, node, "target", reterr, "%s", why);
        }
        if (!found)
                return mx_matrix_error_at(
                        m, node, NULL, reterr,
                        "a criterion needs one of min_gain_pct, max_regression_pct, max_increase, "
                        "max_decrease, max, min, or a target such as \">= +10 %%\"");
        b = json_object_get(node, "baseline");
        if (b) {
                if (!json_is_number(b) || !isfinite(json_number_value(b)))
                        return mx_matrix_error_at(m, node, "baseline", reterr, "expected a number, got %s",
                                                  mx_json_kind(b));
                c->has_baseline = true;
                c->baseline = json_number_value(b);
        }
        return opt_string(m, node, "note", MX_MATRIX_MAX_STRING, &c->note, reterr);
}

/* A hard_constraints array of parent (0 to MX_MATRIX_MAX_CRITERIA criteria); *ret_present false when absent.
 */
static int load_hard(const struct mx_matrix *m, json_t *parent, struct mx_matrix_criterion **ret,
                     size_t *ret_n, bool *ret_present, char **reterr)
{
        json_t *arr = json_object_get(parent, "hard_constraints"), *c;
        size_t i;
        int r;

        *ret_present = arr != NULL;
        if (!arr)
                return 0;
        if (!json_is_array(arr))
                return mx_matrix_error_at(m, parent, "hard_constraints", reterr, "expected an array, got %s",
                                          mx_json_kind(arr));
        if (json_array_size(arr) > MX_MATRIX_MAX_CRITERIA)
                return mx_matrix_error_at(m, parent, "hard_constraints", reterr,
                                          "%zu hard constraints, more than the limit of %d",
                                          json_array_size(arr), MX_MATRIX_MAX_CRITERIA);
        *ret = xcalloc(MX_MAX(json_array_size(arr), 1), sizeof(**ret));
        json_array_foreach (arr, i, c) {
                if (!json_is_object(c))
                        return mx_matrix_error_index(m, arr, i, reterr, "expected an object, got %s", mx_json_kind(c));
                *ret_n = i + 1;
                r = mx_criterion_load(m, c, &(*ret)[i], reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Seed 000's hard constraints, for a matrix that declares none. */
static void default_hard(struct mx_matrix *m)
{
        static const struct {
                const char *metric;
                enum mx_criterion_op op;
                double value;
                const char *note;
        } seed[] = {
                {"ttft_p50_ms", MX_CRITERION_MAX_REGRESSION_PCT, 3, "seed 000: no TTFT regression > 3%"},
                {"memory_gb", MX_CRITERION_MAX_INCREASE, 2, "seed 000: no memory increase > 2GB"},
                {"crashes", MX_CRITERION_MAX, 0, "seed 000: no crashes in stress test"},
        };

        m->hard = xcalloc(ELEMENTSOF(seed), sizeof(*m->hard));
        for (size_t i = 0; i < ELEMENTSOF(seed); i++)
                m->hard[i] = (struct mx_matrix_criterion){.metric = xstrdup(seed[i].metric),
                                                          .op = seed[i].op,
                                                          .value = seed[i].value,
                                                          .note = xstrdup(seed[i].note)};
        m->n_hard = ELEMENTSOF(seed);
}

/* A feature named by name or by id ("P2"); -1 when none or when the id is ambiguous. */
static int feature_ref(const struct mx_matrix *m, const char *s)
{
        int64_t prio;
        int found = -1;

        found = mx_matrix_feature_index(m, s);
        if (found >= 0 || (s[0] != 'P' && s[0] != 'p') || mx_parse_int64(s + 1, 1, 1000, &prio) < 0)
                return found;
        for (size_t i = 0; i < m->n_features; i++)
                if (m->features[i].priority == prio) {
                        if (found >= 0)
                                return -1;
                        found = (int)i;
                }
        return found;
}

static int feature_ref_error(const struct mx_matrix *m, json_t *node, const char *key, size_t index,
                             const char *s, char **reterr)
{
#define NO_FEATURE                                                                                          \
        "no feature is named '%s' (a feature's name, or P and its priority when one feature has it)"
        _cleanup_free_ char *e = mx_escape(s, MX_MATRIX_MAX_NAME);

        if (index != SIZE_MAX)
                return mx_matrix_error_index(m, node, index, reterr, NO_FEATURE, e);
        return mx_matrix_error_at(m, node, key, reterr, NO_FEATURE, e);
#undef NO_FEATURE
}

/* "of": one feature or an array of them; absent: the feature's dependencies. */
static int load_gate_of(const struct mx_matrix *m, size_t self, json_t *node, struct mx_matrix_gate *g,
                        char **reterr)
{
        const struct mx_matrix_feature *f = &m->features[self];
        json_t *of = json_object_get(node, "of"), *v;
        size_t i;
        int k;

        if (!of) {
                if (f->n_depends_on == 0)
                        return mx_matrix_error_at(
                                m, node, NULL, reterr,
                                "a gate judges the runs of the features named by 'of', or of "
                                "the feature's depends_on; '%s' has neither",
                                f->name);
                g->of = xcalloc(f->n_depends_on, sizeof(size_t));
                memcpy(g->of, f->depends_on, f->n_depends_on * sizeof(size_t));
                g->n_of = f->n_depends_on;
                return 0;
        }
        if (json_is_string(of)) {
                k = feature_ref(m, json_string_value(of));
                if (k < 0)
                        return feature_ref_error(m, node, "of", SIZE_MAX, json_string_value(of), reterr);
                if ((size_t)k == self)
                        return mx_matrix_error_at(m, node, "of", reterr,
                                                  "a gate holds its feature back until other features' runs "
                                                  "pass it: it cannot judge the feature's own runs");
                g->of = xcalloc(1, sizeof(size_t));
                g->of[0] = (size_t)k;
                g->n_of = 1;
                return 0;
        }
        if (!json_is_array(of) || json_array_size(of) == 0 || json_array_size(of) > MX_MATRIX_MAX_FEATURES)
                return mx_matrix_error_at(m, node, "of", reterr,
                                          "expected a feature or an array of 1 to %d features, got %s",
                                          MX_MATRIX_MAX_FEATURES, mx_json_kind(of));
        g->of = xcalloc(json_array_size(of), sizeof(size_t));
        json_array_foreach (of, i, v) {
                if (!json_is_string(v))
                        return mx_matrix_error_index(m, of, i, reterr, "expected a feature name, got %s", mx_json_kind(v));
                k = feature_ref(m, json_string_value(v));
                if (k < 0)
                        return feature_ref_error(m, of, NULL, i, json_string_value(v), reterr);
                if ((size_t)k == self)
                        return mx_matrix_error_index(
                                m, of, i, reterr,
                                "a gate holds its feature back until other features' runs pass it: it "
                                "cannot judge the feature's own runs");
                for (size_t j = 0; j < g->n_of; j++)
                        if (g->of[j] == (size_t)k)
                                return mx_matrix_error_index(m, of, i, reterr, "'%s' is named twice",
                                                 json_string_value(v));
                g->of[g->n_of++] = (size_t)k;
        }
        return 0;
}

static int number_member(const struct mx_matrix *m, json_t *node, const char *key, double *ret,
                         char **reterr)
{
        json_t *v = json_object_get(node, key);

        if (!v)
                return mx_matrix_error_at(m, node, NULL, reterr, "missing required key '%s'", key);
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
                return mx_matrix_error_at(m, node, key, reterr, "expected a number, got %s", mx_json_kind(v));
        *ret = json_number_value(v);
        return 0;
}

/* Which keys a kind of gate condition takes, besides of and note. */
static const char *const gate_kind_keys[_MX_GATE_KIND_MAX][4] = {
        [MX_GATE_METRIC] = {"metric", "op", "value", NULL},
        [MX_GATE_LEVEL] = {"level", NULL},
        [MX_GATE_KERNELS_VERIFIED] = {"kernels_verified", NULL},
        [MX_GATE_SPEEDUP] = {"speedup_vs", "metric", "min_percent", NULL},
};

/*
 * Seed 001's test levels. A gate may name one this build does not run yet:
 * the matrix outlives the daemon version, and the gate then stays unknown.
 */
static bool seed_level(const char *s)
{
        static const char *const names[] = {"L1", "L1.5", "L2", "L3", "L4", "L5", "L6"};

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(names[i], s))
                        return true;
        return false;
}

static const char *const gate_keys[] = {
        "of",         "metric",      "op",   "value", "level", "kernels_verified",
        "speedup_vs", "min_percent", "note", NULL};

/* The kind of condition a gate states, told by the key only that kind has. */
static int gate_kind(const struct mx_matrix *m, json_t *node, struct mx_matrix_gate *g, char **reterr)
{
        if (json_object_get(node, "speedup_vs"))
                g->kind = MX_GATE_SPEEDUP;
        else if (json_object_get(node, "kernels_verified"))
                g->kind = MX_GATE_KERNELS_VERIFIED;
        else if (json_object_get(node, "level"))
                g->kind = MX_GATE_LEVEL;
        else if (json_object_get(node, "metric"))
                g->kind = MX_GATE_METRIC;
        else
                return mx_matrix_error_at(m, node, NULL, reterr,
                                          "a gate needs one of: metric with op and value, level, "
                                          "kernels_verified, speedup_vs with metric and min_percent");
        return 0;
}

/* Keys of another kind of condition are mistakes, not extras to ignore. */
static int gate_keys_of_kind(const struct mx_matrix *m, json_t *node, const struct mx_matrix_gate *g,
                             char **reterr)
{
        const char *const *want = gate_kind_keys[g->kind];

        for (size_t i = 0; gate_keys[i]; i++) {
                bool ok = streq(gate_keys[i], "of") || streq(gate_keys[i], "note");

                for (size_t j = 0; want[j]; j++)
                        ok = ok || streq(want[j], gate_keys[i]);
                if (!ok && json_object_get(node, gate_keys[i]))
                        return mx_matrix_error_at(
                                m, node, gate_keys[i], reterr,
                                "'%s' does not belong in a %s gate (one condition per gate; "
                                "split it in two)",
                                gate_keys[i], want[0]);
        }
        return 0;
}

static int load_gate_metric(const struct mx_matrix *m, json_t *node, struct mx_matrix_gate *g, char **reterr)
{
        _cleanup_free_ char *op = NULL;
        int r;

        r = metric_member(m, node, &g->metric, reterr);
        if (r < 0)
                return r;
        if (!json_object_get(node, "op"))
                return mx_matrix_error_at(m, node, NULL, reterr, "missing required key 'op'");
        r = opt_string(m, node, "op", MX_MATRIX_MAX_NAME, &op, reterr);
        if (r < 0)
                return r;
        g->op = mx_gate_op_from_string(op);
        if (g->op < 0) {
                _cleanup_free_ char *e = mx_escape(op, MX_MATRIX_MAX_NAME);

                return mx_matrix_error_at(m, node, "op", reterr, "unknown op '%s' (<, <=, >, >=)", e);
        }
        return number_member(m, node, "value", &g->value, reterr);
}

static int load_gate_level(const struct mx_matrix *m, json_t *node, struct mx_matrix_gate *g, char **reterr)
{
        json_t *v = json_object_get(node, "level");

        if (!json_is_string(v))
                return mx_matrix_error_at(m, node, "level", reterr, "expected a level name, got %s",
                                          mx_json_kind(v));
        if (!seed_level(json_string_value(v))) {
                _cleanup_free_ char *e = mx_escape(json_string_value(v), MX_MATRIX_MAX_NAME);

                return mx_matrix_error_at(m, node, "level", reterr,
                                          "unknown level '%s' (seed 001's levels: L1, L1.5, L2, L3, L4, "
                                          "L5, L6)",
                                          e);
        }
        g->level = xstrdup(json_string_value(v));
        return 0;
}

static int load_gate_kernels(const struct mx_matrix *m, json_t *node, struct mx_matrix_gate *g,
                             char **reterr)
{
        (void)g;
        if (!json_is_true(json_object_get(node, "kernels_verified")))
                return mx_matrix_error_at(m, node, NULL, reterr,
                                          "kernels_verified takes true (leave the condition out instead)");
        return 0;
}

static int load_gate_speedup(const struct mx_matrix *m, json_t *node, struct mx_matrix_gate *g,
                             char **reterr)
{
        json_t *v = json_object_get(node, "speedup_vs");
        int k, r;

        if (!json_is_string(v))
                return mx_matrix_error_at(m, node, "speedup_vs", reterr, "expected a feature name, got %s",
                                          mx_json_kind(v));
        k = feature_ref(m, json_string_value(v));
        if (k < 0)
                return feature_ref_error(m, node, "speedup_vs", SIZE_MAX, json_string_value(v), reterr);
        for (size_t i = 0; i < g->n_of; i++)
                if (g->of[i] == (size_t)k)
                        return mx_matrix_error_at(m, node, "speedup_vs", reterr,
                                                  "a feature's speedup is measured against another "
                                                  "feature");
        g->vs = (size_t)k;
        r = metric_member(m, node, &g->metric, reterr);
        if (r < 0)
                return r;
        return number_member(m, node, "min_percent", &g->value, reterr);
}

/* What each kind of condition reads from its gate object. */
typedef int gate_loader_fn(const struct mx_matrix *m, json_t *node, struct mx_matrix_gate *g, char **reterr);
static gate_loader_fn *const gate_loaders[_MX_GATE_KIND_MAX] = {
        [MX_GATE_METRIC] = load_gate_metric,
        [MX_GATE_LEVEL] = load_gate_level,
        [MX_GATE_KERNELS_VERIFIED] = load_gate_kernels,
        [MX_GATE_SPEEDUP] = load_gate_speedup,
};

static int load_gate(const struct mx_matrix *m, size_t self, json_t *node, struct mx_matrix_gate *g,
                     char **reterr)
{
        int r;

        g->node = node;
        r = mx_matrix_check_keys(m, node, gate_keys, "a gate", reterr);
        if (r < 0)
                return r;
        r = gate_kind(m, node, g, reterr);
        if (r < 0)
                return r;
        r = gate_keys_of_kind(m, node, g, reterr);
        if (r < 0)
                return r;
        r = load_gate_of(m, self, node, g, reterr);
        if (r < 0)
                return r;
        r = opt_string(m, node, "note", MX_MATRIX_MAX_STRING, &g->note, reterr);
        if (r < 0)
                return r;
        if (g->kind >= _MX_GATE_KIND_MAX || !gate_loaders[g->kind])
                return -EINVAL;
        return gate_loaders[g->kind](m, node, g, reterr);
}

/* A feature's "gate": a string for people, or an array of conditions. */
static int load_gates(struct mx_matrix *m, size_t self, char **reterr)
{
        struct mx_matrix_feature *f = &m->features[self];
        json_t *gate = json_object_get(f->node, "gate"), *c;
        size_t i;
        int r;

        if (!gate)
                return 0;
        if (json_is_string(gate))
                return opt_string(m, f->node, "gate", MX_MATRIX_MAX_STRING, &f->gate, reterr);
        if (!json_is_array(gate) || json_array_size(gate) == 0 ||
            json_array_size(gate) > MX_MATRIX_MAX_GATES)
                return mx_matrix_error_at(
                        m, f->node, "gate", reterr,
                        "expected a string (for people) or an array of 1 to %d conditions, "
                        "got %s",
                        MX_MATRIX_MAX_GATES, mx_json_kind(gate));
        f->gates = xcalloc(json_array_size(gate), sizeof(*f->gates));
        json_array_foreach (gate, i, c) {
                if (!json_is_object(c))
                        return mx_matrix_error_index(m, gate, i, reterr, "expected an object, got %s", mx_json_kind(c));
                f->n_gates = i + 1;
                r = load_gate(m, self, c, &f->gates[i], reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int mx_criteria_load(struct mx_matrix *m, char **reterr)
{
        bool present;
        int r;

        r = load_hard(m, m->root, &m->hard, &m->n_hard, &present, reterr);
        if (r < 0)
                return r;
        if (!present)
                default_hard(m);
        for (size_t i = 0; i < m->n_features; i++) {
                struct mx_matrix_feature *f = &m->features[i];

                r = load_hard(m, f->node, &f->hard, &f->n_hard, &f->has_hard, reterr);
                if (r < 0)
                        return r;
                r = load_gates(m, i, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

char *mx_gate_describe(const struct mx_matrix *m, const struct mx_matrix_gate *g)
{
        switch (g->kind) {
        case MX_GATE_METRIC:
                return xasprintf("%s %s %g", g->metric, mx_gate_op_to_string(g->op), g->value);
        case MX_GATE_LEVEL:
                return xasprintf("%s passed", g->level);
        case MX_GATE_KERNELS_VERIFIED:
                return xstrdup("kernels verified (L1.5 passed on a profiler report)");
        case MX_GATE_SPEEDUP: {
                _cleanup_free_ char *id = mx_feature_id(&m->features[g->vs]);

                return xasprintf("%s >= +%g %% vs %s (%s)", g->metric, g->value, id,
                                 m->features[g->vs].name);
        }
        default:
                return xstrdup("?");
        }
}
