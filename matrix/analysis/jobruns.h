/* SPDX-License-Identifier: MIT */
/*
 * A job's runs as JSON (each with "reasons", the plan's why of the run,
 * plan.h): which run a job's other runs are measured against. One choice for
 * every reader (show's summary, the decode-profile diff, the decision rules),
 * so that they never name different baselines for one job.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

/* Has RUN the reason REASON, exactly? */
bool mx_jobruns_has_reason(json_t *run, const char *reason);

/*
 * The job's baseline run: the first of RUNS with reason "baseline", else the
 * first with reason "feature-off" (the feature off on the baseline); NULL when
 * neither. Borrowed from RUNS.
 */
json_t *mx_jobruns_baseline(json_t *runs);
