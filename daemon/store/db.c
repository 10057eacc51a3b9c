/* SPDX-License-Identifier: MIT */
/*
 * SQLite: open, migrate, prepared statements, transactions and the single-row helpers every store file
 * uses.
 */
#include "db.h"
#include "embedded.h"

#include <inttypes.h>
#include <strings.h>

extern const struct mx_embedded mx_migrations[];

int db_schema_version(void)
{
        int n = 0;

        while (mx_migrations[n].name)
                n++;
        return n;
}

int db_errno(struct mx_db *db, int rc)
{
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_DONE:
        case SQLITE_ROW:
                return 0;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_CANTOPEN:
                return -ENOENT;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EBADMSG;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_TOOBIG:
                return -E2BIG;
        default:
                return -EIO;
        }
}

const char *db_errmsg(struct mx_db *db)
{
        return sqlite3_errmsg(db->sql);
}

int db_exec(struct mx_db *db, const char *sql)
{
        int rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);

        return rc == SQLITE_OK ? 0 : db_errno(db, rc);
}

int db_stmt(struct mx_db *db, const char *sql, sqlite3_stmt **ret)
{
        sqlite3_stmt *s;
        int rc;

        for (size_t i = 0; i < db->n_cache; i++)
                if (db->cache[i].key == sql) {
                        sqlite3_reset(db->cache[i].stmt);
                        sqlite3_clear_bindings(db->cache[i].stmt);
                        *ret = db->cache[i].stmt;
                        return 0;
                }
        rc = sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);
        if (rc != SQLITE_OK)
                return db_errno(db, rc);
        if (db->n_cache >= ELEMENTSOF(db->cache))
                mx_die("statement cache full: raise its size in db.h");
        db->cache[db->n_cache].key = sql;
        db->cache[db->n_cache].stmt = s;
        db->n_cache++;
        *ret = s;
        return 0;
}

int db_begin(struct mx_db *db)
{
        return db_exec(db, "BEGIN IMMEDIATE");
}

int db_commit(struct mx_db *db)
{
        return db_exec(db, "COMMIT");
}

void db_rollback(struct mx_db *db)
{
        if (!sqlite3_get_autocommit(db->sql))
                (void)db_exec(db, "ROLLBACK");
}

int db_step_done(struct mx_db *db, sqlite3_stmt *s)
{
        int rc = sqlite3_step(s);

        if (rc == SQLITE_DONE || rc == SQLITE_ROW)
                return 0;
        return db_errno(db, rc);
}

static void db_bind_args(sqlite3_stmt *s, const struct db_arg *args, size_t n)
{
        for (size_t k = 0; k < n; k++)
                switch (args[k].kind) {
                case DB_ARG_INT:
                        db_bind_int64(s, (int)k + 1, args[k].i);
                        break;
                case DB_ARG_TEXT:
                        db_bind_text(s, (int)k + 1, args[k].t);
                        break;
                case DB_ARG_JSON:
                        db_bind_json(s, (int)k + 1, args[k].j);
                        break;
                case DB_ARG_NULL:
                        sqlite3_bind_null(s, (int)k + 1);
                        break;
                }
}

int db_one_row_args(struct mx_db *db, const char *sql, sqlite3_stmt **ret, const struct db_arg *args,
                    size_t n)
{
        int r = db_stmt(db, sql, ret), rc;

        if (r < 0)
                return r;
        db_bind_args(*ret, args, n);
        rc = sqlite3_step(*ret);
        if (rc == SQLITE_ROW)
                return 1;
        return rc == SQLITE_DONE ? 0 : db_errno(db, rc);
}

int db_one_int_args(struct mx_db *db, const char *sql, int64_t *ret, const struct db_arg *args, size_t n)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row_args(db, sql, &s, args, n);

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret = sqlite3_column_int64(s, 0);
        return 0;
}

int db_update_args(struct mx_db *db, const char *sql, const struct db_arg *args, size_t n)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s);

        if (r < 0)
                return r;
        db_bind_args(s, args, n);
        return db_step_done(db, s);
}

