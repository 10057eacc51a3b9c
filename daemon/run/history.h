/* SPDX-License-Identifier: MIT */
/*
 * Stored results for levels that compare (runner.h: struct mx_history), read
 * from the daemon's database: this attempt's job, baseline run, source SHAs
 * (attempt_sources) and GPU (the metadata record's summary.gpu_name), and the
 * verdicts a level recorded for a configuration. Read-only; the scheduler
 * fills one per running attempt.
 */
#pragma once

#include "db.h"
#include "runner.h"

/* At most this many earlier results per question. */
#define MX_HISTORY_LIMIT_MAX 200

struct mx_history_db {
        struct mx_history ops; /* ops.ud points back here */
        struct mx_db *db;
        int64_t attempt;
};

/* Set h up to answer for attempt in db (both borrowed for h's lifetime). */
void mx_history_db_init(struct mx_history_db *h, struct mx_db *db, int64_t attempt);

/*
 * --skip-measured: the newest attempt of config_key whose L4 passed with valid
 * numbers at exactly these sources ({name: sha}) on this GPU (gpu may be
 * null: unknown): 0 and *ret ({"job", "run", "attempt"}), -ENOENT when none.
 */
int mx_history_measured(struct mx_db *db, const char *config_key, json_t *sources, json_t *gpu,
                        json_t **ret);

/* The GPU the newest stored metadata record names (the machine's, as far as the daemon knows), or NULL. */
json_t *mx_history_last_gpu(struct mx_db *db);

/* The current commit of a git work tree, read from its files (HEAD, the ref, packed-refs); NULL when none.
 */
char *mx_git_head(const char *path);
