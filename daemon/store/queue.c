/* SPDX-License-Identifier: MIT */
/* The queue in SQLite: jobs, runs, attempts, levels and events, and the evidence a job's criteria read. */
#include "queue.h"
#include "order.h"
#include "sample-store.h"
#include "queue-slurm.h"

#include <inttypes.h>

static const char *const outcome_names[_MX_OUTCOME_MAX] = {
        [MX_OUTCOME_COMPLETED] = "completed", [MX_OUTCOME_INFRA_ERROR] = "infra-error",
        [MX_OUTCOME_TIMEOUT] = "timeout",     [MX_OUTCOME_CRASHED] = "crashed",
        [MX_OUTCOME_CANCELLED] = "cancelled", [MX_OUTCOME_INTERRUPTED] = "interrupted",
};

const char *mx_outcome_to_string(enum mx_outcome o)
{
        return o >= 0 && o < _MX_OUTCOME_MAX ? outcome_names[o] : NULL;
}

enum mx_outcome mx_outcome_from_string(const char *s)
{
        for (int i = 0; s && i < _MX_OUTCOME_MAX; i++)
                if (streq(s, outcome_names[i]))
                        return (enum mx_outcome)i;
        return _MX_OUTCOME_INVALID;
}

/* Run a body inside one transaction; roll back on failure. */
#define TXN(db, body)                                                                                       \
        ({                                                                                                  \
                int _r = db_begin(db);                                                                      \
                if (_r >= 0) {                                                                              \
                        _r = (body);                                                                        \
                        if (_r >= 0)                                                                        \
                                _r = db_commit(db);                                                         \
                        if (_r < 0)                                                                         \
                                db_rollback(db);                                                            \
                }                                                                                           \
                _r;                                                                                         \
        })

static int event_insert(struct mx_db *db, int64_t job, int64_t run, const char *kind, int64_t uid,
                        json_t *detail)
{
        static const char sql[] = "INSERT INTO events (at, job_id, run_id, kind, uid, detail) "
                                  "VALUES (?, ?, ?, ?, ?, ?)";

        return db_update(db, sql, DB_INT(mx_now_real_us()), DB_INT_OR_NULL(job, job <= 0),
                         DB_INT_OR_NULL(run, run <= 0), DB_TEXT(kind), DB_INT_OR_NULL(uid, uid < 0),
                         DB_JSON(detail));
}

int queue_event(struct mx_db *db, int64_t job, int64_t run, const char *kind, int64_t uid, json_t *detail)
{
        return event_insert(db, job, run, kind, uid, detail);
}

/*
 * The id of a stored snapshot with this text, storing it if it is new
 * (migration 003): an overnight sweep resubmits the same configurations, so
 * most snapshots are stored already. The hash finds candidates, the text
 * decides.
 */
static int snapshot_store(struct mx_db *db, json_t *spec, int64_t *ret)
{
        static const char find[] = "SELECT id FROM snapshots WHERE hash = ? AND spec = ?";
        static const char ins[] = "INSERT INTO snapshots (hash, spec) VALUES (?, ?)";
        _cleanup_stmt_ sqlite3_stmt *f = NULL;
        _cleanup_free_ char *text = json_dumps(spec, JSON_COMPACT);
        char hash[DB_HASH_LEN + 1];
        int r;

        if (!text)
                mx_die("out of memory encoding JSON");
        db_hash(text, strlen(text), hash);
        r = db_one_row(db, find, &f, DB_TEXT(hash), DB_TEXT(text));
        if (r < 0)
                return r;
        if (r > 0) {
                *ret = sqlite3_column_int64(f, 0);
                return 0;
        }
        return db_insert(db, ins, ret, DB_TEXT(hash), DB_TEXT(text));
}

static int job_insert(struct mx_db *db, const struct queue_job_new *j, int64_t now, int64_t *ret)
{
        static const char sql[] =
                "INSERT INTO jobs (uid, gid, user_name, submitted_at, matrix_path, matrix_digest, feature, "
                "strategy, levels, priority, request, snapshot) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        int64_t snap = 0;
        int r = j->spec_base ? snapshot_store(db, j->spec_base, &snap) : 0;

        if (r < 0)
                return r;
        return db_insert(db, sql, ret, DB_INT(j->uid), DB_INT(j->gid), DB_TEXT(j->user_name), DB_INT(now),
                         DB_TEXT(j->matrix_path), DB_TEXT(j->matrix_digest), DB_TEXT(j->feature),
                         DB_TEXT(j->strategy), DB_JSON(j->levels), DB_INT(j->priority), DB_JSON(j->request),
                         DB_INT_OR_NULL(snap, snap <= 0));
}

static int run_insert(struct mx_db *db, int64_t job, int seq, const struct queue_run_new *n, int64_t now)
{
        static const char sql[] = "INSERT INTO runs (job_id, seq, config_key, config_hash, config, reasons, "
                                  "expect_fail, snapshot, queued_at, pass) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        int64_t snap = 0;
        int r = snapshot_store(db, n->spec, &snap);

        if (r < 0)
                return r;
        return db_update(db, sql, DB_INT(job), DB_INT(seq), DB_TEXT(n->config_key), DB_TEXT(n->config_hash),
                         DB_JSON(n->config), DB_JSON(n->reasons), DB_TEXT(n->expect_fail), DB_INT(snap),
                         DB_INT(now), DB_INT_OR_NULL(1, !n->fail_fast));
}

static int submit_body(struct mx_db *db, const struct queue_job_new *job, const struct queue_run_new *runs,
                       size_t n_runs, int64_t *ret_job)
{
        int64_t now = mx_now_real_us(), id = 0;
        _cleanup_(json_decrefp) json_t *detail = NULL;
        int r = job_insert(db, job, now, &id);

        for (size_t i = 0; r >= 0 && i < n_runs; i++)
                r = run_insert(db, id, (int)i + 1, &runs[i], now);
        if (r < 0)
                return r;
        detail = json_pack("{s:I,s:s?}", "runs", (json_int_t)n_runs, "feature", job->feature);
        r = event_insert(db, id, 0, "job-accepted", job->uid, detail);
        if (r >= 0)
                *ret_job = id;
        return r;
}

int queue_submit(struct mx_db *db, const struct queue_job_new *job, const struct queue_run_new *runs,
                 size_t n_runs, int64_t *ret_job)
{
        return TXN(db, submit_body(db, job, runs, n_runs, ret_job));
}

int queue_count_queued(struct mx_db *db, uid_t uid, int64_t *ret)
{
        /* user_counts (migration 002): one row, where counting runs walked every queued run. */
        static const char sql[] = "SELECT coalesce(sum(n), 0) FROM user_counts "
                                  "WHERE uid = ? AND state = 'queued'";

        return db_one_int(db, sql, ret, DB_INT(uid));
}

void queue_next_done(struct queue_next *n)
{
        free(n->config_key);
        json_decref(n->spec);
        json_decref(n->levels);
        *n = (struct queue_next){};
}

/* The snapshot a runner gets: the job's shared part (column base, may be NULL) with the run's own on top. */
static json_t *spec_merge(sqlite3_stmt *s, int base, int own)
{
        json_t *spec = db_column_json(s, base), *o = db_column_json(s, own);

        if (!json_is_object(spec)) {
                json_decref(spec);
                spec = json_object();
        }
        if (json_is_object(o))
                json_object_update(spec, o);
        json_decref(o);
        return spec;
}

/* A confirmation start runs what L4 needs of the job's levels: L1, L1.5 when selected, L4. */
static json_t *confirm_levels(json_t *job_levels)
{
        json_t *out = json_array(), *v;
        size_t i;

        json_array_foreach (job_levels, i, v)
                if (streq_ptr(json_string_value(v), "L1") || streq_ptr(json_string_value(v), "L1.5"))
                        json_array_append(out, v);
        json_array_append_new(out, json_string("L4"));
        return out;
}

/* A fail-fast job's first pass: the job's cheap levels (matrix/plan/order.h), in its order. */
static json_t *cheap_levels(json_t *job_levels)
{
        json_t *out = json_array(), *v;
        size_t i;

        json_array_foreach (job_levels, i, v)
                if (mx_order_level_is_cheap(json_string_value(v)))
                        json_array_append(out, v);
        return out;
}

/*
 * The run picked waits for L5 confirmation starts of attempt for: the next
 * planned one (possibly of its reference run), or, when the round is in, the
 * decision (ret->decide).
 */
