/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix matrix check|show|cover FILE: work on a matrix file without a
 * daemon. Tables for people, one JSON document with --json.
 */
#include "client.h"
#include "cover-verify.h"
#include "expand.h"
#include "ident.h"
#include "matrix.h"
#include "output.h"
#include "plan.h"

#include <getopt.h>
#include <inttypes.h>

/* Counting streams the product; beyond this many cells "valid" is reported as not counted. */
#define MATRIX_COUNT_MAX_CELLS (UINT64_C(1) << 26)

static void matrix_help(FILE *f)
{
        fprintf(f,
                "Usage: mxmatrix matrix check FILE [--json]\n"
                "       mxmatrix matrix show FILE [--json]\n"
                "       mxmatrix matrix cover FILE [-t N] [--seed S] [--json]\n\n"
                "Work on a matrix file (see mxmatrix.json(5)) without a daemon.\n\n"
                "  check    validate FILE; print its size and the number of valid configurations,\n"
                "           and warn (on stderr) about expectations no source can ever satisfy\n"
                "  show     print axes, values, baseline, features, constraints and counts\n"
                "           (full product, valid configurations, pairwise and 3-way rows)\n"
                "  cover    print the rows of a covering array of strength N over the product\n\n"
                "Options:\n"
                "  -t, --strength N   covering strength, 1 to %d (cover; default 2, pairwise)\n"
                "      --seed S       covering-array seed (default 0); same seed, same rows\n"
                "      --json         print one JSON document\n"
                "  -h, --help         this help\n\n"
                "Exit status: 0 ok, 2 bad command line, 3 bad matrix file.\n",
                MX_COVER_MAX_T);
}

/* Load FILE, printing the error (or a JSON error document) on failure. */
static int load(const char *path, struct mx_matrix **ret)
{
        _cleanup_free_ char *why = NULL;
        int r;

        r = mx_matrix_load_file(path, ret, &why);
        if (r >= 0)
                return 0;
        if (arg_json) {
                _cleanup_(json_decrefp) json_t *j =
                        json_pack("{s:s,s:b,s:s}", "file", path, "ok", 0, "error", why);

                output_json(j);
        } else
                fprintf(stderr, "%s\n", why);
        return MX_EXIT_INPUT;
}

static size_t total_values(const struct mx_matrix *m)
{
        size_t n = 0;

        for (size_t a = 0; a < m->n_axes; a++)
                n += m->axes[a].n_values;
        return n;
}

/* Counts by streaming; *ret_counted false when the product is too large to stream here. */
static void count(const struct mx_matrix *m, struct mx_expand_counts *ret, bool *ret_counted)
{
        *ret_counted = mx_expand_count(m, NULL, MATRIX_COUNT_MAX_CELLS, ret) >= 0;
        if (!*ret_counted) {
                *ret = (struct mx_expand_counts){};
                ret->product = mx_expand_product_size(m, NULL, &ret->product_overflow);
        }
}

static char *format_product(const struct mx_expand_counts *c)
{
        return c->product_overflow ? xstrdup("more than 2^64") : xasprintf("%" PRIu64, c->product);
}

/* "FILE: ok (...)" or the error, exit 3 on a bad file. */
static int verb_check(const char *path)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        struct mx_expand_counts c;
        bool counted;
        int r;

        _cleanup_strv_free_ char **warnings = NULL;

        r = load(path, &m);
        if (r != 0)
                return r;
        count(m, &c, &counted);
        warnings = mx_matrix_warnings(m);
        if (arg_json) {
                json_t *w = json_array();

                for (size_t i = 0; warnings && warnings[i]; i++)
                        json_array_append_new(w, json_string(warnings[i]));
                _cleanup_(json_decrefp) json_t *j = json_pack(
                        "{s:s,s:b,s:s,s:I,s:I,s:I,s:o,s:o,s:o}", "file", path, "ok", 1, "name", m->name,
                        "axes", (json_int_t)m->n_axes, "values", (json_int_t)total_values(m), "features",
                        (json_int_t)m->n_features, "full",
                        c.product_overflow ? json_null() : json_integer((json_int_t)c.product), "valid",
                        counted ? json_integer((json_int_t)c.valid) : json_null(), "warnings", w);

                output_json(j);
                return MX_EXIT_OK;
        }
        /* The file is valid, but some expectations can never be met as it stands: say where. */
        for (size_t i = 0; warnings && warnings[i]; i++)
                fprintf(stderr, "warning: %s\n", warnings[i]);
        _cleanup_free_ char *full = format_product(&c);
        _cleanup_free_ char *valid =
                counted ? xasprintf("%" PRIu64, c.valid) : xstrdup("not counted (product too large)");

        printf("%s: ok (%zu axes, %zu values, %zu features; full %s, valid %s)\n", path, m->n_axes,
               total_values(m), m->n_features, full, valid);
        return MX_EXIT_OK;
}

