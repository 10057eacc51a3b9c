/* SPDX-License-Identifier: MIT */
/*
 * Seed 001's test log (docs/TEST_LOGS/FEATURE_<name>_<date>.md) of a
 * feature from a report document: each level's result with its duration,
 * memory before and after L3, the L4 table against the baseline, L5, the L6
 * table, then seed 000's Success Criteria Evaluation with the overall
 * verdict and the seed's Overall Result checklist.
 */
#include "report-internal.h"
#include "report-util.h"
#include "matrix.h"

#include <ctype.h>
#include <math.h>

/* The feature's own run: planned as "feature-on" (the feature alone on the baseline), else the first
 * non-baseline. */
static json_t *feature_run(json_t *doc)
{
        json_t *run, *r, *first = NULL;
        size_t i, k;

        json_array_foreach (rep_runs(doc), i, run) {
                json_array_foreach (json_object_get(run, "reasons"), k, r)
                        if (startswith(json_string_value(r) ?: "", "feature-on"))
                                return run;
                if (!first && !rep_is_baseline(doc, run))
                        first = run;
        }
        return first;
}

/* Verdict counts of one level over the job's runs, expected failures apart. */
static char *level_counts(json_t *doc, const char *level, bool *ret_any)
{
        unsigned pass = 0, fail = 0, xfail = 0, skipped = 0, invalid = 0;
        json_t *run, *l;
        size_t i;

        json_array_foreach (rep_runs(doc), i, run) {
                const char *v;

                l = rep_level(rep_attempt(run), level);
                v = json_string_value(json_object_get(l, "verdict"));
                if (!v)
                        continue;
                if (streq(v, "pass"))
                        pass++;
                else if (streq(v, "skipped"))
                        skipped++;
                else if (streq(rep_result(run), "xfail"))
                        xfail++;
                else if (streq(v, "invalid"))
                        invalid++;
                else
                        fail++;
        }
        *ret_any = pass + fail + xfail + skipped + invalid > 0;
        return xasprintf(
                "%u pass, %u fail, %u invalid, %u xfail (expected failure: known incompatible), %u skipped",
                pass, fail, invalid, xfail, skipped);
}

/* "- [x] PASS", the runs behind it, the duration and the level's message. */
static json_t *level_head(FILE *f, json_t *doc, json_t *run, const char *level)
{
        json_t *l = rep_level(rep_attempt(run), level);
        const char *v = json_string_value(json_object_get(l, "verdict"));
        _cleanup_free_ char *counts = NULL, *dur = NULL, *msg = NULL;
        bool any;

        counts = level_counts(doc, level, &any);
        fprintf(f, "- [%c] %s\n", l ? 'x' : ' ', rep_verdict_word(v));
        fprintf(f, "- Feature run: r%" JSON_INTEGER_FORMAT "; all runs: %s\n",
                json_integer_value(json_object_get(run, "id")), any ? counts : "none ran this level");
        dur = rep_duration(json_object_get(l, "started_at"), json_object_get(l, "finished_at"));
        if (streq(level, "L1") && l && json_is_integer(json_object_get(rep_attempt(run), "started_at"))) {
                /* seed 001's smoke test is the boot: from the server's start, not from its readiness */
                _cleanup_free_ char *all = rep_duration(json_object_get(rep_attempt(run), "started_at"),
                                                        json_object_get(l, "finished_at"));
                json_t *ready = json_object_get(json_object_get(l, "metrics"), "ready_s");

                if (json_is_number(ready))
                        fprintf(f, "- Duration: %s (the server's start to ready %.1fs, then the smoke requests %s)\n",
                                all, json_number_value(ready), dur);
                else
                        fprintf(f, "- Duration: %s (from the server's start; the smoke requests %s)\n", all, dur);
        } else
                fprintf(f, "- Duration: %s\n", dur);
        msg = json_is_string(json_object_get(l, "message"))
                      ? mx_escape(json_string_value(json_object_get(l, "message")), 400)
                      : NULL;
        return l ? (fprintf(f, "- Notes: %s\n", msg ?: "-"), l) : (fputs("- Notes: not run\n", f), NULL);
}