static int confirm_pick(struct mx_db *db, int64_t for_attempt, struct queue_next *ret)
{
        static const char sql[] =
                "SELECT c.id, (SELECT w.job_id FROM attempts fa JOIN runs w ON w.id = fa.run_id "
                "WHERE fa.id = c.for_attempt), r.id, r.config_key, s.spec, j.levels, b.spec FROM confirmations c "
                "JOIN runs r ON r.id = c.run_id JOIN jobs j ON j.id = r.job_id "
                "JOIN snapshots s ON s.id = r.snapshot LEFT JOIN snapshots b ON b.id = j.snapshot "
                "WHERE c.for_attempt = ? AND c.attempt_id IS NULL ORDER BY c.id LIMIT 1";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_json_ json_t *levels = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(for_attempt));

        if (r < 0)
                return r;
        if (r == 0) {
                ret->decide = for_attempt;
                return 0;
        }
        levels = db_column_json(s, 5);
        queue_next_done(ret);
        /* the start is the work of the job whose L5 waits, also when it starts that job's reference run */
        *ret = (struct queue_next){
                .confirm_row = sqlite3_column_int64(s, 0),
                .confirm_of = for_attempt,
                .job = sqlite3_column_int64(s, 1),
                .run = sqlite3_column_int64(s, 2),
                .config_key = db_column_strdup(s, 3),
                .spec = spec_merge(s, 6, 4),
                .levels = confirm_levels(levels),
        };
        return 0;
}

int queue_pick_next(struct mx_db *db, struct queue_next *ret)
{
        static const char sql[] =
                "SELECT r.job_id, r.id, r.config_key, s.spec, j.levels, b.spec, r.confirming, r.pass FROM runs r "
                "JOIN jobs j ON j.id = r.job_id JOIN snapshots s ON s.id = r.snapshot "
                "LEFT JOIN snapshots b ON b.id = j.snapshot WHERE r.state = 'queued' "
                "ORDER BY j.priority DESC, j.id, coalesce(r.pass, 1), r.seq LIMIT 1";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s);

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret = (struct queue_next){
                .job = sqlite3_column_int64(s, 0),
                .run = sqlite3_column_int64(s, 1),
                .config_key = db_column_strdup(s, 2),
                .spec = spec_merge(s, 5, 3),
                .levels = db_column_json(s, 4),
                .cheap_pass = sqlite3_column_int(s, 7) == 1,
        };
        if (ret->cheap_pass) {
                json_t *all = ret->levels;

                ret->levels = cheap_levels(all);
                json_decref(all);
        }
        if (sqlite3_column_type(s, 6) != SQLITE_NULL) {
                r = confirm_pick(db, sqlite3_column_int64(s, 6), ret);
                if (r < 0)
                        queue_next_done(ret);
                return r;
        }
        return 0;
}

static int attempt_start_body(struct mx_db *db, int64_t run, const char *tag, const char *boot_id,
                              int64_t *ret_attempt, int *ret_n)
{
        static const char upd[] = "UPDATE runs SET state = 'running', attempts = attempts + 1, result = NULL "
                                  "WHERE id = ? AND state = 'queued' RETURNING attempts, job_id";
        static const char ins[] = "INSERT INTO attempts (run_id, n, started_at, tag, boot_id, pass) "
                                  "VALUES (?1, ?2, ?3, ?4, ?5, (SELECT CASE WHEN pass = 1 THEN 1 END "
                                  "FROM runs WHERE id = ?1))";
        _cleanup_stmt_ sqlite3_stmt *u = NULL;
        int64_t job;
        int r, n;

        r = db_one_row(db, upd, &u, DB_INT(run));
        if (r <= 0)
                return r < 0 ? r : -ESTALE;
        n = sqlite3_column_int(u, 0);
        job = sqlite3_column_int64(u, 1);
        r = db_step_done(db, u); /* finish RETURNING before the next statement */
        if (r < 0)
                return r;
        r = db_insert(db, ins, ret_attempt, DB_INT(run), DB_INT(n), DB_INT(mx_now_real_us()), DB_TEXT(tag),
                      DB_TEXT(boot_id));
        if (r < 0)
                return r;
        *ret_n = n;
        {
                _cleanup_(json_decrefp) json_t *d = json_pack("{s:i}", "attempt", n);
                return event_insert(db, job, run, "run-started", -1, d);
        }
}

int queue_attempt_start(struct mx_db *db, int64_t run, const char *tag, const char *boot_id,
                        int64_t *ret_attempt, int *ret_n)
{
        return TXN(db, attempt_start_body(db, run, tag, boot_id, ret_attempt, ret_n));
}

/*
 * A confirmation start: a new attempt of the row's run, marked confirm_of. The
 * run whose L5 waits runs now; a reference run stays as it is (done, its
 * result its own). Its events are the waiting run's job's, whose decision it
 * serves, also when the reference run is an earlier job's.
 */
static int confirm_start_body(struct mx_db *db, int64_t row, const char *tag, const char *boot_id,
                              int64_t *ret_attempt, int *ret_n)
{
        static const char upd[] =
                "UPDATE runs SET attempts = attempts + 1, state = CASE WHEN confirming IS NOT NULL AND "
                "confirming = (SELECT for_attempt FROM confirmations WHERE id = ?1) THEN 'running' ELSE state END "
                "WHERE id = (SELECT run_id FROM confirmations WHERE id = ?1 AND attempt_id IS NULL) "
                "RETURNING attempts, (SELECT w.job_id FROM confirmations c JOIN attempts fa "
                "ON fa.id = c.for_attempt JOIN runs w ON w.id = fa.run_id WHERE c.id = ?1), id, "
                "(SELECT for_attempt FROM confirmations WHERE id = ?1)";
        static const char ins[] = "INSERT INTO attempts (run_id, n, started_at, tag, boot_id, confirm_of) "
                                  "VALUES (?, ?, ?, ?, ?, ?)";
        static const char mark[] = "UPDATE confirmations SET attempt_id = ? WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *u = NULL;
        _cleanup_(json_decrefp) json_t *d = NULL;
        int64_t job, run, for_attempt;
        int r, n;

        r = db_one_row(db, upd, &u, DB_INT(row));
        if (r <= 0)
                return r < 0 ? r : -ESTALE;
        n = sqlite3_column_int(u, 0);
        job = sqlite3_column_int64(u, 1);
        run = sqlite3_column_int64(u, 2);
        for_attempt = sqlite3_column_int64(u, 3);
        r = db_step_done(db, u);
        if (r < 0)
                return r;
        r = db_insert(db, ins, ret_attempt, DB_INT(run), DB_INT(n), DB_INT(mx_now_real_us()), DB_TEXT(tag),
                      DB_TEXT(boot_id), DB_INT(for_attempt));
        if (r < 0)
                return r;
        *ret_n = n;
        r = db_update(db, mark, DB_INT(*ret_attempt), DB_INT(row));
        if (r < 0)
                return r;
        d = json_pack("{s:i,s:I}", "attempt", n, "confirmation_of", (json_int_t)for_attempt);
        return event_insert(db, job, run, "run-started", -1, d);
}

int queue_confirm_attempt_start(struct mx_db *db, int64_t row, const char *tag, const char *boot_id,
                                int64_t *ret_attempt, int *ret_n)
{
        return TXN(db, confirm_start_body(db, row, tag, boot_id, ret_attempt, ret_n));
}

int queue_attempt_process(struct mx_db *db, int64_t attempt, pid_t pid, pid_t pgid, uint64_t proc_start)
{
        static const char sql[] = "UPDATE attempts SET pid = ?, pgid = ?, proc_start = ? WHERE id = ?";
        return db_update(db, sql, DB_INT(pid), DB_INT(pgid), DB_INT((int64_t)proc_start), DB_INT(attempt));
}

int queue_attempt_cgroup(struct mx_db *db, int64_t attempt, const char *path)
{
        static const char sql[] = "UPDATE attempts SET cgroup = ? WHERE id = ?";
        return db_update(db, sql, DB_TEXT(path), DB_INT(attempt));
}

int queue_attempt_log(struct mx_db *db, int64_t attempt, const char *path)
{
        static const char sql[] = "UPDATE attempts SET log_path = ? WHERE id = ?";
        return db_update(db, sql, DB_TEXT(path), DB_INT(attempt));
}

int queue_attempt_command(struct mx_db *db, int64_t attempt, json_t *command)
{
        static const char sql[] = "UPDATE attempts SET command = ? WHERE id = ?";
        return db_update(db, sql, DB_JSON(command), DB_INT(attempt));
}

int queue_level_record(struct mx_db *db, int64_t attempt, const struct queue_level *l)
{
        static const char sql[] = "INSERT OR REPLACE INTO levels (attempt_id, level, verdict, started_at, "
                                  "finished_at, metrics, artifacts, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
        return db_update(db, sql, DB_INT(attempt), DB_TEXT(l->level), DB_TEXT(l->verdict),
                         DB_INT(l->started_at), DB_INT(l->finished_at), DB_JSON(l->metrics),
                         DB_JSON(l->artifacts), DB_TEXT(l->message));
}