int db_insert_args(struct mx_db *db, const char *sql, int64_t *ret_id, const struct db_arg *args, size_t n)
{
        int r = db_update_args(db, sql, args, n);

        if (r < 0)
                return r;
        *ret_id = sqlite3_last_insert_rowid(db->sql);
        return 0;
}

int64_t db_changes(struct mx_db *db)
{
        return sqlite3_changes(db->sql);
}

void db_bind_text(sqlite3_stmt *s, int i, const char *v)
{
        if (v)
                sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(s, i);
}

void db_bind_json(sqlite3_stmt *s, int i, json_t *v)
{
        char *t;

        if (!v) {
                sqlite3_bind_null(s, i);
                return;
        }
        t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!t)
                mx_die("out of memory encoding JSON");
        sqlite3_bind_text(s, i, t, -1, free);
}

void db_bind_int64(sqlite3_stmt *s, int i, int64_t v)
{
        sqlite3_bind_int64(s, i, v);
}

void db_bind_int64_or_null(sqlite3_stmt *s, int i, int64_t v, bool null)
{
        if (null)
                sqlite3_bind_null(s, i);
        else
                sqlite3_bind_int64(s, i, v);
}

char *db_column_strdup(sqlite3_stmt *s, int i)
{
        const unsigned char *t = sqlite3_column_text(s, i);

        return t ? xstrdup((const char *)t) : NULL;
}

json_t *db_column_json(sqlite3_stmt *s, int i)
{
        const char *t = (const char *)sqlite3_column_text(s, i);

        return t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
}

void db_json_set_int(json_t *obj, const char *key, sqlite3_stmt *s, int i)
{
        json_object_set_new(obj, key,
                            sqlite3_column_type(s, i) == SQLITE_NULL ? json_null()
                                                                     : json_integer(sqlite3_column_int64(s, i)));
}

void db_json_set_text(json_t *obj, const char *key, sqlite3_stmt *s, int i)
{
        const char *t = (const char *)sqlite3_column_text(s, i);

        json_object_set_new(obj, key, t ? json_string(t) : json_null());
}

void db_json_set_json(json_t *obj, const char *key, sqlite3_stmt *s, int i)
{
        json_t *v = db_column_json(s, i);

        json_object_set_new(obj, key, v ? v : json_null());
}

json_t *db_row_json(sqlite3_stmt *s, const char *const *keys)
{
        json_t *o = json_object();

        for (int i = 0; keys[i]; i++) {
                if (startswith(keys[i], "json:"))
                        db_json_set_json(o, keys[i] + 5, s, i);
                else if (sqlite3_column_type(s, i) == SQLITE_INTEGER)
                        db_json_set_int(o, keys[i], s, i);
                else
                        db_json_set_text(o, keys[i], s, i);
        }
        return o;
}

static int db_get_version(struct mx_db *db, int *ret)
{
        sqlite3_stmt *s;
        int rc = sqlite3_prepare_v2(db->sql, "PRAGMA user_version", -1, &s, NULL);

        if (rc != SQLITE_OK)
                return db_errno(db, rc);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int(s, 0);
        sqlite3_finalize(s);
        return rc == SQLITE_ROW ? 0 : db_errno(db, rc);
}

/* Apply migration k (1-based) and record it, atomically. */
static int db_apply(struct mx_db *db, int k, char **reterr)
{
        _cleanup_free_ char *set = xasprintf("PRAGMA user_version = %d", k);
        int r;

        r = db_begin(db);
        if (r >= 0)
                r = db_exec(db, mx_migrations[k - 1].data);
        if (r >= 0)
                r = db_exec(db, set);
        if (r >= 0)
                r = db_commit(db);
        if (r < 0) {
                *reterr = xasprintf("migration %s failed: %s", mx_migrations[k - 1].name, db_errmsg(db));
                db_rollback(db);
        }
        return r;
}