static void l15_kernels(FILE *f, json_t *l)
{
        json_t *obs = json_object_get(json_object_get(json_object_get(l, "metrics"), "kernels"), "must_see"),
               *e;
        size_t i, n = 0;

        fputs("- Observed kernels:", f);
        json_array_foreach (obs, i, e)
                if (json_is_string(json_object_get(e, "subject"))) {
                        _cleanup_free_ char *s =
                                mx_escape(json_string_value(json_object_get(e, "subject")), 200);

                        fprintf(f, "%s`%s`", n++ ? ", " : " ", s);
                }
        fputs(n ? "\n" : " none recorded\n", f);
}

/* Memory before and after L3: its own measurements, else the sampler's "L3" scope. */
static void l3_memory(FILE *f, json_t *run, json_t *l)
{
        json_t *m = json_object_get(json_object_get(l, "metrics"), "memory");
        json_t *s = json_object_get(json_object_get(json_object_get(rep_attempt(run), "samples"), "L3"),
                                    "memory");
        json_t *before = json_object_get(m, "first_bytes"), *after = json_object_get(m, "last_bytes");
        const char *src = json_string_value(json_object_get(m, "source"));

        if (!json_is_integer(before) || !json_integer_value(before)) {
                before = json_object_get(s, "start");
                after = json_object_get(s, "end");
                src = "the sampler's L3 scope";
        }
        if (json_is_integer(before) && json_is_integer(after)) {
                fprintf(f, "- Memory before: %.2f GB\n- Memory after: %.2f GB\n",
                        (double)json_integer_value(before) / 1e9, (double)json_integer_value(after) / 1e9);
                fprintf(f, "  (10^9 bytes, %s; first and last sample of the level)\n",
                        src ?: "L3's memory source");
        } else
                fputs("- Memory before: not measured\n- Memory after: not measured\n", f);
}

static void l4_table(FILE *f, json_t *base, json_t *run, struct rep_defs *defs)
{
        static const struct rep_col rows[] = {
                {"pp2048_tps", "pp2048"},    {"tg32_tps", "tg32"},        {"tg128_tps", "tg128"},
                {"ttft_p50_ms", "TTFT p50"}, {"ttft_p99_ms", "TTFT p99"},
        };

        fputs("| Metric | Baseline | This Feature | Delta |\n|--------|----------|--------------|-------|\n",
              f);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                struct rep_num b = {.why = "no baseline run"}, x;
                _cleanup_free_ char *bc = NULL, *xc = NULL, *d = NULL;

                if (base)
                        rep_metric(base, rows[i].metric, &b);
                rep_metric(run, rows[i].metric, &x);
                rep_defs_add(defs, rows[i].metric, &b);
                rep_defs_add(defs, rows[i].metric, &x);
                bc = rep_num_cell(&b);
                xc = rep_num_cell(&x);
                d = b.have && x.have && b.v != 0 ? xasprintf("%+.1f%%", 100 * (x.v - b.v) / b.v)
                                                 : xstrdup("-");
                fprintf(f, "| %s | %s | %s | %s |\n", rows[i].label, bc, xc, d);
        }
}

