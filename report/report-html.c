/* SPDX-License-Identifier: MIT */
/* The HTML report: one self-contained page of charts and tables from a report document (report-html.h). */
#include "report-html.h"
#include "report-internal.h"
#include "svg.h"

#include <inttypes.h>
#include <math.h>

/* Within this relative distance of the baseline a bar is neither green nor red. */
#define REPORT_HTML_SAME 0.02

/* memory in GB (10^9 bytes), the seeds' unit, as the criteria, L5 and the other reports count it */
#define GB 1e9
#define HEAT_AXES_MAX 64 /* distinct values of one axis in the grid */

struct hrun {
        int64_t id;
        const char *key, *result, *crash_class;
        json_t *config;
        bool baseline;
        double tg32, pp2048, ttft; /* NAN: not measured */
        json_t *l4;                /* L4's metrics (borrowed), or NULL */
        json_t *samples;           /* one sampler summary (borrowed), or NULL */
        char *name;                /* "r12 kernel=cutlass,..." */
};

static double num(json_t *v)
{
        return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The bench result document within L4's metrics: the metrics themselves, or one member holding "results". */
static json_t *bench_doc(json_t *metrics)
{
        const char *k;
        json_t *v;

        if (json_object_get(metrics, "results"))
                return metrics;
        json_object_foreach (metrics, k, v)
                if (json_is_object(v) && json_object_get(v, "results"))
                        return v;
        return NULL;
}

/* A row's class: ok (pass), xf (an expected failure: never green, never "passed"), ko (anything else). */
static const char *row_class(const char *result)
{
        return streq_ptr(result, "pass") ? "ok" : streq_ptr(result, "xfail") ? "xf" : "ko";
}

/* A run of the report document: its figures from the attempt its result comes from (rep_attempt). */
static void hrun_load(struct hrun *h, json_t *doc, json_t *run)
{
        json_t *attempt = rep_attempt(run), *samples = json_object_get(attempt, "samples"), *res, *v;
        json_t *reasons = json_object_get(run, "reasons");
        size_t i;

        *h = (struct hrun){
                .id = json_integer_value(json_object_get(run, "id")),
                .key = json_string_value(json_object_get(run, "config_key")),
                .result = rep_result(run),
                .crash_class = json_string_value(json_object_get(attempt, "crash_class")),
                .config = json_object_get(run, "config"),
                .baseline = rep_is_baseline(doc, run),
                .tg32 = NAN,
                .pp2048 = NAN,
                .ttft = NAN,
        };
        /* A job without the matrix's baseline among its runs may still hold the run planned as one. */
        json_array_foreach (reasons, i, v)
                if (streq_ptr(json_string_value(v), "baseline"))
                        h->baseline = true;
        h->l4 = bench_doc(json_object_get(rep_level(attempt, "L4"), "metrics"));
        res = json_object_get(h->l4, "results");
        h->tg32 = num(json_object_get(json_object_get(res, "throughput"), "tg32_tps"));
        h->pp2048 = num(json_object_get(json_object_get(res, "throughput"), "pp2048_tps"));
        h->ttft = num(json_object_get(json_object_get(res, "latency"), "ttft_p50_ms"));
        h->samples = json_object_get(samples, "run");
        if (h->baseline)
                h->name = xasprintf("r%" PRId64 " baseline", h->id);
        else {
                /* What sets it apart from the baseline is shorter than its whole key, and says more. */
                _cleanup_free_ char *diff =
                        json_object_size(json_object_get(rep_matrix(doc), "baseline")) > 0
                                ? rep_config_diff(doc, run)
                                : NULL;

                h->name = xasprintf("r%" PRId64 " %s", h->id, diff && *diff ? diff : strna(h->key));
        }
}

static void put(FILE *f, const char *s)
{
        struct mx_buf b = MX_BUF_INIT;

        svg_escape_to(&b, s);
        fputs(strempty(b.data), f);
        mx_buf_free(&b);
}

static void put_num(FILE *f, double v, const char *unit)
{
        _cleanup_free_ char *s = svg_number(v);

        if (isfinite(v))
                fprintf(f, "%s%s%s", s, unit ? " " : "", strempty(unit));
        else
                fputs("<span class=\"na\">-</span>", f);
}

struct metric {
        const char *id, *metric, *title, *unit, *definition;
        size_t offset; /* of the double in struct hrun */
        bool lower_is_better;
};

static const struct metric metrics[] = {
        {"tg32", "tg32_tps", "tg32: decode throughput per configuration", "tokens/s",
         "mean tokens/s of the depth-0 tg32 rows (llama-benchy's tg: completion tokens after the first, "
         "over "
         "the time from the first to the last token), L4 results.throughput.tg32_tps",
         offsetof(struct hrun, tg32), false},
        {"pp2048", "pp2048_tps", "pp2048: prefill throughput per configuration", "tokens/s",
         "mean tokens/s of the depth-0 pp2048 rows (prompt tokens over the time to the first token), L4 "
         "results.throughput.pp2048_tps",
         offsetof(struct hrun, pp2048), false},
        {"ttft", "ttft_p50_ms", "TTFT p50 per configuration (lower is better)", "ms",
         "median TTFT (time to the first text, reasoning included; not TTFR, the first response chunk that "
         "vllm bench serve calls TTFT) over every valid depth-0 request, L4 "
         "results.latency.ttft_p50_ms",
         offsetof(struct hrun, ttft), true},
};

/* A target's name: its label, or the name the matrix's reference section gives it. */
static const char *target_label(json_t *t)
{
        const char *label = json_string_value(json_object_get(t, "label"));

        return label ?: json_string_value(json_object_get(t, "name")) ?: "target";
}

static double metric_of(const struct hrun *h, const struct metric *m)
{
        return *(const double *)((const char *)h + m->offset);
}

static void bars_section(FILE *f, const struct hrun *runs, size_t n, const struct hrun *base,
                         const struct metric *m, json_t *targets)
{
        _cleanup_free_ struct svg_bar *bars = xcalloc(MX_MAX(n, (size_t)1), sizeof(*bars));
        _cleanup_free_ struct svg_ref *refs = NULL;
        _cleanup_strv_free_ char **tips = NULL;
        size_t n_refs = 0, measured = 0, i;
        double bv = base ? metric_of(base, m) : NAN;
        struct mx_buf b = MX_BUF_INIT;
        json_t *t;

        refs = xcalloc(json_array_size(targets) + 1, sizeof(*refs));
        if (isfinite(bv))
                refs[n_refs++] = (struct svg_ref){bv, "baseline", "baseline"};
        json_array_foreach (targets, i, t)
                if (streq_ptr(json_string_value(json_object_get(t, "metric")), m->id) ||
                    streq_ptr(json_string_value(json_object_get(t, "metric")), m->metric))
                        refs[n_refs++] = (struct svg_ref){num(json_object_get(t, "value")), target_label(t),
                                                          "target"};
        for (i = 0; i < n; i++) {
                double v = metric_of(&runs[i], m);
                /* Colour only beyond REPORT_HTML_SAME: run-to-run noise is not a verdict (L5 gives those). */
                double rel = isfinite(bv) && bv != 0 ? (v - bv) / fabs(bv) * (m->lower_is_better ? -1 : 1) : 0;
                const char *shade = rel > REPORT_HTML_SAME ? "good" : rel < -REPORT_HTML_SAME ? "bad" : NULL;
                _cleanup_free_ char *vs = svg_number(v);

                measured += isfinite(v);
                strv_consume(&tips, xasprintf("%s: %s %s", runs[i].name, vs, m->unit));
                bars[i] = (struct svg_bar){
                        runs[i].name,
                        v,
                        runs[i].baseline ? "baseline"
                        : !isfinite(bv)  ? NULL
                                         : shade,
                        tips[i],
                };
        }
        {
                struct svg_bars c = {m->id, m->title, m->unit, bars, n, refs, n_refs};
                svg_bar_chart(&b, &c);
        }
        fprintf(f, "<section id=\"%s\" class=\"metric\"><h2>", m->id);
        put(f, m->title);
        fprintf(f, "</h2>\n<p class=\"def\">");
        put(f, m->definition);
        fprintf(f, "; %zu of %zu runs measured; one value per run (the attempt its result comes from).",
                measured, n);
        if (isfinite(bv))
                fprintf(f, " Green: better than the baseline by more than %.0f %%; red: worse by more than"
                           " %.0f %%; within that, neutral (L5 judges regressions from the runs' spread).",
                        REPORT_HTML_SAME * 100, REPORT_HTML_SAME * 100);
        fprintf(f, "</p>\n%s</section>\n", b.data);
        mx_buf_free(&b);
}

/* The point arrays of n series, and the array of them. */
static void points_free(struct svg_point **pts, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(pts[i]);
        free(pts);
}

static void pareto_section(FILE *f, const struct hrun *runs, size_t n)
{
        _cleanup_free_ struct svg_series *series = xcalloc(MX_MAX(n, (size_t)1), sizeof(*series));
        struct svg_point **pts = xcalloc(MX_MAX(n, (size_t)1), sizeof(*pts));
        _cleanup_strv_free_ char **labels = NULL;
        size_t ns = 0, total = 0;
        struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < n; i++) {
                json_t *rows = json_object_get(runs[i].l4, "tests"), *row;
                size_t k, np = 0;

                pts[i] = xcalloc(MX_MAX(json_array_size(rows), (size_t)1), sizeof(**pts));
                json_array_foreach (rows, k, row) {
                        json_int_t c = json_integer_value(json_object_get(row, "concurrency"));
                        double total_tps = num(json_object_get(json_object_get(row, "tps"), "mean"));
                        double user = num(json_object_get(json_object_get(row, "tps_req"), "mean"));

                        if (!streq_ptr(json_string_value(json_object_get(row, "kind")), "tg") ||
                            json_integer_value(json_object_get(row, "depth")) != 0 || !isfinite(total_tps))
                                continue;
                        /* One stream: its rate is the user's; several: each request's own rate. */
                        if (!isfinite(user))
                                user = c > 1 ? total_tps / (double)c : total_tps;
                        strv_consume(&labels,
                                     xasprintf("r%" PRId64 " tg%" JSON_INTEGER_FORMAT
                                               " c=%" JSON_INTEGER_FORMAT,
                                               runs[i].id, json_integer_value(json_object_get(row, "tg")),
                                               c > 0 ? c : 1));
                        pts[i][np++] = (struct svg_point){user, total_tps, labels[strv_length(labels) - 1],
                                                          runs[i].name};
                }
                if (np > 0)
                        series[ns++] = (struct svg_series){runs[i].name, pts[i], np, NULL};
                total += np;
        }
        {
                struct svg_xy c = {"pareto",
                                   "Throughput against interactivity (Pareto frontier)",
                                   "tokens/s per user (each request's decode rate)",
                                   "tokens/s per GPU (all requests)",
                                   series,
                                   ns,
                                   NULL,
                                   0,
                                   false,
                                   true};
                svg_xy_chart(&b, &c);
        }
        fprintf(f,
                "<section id=\"pareto\"><h2>Throughput against interactivity</h2>\n<p class=\"def\">One "
                "point "
                "per L4 tg row at depth 0 (one output length at one concurrency; %zu points): x the mean "
                "decode rate of one "
                "request (tps_req, or tps for one stream), y the mean rate of all requests together (tps); "
                "the dashed line joins the points no other point beats on both, as vllm bench sweep "
                "plot_pareto draws tokens/s/user against tokens/s/GPU (one GPU here).</p>\n%s</section>\n",
                total, b.data);
        points_free(pts, n);
        mx_buf_free(&b);
}