/* The run's result summary from the attempt's outcome and worst verdict. */
static char *result_of(enum mx_outcome o, bool any_failed_level, bool expect_fail)
{
        switch (o) {
        case MX_OUTCOME_COMPLETED:
                if (expect_fail)
                        return xstrdup(any_failed_level ? "xfail" : "xpass");
                return xstrdup(any_failed_level ? "fail" : "pass");
        case MX_OUTCOME_CRASHED:
                return xstrdup(expect_fail ? "xfail" : "crashed");
        default:
                return xstrdup(mx_outcome_to_string(o));
        }
}

struct attempt_facts {
        int64_t run, job;
        int64_t for_job; /* a confirmation start: the job whose L5 it serves; else job */
        int n;
        bool failed_level, expect_fail;
        bool cancelled; /* a cancel was acknowledged while the run ran */
        int64_t confirm_of;  /* a confirmation start of that attempt's L5; 0: none */
        int64_t confirm_ref; /* L5 asks for confirmation starts against this reference run; 0: none */
        bool cheap_pass;     /* the first pass of a fail-fast run (migration 011) */
        enum mx_outcome outcome; /* how it ended (_MX_OUTCOME_INVALID: it has not) */
};

/* The facts of an open attempt (-ENOENT once it has ended), or with ended of any attempt, as at its end. */
static int attempt_facts(struct mx_db *db, int64_t attempt, bool ended, struct attempt_facts *ret)
{
        static const char sql[] =
                "SELECT a.run_id, r.job_id, r.expect_fail IS NOT NULL, EXISTS (SELECT 1 FROM levels l "
                "WHERE l.attempt_id = a.id AND l.verdict IN ('fail','invalid')), r.cancelled_at IS NOT NULL, a.n, "
                "coalesce(a.confirm_of, 0), coalesce((SELECT json_extract(l.metrics, '$.confirm.reference_run') "
                "FROM levels l WHERE l.attempt_id = a.id AND l.level = 'L5'), 0), a.outcome, coalesce(a.pass, 0) = 1, "
                "coalesce((SELECT w.job_id FROM attempts fa JOIN runs w ON w.id = fa.run_id "
                "WHERE fa.id = a.confirm_of), r.job_id) "
                "FROM attempts a JOIN runs r ON r.id = a.run_id WHERE a.id = ?1 AND (?2 OR a.finished_at IS NULL)";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(attempt), DB_INT(ended));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret = (struct attempt_facts){
                .run = sqlite3_column_int64(s, 0),
                .job = sqlite3_column_int64(s, 1),
                .expect_fail = sqlite3_column_int(s, 2),
                .failed_level = sqlite3_column_int(s, 3),
                .cancelled = sqlite3_column_int(s, 4),
                .n = sqlite3_column_int(s, 5),
                .confirm_of = sqlite3_column_int64(s, 6),
                .confirm_ref = sqlite3_column_int64(s, 7),
                .outcome = mx_outcome_from_string((const char *)sqlite3_column_text(s, 8)),
                .cheap_pass = sqlite3_column_int(s, 9),
                .for_job = sqlite3_column_int64(s, 10),
        };
        return 0;
}

/*
 * The attempt a finished run shows (migration 003): its latest one that ran to
 * an end, not cancelled or interrupted; a cancelled retry leaves the result
 * before it. *ret_n = 0 when there is none.
 */
static int shown_attempt(struct mx_db *db, int64_t run, int *ret_n, char **ret_result)
{
        /* a fail-fast run's cheap pass that passed is not a result: its second pass did not come to one */
        static const char sql[] = "SELECT n, result FROM attempts WHERE run_id = ? AND confirm_of IS NULL "
                                  "AND result NOT IN ('cancelled', 'interrupted') "
                                  "AND NOT (coalesce(pass, 0) = 1 AND result IN ('pass', 'xpass')) "
                                  "ORDER BY n DESC LIMIT 1";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(run));

        if (r < 0)
                return r;
        *ret_n = 0;
        if (r > 0) {
                *ret_n = sqlite3_column_int(s, 0);
                *ret_result = db_column_strdup(s, 1);
        }
        return 0;
}

/*
 * Plan a round of confirmation starts for for_attempt's L5: its run (A), then
 * the reference (B), each a fresh server start; the run waits (confirming).
 */
static int confirm_plan(struct mx_db *db, int64_t for_attempt, int64_t ref_run, int round)
{
        static const char ins[] =
                "INSERT INTO confirmations (for_attempt, run_id, side, round) "
                "SELECT ?1, run_id, 'current', ?3 FROM attempts WHERE id = ?1 UNION ALL "
                "SELECT ?1, ?2, 'reference', ?3";
        static const char upd[] = "UPDATE runs SET confirming = ?1 WHERE id = (SELECT run_id FROM attempts "
                                  "WHERE id = ?1)";
        int r = db_update(db, ins, DB_INT(for_attempt), DB_INT(ref_run), DB_INT(round));
        if (r < 0)
                return r;
        return db_update(db, upd, DB_INT(for_attempt));
}

/*
 * A confirmation start ended: its result is its own, never its run's. The run
 * whose L5 waits goes back to waiting (queued), or is done when it was
 * cancelled meanwhile; a reference run stays as it was. An interrupted start
 * is planned again.
 */
static int confirm_finish_body(struct mx_db *db, int64_t attempt, const struct attempt_facts *fa,
                               const struct queue_finish *f, const char *result)
{
        static const char replan[] = "UPDATE confirmations SET attempt_id = NULL WHERE attempt_id = ?";
        static const char upd_r[] =
                "UPDATE runs SET state = CASE WHEN ?2 THEN 'done' ELSE 'queued' END, "
                "confirming = CASE WHEN ?2 THEN NULL ELSE confirming END, "
                "result = CASE WHEN ?2 THEN ?3 END, result_attempt = CASE WHEN ?2 THEN ?4 END "
                "WHERE id = ?1 AND state = 'running'";
        _cleanup_free_ char *shown = NULL;
        _cleanup_(json_decrefp) json_t *d = NULL;
        int shown_n = 0, r;

        if (f->requeue && !fa->cancelled) {
                r = db_update(db, replan, DB_INT(attempt));
                if (r < 0)
                        return r;
        }
        if (fa->cancelled) {
                r = shown_attempt(db, fa->run, &shown_n, &shown);
                if (r < 0)
                        return r;
        }
        r = db_update(db, upd_r, DB_INT(fa->run), DB_INT(fa->cancelled),
                      DB_TEXT(shown ? shown : "cancelled"), DB_INT_OR_NULL(shown_n, shown_n == 0));
        if (r < 0)
                return r;
        d = json_pack("{s:s,s:s,s:s?,s:b,s:I}", "outcome", mx_outcome_to_string(f->outcome), "result", result,
                      "crash_class", f->crash_class, "requeued", f->requeue && !fa->cancelled, "confirmation_of",
                      (json_int_t)fa->confirm_of);
        return event_insert(db, fa->for_job, fa->run, "run-finished", -1, d);
}

/* The run's next attempt makes its second pass, every level of its job. */
static int run_next_pass(struct mx_db *db, int64_t run)
{
        static const char sql[] = "UPDATE runs SET pass = 2 WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_stmt(db, sql, &s);

        if (r < 0)
                return r;
        db_bind_int64(s, 1, run);
        return db_step_done(db, s);
}

