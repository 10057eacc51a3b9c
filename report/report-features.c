/* SPDX-License-Identifier: MIT */
/*
 * Seed 003's FEATURE_MATRIX.md parts that runs can fill: Feature Status
 * Overview (status from the runs beside the declared one), Configuration
 * Combinations Tested (one row per configuration) and Known Issues by
 * Configuration: the failures the runs showed, each headed by the smallest
 * combinations of axis values that explain it (the document's attribution,
 * mxmatrix attribute's analysis) with its log evidence and the runs, what
 * the runs cannot separate, beside the known issues the matrix declares and
 * whether the runs reproduced them. A document without an attribution
 * (exported before it had one) gets the older headings: what the failing
 * runs of a class have in common off the baseline.
 */
#include "report-internal.h"
#include "attrib.h"

#include <ctype.h>

/* The matrix's value object of axis=value (name or alias), or NULL. */
static json_t *value_of(json_t *doc, const char *axis, const char *value)
{
        json_t *a, *v, *al;
        size_t i, j, k;

        json_array_foreach (json_object_get(rep_matrix(doc), "axes"), i, a) {
                if (!streq_ptr(json_string_value(json_object_get(a, "name")), axis))
                        continue;
                json_array_foreach (json_object_get(a, "values"), j, v) {
                        if (streq_ptr(json_string_value(json_object_get(v, "name")), value))
                                return v;
                        json_array_foreach (json_object_get(v, "aliases"), k, al)
                                if (streq_ptr(json_string_value(al), value))
                                        return v;
                }
        }
        return NULL;
}

/* Does the run's configuration hold every axis=value the feature sets? */
static bool run_has_feature(json_t *doc, json_t *run, json_t *feature)
{
        json_t *set = json_object_get(feature, "set"), *v;
        const char *k;

        if (json_object_size(set) == 0)
                return false;
        json_object_foreach (set, k, v) {
                json_t *val = value_of(doc, k, json_string_value(v));
                const char *want =
                        val ? json_string_value(json_object_get(val, "name")) : json_string_value(v);

                if (!streq_ptr(json_string_value(json_object_get(json_object_get(run, "config"), k)), want))
                        return false;
        }
        return true;
}

static char *attrib_class_of(json_t *run);
static bool run_holds(json_t *run, json_t *when);
static int declared_index(json_t *doc, json_t *run);

/* Does a condition ("when": axis -> value, a list of values, or an object such as {"not": v}) name one of the
 * feature's axis values? Only plain values and lists count: a "not" blames no value of the feature. */
static bool when_names_feature(json_t *doc, json_t *when, json_t *feature)
{
        json_t *set = json_object_get(feature, "set"), *fv, *w, *x;
        const char *axis;
        size_t i;

        json_object_foreach (set, axis, fv) {
                json_t *val = value_of(doc, axis, json_string_value(fv));
                const char *name = val ? json_string_value(json_object_get(val, "name")) : json_string_value(fv);

                w = json_object_get(when, axis);
                if (json_is_string(w) && streq_ptr(json_string_value(w), name))
                        return true;
                json_array_foreach (w, i, x)
                        if (streq_ptr(json_string_value(x), name))
                                return true;
        }
        return false;
}

/*
 * The combination another issue blames for a failing run, when it leaves the feature's values out: the
 * attribution's groups of the run's failure class that the run holds (none names the feature), else the
 * matrix's known-incompatible declaration the run was marked with (its condition names none of the
 * feature's values). NULL when the failure is the feature's to answer for (or nothing explains it).
 */
static const char *blamed_elsewhere(json_t *doc, json_t *run, json_t *feature)
{
        json_t *at = json_object_get(doc, "attribution"), *c, *g;
        const char *other = NULL;
        size_t i, k;
        int d;

        if (json_is_array(json_object_get(at, "classes"))) {
                _cleanup_free_ char *cls = attrib_class_of(run);

                json_array_foreach (json_object_get(at, "classes"), i, c) {
                        if (!cls || !streq_ptr(json_string_value(json_object_get(c, "class")), cls))
                                continue;
                        json_array_foreach (json_object_get(c, "groups"), k, g) {
                                if (!run_holds(run, json_object_get(g, "when")))
                                        continue;
                                if (when_names_feature(doc, json_object_get(g, "when"), feature))
                                        return NULL;
                                other = other ?: json_string_value(json_object_get(g, "text"));
                        }
                }
                if (other)
                        return other;
        }
        if (!streq(rep_result(run), "xfail") || (d = declared_index(doc, run)) < 0)
                return NULL;
        g = json_array_get(json_object_get(rep_matrix(doc), "known_incompatible"), (size_t)d);
        return when_names_feature(doc, json_object_get(g, "when"), feature)
                       ? NULL
                       : json_string_value(json_object_get(g, "text"));
}

/* The levels the runs ran ("L1, L1.5"), and whether L4 (the benchmark) was among them. */
static char *levels_run(json_t *runs, bool *ret_l4)
{
        static const char *const order[] = {"L1", "L1.5", "L2", "L3", "L4", "L5", NULL};
        struct mx_buf b = MX_BUF_INIT;
        json_t *run;
        size_t i;

        *ret_l4 = false;
        for (size_t o = 0; order[o]; o++) {
                bool any = false;

                json_array_foreach (runs, i, run) {
                        json_t *l = rep_level(rep_attempt(run), order[o]);
                        const char *v = json_string_value(json_object_get(l, "verdict"));

                        any |= v && !streq(v, "skipped");
                }
                if (any)
                        mx_buf_printf(&b, "%s%s", b.len ? ", " : "", order[o]);
                *ret_l4 |= any && streq(order[o], "L4");
        }
        return b.len ? mx_buf_steal(&b) : (mx_buf_free(&b), xstrdup("no level"));
}