static void memory_section(FILE *f, const struct hrun *runs, size_t n)
{
        _cleanup_free_ struct svg_series *series = xcalloc(MX_MAX(n, (size_t)1), sizeof(*series));
        struct svg_point **pts = xcalloc(MX_MAX(n, (size_t)1), sizeof(*pts));
        size_t ns = 0;
        bool unified = false;
        struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < n; i++) {
                json_t *s = json_object_get(runs[i].samples, "series");
                json_t *t = json_object_get(s, "t"), *mem = json_object_get(s, "mem");
                size_t np = 0;

                pts[i] = xcalloc(MX_MAX(json_array_size(t), (size_t)1), sizeof(**pts));
                for (size_t k = 0; k < json_array_size(t) && k < json_array_size(mem); k++) {
                        double x = num(json_array_get(t, k)), y = num(json_array_get(mem, k));

                        if (isfinite(x) && isfinite(y))
                                pts[i][np++] = (struct svg_point){x, y / GB, NULL, NULL};
                }
                unified |= json_is_true(json_object_get(runs[i].samples, "unified"));
                if (np > 0)
                        series[ns++] = (struct svg_series){runs[i].name, pts[i], np, NULL};
        }
        {
                struct svg_xy c = {"memory",
                                   "Memory over time per run",
                                   "seconds since the run's first sample",
                                   unified ? "GB used (system memory: unified GPU)" : "GB used (GPU)",
                                   series,
                                   ns,
                                   NULL,
                                   0,
                                   true,
                                   false};
                svg_xy_chart(&b, &c);
        }
        fprintf(f,
                "<section id=\"memory-over-time\"><h2>Memory over time</h2>\n<p class=\"def\">The sampler's "
                "series for each run's whole attempt (scope \"run\"; at most 120 points each, neighbours "
                "merged "
                "keeping their peak): GPU memory used as NVML or nvidia-smi counts it, or on a "
                "unified-memory "
                "GPU the system's MemTotal - MemAvailable; %zu runs with samples.</p>\n%s</section>\n",
                ns, b.data);
        points_free(pts, n);
        mx_buf_free(&b);
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct values of axis among the runs, sorted. */
static char **axis_values(const struct hrun *runs, size_t n, const char *axis)
{
        char **out = NULL;

        for (size_t i = 0; i < n; i++) {
                const char *v = json_string_value(json_object_get(runs[i].config, axis));

                if (v && !strv_contains(out, v) && strv_length(out) < HEAT_AXES_MAX)
                        strv_push(&out, v);
        }
        if (out)
                qsort(out, strv_length(out), sizeof(char *), cmp_str);
        return out;
}

