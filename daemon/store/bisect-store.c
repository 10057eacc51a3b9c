/* SPDX-License-Identifier: MIT */
/* Bisections in the database (migration 010): the bisection, its steps and their runs. */
#include "bisect-store.h"

int bstore_create(struct mx_db *db, const struct bstore_new *b, int64_t *ret_id)
{
        static const char sql[] = "INSERT INTO bisections (uid, gid, user_name, created_at, repo, good_arg, "
                                  "bad_arg, config_key, metric, threshold, level, template) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s);

        if (r < 0)
                return r;
        db_bind_int64(s, 1, b->uid);
        db_bind_int64(s, 2, b->gid);
        db_bind_text(s, 3, b->user_name);
        db_bind_int64(s, 4, mx_now_real_us());
        db_bind_text(s, 5, b->repo);
        db_bind_text(s, 6, b->good_arg);
        db_bind_text(s, 7, b->bad_arg);
        db_bind_text(s, 8, b->config_key);
        db_bind_text(s, 9, b->metric);
        if (b->metric)
                sqlite3_bind_double(s, 10, b->threshold);
        else
                sqlite3_bind_null(s, 10);
        db_bind_text(s, 11, b->level);
        db_bind_json(s, 12, b->template);
        r = db_step_done(db, s);
        if (r < 0)
                return r;
        *ret_id = sqlite3_last_insert_rowid(db->sql);
        return 0;
}

/* The runs of one step with what decides: state, result, each level's verdict and L4's metrics. */
static int step_runs(struct mx_db *db, int64_t step, json_t **ret)
{
        static const char sql[] =
                "SELECT br.run_id, r.job_id, br.side, r.state, r.result, "
                "(SELECT json_group_object(l.level, l.verdict) FROM levels l JOIN attempts a ON a.id = "
                "l.attempt_id WHERE a.run_id = r.id AND a.n = r.result_attempt), "
                "(SELECT l.metrics FROM levels l JOIN attempts a ON a.id = l.attempt_id WHERE a.run_id = r.id "
                "AND a.n = r.result_attempt AND l.level = 'L4') "
                "FROM bisect_runs br JOIN runs r ON r.id = br.run_id WHERE br.step_id = ? ORDER BY br.run_id";
        static const char *const keys[] = { "run", "job", "side", "state", "result", "json:verdicts", "json:l4",
                                            NULL };
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        json_t *a;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, step);
        a = json_array();
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                json_array_append_new(a, db_row_json(s, keys));
        if (rc != SQLITE_DONE) {
                json_decref(a);
                return db_errno(db, rc);
        }
        *ret = a;
        return 0;
}

static int steps_json(struct mx_db *db, int64_t id, json_t **ret)
{
        static const char sql[] = "SELECT id, idx, sha, state, worktree, build_log, started_at, finished_at, "
                                  "decision, message FROM bisect_steps WHERE bisection_id = ? ORDER BY id";
        static const char *const keys[] = { "id",          "idx",           "sha",     "state",
                                            "worktree",    "build_log",     "started_at", "finished_at",
                                            "json:decision", "message",     NULL };
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *a = json_array();
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, id);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                json_t *o = db_row_json(s, keys), *runs = NULL;

                json_array_append_new(a, o);
                r = step_runs(db, sqlite3_column_int64(s, 0), &runs);
                if (r < 0)
                        return r;
                json_object_set_new(o, "runs", runs);
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(a);
        return 0;
}

int bstore_get(struct mx_db *db, int64_t id, json_t **ret)
{
        static const char sql[] = "SELECT id, uid, user_name, created_at, finished_at, repo, good_arg, bad_arg, "
                                  "good, bad, config_key, metric, threshold, level, state, commits, "
                                  "template, result, message FROM bisections WHERE id = ?";
        static const char *const keys[] = { "id",     "uid",       "user_name", "created_at",    "finished_at",
                                            "repo",   "good_arg",  "bad_arg",   "good",          "bad",
                                            "config_key", "metric", "threshold", "level",        "state",
                                            "json:commits", "json:template", "json:result", "message", NULL };
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *o = NULL;
        json_t *steps = NULL;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, id);
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return db_errno(db, rc);
        o = db_row_json(s, keys);
        json_object_set_new(o, "threshold", sqlite3_column_type(s, 12) == SQLITE_NULL
                                                    ? json_null()
                                                    : json_real(sqlite3_column_double(s, 12)));
        r = steps_json(db, id, &steps);
        if (r < 0)
                return r;
        json_object_set_new(o, "steps", steps);
        *ret = TAKE_PTR(o);
        return 0;
}

int bstore_active(struct mx_db *db, int64_t **ret_ids, size_t *ret_n)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_free_ int64_t *ids = NULL;
        size_t n = 0;
        int r = db_stmt(db, "SELECT id FROM bisections WHERE state IN ('resolving', 'running') ORDER BY id", &s),
            rc;

        if (r < 0)
                return r;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                ids = xreallocarray(ids, n + 1, sizeof(*ids));
                ids[n++] = sqlite3_column_int64(s, 0);
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret_ids = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

