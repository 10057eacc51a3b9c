/* SPDX-License-Identifier: MIT */
/* A configuration's stored L4 results in source-commit order, for the change points of mxmatrix history. */
#include "series-store.h"
#include "plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int config_by_run(struct mx_db *db, int64_t run, char **ret_key)
{
        static const char sql[] = "SELECT config_key FROM runs WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, run);
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return db_errno(db, rc);
        *ret_key = db_column_strdup(s, 0);
        return 0;
}

static int str_cmp(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The configuration key pins would make (ident.h: axis=value sorted by axis, joined by ","). */
static char *pins_key(json_t *pins)
{
        _cleanup_free_ const char **k = xcalloc(json_object_size(pins) + 1, sizeof(char *));
        struct mx_buf b = MX_BUF_INIT;
        const char *name;
        json_t *v;
        size_t n = 0;

        json_object_foreach (pins, name, v)
                k[n++] = name;
        qsort(k, n, sizeof(*k), str_cmp);
        for (size_t i = 0; i < n; i++)
                mx_buf_printf(&b, "%s%s=%s", i ? "," : "", k[i], json_string_value(json_object_get(pins, k[i])));
        return mx_buf_steal(&b);
}

/*
 * Whether a stored key holds every pin: 1 yes, 0 no, -EBADMSG when a part of
 * it is not axis=value (no key ident.c writes; the caller reports it).
 */
static int key_holds(const char *key, json_t *want)
{
        _cleanup_free_ char *w = xstrdup(key);
        size_t held = 0;
        char *save = NULL;

        for (char *t = strtok_r(w, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(t, '=');
                const char *v;

                if (!eq || eq == t)
                        return -EBADMSG;
                *eq = '\0';
                v = json_string_value(json_object_get(want, t));
                if (v && !streq(v, eq + 1))
                        return 0;
                held += !!v;
        }
        return held == json_object_size(want);
}

/* Matches of one key, for the caller's message: the first 5 named. */
struct key_matches {
        size_t n;
        char *first;
        struct mx_buf names;
};

static void key_matches_add(struct key_matches *km, const char *key)
{
        if (km->n++ < 5)
                mx_buf_printf(&km->names, "%s%s", km->n > 1 ? "; " : "", key);
        if (!km->first)
                km->first = xstrdup(key);
}

/* The one match as *ret_key; -ENOENT none, -EEXIST several (*reterr lists them). */
static int key_matches_end(struct key_matches *km, const char *unreadable, char **ret_key, char **reterr)
{
        int r = 0;

        if (unreadable) {
                /* a stored key nothing here can read might be the one meant: never passed over in silence */
                *reterr = xasprintf("the stored configuration key '%s' is not axis=value pairs (unreadable): "
                                    "name the configuration by rRUN or its hash", unreadable);
                r = -EBADMSG;
        } else if (km->n > 1) {
                *reterr = xasprintf("%zu stored configurations match: %s%s; pin more axes", km->n,
                                    km->names.len ? km->names.data : "", km->n > 5 ? "; ..." : "");
                r = -EEXIST;
        } else if (km->n == 0)
                r = -ENOENT;
        else
                *ret_key = TAKE_PTR(km->first);
        free(km->first);
        mx_buf_free(&km->names);
        return r;
}

/* The distinct keys the indexed query (one text parameter) returns. */
static int keys_by(struct mx_db *db, const char *sql, const char *arg, struct key_matches *km)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_text(s, 1, arg);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                key_matches_add(km, (const char *)sqlite3_column_text(s, 0));
        return rc == SQLITE_DONE ? 0 : db_errno(db, rc);
}

/*
 * The stored configurations that hold every pin. One index seek per distinct
 * configuration (runs_config_key, migration 012), never a read of every run.
 */
static int keys_holding(struct mx_db *db, json_t *want, struct key_matches *km, char **ret_unreadable)
{
        static const char sql[] = "WITH RECURSIVE k(key) AS (SELECT MIN(config_key) FROM runs UNION ALL "
                                  "SELECT (SELECT MIN(config_key) FROM runs WHERE config_key > k.key) FROM k "
                                  "WHERE k.key IS NOT NULL) SELECT key FROM k WHERE key IS NOT NULL";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                const char *key = (const char *)sqlite3_column_text(s, 0);

                r = key_holds(key, want);
                if (r < 0 && !*ret_unreadable)
                        *ret_unreadable = xstrdup(key);
                if (r > 0)
                        key_matches_add(km, key);
        }
        return rc == SQLITE_DONE ? 0 : db_errno(db, rc);
}

int series_store_config(struct mx_db *db, const char *word, json_t *pins, char **ret_key, char **reterr)
{
        static const char by_word[] = "SELECT DISTINCT config_key FROM runs WHERE config_hash = ?1 OR "
                                      "config_key = ?1 LIMIT 6";
        static const char by_key[] = "SELECT config_key FROM runs WHERE config_key = ?1 LIMIT 1";
        _cleanup_json_ json_t *want = NULL;
        _cleanup_free_ char *exact = NULL, *unreadable = NULL;
        struct key_matches km = {.names = MX_BUF_INIT};
        int r;

        if (word && word[0] == 'r' && word[1] >= '0' && word[1] <= '9') {
                char *end = NULL;
                long long run;

                errno = 0;
                run = strtoll(word + 1, &end, 10);
                if (errno != 0 || *end) /* "r12abc" is no run, not run 12 */
                        return mx_reterr(reterr, -EINVAL, "'%s' is not a run (rN)", word);
                return config_by_run(db, run, ret_key);
        }
        if (word)
                r = keys_by(db, by_word, word, &km);
        else {
                r = mx_plan_split_pins(pins, &want, reterr);
                if (r < 0)
                        return r;
                /* every axis named: that configuration, whatever else holds these values */
                exact = pins_key(want);
                r = keys_by(db, by_key, exact, &km);
                if (r == 0 && km.n == 0)
                        r = keys_holding(db, want, &km, &unreadable);
        }
        if (r < 0) {
                free(km.first);
                mx_buf_free(&km.names);
                return r;
        }
        return key_matches_end(&km, km.n == 1 && !word && streq_ptr(km.first, exact) ? NULL : unreadable,
                               ret_key, reterr);
}