/* Every axis of the runs' configurations, sorted. */
static char **config_axes(const struct hrun *runs, size_t n)
{
        char **axes = NULL;

        for (size_t i = 0; i < n; i++) {
                const char *k;
                json_t *v;

                json_object_foreach (runs[i].config, k, v)
                        if (!strv_contains(axes, k))
                                strv_push(&axes, k);
        }
        if (axes)
                qsort(axes, strv_length(axes), sizeof(char *), cmp_str);
        return axes;
}

/* The two axes that vary most among the runs: rows the most varied, columns the next (NULL: none). */
static void grid_axes(const struct hrun *runs, size_t n, char **axes, const char **ret_r, const char **ret_c)
{
        size_t best_r = 1, best_c = 1;

        *ret_r = *ret_c = NULL;
        for (char **a = axes; a && *a; a++) {
                _cleanup_strv_free_ char **vals = axis_values(runs, n, *a);
                size_t k = strv_length(vals);

                if (k > best_r) {
                        best_c = best_r;
                        *ret_c = *ret_r;
                        best_r = k;
                        *ret_r = *a;
                } else if (k > best_c) {
                        best_c = k;
                        *ret_c = *a;
                }
        }
}

/* Does the run have value on axis (no axis: every run has)? */
static bool run_on(const struct hrun *h, const char *axis, const char *value)
{
        return !axis || streq_ptr(json_string_value(json_object_get(h->config, axis)), value);
}