static const char *const status_symbols[_MX_FEATURE_STATUS_MAX] = {
        [MX_FEATURE_NOT_STARTED] = "⏳",
        [MX_FEATURE_IN_PROGRESS] = "🔄",
        [MX_FEATURE_COMPLETED] = "✅",
        [MX_FEATURE_BLOCKED] = "❌",
};

static const char *declared_symbol(const char *status)
{
        return status_symbols[rep_feature_status(status)];
}

/* The runs with a feature, counted for its status (feature_status()). */
struct feature_tally {
        unsigned pass, failed, n; /* n: the runs with a result charged to the feature */
        unsigned excused;         /* the runs that failed from another issue */
        json_t *passed, *others;  /* the passing runs; the issues blamed instead (strings, once each) */
        json_t *alone;            /* the feature alone on the baseline (borrowed), or NULL */
};

/* Add other to the strings of others unless it is there. */
static void note_other(json_t *others, const char *other)
{
        json_t *x;
        size_t q;
        bool dup = false;

        json_array_foreach (others, q, x)
                dup |= streq(json_string_value(x), other);
        if (!dup)
                json_array_append_new(others, json_string(other));
}

/* Count the feature's runs into t: passed, failed, excused (another issue's crash), and the one alone. */
static void tally_runs(json_t *doc, json_t *feature, struct feature_tally *t)
{
        json_t *run;
        size_t i;

        json_array_foreach (rep_runs(doc), i, run) {
                const char *res = rep_result(run), *other;

                if (!run_has_feature(doc, run, feature) || !rep_attempt(run))
                        continue;
                if (streq(res, "pass")) {
                        t->pass++;
                        json_array_append(t->passed, run);
                } else if (streq(res, "cancelled") || streq(res, "queued") || streq(res, "running"))
                        continue;
                else if ((other = blamed_elsewhere(doc, run, feature))) {
                        /* another issue's crash: its combination is named, the feature is not charged */
                        t->excused++;
                        note_other(t->others, other);
                        continue;
                } else
                        t->failed++;
                t->n++;
                /* the feature alone on the baseline, as the plan's feature-on run */
                if (!t->alone &&
                    startswith(json_string_value(json_array_get(json_object_get(run, "reasons"), 0)) ?: "",
                               "feature-on"))
                        t->alone = run;
        }
}

/* The run named after the feature (its title), which has an attempt; NULL when none. */
static json_t *run_named_after(json_t *doc, json_t *feature)
{
        const char *t = json_string_value(json_object_get(feature, "title"));
        json_t *run;
        size_t i;

        json_array_foreach (rep_runs(doc), i, run) {
                _cleanup_free_ char *name = rep_config_name(doc, run);

                if (rep_attempt(run) && t && streq(name, t))
                        return run;
        }
        return NULL;
}

/* "; 2 runs with it failed from other issues (a, b): not counted against it", or "" when none did. */
static char *elsewhere_text(const struct feature_tally *t)
{
        struct mx_buf b = MX_BUF_INIT;
        json_t *x;
        size_t q;

        if (t->excused) {
                mx_buf_printf(&b, "; %u run%s with it failed from other issues (", t->excused,
                              t->excused == 1 ? "" : "s");
                json_array_foreach (t->others, q, x)
                        mx_buf_printf(&b, "%s%s", q ? ", " : "", json_string_value(x));
                mx_buf_puts(&b, "): not counted against it");
        }
        mx_buf_puts(&b, "");
        return mx_buf_steal(&b);
}

/* The status's verdict from the tally: not tested, failing alone, failing, passing or mixed. */
static void verdict_write(struct mx_buf *st, json_t *doc, json_t *feature, const struct feature_tally *t,
                          const char *elsewhere)
{
        struct rep_failure fail = {};
        json_t *alone = t->alone;

        if (t->n == 0)
                mx_buf_printf(st, "⏳ Not tested in this job%s", elsewhere);
        else if (alone && !blamed_elsewhere(doc, alone, feature) && rep_run_failure(alone, &fail))
                mx_buf_printf(st,
                              "❌ Failing alone: r%" JSON_INTEGER_FORMAT
                              " %s (%s); %u of %u runs with it pass%s",
                              json_integer_value(json_object_get(alone, "id")), rep_result(alone),
                              fail.klass, t->pass, t->n, elsewhere);
        else if (t->pass == 0)
                mx_buf_printf(st, "❌ Failing: %u of %u runs with it fail%s", t->failed, t->n, elsewhere);
        else if (t->failed == 0)
                mx_buf_printf(st, "✅ Passing: %u of %u runs with it pass%s", t->pass, t->n, elsewhere);
        else
                mx_buf_printf(st, "🔄 Passing%s; %u of %u runs with it pass, %u fail%s",
                              alone ? " alone" : "", t->pass, t->n, t->failed, elsewhere);
        rep_failure_done(&fail);
}

static char *feature_status(json_t *doc, json_t *feature)
{
        _cleanup_json_ json_t *passed = json_array(), *others = json_array();
        struct feature_tally t = {.passed = passed, .others = others};
        _cleanup_free_ char *levels = NULL, *elsewhere = NULL;
        struct mx_buf st = MX_BUF_INIT;
        bool l4 = false;
        const char *declared = json_string_value(json_object_get(feature, "status"));

        tally_runs(doc, feature, &t);
        if (!t.alone) /* the feature alone on the baseline: the run named after it */
                t.alone = run_named_after(doc, feature);
        elsewhere = elsewhere_text(&t);
        levels = levels_run(passed, &l4);
        verdict_write(&st, doc, feature, &t, elsewhere);
        /* a pass on the smoke levels alone is no benchmark: say which levels the passes rest on */
        if (t.pass > 0 && !l4)
                mx_buf_printf(&st, "; passes on %s only (no benchmark: L4 did not run)", levels);
        mx_buf_printf(&st, " (declared %s %s)", declared_symbol(declared), strna(declared));
        return mx_buf_steal(&st);
}