/* The source tree a history follows: the one asked for, else the configuration's only one. */
static int pick_source(struct mx_db *db, const char *config_key, const char *source, char **ret, char **reterr)
{
        static const char sql[] = "SELECT DISTINCT s.name FROM runs r JOIN attempts a ON a.run_id = r.id "
                                  "JOIN attempt_sources s ON s.attempt_id = a.id WHERE r.config_key = ? "
                                  "AND s.sha IS NOT NULL ORDER BY s.name";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        struct mx_buf names = MX_BUF_INIT;
        _cleanup_free_ char *only = NULL;
        size_t n = 0;
        int r, rc;

        if (source) {
                *ret = xstrdup(source);
                return 0;
        }
        r = db_stmt(db, sql, &s);
        if (r < 0)
                return r;
        db_bind_text(s, 1, config_key);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                mx_buf_printf(&names, "%s%s", n++ ? ", " : "", (const char *)sqlite3_column_text(s, 0));
                if (!only)
                        only = db_column_strdup(s, 0);
        }
        if (rc != SQLITE_DONE || n > 1) {
                if (n > 1)
                        *reterr = xasprintf("the configuration ran at commits of several source trees (%s): "
                                            "name one with --source", names.data);
                mx_buf_free(&names);
                return rc != SQLITE_DONE ? db_errno(db, rc) : -EEXIST;
        }
        mx_buf_free(&names);
        *ret = TAKE_PTR(only); /* NULL: no commit recorded at all */
        return 0;
}

struct commit_key {
        const char *sha;
        int64_t time;  /* the commit's time (s); the first measurement's place where any is unknown */
        size_t first;  /* its first measurement's place */
};

static int commit_key_cmp(const void *a, const void *b)
{
        const struct commit_key *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * Order the points by their commit's time (git log's %ct, recorded with the
 * metadata since issue 19; a commit's first measurement breaks ties), or by the
 * commit's first measurement where some commit's time is unknown. Stable
 * within a commit: its starts in the order they ran.
 */
static json_t *commit_order(json_t *points)
{
        _cleanup_free_ struct commit_key *k = xcalloc(json_array_size(points) + 1, sizeof(*k));
        _cleanup_json_ json_t *seen = json_object();
        json_t *out = json_array(), *p;
        bool timed = true;
        size_t n = 0, i, j;

        json_array_foreach (points, i, p) {
                const char *c = json_string_value(json_object_get(p, "commit"));
                json_t *t = json_object_get(p, "committed_at");

                if (json_object_get(seen, c))
                        continue;
                json_object_set_new(seen, c, json_true());
                timed &= json_is_integer(t);
                k[n++] = (struct commit_key){.sha = c, .time = json_integer_value(t), .first = i};
        }
        for (i = 0; i < n && !timed; i++)
                k[i].time = 0;
        qsort(k, n, sizeof(*k), commit_key_cmp);
        for (i = 0; i < n; i++)
                json_array_foreach (points, j, p)
                        if (streq_ptr(k[i].sha, json_string_value(json_object_get(p, "commit"))))
                                json_array_append(out, p);
        return out;
}

int series_store_points(struct mx_db *db, const char *config_key, const char *source, size_t max_points,
                        json_t **ret_points, char **ret_source, char **reterr)
{
        /* The newest max_points (runs_config_key finds the configuration's runs), read back oldest first. */
        static const char sql[] =
                "SELECT * FROM (SELECT s.sha, r.id, a.n, a.started_at, l.metrics, "
                "json_extract(m.record, '$.sources.\"' || ?2 || '\".committed_at') FROM runs r "
                "JOIN attempts a ON a.run_id = r.id JOIN levels l ON l.attempt_id = a.id AND l.level = 'L4' "
                "AND l.verdict IN ('pass', 'fail') AND l.metrics IS NOT NULL "
                "JOIN attempt_sources s ON s.attempt_id = a.id AND s.name = ?2 AND s.sha IS NOT NULL "
                "LEFT JOIN attempt_metadata m ON m.attempt_id = a.id "
                "WHERE r.config_key = ?1 ORDER BY a.started_at DESC, a.id DESC LIMIT ?3) "
                "ORDER BY 4";
        static const char *const keys[] = {"commit", "run", "attempt", "started_at", "json:l4", "committed_at",
                                           NULL};
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *points = json_array();
        _cleanup_free_ char *src = NULL;
        int r, rc;

        r = pick_source(db, config_key, source, &src, reterr);
        if (r < 0)
                return r;
        if (src) {
                r = db_stmt(db, sql, &s);
                if (r < 0)
                        return r;
                db_bind_text(s, 1, config_key);
                db_bind_text(s, 2, src);
                db_bind_int64(s, 3, (int64_t)MX_MIN(max_points, (size_t)SERIES_POINTS_MAX));
                while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                        json_array_append_new(points, db_row_json(s, keys));
                if (rc != SQLITE_DONE)
                        return db_errno(db, rc);
        }
        *ret_points = commit_order(points);
        *ret_source = TAKE_PTR(src);
        return 0;
}