static int attempt_finish_body(struct mx_db *db, int64_t attempt, const struct queue_finish *f,
                               char **ret_result)
{
        static const char upd_a[] = "UPDATE attempts SET finished_at = ?, outcome = ?, crash_class = ?, "
                                    "message = ?, exit_status = ?, exit_signal = ?, result = ? WHERE id = ?";
        static const char upd_r[] = "UPDATE runs SET state = ?, result = ?, result_attempt = ?, queued_at = "
                                    "CASE WHEN ? THEN ? ELSE queued_at END WHERE id = ?";
        _cleanup_free_ char *result = NULL, *shown = NULL;
        int shown_n = 0;
        _cleanup_(json_decrefp) json_t *d = NULL;
        struct attempt_facts fa = {};
        int64_t now = mx_now_real_us();
        bool requeue, confirm, next_pass;
        int r;

        r = attempt_facts(db, attempt, false, &fa);
        if (r < 0)
                return r;
        /* An interrupted run goes back to the queue, unless its cancel was acknowledged before. */
        requeue = f->requeue && !fa.cancelled;
        result = f->requeue && fa.cancelled ? xstrdup("cancelled")
                                            : result_of(f->outcome, fa.failed_level, fa.expect_fail);
        r = db_update(db, upd_a, DB_INT(now), DB_TEXT(mx_outcome_to_string(f->outcome)),
                      DB_TEXT(f->crash_class), DB_TEXT(f->message),
                      DB_INT_OR_NULL(f->exit_status, f->exit_status < 0),
                      DB_INT_OR_NULL(f->exit_signal, f->exit_signal <= 0), DB_TEXT(result), DB_INT(attempt));
        if (r < 0)
                return r;
        if (fa.confirm_of) {
                r = confirm_finish_body(db, attempt, &fa, f, result);
                if (r >= 0 && ret_result)
                        *ret_result = TAKE_PTR(result);
                return r;
        }
        /* L5 could not decide: the run waits for confirmation starts (the L5 level asked, naming B) */
        confirm = !requeue && !fa.cancelled && f->outcome == MX_OUTCOME_COMPLETED && fa.confirm_ref > 0;
        /* A fail-fast run's cheap pass passed: it queues again for its full levels (migration 011). */
        next_pass = !requeue && !fa.cancelled && fa.cheap_pass && f->outcome == MX_OUTCOME_COMPLETED &&
                    !fa.failed_level;
        confirm = confirm && !next_pass;
        if (next_pass && (r = run_next_pass(db, fa.run)) < 0)
                return r;
        if (!requeue && !confirm && !next_pass) {
                r = shown_attempt(db, fa.run, &shown_n, &shown);
                if (r < 0)
                        return r;
                if (shown_n == 0) {
                        shown_n = fa.n;
                        shown = xstrdup(result);
                }
        }
        r = db_update(db, upd_r, DB_TEXT(requeue || confirm || next_pass ? "queued" : "done"),
                      DB_TEXT(requeue || confirm || next_pass ? NULL : shown),
                      DB_INT_OR_NULL(shown_n, requeue || confirm || next_pass), DB_INT(requeue), DB_INT(now),
                      DB_INT(fa.run));
        if (r < 0)
                return r;
        if (confirm && (r = confirm_plan(db, attempt, fa.confirm_ref, 1)) < 0)
                return r;
        d = json_pack("{s:s,s:s,s:s?,s:b,s:b}", "outcome", mx_outcome_to_string(f->outcome), "result", result,
                      "crash_class", f->crash_class, "requeued", requeue, "confirming", confirm);
        if (fa.cheap_pass) {
                json_object_set_new(d, "pass", json_integer(1));
                json_object_set_new(d, "next_pass", json_boolean(next_pass));
        }
        r = event_insert(db, fa.job, fa.run, "run-finished", -1, d);
        if (r >= 0 && ret_result)
                *ret_result = TAKE_PTR(result);
        return r;
}

int queue_attempt_finish(struct mx_db *db, int64_t attempt, const struct queue_finish *f, char **ret_result)
{
        return TXN(db, attempt_finish_body(db, attempt, f, ret_result));
}

int queue_confirm_facts(struct mx_db *db, int64_t for_attempt, struct queue_confirm_facts *ret)
{
        static const char sql[] =
                "SELECT r.id, r.job_id, r.confirming IS ?1 AND r.state = 'queued', "
                "(SELECT count(*) FROM confirmations c WHERE c.for_attempt = ?1 AND c.attempt_id IS NULL), "
                "(SELECT count(*) FROM confirmations c JOIN attempts x ON x.id = c.attempt_id "
                " WHERE c.for_attempt = ?1 AND x.finished_at IS NULL), "
                "(SELECT coalesce(max(round), 0) FROM confirmations c WHERE c.for_attempt = ?1), "
                "(SELECT metrics FROM levels l WHERE l.attempt_id = ?1 AND l.level = 'L4'), "
                "(SELECT metrics FROM levels l WHERE l.attempt_id = ?1 AND l.level = 'L5') "
                "FROM attempts a JOIN runs r ON r.id = a.run_id WHERE a.id = ?1";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(for_attempt));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret = (struct queue_confirm_facts){
                .run = sqlite3_column_int64(s, 0),
                .job = sqlite3_column_int64(s, 1),
                .confirming = sqlite3_column_int(s, 2),
                .pending = sqlite3_column_int(s, 3),
                .open = sqlite3_column_int(s, 4),
                .rounds = sqlite3_column_int(s, 5),
                .l4 = db_column_json(s, 6),
                .l5 = db_column_json(s, 7),
        };
        return 0;
}

int queue_confirm_of(struct mx_db *db, int64_t attempt, int64_t *ret_for)
{
        static const char sql[] = "SELECT coalesce(confirm_of, 0) FROM attempts WHERE id = ?";

        return db_one_int(db, sql, ret_for, DB_INT(attempt));
}

/* Replace the L5 row of the attempt (its started_at stays). */
static int confirm_level_update(struct mx_db *db, int64_t attempt, const struct queue_level *l)
{
        static const char sql[] = "UPDATE levels SET verdict = ?, finished_at = ?, metrics = ?, message = ? "
                                  "WHERE attempt_id = ? AND level = ?";
        return db_update(db, sql, DB_TEXT(l->verdict), DB_INT(l->finished_at), DB_JSON(l->metrics),
                         DB_TEXT(l->message), DB_INT(attempt), DB_TEXT(l->level));
}

static int confirm_round_body(struct mx_db *db, int64_t for_attempt, int64_t ref_run, int round,
                              const struct queue_level *l)
{
        int r = confirm_level_update(db, for_attempt, l);

        return r < 0 ? r : confirm_plan(db, for_attempt, ref_run, round);
}

int queue_confirm_round(struct mx_db *db, int64_t for_attempt, int64_t ref_run, int round,
                        const struct queue_level *l)
{
        return TXN(db, confirm_round_body(db, for_attempt, ref_run, round, l));
}

static int confirm_decided_body(struct mx_db *db, int64_t for_attempt, const struct queue_level *l,
                                char **ret_result)
{
        static const char upd_a[] = "UPDATE attempts SET result = ? WHERE id = ?";
        static const char upd_r[] = "UPDATE runs SET state = 'done', confirming = NULL, result = ?, "
                                    "result_attempt = ? WHERE id = ? AND confirming = ? AND state = 'queued'";
        _cleanup_free_ char *result = NULL;
        _cleanup_(json_decrefp) json_t *d = NULL;
        struct attempt_facts fa = {};
        int r = confirm_level_update(db, for_attempt, l);

        if (r < 0)
                return r;
        r = attempt_facts(db, for_attempt, true, &fa);
        if (r < 0)
                return r;
        result = result_of(fa.outcome < 0 ? MX_OUTCOME_COMPLETED : fa.outcome, fa.failed_level, fa.expect_fail);
        r = db_update(db, upd_a, DB_TEXT(result), DB_INT(for_attempt));
        if (r < 0)
                return r;
        r = db_update(db, upd_r, DB_TEXT(result), DB_INT(fa.n), DB_INT(fa.run), DB_INT(for_attempt));
        if (r < 0)
                return r;
        d = json_pack("{s:s,s:s,s:s?}", "level", l->level, "verdict", l->verdict, "message", l->message);
        r = event_insert(db, fa.job, fa.run, "level-finished", -1, d);
        if (r < 0)
                return r;
        json_decref(d);
        d = json_pack("{s:s,s:s,s:b,s:b}", "outcome", "completed", "result", result, "requeued", 0, "confirmed",
                      1);
        r = event_insert(db, fa.job, fa.run, "run-finished", -1, d);
        if (r >= 0 && ret_result)
                *ret_result = TAKE_PTR(result);
        return r;
}

int queue_confirm_decided(struct mx_db *db, int64_t for_attempt, const struct queue_level *l,
                          char **ret_result)
{
        return TXN(db, confirm_decided_body(db, for_attempt, l, ret_result));
}

int queue_open_attempts(struct mx_db *db, struct queue_open_attempt **ret, size_t *ret_n)
{
        static const char sql[] = "SELECT a.id, a.run_id, r.job_id, a.n, a.tag, a.boot_id, r.config_key, "
                                  "a.pid, a.pgid, a.proc_start, a.cgroup FROM attempts a JOIN runs r ON r.id = a.run_id "
                                  "WHERE a.finished_at IS NULL ORDER BY a.id";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        struct queue_open_attempt *v = NULL;
        size_t n = 0, cap = 0;
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                MX_GROW(v, cap, n + 1);
                v[n] = (struct queue_open_attempt){
                        .attempt = sqlite3_column_int64(s, 0),
                        .run = sqlite3_column_int64(s, 1),
                        .job = sqlite3_column_int64(s, 2),
                        .n = sqlite3_column_int(s, 3),
                        .tag = db_column_strdup(s, 4),
                        .boot_id = db_column_strdup(s, 5),
                        .config_key = db_column_strdup(s, 6),
                        .pid = (pid_t)sqlite3_column_int64(s, 7),
                        .pgid = (pid_t)sqlite3_column_int64(s, 8),
                        .proc_start = (uint64_t)sqlite3_column_int64(s, 9),
                        .has_process = sqlite3_column_type(s, 7) != SQLITE_NULL,
                        .cgroup = db_column_strdup(s, 10),
                };
                n++;
        }
        if (rc != SQLITE_DONE) {
                queue_open_attempts_free(v, n);
                return db_errno(db, rc);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

void queue_open_attempts_free(struct queue_open_attempt *a, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(a[i].tag);
                free(a[i].boot_id);
                free(a[i].config_key);
                free(a[i].cgroup);
        }
        free(a);
}