/* The cell of the runs with ax_r=row and ax_c=col: its text and tip are kept in texts and tips. */
static struct svg_cell grid_cell(const struct hrun *runs, size_t n, const char *ax_r, const char *row,
                                 const char *ax_c, const char *col, char ***texts, char ***tips)
{
        size_t good = 0, xfail = 0, all = 0;
        struct mx_buf tip = MX_BUF_INIT;

        for (size_t i = 0; i < n; i++) {
                if (!run_on(&runs[i], ax_r, row) || !run_on(&runs[i], ax_c, col))
                        continue;
                all++;
                good += streq_ptr(runs[i].result, "pass");
                xfail += streq_ptr(runs[i].result, "xfail");
                mx_buf_printf(&tip, "%s%s: %s", tip.len ? "\n" : "", runs[i].name,
                              runs[i].result ?: "not finished");
        }
        /* pass of all; an expected failure is counted apart, never as a pass */
        strv_consume(texts, !all    ? xstrdup("")
                            : xfail ? xasprintf("%zu/%zu, %zu xfail", good, all, xfail)
                                    : xasprintf("%zu/%zu", good, all));
        strv_consume(tips, mx_buf_steal(&tip));
        return (struct svg_cell){all ? (*texts)[strv_length(*texts) - 1] : NULL,
                                 all == 0              ? "none"
                                 : good == all         ? "pass"
                                 : good + xfail == all ? "xfail"
                                 : good == 0           ? "fail"
                                                       : "mixed",
                                 all ? (*tips)[strv_length(*tips) - 1] : NULL};
}

