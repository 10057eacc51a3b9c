/* SPDX-License-Identifier: MIT */
/*
 * Seed 000's per-feature document, docs/porting/FEATURE_<name>.md: the
 * template's sections in its order, the ones the runs can answer filled
 * (status, priority, branch, hypothesis, the success-criteria table with
 * baseline, target, actual and pass, the test results per level, the
 * Success Criteria Evaluation, the benchmark environment and results), the
 * ones only people can write (source files, environment variables added,
 * implementation notes, areas for improvement, rollback, references) left
 * as the template's prompts.
 */
#include "matrix.h"
#include "metadata.h"
#include "protocol.h"
#include "bench-yaml.h"
#include "mxreport.h"
#include "report-internal.h"
#include "report-util.h"

#include <ctype.h>
#include <math.h>

/* The seed's table rows, in its order. */
static const struct rep_col porting_rows[] = {
        {"tg32_tps", "tg32 (tok/s)"},     {"pp2048_tps", "pp2048 (tok/s)"}, {"ttft_p50_ms", "TTFT p50 (ms)"},
        {"ttft_p99_ms", "TTFT p99 (ms)"}, {"memory_gb", "Memory (GB)"},     {"startup_s", "Startup (s)"},
};

/*
 * Seed 000's words for a feature's status ("merged" is completed; an unknown one reads "Not Started":
 * rep_feature_status()).
 */
static const char *const status_words[_MX_FEATURE_STATUS_MAX] = {
        [MX_FEATURE_NOT_STARTED] = "Not Started",
        [MX_FEATURE_IN_PROGRESS] = "In Progress",
        [MX_FEATURE_COMPLETED] = "Completed",
        [MX_FEATURE_BLOCKED] = "Blocked",
};

static const char *status_word(const char *s)
{
        return status_words[rep_feature_status(s)];
}

/* The daemon's evaluation of one metric (rows, then constraints), or NULL. */
static json_t *criterion_row(json_t *doc, const char *metric)
{
        json_t *crit = json_object_get(doc, "criteria"), *c;
        const char *lists[] = {"rows", "constraints"};
        size_t i;

        for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                json_array_foreach (json_object_get(crit, lists[l]), i, c)
                        if (streq_ptr(json_string_value(json_object_get(c, "metric")), metric))
                                return c;
        return NULL;
}

/* The feature's criterion text for a metric ("tg32_tps improves by >= 10% vs baseline"), or NULL. */
static const char *criterion_text(json_t *feat, const char *metric)
{
        json_t *c;
        size_t i;

        json_array_foreach (json_object_get(feat, "criteria"), i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "metric")), metric))
                        return json_string_value(json_array_get(json_object_get(feat, "criteria_text"), i));
        return NULL;
}

/*
 * The feature's criterion on metric judged from the two numbers, as matrix/analysis/criteria.c judges it, for a
 * document without the daemon's evaluation: "PASS", "FAIL", "not measured", or NULL without a criterion.
 */
static const char *judge(json_t *feat, const char *metric, const struct rep_num *b, const struct rep_num *a)
{
        const struct mx_metric_info *mi = mx_metric_lookup(metric);
        json_t *c, *v;
        size_t i;

        json_array_foreach (json_object_get(feat, "criteria"), i, c) {
                double x, base, change;

                if (!streq_ptr(json_string_value(json_object_get(c, "metric")), metric))
                        continue;
                if (!a->have)
                        return "not measured";
                x = a->v;
                if ((v = json_object_get(c, "max")))
                        return x <= json_number_value(v) ? "PASS" : "FAIL";
                if ((v = json_object_get(c, "min")))
                        return x >= json_number_value(v) ? "PASS" : "FAIL";
                if (!b->have || b->v == 0)
                        return "not measured";
                base = b->v;
                change = (x - base) / fabs(base) * 100;
                if ((v = json_object_get(c, "min_gain_pct")))
                        return (mi && !mi->higher_is_better ? -change : change) >= json_number_value(v)
                                       ? "PASS"
                                       : "FAIL";
                if ((v = json_object_get(c, "max_regression_pct")))
                        return (mi && !mi->higher_is_better ? change : -change) <= json_number_value(v)
                                       ? "PASS"
                                       : "FAIL";
                if ((v = json_object_get(c, "max_increase")))
                        return x - base <= json_number_value(v) ? "PASS" : "FAIL";
                return "not judged here (see the evaluation below)";
        }
        return NULL;
}