/* "`VAR=value`" for what the feature sets, "vLLM flags (`--x`)" when it sets flags only, "-" when nothing.
 */
static void feature_env(json_t *doc, json_t *feature, char **ret_env, char **ret_default)
{
        json_t *set = json_object_get(feature, "set"), *v,
               *base = json_object_get(rep_matrix(doc), "baseline");
        struct mx_buf env = MX_BUF_INIT, def = MX_BUF_INIT;
        const char *k;

        json_object_foreach (set, k, v) {
                json_t *val = value_of(doc, k, json_string_value(v));
                json_t *bval = value_of(doc, k, json_string_value(json_object_get(base, k)));
                json_t *e = json_object_get(val, "env"), *x;
                const char *ek;
                size_t i;

                json_object_foreach (e, ek, x) {
                        const char *d = json_string_value(json_object_get(json_object_get(bval, "env"), ek));

                        mx_buf_printf(&env, "%s`%s=%s`", env.len ? ", " : "", ek, json_string_value(x));
                        mx_buf_printf(&def, "%s`%s`", def.len ? ", " : "", d ?: "unset");
                }
                if (json_object_size(e) == 0 && json_array_size(json_object_get(val, "argv")) > 0) {
                        mx_buf_printf(&env, "%svLLM flags (", env.len ? ", " : "");
                        json_array_foreach (json_object_get(val, "argv"), i, x)
                                if (startswith(json_string_value(x) ?: "", "--"))
                                        mx_buf_printf(&env, "%s`%s`", i ? " " : "", json_string_value(x));
                        mx_buf_putc(&env, ')');
                        mx_buf_printf(&def, "%s%s", def.len ? ", " : "",
                                      json_array_size(json_object_get(bval, "argv")) ? "flags" : "off");
                }
        }
        *ret_env = env.len ? mx_buf_steal(&env) : (mx_buf_free(&env), xstrdup("-"));
        *ret_default = def.len ? mx_buf_steal(&def) : (mx_buf_free(&def), xstrdup("-"));
}

static void status_overview(FILE *f, json_t *doc)
{
        json_t *feat;
        size_t i;

        fputs("## Feature Status Overview\n\n| Feature | Status | Priority | Env Var | Default |\n"
              "|---------|--------|----------|---------|---------|\n",
              f);
        json_array_foreach (json_object_get(rep_matrix(doc), "features"), i, feat) {
                _cleanup_free_ char *st = feature_status(doc, feat), *env = NULL, *def = NULL, *title = NULL,
                                    *mst = NULL;

                feature_env(doc, feat, &env, &def);
                title = rep_md(json_string_value(json_object_get(feat, "title"))
                                       ?: json_string_value(json_object_get(feat, "name")));
                mst = rep_md(st);
                fprintf(f, "| %s | %s | P%" JSON_INTEGER_FORMAT " | %s | %s |\n", title, mst,
                        json_integer_value(json_object_get(feat, "priority")), env, def);
        }
        if (json_array_size(json_object_get(rep_matrix(doc), "features")) == 0)
                fputs("| (the matrix declares no features) | - | - | - | - |\n", f);
        fputs("\n**Legend**: ✅ Passing | 🔄 In Progress | ⏳ Pending | ❌ Blocked | 🚫 Not Pursuing. "
              "Status from this job's runs that hold the feature's values; the declared status is the "
              "matrix "
              "file's.\n",
              f);
}

static char *capitalised(const char *s)
{
        char *c = xstrdup(s ?: "?");

        c[0] = (char)toupper((unsigned char)c[0]);
        return c;
}

static void combinations(FILE *f, json_t *doc)
{
        json_t *axes = json_object_get(rep_matrix(doc), "axes"), *a, *run;
        size_t i, k;
        unsigned c = 0;

        fputs("## Configuration Combinations Tested\n\n| ID |", f);
        json_array_foreach (axes, i, a) {
                _cleanup_free_ char *h = capitalised(json_string_value(json_object_get(a, "name")));

                fprintf(f, " %s |", h);
        }
        fputs(" Status |\n|----|", f);
        json_array_foreach (axes, i, a)
                fputs("------|", f);
        fputs("--------|\n", f);
        json_array_foreach (rep_runs(doc), i, run) {
                struct rep_failure fail;
                const char *res = rep_result(run);
                bool failed = rep_run_failure(run, &fail);
                _cleanup_free_ char *id =
                        rep_is_baseline(doc, run)
                                ? xasprintf("B1 (r%" JSON_INTEGER_FORMAT ")",
                                            json_integer_value(json_object_get(run, "id")))
                                : xasprintf("C%u (r%" JSON_INTEGER_FORMAT ")", ++c,
                                            json_integer_value(json_object_get(run, "id")));

                fprintf(f, "| %s |", id);
                json_array_foreach (axes, k, a) {
                        const char *v = json_string_value(
                                json_object_get(json_object_get(run, "config"),
                                                json_string_value(json_object_get(a, "name"))));

                        fprintf(f, " %s |", v ?: "-");
                }
                if (failed)
                        fprintf(f, " %s %s: %s |\n", streq(res, "xfail") ? "❌" : "💥", res, fail.klass);
                else
                        fprintf(f, " %s %s |\n",
                                streq(res, "pass")    ? "✅"
                                : streq(res, "xpass") ? "⚠️"
                                                      : "⏳",
                                res);
                rep_failure_done(&fail);
        }
        fputs("\n**Legend**: ✅ passed | ❌ failed as a declared known issue expects | 💥 failed unexpectedly | "
              "⚠️ passed though a known issue expects it to fail | ⏳ no result yet\n",
              f);
}