/* Rows of a covering array of strength t over the unpinned product; -errno with *reterr. */
static int cover_rows(const struct mx_matrix *m, unsigned t, uint64_t seed, struct mx_matrix_cover *c,
                      int **ret_rows, size_t *ret_n, char **reterr)
{
        int r;

        mx_matrix_cover_build(m, NULL, true, c);
        if (c->n_params == 0) {
                *ret_rows = NULL;
                *ret_n = 0;
                return 0;
        }
        r = mx_cover_generate(&c->model, &(struct mx_cover_options){ .t = t, .seed = seed }, ret_rows, ret_n,
                              reterr);
        if (r < 0)
                return r;
        /* Never print an unproven array: the check is cheap next to generating it. */
        return mx_cover_verify(&c->model, MX_MIN(t, (unsigned)c->n_params), *ret_rows, *ret_n, reterr);
}

/* An axis value as JSON for matrix show. */
static json_t *value_to_json(const struct mx_matrix_value *v)
{
        json_t *aliases = json_array(), *env = json_array(), *argv = json_array();

        for (size_t i = 0; v->aliases && v->aliases[i]; i++)
                json_array_append_new(aliases, json_string(v->aliases[i]));
        for (size_t i = 0; v->env && v->env[i]; i++)
                json_array_append_new(env, json_string(v->env[i]));
        for (size_t i = 0; v->argv && v->argv[i]; i++)
                json_array_append_new(argv, json_string(v->argv[i]));
        return json_pack("{s:s,s:o,s:s?,s:b,s:o,s:o,s:o}", "name", v->name, "aliases", aliases,
                         "description", v->description, "product", v->product, "env", env, "argv", argv,
                         "expect", mx_expect_to_json(&v->expect));
}

/* Criteria (or hard constraints) as JSON for matrix show. */
static json_t *criteria_to_json(const struct mx_matrix_criterion *cs, size_t n)
{
        json_t *crit = json_array();

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = mx_criterion_describe(&cs[i]),
                                    *target = mx_criterion_target(&cs[i]);
                json_t *o = json_pack("{s:s,s:s,s:f,s:s,s:s?,s:s}", "metric", cs[i].metric, "op",
                                      mx_criterion_op_to_string(cs[i].op), "value", cs[i].value, "target",
                                      target, "note", cs[i].note, "text", text);

                if (cs[i].has_baseline)
                        json_object_set_new(o, "baseline", json_real(cs[i].baseline));
                json_array_append_new(crit, o);
        }
        return crit;
}

/* A feature's gate conditions: "P1 kernels verified (...)" with the features they judge. */
static json_t *gates_to_json(const struct mx_matrix *m, const struct mx_matrix_feature *f)
{
        json_t *gates = json_array();

        for (size_t i = 0; i < f->n_gates; i++) {
                _cleanup_free_ char *cond = mx_gate_describe(m, &f->gates[i]);
                json_t *of = json_array();

                for (size_t k = 0; k < f->gates[i].n_of; k++)
                        json_array_append_new(of, json_string(m->features[f->gates[i].of[k]].name));
                json_array_append_new(gates, json_pack("{s:o,s:s,s:s?}", "of", of, "condition", cond, "note",
                                                       f->gates[i].note));
        }
        return gates;
}

/* A feature with its criteria as JSON for matrix show. */
static json_t *feature_to_json(const struct mx_matrix *m, const struct mx_matrix_feature *f)
{
        json_t *deps = json_array(), *o;
        const struct mx_matrix_criterion *hard;
        size_t n_hard;

        for (size_t i = 0; i < f->n_depends_on; i++)
                json_array_append_new(deps, json_string(m->features[f->depends_on[i]].name));
        hard = mx_feature_hard(m, f, &n_hard);
        o = json_pack("{s:s,s:s?,s:s?,s:i,s:s,s:o,s:s,s:o,s:o,s:o,s:s?}", "name", f->name, "title", f->title,
                      "description", f->description, "priority", f->priority, "status",
                      mx_feature_status_to_string(f->status), "set", mx_config_to_json(m, f->set),
                      "hypothesis", f->hypothesis, "criteria", criteria_to_json(f->criteria, f->n_criteria),
                      "hard_constraints", criteria_to_json(hard, n_hard), "depends_on", deps, "gate",
                      f->gate);
        json_object_set_new(o, "gates", gates_to_json(m, f));
        return o;
}

