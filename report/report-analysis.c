/* SPDX-License-Identifier: MIT */
/*
 * Seed 001 Phase 0's docs/analysis/VLLM_BASELINE_ANALYSIS.md from the report
 * document's "analysis" section (matrix/analysis/dprof.h made it): per run
 * the table Kernel Category | Time % | Avg (μs) | Calls/Token with μs/token,
 * the top uncategorised kernels, the change against the baseline run, and
 * the matrix's decision rules (seed 001 Step 0.4) judged.
 */
#include "report-internal.h"

#include <math.h>

json_t *rep_analysis_run(json_t *doc, json_t *run_id)
{
        json_t *e;
        size_t i;

        json_array_foreach (json_object_get(json_object_get(doc, "analysis"), "runs"), i, e)
                if (json_equal(json_object_get(e, "run"), run_id))
                        return e;
        return NULL;
}

/* A number with the decimals a column needs, or "not measured". */
static void cell(FILE *f, json_t *v, int decimals)
{
        if (json_is_number(v))
                fprintf(f, " %.*f |", decimals, json_number_value(v));
        else
                fputs(" not measured |", f);
}

static void signed_cell(FILE *f, json_t *v, int decimals)
{
        double d = json_number_value(v);

        if (!json_is_number(v))
                fputs(" - |", f);
        else
                fprintf(f, " %s%.*f |", d < 0 ? "\u2212" : "+", decimals, fabs(d));
}

static void table(FILE *f, json_t *t)
{
        json_t *c, *k;
        size_t i;

        fprintf(f,
                "Profiler report: %s, %" JSON_INTEGER_FORMAT " kernels, %" JSON_INTEGER_FORMAT
                " launches, %.1f μs of kernel time captured.\n",
                strna(json_string_value(json_object_get(t, "format"))),
                json_integer_value(json_object_get(t, "kernels")),
                json_integer_value(json_object_get(t, "launches")),
                json_number_value(json_object_get(t, "total_us")));
        if (json_is_number(json_object_get(t, "tokens")))
                fprintf(f, "Per token: %.0f tokens (%s).\n\n",
                        json_number_value(json_object_get(t, "tokens")),
                        strna(json_string_value(json_object_get(t, "which"))));
        else
                fprintf(f, "Per token: not measured (%s).\n\n",
                        strna(json_string_value(json_object_get(t, "per_token_why"))));
        fputs("| Kernel Category | Time % | Avg (μs) | Calls/Token | μs/token | Calls | Total (μs) | Notes "
              "|\n"
              "|---|---:|---:|---:|---:|---:|---:|---|\n",
              f);
        json_array_foreach (json_object_get(t, "categories"), i, c) {
                _cleanup_free_ char *name = rep_md(json_string_value(json_object_get(c, "name")));

                fprintf(f, "| %s |", name);
                cell(f, json_object_get(c, "time_pct"), 1);
                if (json_integer_value(json_object_get(c, "calls")) == 0)
                        fputs(" - |", f); /* no launch, no mean */
                else
                        cell(f, json_object_get(c, "avg_us"), 1);
                cell(f, json_object_get(c, "calls_per_token"), 2);
                cell(f, json_object_get(c, "us_per_token"), 1);
                fprintf(f, " %" JSON_INTEGER_FORMAT " |", json_integer_value(json_object_get(c, "calls")));
                cell(f, json_object_get(c, "total_us"), 1);
                fprintf(f, " %" JSON_INTEGER_FORMAT " kernel%s |\n",
                        json_integer_value(json_object_get(c, "kernels")),
                        json_integer_value(json_object_get(c, "kernels")) == 1 ? "" : "s");
        }
        fprintf(f,
                "| **Total** | 100.0 | | | | %" JSON_INTEGER_FORMAT " | %.1f | %" JSON_INTEGER_FORMAT
                " kernels |\n\n",
                json_integer_value(json_object_get(t, "launches")),
                json_number_value(json_object_get(t, "total_us")),
                json_integer_value(json_object_get(t, "kernels")));
        if (json_array_size(json_object_get(t, "top_other")) == 0) {
                fputs("Uncategorised kernels: none (every kernel matched a category).\n\n", f);
                return;
        }
        fputs("Top uncategorised kernels (name them in the matrix's `kernel_categories`):\n\n"
              "| Kernel | Time % | Calls | Total (μs) |\n|---|---:|---:|---:|\n",
              f);
        json_array_foreach (json_object_get(t, "top_other"), i, k) {
                _cleanup_free_ char *name = rep_md(json_string_value(json_object_get(k, "name")));

                fprintf(f, "| `%s` | %.1f | %" JSON_INTEGER_FORMAT " | %.1f |\n", name,
                        json_number_value(json_object_get(k, "time_pct")),
                        json_integer_value(json_object_get(k, "calls")),
                        json_number_value(json_object_get(k, "total_us")));
        }
        fputc('\n', f);
}