/* The workaround clause of a declaration's reason ("workaround: disable sinks"), or NULL. */
static char *workaround_of(const char *reason)
{
        const char *w = reason ? strstr(reason, "workaround") : NULL;
        size_t n;

        if (!w)
                return NULL;
        w += strlen("workaround");
        while (*w == ':' || *w == ' ')
                w++;
        n = strcspn(w, ";)");
        return n ? xstrndup(w, n) : NULL;
}

/* The known-incompatible entry (index) a run's expect_fail comes from: it starts with the entry's reason. */
static int declared_index(json_t *doc, json_t *run)
{
        const char *ef = json_string_value(json_object_get(run, "expect_fail"));
        json_t *ki;
        size_t i;

        json_array_foreach (json_object_get(rep_matrix(doc), "known_incompatible"), i, ki) {
                const char *reason = json_string_value(json_object_get(ki, "reason"));

                if (ef && reason && startswith(ef, reason))
                        return (int)i;
        }
        return -1;
}

/* The axis=value pairs that every run of a group has and the baseline has not: what the failure goes with.
 */
static char *common_diff(json_t *doc, json_t *runs)
{
        json_t *first = json_array_get(runs, 0), *base = json_object_get(rep_matrix(doc), "baseline"), *v,
               *r;
        struct mx_buf b = MX_BUF_INIT;
        const char *k;
        size_t i;

        json_object_foreach (json_object_get(first, "config"), k, v) {
                bool all = !json_equal(v, json_object_get(base, k));

                json_array_foreach (runs, i, r)
                        all = all && json_equal(v, json_object_get(json_object_get(r, "config"), k));
                if (all) {
                        mx_buf_printf(&b, "%s%s=%s", b.len ? " + " : "", k, json_string_value(v));
                        continue;
                }
                /* an axis off the baseline in every run, with different values: "spec in {a, b}" */
                all = true;
                json_array_foreach (runs, i, r)
                        all = all && json_is_string(json_object_get(json_object_get(r, "config"), k)) &&
                              !json_equal(json_object_get(json_object_get(r, "config"), k),
                                          json_object_get(base, k));
                if (all && json_array_size(runs) > 1) {
                        _cleanup_json_ json_t *vals = json_array();
                        size_t q;
                        json_t *x;

                        mx_buf_printf(&b, "%s%s in {", b.len ? " + " : "", k);
                        json_array_foreach (runs, i, r) {
                                json_t *rv = json_object_get(json_object_get(r, "config"), k);
                                bool dup = false;

                                json_array_foreach (vals, q, x)
                                        dup |= json_equal(x, rv);
                                if (!dup)
                                        json_array_append(vals, rv);
                        }
                        json_array_foreach (vals, q, x)
                                mx_buf_printf(&b, "%s%s", q ? ", " : "", json_string_value(x));
                        mx_buf_putc(&b, '}');
                }
        }
        return b.len ? mx_buf_steal(&b)
                     : (mx_buf_free(&b), xstrdup("(no value in common beyond the baseline)"));
}

/* Do two conditions share an axis with a value in common (plain values and lists; "not" and "any" never)? */
static bool whens_overlap(json_t *a, json_t *b)
{
        json_t *va, *vb, *x, *y;
        const char *axis;
        size_t i, k;

        json_object_foreach (a, axis, va) {
                vb = json_object_get(b, axis);
                if (json_is_string(va) && json_equal(va, vb))
                        return true;
                json_array_foreach (va, i, x) {
                        if (json_equal(x, vb))
                                return true;
                        json_array_foreach (vb, k, y)
                                if (json_equal(x, y))
                                        return true;
                }
                json_array_foreach (vb, k, y)
                        if (json_is_string(va) && json_equal(va, y))
                                return true;
        }
        return false;
}

/* A declaration's workaround: its own key, else the clause of its reason ("workaround: disable sinks"). */
static char *ki_workaround(json_t *ki)
{
        const char *w = json_string_value(json_object_get(ki, "workaround"));

        return w ? xstrdup(w) : workaround_of(json_string_value(json_object_get(ki, "reason")));
}

static void add_index(json_t *ds, int d)
{
        json_t *x;
        size_t q;

        if (d < 0)
                return;
        json_array_foreach (ds, q, x)
                if (json_integer_value(x) == d)
                        return;
        json_array_append_new(ds, json_integer(d));
}

/*
 * The bullets under an observed issue's heading: Declared (the declarations of the combinations that head it,
 * whens: their conditions; else each declaration its runs were marked with), Workaround (each declaration's
 * own). Returns the declared status of the issue ("Open"), or NULL.
 */
