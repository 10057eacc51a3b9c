/* SPDX-License-Identifier: MIT */
/*
 * Seed 003's FEATURE_MATRIX.md parts that runs can fill: Feature Status
 * Overview (status from the runs beside the declared one), Configuration
 * Combinations Tested (one row per configuration) and Known Issues by
 * Configuration: the failures the runs showed, grouped by failure class and
 * declaration, each with its log evidence and the runs, beside the known
 * issues the matrix declares and whether the runs reproduced them.
 */
#include "report-internal.h"

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

static const char *declared_symbol(const char *status)
{
        return streq_ptr(status, "completed")     ? "✅"
               : streq_ptr(status, "in-progress") ? "🔄"
               : streq_ptr(status, "blocked")     ? "❌"
                                                  : "⏳";
}

static char *feature_status(json_t *doc, json_t *feature)
{
        json_t *run, *alone = NULL;
        unsigned pass = 0, failed = 0, n = 0;
        size_t i;
        struct rep_failure fail = {};
        char *out;
        const char *declared = json_string_value(json_object_get(feature, "status"));

        json_array_foreach (rep_runs(doc), i, run) {
                const char *res = rep_result(run);

                if (!run_has_feature(doc, run, feature) || !rep_attempt(run))
                        continue;
                n++;
                if (streq(res, "pass"))
                        pass++;
                else if (!streq(res, "cancelled"))
                        failed++;
                /* the feature alone on the baseline, as the plan's L1-on run */
                if (!alone &&
                    startswith(json_string_value(json_array_get(json_object_get(run, "reasons"), 0)) ?: "",
                               "L1-on"))
                        alone = run;
        }
        if (!alone) /* the feature alone on the baseline: the run named after it */
                json_array_foreach (rep_runs(doc), i, run) {
                        _cleanup_free_ char *name = rep_config_name(doc, run);
                        const char *t = json_string_value(json_object_get(feature, "title"));

                        if (rep_attempt(run) && t && streq(name, t)) {
                                alone = run;
                                break;
                        }
                }
        if (n == 0)
                return xasprintf("⏳ Not tested in this job (declared %s %s)", declared_symbol(declared),
                                 strna(declared));
        if (alone && rep_run_failure(alone, &fail))
                out = xasprintf("❌ Failing alone: r%" JSON_INTEGER_FORMAT
                                " %s (%s); %u of %u runs with it pass "
                                "(declared %s %s)",
                                json_integer_value(json_object_get(alone, "id")), rep_result(alone),
                                fail.klass, pass, n, declared_symbol(declared), strna(declared));
        else if (pass == 0)
                out = xasprintf("❌ Failing: %u of %u runs with it fail (declared %s %s)", failed, n,
                                declared_symbol(declared), strna(declared));
        else if (failed == 0)
                out = xasprintf("✅ Passing: %u of %u runs with it pass (declared %s %s)", pass, n,
                                declared_symbol(declared), strna(declared));
        else
                out = xasprintf("🔄 Passing%s; %u of %u runs with it pass, %u fail (declared %s %s)",
                                alone ? " alone" : "", pass, n, failed, declared_symbol(declared),
                                strna(declared));
        rep_failure_done(&fail);
        return out;
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

static void known_issues(FILE *f, json_t *doc)
{
        json_t *kis = json_object_get(rep_matrix(doc), "known_incompatible"), *ki, *run;
        _cleanup_json_ json_t *groups = json_object(), *order = json_array();
        size_t i, n_ki = json_array_size(kis);
        bool *seen = xcalloc(n_ki + 1, sizeof(bool));
        const char *key;
        json_t *g;

        fputs("## Known Issues by Configuration\n\nObserved in this job's runs (crash class and log "
              "evidence from "
              "the runs), beside the matrix's declarations.\n\n",
              f);
        /* group the failing runs by (failure class, declaration) in plan order */
        json_array_foreach (rep_runs(doc), i, run) {
                struct rep_failure fail;
                int d;
                _cleanup_free_ char *gk = NULL;

                if (!rep_run_failure(run, &fail))
                        continue;
                d = declared_index(doc, run);
                if (d >= 0)
                        seen[d] = true;
                gk = xasprintf("%s\x1f%d", fail.klass, d);
                g = json_object_get(groups, gk);
                if (!g) {
                        g = json_pack("{s:s,s:i,s:s,s:[]}", "class", fail.klass, "declared", d, "evidence",
                                      fail.text, "runs");
                        json_object_set_new(groups, gk, g);
                        json_array_append_new(order, json_string(gk));
                }
                json_array_append(json_object_get(g, "runs"), run);
                rep_failure_done(&fail);
        }
        json_array_foreach (order, i, ki) {
                json_t *runs, *r;
                int d;
                size_t k;
                _cleanup_free_ char *with = NULL, *ev = NULL, *wa = NULL;
                const char *reason;

                key = json_string_value(ki);
                g = json_object_get(groups, key);
                runs = json_object_get(g, "runs");
                d = (int)json_integer_value(json_object_get(g, "declared"));
                reason =
                        d >= 0 ? json_string_value(json_object_get(json_array_get(kis, (size_t)d), "reason"))
                               : NULL;
                with = common_diff(doc, runs);
                fprintf(f, "### %s\n\n", with);
                ev = rep_md(json_string_value(json_object_get(g, "evidence")));
                fprintf(f, "- **Issue**: `%s`: %s\n", json_string_value(json_object_get(g, "class")), ev);
                fputs("- **Observed in**:", f);
                json_array_foreach (runs, k, r) {
                        _cleanup_free_ char *diff = rep_config_diff(doc, r);

                        fprintf(f, "%s r%" JSON_INTEGER_FORMAT " (%s, %s)", k ? "," : "",
                                json_integer_value(json_object_get(r, "id")), rep_result(r),
                                *diff ? diff : "baseline");
                }
                fputc('\n', f);
                if (reason) {
                        json_t *e = json_array_get(kis, (size_t)d);

                        fprintf(f, "- **Declared**: when %s, expect %s: %s\n",
                                strna(json_string_value(json_object_get(e, "text"))),
                                strna(json_string_value(json_object_get(e, "expect"))), reason);
                } else
                        fputs("- **Declared**: no: not a known issue of the matrix file (a new failure)\n",
                              f);
                wa = workaround_of(reason);
                fprintf(f, "- **Workaround**: %s\n", wa ?: "-");
                fprintf(f, "- **Status**: Open (reproduced in this job: %zu run%s)\n\n",
                        json_array_size(runs), json_array_size(runs) == 1 ? "" : "s");
        }
        if (json_array_size(order) == 0)
                fputs("No run of this job failed.\n\n", f);
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
                wa = workaround_of(json_string_value(json_object_get(ki, "reason")));
                fprintf(f, "- **Workaround**: %s\n- **Status**: %s\n\n", wa ?: "-",
                        matched ? "Not reproduced: the runs it covers did not fail (xpass)"
                                : "Not tested in this job (no run matches it)");
        }
        free(seen);
}