int queue_job_owner(struct mx_db *db, int64_t job, uid_t *ret_uid)
{
        static const char sql[] = "SELECT uid FROM jobs WHERE id = ?";
        int64_t v;
        int r = db_one_int(db, sql, &v, DB_INT(job));

        if (r >= 0)
                *ret_uid = (uid_t)v;
        return r;
}

int queue_run_owner(struct mx_db *db, int64_t run, uid_t *ret_uid, int64_t *ret_job)
{
        static const char sql[] = "SELECT j.uid, j.id FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(run));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret_uid = (uid_t)sqlite3_column_int64(s, 0);
        if (ret_job)
                *ret_job = sqlite3_column_int64(s, 1);
        return 0;
}

static int cancel_body(struct mx_db *db, int64_t job, int64_t run, uid_t by, int64_t *ret_cancelled,
                       int64_t *ret_running)
{
        /* A cancelled retry leaves the run with the result it had before (shown_attempt()). */
        static const char cq[] =
                "UPDATE runs SET state = 'done', cancelled_at = ?, confirming = NULL, "
                "result_attempt = (SELECT a.n FROM attempts a WHERE a.run_id = runs.id AND a.confirm_of IS NULL "
                "AND a.result NOT IN ('cancelled', 'interrupted') "
                "AND NOT (coalesce(a.pass, 0) = 1 AND a.result IN ('pass', 'xpass')) ORDER BY a.n DESC LIMIT 1), "
                "result = coalesce((SELECT a.result FROM attempts a WHERE a.run_id = runs.id "
                "AND a.confirm_of IS NULL AND a.result NOT IN ('cancelled', 'interrupted') "
                "AND NOT (coalesce(a.pass, 0) = 1 AND a.result IN ('pass', 'xpass')) ORDER BY a.n DESC LIMIT 1), "
                "'cancelled') "
                "WHERE state = 'queued' AND (job_id = ? OR id = ?)";
        /* Stored with the run, so a recovery after kill -9 does not requeue what was cancelled. */
        static const char cr[] = "UPDATE runs SET cancelled_at = ? WHERE state = 'running' "
                                 "AND (job_id = ? OR id = ?) RETURNING id";
        static const char cj[] = "UPDATE jobs SET cancelled_at = ?, cancelled_by = ? WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int64_t now = mx_now_real_us(), running = 0, cancelled, owner_job = job;
        _cleanup_(json_decrefp) json_t *d = NULL;
        int r;

        r = db_update(db, cq, DB_INT(now), DB_INT(job), DB_INT(run));
        if (r < 0)
                return r;
        cancelled = sqlite3_changes(db->sql);
        r = db_stmt(db, cr, &s);
        if (r < 0)
                return r;
        db_bind_int64(s, 1, now);
        db_bind_int64(s, 2, job);
        db_bind_int64(s, 3, run);
        r = sqlite3_step(s);
        if (r == SQLITE_ROW) {
                running = sqlite3_column_int64(s, 0);
                r = sqlite3_step(s); /* finish RETURNING before the next statement */
        }
        if (r != SQLITE_DONE)
                return db_errno(db, r);
        /* Nothing left to cancel: a finished job must not turn "cancelled", nor get a cancel event. */
        if (cancelled == 0 && running == 0)
                return -ESTALE;
        if (job > 0) {
                r = db_update(db, cj, DB_INT(now), DB_INT(by), DB_INT(job));
                if (r < 0)
                        return r;
        } else if ((r = queue_run_owner(db, run, &(uid_t){ 0 }, &owner_job)) < 0)
                return r;
        d = json_pack("{s:I,s:I}", "cancelled", (json_int_t)cancelled, "stopping", (json_int_t)running);
        r = event_insert(db, owner_job, run, job > 0 ? "job-cancelled" : "run-cancelled", by, d);
        if (r < 0)
                return r;
        *ret_cancelled = cancelled;
        *ret_running = running;
        return 0;
}

int queue_cancel(struct mx_db *db, int64_t job, int64_t run, uid_t by, int64_t *ret_cancelled,
                 int64_t *ret_running)
{
        return TXN(db, cancel_body(db, job, run, by, ret_cancelled, ret_running));
}

/* The queued runs of a job's owner, inside the transaction that changed them. */
static int owner_queued(struct mx_db *db, int64_t job, int64_t *ret)
{
        static const char sql[] = "SELECT coalesce(sum(n), 0) FROM user_counts "
                                  "WHERE uid = (SELECT uid FROM jobs WHERE id = ?) AND state = 'queued'";

        return db_one_int(db, sql, ret, DB_INT(job));
}

static int retry_body(struct mx_db *db, int64_t job, int64_t run, bool all, uid_t by, int64_t max_queued,
                      int64_t *ret)
{
        /* Failed = anything but pass and expected failure; cancelled runs only with --all. */
        static const char rj[] =
                "UPDATE runs SET state = 'queued', result = NULL, result_attempt = NULL, confirming = NULL, "
                "cancelled_at = NULL, queued_at = ?, pass = CASE WHEN pass IS NOT NULL THEN 1 END "
                "WHERE job_id = ? AND state = 'done' AND "
                "(? OR result NOT IN ('pass', 'xfail', 'cancelled'))";
        static const char rr[] = "UPDATE runs SET state = 'queued', result = NULL, result_attempt = NULL, "
                                 "confirming = NULL, cancelled_at = NULL, queued_at = ?, "
                                 "pass = CASE WHEN pass IS NOT NULL THEN 1 END WHERE id = ? AND state = 'done'";
        static const char uj[] = "UPDATE jobs SET cancelled_at = NULL, cancelled_by = NULL WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *d = NULL;
        int64_t owner_job = job;
        int r;

        if (job <= 0 && (r = queue_run_owner(db, run, &(uid_t){ 0 }, &owner_job)) < 0)
                return r;
        if (job > 0)
                r = db_update(db, rj, DB_INT(mx_now_real_us()), DB_INT(job), DB_INT(all));
        else
                r = db_update(db, rr, DB_INT(mx_now_real_us()), DB_INT(run));
        if (r < 0)
                return r;
        *ret = sqlite3_changes(db->sql);
        if (job <= 0 && *ret == 0)
                return -EBUSY; /* the run is queued or running */
        if (*ret == 0)
                return -ESTALE; /* nothing of the job to retry: the caller says why */
        if (max_queued > 0) {
                int64_t queued = 0;

                r = owner_queued(db, owner_job, &queued);
                if (r < 0)
                        return r;
                if (queued > max_queued)
                        return -EDQUOT; /* the caller rolls back */
        }
        r = db_update(db, uj, DB_INT(owner_job));
        if (r < 0)
                return r;
        d = json_pack("{s:I,s:b}", "requeued", (json_int_t)*ret, "all", all);
        return event_insert(db, owner_job, run, "retried", by, d);
}

int queue_retry(struct mx_db *db, int64_t job, int64_t run, bool all, uid_t by, int64_t max_queued,
                int64_t *ret_requeued)
{
        int64_t n = 0;
        int r = TXN(db, retry_body(db, job, run, all, by, max_queued, &n));

        if (r >= 0)
                *ret_requeued = n;
        return r;
}

int queue_get_paused(struct mx_db *db, bool *ret)
{
        static const char sql[] = "SELECT value FROM settings WHERE key = 'paused'";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s);

        if (r < 0)
                return r;
        *ret = r > 0 && streq((const char *)sqlite3_column_text(s, 0), "1");
        return 0;
}

int queue_get_pause_reason(struct mx_db *db, char **ret)
{
        static const char sql[] = "SELECT value FROM settings WHERE key = 'paused_reason'";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s);

        if (r < 0)
                return r;
        *ret = r > 0 ? db_column_strdup(s, 0) : NULL;
        return 0;
}

static int set_paused_body(struct mx_db *db, bool paused, uid_t by, const char *reason)
{
        static const char sql[] = "INSERT OR REPLACE INTO settings (key, value) VALUES ('paused', ?)";
        /* The reason goes with the pause and away with the resume, so status never shows a stale one. */
        static const char set_reason[] = "INSERT OR REPLACE INTO settings (key, value) VALUES ('paused_reason', ?)";
        static const char del_reason[] = "DELETE FROM settings WHERE key = 'paused_reason'";
        _cleanup_(json_decrefp) json_t *d = NULL;
        int r = db_update(db, sql, DB_TEXT(paused ? "1" : "0"));

        if (r < 0)
                return r;
        if (paused && reason)
                r = db_update(db, set_reason, DB_TEXT(reason));
        else
                r = db_update(db, del_reason);
        if (r < 0)
                return r;
        if (paused && reason)
                d = json_pack("{s:s}", "reason", reason);
        return event_insert(db, 0, 0, paused ? "queue-paused" : "queue-resumed", by, d);
}

