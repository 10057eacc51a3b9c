/* SPDX-License-Identifier: MIT */
/*
 * The sampler's summaries in the database (schema/migrations/004-samples.sql):
 * one per attempt and scope ("run" for the whole attempt, or a level name such
 * as "L3"); storing again replaces it. The sampler (measure/) measures, this
 * file keeps what it measured. Non-logging.
 */
#pragma once

#include "db.h"
#include "sampler.h"

#include <jansson.h>

#define SAMPLE_STORE_SCOPE_MAX 32

/* Store sum as attempt's summary for scope; -EINVAL for an empty or too long scope. */
int sample_store_summary(struct mx_db *db, int64_t attempt_id, const char *scope,
                         const struct mx_sample_summary *sum);
/* {scope: summary, ...} of an attempt, or NULL in *ret when none, for show. */
int sample_store_attempt_json(struct mx_db *db, int64_t attempt_id, json_t **ret);
