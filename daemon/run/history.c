/* SPDX-License-Identifier: MIT */
/*
 * The levels' read-only view of stored results (L5's baseline and earlier commits, the GPU last seen),
 * over store/history-store.
 */
#include "history.h"
#include "history-store.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

static int self_cb(void *ud, json_t **ret, char **reterr)
{
        struct mx_history_db *h = ud;

        return history_store_self(h->db, h->attempt, ret, reterr);
}

static int results_cb(void *ud, const char *level, const char *config_key, size_t limit, json_t **ret,
                      char **reterr)
{
        struct mx_history_db *h = ud;

        return history_store_results(h->db, h->attempt, level, config_key,
                                     MX_MIN(limit, (size_t)MX_HISTORY_LIMIT_MAX), ret, reterr);
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
        return history_store_last_gpu(db);
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
