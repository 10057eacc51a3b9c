/* SPDX-License-Identifier: MIT */
#include "history.h"
#include "ident.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

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

static int self_cb(void *ud, json_t **ret, char **reterr)
{
        static const char sql[] = "SELECT r.job_id, r.id, a.id, r.config_key, " BASELINE_SQL(
                "config_key") ", " BASELINE_SQL("id") ", " SOURCES_SQL ", " GPU_SQL
                                                      " FROM attempts a JOIN runs r ON r.id = a.run_id "
                                                      "WHERE a.id = ?";
        static const char *const keys[] = {"job",          "run",          "attempt",
                                           "config_key",   "baseline_key", "baseline_run",
                                           "json:sources", "gpu_name",     NULL};
        struct mx_history_db *h = ud;
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(h->db, sql, &s), rc;

        if (r < 0)
                return mx_reterr(reterr, r, "history: %s", db_errmsg(h->db));
        db_bind_int64(s, 1, h->attempt);
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
                return mx_reterr(reterr, -ENOENT, "history: attempt %" PRId64 " is not stored", h->attempt);
        if (rc != SQLITE_ROW)
                return mx_reterr(reterr, db_errno(h->db, rc), "history: %s", db_errmsg(h->db));
        *ret = db_row_json(s, keys);
        return 0;
}

static int results_cb(void *ud, const char *level, const char *config_key, size_t limit, json_t **ret,
                      char **reterr)
{
        static const char sql[] =
                "SELECT r.job_id, r.id, a.id, l.finished_at, l.verdict, l.metrics, " SOURCES_SQL ", " GPU_SQL
                ", a.confirm_of FROM runs r JOIN attempts a ON a.run_id = r.id "
                "JOIN levels l ON l.attempt_id = a.id "
                "WHERE r.config_hash = ? AND r.config_key = ? AND l.level = ? AND a.id != ? "
                "ORDER BY l.finished_at DESC, a.id DESC LIMIT ?";
        static const char *const keys[] = {"job",          "run",      "attempt",    "finished_at",
                                           "verdict",      "json:metrics", "json:sources", "gpu_name",
                                           "confirm_of",   NULL};
        struct mx_history_db *h = ud;
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *a = json_array();
        char hash[MX_IDENT_HASH_LEN + 1];
        int r = db_stmt(h->db, sql, &s), rc;

        if (r < 0)
                return mx_reterr(reterr, r, "history: %s", db_errmsg(h->db));
        db_bind_text(s, 1, mx_ident_hash_format(mx_ident_hash(config_key), hash));
        db_bind_text(s, 2, config_key);
        db_bind_text(s, 3, level);
        db_bind_int64(s, 4, h->attempt);
        db_bind_int64(s, 5, (int64_t)MX_MIN(limit, (size_t)MX_HISTORY_LIMIT_MAX));
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                json_array_append_new(a, db_row_json(s, keys));
        if (rc != SQLITE_DONE)
                return mx_reterr(reterr, db_errno(h->db, rc), "history: %s", db_errmsg(h->db));
        *ret = TAKE_PTR(a);
        return 0;
}

void mx_history_db_init(struct mx_history_db *h, struct mx_db *db, int64_t attempt)
{
        *h = (struct mx_history_db){
                .ops = {.self = self_cb, .results = results_cb, .ud = h},
                .db = db,
                .attempt = attempt,
        };
}

int mx_history_measured(struct mx_db *db, const char *config_key, json_t *sources, json_t *gpu, json_t **ret)
{
        struct mx_history_db h;
        _cleanup_json_ json_t *all = NULL;
        json_t *res;
        size_t i;
        int r;

        mx_history_db_init(&h, db, 0);
        r = results_cb(&h, "L4", config_key, MX_HISTORY_LIMIT_MAX, &all, NULL);
        if (r < 0)
                return r;
        json_array_foreach (all, i, res) {
                if (!streq_ptr(json_string_value(json_object_get(res, "verdict")), "pass") ||
                    json_is_false(json_object_get(json_object_get(res, "metrics"), "valid")) ||
                    !json_equal(json_object_get(res, "sources"), sources) ||
                    !json_equal(json_object_get(res, "gpu_name") ?: json_null(), gpu ?: json_null()))
                        continue;
                *ret = json_pack("{s:O,s:O,s:O}", "job", json_object_get(res, "job"), "run",
                                 json_object_get(res, "run"), "attempt", json_object_get(res, "attempt"));
                return 0;
        }
        return -ENOENT;
}

json_t *mx_history_last_gpu(struct mx_db *db)
{
        static const char sql[] = "SELECT json_extract(record, '$.summary.gpu_name') FROM attempt_metadata "
                                  "ORDER BY collected_at DESC LIMIT 1";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;

        if (db_stmt(db, sql, &s) < 0 || sqlite3_step(s) != SQLITE_ROW ||
            sqlite3_column_type(s, 0) != SQLITE_TEXT)
                return NULL;
        return json_string((const char *)sqlite3_column_text(s, 0));
}

/* The first line of a file, without its newline; NULL when it cannot be read. */
static char *first_line(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char buf[512];

        if (!f || !fgets(buf, sizeof(buf), f))
                return NULL;
        buf[strcspn(buf, "\r\n")] = 0;
        return xstrdup(buf);
}

static bool is_sha(const char *s)
{
        size_t n = 0;

        for (; s[n]; n++)
                if (!isxdigit((unsigned char)s[n]))
                        return false;
        return n == 40 || n == 64;
}

/* A ref in packed-refs ("<sha> refs/heads/main"). */
static char *packed_ref(const char *gitdir, const char *ref)
{
        _cleanup_free_ char *path = xasprintf("%s/packed-refs", gitdir);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[1024];

        while (f && fgets(line, sizeof(line), f)) {
                char *sp = strchr(line, ' ');

                line[strcspn(line, "\r\n")] = 0;
                if (!sp || line[0] == '#' || line[0] == '^')
                        continue;
                *sp = 0;
                if (streq(sp + 1, ref) && is_sha(line))
                        return xstrdup(line);
        }
        return NULL;
}

char *mx_git_head(const char *path)
{
        _cleanup_free_ char *dotgit = xasprintf("%s/.git", path), *gitdir = NULL, *head = NULL,
                            *common = NULL;
        _cleanup_free_ char *link = first_line(dotgit), *refpath = NULL, *sha = NULL;

        /* a worktree or submodule: ".git" is a file naming the git directory */
        if (link && startswith(link, "gitdir: "))
                gitdir = link[8] == '/' ? xstrdup(link + 8) : xasprintf("%s/%s", path, link + 8);
        else
                gitdir = TAKE_PTR(dotgit);
        head = xasprintf("%s/HEAD", gitdir);
        free(link);
        link = first_line(head);
        if (!link)
                return NULL;
        if (is_sha(link))
                return TAKE_PTR(link);
        if (!startswith(link, "ref: "))
                return NULL;
        /* a linked worktree keeps its branches in the common directory */
        refpath = xasprintf("%s/commondir", gitdir);
        common = first_line(refpath);
        if (common) {
                char *c = common[0] == '/' ? xstrdup(common) : xasprintf("%s/%s", gitdir, common);

                free(gitdir);
                gitdir = c;
        }
        free(refpath);
        refpath = xasprintf("%s/%s", gitdir, link + 5);
        sha = first_line(refpath);
        if (sha && is_sha(sha))
                return TAKE_PTR(sha);
        return packed_ref(gitdir, link + 5);
}
