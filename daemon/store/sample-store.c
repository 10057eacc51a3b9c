/* SPDX-License-Identifier: MIT */
/* Keeps the sampler's summaries of an attempt, one per scope, and reads them back for show. */
#include "sample-store.h"

int sample_store_summary(struct mx_db *db, int64_t attempt_id, const char *scope,
                         const struct mx_sample_summary *sum)
{
        static const char sql[] = "INSERT OR REPLACE INTO samples (attempt_id, scope, source, summary) "
                                  "VALUES (?, ?, ?, ?)";
        _cleanup_json_ json_t *j = NULL;

        if (!scope || !*scope || strlen(scope) > SAMPLE_STORE_SCOPE_MAX)
                return -EINVAL;
        j = mx_sample_summary_to_json(sum);
        return db_update(db, sql, DB_INT(attempt_id), DB_TEXT(scope),
                         DB_TEXT(strna(mx_sample_source_to_string(sum->source))), DB_JSON(j));
}

int sample_store_attempt_json(struct mx_db *db, int64_t attempt_id, json_t **ret)
{
        static const char sql[] = "SELECT scope, summary FROM samples WHERE attempt_id = ? ORDER BY scope";
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_json_ json_t *o = NULL;
        int r = db_stmt(db, sql, &st), rc;

        if (r < 0)
                return r;
        db_bind_int64(st, 1, attempt_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                json_t *v = db_column_json(st, 1);
                if (!o)
                        o = json_object();
                json_object_set_new(o, (const char *)sqlite3_column_text(st, 0), v ?: json_null());
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(o);
        return 0;
}
