/* SPDX-License-Identifier: MIT */
/*
 * The matrix model: lookups, what a configuration sets, constraint checks,
 * error positions, and the covering-array model; also what every loader
 * shares (the name rule, JSON kinds for errors, freeing a criterion), so the
 * loaders call down into this file, never into each other. Loading is in
 * matrix-load.c.
 */
#include "matrix.h"
#include "kcat.h"
#include "jsonpos.h"

static const char *const feature_status_table[_MX_FEATURE_STATUS_MAX] = {
        [MX_FEATURE_NOT_STARTED] = "not-started",
        [MX_FEATURE_IN_PROGRESS] = "in-progress",
        [MX_FEATURE_COMPLETED] = "completed",
        [MX_FEATURE_BLOCKED] = "blocked",
};

static const char *const criterion_op_table[_MX_CRITERION_OP_MAX] = {
        [MX_CRITERION_MIN_GAIN_PCT] = "min_gain_pct",
        [MX_CRITERION_MAX_REGRESSION_PCT] = "max_regression_pct",
        [MX_CRITERION_MAX_INCREASE] = "max_increase",
        [MX_CRITERION_MAX_DECREASE] = "max_decrease",
        [MX_CRITERION_MAX] = "max",
        [MX_CRITERION_MIN] = "min",
};

static const char *const ki_expect_table[_MX_KI_EXPECT_MAX] = {
        [MX_KI_EXPECT_FAIL] = "fail",
        [MX_KI_EXPECT_CRASH] = "crash",
};

/* Names follow seed 001 (Phase 9 "Results Format") and seed 000's criteria table. */
const struct mx_metric_info mx_metrics[] = {
        { "pp2048_tps", "tok/s", true, "prefill throughput, 2048-token prompt" },
        { "tg32_tps", "tok/s", true, "decode throughput, 32 generated tokens" },
        { "tg128_tps", "tok/s", true, "decode throughput, 128 generated tokens" },
        { "ttft_p50_ms", "ms", false, "TTFT, time to the first text (content, reasoning or tool call), median" },
        { "ttft_p99_ms", "ms", false, "TTFT, time to the first text, 99th percentile" },
        { "ttfr_p50_ms", "ms", false, "TTFR, time to the first response chunk (vLLM's TTFT), median" },
        { "ttfr_p99_ms", "ms", false, "TTFR, time to the first response chunk, 99th percentile" },
        { "tpot_p50_ms", "ms", false, "time per output token after the first text (TTFT's origin), median" },
        { "tpot_p99_ms", "ms", false, "time per output token after the first text, 99th percentile" },
        { "itl_p50_ms", "ms", false, "inter-token latency, median" },
        { "itl_p99_ms", "ms", false, "inter-token latency, 99th percentile" },
        { "e2e_p50_ms", "ms", false, "end-to-end request latency, median" },
        { "e2e_p99_ms", "ms", false, "end-to-end request latency, 99th percentile" },
        { "memory_gb", "GB", false,
          "peak memory of the server, one figure kind on both sides: GPU, unified-memory system or host PSS" },
        { "startup_s", "s", false, "server start until ready" },
        { "crashes", "", false, "server crashes during the run (stress level included)" },
};
const size_t mx_n_metrics = ELEMENTSOF(mx_metrics);

void mx_matrix_settings_overlay(struct mx_matrix_settings *base, const struct mx_matrix_settings *over)
{
        if (over->run_timeout_ms > 0)
                base->run_timeout_ms = over->run_timeout_ms;
        if (over->level_timeout_ms > 0)
                base->level_timeout_ms = over->level_timeout_ms;
        if (over->ready_timeout_ms > 0)
                base->ready_timeout_ms = over->ready_timeout_ms;
}

json_t *mx_matrix_settings_to_json(const struct mx_matrix_settings *s)
{
        json_t *o = json_object();

        if (s->run_timeout_ms > 0)
                json_object_set_new(o, "run_timeout_ms", json_integer(s->run_timeout_ms));
        if (s->level_timeout_ms > 0)
                json_object_set_new(o, "level_timeout_ms", json_integer(s->level_timeout_ms));
        if (s->ready_timeout_ms > 0)
                json_object_set_new(o, "ready_timeout_ms", json_integer(s->ready_timeout_ms));
        return o;
}

static int table_lookup(const char *const *table, size_t n, const char *s)
{
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (int)i;
        return -EINVAL;
}

const char *mx_feature_status_to_string(enum mx_feature_status s)
{
        return s >= 0 && s < _MX_FEATURE_STATUS_MAX ? feature_status_table[s] : NULL;
}

enum mx_feature_status mx_feature_status_from_string(const char *s)
{
        /* Seed 003 says a completed feature is merged into the branch: the same status. */
        if (s && streq(s, "merged"))
                return MX_FEATURE_COMPLETED;
        return table_lookup(feature_status_table, _MX_FEATURE_STATUS_MAX, s);
}

const char *mx_criterion_op_to_string(enum mx_criterion_op op)
{
        return op >= 0 && op < _MX_CRITERION_OP_MAX ? criterion_op_table[op] : NULL;
}