int queue_set_paused(struct mx_db *db, bool paused, uid_t by)
{
        return TXN(db, set_paused_body(db, paused, by, NULL));
}

int queue_set_paused_reason(struct mx_db *db, bool paused, uid_t by, const char *reason)
{
        return TXN(db, set_paused_body(db, paused, by, reason));
}

/*
 * The attempts that share ATTEMPT's requeue bound and ended with one of the
 * outcomes: those of its run that are, like it, its run's own (confirm_of
 * NULL), or like it confirmation starts of the same waiting attempt. So a
 * confirmation start of a reference run from an earlier job neither uses up
 * that job's bound nor inherits it: it has the bound of the decision it is
 * for.
 */
static int attempt_bound_count(struct mx_db *db, int64_t attempt, bool infra, int *ret)
{
        static const char sql[] = "SELECT count(*) FROM attempts a JOIN attempts x ON x.id = ?1 "
                                  "WHERE a.run_id = x.run_id AND a.confirm_of IS x.confirm_of AND a.id != x.id "
                                  "AND (a.outcome = 'interrupted' OR (?2 AND a.outcome = 'infra-error'))";
        int64_t v;
        int r = db_one_int(db, sql, &v, DB_INT(attempt), DB_INT(infra));

        if (r >= 0)
                *ret = (int)v;
        return r;
}

int queue_attempt_interruptions(struct mx_db *db, int64_t attempt, int *ret)
{
        return attempt_bound_count(db, attempt, false, ret);
}

int queue_attempt_machine_failures(struct mx_db *db, int64_t attempt, int *ret)
{
        return attempt_bound_count(db, attempt, true, ret);
}

int queue_events(struct mx_db *db, int64_t job, int64_t after, int limit, json_t **ret)
{
        /* The run's configuration rides along, so follow can print "r12 backend=cutlass ..." lines. */
        static const char sql[] = "SELECT e.id, e.at, e.run_id, e.kind, e.uid, e.detail, r.config_key "
                                  "FROM events e LEFT JOIN runs r ON r.id = e.run_id "
                                  "WHERE e.job_id = ? AND e.id > ? ORDER BY e.id LIMIT ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *a = json_array();
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        db_bind_int64(s, 2, after);
        db_bind_int64(s, 3, limit);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                static const char *const keys[] = { "id", "at", "run", "kind", "uid", "json:detail", NULL };
                json_t *e = db_row_json(s, keys);

                if (sqlite3_column_type(s, 6) == SQLITE_TEXT)
                        db_json_set_text(e, "config_key", s, 6);
                json_array_append_new(a, e);
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(a);
        return 0;
}

/* ---- read side ---- */

/* Add a row (state, result or "" for none yet, n) to a counts object; returns n. */
static json_int_t counts_add_row(json_t *c, sqlite3_stmt *s)
{
        const char *state = (const char *)sqlite3_column_text(s, 0);
        const char *result = (const char *)sqlite3_column_text(s, 1);
        json_int_t n = sqlite3_column_int64(s, 2);

        json_object_set_new(c, state, json_integer(json_integer_value(json_object_get(c, state)) + n));
        if (result && *result)
                json_object_set_new(c, result,
                                    json_integer(json_integer_value(json_object_get(c, result)) + n));
        return n;
}

/*
 * Per-job counts: total, queued, running, done and one key per result. Read
 * from job_counts (migration 002), a few rows per job whatever its size.
 */
static int job_counts(struct mx_db *db, int64_t job, json_t **ret)
{
        static const char sql[] = "SELECT state, result, n FROM job_counts WHERE job_id = ? AND n > 0";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        json_t *c = json_pack("{s:i,s:i,s:i,s:i}", "total", 0, "queued", 0, "running", 0, "done", 0);
        int r = db_stmt(db, sql, &s), rc;
        json_int_t total = 0;

        if (r < 0) {
                json_decref(c);
                return r;
        }
        db_bind_int64(s, 1, job);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                total += counts_add_row(c, s);
        json_object_set_new(c, "total", json_integer(total));
        if (rc != SQLITE_DONE) {
                json_decref(c);
                return db_errno(db, rc);
        }
        *ret = c;
        return 0;
}

static const char *job_state(json_t *counts, bool cancelled)
{
        if (json_integer_value(json_object_get(counts, "running")) > 0)
                return "running";
        if (json_integer_value(json_object_get(counts, "queued")) > 0)
                return "queued";
        return cancelled ? "cancelled" : "done";
}

#define JOB_COLUMNS "id, uid, user_name, feature, strategy, priority, submitted_at, cancelled_at, levels, matrix_path"

static int job_row_json(struct mx_db *db, sqlite3_stmt *s, json_t **ret)
{
        /* JOB_COLUMNS' keys (the columns' types tell integers from text) */
        static const char *const keys[] = { "id",           "uid",          "user",        "feature",
                                            "strategy",     "priority",     "submitted_at", "cancelled_at",
                                            "json:levels", "matrix",       NULL };
        _cleanup_(json_decrefp) json_t *j = db_row_json(s, keys);
        json_t *counts = NULL;
        int r;

        r = job_counts(db, sqlite3_column_int64(s, 0), &counts);
        if (r < 0)
                return r;
        json_object_set_new(j, "state", json_string(job_state(counts, sqlite3_column_type(s, 7) != SQLITE_NULL)));
        json_object_set_new(j, "counts", counts);
        *ret = TAKE_PTR(j);
        return 0;
}

int queue_job_json(struct mx_db *db, int64_t job, json_t **ret)
{
        static const char sql[] = "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(job));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        return job_row_json(db, s, ret);
}

/* The levels of one attempt, in the order they ran. */
static int attempt_levels(struct mx_db *db, int64_t attempt, json_t **ret)
{
        static const char sql[] = "SELECT level, verdict, started_at, finished_at, metrics, artifacts, message "
                                  "FROM levels WHERE attempt_id = ? ORDER BY started_at, id";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *a = json_array();
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, attempt);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                static const char *const keys[] = { "level",        "verdict",         "started_at", "finished_at",
                                                    "json:metrics", "json:artifacts", "message",    NULL };
                json_array_append_new(a, db_row_json(s, keys));
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(a);
        return 0;
}

static int run_attempts(struct mx_db *db, int64_t run, json_t **ret)
{
        static const char sql[] =
                "SELECT id, n, started_at, finished_at, outcome, crash_class, message, pid, "
                "pgid, exit_status, exit_signal, log_path, tag, result, confirm_of, command, pass FROM attempts "
                "WHERE run_id = ? ORDER BY n";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *a = json_array();
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, run);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                static const char *const keys[] = { "id",      "n",           "started_at",  "finished_at",
                                                    "outcome", "crash_class", "message",     "pid",
                                                    "pgid",    "exit_status", "exit_signal", "log",
                                                    "tag",     "result",      "confirm_of", NULL };
                json_t *t = db_row_json(s, keys), *levels = NULL, *samples = NULL;

                json_array_append_new(a, t);
                /* The command as started (migration 008), for show rN and repro */
                db_json_set_json(t, "command", s, 15);
                /* A fail-fast run's cheap pass (migration 011): its levels were L1 and L1.5 only */
                if (sqlite3_column_int(s, 16) == 1)
                        json_object_set_new(t, "pass", json_integer(1));
                r = attempt_levels(db, sqlite3_column_int64(s, 0), &levels);
                if (r < 0)
                        return r;
                json_object_set_new(t, "levels", levels);
                /* Executor slurm: the job, its node and Slurm's last state (migration 009) */
                r = slurm_attempt_json(db, sqlite3_column_int64(s, 0), t);
                if (r < 0)
                        return r;
                /* GPU and memory summaries (sampler.h), by scope */
                r = sample_store_attempt_json(db, sqlite3_column_int64(s, 0), &samples);
                if (r < 0)
                        return r;
                if (samples)
                        json_object_set_new(t, "samples", samples);
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(a);
        return 0;
}

/*
 * A run's summary and the attempt it shows: the one running, or for a
 * finished run the one its result is from (migration 003), whose levels come
 * with it; a queued run shows none (its history is in show rRUN).
 */
#define RUN_COLUMNS                                                                                         \
        "r.id, r.job_id, r.seq, r.config_key, r.config_hash, r.config, r.reasons, r.expect_fail, r.state, " \
        "r.attempts, r.result, r.queued_at, a.outcome, a.crash_class, a.started_at, a.finished_at, a.id, "  \
        "a.n, r.cancelled_at"
#define RUN_FROM                                                                                            \
        " FROM runs r LEFT JOIN attempts a ON a.run_id = r.id AND a.n = CASE r.state WHEN 'running' "       \
        "THEN r.attempts WHEN 'done' THEN r.result_attempt END "