/* The grid's section around its chart: what a cell counts, by which axes, and the colours. */
static void grid_write(FILE *f, const char *ax_r, const char *ax_c, size_t n, const char *chart)
{
        fprintf(f,
                "<section id=\"pass-fail\"><h2>Pass/fail grid</h2>\n<p class=\"def\">Runs that passed "
                "(result pass) of the runs in each cell, with the expected failures (xfail: marked "
                "known-incompatible, and failed or crashed) counted apart, by ");
        put(f, ax_r ? ax_r : "(no axis varies)");
        if (ax_c) {
                fputs(" &#215; ", f);
                put(f, ax_c);
        }
        fprintf(f,
                " (the axes that vary most among the %zu runs); green every run pass, grey only pass and "
                "xfail, red no pass and some other result (fail, crashed, ...), yellow some pass and some "
                "other; hover a cell for its runs.</p>\n%s</section>\n",
                n, chart);
}

static void grid_section(FILE *f, const struct hrun *runs, size_t n)
{
        _cleanup_strv_free_ char **axes = config_axes(runs, n), **rows = NULL, **cols = NULL, **texts = NULL,
                                 **tips = NULL;
        const char *ax_r, *ax_c;
        size_t nr, nc;
        _cleanup_free_ struct svg_cell *cells = NULL;
        struct mx_buf b = MX_BUF_INIT;

        grid_axes(runs, n, axes, &ax_r, &ax_c);
        rows = ax_r ? axis_values(runs, n, ax_r) : NULL;
        cols = ax_c ? axis_values(runs, n, ax_c) : NULL;
        if (!rows)
                strv_push(&rows, "all runs");
        if (!cols)
                strv_push(&cols, ax_r ? "(one varying axis)" : "all runs");
        nr = strv_length(rows);
        nc = strv_length(cols);
        cells = xcalloc(nr * nc, sizeof(*cells));
        for (size_t r = 0; r < nr; r++)
                for (size_t c = 0; c < nc; c++)
                        cells[r * nc + c] = grid_cell(runs, n, ax_r, rows[r], ax_c, cols[c], &texts, &tips);
        {
                struct svg_heat c = {"grid",
                                     "Pass/fail by configuration",
                                     ax_c ?: "",
                                     ax_r ?: "",
                                     (const char *const *)cols,
                                     nc,
                                     (const char *const *)rows,
                                     nr,
                                     cells};
                svg_heatmap(&b, &c);
        }
        grid_write(f, ax_r, ax_c, n, b.data);
        mx_buf_free(&b);
}