enum mx_criterion_op mx_criterion_op_from_string(const char *s)
{
        return table_lookup(criterion_op_table, _MX_CRITERION_OP_MAX, s);
}

const char *mx_ki_expect_to_string(enum mx_ki_expect e)
{
        return e >= 0 && e < _MX_KI_EXPECT_MAX ? ki_expect_table[e] : NULL;
}

enum mx_ki_expect mx_ki_expect_from_string(const char *s)
{
        return table_lookup(ki_expect_table, _MX_KI_EXPECT_MAX, s);
}

const struct mx_metric_info *mx_metric_lookup(const char *name)
{
        for (size_t i = 0; i < mx_n_metrics; i++)
                if (streq(mx_metrics[i].name, name))
                        return &mx_metrics[i];
        return NULL;
}

void mx_matrix_cond_done(struct mx_matrix_cond *c)
{
        free(c->terms);
        for (size_t i = 0; i < c->n_any; i++)
                mx_matrix_cond_done(&c->any[i]);
        free(c->any);
        if (c->not_)
                mx_matrix_cond_done(c->not_);
        free(c->not_);
        *c = (struct mx_matrix_cond){};
}

void mx_criterion_done(struct mx_matrix_criterion *c)
{
        free(c->metric);
        free(c->note);
}

static void value_done(struct mx_matrix_value *v)
{
        free(v->name);
        free(v->description);
        strv_free(v->aliases);
        strv_free(v->env);
        strv_free(v->argv);
        mx_kgate_expect_done(&v->expect);
}

static void feature_done(struct mx_matrix_feature *f)
{
        free(f->name);
        free(f->title);
        free(f->description);
        free(f->set);
        free(f->hypothesis);
        for (size_t i = 0; i < f->n_criteria; i++)
                mx_criterion_done(&f->criteria[i]);
        free(f->criteria);
        for (size_t i = 0; i < f->n_hard; i++)
                mx_criterion_done(&f->hard[i]);
        free(f->hard);
        free(f->depends_on);
        free(f->gate);
        for (size_t i = 0; i < f->n_gates; i++) {
                free(f->gates[i].of);
                free(f->gates[i].metric);
                free(f->gates[i].level);
                free(f->gates[i].note);
        }
        free(f->gates);
}

_printf_(5, 6) int mx_matrix_error_index(const struct mx_matrix *m, json_t *array, size_t index, char **reterr,
                                         const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = mx_matrix_verror_at(m, array, NULL, index, reterr, fmt, ap);
        va_end(ap);
        return r;
}

int mx_matrix_check_keys(const struct mx_matrix *m, json_t *obj, const char *const *allowed, const char *what,
                         char **reterr)
{
        const char *k;
        json_t *v;

        json_object_foreach (obj, k, v) {
                _cleanup_buf_ struct mx_buf known = MX_BUF_INIT;
                _cleanup_free_ char *e = NULL;
                bool ok = false;

                for (size_t i = 0; allowed[i]; i++)
                        ok = ok || streq(allowed[i], k);
                if (ok)
                        continue;
                e = mx_escape(k, MX_MATRIX_MAX_NAME);
                for (size_t i = 0; allowed[i]; i++)
                        mx_buf_printf(&known, "%s%s", i > 0 ? ", " : "", allowed[i]);
                return mx_matrix_error_at(m, obj, k, reterr, "unknown key '%s' in %s (known keys: %s)", e, what,
                                          known.data);
        }
        return 0;
}

/* The gate operators as data: the matrix file's spelling of each. */
static const char *const gate_op_table[_MX_GATE_OP_MAX] = {
        [MX_GATE_OP_LT] = "<",
        [MX_GATE_OP_LE] = "<=",
        [MX_GATE_OP_GT] = ">",
        [MX_GATE_OP_GE] = ">=",
};

const char *mx_gate_op_to_string(enum mx_gate_op op)
{
        return op >= 0 && op < _MX_GATE_OP_MAX ? gate_op_table[op] : NULL;
}

enum mx_gate_op mx_gate_op_from_string(const char *s)
{
        for (int i = 0; s && i < _MX_GATE_OP_MAX; i++)
                if (streq(gate_op_table[i], s))
                        return i;
        return _MX_GATE_OP_INVALID;
}

bool mx_gate_op_holds(enum mx_gate_op op, double a, double b)
{
        switch (op) {
        case MX_GATE_OP_LT:
                return a < b;
        case MX_GATE_OP_LE:
                return a <= b;
        case MX_GATE_OP_GT:
                return a > b;
        case MX_GATE_OP_GE:
                return a >= b;
        default:
                return false;
        }
}

/* What the matrix file's kernel_categories and decision_rules own (kcat-load.c parsed them). */
void mx_kcat_load_done(struct mx_matrix *m)
{
        for (size_t i = 0; i < m->n_kcats; i++)
                mx_kcat_def_done(&m->kcats[i]);
        free(m->kcats);
        for (size_t i = 0; i < m->n_drules; i++) {
                free(m->drules[i].when);
                free(m->drules[i].cats);
                free(m->drules[i].then);
                free(m->drules[i].note);
        }
        free(m->drules);
}