/* The constraints, each with its place in the file, as JSON for matrix show. */
static json_t *constraints_to_json(const struct mx_matrix *m)
{
        json_t *ex = json_array(), *in = json_array(), *rules = json_array(), *ki = json_array();

        for (size_t i = 0; i < m->n_excludes; i++) {
                _cleanup_free_ char *at = mx_matrix_location(m, m->excludes[i].node);
                _cleanup_free_ char *text = mx_matrix_cond_describe(m, &m->excludes[i].cond);

                json_array_append_new(ex, json_pack("{s:s,s:s}", "at", at, "match", text));
        }
        for (size_t i = 0; i < m->n_includes; i++) {
                _cleanup_free_ char *at = mx_matrix_location(m, m->includes[i].node);

                json_array_append_new(in, json_pack("{s:s,s:o}", "at", at, "set",
                                                    mx_config_to_json(m, m->includes[i].values)));
        }
        for (size_t i = 0; i < m->n_rules; i++) {
                _cleanup_free_ char *at = mx_matrix_location(m, m->rules[i].node);
                _cleanup_free_ char *c_if = mx_matrix_cond_describe(m, &m->rules[i].if_);
                _cleanup_free_ char *c_then = mx_matrix_cond_describe(m, &m->rules[i].then);
                _cleanup_free_ char *c_else =
                        m->rules[i].has_else ? mx_matrix_cond_describe(m, &m->rules[i].else_) : NULL;

                json_array_append_new(rules,
                                      json_pack("{s:s,s:s,s:s,s:s?,s:s}", "at", at, "if", c_if, "then",
                                                c_then, "else", c_else, "reason", m->rules[i].reason));
        }
        for (size_t i = 0; i < m->n_known_incompatible; i++) {
                const struct mx_matrix_known_incompatible *k = &m->known_incompatible[i];
                _cleanup_free_ char *at = mx_matrix_location(m, k->node);
                _cleanup_free_ char *when = mx_matrix_cond_describe(m, &k->when);

                json_array_append_new(ki, json_pack("{s:s,s:s,s:s,s:s}", "at", at, "when", when, "expect",
                                                    mx_ki_expect_to_string(k->expect), "reason", k->reason));
        }
        return json_pack("{s:o,s:o,s:o,s:o}", "exclude", ex, "include", in, "rules", rules,
                         "known_incompatible", ki);
}

static json_t *strv_json(char *const *l)
{
        json_t *a = json_array();

        for (size_t i = 0; l && l[i]; i++)
                json_array_append_new(a, json_string(l[i]));
        return a;
}

struct show_counts {
        struct mx_expand_counts c;
        bool counted;
        size_t rows[2]; /* pairwise, 3-way */
        bool have_rows[2];
};

/* Full, valid and covering-array counts for matrix show. */
static void show_counts(const struct mx_matrix *m, struct show_counts *s)
{
        count(m, &s->c, &s->counted);
        for (unsigned t = 2; t <= 3; t++) {
                struct mx_matrix_cover c = {};
                _cleanup_free_ int *rows = NULL;
                _cleanup_free_ char *why = NULL;

                s->have_rows[t - 2] = cover_rows(m, t, 0, &c, &rows, &s->rows[t - 2], &why) >= 0;
                mx_matrix_cover_done(&c);
        }
}