static const char *declared_lines(FILE *f, json_t *doc, json_t *runs, json_t *whens)
{
        json_t *kis = json_object_get(rep_matrix(doc), "known_incompatible"), *r, *w;
        _cleanup_json_ json_t *ds = json_array();
        struct mx_buf wa = MX_BUF_INIT;
        const char *status = NULL;
        size_t k, q;

        json_array_foreach (kis, k, r)
                json_array_foreach (whens, q, w)
                        if (whens_overlap(json_object_get(r, "when"), w))
                                add_index(ds, (int)k);
        if (json_array_size(ds) == 0)
                json_array_foreach (runs, k, r)
                        add_index(ds, declared_index(doc, r));
        json_array_foreach (ds, k, r) {
                json_t *e = json_array_get(kis, (size_t)json_integer_value(r));
                _cleanup_free_ char *one = ki_workaround(e);

                fprintf(f, "- **Declared**: when %s, expect %s: %s\n",
                        strna(json_string_value(json_object_get(e, "text"))),
                        strna(json_string_value(json_object_get(e, "expect"))),
                        strna(json_string_value(json_object_get(e, "reason"))));
                if (one && json_array_size(ds) > 1)
                        mx_buf_printf(&wa, "%s%s (when %s)", wa.len ? "; " : "", one,
                                      strna(json_string_value(json_object_get(e, "text"))));
                else if (one)
                        mx_buf_puts(&wa, one);
                status = status ?: json_string_value(json_object_get(e, "status"));
        }
        if (json_array_size(ds) == 0)
                fputs("- **Declared**: no: not a known issue of the matrix file (a new failure)\n", f);
        fprintf(f, "- **Workaround**: %s\n", wa.len ? wa.data : "-");
        mx_buf_free(&wa);
        return status;
}

/* "- **Observed in**: r9 (xfail, spec=eagle3-short), ..." */
static void observed_line(FILE *f, json_t *doc, json_t *runs)
{
        json_t *r;
        size_t k;

        fputs("- **Observed in**:", f);
        json_array_foreach (runs, k, r) {
                _cleanup_free_ char *diff = rep_config_diff(doc, r);

                fprintf(f, "%s r%" JSON_INTEGER_FORMAT " (%s, %s)", k ? "," : "",
                        json_integer_value(json_object_get(r, "id")), rep_result(r),
                        *diff ? diff : "baseline");
        }
        fputc('\n', f);
}

/* The first piece of log evidence of the runs, Markdown-safe. */
static char *evidence_of(json_t *runs)
{
        struct rep_failure fail;
        char *ev;

        if (!rep_run_failure(json_array_get(runs, 0), &fail))
                return xstrdup("(no evidence recorded)");
        ev = rep_md(fail.text);
        rep_failure_done(&fail);
        return ev;
}

/* "- **Status**: ..." with how many of runs reproduced it, and the blank line that ends a section. */
static void status_line(FILE *f, const char *status, json_t *runs)
{
        fprintf(f, "- **Status**: %s (reproduced in this job: %zu run%s)\n\n", status ?: "Open",
                json_array_size(runs), json_array_size(runs) == 1 ? "" : "s");
}

/* The older Known Issues: failing runs grouped by (failure class, declaration), headed by common_diff(). */
static void issues_by_difference(FILE *f, json_t *doc)
{
        _cleanup_json_ json_t *groups = json_object(), *order = json_array();
        json_t *run, *ki, *g;
        size_t i;

        json_array_foreach (rep_runs(doc), i, run) {
                struct rep_failure fail;
                _cleanup_free_ char *gk = NULL;

                if (!rep_run_failure(run, &fail))
                        continue;
                gk = xasprintf("%s\x1f%d", fail.klass, declared_index(doc, run));
                g = json_object_get(groups, gk);
                if (!g) {
                        g = json_pack("{s:s,s:[]}", "class", fail.klass, "runs");
                        json_object_set_new(groups, gk, g);
                        json_array_append_new(order, json_string(gk));
                }
                json_array_append(json_object_get(g, "runs"), run);
                rep_failure_done(&fail);
        }
        json_array_foreach (order, i, ki) {
                json_t *runs;
                _cleanup_free_ char *with = NULL, *ev = NULL;

                g = json_object_get(groups, json_string_value(ki));
                runs = json_object_get(g, "runs");
                with = common_diff(doc, runs);
                ev = evidence_of(runs);
                fprintf(f, "### %s\n\n", with);
                fprintf(f, "- **Issue**: `%s`: %s\n", json_string_value(json_object_get(g, "class")), ev);
                observed_line(f, doc, runs);
                status_line(f, declared_lines(f, doc, runs, NULL), runs);
        }
        if (json_array_size(order) == 0)
                fputs("No run of this job failed.\n\n", f);
}

/*
 * The failure class a run counts for in the attribution: its attempts' results as
 * mx_attrib_attempt_result() gives them to the analysis, when they agree on one
 * failure; NULL when the run passed, came to no result or disagrees (flaky).
 */
static char *attrib_class_of(json_t *run)
{
        _cleanup_free_ char *cls = NULL;
        json_t *a;
        size_t i;
        bool any = false;

        json_array_foreach (json_object_get(run, "attempt_history"), i, a) {
                _cleanup_json_ json_t *res = mx_attrib_attempt_result(
                        json_string_value(json_object_get(a, "outcome")),
                        json_string_value(json_object_get(a, "crash_class")), json_object_get(a, "levels"));
                const char *c = json_string_value(json_object_get(res, "class"));

                if (!res)
                        continue;
                if (!c || (any && !streq_ptr(cls, c)))
                        return NULL; /* a pass, or two different failures */
                if (!any)
                        cls = xstrdup(c);
                any = true;
        }
        return TAKE_PTR(cls);
}

/* Does the run's configuration hold a group's "when" (axis -> value, or a list of values)? */
static bool run_holds(json_t *run, json_t *when)
{
        json_t *config = json_object_get(run, "config"), *v, *x;
        const char *axis;
        size_t i;

        json_object_foreach (when, axis, v) {
                json_t *have = json_object_get(config, axis);
                bool in = json_equal(have, v);

                json_array_foreach (v, i, x)
                        in |= json_equal(have, x);
                if (!have || !in)
                        return false;
        }
        return json_object_size(when) > 0;
}