struct mx_matrix *mx_matrix_free(struct mx_matrix *m)
{
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_axes; i++) {
                for (size_t j = 0; j < m->axes[i].n_values; j++)
                        value_done(&m->axes[i].values[j]);
                free(m->axes[i].values);
                free(m->axes[i].name);
                free(m->axes[i].description);
        }
        free(m->axes);
        strv_free(m->health_command);
        free(m->axes_by_name);
        free(m->order);
        free(m->cache_key_axes);
        free(m->baseline);
        for (size_t i = 0; i < m->n_features; i++)
                feature_done(&m->features[i]);
        free(m->features);
        for (size_t i = 0; i < m->n_hard; i++)
                mx_criterion_done(&m->hard[i]);
        free(m->hard);
        for (size_t i = 0; i < m->n_excludes; i++)
                mx_matrix_cond_done(&m->excludes[i].cond);
        free(m->excludes);
        for (size_t i = 0; i < m->n_includes; i++)
                free(m->includes[i].values);
        free(m->includes);
        for (size_t i = 0; i < m->n_rules; i++) {
                mx_matrix_cond_done(&m->rules[i].if_);
                mx_matrix_cond_done(&m->rules[i].then);
                mx_matrix_cond_done(&m->rules[i].else_);
                free(m->rules[i].reason);
        }
        free(m->rules);
        for (size_t i = 0; i < m->n_known_incompatible; i++) {
                mx_matrix_cond_done(&m->known_incompatible[i].when);
                free(m->known_incompatible[i].reason);
                free(m->known_incompatible[i].workaround);
                free(m->known_incompatible[i].status);
        }
        free(m->known_incompatible);
        mx_kcat_load_done(m);
        free(m->name);
        free(m->description);
        free(m->profile);
        strv_free(m->command);
        strv_free(m->target_env);
        free(m->model);
        free(m->served_model_name);
        json_decref(m->profile_resolved);
        json_decref(m->metadata);
        json_decref(m->root);
        free(m->text);
        free(m->path);
        free(m);
        return NULL;
}

/* ---- error positions ---- */

struct json_path {
        struct mx_jsonpos_step *steps;
        size_t n, allocated;
};

/* Append a step to a path being built by find_node(). */
static void path_push(struct json_path *p, const char *key, size_t index)
{
        MX_GROW(p->steps, p->allocated, p->n + 1);
        p->steps[p->n++] = (struct mx_jsonpos_step){ .key = key, .index = index };
}

/* Depth-first search for target by identity; on success p holds the steps from root to it. */
static bool find_node(json_t *cur, json_t *target, struct json_path *p)
{
        if (cur == target)
                return true;
        if (json_is_object(cur)) {
                const char *k;
                json_t *v;

                json_object_foreach (cur, k, v) {
                        path_push(p, k, 0);
                        if (find_node(v, target, p))
                                return true;
                        p->n--;
                }
        } else if (json_is_array(cur)) {
                size_t i;
                json_t *v;

                json_array_foreach (cur, i, v) {
                        path_push(p, NULL, i);
                        if (find_node(v, target, p))
                                return true;
                        p->n--;
                }
        }
        return false;
}

/* Render a path the way errors name keys: axes[2].values[1].env.X. */
static char *path_to_string(const struct json_path *p)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < p->n; i++) {
                if (p->steps[i].key) {
                        _cleanup_free_ char *k = mx_escape(p->steps[i].key, MX_MATRIX_MAX_NAME);

                        mx_buf_printf(&b, "%s%s", i > 0 ? "." : "", k);
                } else
                        mx_buf_printf(&b, "[%zu]", p->steps[i].index);
        }
        return mx_buf_steal(&b);
}

/* Resolve node (+ key or index) to a path and a position; position 0:0 when not found. */
static void locate(const struct mx_matrix *m, json_t *node, const char *key, size_t index,
                   struct json_path *p, unsigned *ret_line, unsigned *ret_col)
{
        *ret_line = *ret_col = 0;
        if (!m->root || !node || !find_node(m->root, node, p))
                return;
        if (key)
                path_push(p, key, 0);
        else if (index != SIZE_MAX)
                path_push(p, NULL, index);
        if (mx_jsonpos_find(m->text, m->text_len, p->steps, p->n, key != NULL, ret_line, ret_col) < 0)
                *ret_line = *ret_col = 0;
}

int mx_matrix_verror_at(const struct mx_matrix *m, json_t *node, const char *key, size_t index,
                        char **reterr, const char *fmt, va_list ap)
{
        struct json_path p = {};
        _cleanup_free_ char *msg = xvasprintf(fmt, ap), *ps = NULL, *file = mx_escape(m->path, 0);
        unsigned line, col;

        locate(m, node, key, index, &p, &line, &col);
        ps = path_to_string(&p);
        free(p.steps);
        if (reterr) {
                _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

                mx_buf_puts(&b, file);
                if (line > 0)
                        mx_buf_printf(&b, ":%u:%u", line, col);
                mx_buf_puts(&b, ": ");
                if (*ps)
                        mx_buf_printf(&b, "key '%s': ", ps);
                mx_buf_puts(&b, msg);
                free(*reterr);
                *reterr = mx_buf_steal(&b);
        }
        return -EINVAL;
}