static void l6_table(FILE *f, json_t *doc)
{
        json_t *run, *r;
        size_t i, k, n = 0;

        fputs("| Combination | Status | Notes |\n|-------------|--------|-------|\n", f);
        json_array_foreach (rep_runs(doc), i, run)
                json_array_foreach (json_object_get(run, "reasons"), k, r) {
                        const char *why = json_string_value(r);
                        struct rep_failure fail;
                        _cleanup_free_ char *notes = NULL, *cell = NULL, *combo = NULL;
                        bool failed;

                        if (!why || !startswith(why, "vary:"))
                                continue;
                        failed = rep_run_failure(run, &fail);
                        combo = xasprintf("+ %s (r%" JSON_INTEGER_FORMAT ")", why + strlen("vary:"),
                                          json_integer_value(json_object_get(run, "id")));
                        if (failed)
                                notes = xasprintf(
                                        "%s: %s%s%s", fail.klass, fail.text,
                                        json_is_string(json_object_get(run, "expect_fail")) ? "; declared: "
                                                                                            : "",
                                        json_string_value(json_object_get(run, "expect_fail")) ?: "");
                        else
                                notes = xstrdup(json_string_value(json_object_get(run, "expect_fail"))
                                                        ?: "");
                        rep_failure_done(&fail);
                        cell = rep_md(notes);
                        fprintf(f, "| %s | %s | %s |\n", combo, rep_result(run), cell);
                        n++;
                        break;
                }
        if (n == 0)
                fputs("| (no L6 run in this job) | - | - |\n", f);
}

/* One criterion of the matrix feature evaluated on the runs: target, actual, pass. */
static void criterion_row(FILE *f, json_t *c, const char *text, json_t *base, json_t *run, int *ret_state,
                          struct rep_defs *defs)
{
        const char *metric = json_string_value(json_object_get(c, "metric"));
        const struct mx_metric_info *mi = mx_metric_lookup(metric ?: "");
        static const char *const ops[] = {
                "min_gain_pct", "max_regression_pct", "max_increase", "max_decrease", "max", "min", NULL};
        const char *op = NULL, *unit = mi ? mi->unit : "";
        struct rep_num b = {.why = "no baseline run"}, x;
        double target = 0, actual = NAN;
        bool ok = false, relative;
        _cleanup_free_ char *tgt = NULL, *act = NULL;

        for (size_t i = 0; ops[i]; i++)
                if (json_is_number(json_object_get(c, ops[i]))) {
                        op = ops[i];
                        target = json_number_value(json_object_get(c, ops[i]));
                }
        rep_metric(run, metric ?: "", &x);
        rep_defs_add(defs, metric ?: "?", &x);
        relative = op && !streq(op, "max") && !streq(op, "min");
        if (relative && base) {
                rep_metric(base, metric, &b);
                rep_defs_add(defs, metric, &b);
        }
        if (!op) {
                tgt = xstrdup("?");
        } else if (streq(op, "min_gain_pct")) {
                tgt = xasprintf("≥%g%%", target);
                if (x.have && b.have && b.v != 0) {
                        actual = 100 * (mi && !mi->higher_is_better ? b.v - x.v : x.v - b.v) / b.v;
                        ok = actual >= target;
                }
        } else if (streq(op, "max_regression_pct")) {
                tgt = xasprintf("≤%g%%", target);
                if (x.have && b.have && b.v != 0) {
                        actual = 100 * (mi && !mi->higher_is_better ? x.v - b.v : b.v - x.v) / b.v;
                        ok = actual <= target;
                }
        } else if (streq(op, "max_increase") || streq(op, "max_decrease")) {
                tgt = xasprintf("%s%g%s", streq(op, "max_increase") ? "≤+" : "≥-", target, unit);
                if (x.have && b.have) {
                        actual = x.v - b.v;
                        ok = streq(op, "max_increase") ? actual <= target : -actual <= target;
                }
        } else {
                tgt = xasprintf("%s%g%s", streq(op, "max") ? "≤" : "≥", target, unit);
                if (x.have) {
                        actual = x.v;
                        ok = streq(op, "max") ? actual <= target : actual >= target;
                }
        }
        if (isnan(actual)) {
                act = xstrdup(!x.have ? x.why : b.why);
                *ret_state = MX_MAX(*ret_state, 1);
        } else {
                bool pct = op && strstr(op, "pct");
                int64_t n = relative && b.have && b.n >= 0 && x.n >= 0 ? MX_MIN(b.n, x.n) : x.n;

                act = n >= 0 ? xasprintf("%.2f%s (n=%" PRId64 ")", actual, pct ? "%" : unit, n)
                             : xasprintf("%.2f%s", actual, pct ? "%" : unit);
                if (!ok)
                        *ret_state = 2;
        }
        {
                _cleanup_free_ char *t = rep_md(text);

                fprintf(f, "| %s | %s | %s | %s |\n", t, tgt, act,
                        isnan(actual) ? "not measured"
                        : ok          ? "PASS"
                                      : "FAIL");
        }
}