static void diff(FILE *f, json_t *d, json_t *base)
{
        bool per_tok = json_is_true(json_object_get(d, "per_token"));
        json_t *c;
        size_t i;

        fprintf(f, "### Against the baseline (r%" JSON_INTEGER_FORMAT ")\n\n**%s**\n\n",
                json_integer_value(base), strna(json_string_value(json_object_get(d, "text"))));
        if (!per_tok)
                fprintf(f, "%s\n\n", strna(json_string_value(json_object_get(d, "why"))));
        fputs(per_tok ? "| Kernel Category | Δ μs/token | Δ Calls/Token | Δ Time % |\n|---|---:|---:|---:|\n"
                      : "| Kernel Category | Δ Time % |\n|---|---:|\n",
              f);
        json_array_foreach (json_object_get(d, "categories"), i, c) {
                _cleanup_free_ char *name = rep_md(json_string_value(json_object_get(c, "name")));

                fprintf(f, "| %s |", name);
                if (per_tok) {
                        signed_cell(f, json_object_get(c, "d_us_per_token"), 1);
                        signed_cell(f, json_object_get(c, "d_calls_per_token"), 2);
                }
                signed_cell(f, json_object_get(c, "d_time_pct"), 1);
                fputc('\n', f);
        }
        fputs(per_tok ? "\n| Kernel | Δ μs/token | Δ Calls/Token |\n|---|---:|---:|\n"
                      : "\n| Kernel | Δ Time % |\n|---|---:|\n",
              f);
        json_array_foreach (json_object_get(d, "kernels"), i, c) {
                _cleanup_free_ char *name = rep_md(json_string_value(json_object_get(c, "name")));

                fprintf(f, "| `%s` |", name);
                if (per_tok) {
                        signed_cell(f, json_object_get(c, "d_us_per_token"), 1);
                        signed_cell(f, json_object_get(c, "d_calls_per_token"), 2);
                } else
                        signed_cell(f, json_object_get(c, "d_time_pct"), 1);
                fputc('\n', f);
        }
        fputc('\n', f);
}

static void rules(FILE *f, json_t *rs)
{
        json_t *r;
        size_t i;

        if (json_array_size(rs) == 0)
                return;
        fputs("### Decision gate (seed 001 Step 0.4)\n\n| If profiling shows | Share | Verdict | Then "
              "priority is |\n"
              "|---|---:|---|---|\n",
              f);
        json_array_foreach (rs, i, r) {
                _cleanup_free_ char *when = rep_md(json_string_value(json_object_get(r, "when")));
                _cleanup_free_ char *then = rep_md(json_string_value(json_object_get(r, "then")));
                bool holds = streq_ptr(json_string_value(json_object_get(r, "verdict")), "holds");

                fprintf(f, "| %s | %.1f %% | %s | %s |\n", when,
                        json_number_value(json_object_get(r, "share_pct")),
                        holds ? "**holds**" : "does not hold", then);
        }
        fputc('\n', f);
}

int report_analysis(json_t *doc, FILE *f, char **reterr)
{
        json_t *a = json_object_get(doc, "analysis"), *run, *e;
        size_t i;

        (void)reterr;
        if (!json_is_object(a)) {
                fputs("# VLLM Baseline Analysis\n\nNot measured: the report document has no analysis "
                      "section (a "
                      "document from a daemon older than issue 18, or not the last page of a job's runs).\n",
                      f);
                return 0;
        }
        fprintf(f, "# VLLM Baseline Analysis: job %" JSON_INTEGER_FORMAT " (%s)\n\n",
                json_integer_value(json_object_get(rep_job(doc), "id")),
                strna(json_string_value(json_object_get(rep_matrix(doc), "name"))));
        fprintf(f, "Where decode time goes, per run (seed 001 Phase 0). Kernel categories: %s.\n\n",
                streq_ptr(json_string_value(json_object_get(a, "categories_from")), "matrix")
                        ? "the matrix's `kernel_categories`"
                        : "the built-in list (vLLM/FlashInfer, llama.cpp CUDA)");
        json_array_foreach (rep_runs(doc), i, run) {
                _cleanup_free_ char *name = rep_config_name(doc, run);

                e = rep_analysis_run(doc, json_object_get(run, "id"));
                if (!e)
                        continue;
                fprintf(f, "## r%" JSON_INTEGER_FORMAT ": %s\n\nConfiguration: `%s`.\n\n",
                        json_integer_value(json_object_get(run, "id")), name,
                        strna(json_string_value(json_object_get(run, "config_key"))));
                if (!json_object_get(e, "table")) {
                        fprintf(f, "Not measured: %s.\n\n",
                                strna(json_string_value(json_object_get(e, "error"))));
                        continue;
                }
                table(f, json_object_get(e, "table"));
                if (json_object_get(e, "diff"))
                        diff(f, json_object_get(e, "diff"), json_object_get(a, "baseline_run"));
                rules(f, json_object_get(e, "rules"));
        }
        return 0;
}