int mx_matrix_error_at(const struct mx_matrix *m, json_t *node, const char *key, char **reterr,
                       const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = mx_matrix_verror_at(m, node, key, SIZE_MAX, reterr, fmt, ap);
        va_end(ap);
        return r;
}

char *mx_matrix_location(const struct mx_matrix *m, json_t *node)
{
        struct json_path p = {};
        _cleanup_free_ char *file = mx_escape(m->path, 0);
        unsigned line, col;

        locate(m, node, NULL, SIZE_MAX, &p, &line, &col);
        free(p.steps);
        return line > 0 ? xasprintf("%s:%u:%u", file, line, col) : TAKE_PTR(file);
}

/* ---- what the loaders share ---- */

static const char *const json_kind_table[] = {
        [JSON_OBJECT] = "an object",
        [JSON_ARRAY] = "an array",
        [JSON_STRING] = "a string",
        [JSON_INTEGER] = "an integer",
        [JSON_REAL] = "a number",
        [JSON_TRUE] = "a boolean",
        [JSON_FALSE] = "a boolean",
        [JSON_NULL] = "null",
};

const char *mx_json_kind(json_t *v)
{
        size_t t = (size_t)json_typeof(v);

        return t < ELEMENTSOF(json_kind_table) && json_kind_table[t] ? json_kind_table[t] : "null";
}

bool mx_matrix_name_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > MX_MATRIX_MAX_NAME)
                return false;
        if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                      (s[i] >= '0' && s[i] <= '9') || strchr("._+-", s[i])))
                        return false;
        return true;
}

/* ---- lookups ---- */

int mx_matrix_axis_index(const struct mx_matrix *m, const char *name)
{
        for (size_t i = 0; i < m->n_axes; i++)
                if (streq(m->axes[i].name, name))
                        return (int)i;
        return -1;
}

int mx_matrix_value_index(const struct mx_matrix_axis *a, const char *name_or_alias)
{
        for (size_t i = 0; i < a->n_values; i++)
                if (streq(a->values[i].name, name_or_alias))
                        return (int)i;
        for (size_t i = 0; i < a->n_values; i++)
                if (strv_contains(a->values[i].aliases, name_or_alias))
                        return (int)i;
        return -1;
}

int mx_matrix_feature_index(const struct mx_matrix *m, const char *name)
{
        for (size_t i = 0; i < m->n_features; i++)
                if (streq(m->features[i].name, name))
                        return (int)i;
        return -1;
}

/* ---- configurations ---- */

int *mx_config_new(const struct mx_matrix *m)
{
        int *c = xreallocarray(NULL, MX_MAX(m->n_axes, 1), sizeof(int));

        for (size_t i = 0; i < m->n_axes; i++)
                c[i] = -1;
        return c;
}

int *mx_config_copy(const struct mx_matrix *m, const int *config)
{
        int *c = mx_config_new(m);

        memcpy(c, config, m->n_axes * sizeof(int));
        return c;
}

void mx_feature_apply(const struct mx_matrix *m, const struct mx_matrix_feature *f, int *config)
{
        for (size_t a = 0; a < m->n_axes; a++)
                if (f->set[a] >= 0)
                        config[a] = f->set[a];
}

bool mx_config_equal(const struct mx_matrix *m, const int *a, const int *b)
{
        return memcmp(a, b, m->n_axes * sizeof(int)) == 0;
}

char *mx_config_describe(const struct mx_matrix *m, const int *config)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b, "");
        for (size_t i = 0; i < m->n_axes; i++)
                if (config[i] >= 0)
                        mx_buf_printf(&b, "%s%s=%s", b.len > 0 ? "," : "", m->axes[i].name,
                                      m->axes[i].values[config[i]].name);
        return mx_buf_steal(&b);
}

static void cond_describe(const struct mx_matrix *m, const struct mx_matrix_cond *c, struct mx_buf *b)
{
        size_t start = b->len;

        for (size_t i = 0; i < c->n_terms; i++) {
                const struct mx_matrix_axis *ax = &m->axes[c->terms[i].axis];
                uint64_t all = ax->n_values >= 64 ? UINT64_MAX : (UINT64_C(1) << ax->n_values) - 1;
                uint64_t set = c->terms[i].set, rest = ~set & all;
                int n = __builtin_popcountll(set);

                mx_buf_puts(b, b->len > start ? ", " : "");
                if (n == 1)
                        mx_buf_printf(b, "%s=%s", ax->name, ax->values[__builtin_ctzll(set)].name);
                else if (__builtin_popcountll(rest) == 1)
                        mx_buf_printf(b, "%s!=%s", ax->name, ax->values[__builtin_ctzll(rest)].name);
                else {
                        mx_buf_printf(b, "%s in {", ax->name);
                        for (size_t v = 0, k = 0; v < ax->n_values; v++)
                                if (set & (UINT64_C(1) << v))
                                        mx_buf_printf(b, "%s%s", k++ ? ", " : "", ax->values[v].name);
                        mx_buf_putc(b, '}');
                }
        }
        if (c->n_any > 0) {
                mx_buf_puts(b, b->len > start ? ", any(" : "any(");
                for (size_t i = 0; i < c->n_any; i++) {
                        mx_buf_puts(b, i > 0 ? " | " : "");
                        cond_describe(m, &c->any[i], b);
                }
                mx_buf_putc(b, ')');
        }
        if (c->not_) {
                mx_buf_puts(b, b->len > start ? ", not(" : "not(");
                cond_describe(m, c->not_, b);
                mx_buf_putc(b, ')');
        }
}