/*
 * Where decode time goes (the document's "analysis"): a stacked bar of μs/token by kernel category per
 * configuration; in points of decode time (Time %) when some run has no per-token figures. Left out
 * when no run has a profiler report.
 */
static void decode_section(FILE *f, json_t *doc, const struct hrun *runs, size_t n)
{
        json_t *cats = json_object_get(json_object_get(doc, "analysis"), "categories");
        size_t np = json_array_size(cats), nr = 0;
        _cleanup_free_ const char **parts = xcalloc(MX_MAX(np, (size_t)1), sizeof(*parts));
        _cleanup_free_ struct svg_stack_row *rows = xcalloc(MX_MAX(n, (size_t)1), sizeof(*rows));
        _cleanup_free_ double *vals = xcalloc(MX_MAX(n * np, (size_t)1), sizeof(double));
        struct mx_buf b = MX_BUF_INIT;
        bool per_tok = true;

        for (size_t k = 0; k < np; k++)
                parts[k] = json_string_value(json_array_get(cats, k));
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *id = json_integer(runs[i].id);
                json_t *t = json_object_get(rep_analysis_run(doc, id), "table");

                if (t) {
                        nr++;
                        per_tok = per_tok && json_is_number(json_object_get(t, "tokens"));
                }
        }
        if (nr == 0 || np == 0)
                return;
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_t *id = json_integer(runs[i].id);
                json_t *t = json_object_get(rep_analysis_run(doc, id), "table"), *c;
                size_t j;

                for (size_t k = 0; k < np; k++)
                        vals[i * np + k] = NAN;
                json_array_foreach (json_object_get(t, "categories"), j, c)
                        for (size_t k = 0; k < np; k++)
                                if (streq_ptr(parts[k], json_string_value(json_object_get(c, "name"))))
                                        vals[i * np + k] = num(
                                                json_object_get(c, per_tok ? "us_per_token" : "time_pct"));
                rows[i] = (struct svg_stack_row){runs[i].name, &vals[i * np], NULL};
        }
        {
                struct svg_stacked c = {"decode",
                                        "Where decode time goes, by kernel category",
                                        per_tok ? "μs per token" : "% of captured kernel time",
                                        parts,
                                        np,
                                        rows,
                                        n,
                                        "other"};

                svg_stacked_chart(&b, &c);
        }
        fputs("<section id=\"decode\"><h2>Decode profile</h2>\n<p class=\"def\">Each run's profiler report "
              "in "
              "kernel categories (first matching pattern wins; mxmatrix report analysis writes the table, "
              "the "
              "change against the baseline and the decision rules)",
              f);
        fputs(per_tok ? ", per decode token of the declared workload.</p>\n"
                      : "; in % of captured kernel time, as not every run declared its decode "
                        "workload.</p>\n",
              f);
        fwrite(b.data, 1, b.len, f);
        fputs("</section>\n", f);
        mx_buf_free(&b);
}

static void table_section(FILE *f, const struct hrun *runs, size_t n)
{
        fputs("<section id=\"runs\"><h2>Runs</h2>\n<table><thead><tr><th>run</th><th>configuration</th>"
              "<th>result</th><th>tg32 tok/s</th><th>pp2048 tok/s</th><th>TTFT p50 ms</th>"
              "<th>peak memory GB</th></tr></thead><tbody>\n",
              f);
        for (size_t i = 0; i < n; i++) {
                json_t *mem = json_object_get(runs[i].samples, "memory");

                fprintf(f, "<tr class=\"%s\"><td>r%" PRId64 "%s</td><td>",
                        row_class(runs[i].result), runs[i].id,
                        runs[i].baseline ? " (baseline)" : "");
                put(f, runs[i].key);
                fputs("</td><td>", f);
                put(f, runs[i].result ?: "not finished");
                if (runs[i].crash_class) {
                        fputs(": ", f);
                        put(f, runs[i].crash_class);
                }
                fputs("</td><td class=\"n\">", f);
                put_num(f, runs[i].tg32, NULL);
                fputs("</td><td class=\"n\">", f);
                put_num(f, runs[i].pp2048, NULL);
                fputs("</td><td class=\"n\">", f);
                put_num(f, runs[i].ttft, NULL);
                fputs("</td><td class=\"n\">", f);
                put_num(f, num(json_object_get(mem, "peak")) / GB, NULL);
                fputs("</td></tr>\n", f);
        }
        fputs("</tbody></table></section>\n", f);
}

