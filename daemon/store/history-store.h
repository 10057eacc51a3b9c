/* SPDX-License-Identifier: MIT */
/*
 * The stored results levels compare against (run/history.h answers the
 * runner's questions with them): an attempt's job, baseline run, source SHAs
 * and GPU, the verdicts a level recorded for a configuration, the GPU of the
 * newest metadata record. Read-only; errors as "history: ..." in *reterr.
 */
#pragma once

#include "db.h"

#include <jansson.h>

/* attempt's {job, run, attempt, config_key, baseline_key, baseline_run, sources, gpu_name}, or -ENOENT. */
int history_store_self(struct mx_db *db, int64_t attempt, json_t **ret, char **reterr);
/*
 * The newest results (at most limit) of level for config_key, other than
 * attempt's own: [{job, run, attempt, finished_at, verdict, metrics, sources,
 * gpu_name, confirm_of}], newest first.
 */
int history_store_results(struct mx_db *db, int64_t attempt, const char *level, const char *config_key,
                          size_t limit, json_t **ret, char **reterr);
/* The GPU the newest stored metadata record names, or NULL. */
json_t *history_store_last_gpu(struct mx_db *db);
