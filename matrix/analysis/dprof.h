/* SPDX-License-Identifier: MIT */
/*
 * Where decode time goes (issue 18, seed 001 Phase 0): a profiler report
 * (profreport.h) sorted into kernel categories (kcat.h) as seed 001's table
 * Kernel Category | Time % | Avg (µs) | Calls/Token, with µs/token; a feature
 * run's table against its baseline's (Δ µs/token, Δ calls/token per category
 * and kernel); the matrix's decision rules (seed 001 Step 0.4) judged on a
 * table. Pure functions over parsed reports and JSON: no files, no clock.
 *
 * "Per token" divides by the decode tokens of the captured workload, which
 * only the capture knows ({"tokens", "requests", "prompt_tokens",
 * "output_tokens", "which"}, profile-workload.json in the run directory);
 * without it the per-token columns are null and "per_token_why" says why.
 *
 * Times are summed as integer picoseconds, so the categories' totals add up
 * to the report's total exactly.
 */
#pragma once

#include "kcat.h"
#include "matrix.h"
#include "profreport.h"

#include <jansson.h>

#define MX_DPROF_TOP_OTHER 10   /* uncategorised kernels listed */
#define MX_DPROF_TOP_KERNELS 20 /* kernels listed with their category */
#define MX_DPROF_TOP_DIFF 10    /* kernels in a diff */

/*
 * Check a workload object (profile-workload.json): "tokens" a positive
 * number is required; the rest optional. 0, or -EINVAL with *reterr.
 */
int mx_dprof_workload_check(json_t *w, char **reterr);

/*
 * The table of one report: {"format", "kernels", "launches", "timed_launches",
 * "total_us", "tokens", "workload", "per_token_why", "categories": [{"name",
 * "time_pct", "total_us", "avg_us", "calls", "calls_per_token",
 * "us_per_token", "kernels"}], "categories_total_us", "top_other": [...],
 * "top_kernels": [...]}. workload may be NULL; then no_workload_why says why.
 * Categories that ran nothing are left out; "other" is always last.
 */
json_t *mx_dprof_analyse(const struct mx_kcat *c, const struct mx_profreport *r, json_t *workload,
                         const char *no_workload_why);

/*
 * A feature's table against its baseline's: {"per_token": bool, "why",
 * "categories": [{"name", "d_us_per_token", "d_calls_per_token", "d_time_pct",
 * "us_per_token", "baseline_us_per_token"}], "kernels": [...], "text":
 * "MoE GEMM −38 µs/token, GEMV +2"}. Without per-token figures on both sides
 * the Δ is in Time % points and "per_token" is false. Categories are all listed, kernels only
 * those that changed (the MX_DPROF_TOP_DIFF largest changes).
 */
json_t *mx_dprof_diff(json_t *feature, json_t *baseline);

/*
 * The matrix's decision rules on one table: [{"when", "then", "note",
 * "share_pct", "verdict": "holds" | "does-not-hold"}]; [] when none.
 */
json_t *mx_dprof_rules(const struct mx_matrix *m, json_t *table);

/*
 * The analysis of a job: runs is [{"run", "config_key", "reasons",
 * "table" | "error"}] in plan order; adds "diff" (against the baseline run:
 * reason "baseline", else "feature-off") and "rules" to each run with a
 * table, and returns {"baseline_run", "runs", "categories_from"}.
 */
json_t *mx_dprof_job(const struct mx_matrix *m, json_t *runs);
