/* SPDX-License-Identifier: MIT */
/*
 * The answer on one screen: show JOB's and follow's per-configuration
 * summary of a job, from the evidence queue_job_evidence_json() reads for
 * the success criteria (each run's latest attempt, the L4 figures taken out
 * of the stored L4 document). Per run: what differs from the baseline, the
 * result, each level's verdict in the seed's order (L1.5 before the levels
 * it can invalidate), and the criteria's metrics with the L4 rows' t/s mean,
 * population std and n, and the change against the job's baseline run.
 * Pure functions over the matrix and JSON; nothing here reads the database.
 */
#pragma once

#include "matrix.h"

#include <jansson.h>

/* Runs a summary holds at most (show's default page): a larger job's summary says how many it left out. */
#define SUMMARY_RUNS_MAX 1000
/* Metrics (columns) at most: the criteria's first, then the L4 rows', then TTFT. */
#define SUMMARY_METRICS_MAX 10

/*
 * The summary of a job: m and feature (its index, or -1 for none) give the
 * criteria's metrics (m may be NULL: the job's matrix cannot be read);
 * job_levels is the job's level selection; runs its evidence. Returns
 * {"baseline": {"run", "config_key"} | null, "baseline_why", "levels": [...],
 * "metrics": [{"metric", "unit", "higher_is_better", "criterion"}],
 * "runs": [{"run", "seq", "config_key", "differs", "state", "result",
 * "crash_class", "verdicts": {LEVEL: verdict}, "metrics": {METRIC: {"value",
 * "std", "n", "change_pct", "invalid"} | {"not_measured": why}}}],
 * "total", "shown"}.
 */
json_t *summary_job_json(const struct mx_matrix *m, int feature, json_t *job_levels, json_t *runs);
