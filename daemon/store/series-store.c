/* SPDX-License-Identifier: MIT */
/* A configuration's stored L4 results in source-commit order, for the change points of mxmatrix history. */
#include "series-store.h"

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

/* "a=1,b=2" and separate words alike: every pin as one axis = value. */
static json_t *flat_pins(json_t *pins)
{
        json_t *out = json_object(), *v;
        const char *k;

        json_object_foreach (pins, k, v) {
                _cleanup_free_ char *w = xasprintf("%s=%s", k, strempty(json_string_value(v)));
                char *save = NULL;

                for (char *t = strtok_r(w, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        char *eq = strchr(t, '=');

                        if (eq) {
                                *eq = '\0';
                                json_object_set_new(out, t, json_string(eq + 1));
                        }
                }
        }
        return out;
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

static bool config_holds(json_t *config, json_t *pins)
{
        const char *k;
        json_t *v;

        json_object_foreach (pins, k, v)
                if (!streq_ptr(json_string_value(json_object_get(config, k)), json_string_value(v)))
                        return false;
        return true;
}

int series_store_config(struct mx_db *db, const char *word, json_t *pins, char **ret_key, char **reterr)
{
        static const char sql[] = "SELECT config_key, config, config_hash FROM runs GROUP BY config_hash, "
                                  "config_key";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *want = flat_pins(pins);
        _cleanup_free_ char *found = NULL, *exact = pins_key(want);
        struct mx_buf names = MX_BUF_INIT;
        size_t n = 0;
        int r, rc;

        if (word && word[0] == 'r' && word[1] >= '0' && word[1] <= '9') {
                char *end = NULL;
                long long run;

                errno = 0;
                run = strtoll(word + 1, &end, 10);
                if (errno != 0 || *end) /* "r12abc" is no run, not run 12 */
                        return mx_reterr(reterr, -EINVAL, "'%s' is not a run (rN)", word);
                return config_by_run(db, run, ret_key);
        }
        r = db_stmt(db, sql, &s);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                const char *key = (const char *)sqlite3_column_text(s, 0);
                _cleanup_json_ json_t *config = db_column_json(s, 1);
                bool match = word ? streq_ptr(word, (const char *)sqlite3_column_text(s, 2)) ||
                                            streq_ptr(word, key)
                                  : config_holds(config, want);

                if (!word && streq_ptr(key, exact)) {
                        /* every axis named: that configuration, whatever else holds these values */
                        mx_buf_free(&names);
                        *ret_key = xstrdup(key);
                        return 0;
                }
                if (!match)
                        continue;
                if (n++ < 5)
                        mx_buf_printf(&names, "%s%s", n > 1 ? "; " : "", key);
                if (!found)
                        found = xstrdup(key);
        }
        if (rc != SQLITE_DONE) {
                mx_buf_free(&names);
                return db_errno(db, rc);
        }
        if (n > 1) {
                *reterr = xasprintf("%zu stored configurations match: %s%s; pin more axes", n,
                                    names.len ? names.data : "", n > 5 ? "; ..." : "");
                mx_buf_free(&names);
                return -EEXIST;
        }
        mx_buf_free(&names);
        if (n == 0)
                return -ENOENT;
        *ret_key = TAKE_PTR(found);
        return 0;
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

int series_store_points(struct mx_db *db, const char *config_key, const char *source, json_t **ret_points,
                         char **ret_source, char **reterr)
{
        /* The newest SERIES_POINTS_MAX, read back oldest first. */
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
                db_bind_int64(s, 3, SERIES_POINTS_MAX);
                while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                        json_array_append_new(points, db_row_json(s, keys));
                if (rc != SQLITE_DONE)
                        return db_errno(db, rc);
        }
        *ret_points = commit_order(points);
        *ret_source = TAKE_PTR(src);
        return 0;
}