/* matrix show as one JSON document. */
static int show_json(const struct mx_matrix *m, const struct show_counts *s)
{
        json_t *axes = json_array(), *features = json_array();
        _cleanup_(json_decrefp) json_t *j = NULL;

        for (size_t a = 0; a < m->n_axes; a++) {
                json_t *values = json_array();

                for (size_t v = 0; v < m->axes[a].n_values; v++)
                        json_array_append_new(values, value_to_json(&m->axes[a].values[v]));
                json_array_append_new(axes, json_pack("{s:s,s:s?,s:b,s:o}", "name", m->axes[a].name,
                                                      "description", m->axes[a].description, "product",
                                                      m->axes[a].product, "values", values));
        }
        for (size_t i = 0; i < m->n_features; i++)
                json_array_append_new(features, feature_to_json(m, &m->features[i]));
        j = json_pack("{s:s,s:s,s:s?,s:{s:s,s:o,s:o,s:s?,s:s?},s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o,s:o,s:o,s:"
                      "o,s:o}}",
                      "file", m->path, "name", m->name, "description", m->description, "target", "profile",
                      m->profile, "command", strv_json(m->command), "env", strv_json(m->target_env), "model",
                      m->model, "served_model_name", m->served_model_name, "axes", axes, "baseline",
                      mx_config_to_json(m, m->baseline), "features", features, "constraints",
                      constraints_to_json(m), "counts", "full",
                      s->c.product_overflow ? json_null() : json_integer((json_int_t)s->c.product), "valid",
                      s->counted ? json_integer((json_int_t)s->c.valid) : json_null(), "excluded",
                      s->counted ? json_integer((json_int_t)s->c.excluded) : json_null(), "invalid",
                      s->counted ? json_integer((json_int_t)s->c.invalid) : json_null(), "appended",
                      s->counted ? json_integer((json_int_t)s->c.appended) : json_null(),
                      "known_incompatible",
                      s->counted ? json_integer((json_int_t)s->c.known_incompatible) : json_null(),
                      "pairwise", s->have_rows[0] ? json_integer((json_int_t)s->rows[0]) : json_null(),
                      "3way", s->have_rows[1] ? json_integer((json_int_t)s->rows[1]) : json_null());
        output_json(j);
        return MX_EXIT_OK;
}

/* Axes and values with what they set, the baseline marked. */
static void show_axes(const struct mx_matrix *m)
{
        static const char *const headers[] = { "AXIS", "VALUE", "ALIASES", "SETS", NULL };
        _cleanup_(table_freep) struct table *t = table_new(headers);

        printf("\nAxes (* = baseline; (not in product): reachable only through include, a feature or a pin):\n");
        for (size_t a = 0; a < m->n_axes; a++)
                for (size_t v = 0; v < m->axes[a].n_values; v++) {
                        const struct mx_matrix_value *val = &m->axes[a].values[v];
                        _cleanup_buf_ struct mx_buf sets = MX_BUF_INIT, aliases = MX_BUF_INIT;
                        _cleanup_free_ char *name = NULL;

                        for (size_t i = 0; val->env && val->env[i]; i++)
                                mx_buf_printf(&sets, "%s%s", sets.len ? " " : "", val->env[i]);
                        for (size_t i = 0; val->argv && val->argv[i]; i++)
                                mx_buf_printf(&sets, "%s%s", sets.len ? " " : "", val->argv[i]);
                        for (size_t i = 0; val->aliases && val->aliases[i]; i++)
                                mx_buf_printf(&aliases, "%s%s", i ? "," : "", val->aliases[i]);
                        name = xasprintf("%s%s%s", val->name, m->baseline[a] == (int)v ? "*" : "",
                                         m->axes[a].product && val->product ? "" : " (not in product)");
                        table_add(t, (const char *const[]){ v == 0 ? m->axes[a].name : "", name,
                                                            aliases.len ? aliases.data : "-",
                                                            sets.len ? sets.data : "(nothing: server default)" });
                }
        table_print(t, stdout);
}

/* One value's must-see and must-not-see patterns for one source. */
static void show_rules(const char *label, const struct mx_kgate_rules *r, const char *who)
{
        for (size_t i = 0; i < r->n_must_see; i++) {
                printf("  %-22s %s must see ", who, label);
                for (size_t k = 0; r->must_see[i].patterns[k]; k++)
                        printf("%s'%s'", k ? " or " : "", r->must_see[i].patterns[k]);
                putchar('\n');
        }
        for (size_t i = 0; r->must_not_see && r->must_not_see[i]; i++)
                printf("  %-22s %s must not see '%s'\n", who, label, r->must_not_see[i]);
}

/* The kernel gate's expectations of every value. */
static void show_expectations(const struct mx_matrix *m)
{
        printf("\nKernel gate (L1.5) expectations:\n");
        for (size_t a = 0; a < m->n_axes; a++)
                for (size_t v = 0; v < m->axes[a].n_values; v++) {
                        const struct mx_matrix_value *val = &m->axes[a].values[v];
                        _cleanup_free_ char *who = xasprintf("%s=%s", m->axes[a].name, val->name);

                        show_rules("log", &val->expect.log, who);
                        show_rules("kernels", &val->expect.kernels, who);
                }
}