/* The targets the bars mark: the document's, the matrix's reference ones, else seed 001's (in *ret_own). */
static json_t *html_targets(json_t *doc, json_t **ret_own)
{
        json_t *targets = json_object_get(doc, "targets");

        if (!json_is_array(targets))
                targets = json_object_get(json_object_get(rep_matrix(doc), "reference"), "targets");
        if (json_is_array(targets))
                return targets;
        *ret_own = json_pack("[{s:s,s:s,s:f},{s:s,s:s,s:f},{s:s,s:s,s:f}]", "metric", "tg32", "label",
                             "minimum", "value", REPORT_TG32_MINIMUM, "metric", "tg32", "label", "target",
                             "value", REPORT_TG32_TARGET, "metric", "tg32", "label", "stretch", "value",
                             REPORT_TG32_STRETCH);
        return *ret_own;
}

/* The document's runs, loaded (hrun_load()); *ret_base the first baseline among them, or NULL. */
static struct hrun *hruns_load(json_t *doc, json_t *runs_j, const struct hrun **ret_base)
{
        struct hrun *runs = xcalloc(MX_MAX(json_array_size(runs_j), (size_t)1), sizeof(*runs));
        json_t *r;
        size_t i;

        *ret_base = NULL;
        json_array_foreach (runs_j, i, r) {
                hrun_load(&runs[i], doc, r);
                if (runs[i].baseline && !*ret_base)
                        *ret_base = &runs[i];
        }
        return runs;
}

/* The page's title: the document's, else one naming the job and its feature. */
static char *html_title(json_t *doc)
{
        const char *title = json_string_value(json_object_get(doc, "title"));
        json_t *job = json_object_get(doc, "job");
        const char *feature = json_string_value(json_object_get(job, "feature"));

        if (title)
                return xstrdup(title);
        if (!json_is_object(job))
                return xstrdup("mxmatrix report");
        return xasprintf("mxmatrix report: job %" JSON_INTEGER_FORMAT "%s%s",
                         json_integer_value(json_object_get(job, "id")), feature ? ", feature " : "",
                         strempty(feature));
}

/* From the doctype to the page's heading: the title and the style sheet. */
static void head_write(FILE *f, const char *title)
{
        fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
              "<meta name=\"generator\" content=\"mxmatrix " MX_VERSION "\">\n<title>",
              f);
        put(f, title);
        fputs("</title>\n<style>\nbody{font:14px sans-serif;margin:16px 24px;color:#222;max-width:1100px}\n"
              "h1{font-size:20px}h2{font-size:16px;margin-top:28px}.def{color:#555;max-width:900px}\n"
              "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}\n"
              "td.n{text-align:right;font-variant-numeric:tabular-nums}tr.ko td:nth-child(3){color:#b00}\n"
              ".na{color:#999}.summary span{margin-right:18px}\n",
              f);
        fputs(svg_style(), f);
        fputs("</style></head><body>\n<h1>", f);
        put(f, title);
}

/* The summary line: the results, the baseline and the data's time. */
static void summary_write(FILE *f, json_t *doc, size_t n, const struct hrun *base)
{
        /* the job's results in the words of show, status and follow (mx_result_counts_text) */
        _cleanup_free_ char *counts = rep_result_counts(doc);
        json_t *at = json_object_get(doc, "generated_at");

        fprintf(f, "</h1>\n<p class=\"summary\"><span>%zu runs: ", n);
        put(f, counts);
        fputs("</span>", f);
        if (base) {
                fprintf(f, "<span>baseline: r%" PRId64 " ", base->id);
                put(f, strna(base->key));
                fputs("</span>", f);
        } else
                fputs("<span>no baseline run in this report</span>", f);
        if (json_is_integer(at)) {
                _cleanup_free_ char *s = mx_format_time(json_integer_value(at));
                fprintf(f, "<span>generated %s</span>", s);
        } else if (rep_last_finished(doc)) {
                /* The document's own time, in UTC: the same data gives the same page. */
                _cleanup_free_ char *s = rep_datetime(rep_last_finished(doc));
                fprintf(f, "<span>data as of %s UTC</span>", s);
        }
        fputs("</p>\n", f);
}