static void criteria_row(FILE *f, json_t *doc, json_t *feat, json_t *base, json_t *run, const char *metric,
                         const char *label, struct rep_defs *defs)
{
        struct rep_num b = {}, a = {};
        json_t *row = criterion_row(doc, metric);
        const char *target =
                json_string_value(json_object_get(row, "target")) ?: criterion_text(feat, metric);
        const char *pass = json_string_value(json_object_get(row, "pass"));
        _cleanup_free_ char *bc = NULL, *ac = NULL, *tc = rep_md(target);

        if (base)
                rep_metric(base, metric, &b);
        rep_metric(run, metric, &a);
        bc = base ? rep_num_cell(&b) : xstrdup("no baseline run");
        ac = rep_num_cell(&a);
        rep_defs_add(defs, label, &a);
        fprintf(f, "| %s | %s | %s | %s | %s |\n", label, bc, tc, ac,
                pass     ? (streq(pass, "pass")   ? "PASS"
                            : streq(pass, "fail") ? "FAIL"
                                                  : "not measured")
                : target ? strna(judge(feat, metric, &b, &a))
                         : "-");
}

static void criteria_section(FILE *f, json_t *doc, json_t *feat, json_t *base, json_t *run,
                             struct rep_defs *defs)
{
        json_t *c;
        size_t i;

        fputs("## REQUIRED: Success Criteria (hard numbers)\n\n"
              "| Metric | Baseline | Target | Actual | Pass? |\n"
              "|--------|----------|--------|--------|-------|\n",
              f);
        for (size_t k = 0; k < ELEMENTSOF(porting_rows); k++)
                criteria_row(f, doc, feat, base, run, porting_rows[k].metric, porting_rows[k].label, defs);
        /* Criteria on metrics beyond the seed's rows get rows of their own. */
        json_array_foreach (json_object_get(feat, "criteria"), i, c) {
                const char *m = json_string_value(json_object_get(c, "metric"));
                bool seen = false;

                for (size_t k = 0; k < ELEMENTSOF(porting_rows); k++)
                        seen = seen || streq_ptr(m, porting_rows[k].metric);
                if (m && !seen && !streq(m, "crashes"))
                        criteria_row(f, doc, feat, base, run, m, m, defs);
        }
        rep_defs_refs(defs, f);
        fputs("\n**Hard constraints:**\n", f);
        if (json_array_size(json_object_get(json_object_get(doc, "criteria"), "constraints")) == 0)
                fputs("- not evaluated in this document (the daemon's evaluation comes with the job's last "
                      "page)\n",
                      f);
        json_array_foreach (json_object_get(json_object_get(doc, "criteria"), "constraints"), i, c) {
                _cleanup_free_ char *t = rep_md(json_string_value(json_object_get(c, "target")));

                fprintf(f, "- %s %s: %s\n", strna(json_string_value(json_object_get(c, "metric"))), t,
                        strna(json_string_value(json_object_get(c, "pass"))));
        }
}

/* "PASS", "FAIL", "INVALID", "SKIPPED", or "NOT RUN" for a level the run did not reach or select. */
static const char *result_word(json_t *l)
{
        return rep_verdict_word(json_string_value(json_object_get(l, "verdict")));
}

/* One level of the seed's Test Results: its checklist, ticked only when the feature run's level passed. */
static void level_block(FILE *f, json_t *run, const char *level, const char *title, const char *const *items)
{
        json_t *l = rep_level(rep_attempt(run), level);
        bool passed = streq_ptr(json_string_value(json_object_get(l, "verdict")), "pass");
        _cleanup_free_ char *msg = json_is_string(json_object_get(l, "message"))
                                           ? mx_escape(json_string_value(json_object_get(l, "message")), 300)
                                           : NULL;
        _cleanup_free_ char *conf = report_l5_confirmation_text(l);

        fprintf(f, "### %s\n", title);
        for (size_t i = 0; items[i]; i++)
                fprintf(f, "- [%c] %s\n", passed ? 'x' : ' ', items[i]);
        fprintf(f, "- **Result**: %s", result_word(l));
        if (msg)
                fprintf(f, " (r%" JSON_INTEGER_FORMAT ": %s)",
                        json_integer_value(json_object_get(run, "id")), msg);
        /* L5's verdict after confirmation starts: the extra starts it rested on */
        if (conf)
                fprintf(f, "\n- **Confirmation starts**: %s", conf);
        fputs("\n\n", f);
}

