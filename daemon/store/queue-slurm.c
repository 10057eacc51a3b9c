/* SPDX-License-Identifier: MIT */
/*
 * The attempts' Slurm columns (migration 009): what the Slurm executor records
 * of its jobs, and what the read side and recovery need of them; apart from
 * executor-slurm.c so that queue.c and programs that link the runner
 * (mxmatrix-run) do not pull the executor in. Non-logging.
 */
#include "queue-slurm.h"

int slurm_attempt_has_job(struct mx_db *db, int64_t attempt)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, "SELECT slurm_job_name IS NOT NULL FROM attempts WHERE id = ?", &s,
                           DB_INT(attempt));

        return r > 0 ? sqlite3_column_int(s, 0) : r;
}

int slurm_attempt_json(struct mx_db *db, int64_t attempt, json_t *into)
{
        static const char *const keys[] = {"job_name", "job_id", "node", "state", NULL};
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db,
                           "SELECT slurm_job_name, slurm_job_id, slurm_node, slurm_state FROM attempts "
                           "WHERE id = ? AND slurm_job_name IS NOT NULL",
                           &s, DB_INT(attempt));

        if (r > 0)
                json_object_set_new(into, "slurm", db_row_json(s, keys));
        return r;
}

int slurm_attempt_set_job_name(struct mx_db *db, int64_t attempt, const char *name)
{
        return db_update(db, "UPDATE attempts SET slurm_job_name = ? WHERE id = ?", DB_TEXT(name),
                         DB_INT(attempt));
}

int slurm_attempt_set_job_id(struct mx_db *db, int64_t attempt, int64_t id)
{
        return db_update(db, "UPDATE attempts SET slurm_job_id = ? WHERE id = ?", DB_INT(id),
                         DB_INT(attempt));
}

int slurm_attempt_set_node(struct mx_db *db, int64_t attempt, const char *node)
{
        return db_update(db, "UPDATE attempts SET slurm_node = ? WHERE id = ?", DB_TEXT(node),
                         DB_INT(attempt));
}

int slurm_attempt_set_state(struct mx_db *db, int64_t attempt, const char *state)
{
        return db_update(db, "UPDATE attempts SET slurm_state = ? WHERE id = ?", DB_TEXT(state),
                         DB_INT(attempt));
}

int slurm_run_lost_count(struct mx_db *db, int64_t run)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db,
                           "SELECT count(*) FROM attempts WHERE run_id = ? AND slurm_state IN "
                           "('NODE_FAIL','PREEMPTED','BOOT_FAIL')",
                           &s, DB_INT(run));

        return r > 0 ? sqlite3_column_int(s, 0) : 0;
}

int slurm_open_attempts(struct mx_db *db, struct slurm_open_attempt **ret, size_t *ret_n)
{
        static const char sql[] =
                "SELECT a.id, a.n, a.run_id, r.job_id, r.config_key, a.slurm_job_name, a.slurm_job_id, "
                "a.slurm_node, r.state = 'cancelled' OR r.result = 'cancelled' FROM attempts a JOIN runs r "
                "ON "
                "r.id = a.run_id WHERE a.finished_at IS NULL AND a.slurm_job_name IS NOT NULL";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        struct slurm_open_attempt *v = NULL;
        size_t n = 0, cap = 0;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                MX_GROW(v, cap, n + 1);
                v[n++] = (struct slurm_open_attempt){
                        .attempt_id = sqlite3_column_int64(s, 0),
                        .attempt = sqlite3_column_int(s, 1),
                        .run = sqlite3_column_int64(s, 2),
                        .job = sqlite3_column_int64(s, 3),
                        .config_key = db_column_strdup(s, 4),
                        .job_name = db_column_strdup(s, 5),
                        .job_id = sqlite3_column_int64(s, 6),
                        .node = db_column_strdup(s, 7),
                        .cancel_req = sqlite3_column_int(s, 8),
                };
        }
        if (rc != SQLITE_DONE) {
                slurm_open_attempts_free(v, n);
                return db_errno(db, rc);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

void slurm_open_attempts_free(struct slurm_open_attempt *a, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(a[i].config_key);
                free(a[i].job_name);
                free(a[i].node);
        }
        free(a);
}