/*
 * The rows of mxmatrixd's evaluation (matrix/analysis/criteria.c): "items" or "criteria", else "rows" (the
 * criteria) then "constraints" (the hard ones), joined in *ret_own.
 */
static json_t *evaluated_items(json_t *given, json_t **ret_own)
{
        json_t *items = json_object_get(given, "items") ?: json_object_get(given, "criteria");

        if (!items && json_is_array(json_object_get(given, "rows"))) {
                items = json_object_get(given, "rows");
                if (json_is_array(json_object_get(given, "constraints"))) {
                        *ret_own = json_deep_copy(items);
                        json_array_extend(*ret_own, json_object_get(given, "constraints"));
                        items = *ret_own;
                }
        }
        return items;
}

/* One row of the daemon's evaluation; *state rises to 2 on a fail, to 1 on anything but a pass. */
static void evaluated_row(FILE *f, json_t *c, int *state)
{
        _cleanup_free_ char *a = NULL, *b = NULL, *d = NULL, *named = NULL;
        json_t *pass = json_object_get(c, "pass");
        const char *verdict = json_string_value(json_object_get(c, "verdict")) ?: json_string_value(pass);

        if (json_is_string(json_object_get(c, "metric")) && !json_object_get(c, "criterion"))
                named = xasprintf("%s %s", json_string_value(json_object_get(c, "metric")),
                                  strempty(json_string_value(json_object_get(c, "target"))));
        a = rep_md(named ?: json_string_value(json_object_get(c, "criterion"))
                                    ?: json_string_value(json_object_get(c, "text")));
        b = rep_md(json_string_value(json_object_get(c, "target")));
        d = json_is_string(json_object_get(c, "actual"))
                    ? rep_md(json_string_value(json_object_get(c, "actual")))
            : json_is_number(json_object_get(c, "actual"))
                    ? xasprintf("%.2f", json_number_value(json_object_get(c, "actual")))
                    : xstrdup("not measured");
        if (!verdict)
                verdict = json_is_true(pass) ? "PASS" : json_is_false(pass) ? "FAIL" : "not measured";
        if (strcasecmp(verdict, "fail") == 0)
                *state = 2;
        else if (strcasecmp(verdict, "pass") != 0)
                *state = MX_MAX(*state, 1);
        fprintf(f, "| %s | %s | %s | %s |\n", a, b, d,
                strcasecmp(verdict, "pass") == 0   ? "PASS"
                : strcasecmp(verdict, "fail") == 0 ? "FAIL"
                                                   : verdict);
}

/* The daemon's evaluation: its rows, and its overall verdict into *state. */
static void evaluated_rows(FILE *f, json_t *given, json_t *items, int *state)
{
        const char *overall = json_string_value(json_object_get(given, "overall"));
        json_t *c;
        size_t i;

        json_array_foreach (items, i, c)
                evaluated_row(f, c, state);
        if (overall && strcasecmp(overall, "pass") != 0)
                *state = MX_MAX(*state, streq(overall, "fail") ? 2 : 1);
        fputs("\nEvaluated by mxmatrixd (the job's criteria).\n", f);
}

/* The feature's criteria evaluated here: the feature run against the baseline run. */
static void feature_rows(FILE *f, json_t *feature, json_t *base, json_t *run, int *state,
                         struct rep_defs *defs)
{
        json_t *c;
        size_t i;