/* Level 3 with what it ran (its own counts), not the seed's sizes: a box is ticked only for what ran. */
static void l3_block(FILE *f, json_t *run)
{
        json_t *l = rep_level(rep_attempt(run), "L3"), *m = json_object_get(l, "metrics");
        bool passed = streq_ptr(json_string_value(json_object_get(l, "verdict")), "pass");
        json_t *seq = json_object_get(m, "sequential_done"),
               *ctx = json_object_get(m, "long_context_prompt_tokens");
        json_t *req = json_object_get(m, "requests");

        fputs("### Level 3: Stress Test\n", f);
        if (json_is_integer(seq))
                fprintf(f, "- [%c] %" JSON_INTEGER_FORMAT " sequential requests: OK\n", passed ? 'x' : ' ',
                        json_integer_value(seq));
        else
                fprintf(f, "- [%c] Sequential requests: OK (%s)\n", passed && req ? 'x' : ' ',
                        req ? "count not recorded apart" : "not measured");
        fprintf(f, "- [%c] Concurrent requests: OK\n", passed ? 'x' : ' ');
        if (json_is_integer(ctx))
                fprintf(f, "- [%c] Long context (%" JSON_INTEGER_FORMAT " prompt tokens): OK\n",
                        passed ? 'x' : ' ', json_integer_value(ctx));
        else
                fputs("- [ ] Long context: not measured\n", f);
        if (json_is_integer(req))
                fprintf(f, "- Requests in all: %" JSON_INTEGER_FORMAT "\n", json_integer_value(req));
        fprintf(f, "- **Result**: %s\n\n", result_word(l));
}

/* Level 6: the one-factor-at-a-time runs; expected failures (known issues) apart from unexpected ones. */
static void level6_block(FILE *f, json_t *doc)
{
        unsigned pass = 0, xfail = 0, other = 0;
        _cleanup_json_ json_t *counts = json_object();
        _cleanup_free_ char *words = NULL;
        json_t *run, *r;
        size_t i, k;

        json_array_foreach (rep_runs(doc), i, run)
                json_array_foreach (json_object_get(run, "reasons"), k, r)
                        if (startswith(json_string_value(r) ?: "", "vary:")) {
                                const char *res = rep_result(run);

                                json_object_set_new(
                                        counts, res,
                                        json_integer(json_integer_value(json_object_get(counts, res)) + 1));
                                if (streq(res, "pass") || streq(res, "xpass"))
                                        pass++;
                                else if (streq(res, "xfail"))
                                        xfail++;
                                else
                                        other++;
                                break;
                        }
        fputs("### Level 6: Combinatorial\n", f);
        fprintf(f, "- [%c] Works with other features enabled\n- [%c] No feature interference\n",
                pass + xfail + other > 0 && other == 0 ? 'x' : ' ',
                pass + xfail + other > 0 && other == 0 ? 'x' : ' ');
        if (pass + xfail + other == 0)
                fputs("- **Result**: NOT RUN (the job has no one-factor-at-a-time runs)\n\n", f);
        else {
                /* the results in the one vocabulary (show, follow, the other reports); xfail is a known issue */
                words = mx_result_counts_text(counts, true);
                fprintf(f, "- **Result**: %s (%u runs: %s; %u unexpected)\n\n", other == 0 ? "PASS" : "FAIL",
                        pass + xfail + other, words, other);
        }
}

