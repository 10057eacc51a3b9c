/* SPDX-License-Identifier: MIT */
/*
 * Metadata records in the database (schema/migrations/005-metadata.sql): one
 * per attempt, blobs once per distinct content, the source trees' SHAs in a
 * table of their own for queries across runs. Non-logging.
 */
#pragma once

#include "db.h"

#include <jansson.h>

/* Store attempt's record; blobs go to the blob table once per distinct content. */
int meta_store(struct mx_db *db, int64_t attempt_id, json_t *record, json_t *blobs);
/* The record of an attempt, or -ENOENT. */
int meta_attempt_json(struct mx_db *db, int64_t attempt_id, json_t **ret);
/*
 * For show: add "metadata" to each entry of run's "attempt_history" (by its
 * "id") and the blobs they name to run's "metadata_blobs" ({"<hash>": text}).
 */
int meta_attach_run(struct mx_db *db, json_t *run);