        json_array_foreach (json_object_get(feature, "criteria"), i, c) {
                const char *text =
                        json_string_value(json_array_get(json_object_get(feature, "criteria_text"), i));
                _cleanup_free_ char *note =
                        json_is_string(json_object_get(c, "note"))
                                ? xasprintf("%s (%s)", text ?: "?",
                                            json_string_value(json_object_get(c, "note")))
                                : xstrdup(text ?: "?");

                criterion_row(f, c, note, base, run, state, defs);
        }
        fprintf(f,
                "\nEvaluated from the runs: the feature run r%" JSON_INTEGER_FORMAT
                " against the baseline run%s.\n",
                json_integer_value(json_object_get(run, "id")),
                base ? "" : " (none in this job: relative criteria are not measured)");
        if (base)
                fprintf(f, "Baseline run: r%" JSON_INTEGER_FORMAT ".\n",
                        json_integer_value(json_object_get(base, "id")));
}

/* Seed 000's table: the daemon's evaluation when the document has one, else the feature's criteria here. */
static int criteria_table(FILE *f, json_t *doc, json_t *feature, json_t *base, json_t *run,
                          struct rep_defs *defs)
{
        json_t *given = json_object_get(doc, "criteria"), *items;
        _cleanup_json_ json_t *own = NULL;
        int state = 0; /* 0 pass, 1 not measured, 2 fail */

        fputs("## Success Criteria Evaluation\n\n| Criterion | Target | Actual | Pass/Fail |\n"
              "|-----------|--------|--------|-----------|\n",
              f);
        items = evaluated_items(given, &own);
        if (json_is_array(items) && json_array_size(items) > 0)
                evaluated_rows(f, given, items, &state);
        else if (json_array_size(json_object_get(feature, "criteria")) > 0)
                feature_rows(f, feature, base, run, &state, defs);
        else {
                fputs("| (the feature declares no criteria) | - | - | - |\n", f);
                state = 1;
        }
        rep_defs_refs(defs, f);
        return state;
}

static char *upper_name(const char *name)
{
        char *s = xstrdup(name);

        for (char *p = s; *p; p++)
                *p = *p == '-' || *p == '.' || *p == '+' ? '_' : (char)toupper((unsigned char)*p);
        return s;
}

/*
 * Seed 001's "Branch:": the branch of each source tree the feature run's metadata recorded
 * ("mxfp4_v2 (vllm 1a2b3c4d5e6f, flashinfer 0f9e8d7c6b5a)"), said when none was.
 */
static char *branch_line(json_t *run)
{
        json_t *sources = json_object_get(json_object_get(rep_attempt(run), "metadata"), "sources"), *s;
        _cleanup_json_ json_t *branches = json_object();
        struct mx_buf b = MX_BUF_INIT;
        const char *name, *br;
        json_t *names;

        json_object_foreach (sources, name, s) {
                const char *sha = json_string_value(json_object_get(s, "sha"));
                _cleanup_free_ char *one = NULL;

                br = json_string_value(json_object_get(s, "branch"));
                if (!br)
                        continue;
                names = json_object_get(branches, br);
                if (!names) {
                        names = json_array();
                        json_object_set_new(branches, br, names);
                }
                one = sha ? xasprintf("%s %.12s%s", name, sha,
                                      json_is_true(json_object_get(s, "dirty")) ? ", dirty" : "")
                          : xstrdup(name);
                json_array_append_new(names, json_string(one));
        }
        json_object_foreach (branches, br, names) {
                json_t *x;
                size_t i;

                mx_buf_printf(&b, "%s%s (", b.len ? "; " : "", br);
                json_array_foreach (names, i, x)
                        mx_buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(x));
                mx_buf_putc(&b, ')');
        }
        if (b.len)
                return mx_buf_steal(&b);
        mx_buf_free(&b);
        return xstrdup(json_object_size(sources) ? "(not recorded: no source tree is on a branch)"
                                                 : "(not recorded: the matrix names no metadata.sources)");
}

/*
 * Seed 001's decision ("if any test fails: keep on branch") over every run of the job: a failure no known issue
 * expects (result fail, crashed, timeout ...) goes to unexpected; a run without a result to unfinished.
 */
