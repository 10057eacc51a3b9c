/* SPDX-License-Identifier: MIT */
/*
 * Where decode time goes, per run of a job (issue 18): each run's profiler
 * report (the L1.5 evidence: the profile's profiler.report in the attempt's
 * run directory) and its declared workload (profile-workload.json there) read
 * and handed to matrix/analysis/dprof.h with the matrix's kernel categories.
 * For the report document's "analysis" section and the gates method's
 * decision rules.
 */
#pragma once

#include "control.h"
#include "matrix.h"

#include <jansson.h>

#define ANALYSIS_RUNS_MAX 256 /* runs of one job whose reports are read */
#define ANALYSIS_WORKLOAD_FILE "profile-workload.json"
#define ANALYSIS_WORKLOAD_MAX 65536 /* bytes of that file */
#define ANALYSIS_GATES_JOBS                                                                                 \
        4 /* newest jobs per feature word the gates look through for a profiled baseline */

/* {"baseline_run", "categories_from", "categories", "runs": [...]} (mx_dprof_job()); m may be NULL (built-in
 * list). */
json_t *analysis_job(struct mx_daemon *d, int64_t job, const struct mx_matrix *m);

/*
 * The matrix's decision rules judged on the newest job of m with a profiled
 * baseline run: {"rules": [...], "job", "run"} or {"rules": [...], "why"}.
 */
json_t *analysis_gates_rules(struct mx_daemon *d, const struct mx_matrix *m);
