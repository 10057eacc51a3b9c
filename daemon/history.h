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

/* The current commit of a git work tree, read from its files (HEAD, the ref, packed-refs); NULL when none.
 */
char *mx_git_head(const char *path);