static void job_failures(json_t *doc, json_t *unexpected, json_t *unfinished)
{
        json_t *run;
        size_t i;

        json_array_foreach (rep_runs(doc), i, run) {
                const char *res = rep_result(run);
                struct rep_failure fail;

                if (streq(res, "queued") || streq(res, "running") || streq(res, "infra-error") ||
                    streq(res, "interrupted")) {
                        json_array_append(unfinished, run);
                        continue;
                }
                if (streq(res, "xfail") || !rep_run_failure(run, &fail))
                        continue;
                json_array_append_new(unexpected,
                                      json_sprintf("r%" JSON_INTEGER_FORMAT " (%s): %s (%s): %s",
                                                   json_integer_value(json_object_get(run, "id")),
                                                   json_string_value(json_object_get(run, "config_key")), res,
                                                   fail.klass, fail.text));
                rep_failure_done(&fail);
        }
}

int report_test_log_name(json_t *doc, const char *feature, char **ret, char **reterr)
{
        json_t *f = rep_feature(doc, feature);
        const char *name = f ? json_string_value(json_object_get(f, "name"))
                             : json_string_value(json_object_get(rep_job(doc), "feature"));
        _cleanup_free_ char *up = NULL, *date = NULL;

        if (feature && !f) {
                *reterr = xasprintf("'%s' is not a feature of the job's matrix", feature);
                return -ENOENT;
        }
        if (!name) {
                *reterr = xstrdup("the job names no feature (pins only): give FEATURE");
                return -ENOENT;
        }
        if (!mx_matrix_name_valid(name)) {
                *reterr = xstrdup("the job's feature word is not a valid name for a file");
                return -EINVAL;
        }
        up = upper_name(name);
        date = rep_date(rep_last_finished(doc));
        *ret = xasprintf("TEST_LOGS/FEATURE_%s_%s.md", up, date);
        return 0;
}

