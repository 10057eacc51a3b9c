/* SPDX-License-Identifier: MIT */
/*
 * The SQLite database: open with the settings that make it safe to kill -9 at
 * any instant (WAL, synchronous=FULL, foreign keys), apply the embedded
 * migrations from schema/migrations in order (tracked by PRAGMA user_version),
 * and small helpers for statements and transactions. Non-logging.
 */
#pragma once

#include "util.h"

#include <jansson.h>
#include <sqlite3.h>

struct mx_db {
        sqlite3 *sql;
        char *path;
        int version; /* user_version after migration */
        /* Prepared statements, keyed by the address of their SQL literal. */
        struct {
                const char *key;
                sqlite3_stmt *stmt;
        } cache[128];
        size_t n_cache;
};

/* Open (creating) the database at path and migrate it. -errno with *reterr. */
int db_open(const char *path, struct mx_db **ret, char **reterr);
struct mx_db *db_close(struct mx_db *db);
DEFINE_POINTER_CLEANUP(struct mx_db, db_close)

/* The number of migrations this binary knows (the newest user_version). */
int db_schema_version(void);

/* Map the last SQLite error of db to a negative errno. */
int db_errno(struct mx_db *db, int rc);
const char *db_errmsg(struct mx_db *db);

/*
 * The key of a stored snapshot: FNV-1a 64 of the text in 16 hex digits. SQL
 * gets it as mx_hash(text). A lookup key only: the text itself decides a match.
 */
#define DB_HASH_LEN 16
char *db_hash(const char *text, size_t n, char ret[static DB_HASH_LEN + 1]);

/* Run SQL without results (several statements allowed). */
int db_exec(struct mx_db *db, const char *sql);

/*
 * A cached prepared statement for a SQL string literal, reset and unbound.
 * Use with _cleanup_(db_stmt_resetp) so it is reset after use.
 */
int db_stmt(struct mx_db *db, const char *sql, sqlite3_stmt **ret);
static inline void db_stmt_resetp(sqlite3_stmt **s)
{
        if (*s) {
                sqlite3_reset(*s);
                sqlite3_clear_bindings(*s);
        }
}
#define _cleanup_stmt_ _cleanup_(db_stmt_resetp)

/* Transactions. BEGIN IMMEDIATE, so a writer never fails half-way with SQLITE_BUSY. */
int db_begin(struct mx_db *db);
int db_commit(struct mx_db *db);
void db_rollback(struct mx_db *db);

/* Step a statement expecting no row (SQLITE_DONE). */
int db_step_done(struct mx_db *db, sqlite3_stmt *s);

/*
 * A parameter of db_one_row(), db_update() and db_insert(), bound in order:
 * DB_INT(v), DB_TEXT(s) and DB_JSON(j) (NULL binds SQL NULL, JSON as compact
 * text), DB_INT_OR_NULL(v, null) (SQL NULL when null is true).
 */
struct db_arg {
        enum { DB_ARG_INT, DB_ARG_TEXT, DB_ARG_JSON, DB_ARG_NULL } kind;
        union {
                int64_t i;
                const char *t;
                json_t *j;
        };
};
#define DB_INT(v) ((struct db_arg){.kind = DB_ARG_INT, .i = (v)})
#define DB_TEXT(v) ((struct db_arg){.kind = DB_ARG_TEXT, .t = (v)})
#define DB_JSON(v) ((struct db_arg){.kind = DB_ARG_JSON, .j = (v)})
#define DB_INT_OR_NULL(v, null) ((struct db_arg){.kind = (null) ? DB_ARG_NULL : DB_ARG_INT, .i = (v)})
#define DB_ARGS(...)                                                                                        \
        (const struct db_arg[]){__VA_ARGS__},                                                               \
                sizeof((const struct db_arg[]){__VA_ARGS__}) / sizeof(struct db_arg)

/*
 * The single-row statement: the cached statement for sql with the parameters
 * bound, stepped once. 1 with *ret on the row (read its columns; declare
 * *ret _cleanup_stmt_), 0 when there is no row, or the SQLite error as -errno.
 * db_one_row(db, sql, &s, DB_INT(id)).
 */
int db_one_row_args(struct mx_db *db, const char *sql, sqlite3_stmt **ret, const struct db_arg *args,
                    size_t n);
#define db_one_row(db, sql, ret, ...) db_one_row_args(db, sql, ret, DB_ARGS(__VA_ARGS__))
/* The first column of a one-row statement as an integer: 0 with *ret, -ENOENT without a row, or -errno. */
int db_one_int_args(struct mx_db *db, const char *sql, int64_t *ret, const struct db_arg *args, size_t n);
#define db_one_int(db, sql, ret, ...) db_one_int_args(db, sql, ret, DB_ARGS(__VA_ARGS__))
/* A statement run for its effect (no row wanted): 0, or the SQLite error as -errno. */
int db_update_args(struct mx_db *db, const char *sql, const struct db_arg *args, size_t n);
#define db_update(db, sql, ...) db_update_args(db, sql, DB_ARGS(__VA_ARGS__))
/* An INSERT: 0 with the new row's id in *ret_id, or -errno. */
int db_insert_args(struct mx_db *db, const char *sql, int64_t *ret_id, const struct db_arg *args, size_t n);
#define db_insert(db, sql, ret_id, ...) db_insert_args(db, sql, ret_id, DB_ARGS(__VA_ARGS__))
/* Rows the last INSERT, UPDATE or DELETE changed. */
int64_t db_changes(struct mx_db *db);

/* Bind helpers: NULL pointers bind SQL NULL; JSON is stored as compact text. */
void db_bind_text(sqlite3_stmt *s, int i, const char *v);
void db_bind_json(sqlite3_stmt *s, int i, json_t *v);
void db_bind_int64(sqlite3_stmt *s, int i, int64_t v);
void db_bind_int64_or_null(sqlite3_stmt *s, int i, int64_t v, bool null);
/* Column helpers: a copy (NULL for SQL NULL), or parsed JSON (NULL for SQL NULL). */
char *db_column_strdup(sqlite3_stmt *s, int i);
json_t *db_column_json(sqlite3_stmt *s, int i);
/*
 * The current row as an object: column i under keys[i] (NULL-terminated),
 * integers as integers, text as strings, SQL NULL as null; a key written
 * "json:NAME" decodes the column's text as JSON under NAME.
 */
json_t *db_row_json(sqlite3_stmt *s, const char *const *keys);
/* Add column i to obj under key: integer, text or JSON; SQL NULL becomes JSON null. */
void db_json_set_int(json_t *obj, const char *key, sqlite3_stmt *s, int i);
void db_json_set_text(json_t *obj, const char *key, sqlite3_stmt *s, int i);
void db_json_set_json(json_t *obj, const char *key, sqlite3_stmt *s, int i);