int report_feature_matrix(json_t *doc, FILE *f, char **reterr)
{
        json_t *job = rep_job(doc), *m = rep_matrix(doc);
        _cleanup_free_ char *when = rep_datetime(json_object_get(job, "submitted_at"));

        (void)reterr;
        fprintf(f,
                "# %s Feature Matrix\n\nStatus and configuration for each feature in the optimization "
                "work.\n\n",
                json_string_value(json_object_get(m, "name")) ?: "mxmatrix");
        fprintf(f,
                "Written by `mxmatrix report feature-matrix` from job %" JSON_INTEGER_FORMAT
                " (feature %s, submitted %s UTC, %zu runs), matrix `%s`.\n",
                json_integer_value(json_object_get(job, "id")),
                json_string_value(json_object_get(job, "feature")) ?: "(pins only)", when,
                json_array_size(rep_runs(doc)), strna(json_string_value(json_object_get(m, "path"))));
        if (json_is_false(json_object_get(m, "current")))
                fputs("The matrix file changed after the job was planned: its declarations below are "
                      "today's.\n",
                      f);
        fputs("\n---\n\n", f);
        status_overview(f, doc);
        fputs("\n---\n\n", f);
        combinations(f, doc);
        fputs("\n---\n\n", f);
        known_issues(f, doc);
        return 0;
}