/* The run's snapshot as the runner got it: the job's shared part with the run's own on top. */
static int run_spec_json(struct mx_db *db, int64_t run, json_t **ret)
{
        static const char sql[] =
                "SELECT s.spec, b.spec FROM runs r JOIN jobs j ON j.id = r.job_id "
                "JOIN snapshots s ON s.id = r.snapshot LEFT JOIN snapshots b ON b.id = j.snapshot "
                "WHERE r.id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(run));

        if (r < 0)
                return r;
        if (r == 0) {
                *ret = json_null();
                return 0;
        }
        *ret = spec_merge(s, 1, 0);
        return 0;
}

static int run_row_json(struct mx_db *db, sqlite3_stmt *s, bool details, json_t **ret)
{
        /* RUN_COLUMNS' keys up to a.id (the columns' types tell integers from text) */
        static const char *const keys[] = { "id",          "job",        "seq",       "config_key",
                                            "config_hash", "json:config", "json:reasons", "expect_fail",
                                            "state",       "attempts",   "result",    "queued_at",
                                            "outcome",     "crash_class", "started_at", "finished_at",
                                            NULL };
        _cleanup_(json_decrefp) json_t *j = db_row_json(s, keys);
        json_t *levels = NULL;
        int r;

        db_json_set_int(j, "result_attempt", s, 17);
        db_json_set_int(j, "cancelled_at", s, 18);
        if (sqlite3_column_type(s, 16) != SQLITE_NULL) {
                r = attempt_levels(db, sqlite3_column_int64(s, 16), &levels);
                if (r < 0)
                        return r;
        }
        json_object_set_new(j, "levels", levels ? levels : json_array());
        if (details) {
                json_t *attempts = NULL, *spec = NULL;

                r = run_spec_json(db, sqlite3_column_int64(s, 0), &spec);
                if (r < 0)
                        return r;
                json_object_set_new(j, "spec", spec);
                r = run_attempts(db, sqlite3_column_int64(s, 0), &attempts);
                if (r < 0)
                        return r;
                json_object_set_new(j, "attempt_history", attempts);
        }
        *ret = TAKE_PTR(j);
        return 0;
}

int queue_run_json(struct mx_db *db, int64_t run, bool with_details, json_t **ret)
{
        static const char sql[] = "SELECT " RUN_COLUMNS RUN_FROM "WHERE r.id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(run));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        return run_row_json(db, s, with_details, ret);
}

int queue_job_run_seq(struct mx_db *db, int64_t job, int64_t run, int64_t *ret_seq)
{
        static const char sql[] = "SELECT seq FROM runs WHERE id = ? AND job_id = ?";

        return db_one_int(db, sql, ret_seq, DB_INT(run), DB_INT(job));
}

int queue_job_runs_json(struct mx_db *db, int64_t job, int64_t after_seq, int limit, json_t **ret,
                        int64_t *ret_last_seq, bool *ret_more)
{
        /* One row past the page says whether there is more; (job_id, seq) is the UNIQUE index. */
        static const char sql[] = "SELECT " RUN_COLUMNS RUN_FROM "WHERE r.job_id = ? AND r.seq > ? "
                                  "ORDER BY r.seq LIMIT ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *a = json_array();
        int r = db_stmt(db, sql, &s), rc;
        int64_t last = after_seq;
        bool more = false;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        db_bind_int64(s, 2, after_seq);
        db_bind_int64(s, 3, limit > 0 ? (int64_t)limit + 1 : -1);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                json_t *j = NULL;

                if (limit > 0 && (int)json_array_size(a) == limit) {
                        more = true;
                        continue; /* let the statement finish */
                }
                r = run_row_json(db, s, false, &j);
                if (r < 0)
                        return r;
                last = sqlite3_column_int64(s, 2);
                json_array_append_new(a, j);
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(a);
        if (ret_last_seq)
                *ret_last_seq = last;
        if (ret_more)
                *ret_more = more;
        return 0;
}

/*
 * The candidates of list, newest first, by state filter. Active ones (queued,
 * running) come from the partial index on job_counts, so a page costs the
 * same whether 10 or 100 000 finished jobs lie between them; finished ones
 * (done, cancelled) are the jobs with no active counts; no filter: all jobs.
 */
static const char list_sql_active[] =
        "SELECT " JOB_COLUMNS " FROM job_counts c INDEXED BY job_counts_active "
        "JOIN jobs j ON j.id = c.job_id WHERE c.state IN ('queued', 'running') AND c.n > 0 "
        "AND c.job_id < ? AND (? OR j.uid = ?) GROUP BY c.job_id ORDER BY c.job_id DESC";
static const char list_sql_finished[] =
        "SELECT " JOB_COLUMNS " FROM jobs j WHERE id < ? AND (? OR uid = ?) "
        "AND (cancelled_at IS NOT NULL) = ? AND NOT EXISTS (SELECT 1 FROM job_counts c "
        "WHERE c.job_id = j.id AND c.state IN ('queued', 'running') AND c.n > 0) ORDER BY id DESC";
static const char list_sql_all[] =
        "SELECT " JOB_COLUMNS " FROM jobs WHERE id < ? AND (? OR uid = ?) ORDER BY id DESC";

static int list_stmt(struct mx_db *db, const struct queue_list_filter *f, const char *want,
                     sqlite3_stmt **ret)
{
        bool active = want && (streq(want, "active") || streq(want, "queued") || streq(want, "running"));
        bool finished = want && (streq(want, "done") || streq(want, "cancelled"));
        int r = db_stmt(db, active ? list_sql_active : finished ? list_sql_finished : list_sql_all, ret);

        if (r < 0)
                return r;
        db_bind_int64(*ret, 1, f->before > 0 ? f->before : INT64_MAX);
        db_bind_int64(*ret, 2, !f->has_uid);
        db_bind_int64(*ret, 3, f->has_uid ? (int64_t)f->uid : -1);
        if (finished)
                db_bind_int64(*ret, 4, streq(want, "cancelled"));
        return 0;
}

static bool list_state_matches(const char *want, const char *st)
{
        return !want || streq(want, st) ||
               (streq(want, "active") && (streq(st, "queued") || streq(st, "running")));
}

int queue_list_json(struct mx_db *db, const struct queue_list_filter *f, json_t **ret_jobs, bool *ret_more)
{
        const char *want = f->state && !streq(f->state, "all") ? f->state : NULL;
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *a = json_array();
        int limit = f->limit > 0 ? f->limit : 50, r = list_stmt(db, f, want, &s), rc;
        bool more = false;

        if (r < 0)
                return r;
        /* The statements stream in id order, so stepping stops after one job past the page. */
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                json_t *j = NULL;

                r = job_row_json(db, s, &j);
                if (r < 0)
                        return r;
                if (!list_state_matches(want, json_string_value(json_object_get(j, "state")))) {
                        json_decref(j); /* queued or running, of the active candidates */
                        continue;
                }
                if ((int)json_array_size(a) == limit) {
                        json_decref(j);
                        more = true;
                        break;
                }
                json_array_append_new(a, j);
        }
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return db_errno(db, rc);
        *ret_jobs = TAKE_PTR(a);
        *ret_more = more;
        return 0;
}

int queue_counts_json(struct mx_db *db, json_t **ret)
{
        /* user_counts and user_jobs (migration 002): a few rows per user, not a visit to every run and job. */
        static const char sql[] = "SELECT state, result, sum(n) FROM user_counts WHERE n > 0 GROUP BY 1, 2";
        static const char jobs_sql[] = "SELECT coalesce(sum(n), 0) FROM user_jobs";
        _cleanup_stmt_ sqlite3_stmt *s = NULL, *js = NULL;
        _cleanup_(json_decrefp) json_t *c = json_pack("{s:i,s:i,s:i}", "queued", 0, "running", 0, "done", 0);
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                (void)counts_add_row(c, s);
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        r = db_stmt(db, jobs_sql, &js);
        if (r < 0)
                return r;
        if (sqlite3_step(js) == SQLITE_ROW)
                json_object_set_new(c, "jobs", json_integer(sqlite3_column_int64(js, 0)));
        *ret = TAKE_PTR(c);
        return 0;
}

int queue_attempt_log_path(struct mx_db *db, int64_t run, int n, char **ret_path, int *ret_n,
                           char **ret_outcome)
{
        static const char sql[] = "SELECT a.log_path, a.n, a.outcome FROM attempts a JOIN runs r ON r.id = a.run_id "
                                  "WHERE a.run_id = ? AND a.n = CASE WHEN ? > 0 THEN ? ELSE r.attempts END";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        int r = db_one_row(db, sql, &s, DB_INT(run), DB_INT(n), DB_INT(n));

        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        *ret_path = db_column_strdup(s, 0);
        *ret_n = sqlite3_column_int(s, 1);
        if (ret_outcome)
                *ret_outcome = db_column_strdup(s, 2);
        return 0;
}

/*
 * How far a job has got, for follow's progress line and status: when its first
 * attempt started, how many finished runs ran and the time their attempts
 * took (the ETA's mean), and when the attempt in flight started. One pass over
 * the job's runs and their attempts, through runs_job and attempts(run_id, n).
 */
