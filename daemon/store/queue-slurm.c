/* SPDX-License-Identifier: MIT */
/*
 * The attempts' Slurm columns (migration 009) as the read side and recovery
 * need them; apart from executor-slurm.c so that queue.c and programs that
 * link the runner (mxmatrix-run) do not pull the executor in. Non-logging.
 */
#include "queue-slurm.h"

int slurm_attempt_has_job(struct mx_db *db, int64_t attempt)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, "SELECT slurm_job_name IS NOT NULL FROM attempts WHERE id = ?", &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, attempt);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
                return sqlite3_column_int(s, 0);
        return rc == SQLITE_DONE ? 0 : db_errno(db, rc);
}

int slurm_attempt_json(struct mx_db *db, int64_t attempt, json_t *into)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, "SELECT slurm_job_name, slurm_job_id, slurm_node, slurm_state FROM attempts "
                            "WHERE id = ? AND slurm_job_name IS NOT NULL", &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, attempt);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
                static const char *const keys[] = { "job_name", "job_id", "node", "state", NULL };

                json_object_set_new(into, "slurm", db_row_json(s, keys));
                return 1;
        }
        return rc == SQLITE_DONE ? 0 : db_errno(db, rc);
}