char *mx_matrix_cond_describe(const struct mx_matrix *m, const struct mx_matrix_cond *c)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b, "");
        cond_describe(m, c, &b);
        return mx_buf_steal(&b);
}

char *mx_criterion_describe(const struct mx_matrix_criterion *c)
{
        const struct mx_metric_info *mi = mx_metric_lookup(c->metric);
        const char *unit = mi ? mi->unit : "", *sp = *unit ? " " : "";

        switch (c->op) {
        case MX_CRITERION_MIN_GAIN_PCT:
                return xasprintf("%s improves by >= %g%% vs baseline", c->metric, c->value);
        case MX_CRITERION_MAX_REGRESSION_PCT:
                return xasprintf("%s regresses by <= %g%% vs baseline", c->metric, c->value);
        case MX_CRITERION_MAX_INCREASE:
                return xasprintf("%s <= baseline + %g%s%s", c->metric, c->value, sp, unit);
        case MX_CRITERION_MAX_DECREASE:
                return xasprintf("%s >= baseline - %g%s%s", c->metric, c->value, sp, unit);
        case MX_CRITERION_MAX:
                return xasprintf("%s <= %g%s%s", c->metric, c->value, sp, unit);
        case MX_CRITERION_MIN:
                return xasprintf("%s >= %g%s%s", c->metric, c->value, sp, unit);
        default:
                return xstrdup(c->metric);
        }
}

bool mx_matrix_cond_matches(const struct mx_matrix_cond *c, const int *config)
{
        bool any = c->n_any == 0;

        for (size_t i = 0; i < c->n_terms; i++) {
                int v = config[c->terms[i].axis];

                if (v < 0 || !(c->terms[i].set & (UINT64_C(1) << v)))
                        return false;
        }
        for (size_t i = 0; i < c->n_any && !any; i++)
                any = mx_matrix_cond_matches(&c->any[i], config);
        return any && !(c->not_ && mx_matrix_cond_matches(c->not_, config));
}

bool mx_matrix_cond_mentions(const struct mx_matrix_cond *c, size_t axis)
{
        for (size_t t = 0; t < c->n_terms; t++)
                if (c->terms[t].axis == axis)
                        return true;
        for (size_t i = 0; i < c->n_any; i++)
                if (mx_matrix_cond_mentions(&c->any[i], axis))
                        return true;
        return c->not_ && mx_matrix_cond_mentions(c->not_, axis);
}

bool mx_matrix_rule_broken(const struct mx_matrix *m, size_t i, const int *config)
{
        const struct mx_matrix_rule *r = &m->rules[i];

        if (mx_matrix_cond_matches(&r->if_, config))
                return !mx_matrix_cond_matches(&r->then, config);
        return r->has_else && !mx_matrix_cond_matches(&r->else_, config);
}

int mx_matrix_excluded(const struct mx_matrix *m, const int *config)
{
        for (size_t i = 0; i < m->n_excludes; i++)
                if (mx_matrix_cond_matches(&m->excludes[i].cond, config))
                        return (int)i;
        return -1;
}

int mx_matrix_broken_rule(const struct mx_matrix *m, const int *config)
{
        for (size_t i = 0; i < m->n_rules; i++)
                if (mx_matrix_rule_broken(m, i, config))
                        return (int)i;
        return -1;
}

size_t mx_matrix_known_incompatible(const struct mx_matrix *m, const int *config, size_t *ret_indices)
{
        size_t n = 0;

        for (size_t i = 0; i < m->n_known_incompatible; i++)
                if (mx_matrix_cond_matches(&m->known_incompatible[i].when, config))
                        ret_indices[n++] = i;
        return n;
}

bool mx_matrix_apply_includes(const struct mx_matrix *m, int *config, const bool *original, bool *matched)
{
        bool any = false;

        for (size_t i = 0; i < m->n_includes; i++) {
                const int *iv = m->includes[i].values;
                bool match = true;

                for (size_t a = 0; a < m->n_axes && match; a++)
                        if (iv[a] >= 0 && original[a] && config[a] != iv[a])
                                match = false;
                if (!match)
                        continue;
                for (size_t a = 0; a < m->n_axes; a++)
                        if (iv[a] >= 0)
                                config[a] = iv[a];
                if (matched)
                        matched[i] = true;
                any = true;
        }
        return any;
}

static void strv_push_all(char ***l, char *const *src)
{
        for (size_t i = 0; src && src[i]; i++)
                strv_push(l, src[i]);
}

char **mx_config_env(const struct mx_matrix *m, const int *config)
{
        char **env = strv_copy(m->target_env);

        for (size_t a = 0; a < m->n_axes; a++)
                if (config[a] >= 0)
                        strv_push_all(&env, m->axes[a].values[config[a]].env);
        return env;
}

