/* SPDX-License-Identifier: MIT */
/*
 * Success criteria and gates between phases, judged from stored runs (seed
 * 000 "Success Criteria" and "Success Criteria Evaluation", seed 001 "Gate
 * Criteria Between Phases"). Pure functions over the matrix and JSON: the
 * daemon gathers a job's evidence with queue_job_evidence_json() and hands it
 * here; nothing in this module touches the database or logs.
 *
 * A job's evidence is an array of runs, each
 *
 *   {"run", "seq", "reasons": [...], "expect_fail", "state", "outcome",
 *    "crash_class", "sample_peak_bytes",
 *    "levels": {"L1.5": {"verdict", "message", "kernel_evidence"},
 *               "L3": {"verdict", "message", "failures": [...]},
 *               "L4": {"verdict", "message", "results", "ready_s",
 *                      "memory_peak_bytes", "valid"}, "L1": {..., "ready_s"}, ...}}
 *
 * for the latest attempt of each run. L4's numbers are the bench engine's
 * "results" (seed 002's Results keys: throughput.tg32_tps, latency.ttft_p50_ms,
 * and resource.gpu_memory_peak_gb where present), its "ready_s" and its
 * memory summary's peak in bytes (as GiB, as seed 002's YAML writes it); a run
 * whose L4 says valid: false, or whose L1.5 verdict is fail or invalid, has
 * no number that passes anything.
 *
 * Which runs are compared: the feature on against the feature off, on the
 * merged stack when the plan has one (reasons feature-on:stack / feature-off:stack: the
 * feature as it would be merged), else on the baseline (feature-on / feature-off). A
 * feature that sets no axis is one run on and off; its relative criteria use
 * the baseline declared in the matrix, or stay incomplete. Crashes count over
 * every run with the feature on (not the runs marked known-incompatible).
 */
#pragma once

#include "matrix.h"

#include <jansson.h>

/* Jobs per feature that gates look back through, newest first. */
#define CRITERIA_GATE_JOBS 16

/*
 * One number of one run's evidence. 0 with *ret; -ENODATA when the run has
 * none, -EINVAL when it has one that may not count (invalid L4, wrong kernel
 * path); *ret_why says so (caller frees), with *ret_source where it came from.
 * "crashes" is not a per-run metric here (criteria_crashes()).
 */
int criteria_run_metric(json_t *run, const char *metric, double *ret, char **ret_source, char **ret_why);

/*
 * Crashes among the runs with the feature on: 0 with *ret, or -ENODATA when
 * none of them ran L3 (the stress test) and none crashed.
 */
int criteria_crashes(json_t *runs, bool feature_on, int64_t *ret, char **ret_why);

/*
 * The success criteria of feature f for one job: {"feature", "id", "title",
 * "hypothesis", "compared": {"basis", "on", "off"}, "rows": [...],
 * "constraints": [...], "overall": "pass" | "fail" | "incomplete", "missing":
 * [...]}; each row {"metric", "unit", "target", "target_value", "baseline",
 * "baseline_from", "actual", "actual_from", "change_pct", "pass": "pass" |
 * "fail" | "invalid" | "missing", "why", "note"}.
 */
json_t *criteria_job_json(const struct mx_matrix *m, size_t f, json_t *runs);

/*
 * The gates of every feature: jobs[i] is feature i's evidence, an array of
 * {"job": id, "runs": [...]} newest first. Returns {"features": [{"feature",
 * "id", "title", "status", "depends_on", "verdict": "open" | "held" |
 * "unknown", "may_start": true | false | null, "text", "gates": [{"of", "of_id",
 * "condition", "note", "verdict": "pass" | "fail" | "unknown", "actual",
 * "job", "run", "why"}]}]}.
 */
json_t *criteria_gates_json(const struct mx_matrix *m, json_t *const *jobs);