/* "Targets: minimum tg32 ≥ 20, ..." */
static void targets_write(FILE *f, json_t *targets)
{
        json_t *t;
        size_t i;

        fputs("<p class=\"def\">Targets: ", f);
        json_array_foreach (targets, i, t) {
                _cleanup_free_ char *v = svg_number(num(json_object_get(t, "value")));

                fputs(i ? ", " : "", f);
                put(f, target_label(t));
                fputs(" ", f);
                put(f, json_string_value(json_object_get(t, "metric")) ?: "?");
                fprintf(f, " &#8805; %s", v);
        }
        fputs(" (the matrix's reference targets, else seed 001's Success Criteria).</p>\n", f);
}

/* In place of the benchmark charts when no run has L4: the line that says so, with the job's levels. */
static void benchmarks_not_measured(FILE *f, json_t *job)
{
        struct mx_buf levels = MX_BUF_INIT;
        json_t *l;
        size_t i;

        json_array_foreach (json_object_get(job, "levels"), i, l)
                mx_buf_printf(&levels, "%s%s", i ? ", " : "", strna(json_string_value(l)));
        fputs("<section id=\"benchmarks\"><h2>tg32, pp2048, TTFT, Pareto</h2>\n<p class=\"def\">Not "
              "measured: no run of this report has an L4 (benchmark) level",
              f);
        if (levels.len) {
                fputs(" (the job ran ", f);
                put(f, levels.data);
                fputs(")", f);
        }
        mx_buf_free(&levels);
        fputs(", so the charts of tg32, pp2048, TTFT and throughput against interactivity are left "
              "out.</p></section>\n",
              f);
}

/*
 * The benchmark charts: a bar chart per metric and the Pareto chart. A sweep that ran no L4 (the demo's
 * L1-L3) has nothing for them: one line says so, and the sweep's own figures come first.
 */
static void benchmarks_write(FILE *f, json_t *doc, const struct hrun *runs, size_t n,
                             const struct hrun *base, json_t *targets)
{
        bool l4_any = false;

        for (size_t i = 0; i < n && !l4_any; i++)
                l4_any = runs[i].l4 != NULL;
        if (!l4_any) {
                benchmarks_not_measured(f, json_object_get(doc, "job"));
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(metrics); i++)
                bars_section(f, runs, n, base, &metrics[i], targets);
        pareto_section(f, runs, n);
}

int report_html_write(json_t *doc, FILE *f, char **reterr)
{
        json_t *runs_j = json_object_get(doc, "runs"), *targets;
        _cleanup_json_ json_t *default_targets = NULL;
        _cleanup_free_ struct hrun *runs = NULL;
        _cleanup_free_ char *title = NULL;
        const struct hrun *base;
        size_t n = json_array_size(runs_j);

        if (!json_is_array(runs_j)) {
                *reterr = xstrdup("not a report document: no \"runs\" array");
                return -EINVAL;
        }
        targets = html_targets(doc, &default_targets);
        runs = hruns_load(doc, runs_j, &base);
        title = html_title(doc);
        head_write(f, title);
        summary_write(f, doc, n, base);
        targets_write(f, targets);
        benchmarks_write(f, doc, runs, n, base, targets);
        grid_section(f, runs, n);
        decode_section(f, doc, runs, n);
        memory_section(f, runs, n);
        table_section(f, runs, n);
        fputs("</body></html>\n", f);
        for (size_t i = 0; i < n; i++)
                free(runs[i].name);
        return ferror(f) ? -EIO : 0;
}