char **mx_config_flags(const struct mx_matrix *m, const int *config)
{
        char **flags = NULL;

        for (size_t a = 0; a < m->n_axes; a++)
                if (config[a] >= 0)
                        strv_push_all(&flags, m->axes[a].values[config[a]].argv);
        return flags;
}

char **mx_config_argv(const struct mx_matrix *m, const int *config)
{
        char **argv = strv_copy(m->command);
        _cleanup_strv_free_ char **flags = mx_config_flags(m, config);

        strv_push_all(&argv, flags);
        return argv;
}

void mx_config_expect(const struct mx_matrix *m, const int *config, struct mx_kgate_expect *ret)
{
        *ret = (struct mx_kgate_expect){};
        for (size_t a = 0; a < m->n_axes; a++)
                if (config[a] >= 0)
                        mx_kgate_expect_merge(ret, &m->axes[a].values[config[a]].expect);
}

/* ---- covering-array model ---- */

/* Map term t onto parameter p's values: the set of parameter value indices whose axis value is in t->set. */
static uint64_t term_param_set(const struct mx_matrix_cover *c, size_t p, uint64_t set)
{
        uint64_t r = 0;

        for (unsigned k = 0; k < c->n_values[p]; k++)
                if (set & (UINT64_C(1) << c->param_values[p][k]))
                        r |= UINT64_C(1) << k;
        return r;
}

static uint64_t param_all(const struct mx_matrix_cover *c, size_t p)
{
        return c->n_values[p] >= 64 ? UINT64_MAX : (UINT64_C(1) << c->n_values[p]) - 1;
}

/*
 * Conditions with any/not compile into forbidden patterns through their
 * disjunctive normal form: a list of conjunctions of parameter terms, each
 * conjunction one pattern. Terms on axes that are not parameters are
 * constants (an unassigned axis holds no term), and so are terms that hold
 * for every value of their parameter or for none.
 */
struct conj {
        struct mx_cover_term *t; /* at most one term per parameter */
        size_t n;
};

struct dnf {
        struct conj *c;
        size_t n;
        bool overflow; /* it would have more than MX_MATRIX_MAX_RULE_PATTERNS conjunctions */
};

static void dnf_done(struct dnf *d)
{
        for (size_t i = 0; i < d->n; i++)
                free(d->c[i].t);
        free(d->c);
        *d = (struct dnf){};
}

static struct dnf dnf_true(void)
{
        return (struct dnf){.c = xcalloc(1, sizeof(struct conj)), .n = 1};
}

static struct dnf dnf_false(void)
{
        return (struct dnf){};
}

/* Append a conjunction (taking it), or mark the overflow. */
static void dnf_push(struct dnf *d, struct conj c)
{
        if (d->n >= MX_MATRIX_MAX_RULE_PATTERNS) {
                d->overflow = true;
                free(c.t);
                return;
        }
        d->c = xreallocarray(d->c, d->n + 1, sizeof(struct conj));
        d->c[d->n++] = c;
}

/* a or b (consumes both). */
static struct dnf dnf_or(struct dnf a, struct dnf b)
{
        for (size_t i = 0; i < b.n; i++)
                dnf_push(&a, b.c[i]);
        a.overflow = a.overflow || b.overflow;
        free(b.c);
        return a;
}

/* x and y into *ret; false when some parameter is left without a value. */
static bool conj_and(const struct conj *x, const struct conj *y, struct conj *ret)
{
        struct conj r = {.t = xreallocarray(NULL, MX_MAX(x->n + y->n, 1), sizeof(struct mx_cover_term))};

        if (x->n > 0) /* the empty conjunction (true) has no terms array */
                memcpy(r.t, x->t, x->n * sizeof(struct mx_cover_term));
        r.n = x->n;
        for (size_t j = 0; j < y->n; j++) {
                size_t k = 0;

                while (k < x->n && r.t[k].param != y->t[j].param)
                        k++;
                if (k == x->n) {
                        r.t[r.n++] = y->t[j];
                        continue;
                }
                r.t[k].set &= y->t[j].set;
                if (r.t[k].set == 0) {
                        free(r.t);
                        return false;
                }
        }
        *ret = r;
        return true;
}

/* a and b (consumes both). */
static struct dnf dnf_and(struct dnf a, struct dnf b)
{
        struct dnf r = {.overflow = a.overflow || b.overflow};

        for (size_t i = 0; i < a.n && !r.overflow; i++)
                for (size_t j = 0; j < b.n && !r.overflow; j++) {
                        struct conj c;

                        if (conj_and(&a.c[i], &b.c[j], &c))
                                dnf_push(&r, c);
                }
        dnf_done(&a);
        dnf_done(&b);
        return r;
}

