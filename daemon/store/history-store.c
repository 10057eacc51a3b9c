/* SPDX-License-Identifier: MIT */
/* Reads the stored results that comparing levels (L5, --skip-measured) look back on. */
#include "history-store.h"
#include "ident.h"

#include <inttypes.h>

/* A source's identity in comparisons: its SHA, "+dirty" when the tree had changes, null when unknown. */
#define SOURCES_SQL                                                                                         \
        "(SELECT json_group_object(name, CASE WHEN sha IS NULL THEN NULL WHEN dirty THEN sha || '+dirty' "  \
        "ELSE sha END) FROM attempt_sources s WHERE s.attempt_id = a.id)"
#define GPU_SQL                                                                                             \
        "(SELECT json_extract(record, '$.summary.gpu_name') FROM attempt_metadata m WHERE m.attempt_id = "  \
        "a.id)"
#define BASELINE_SQL(col)                                                                                   \
        "(SELECT b." col                                                                                    \
        " FROM runs b WHERE b.job_id = r.job_id AND EXISTS (SELECT 1 FROM json_each(b.reasons) "            \
        "WHERE value = 'baseline') ORDER BY b.seq LIMIT 1)"

int history_store_self(struct mx_db *db, int64_t attempt, json_t **ret, char **reterr)
{
        static const char sql[] = "SELECT r.job_id, r.id, a.id, r.config_key, " BASELINE_SQL(
                "config_key") ", " BASELINE_SQL("id") ", " SOURCES_SQL ", " GPU_SQL
                                                      " FROM attempts a JOIN runs r ON r.id = a.run_id "
                                                      "WHERE a.id = ?";
        static const char *const keys[] = {"job",          "run",          "attempt",
                                           "config_key",   "baseline_key", "baseline_run",
                                           "json:sources", "gpu_name",     NULL};
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(attempt));

        if (r == 0)
                return mx_reterr(reterr, -ENOENT, "history: attempt %" PRId64 " is not stored", attempt);
        if (r < 0)
                return mx_reterr(reterr, r, "history: %s", db_errmsg(db));
        *ret = db_row_json(s, keys);
        return 0;
}

int history_store_results(struct mx_db *db, int64_t attempt, const char *level, const char *config_key,
                          size_t limit, json_t **ret, char **reterr)
{
        static const char sql[] =
                "SELECT r.job_id, r.id, a.id, l.finished_at, l.verdict, l.metrics, " SOURCES_SQL ", " GPU_SQL
                ", a.confirm_of FROM runs r JOIN attempts a ON a.run_id = r.id "
                "JOIN levels l ON l.attempt_id = a.id "
                "WHERE r.config_hash = ? AND r.config_key = ? AND l.level = ? AND a.id != ? "
                "ORDER BY l.finished_at DESC, a.id DESC LIMIT ?";
        static const char *const keys[] = {
                "job",          "run",          "attempt",  "finished_at", "verdict",
                "json:metrics", "json:sources", "gpu_name", "confirm_of",  NULL};
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *a = json_array();
        char hash[MX_IDENT_HASH_LEN + 1];
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return mx_reterr(reterr, r, "history: %s", db_errmsg(db));
        db_bind_text(s, 1, mx_ident_hash_format(mx_ident_hash(config_key), hash));
        db_bind_text(s, 2, config_key);
        db_bind_text(s, 3, level);
        db_bind_int64(s, 4, attempt);
        db_bind_int64(s, 5, (int64_t)limit);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                json_array_append_new(a, db_row_json(s, keys));
        if (rc != SQLITE_DONE)
                return mx_reterr(reterr, db_errno(db, rc), "history: %s", db_errmsg(db));
        *ret = TAKE_PTR(a);
        return 0;
}

json_t *history_store_last_gpu(struct mx_db *db)
{
        static const char sql[] = "SELECT json_extract(record, '$.summary.gpu_name') FROM attempt_metadata "
                                  "ORDER BY collected_at DESC LIMIT 1";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;

        if (db_one_row(db, sql, &s) <= 0 || sqlite3_column_type(s, 0) != SQLITE_TEXT)
                return NULL;
        return json_string((const char *)sqlite3_column_text(s, 0));
}