int queue_job_progress(struct mx_db *db, int64_t job, json_t **ret)
{
        static const char sql[] =
                "SELECT min(a.started_at), "
                "count(DISTINCT CASE WHEN r.state = 'done' THEN r.id END), "
                "sum(CASE WHEN r.state = 'done' AND a.finished_at IS NOT NULL "
                "THEN a.finished_at - a.started_at END), "
                "max(CASE WHEN a.finished_at IS NULL THEN a.started_at END) "
                "FROM runs r JOIN attempts a ON a.run_id = r.id WHERE r.job_id = ?";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *p = json_object();
        int r = db_one_row(db, sql, &s, DB_INT(job));

        if (r <= 0)
                return r;
        db_json_set_int(p, "started_at", s, 0);
        json_object_set_new(p, "timed_runs", json_integer(sqlite3_column_int64(s, 1)));
        json_object_set_new(p, "timed_us", json_integer(sqlite3_column_int64(s, 2)));
        db_json_set_int(p, "running_since", s, 3);
        *ret = TAKE_PTR(p);
        return 0;
}

int queue_duration_stats(struct mx_db *db, json_t **ret)
{
        static const char levels_sql[] =
                "SELECT l.level, count(*), avg(l.finished_at - l.started_at) FROM levels l "
                "WHERE l.verdict <> 'skipped' AND l.attempt_id IN (SELECT id FROM attempts "
                "WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT ?) GROUP BY l.level";
        static const char outcomes_sql[] =
                "SELECT a.outcome, count(*), avg(a.finished_at - a.started_at), "
                "avg(a.finished_at - a.started_at - coalesce((SELECT sum(l.finished_at - l.started_at) "
                "FROM levels l WHERE l.attempt_id = a.id AND l.verdict <> 'skipped'), 0)) "
                "FROM (SELECT id, outcome, started_at, finished_at FROM attempts WHERE finished_at IS NOT NULL "
                "AND outcome IN ('completed', 'crashed') ORDER BY id DESC LIMIT ?) a GROUP BY a.outcome";
        _cleanup_(json_decrefp) json_t *o = json_pack("{s:{},s:{}}", "levels", "outcomes");
        const char *sqls[] = { levels_sql, outcomes_sql };
        const char *keys[] = { "levels", "outcomes" };
        int rc;

        for (size_t q = 0; q < ELEMENTSOF(sqls); q++) {
                _cleanup_stmt_ sqlite3_stmt *s = NULL;
                int r = db_stmt(db, sqls[q], &s);

                if (r < 0)
                        return r;
                db_bind_int64(s, 1, QUEUE_DURATION_ATTEMPTS);
                while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                        json_t *e = json_pack("{s:I,s:I}", "n", (json_int_t)sqlite3_column_int64(s, 1), "mean_us",
                                              (json_int_t)sqlite3_column_double(s, 2));

                        if (q == 1)
                                json_object_set_new(e, "overhead_us",
                                                    json_integer((json_int_t)MX_MAX(sqlite3_column_double(s, 3), 0)));
                        json_object_set_new(json_object_get(o, keys[q]), (const char *)sqlite3_column_text(s, 0), e);
                }
                if (rc != SQLITE_DONE)
                        return db_errno(db, rc);
        }
        *ret = TAKE_PTR(o);
        return 0;
}

/* ---- evidence for success criteria and gates (matrix/analysis/criteria.h) ---- */

/*
 * What criteria.c and summary.c read of each level, taken out of the stored
 * metrics by SQLite so that an L4 document of many KB is never loaded whole:
 * L4's results, its memory, and per benchmark row only what show JOB's summary
 * prints (kind, sizes, the t/s mean, population std and n).
 */
#define BOOL_AT(path)                                                                                       \
        "CASE json_type(l.metrics, '" path "') WHEN 'true' THEN json('true') "                              \
        "WHEN 'false' THEN json('false') END"
static const char evidence_sql[] =
        "SELECT r.id, r.seq, r.reasons, r.expect_fail, r.state, a.outcome, a.crash_class, "
        "json_extract(s.summary, '$.memory.peak'), l.level, l.verdict, l.message, "
        "CASE WHEN l.level = 'L4' THEN json_object("
        "'results', json_extract(l.metrics, '$.results'), 'ready_s', json_extract(l.metrics, '$.ready_s'), "
        "'memory_peak_bytes', json_extract(l.metrics, '$.memory.peak'), "
        "'memory_figure', json_extract(l.metrics, '$.memory.figure'), "
        "'memory_kinds', json_extract(l.metrics, '$.memory.kinds'), "
        "'valid', " BOOL_AT("$.valid") ", "
        "'rows', json((SELECT json_group_array(json_object('kind', json_extract(t.value, '$.kind'), "
        "'depth', json_extract(t.value, '$.depth'), 'pp', json_extract(t.value, '$.pp'), "
        "'tg', json_extract(t.value, '$.tg'), 'n', json_extract(t.value, '$.tps.n'), "
        "'mean', json_extract(t.value, '$.tps.mean'), 'std', json_extract(t.value, '$.tps.std'))) "
        "FROM json_each(l.metrics, '$.tests') t))) "
        "WHEN l.level = 'L1.5' THEN json_object('kernel_evidence', " BOOL_AT("$.kernels.evidence") ") "
        "WHEN l.level = 'L3' THEN json_object('failures', json_extract(l.metrics, '$.failures')) "
        "WHEN l.level = 'L1' THEN json_object('ready_s', json_extract(l.metrics, '$.ready_s')) END , json_extract(s.summary, '$.unified'), "
        "r.result, r.config_key "
        /* The attempt show gives (RUN_FROM): a queued run has none, a done one the one its result is from. */
        "FROM runs r LEFT JOIN attempts a ON a.run_id = r.id AND a.n = CASE r.state WHEN 'running' "
        "THEN r.attempts WHEN 'done' THEN r.result_attempt END "
        "LEFT JOIN samples s ON s.attempt_id = a.id AND s.scope = 'run' "
        "LEFT JOIN levels l ON l.attempt_id = a.id WHERE r.job_id = ? ORDER BY r.seq, l.id";
#undef BOOL_AT

int queue_job_evidence_json(struct mx_db *db, int64_t job, json_t **ret)
{
        static const char *const keys[] = { "run", "seq", "json:reasons", "expect_fail", "state", "outcome",
                                            "crash_class", "sample_peak_bytes", NULL };
        static const char *const tail[] = { "result", "config_key", NULL };
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *a = json_array();
        json_t *run = NULL;
        int r = db_stmt(db, evidence_sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_int64(s, 1, job);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                json_t *l;

                if (!run || json_integer_value(json_object_get(run, "run")) != sqlite3_column_int64(s, 0)) {
                        run = db_row_json(s, keys);
                        for (size_t k = 0; tail[k]; k++)
                                db_json_set_text(run, tail[k], s, 13 + (int)k);
                        json_object_set_new(run, "levels", json_object());
                        /* which kind the sampler's peak is: the system's on unified memory, else the GPU's */
                        if (sqlite3_column_type(s, 12) != SQLITE_NULL)
                                json_object_set_new(run, "sample_unified",
                                                    json_boolean(sqlite3_column_int(s, 12) != 0));
                        json_array_append_new(a, run);
                }
                if (sqlite3_column_type(s, 8) == SQLITE_NULL)
                        continue;
                l = db_column_json(s, 11);
                if (!json_is_object(l)) {
                        json_decref(l);
                        l = json_object();
                }
                db_json_set_text(l, "verdict", s, 9);
                db_json_set_text(l, "message", s, 10);
                json_object_set_new(json_object_get(run, "levels"), (const char *)sqlite3_column_text(s, 8),
                                    l);
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(a);
        return 0;
}

int queue_feature_jobs_json(struct mx_db *db, const char *matrix_path, size_t per_feature, json_t **ret)
{
        static const char sql[] = "SELECT id, feature FROM jobs WHERE matrix_path = ? "
                                  "AND feature IS NOT NULL ORDER BY id DESC";
        _cleanup_stmt_ sqlite3_stmt *s = NULL;
        _cleanup_(json_decrefp) json_t *o = json_object();
        int r = db_stmt(db, sql, &s), rc;

        if (r < 0)
                return r;
        db_bind_text(s, 1, matrix_path);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                const char *f = (const char *)sqlite3_column_text(s, 1);
                json_t *ids = json_object_get(o, f);

                if (!ids) {
                        ids = json_array();
                        json_object_set_new(o, f, ids);
                }
                if (json_array_size(ids) < per_feature)
                        json_array_append_new(ids, json_integer(sqlite3_column_int64(s, 0)));
        }
        if (rc != SQLITE_DONE)
                return db_errno(db, rc);
        *ret = TAKE_PTR(o);
        return 0;
}