/* "axis takes a value in set" (negate: not in set) on the model's parameters. */
static struct dnf dnf_term(const struct mx_matrix_cover *c, const int *axis_param, unsigned axis,
                           uint64_t set, bool negate)
{
        int p = axis_param[axis];
        uint64_t ps;
        struct dnf d;

        if (p < 0) /* an unassigned axis holds no term: "in set" is false, "not in set" true */
                return negate ? dnf_true() : dnf_false();
        ps = term_param_set(c, (size_t)p, set);
        if (negate)
                ps = ~ps & param_all(c, (size_t)p);
        if (ps == 0)
                return dnf_false();
        if (ps == param_all(c, (size_t)p))
                return dnf_true();
        d = dnf_true();
        d.c[0].t = xmalloc(sizeof(struct mx_cover_term));
        d.c[0].t[0] = (struct mx_cover_term){.param = (unsigned)p, .set = ps};
        d.c[0].n = 1;
        return d;
}

/* The condition (positive) or its negation as a DNF; negations are pushed down to the terms. */
static struct dnf cond_dnf(const struct mx_matrix_cover *c, const int *axis_param,
                           const struct mx_matrix_cond *cond, bool positive)
{
        struct dnf d = positive ? dnf_true() : dnf_false();

        for (size_t i = 0; i < cond->n_terms; i++) {
                struct dnf t = dnf_term(c, axis_param, cond->terms[i].axis, cond->terms[i].set, !positive);

                d = positive ? dnf_and(d, t) : dnf_or(d, t);
        }
        if (cond->n_any > 0) {
                /* any(A, B): A or B; its negation: not A and not B. */
                struct dnf any = positive ? dnf_false() : dnf_true();

                for (size_t i = 0; i < cond->n_any; i++) {
                        struct dnf x = cond_dnf(c, axis_param, &cond->any[i], positive);

                        any = positive ? dnf_or(any, x) : dnf_and(any, x);
                }
                d = positive ? dnf_and(d, any) : dnf_or(d, any);
        }
        if (cond->not_) {
                struct dnf x = cond_dnf(c, axis_param, cond->not_, !positive);

                d = positive ? dnf_and(d, x) : dnf_or(d, x);
        }
        return d;
}

/* What rule i forbids: if and not then; with else, also not if and not else. */
static struct dnf rule_dnf(const struct mx_matrix *m, const struct mx_matrix_cover *c, const int *axis_param,
                           size_t i)
{
        const struct mx_matrix_rule *r = &m->rules[i];
        struct dnf d =
                dnf_and(cond_dnf(c, axis_param, &r->if_, true), cond_dnf(c, axis_param, &r->then, false));

        if (r->has_else)
                d = dnf_or(d, dnf_and(cond_dnf(c, axis_param, &r->if_, false),
                                      cond_dnf(c, axis_param, &r->else_, false)));
        return d;
}

struct pattern_builder {
        struct mx_cover_term *terms;
        size_t n_terms, terms_allocated;
        size_t *starts; /* per pattern: first term */
        size_t *counts;
        size_t n_patterns, patterns_allocated;
};

/* Each conjunction becomes a pattern; one that always holds forbids every row. */
static void patterns_add(struct pattern_builder *b, const struct mx_matrix_cover *c, struct dnf *d)
{
        for (size_t i = 0; i < d->n; i++) {
                const struct conj *x = &d->c[i];

                if (c->n_params == 0)
                        break;
                MX_GROW(b->terms, b->terms_allocated, b->n_terms + MX_MAX(x->n, 1));
                MX_GROW(b->starts, b->patterns_allocated, b->n_patterns + 1);
                b->counts = xreallocarray(b->counts, b->patterns_allocated, sizeof(size_t));
                b->starts[b->n_patterns] = b->n_terms;
                if (x->n == 0)
                        b->terms[b->n_terms++] = (struct mx_cover_term){.param = 0, .set = param_all(c, 0)};
                else {
                        memcpy(b->terms + b->n_terms, x->t, x->n * sizeof(struct mx_cover_term));
                        b->n_terms += x->n;
                }
                b->counts[b->n_patterns] = b->n_terms - b->starts[b->n_patterns];
                b->n_patterns++;
        }
        dnf_done(d);
}

/* The parameters of a covering-array model: product axes and pinned axes, with their values. */
static void cover_params(const struct mx_matrix *m, const int *pins, struct mx_matrix_cover *c,
                         int *axis_param)
{
        c->param_axis = xreallocarray(NULL, MX_MAX(m->n_axes, 1), sizeof(unsigned));
        c->param_values = xcalloc(MX_MAX(m->n_axes, 1), sizeof(int *));
        c->n_values = xcalloc(MX_MAX(m->n_axes, 1), sizeof(unsigned));
        for (size_t a = 0; a < m->n_axes; a++) {
                const struct mx_matrix_axis *ax = &m->axes[a];
                int pin = pins ? pins[a] : -1;

                axis_param[a] = -1;
                if (pin < 0 && !ax->product)
                        continue;
                axis_param[a] = (int)c->n_params;
                c->param_axis[c->n_params] = (unsigned)a;
                c->param_values[c->n_params] = xreallocarray(NULL, ax->n_values, sizeof(int));
                if (pin >= 0)
                        c->param_values[c->n_params][c->n_values[c->n_params]++] = pin;
                else
                        for (size_t v = 0; v < ax->n_values; v++)
                                if (ax->values[v].product)
                                        c->param_values[c->n_params][c->n_values[c->n_params]++] = (int)v;
                c->n_params++;
        }
}