/*
 * The axis values every run of runs holds besides the set's own: the runs
 * never varied them together with the failure, so they cannot tell whether
 * those values take part ("graphs=on" when graphs was never off with eagle3).
 * Axes in axes (the sets' own) are left out. In the matrix's axis order, the
 * values off the baseline first; NULL when there is none.
 */
static char *unvaried(json_t *doc, json_t *runs, json_t *axes)
{
        json_t *first = json_array_get(runs, 0), *base = json_object_get(rep_matrix(doc), "baseline"), *a,
               *r;
        struct mx_buf off = MX_BUF_INIT, on = MX_BUF_INIT;
        size_t i, k;
        char *out;

        json_array_foreach (json_object_get(rep_matrix(doc), "axes"), i, a) {
                const char *axis = json_string_value(json_object_get(a, "name"));
                json_t *v = json_object_get(json_object_get(first, "config"), axis ?: "");
                bool same = json_is_string(v) && !json_object_get(axes, axis);
                struct mx_buf *b;

                json_array_foreach (runs, k, r)
                        same = same && json_equal(v, json_object_get(json_object_get(r, "config"), axis));
                if (!same)
                        continue;
                /* the values off the baseline first: the likelier partners of a cause */
                b = json_equal(v, json_object_get(base, axis)) ? &on : &off;
                mx_buf_printf(b, "%s`%s=%s`", b->len ? ", " : "", axis, json_string_value(v));
        }
        if (off.len && on.len)
                out = xasprintf("%s (and the baseline's %s)", off.data, on.data);
        else if (off.len || on.len)
                out = xasprintf("%s%s", off.len ? off.data : "the baseline's ", off.len ? "" : on.data);
        else
                out = NULL;
        mx_buf_free(&off);
        mx_buf_free(&on);
        return out;
}

/* Is the run in list (runs, or run ids)? */
static bool run_in(json_t *list, json_t *run)
{
        json_int_t id = json_integer_value(json_object_get(run, "id"));
        json_t *x;
        size_t i;

        json_array_foreach (list, i, x)
                if ((json_is_integer(x) ? json_integer_value(x)
                                        : json_integer_value(json_object_get(x, "id"))) == id)
                        return true;
        return false;
}

/* The failing runs that hold each group's "when": one array per group, in the groups' order. */
static json_t *runs_per_group(json_t *groups, json_t *failing)
{
        json_t *held = json_array(), *g, *r;
        size_t i, k;

        json_array_foreach (groups, i, g) {
                json_t *runs = json_array();

                json_array_foreach (failing, k, r)
                        if (run_holds(r, json_object_get(g, "when")))
                                json_array_append(runs, r);
                json_array_append_new(held, runs);
        }
        return held;
}

/*
 * Group i's ties: the groups from i on, not yet done, that hold in the same
 * failing runs with the same support (the runs cannot separate them); marks
 * them done.
 */
static json_t *ties_of(json_t *groups, json_t *held, size_t i, bool *done)
{
        json_t *g = json_array_get(groups, i), *runs = json_array_get(held, i), *tied = json_array();

        for (size_t j = i; j < json_array_size(groups); j++) {
                json_t *o = json_array_get(groups, j);

                if (!done[j] && json_equal(json_array_get(held, j), runs) &&
                    json_equal(json_object_get(o, "support"), json_object_get(g, "support"))) {
                        done[j] = true;
                        json_array_append(tied, o);
                }
        }
        return tied;
}

/* "### a or b → class" */
static void combination_heading(FILE *f, json_t *tied, const char *cls)
{
        struct mx_buf head = MX_BUF_INIT;
        json_t *r;
        size_t k;

        json_array_foreach (tied, k, r)
                mx_buf_printf(&head, "%s%s", k ? " or " : "", json_string_value(json_object_get(r, "text")));
        fprintf(f, "### %s → %s\n\n", head.data, cls);
        mx_buf_free(&head);
}

/* "- **Found from the runs**: ...": group g's support among the class c's failing runs. */
static void support_line(FILE *f, json_t *at, json_t *c, json_t *g, const char *cls)
{
        fprintf(f,
                "- **Found from the runs**: %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
                " failing runs with `%s` hold it, 0 passing hold it",
                json_integer_value(json_object_get(g, "support")),
                json_integer_value(json_object_get(c, "failing")), cls);
        if (json_integer_value(json_object_get(g, "other")) > 0)
                fprintf(f, "; %" JSON_INTEGER_FORMAT " failing another way",
                        json_integer_value(json_object_get(g, "other")));
        if (json_integer_value(json_object_get(g, "flaky")) > 0)
                fprintf(f, "; %" JSON_INTEGER_FORMAT " flaky",
                        json_integer_value(json_object_get(g, "flaky")));
        fprintf(f,
                " (no smaller combination explains them; sets of up to %" JSON_INTEGER_FORMAT
                " axis values searched)\n",
                json_integer_value(json_object_get(at, "t")));
}

/* "- **Cannot separate**: `a` and `b` hold in the same failing runs ...": only for two ties or more. */
static void ties_line(FILE *f, json_t *tied, int64_t job)
{
        json_t *r;
        size_t k;

        if (json_array_size(tied) <= 1)
                return;
        fputs("- **Cannot separate**: ", f);
        json_array_foreach (tied, k, r)
                fprintf(f, "%s`%s`",
                        k == 0                           ? ""
                        : k + 1 == json_array_size(tied) ? " and "
                                                         : ", ",
                        json_string_value(json_object_get(r, "text")));
        fprintf(f,
                " hold in the same failing runs: any of them may be the cause "
                "(`mxmatrix submit --confirm %" PRId64 "` plans runs that tell them apart)\n",
                job);
}