static int db_migrate(struct mx_db *db, char **reterr)
{
        int have = db_schema_version(), r;

        r = db_get_version(db, &db->version);
        if (r < 0) {
                *reterr = xasprintf("cannot read the schema version: %s", db_errmsg(db));
                return r;
        }
        if (db->version > have) {
                *reterr = xasprintf("the database has schema version %d but this mxmatrixd knows only %d; "
                                    "use a newer mxmatrixd",
                                    db->version, have);
                return -EPROTO;
        }
        for (int k = db->version + 1; k <= have; k++) {
                r = db_apply(db, k, reterr);
                if (r < 0)
                        return r;
                db->version = k;
        }
        return 0;
}

/* mx_hash(text): FNV-1a 64 of the UTF-8 text in 16 hex digits, as db_hash() computes it. */
static void db_hash_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
        const unsigned char *t = sqlite3_value_text(argv[0]);
        char hex[DB_HASH_LEN + 1];

        (void)argc;
        if (!t) {
                sqlite3_result_null(ctx);
                return;
        }
        db_hash((const char *)t, (size_t)sqlite3_value_bytes(argv[0]), hex);
        sqlite3_result_text(ctx, hex, DB_HASH_LEN, SQLITE_TRANSIENT);
}

char *db_hash(const char *text, size_t n, char ret[static DB_HASH_LEN + 1])
{
        snprintf(ret, DB_HASH_LEN + 1, "%016" PRIx64, mx_fnv1a64(text, n, MX_FNV1A64_INIT));
        return ret;
}

/* Settings that make every committed transaction survive kill -9 and power loss. */
static int db_configure(struct mx_db *db, char **reterr)
{
        sqlite3_stmt *s;
        const char *mode = NULL;
        int rc, r;

        sqlite3_busy_timeout(db->sql, 5000);
        /* Migrations use it (003 keys the snapshots it moves out of runs). */
        rc = sqlite3_create_function(db->sql, "mx_hash", 1,
                                     SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL, db_hash_fn,
                                     NULL, NULL);
        if (rc != SQLITE_OK) {
                *reterr = xasprintf("cannot register mx_hash(): %s", db_errmsg(db));
                return db_errno(db, rc);
        }
        rc = sqlite3_prepare_v2(db->sql, "PRAGMA journal_mode = WAL", -1, &s, NULL);
        if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
                mode = (const char *)sqlite3_column_text(s, 0);
        if (!mode || strcasecmp(mode, "wal") != 0) {
                *reterr = xasprintf("cannot switch to WAL mode (journal mode '%s'): %s", strna(mode),
                                    db_errmsg(db));
                sqlite3_finalize(s);
                return -EIO;
        }
        sqlite3_finalize(s);
        r = db_exec(db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA secure_delete = OFF;");
        if (r < 0)
                *reterr = xasprintf("cannot configure the database: %s", db_errmsg(db));
        return r;
}

int db_open(const char *path, struct mx_db **ret, char **reterr)
{
        _cleanup_(db_closep) struct mx_db *db = xcalloc(1, sizeof(*db));
        int rc, r;

        db->path = xstrdup(path);
        rc = sqlite3_open_v2(path, &db->sql,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                                     SQLITE_OPEN_EXRESCODE,
                             NULL);
        if (rc != SQLITE_OK) {
                /* SQLite says only "unable to open database file"; the system's errno says why. */
                int sys = db->sql ? sqlite3_system_errno(db->sql) : 0;

                *reterr = xasprintf("cannot open %s: %s%s%s%s", path,
                                    db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc),
                                    sys > 0 ? " (" : "", sys > 0 ? strerror(sys) : "", sys > 0 ? ")" : "");
                if (sys > 0)
                        return -sys;
                return db->sql ? db_errno(db, rc) : -ENOMEM;
        }
        r = db_configure(db, reterr);
        if (r < 0)
                return r;
        r = db_migrate(db, reterr);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(db);
        return 0;
}

struct mx_db *db_close(struct mx_db *db)
{
        if (!db)
                return NULL;
        for (size_t i = 0; i < db->n_cache; i++)
                sqlite3_finalize(db->cache[i].stmt);
        if (db->sql)
                sqlite3_close(db->sql);
        free(db->path);
        free(db);
        return NULL;
}