size_t mx_matrix_rule_patterns(const struct mx_matrix *m, size_t i)
{
        struct mx_matrix_cover c = {};
        _cleanup_free_ int *axis_param = xreallocarray(NULL, MX_MAX(m->n_axes, 1), sizeof(int));
        struct dnf d;
        size_t n;

        cover_params(m, NULL, &c, axis_param);
        d = rule_dnf(m, &c, axis_param, i);
        n = d.overflow ? SIZE_MAX : d.n;
        dnf_done(&d);
        mx_matrix_cover_done(&c);
        return n;
}

/*
 * Known-incompatible entries as forbidden patterns: a covering array's rows are then
 * configurations that can pass. An entry the pins alone satisfy (a conjunction without
 * terms: every row would match) or one too large to compile is left in the rows;
 * set_aside[i] says which were added.
 */
static void known_patterns_add(const struct mx_matrix *m, struct pattern_builder *b, const struct mx_matrix_cover *c,
                               const int *axis_param, bool *set_aside)
{
        for (size_t i = 0; i < m->n_known_incompatible; i++) {
                struct dnf d = cond_dnf(c, axis_param, &m->known_incompatible[i].when, true);
                bool skip = d.overflow || d.n == 0; /* too large, or never true under the pins */

                for (size_t k = 0; k < d.n; k++)
                        skip = skip || d.c[k].n == 0; /* the pins alone satisfy it */
                if (skip) {
                        dnf_done(&d);
                        continue;
                }
                patterns_add(b, c, &d);
                set_aside[i] = true;
        }
}

static void cover_build(const struct mx_matrix *m, const int *pins, bool with_rules, bool *set_aside,
                        struct mx_matrix_cover *ret)
{
        struct mx_matrix_cover c = {};
        _cleanup_free_ int *axis_param = xreallocarray(NULL, MX_MAX(m->n_axes, 1), sizeof(int));
        struct pattern_builder b = {};

        cover_params(m, pins, &c, axis_param);
        for (size_t i = 0; i < m->n_excludes; i++) {
                struct dnf d = cond_dnf(&c, axis_param, &m->excludes[i].cond, true);

                patterns_add(&b, &c, &d);
        }
        for (size_t i = 0; with_rules && i < m->n_rules; i++) {
                struct dnf d = rule_dnf(m, &c, axis_param, i);

                /* The loader refused rules that overflow unpinned; pins only turn terms into constants. */
                if (d.overflow)
                        mx_die("matrix.c: rule %zu compiles into more than %d patterns", i,
                               MX_MATRIX_MAX_RULE_PATTERNS);
                patterns_add(&b, &c, &d);
        }
        if (set_aside)
                known_patterns_add(m, &b, &c, axis_param, set_aside);

        c.terms = b.terms;
        c.forbidden = xcalloc(MX_MAX(b.n_patterns, 1), sizeof(struct mx_cover_forbid));
        for (size_t i = 0; i < b.n_patterns; i++)
                c.forbidden[i] =
                        (struct mx_cover_forbid){ .n_terms = b.counts[i], .terms = c.terms + b.starts[i] };
        free(b.starts);
        free(b.counts);
        c.model = (struct mx_cover_model){
                .n_params = c.n_params,
                .n_values = c.n_values,
                .n_forbidden = b.n_patterns,
                .forbidden = c.forbidden,
        };
        *ret = c;
}

void mx_matrix_cover_build(const struct mx_matrix *m, const int *pins, bool with_rules,
                           struct mx_matrix_cover *ret)
{
        cover_build(m, pins, with_rules, NULL, ret);
}

void mx_matrix_cover_build_passable(const struct mx_matrix *m, const int *pins, bool *set_aside,
                                    struct mx_matrix_cover *ret)
{
        cover_build(m, pins, true, set_aside, ret);
}

void mx_matrix_cover_done(struct mx_matrix_cover *c)
{
        for (size_t p = 0; p < c->n_params; p++)
                free(c->param_values[p]);
        free(c->param_values);
        free(c->param_axis);
        free(c->n_values);
        free(c->forbidden);
        free(c->terms);
        *c = (struct mx_matrix_cover){};
}

void mx_matrix_cover_row_to_config(const struct mx_matrix *m, const struct mx_matrix_cover *c,
                                   const int *pins, const int *row, int *config)
{
        for (size_t a = 0; a < m->n_axes; a++)
                config[a] = pins ? pins[a] : -1;
        for (size_t p = 0; p < c->n_params; p++)
                config[c->param_axis[p]] = c->param_values[p][row[p]];
}

int mx_matrix_cover_config_to_row(const struct mx_matrix_cover *c, const int *config, int *row)
{
        for (size_t p = 0; p < c->n_params; p++) {
                int v = config[c->param_axis[p]];

                row[p] = -1;
                for (unsigned k = 0; k < c->n_values[p]; k++)
                        if (c->param_values[p][k] == v)
                                row[p] = (int)k;
                if (row[p] < 0)
                        return -1;
        }
        return 0;
}