/* "- **Cannot separate**: every run with it also had ...": the values runs never varied (unvaried()). */
static void unvaried_line(FILE *f, json_t *doc, json_t *runs, json_t *tied, int64_t job)
{
        _cleanup_json_ json_t *axes = json_object();
        _cleanup_free_ char *fixed = NULL;
        json_t *r;
        size_t k;
        bool several;

        /* the axes of every tied set are accounted for by the heading */
        json_array_foreach (tied, k, r)
                json_object_update(axes, json_object_get(r, "when"));
        fixed = json_array_size(runs) > 0 ? unvaried(doc, runs, axes) : NULL;
        if (!fixed)
                return;
        several = strchr(strchr(strchr(fixed, '`') + 1, '`') + 1, '`'); /* two values or more */
        fprintf(f,
                "- **Cannot separate**: every run with it also had %s: the runs cannot tell "
                "whether %s take%s part (`mxmatrix submit --confirm %" PRId64 "` plans runs that vary %s)\n",
                fixed, several ? "these" : "this", several ? "" : "s", job, several ? "them" : "it");
}

/* A combination's observed line, the declarations of its tied sets and its status. */
static void combination_status(FILE *f, json_t *doc, json_t *runs, json_t *tied)
{
        _cleanup_json_ json_t *whens = json_array();
        json_t *r;
        size_t k;

        if (json_array_size(runs) > 0)
                observed_line(f, doc, runs);
        else
                fputs("- **Observed in**: runs of the job this one confirms (`mxmatrix attribute`)\n", f);
        json_array_foreach (tied, k, r)
                json_array_append(whens, json_object_get(r, "when"));
        status_line(f, declared_lines(f, doc, runs, whens), runs);
}

/* One explaining combination of class c: group g and its ties, held by runs (added to listed). */
static void combination_section(FILE *f, json_t *doc, json_t *at, json_t *c, json_t *g, json_t *tied,
                                json_t *runs, json_t *listed)
{
        const char *cls = json_string_value(json_object_get(c, "class"));
        int64_t job = json_integer_value(json_object_get(rep_job(doc), "id"));
        _cleanup_free_ char *ev = NULL;

        combination_heading(f, tied, cls);
        ev = evidence_of(runs);
        fprintf(f, "- **Issue**: `%s`: %s\n", cls, ev);
        support_line(f, at, c, g, cls);
        ties_line(f, tied, job);
        unvaried_line(f, doc, runs, tied, job);
        combination_status(f, doc, runs, tied);
        json_array_extend(listed, runs);
}

/* The section of the class's failing runs that no group holds (added to listed); none: nothing. */
static void unexplained_section(FILE *f, json_t *doc, json_t *at, const char *cls, json_t *failing,
                                json_t *held, json_t *listed)
{
        _cleanup_json_ json_t *rest = json_array();
        _cleanup_free_ char *ev = NULL;
        json_t *r, *g;
        size_t i, k;

        json_array_foreach (failing, k, r) {
                bool in = false;

                json_array_foreach (held, i, g)
                        in |= run_in(g, r);
                if (!in)
                        json_array_append(rest, r);
        }
        if (json_array_size(rest) == 0)
                return;
        ev = evidence_of(rest);
        fprintf(f, "### %s (no combination explains it)\n\n- **Issue**: `%s`: %s\n", cls, cls, ev);
        fprintf(f,
                "- **Found from the runs**: no set of up to %" JSON_INTEGER_FORMAT
                " axis values is held by these failing runs and by no passing run\n",
                json_integer_value(json_object_get(at, "t")));
        observed_line(f, doc, rest);
        status_line(f, declared_lines(f, doc, rest, NULL), rest);
        json_array_extend(listed, rest);
}

/*
 * One failure class of the attribution: a section per explaining combination
 * (groups that hold in exactly the same failing runs, with the same support,
 * are ties and share one: the runs cannot separate them), then the class's
 * failing runs no combination explains. failing: the document's runs that
 * count for the class, in plan order; listed collects the ids written.
 */
static void attributed_class(FILE *f, json_t *doc, json_t *at, json_t *c, json_t *failing, json_t *listed)
{
        json_t *groups = json_object_get(c, "groups");
        size_t n = json_array_size(groups);
        _cleanup_free_ bool *done = xcalloc(n + 1, sizeof(bool));
        _cleanup_json_ json_t *held = runs_per_group(groups, failing);

        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *tied = NULL;

                if (done[i])
                        continue;
                tied = ties_of(groups, held, i, done);
                combination_section(f, doc, at, c, json_array_get(groups, i), tied, json_array_get(held, i),
                                    listed);
        }
        unexplained_section(f, doc, at, json_string_value(json_object_get(c, "class")), failing, held,
                            listed);
}