static void test_results(FILE *f, json_t *doc, json_t *run)
{
        static const char *const l1[] = {"Server starts without crash", "Single inference succeeds",
                                         "Expected kernel logs appear", NULL};
        static const char *const l15[] = {"Correct kernels observed in profiler",
                                          "No fallback kernels detected", NULL};
        static const char *const l2[] = {"Output matches reference (perplexity within tolerance)",
                                         "No NaN/Inf in outputs", NULL};
        static const char *const l5[] = {"Perf within 3% of baseline", "Memory within 1GB of baseline",
                                         NULL};
        json_t *l4 = rep_level(rep_attempt(run), "L4");

        fputs("## Test Results\n\n", f);
        level_block(f, run, "L1", "Level 1: Smoke Test", l1);
        level_block(f, run, "L1.5", "Level 1.5: Kernel Path Validation (GATE)", l15);
        level_block(f, run, "L2", "Level 2: Correctness", l2);
        l3_block(f, run);
        fprintf(f, "### Level 4: Performance Benchmark\nSee detailed results below.\n- **Result**: %s\n\n",
                result_word(l4));
        level_block(f, run, "L5", "Level 5: Regression Check", l5);
        level6_block(f, doc);
}

static void benchmark_section(FILE *f, json_t *run)
{
        json_t *a = rep_attempt(run), *record = json_object_get(a, "metadata");
        json_t *l4 = json_object_get(rep_level(a, "L4"), "metrics");

        fputs("## Benchmark Results\n\n### Environment\n```yaml\n", f);
        if (json_is_object(record)) {
                _cleanup_free_ char *y = mx_meta_env_yaml(record);

                fputs(y, f);
        } else
                fputs("# not recorded: the run's attempt has no metadata\n", f);
        fputs("```\n\n### Configuration\n```yaml\n", f);
        {
                const char *k;
                json_t *v;

                json_object_foreach (json_object_get(run, "config"), k, v)
                        fprintf(f, "%s: %s\n", k, strna(json_string_value(v)));
        }
        fputs("```\n\n### Results\n```yaml\n", f);
        if (json_is_object(l4)) {
                _cleanup_free_ char *y = mx_bench_results_yaml(l4);

                fputs(y, f);
        } else
                fputs("# not measured: the feature run has no L4 (benchmark) level\n", f);
        fputs("```\n\n### Profiling Artifacts\n- nsys: `docs/perf_artifacts/<run_id>.nsys-rep`\n"
              "- ncu: `docs/perf_artifacts/<run_id>.ncu-rep`\n\n---\n\n",
              f);
}

/* The sections only people can write: the template's own prompts. */
static const char human_sources[] =
        "## Source Files Changed\n\n### FlashInfer\n| File | Change Description "
        "|\n|------|-------------------|\n"
        "| `path/to/file.py` | Description |\n\n### vLLM\n| File | Change Description |\n"
        "|------|-------------------|\n| `path/to/file.py` | Description |\n\n---\n\n"
        "## Environment Variables Added\n\n| Variable | Default | Options | Description |\n"
        "|----------|---------|---------|-------------|\n| `VAR_NAME` | `default` | `opt1`, `opt2` | What "
        "it "
        "controls |\n\n---\n\n"
        "## Implementation Notes\n\n### Key Decisions\n1. Decision and rationale\n\n### Tradeoffs "
        "Considered\n"
        "1. Option A vs Option B: Chose A because...\n\n### Code Review Findings\n1. Potential issue or "
        "improvement\n\n---\n\n"
        "## REQUIRED: Areas for Improvement\n\nAfter implementing, identify opportunities for further "
        "optimization:\n\n"
        "1. **<Improvement 1>**: Description\n   - Current state: X\n   - Better approach: Y\n"
        "   - Expected gain: Z%\n   - Effort: Low/Medium/High\n\n"
        "2. **<Improvement 2>**: Description\n   - Current state: X\n   - Better approach: Y\n"
        "   - Expected gain: Z%\n   - Effort: Low/Medium/High\n\n---\n\n";

static const char human_tail[] =
        "## Rollback Plan\n\nIf feature causes issues:\n\n```bash\n# Disable via environment variable\n"
        "export VAR_NAME=off\n\n# Or revert to baseline branch\ngit checkout "
        "mxfp4_v2_baseline\n```\n\n---\n\n"
        "## References\n\n- Related PR: \n- Upstream issue: \n"
        "- Related investigation: `docs/investigations/<file>.md`\n";

/* The feature run: planned feature-on (the feature alone on the baseline), else the first that is not the
 * baseline. */
static json_t *porting_run(json_t *doc)
{
        json_t *run, *r, *first = NULL;
        size_t i, k;

        json_array_foreach (rep_runs(doc), i, run) {
                json_array_foreach (json_object_get(run, "reasons"), k, r)
                        if (streq_ptr(json_string_value(r), "feature-on"))
                                return run;
                if (!first && !rep_is_baseline(doc, run))
                        first = run;
        }
        return first;
}

