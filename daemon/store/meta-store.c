/* SPDX-License-Identifier: MIT */
/*
 * Metadata records in the database (schema/migrations/005-metadata.sql): one
 * per attempt, blobs once per distinct content, the source trees' SHAs in a
 * table of their own for queries across runs. Non-logging.
 */
#include "meta-store.h"

/* The id of the blob holding exactly text, stored now if no such blob exists. */
static int blob_id(struct mx_db *db, const char *hash, const char *text, int64_t *ret)
{
        static const char find[] = "SELECT id FROM meta_blobs WHERE hash = ? AND content = ?";
        static const char add[] = "INSERT INTO meta_blobs (hash, bytes, content) VALUES (?, ?, ?)";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, find, &s, DB_TEXT(hash), DB_TEXT(text));

        if (r < 0)
                return r;
        if (r > 0) {
                *ret = sqlite3_column_int64(s, 0);
                return 0;
        }
        return db_insert(db, add, ret, DB_TEXT(hash), DB_INT((int64_t)strlen(text)), DB_TEXT(text));
}

static int store_sources(struct mx_db *db, int64_t attempt_id, json_t *sources)
{
        static const char sql[] = "INSERT OR REPLACE INTO attempt_sources (attempt_id, name, sha, dirty) "
                                  "VALUES (?, ?, ?, ?)";
        const char *k;
        json_t *v;

        json_object_foreach (sources, k, v) {
                json_t *dirty = json_object_get(v, "dirty");
                int r = db_update(db, sql, DB_INT(attempt_id), DB_TEXT(k),
                                  DB_TEXT(json_string_value(json_object_get(v, "sha"))),
                                  DB_INT_OR_NULL(json_is_true(dirty), !json_is_boolean(dirty)));

                if (r < 0)
                        return r;
        }
        return 0;
}

static int store_all(struct mx_db *db, int64_t attempt_id, json_t *record, json_t *blobs)
{
        static const char rec[] =
                "INSERT OR REPLACE INTO attempt_metadata (attempt_id, collected_at, record) "
                "VALUES (?, ?, ?)";
        static const char link[] = "INSERT OR IGNORE INTO attempt_blobs (attempt_id, blob_id) VALUES (?, ?)";
        const char *hash;
        json_t *text;
        int r;

        r = db_update(db, rec, DB_INT(attempt_id),
                      DB_INT(json_integer_value(json_object_get(record, "collected_at"))), DB_JSON(record));
        if (r < 0)
                return r;
        json_object_foreach (blobs, hash, text) {
                int64_t id = 0;

                if (!json_is_string(text))
                        continue;
                r = blob_id(db, hash, json_string_value(text), &id);
                if (r < 0)
                        return r;
                r = db_update(db, link, DB_INT(attempt_id), DB_INT(id));
                if (r < 0)
                        return r;
        }
        return store_sources(db, attempt_id, json_object_get(record, "sources"));
}

int meta_store(struct mx_db *db, int64_t attempt_id, json_t *record, json_t *blobs)
{
        int r = db_begin(db);

        if (r < 0)
                return r;
        r = store_all(db, attempt_id, record, blobs);
        if (r < 0) {
                db_rollback(db);
                return r;
        }
        return db_commit(db);
}

int meta_attempt_json(struct mx_db *db, int64_t attempt_id, json_t **ret)
{
        static const char sql[] = "SELECT record FROM attempt_metadata WHERE attempt_id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(attempt_id));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret = db_column_json(s, 0);
        return *ret ? 0 : -EBADMSG;
}

static int attempt_blobs(struct mx_db *db, int64_t attempt_id, json_t *into)
{
        static const char sql[] = "SELECT b.hash, b.content FROM attempt_blobs a JOIN meta_blobs b "
                                  "ON b.id = a.blob_id WHERE a.attempt_id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, attempt_id);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                db_json_set_text(into, (const char *)sqlite3_column_text(s, 0), s, 1);
        return rc == SQLITE_DONE ? 0 : db_errno(db, rc);
}

int meta_attach_run(struct mx_db *db, json_t *run)
{
        json_t *attempts = json_object_get(run, "attempt_history"), *a;
        _cleanup_json_ json_t *blobs = json_object();
        size_t i;
        int r;

        json_array_foreach (attempts, i, a) {
                json_int_t id = json_integer_value(json_object_get(a, "id"));
                json_t *rec = NULL;

                r = meta_attempt_json(db, id, &rec);
                if (r == -ENOENT) {
                        json_object_set_new(a, "metadata", json_null());
                        continue;
                }
                if (r < 0)
                        return r;
                json_object_set_new(a, "metadata", rec);
                r = attempt_blobs(db, id, blobs);
                if (r < 0)
                        return r;
        }
        json_object_set(run, "metadata_blobs", blobs);
        return 0;
}