/* Known Issues from the document's attribution; failures it leaves out (flaky, no result) follow. */
static void issues_attributed(FILE *f, json_t *doc, json_t *at)
{
        json_t *flaky = json_object_get(at, "flaky"), *c, *run;
        _cleanup_json_ json_t *listed = json_array(), *left = json_array();
        const char *status;
        size_t i, k;

        json_array_foreach (json_object_get(at, "classes"), i, c) {
                _cleanup_json_ json_t *failing = json_array();

                json_array_foreach (rep_runs(doc), k, run) {
                        _cleanup_free_ char *cls = NULL;

                        if (run_in(flaky, run))
                                continue;
                        cls = attrib_class_of(run);
                        if (cls && streq_ptr(cls, json_string_value(json_object_get(c, "class"))))
                                json_array_append(failing, run);
                }
                attributed_class(f, doc, at, c, failing, listed);
        }
        json_array_foreach (rep_runs(doc), k, run) {
                struct rep_failure fail;

                if (!run_in(listed, run) && rep_run_failure(run, &fail)) {
                        json_array_append(left, run);
                        rep_failure_done(&fail);
                }
        }
        if (json_array_size(left) > 0) {
                _cleanup_free_ char *ev = evidence_of(left);

                fprintf(f, "### Failures the attribution sets aside\n\n- **Issue**: %s\n", ev);
                fputs("- **Found from the runs**: nothing: a flaky run (its results disagree) or one that "
                      "came "
                      "to no result (infra-error, interrupted) is evidence for no combination\n",
                      f);
                observed_line(f, doc, left);
                status = declared_lines(f, doc, left, NULL);
                fprintf(f, "- **Status**: %s (not attributed)\n\n", status ?: "Open");
        }
        if (json_array_size(listed) + json_array_size(left) == 0)
                fputs("No run of this job failed.\n\n", f);
}

static void known_issues(FILE *f, json_t *doc)
{
        json_t *kis = json_object_get(rep_matrix(doc), "known_incompatible"), *ki, *run;
        json_t *at = json_object_get(doc, "attribution");
        size_t i, n_ki = json_array_size(kis);
        bool *seen = xcalloc(n_ki + 1, sizeof(bool));

        fputs("## Known Issues by Configuration\n\n", f);
        if (json_is_array(json_object_get(at, "classes"))) {
                fprintf(f,
                        "Observed in this job's runs, each headed by the smallest combinations of axis "
                        "values "
                        "that explain it, found from the runs (`mxmatrix attribute %" JSON_INTEGER_FORMAT
                        "`: every run holding a combination failed that way and no passing run holds it; "
                        "%" JSON_INTEGER_FORMAT " runs with a result, %" JSON_INTEGER_FORMAT " passed, %zu "
                        "flaky), with the crash class and log evidence from the runs, beside the matrix's "
                        "declarations.\n\n",
                        json_integer_value(json_object_get(rep_job(doc), "id")),
                        json_integer_value(json_object_get(at, "runs")),
                        json_integer_value(json_object_get(at, "passing")),
                        json_array_size(json_object_get(at, "flaky")));
                issues_attributed(f, doc, at);
        } else {
                fputs("Observed in this job's runs (crash class and log evidence from the runs), beside the "
                      "matrix's declarations",
                      f);
                if (json_is_string(json_object_get(at, "error")))
                        fprintf(f,
                                "; no attribution (%s), so each heading is what the failing runs have "
                                "in common off the baseline",
                                json_string_value(json_object_get(at, "error")));
                fputs(".\n\n", f);
                issues_by_difference(f, doc);
        }
        json_array_foreach (rep_runs(doc), i, run) {
                struct rep_failure fail;
                int d;

                if (!rep_run_failure(run, &fail))
                        continue;
                d = declared_index(doc, run);
                if (d >= 0)
                        seen[d] = true;
                rep_failure_done(&fail);
        }
        /* declarations no run of this job reproduced */
        json_array_foreach (kis, i, ki) {
                _cleanup_free_ char *wa = NULL;
                json_t *r;
                size_t k;
                unsigned matched = 0;

                if (seen[i])
                        continue;
                json_array_foreach (rep_runs(doc), k, r)
                        matched += declared_index(doc, r) == (int)i;
                fprintf(f, "### %s (declared)\n\n- **Issue**: %s\n",
                        strna(json_string_value(json_object_get(ki, "text"))),
                        strna(json_string_value(json_object_get(ki, "reason"))));
                wa = ki_workaround(ki);
                fprintf(f, "- **Workaround**: %s\n- **Status**: %s (%s)\n\n", wa ?: "-",
                        json_string_value(json_object_get(ki, "status")) ?: "Open",
                        matched ? "not reproduced: the runs it covers did not fail (xpass)"
                                : "not tested in this job: no run matches it");
        }
        free(seen);
}

int report_feature_matrix(json_t *doc, FILE *f, char **reterr)
{
        json_t *job = rep_job(doc), *m = rep_matrix(doc);
        _cleanup_free_ char *when = rep_datetime(json_object_get(job, "submitted_at"));
        _cleanup_free_ char *counts = rep_result_counts(doc); /* the words of show and follow */

        (void)reterr;
        fprintf(f,
                "# %s Feature Matrix\n\nStatus and configuration for each feature in the optimization "
                "work.\n\n",
                json_string_value(json_object_get(m, "name")) ?: "mxmatrix");
        fprintf(f,
                "Written by `mxmatrix report feature-matrix` from job %" JSON_INTEGER_FORMAT
                " (feature %s, submitted %s UTC, %zu runs: %s), matrix `%s`.\n",
                json_integer_value(json_object_get(job, "id")),
                json_string_value(json_object_get(job, "feature")) ?: "(pins only)", when,
                json_array_size(rep_runs(doc)), counts, strna(json_string_value(json_object_get(m, "path"))));
        rep_matrix_changed_note(f, doc);
        fputs("\n---\n\n", f);
        status_overview(f, doc);
        fputs("\n---\n\n", f);
        combinations(f, doc);
        fputs("\n---\n\n", f);
        known_issues(f, doc);
        return 0;
}