int report_porting(json_t *doc, const char *feature, FILE *f, char **reterr)
{
        json_t *feat = rep_feature(doc, feature), *job = rep_job(doc), *run = porting_run(doc);
        json_t *base = rep_baseline_run(doc);
        const char *branch, *title;
        _cleanup_free_ char *levels = NULL, *base_text = NULL;
        _cleanup_free_ char *counts = rep_result_counts(doc); /* the words of show and follow */
        struct rep_defs defs = {};
        int state;

        if (!feat) {
                *reterr =
                        feature ? xasprintf("'%s' is not a feature of the job's matrix", feature)
                                : xstrdup("the job's feature word names no feature of its matrix: name one");
                return -ENOENT;
        }
        if (!run) {
                *reterr = xstrdup("the job has no run of the feature (only the baseline, or no runs)");
                return -ENOENT;
        }
        title = json_string_value(json_object_get(feat, "title"))
                        ?: json_string_value(json_object_get(feat, "name"));
        branch = json_string_value(json_object_get(
                json_object_get(json_object_get(json_object_get(rep_attempt(run), "metadata"), "sources"),
                                "vllm"),
                "branch"));
        levels = json_dumps(json_object_get(job, "levels"), JSON_COMPACT);
        base_text = base ? xasprintf("is r%" JSON_INTEGER_FORMAT,
                                     json_integer_value(json_object_get(base, "id")))
                         : xstrdup("is missing (no baseline column)");
        fprintf(f,
                "# Feature: %s\n\n**Status**: %s\n**Priority**: P%" JSON_INTEGER_FORMAT
                "\n**Branch**: %s\n\n",
                strna(title), status_word(json_string_value(json_object_get(feat, "status"))),
                json_integer_value(json_object_get(feat, "priority")), branch ?: "(not recorded)");
        fprintf(f,
                "Written by `mxmatrix report porting` from job %" JSON_INTEGER_FORMAT
                " (levels %s, %zu runs: %s): the feature run is r%" JSON_INTEGER_FORMAT
                " (%s), the baseline run %s. "
                "The sections the runs cannot fill keep the template's prompts.\n\n---\n\n",
                json_integer_value(json_object_get(job, "id")), levels ?: "[]",
                json_array_size(rep_runs(doc)), counts,
                json_integer_value(json_object_get(run, "id")),
                strna(json_string_value(json_object_get(run, "config_key"))), base_text);
        {
                _cleanup_free_ char *h = rep_md(json_string_value(json_object_get(feat, "hypothesis")));

                fprintf(f, "## REQUIRED: Hypothesis (1 sentence)\n\n> \"%s\"\n\n---\n\n", h);
        }
        criteria_section(f, doc, feat, base, run, &defs);
        fputs("\n---\n\n", f);
        fputs(human_sources, f);
        test_results(f, doc, run);
        fputs("---\n\n", f);
        state = report_testlog_criteria(f, doc, feat, base, run, &defs);
        fprintf(f, "\n**Overall**: %s\n\n---\n\n",
                state == 0   ? "PASS"
                : state == 2 ? "FAIL"
                             : "INCOMPLETE (a criterion was not measured)");
        benchmark_section(f, run);
        fputs(human_tail, f);
        rep_defs_print(&defs, f);
        rep_defs_done(&defs);
        return 0;
}

int report_porting_name(json_t *doc, const char *feature, char **ret, char **reterr)
{
        json_t *feat = rep_feature(doc, feature);
        const char *name = json_string_value(json_object_get(feat, "name"));
        _cleanup_free_ char *up = NULL;
        char *s;

        if (!name) {
                *reterr =
                        feature ? xasprintf("'%s' is not a feature of the job's matrix", feature)
                                : xstrdup("the job's feature word names no feature of its matrix: name one");
                return -ENOENT;
        }
        /* Seed 000: docs/porting/FEATURE_<name>.md, the name in upper case with '_' for '-'. */
        up = xstrdup(name);
        for (char *c = up; *c; c++)
                *c = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
        s = xasprintf("porting/FEATURE_%s.md", up);
        *ret = s;
        return 0;
}