/* Features: a table, then each one's hypothesis, criteria and gate. */
static void show_features(const struct mx_matrix *m)
{
        static const char *const headers[] = { "P", "FEATURE", "STATUS", "SETS", "DEPENDS ON", NULL };
        _cleanup_(table_freep) struct table *t = table_new(headers);

        if (m->n_features == 0)
                return;
        printf("\nFeatures:\n");
        for (size_t i = 0; i < m->n_features; i++) {
                const struct mx_matrix_feature *f = &m->features[i];
                _cleanup_free_ char *set = mx_config_describe(m, f->set), *prio = xasprintf("P%d", f->priority);
                _cleanup_buf_ struct mx_buf deps = MX_BUF_INIT;

                for (size_t d = 0; d < f->n_depends_on; d++)
                        mx_buf_printf(&deps, "%s%s", d ? ", " : "", m->features[f->depends_on[d]].name);
                table_add(t, (const char *const[]){ prio, f->name, mx_feature_status_to_string(f->status),
                                                    *set ? set : "(nothing)", deps.len ? deps.data : "-" });
        }
        table_print(t, stdout);
        for (size_t i = 0; i < m->n_features; i++) {
                const struct mx_matrix_feature *f = &m->features[i];

                printf("\n  %s%s%s%s\n    hypothesis: %s\n", f->name, f->title ? " (" : "",
                       strempty(f->title), f->title ? ")" : "", f->hypothesis);
                for (size_t c = 0; c < f->n_criteria; c++) {
                        _cleanup_free_ char *text = mx_criterion_describe(&f->criteria[c]);

                        printf("    criterion:  %s%s%s%s\n", text, f->criteria[c].note ? " (" : "",
                               strempty(f->criteria[c].note), f->criteria[c].note ? ")" : "");
                }
                if (f->has_hard)
                        for (size_t c = 0; c < f->n_hard; c++) {
                                _cleanup_free_ char *text = mx_criterion_describe(&f->hard[c]);

                                printf("    hard:       %s\n", text);
                        }
                if (f->gate)
                        printf("    gate:       %s (for people, not judged)\n", f->gate);
                for (size_t g = 0; g < f->n_gates; g++) {
                        _cleanup_free_ char *cond = mx_gate_describe(m, &f->gates[g]);
                        _cleanup_buf_ struct mx_buf of = MX_BUF_INIT;

                        for (size_t k = 0; k < f->gates[g].n_of; k++)
                                mx_buf_printf(&of, "%sP%d", k ? ", " : "",
                                              m->features[f->gates[g].of[k]].priority);
                        printf("    gate:       %s %s%s%s%s\n", of.data, cond, f->gates[g].note ? " (" : "",
                               strempty(f->gates[g].note), f->gates[g].note ? ")" : "");
                }
        }
        if (m->n_hard > 0) {
                printf("\n  hard constraints of every feature without its own:\n");
                for (size_t c = 0; c < m->n_hard; c++) {
                        _cleanup_free_ char *text = mx_criterion_describe(&m->hard[c]);

                        printf("    hard:       %s%s%s%s\n", text, m->hard[c].note ? " (" : "",
                               strempty(m->hard[c].note), m->hard[c].note ? ")" : "");
                }
        }
}

