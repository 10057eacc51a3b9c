/* SPDX-License-Identifier: MIT */
/* Reads what attribute and report analyse of a job: attempts, confirmation chain, strategy, pages. */
#include "evidence.h"

int evidence_attempts(struct mx_db *db, int64_t job, int (*cb)(const struct evidence_attempt *a, void *ud),
                      void *ud)
{
        /*
         * Every attempt of every run, in plan order; the levels of each attempt as a JSON array. A fail-fast
         * run's cheap pass that passed (migration 011) is left out: its second pass decides, and the two
         * together are not a flaky run.
         */
        static const char sql[] =
                "SELECT r.id, r.config, a.outcome, a.crash_class, "
                "(SELECT json_group_array(json_object('level', l.level, 'verdict', l.verdict)) "
                " FROM levels l WHERE l.attempt_id = a.id) "
                "FROM runs r LEFT JOIN attempts a ON a.run_id = r.id "
                "AND NOT (coalesce(a.pass, 0) = 1 AND a.result IN ('pass', 'xpass')) "
                "WHERE r.job_id = ? ORDER BY r.seq, a.n";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                _cleanup_json_ json_t *config = db_column_json(s, 1), *levels = db_column_json(s, 4);
                struct evidence_attempt a = {
                        .run = sqlite3_column_int64(s, 0),
                        .config = config,
                        .outcome = (const char *)sqlite3_column_text(s, 2),
                        .crash_class = (const char *)sqlite3_column_text(s, 3),
                        .levels = levels,
                };

                r = cb(&a, ud);
                if (r < 0)
                        return r;
        }
        return rc == SQLITE_DONE ? 0 : db_errno(db, rc);
}

int evidence_confirmed_job(struct mx_db *db, int64_t job, int64_t *ret)
{
        static const char sql[] = "SELECT request FROM jobs WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *request = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(job));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        request = db_column_json(s, 0);
        *ret = json_integer_value(json_object_get(request, "confirm"));
        return 0;
}

int evidence_job_strategy(struct mx_db *db, int64_t job, char **ret)
{
        static const char sql[] = "SELECT strategy FROM jobs WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(job));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret = db_column_strdup(s, 0);
        return 0;
}

int evidence_job_digest(struct mx_db *db, int64_t job, char **ret)
{
        static const char sql[] = "SELECT matrix_digest FROM jobs WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(job));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret = xstrdup((const char *)sqlite3_column_text(s, 0));
        return 0;
}

int evidence_run_page(struct mx_db *db, int64_t job, int64_t after_seq, int n, int64_t *ids, int64_t *seqs,
                      int *ret_n, bool *ret_more)
{
        static const char sql[] =
                "SELECT id, seq FROM runs WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s), rc, k = 0;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        db_bind_int64(s, 2, after_seq);
        db_bind_int64(s, 3, n + 1);
        *ret_more = false;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                if (k == n) {
                        *ret_more = true;
                        break;
                }
                ids[k] = sqlite3_column_int64(s, 0);
                seqs[k] = sqlite3_column_int64(s, 1);
                k++;
        }
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret_n = k;
        return 0;
}