/* The title, date and branch, and a paragraph on the job, runs and baseline the log comes from. */
static void testlog_head(FILE *f, json_t *doc, json_t *feat, json_t *run, json_t *base)
{
        json_t *job = rep_job(doc);
        _cleanup_free_ char *date = rep_date(rep_last_finished(doc)), *levels = NULL, *basename_run = NULL,
                            *branch = NULL;
        _cleanup_free_ char *counts = rep_result_counts(doc);
        const char *title;

        title = json_string_value(json_object_get(feat, "title"));
        if (!title)
                title = json_string_value(json_object_get(feat, "name"));
        if (!title)
                title = json_string_value(json_object_get(job, "feature")) ?: "(pins only)";
        levels = json_dumps(json_object_get(job, "levels"), JSON_COMPACT);
        basename_run =
                base ? xasprintf("r%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(base, "id")))
                     : xstrdup("missing (no L4 comparison)");
        branch = branch_line(run);
        fprintf(f, "# Test Log: %s\n\nDate: %s\nBranch: %s\n\n", title, date, branch);
        fprintf(f,
                "Written by `mxmatrix report test-log` from job %" JSON_INTEGER_FORMAT
                " (feature %s, strategy %s, levels %s, %zu runs: %s). The feature run is r%" JSON_INTEGER_FORMAT
                " (%s); the baseline run is %s. Times are UTC.\n\n",
                json_integer_value(json_object_get(job, "id")),
                json_string_value(json_object_get(job, "feature")) ?: "-",
                strna(json_string_value(json_object_get(job, "strategy"))), levels ?: "[]",
                json_array_size(rep_runs(doc)), counts, json_integer_value(json_object_get(run, "id")),
                strna(json_string_value(json_object_get(run, "config_key"))), basename_run);
}

/* L5's "Regressions found" line: none, the regressions one by one, or why there is no answer. */
static void l5_regressions(FILE *f, json_t *l)
{
        json_t *regs = json_object_get(json_object_get(l, "metrics"), "regressions"), *x;
        size_t i;

        fputs("- Regressions found:", f);
        if (!l)
                fputs(" not measured (no L5 level ran)\n", f);
        else if (json_array_size(regs) == 0)
                fputs(streq_ptr(json_string_value(json_object_get(l, "verdict")), "pass") ? " none\n"
                                                                                         : " see Notes\n",
                      f);
        else {
                fputc('\n', f);
                json_array_foreach (regs, i, x) {
                        _cleanup_free_ char *t = json_is_string(x)
                                                         ? mx_escape(json_string_value(x), 300)
                                                         : json_dumps(x, JSON_COMPACT | JSON_SORT_KEYS);

                        fprintf(f, "  - %s\n", t);
                }
        }
}

/* The confirmation starts L5's verdict rested on, when it had any. */
static void l5_confirmation(FILE *f, json_t *l)
{
        _cleanup_free_ char *t = report_l5_confirmation_text(l);

        if (t)
                fprintf(f, "- Confirmation starts: %s\n", t);
}

/* Levels 1 to 6 of the seed's template, each from the feature run (L4 against the baseline, L6 the job). */
static void testlog_levels(FILE *f, json_t *doc, json_t *run, json_t *base, struct rep_defs *defs)
{
        json_t *l;

        fputs("\n## Level 1: Smoke Test\n", f);
        level_head(f, doc, run, "L1");
        fputs("\n## Level 1.5: Kernel Path Validation\n", f);
        l = level_head(f, doc, run, "L1.5");
        l15_kernels(f, l);
        fputs("\n## Level 2: Correctness Test\n", f);
        level_head(f, doc, run, "L2");
        fputs("\n## Level 3: Stress Test\n", f);
        l = level_head(f, doc, run, "L3");
        l3_memory(f, run, l);
        fputs("\n## Level 4: Performance Benchmark\n\n", f);
        l4_table(f, base, run, defs);
        rep_defs_refs(defs, f);
        fputs("\n## Level 5: Regression Test\n", f);
        l = level_head(f, doc, run, "L5");
        l5_regressions(f, l);
        l5_confirmation(f, l);
        fputs("\n## Level 6: Combinatorial Test\n\n", f);
        l6_table(f, doc);
        fputc('\n', f);
}

/* The feature run's levels decide as much as the criteria: 2 when one failed, 1 while it has no result. */
static int feature_run_state(json_t *run)
{
        int level_state = 0;
        json_t *l;
        size_t li;

        json_array_foreach (json_object_get(rep_attempt(run), "levels"), li, l) {
                const char *v = json_string_value(json_object_get(l, "verdict"));

                if (streq_ptr(v, "fail") || streq_ptr(v, "invalid"))
                        level_state = 2;
        }
        if (!rep_attempt(run) || !streq(rep_result(run), "pass"))
                level_state = MX_MAX(
                        level_state,
                        streq(rep_result(run), "queued") || streq(rep_result(run), "running") ? 1 : 2);
        return level_state;
}

/* The **Overall** line: the merge decision is the job's, so a run failing unexpectedly fails it. */
static void overall_line(FILE *f, int state, json_t *unexpected, json_t *unfinished)
{
        if (json_array_size(unexpected) > 0 && state < 2)
                fprintf(f, "\n**Overall**: FAIL (the feature run and its criteria %s, but %zu run%s of the job "
                           "failed unexpectedly: see below)\n",
                        state == 0 ? "pass" : "are incomplete", json_array_size(unexpected),
                        json_array_size(unexpected) == 1 ? "" : "s");
        else if (json_array_size(unfinished) > 0 && state == 0)
                fprintf(f, "\n**Overall**: INCOMPLETE (%zu run%s of the job without a result)\n",
                        json_array_size(unfinished), json_array_size(unfinished) == 1 ? "" : "s");
        else
                fprintf(f, "\n**Overall**: %s\n",
                        state == 0   ? "PASS"
                        : state == 2 ? "FAIL"
                                     : "INCOMPLETE (a criterion was not measured)");
}

/* Under NEEDS FIXES: the feature run's failure, the job's unexpected failures, the criteria. */
static void needs_fixes(FILE *f, json_t *run, json_t *unexpected)
{
        struct rep_failure fail;
        json_t *x;
        size_t i;

        if (!streq(rep_result(run), "xfail") && rep_run_failure(run, &fail))
                fprintf(f, "  - the feature run r%" JSON_INTEGER_FORMAT ": %s (%s): %s\n",
                        json_integer_value(json_object_get(run, "id")), rep_result(run), fail.klass, fail.text);
        rep_failure_done(&fail);
        if (json_array_size(unexpected) > 0)
                fprintf(f, "  - %zu run%s of the job failed where no known issue expects it (seed 001: "
                           "if any test fails, keep it on the branch):\n",
                        json_array_size(unexpected), json_array_size(unexpected) == 1 ? "" : "s");
        json_array_foreach (unexpected, i, x) {
                _cleanup_free_ char *t = mx_escape(json_string_value(x), 300);

                fprintf(f, "    - %s\n", t);
        }
        fputs("  - see the Success Criteria Evaluation above\n", f);
}

/* What an incomplete log lacks: the runs without a result, else the levels that measure the criteria. */
static void not_finished(FILE *f, json_t *unfinished)
{
        json_t *x;
        size_t i;

        if (json_array_size(unfinished) > 0) {
                fputs("  - not finished: runs without a result:", f);
                json_array_foreach (unfinished, i, x)
                        fprintf(f, "%s r%" JSON_INTEGER_FORMAT " (%s)", i ? "," : "",
                                json_integer_value(json_object_get(x, "id")), rep_result(x));
                fputc('\n', f);
        } else
                fputs("  - not measured: run the job with the levels that measure every criterion "
                      "(levels=L1-L5)\n",
                      f);
}

/* The seed's Overall Result checklist (state: 0 pass, 1 incomplete, 2 fail) and what it rests on. */
static void overall_result(FILE *f, json_t *feat, json_t *run, int state, json_t *unexpected,
                           json_t *unfinished)
{
        fprintf(f,
                "\n## Overall Result\n- [%c] READY TO MERGE\n- [%c] NEEDS FIXES (list issues)\n- [%c] "
                "BLOCKED (reason)\n",
                state == 0 ? 'x' : ' ', state == 2 ? 'x' : ' ',
                streq_ptr(json_string_value(json_object_get(feat, "status")), "blocked") ? 'x' : ' ');
        if (state == 2)
                needs_fixes(f, run, unexpected);
        if (state == 1)
                not_finished(f, unfinished);
}

int report_test_log(json_t *doc, const char *feature, FILE *f, char **reterr)
{
        json_t *feat = rep_feature(doc, feature);
        json_t *run = feature_run(doc), *base = rep_baseline_run(doc);
        _cleanup_json_ json_t *unexpected = json_array(), *unfinished = json_array();
        struct rep_defs defs = {};
        int state;

        if (feature && !feat) {
                *reterr = xasprintf("'%s' is not a feature of the job's matrix", feature);
                return -ENOENT;
        }
        if (!run) {
                *reterr = xstrdup("the job has no run of the feature (only the baseline, or no runs)");
                return -ENOENT;
        }
        testlog_head(f, doc, feat, run, base);
        testlog_levels(f, doc, run, base, &defs);
        state = criteria_table(f, doc, feat, base, run, &defs);
        state = MX_MAX(state, feature_run_state(run));
        job_failures(doc, unexpected, unfinished);
        overall_line(f, state, unexpected, unfinished);
        if (json_array_size(unexpected) > 0)
                state = 2;
        else if (json_array_size(unfinished) > 0)
                state = MX_MAX(state, 1);
        overall_result(f, feat, run, state, unexpected, unfinished);
        rep_defs_print(&defs, f);
        rep_defs_done(&defs);
        return 0;
}

int report_testlog_criteria(FILE *f, json_t *doc, json_t *feature, json_t *base, json_t *run,
                            struct rep_defs *defs)
{
        return criteria_table(f, doc, feature, base, run, defs);
}