/* Constraints in the order they apply, with their places in the file. */
static void show_constraints(const struct mx_matrix *m)
{
        if (m->n_excludes + m->n_includes + m->n_rules + m->n_known_incompatible == 0)
                return;
        printf("\nConstraints (applied in this order):\n");
        for (size_t i = 0; i < m->n_excludes; i++) {
                _cleanup_free_ char *at = mx_matrix_location(m, m->excludes[i].node);
                _cleanup_free_ char *text = mx_matrix_cond_describe(m, &m->excludes[i].cond);

                printf("  exclude  %s  (%s)\n", text, at);
        }
        for (size_t i = 0; i < m->n_includes; i++) {
                _cleanup_free_ char *at = mx_matrix_location(m, m->includes[i].node);
                _cleanup_free_ char *text = mx_config_describe(m, m->includes[i].values);

                printf("  include  %s  (%s)\n", text, at);
        }
        for (size_t i = 0; i < m->n_rules; i++) {
                _cleanup_free_ char *at = mx_matrix_location(m, m->rules[i].node);
                _cleanup_free_ char *c_if = mx_matrix_cond_describe(m, &m->rules[i].if_);
                _cleanup_free_ char *c_then = mx_matrix_cond_describe(m, &m->rules[i].then);
                _cleanup_free_ char *c_else =
                        m->rules[i].has_else ? mx_matrix_cond_describe(m, &m->rules[i].else_) : NULL;

                printf("  rule     if %s then %s%s%s  (%s)\n           %s\n", *c_if ? c_if : "(always)",
                       c_then, c_else ? " else " : "", strempty(c_else), at, m->rules[i].reason);
        }
        for (size_t i = 0; i < m->n_known_incompatible; i++) {
                const struct mx_matrix_known_incompatible *k = &m->known_incompatible[i];
                _cleanup_free_ char *at = mx_matrix_location(m, k->node);
                _cleanup_free_ char *when = mx_matrix_cond_describe(m, &k->when);

                printf("  known incompatible (%s)  %s  (%s)\n           %s\n",
                       mx_ki_expect_to_string(k->expect), when, at, k->reason);
        }
}

/* matrix show: the whole file for people, or JSON. */
static int verb_show(const char *path)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        struct show_counts s = {};
        int r;

        r = load(path, &m);
        if (r != 0)
                return r;
        show_counts(m, &s);
        if (arg_json)
                return show_json(m, &s);

        _cleanup_free_ char *base = mx_config_describe(m, m->baseline), *full = format_product(&s.c);
        printf("Matrix %s (%s)\n", m->name, m->path);
        if (m->description)
                printf("  %s\n", m->description);
        printf("\nTarget: profile %s%s%s\n  command:", m->profile, m->model ? ", model " : "",
               strempty(m->model));
        for (size_t i = 0; m->command[i]; i++)
                printf(" %s", m->command[i]);
        putchar('\n');
        for (size_t i = 0; m->target_env && m->target_env[i]; i++)
                printf("  env: %s\n", m->target_env[i]);
        show_axes(m);
        printf("\nBaseline: %s\n", base);
        show_expectations(m);
        show_features(m);
        show_constraints(m);
        printf("\nCounts:\n  full product    %s\n", full);
        if (s.counted)
                printf("  valid           %" PRIu64 " (excluded %" PRIu64 ", broke a rule %" PRIu64
                       ", appended by include %" PRIu64 "; %" PRIu64 " of them known incompatible)\n",
                       s.c.valid, s.c.excluded, s.c.invalid, s.c.appended, s.c.known_incompatible);
        else
                printf("  valid           not counted (product larger than %" PRIu64 " cells)\n",
                       MATRIX_COUNT_MAX_CELLS);
        for (unsigned t = 0; t < 2; t++)
                if (s.have_rows[t])
                        printf("  %-15s %zu rows\n", t == 0 ? "pairwise" : "3-way", s.rows[t]);
                else
                        printf("  %-15s not available\n", t == 0 ? "pairwise" : "3-way");
        return MX_EXIT_OK;
}

