/* SPDX-License-Identifier: MIT */
/* The table of report kinds: every renderer behind its name, the top of the folder (as tmux's cmd_table). */
#include "mxreport.h"
#include "report-html.h"
#include "util.h"

const struct report_kind report_kinds[] = {
        {"benchmark-results", "BENCHMARK_RESULTS.md", "seed 002's BENCHMARK_RESULTS.md",
         report_benchmark_results},
        {"test-log", NULL, "seed 001's test log with seed 000's Success Criteria Evaluation", NULL, report_test_log,
         report_test_log_name},
        {"porting", NULL, "seed 000's feature document: hypothesis, criteria, test results, evaluation", NULL,
         report_porting, report_porting_name},
        {"feature-matrix", "FEATURE_MATRIX.md", "seed 003's status, combinations tested and known issues",
         report_feature_matrix},
        {"analysis", "analysis/VLLM_BASELINE_ANALYSIS.md",
         "seed 001's decode profile per run: kernel categories, their change against the baseline, decision "
         "rules",
         report_analysis},
        {"json", "report.json", "the report document (mxmatrix-report.json(5))", report_json},
        {"csv", "report.csv", "one row per run, level and metric", report_csv},
        {"junit", "junit.xml", "JUnit XML: one testcase per run and level", report_junit},
        {"html", "report.html", "one self-contained page of charts (inline SVG, no script)",
         report_html_write},
};
const size_t report_n_kinds = ELEMENTSOF(report_kinds);

const struct report_kind *report_kind_find(const char *name)
{
        for (size_t i = 0; i < report_n_kinds; i++)
                if (streq(report_kinds[i].name, name))
                        return &report_kinds[i];
        return NULL;
}