int bstore_resolved(struct mx_db *db, int64_t id, const char *good, const char *bad, json_t *commits)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, "UPDATE bisections SET good = ?, bad = ?, commits = ?, state = 'running' WHERE id = ?",
                        &s);

        if (r < 0)
                return r;
        db_bind_text(s, 1, good);
        db_bind_text(s, 2, bad);
        db_bind_json(s, 3, commits);
        db_bind_int64(s, 4, id);
        return db_step_done(db, s);
}

int bstore_end(struct mx_db *db, int64_t id, const char *state, json_t *result, const char *message)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, "UPDATE bisections SET state = ?, result = ?, message = ?, finished_at = ? "
                            "WHERE id = ? AND state IN ('resolving', 'running')", &s);

        if (r < 0)
                return r;
        db_bind_text(s, 1, state);
        db_bind_json(s, 2, result);
        db_bind_text(s, 3, message);
        db_bind_int64(s, 4, mx_now_real_us());
        db_bind_int64(s, 5, id);
        return db_step_done(db, s);
}

int bstore_step_add(struct mx_db *db, int64_t bisection, int64_t idx, const char *sha, const char *worktree,
                    const char *build_log, int64_t *ret_step)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, "INSERT INTO bisect_steps (bisection_id, idx, sha, state, worktree, build_log, "
                            "started_at) VALUES (?, ?, ?, 'building', ?, ?, ?)", &s);

        if (r < 0)
                return r;
        db_bind_int64(s, 1, bisection);
        db_bind_int64(s, 2, idx);
        db_bind_text(s, 3, sha);
        db_bind_text(s, 4, worktree);
        db_bind_text(s, 5, build_log);
        db_bind_int64(s, 6, mx_now_real_us());
        r = db_step_done(db, s);
        if (r < 0)
                return r;
        *ret_step = sqlite3_last_insert_rowid(db->sql);
        return 0;
}

int bstore_step_set(struct mx_db *db, int64_t step, const char *state, json_t *decision, const char *message)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        bool final = !streq(state, "building") && !streq(state, "running");
        int r = db_stmt(db, "UPDATE bisect_steps SET state = ?, decision = ?, message = ?, finished_at = ? "
                            "WHERE id = ?", &s);

        if (r < 0)
                return r;
        db_bind_text(s, 1, state);
        db_bind_json(s, 2, decision);
        db_bind_text(s, 3, message);
        db_bind_int64_or_null(s, 4, mx_now_real_us(), !final);
        db_bind_int64(s, 5, step);
        return db_step_done(db, s);
}

int bstore_step_link(struct mx_db *db, int64_t step, int64_t job, const char *const *sides, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                _cleanup_stmt_ sqlite3_stmt *s = NULL;
                int r = db_stmt(db, "INSERT INTO bisect_runs (step_id, run_id, side) SELECT ?, id, ? FROM runs "
                                    "WHERE job_id = ? AND seq = (SELECT min(seq) FROM runs WHERE job_id = ?) + ?",
                                &s);

                if (r < 0)
                        return r;
                db_bind_int64(s, 1, step);
                db_bind_text(s, 2, sides[i]);
                db_bind_int64(s, 3, job);
                db_bind_int64(s, 4, job);
                db_bind_int64(s, 5, (int64_t)i);
                r = db_step_done(db, s);
                if (r < 0)
                        return r;
        }
        return 0;
}

int bstore_reference_l4(struct mx_db *db, int64_t bisection, json_t **ret)
{
        static const char sql[] =
                "SELECT l.metrics FROM bisect_runs br JOIN bisect_steps st ON st.id = br.step_id "
                "JOIN runs r ON r.id = br.run_id JOIN attempts a ON a.run_id = r.id AND a.n = r.result_attempt "
                "JOIN levels l ON l.attempt_id = a.id AND l.level = 'L4' "
                "WHERE st.bisection_id = ? AND br.side = 'reference' AND r.state = 'done' "
                "AND l.metrics IS NOT NULL ORDER BY r.id";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        json_t *a;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, bisection);
        a = json_array();
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                json_t *m = db_column_json(s, 0);

                if (json_is_object(m))
                        json_array_append_new(a, m);
                else
                        json_decref(m);
        }
        if (rc != SQLITE_DONE) {
                json_decref(a);
                return db_errno(db, rc);
        }
        *ret = a;
        return 0;
}

int bstore_count_active(struct mx_db *db, uid_t uid, int64_t *ret)
{
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, "SELECT count(*) FROM bisections WHERE uid = ? AND state IN ('resolving', 'running')",
                        &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, uid);
        rc = sqlite3_step(s);
        if (rc != SQLITE_ROW)
                return db_errno(db, rc);
        *ret = sqlite3_column_int64(s, 0);
        return 0;
}