/* matrix cover: a verified covering array as a table or JSON. */
static int verb_cover(const char *path, unsigned t, uint64_t seed)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        struct mx_matrix_cover c = {};
        _cleanup_free_ int *rows = NULL, *config = NULL;
        _cleanup_free_ char *why = NULL;
        uint64_t tuples = 0;
        size_t n = 0;
        int r;

        r = load(path, &m);
        if (r != 0)
                return r;
        r = cover_rows(m, t, seed, &c, &rows, &n, &why);
        if (r < 0) {
                mx_matrix_cover_done(&c);
                fprintf(stderr, "mxmatrix: %s: cannot build a covering array: %s\n", path, strna(why));
                return MX_EXIT_FAILURE;
        }
        if (c.n_params > 0)
                (void)mx_cover_count_tuples(&c.model, MX_MIN(t, (unsigned)c.n_params), &tuples);
        config = mx_config_new(m);
        if (arg_json) {
                json_t *jrows = json_array(), *axes = json_array();
                _cleanup_(json_decrefp) json_t *j = NULL;

                for (size_t p = 0; p < c.n_params; p++)
                        json_array_append_new(axes, json_string(m->axes[c.param_axis[p]].name));
                for (size_t i = 0; i < n; i++) {
                        mx_matrix_cover_row_to_config(m, &c, NULL, rows + i * c.n_params, config);
                        json_array_append_new(jrows, mx_config_to_json(m, config));
                }
                j = json_pack("{s:s,s:i,s:I,s:o,s:I,s:b,s:o}", "file", path, "t", (int)t, "seed",
                              (json_int_t)seed, "axes", axes, "tuples", (json_int_t)tuples, "verified", 1,
                              "rows", jrows);
                mx_matrix_cover_done(&c);
                output_json(j);
                return MX_EXIT_OK;
        }
        _cleanup_strv_free_ char **headers = NULL;
        strv_push(&headers, "#");
        for (size_t p = 0; p < c.n_params; p++)
                strv_push(&headers, m->axes[c.param_axis[p]].name);
        strv_push(&headers, "ID");
        _cleanup_(table_freep) struct table *tab = table_new((const char *const *)headers);
        for (size_t i = 0; i < n; i++) {
                _cleanup_strv_free_ char **row = NULL;
                _cleanup_free_ char *key = NULL;
                char hash[MX_IDENT_HASH_LEN + 1];

                mx_matrix_cover_row_to_config(m, &c, NULL, rows + i * c.n_params, config);
                key = mx_ident_key(m, config);
                strv_consume(&row, xasprintf("%zu", i + 1));
                for (size_t p = 0; p < c.n_params; p++)
                        strv_push(&row, m->axes[c.param_axis[p]].values[config[c.param_axis[p]]].name);
                strv_push(&row, mx_ident_hash_format(mx_ident_hash(key), hash));
                table_add(tab, (const char *const *)row);
        }
        table_print(tab, stdout);
        printf("%zu rows cover all %" PRIu64 " valid %u-tuples of %s (verified; seed %" PRIu64 ")\n", n,
               tuples, MX_MIN(t, (unsigned)c.n_params), path, seed);
        mx_matrix_cover_done(&c);
        return MX_EXIT_OK;
}

int cmd_matrix(int argc, char **argv)
{
        static const struct option opts[] = {
                { "strength", required_argument, NULL, 't' },
                { "seed", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int64_t t = 0, seed = 0;
        const char *sub;
        int c;

        if (argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                matrix_help(stdout);
                return MX_EXIT_OK;
        }
        if (argc < 2) {
                matrix_help(stderr);
                return MX_EXIT_USAGE;
        }
        sub = argv[1];
        optind = 0;
        while ((c = getopt_long(argc - 1, argv + 1, "t:h", opts, NULL)) >= 0) {
                switch (c) {
                case 't':
                        if (mx_parse_int64(optarg, 1, MX_COVER_MAX_T, &t) < 0) {
                                fprintf(stderr, "mxmatrix: -t wants a strength from 1 to %d, not '%s'\n",
                                        MX_COVER_MAX_T, optarg);
                                return MX_EXIT_USAGE;
                        }
                        break;
                case 'S':
                        if (mx_parse_int64(optarg, 0, INT64_MAX, &seed) < 0) {
                                fprintf(stderr, "mxmatrix: --seed wants a non-negative integer, not '%s'\n",
                                        optarg);
                                return MX_EXIT_USAGE;
                        }
                        break;
                case 'j':
                        arg_json = true;
                        break;
                case 'h':
                        matrix_help(stdout);
                        return MX_EXIT_OK;
                default:
                        return MX_EXIT_USAGE;
                }
        }
        /* getopt saw argv + 1: its non-options start at argv[1 + optind]. */
        if (argc - 1 - optind != 1) {
                fprintf(stderr, "mxmatrix: matrix %s wants exactly one FILE (see mxmatrix matrix --help)\n",
                        sub);
                return MX_EXIT_USAGE;
        }
        const char *path = argv[1 + optind];
        if (streq(sub, "check") || streq(sub, "show")) {
                if (t != 0 || seed != 0) {
                        fprintf(stderr, "mxmatrix: -t and --seed belong to 'matrix cover'\n");
                        return MX_EXIT_USAGE;
                }
                return streq(sub, "check") ? verb_check(path) : verb_show(path);
        }
        if (streq(sub, "cover"))
                return verb_cover(path, t > 0 ? (unsigned)t : 2, (uint64_t)seed);
        fprintf(stderr, "mxmatrix: unknown 'matrix' command '%s' (check, show, cover)\n", sub);
        return MX_EXIT_USAGE;
}
