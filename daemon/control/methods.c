/* SPDX-License-Identifier: MIT */
/*
 * One handler per method of schema/protocol.json. Parameters arrive already
 * checked against the schema (types, bounds, required, one_of); handlers check
 * what the schema cannot (ownership, existence, limits that need the database)
 * and answer with request_reply() or request_error(). Every mutation is
 * committed before the reply.
 */
#include "methods.h"
#include "attribute.h"
#include "changes.h"
#include "gates.h"
#include "bisect-ctl.h"
#include "log.h"
#include "meta.h"
#include "report.h"
#include "scheduler.h"
#include "stream.h"
#include "submit.h"

#include <inttypes.h>

static int64_t param_int(struct mx_request *req, const char *name, int64_t def)
{
        json_t *v = json_object_get(req->params, name);

        return json_is_integer(v) ? json_integer_value(v) : def;
}

static bool param_bool(struct mx_request *req, const char *name)
{
        return json_is_true(json_object_get(req->params, name));
}

static void m_hello(struct mx_request *req)
{
        const struct mx_proto *p = mx_proto_get();
        int64_t want = param_int(req, "protocol", 0);
        struct mx_conn *conn = req->conn;

        if (want != p->version) {
                request_error(req, "protocol-mismatch",
                              "this mxmatrixd speaks protocol %d, the client %" PRId64
                              ": use matching mxmatrix and mxmatrixd versions",
                              p->version, want);
                control_hello_done(conn, false);
                return;
        }
        request_reply(req, json_pack("{s:i,s:s,s:s,s:i,s:b}", "protocol", p->version, "server", "mxmatrixd",
                                     "version", MX_VERSION, "uid", (int)req->uid, "admin", req->admin));
        control_hello_done(conn, true);
}

static void m_submit(struct mx_request *req)
{
        submit_handle(req);
}

/* Timing for the jobs under way (a run running or some done), for status's progress lines. */
static int status_progress(struct mx_daemon *d, json_t *jobs)
{
        size_t i;
        json_t *j;

        json_array_foreach (jobs, i, j) {
                json_t *c = json_object_get(j, "counts"), *p = NULL;
                json_int_t started = json_integer_value(json_object_get(c, "running")) +
                                     json_integer_value(json_object_get(c, "done"));
                int r;

                if (started == 0)
                        continue;
                r = queue_job_progress(d->db, json_integer_value(json_object_get(j, "id")), &p);
                if (r < 0)
                        return r;
                json_object_set_new(j, "progress", p);
                /* No ETA while paused; before the job's own first run ends, the stored attempts' mean. */
                json_object_set_new(p, "paused", json_boolean(d->paused));
                if (json_integer_value(json_object_get(p, "timed_runs")) == 0) {
                        _cleanup_(json_decrefp) json_t *stored = NULL;

                        if (queue_duration_stats(d->db, &stored) >= 0 &&
                            json_integer_value(json_object_get(
                                    json_object_get(json_object_get(stored, "outcomes"), "completed"), "n")) > 0)
                                json_object_set(p, "stored_run_us",
                                                json_object_get(json_object_get(json_object_get(stored, "outcomes"),
                                                                                "completed"),
                                                                "mean_us"));
                }
        }
        return 0;
}

static void m_status(struct mx_request *req)
{
        struct mx_daemon *d = req->d;
        struct queue_list_filter f = { .state = "active", .limit = 100 };
        _cleanup_json_ json_t *counts = NULL, *queue = NULL;
        json_t *current = sched_current_json(d->sched);
        bool more = false;
        int r;

        r = queue_counts_json(d->db, &counts);
        if (r >= 0)
                r = queue_list_json(d->db, &f, &queue, &more);
        if (r >= 0)
                r = status_progress(d, queue);
        if (r < 0) {
                json_decref(current);
                request_error_errno(req, r, "status");
                return;
        }
        request_reply(req, json_pack("{s:b,s:s?,s:{s:s,s:i,s:I,s:s?,s:b,s:s?,s:i},s:o,s:O,s:O,s:b}", "paused",
                                     d->paused, "pause_reason", d->paused ? d->pause_reason : NULL, "daemon", "version", MX_VERSION, "pid", (int)getpid(), "started_at",
                                     (json_int_t)d->started_at, "matrix", d->cfg.matrix_path, "matrix_loaded",
                                     d->matrix != NULL, "matrix_error", d->matrix_error, "clients",
                                     (int)control_n_connections(d->control),
                                     "current", current ? current : json_null(), "counts", counts, "queue", queue,
                                     "queue_more", more));
}

static void m_list(struct mx_request *req)
{
        struct queue_list_filter f = {
                .state = json_string_value(json_object_get(req->params, "state")),
                .has_uid = param_bool(req, "mine"),
                .uid = req->uid,
                .limit = (int)param_int(req, "limit", 50),
                .before = param_int(req, "before", 0),
        };
        json_t *jobs = NULL;
        bool more = false;
        int r = queue_list_json(req->d->db, &f, &jobs, &more);

        if (r < 0) {
                request_error_errno(req, r, "list");
                return;
        }
        request_reply(req, json_pack("{s:o,s:b}", "jobs", jobs, "more", more));
}

static void m_show(struct mx_request *req)
{
        int64_t job = param_int(req, "job", 0), run = param_int(req, "run", 0);
        json_t *a = NULL;
        int r;

        if (job > 0) {
                /* A page of the runs, streamed in batches (stream.c). */
                stream_show_job_start(req, job, param_int(req, "after", 0), param_int(req, "limit", 0));
                return;
        }
        if (json_object_get(req->params, "limit") || json_object_get(req->params, "after")) {
                request_error(req, "bad-request",
                              "--limit and --after page a job's runs: show JOB --limit N");
                return;
        }
        r = queue_run_json(req->d->db, run, true, &a);
        if (r >= 0)
                r = meta_attach_run(req->d->db, a);
        if (r < 0) {
                json_decref(a);
                request_error_errno(req, r, "show");
                return;
        }
        request_reply(req, json_pack("{s:o}", "run", a));
}

/* The attempt repro reproduces: the one asked for, else the latest that recorded its command. */
static json_t *repro_attempt(json_t *history, int64_t n)
{
        json_t *a, *found = NULL;
        size_t i;

        json_array_foreach (history, i, a) {
                int64_t an = json_integer_value(json_object_get(a, "n"));

                if (n > 0 ? an == n : json_is_object(json_object_get(a, "command")))
                        found = a;
        }
        return found;
}

static void m_repro(struct mx_request *req)
{
        int64_t run = param_int(req, "run", 0), n = param_int(req, "attempt", 0);
        _cleanup_(json_decrefp) json_t *a = NULL;
        json_t *att, *reply;
        int r = queue_run_json(req->d->db, run, true, &a);

        if (r < 0) {
                request_error_errno(req, r, "repro");
                return;
        }
        att = repro_attempt(json_object_get(a, "attempt_history"), n);
        if (n > 0 && !att) {
                request_error(req, "not-found", "r%" PRId64 " has no attempt %" PRId64, run, n);
                return;
        }
        reply = json_pack("{s:I, s:O?, s:O?, s:O}", "run", (json_int_t)run, "config_key",
                          json_object_get(a, "config_key"), "attempt", att ? json_object_get(att, "n") : NULL,
                          "command", att ? json_object_get(att, "command") : json_null());
        if (!json_is_object(json_object_get(reply, "command")))
                json_object_set_new(reply, "why",
                                    json_string(!json_array_size(json_object_get(a, "attempt_history"))
                                                        ? "the run has not started yet"
                                                : att ? "that attempt recorded no command (it did not start one, "
                                                        "or it predates mxmatrixd recording commands)"
                                                      : "no attempt recorded its command (none started one, or "
                                                        "they predate mxmatrixd recording commands)"));
        request_reply(req, reply);
}

/* Resolve the job or run a request names, check the caller may change it; *ret_job: the job. */
static int check_owner(struct mx_request *req, int64_t job, int64_t run, int64_t *ret_job)
{
        int64_t run_job = job;
        uid_t owner;
        int r = job > 0 ? queue_job_owner(req->d->db, job, &owner)
                        : queue_run_owner(req->d->db, run, &owner, &run_job);

        if (r < 0) {
                request_error_errno(req, r, req->method->name);
                return r;
        }
        if (!request_may_modify(req, owner)) {
                request_error(req, "permission-denied", "%s%" PRId64 " belongs to uid %u",
                              job > 0 ? "job " : "r", job > 0 ? job : run, (unsigned)owner);
                return -EPERM;
        }
        *ret_job = run_job;
        return 0;
}

static void m_cancel(struct mx_request *req)
{
        int64_t job = param_int(req, "job", 0), run = param_int(req, "run", 0), cancelled = 0, running = 0;
        int64_t owner_job = 0;
        int r;

        if (check_owner(req, job, run, &owner_job) < 0)
                return;
        r = queue_cancel(req->d->db, job, run, req->uid, &cancelled, &running);
        if (r == -ESTALE) {
                if (job > 0)
                        request_error(req, "invalid-state",
                                      "job %" PRId64 " has no queued or running run to cancel", job);
                else
                        request_error(req, "invalid-state", "r%" PRId64 " is not queued or running", run);
                return;
        }
        if (r < 0) {
                request_error_errno(req, r, "cancel");
                return;
        }
        log_info("uid %u cancelled %s%" PRId64 ": %" PRId64 " queued runs%s", (unsigned)req->uid,
                 job > 0 ? "job " : "r", job > 0 ? job : run, cancelled,
                 running ? ", stopping the running one" : "");
        if (running && !sched_cancel_run(req->d->sched, running)) {
                /* Recorded as running but not running here: nothing is stopped, so never answer "ok". */
                if (cancelled == 0) {
                        request_error(req, "invalid-state",
                                      "run %" PRId64 " is recorded as running but the daemon is not running it; "
                                      "it ends at the daemon's next start",
                                      running);
                        return;
                }
                running = 0;
        }
        sched_kick(req->d->sched); /* the queue shrank: STATUS= */
        /* A run's cancel can end its job too (its last queued run): followers must hear of it. */
        stream_job_changed(req->d, owner_job);
        request_reply(req, json_pack("{s:I,s:o}", "cancelled", (json_int_t)cancelled, "stopping",
                                     running ? json_integer(running) : json_null()));
}

static void set_paused(struct mx_request *req, bool paused)
{
        int r = queue_set_paused(req->d->db, paused, req->uid);

        if (r < 0) {
                request_error_errno(req, r, req->method->name);
                return;
        }
        req->d->paused = paused;
        free(req->d->pause_reason); /* a user's pause or resume replaces the daemon's reason */
        req->d->pause_reason = NULL;
        log_notice("queue %s by uid %u", paused ? "paused" : "resumed", (unsigned)req->uid);
        sched_kick(req->d->sched); /* resume starts the next run; pause shows in STATUS= */
        request_reply(req, json_pack("{s:b}", "paused", paused));
}

static void m_pause(struct mx_request *req)
{
        set_paused(req, true);
}

static void m_resume(struct mx_request *req)
{
        set_paused(req, false);
}

/* Why a retry of a job requeued nothing, from its counts in the vocabulary of status and list. */
static void retry_nothing(struct mx_request *req, int64_t job, bool all)
{
        _cleanup_json_ json_t *j = NULL;
        _cleanup_free_ char *counts = NULL;
        json_t *c;

        if (queue_job_json(req->d->db, job, &j) < 0) {
                request_error(req, "invalid-state", "job %" PRId64 " has no run to retry", job);
                return;
        }
        c = json_object_get(j, "counts");
        counts = mx_result_counts_text(c, true);
        if (all)
                request_error(req, "invalid-state", "job %" PRId64 " has no finished run to retry (%s)", job,
                              counts);
        else
                request_error(req, "invalid-state",
                              "job %" PRId64 " has no finished run that failed (%s); "
                              "retry %" PRId64 " --all requeues every finished run",
                              job, counts, job);
}

static void m_retry(struct mx_request *req)
{
        int64_t job = param_int(req, "job", 0), run = param_int(req, "run", 0), n = 0, owner_job = 0, limit;
        int r;

        if (check_owner(req, job, run, &owner_job) < 0)
                return;
        /* Requeued runs wait like submitted ones: the same per-user limit, root exempt. */
        limit = req->uid != 0 ? req->d->cfg.limits.queued_runs_per_uid : 0;
        r = queue_retry(req->d->db, job, run, param_bool(req, "all"), req->uid, limit, &n);
        if (r == -ESTALE) {
                retry_nothing(req, job, param_bool(req, "all"));
                return;
        }
        if (r == -EBUSY) {
                request_error(req, "invalid-state",
                              "r%" PRId64 " is queued or running: only a finished run is retried", run);
                return;
        }
        if (r == -EDQUOT) {
                request_error(req, "limit-exceeded",
                              "retry would leave the owner of job %" PRId64 " with more than %" PRId64
                              " runs queued (limits.queued_runs_per_uid)",
                              owner_job, limit);
                return;
        }
        if (r < 0) {
                request_error_errno(req, r, "retry");
                return;
        }
        if (n > 0)
                sched_kick(req->d->sched);
        request_reply(req, json_pack("{s:I}", "requeued", (json_int_t)n));
}

static void m_logs(struct mx_request *req)
{
        stream_logs_start(req, param_int(req, "run", 0), (int)param_int(req, "attempt", 0), param_bool(req, "follow"),
                          param_int(req, "tail", 0));
}

static void m_follow(struct mx_request *req)
{
        stream_follow_start(req, param_int(req, "job", 0));
}

static void m_report(struct mx_request *req)
{
        report_start(req, param_int(req, "job", 0), param_int(req, "after", 0), param_int(req, "limit", 0));
}

static void m_reload(struct mx_request *req)
{
        _cleanup_free_ char *err = NULL;
        int r = req->hooks->reload_matrix(req->d, &err);

        if (r < 0) {
                request_error(req, "matrix-error", "%s", err ? err : strerror(-r));
                return;
        }
        request_reply(req, json_pack("{s:s}", "matrix", strempty(req->d->cfg.matrix_path)));
}

static void m_gates(struct mx_request *req)
{
        gates_method(req);
}

const struct mx_method methods_table[] = {
        { "hello", m_hello },   { "submit", m_submit }, { "status", m_status }, { "list", m_list },
        { "show", m_show },     { "cancel", m_cancel }, { "pause", m_pause },   { "resume", m_resume },
        { "retry", m_retry },   { "logs", m_logs },     { "follow", m_follow }, { "reload", m_reload },
        { "attribute", attribute_handle }, { "gates", m_gates }, { "report", m_report },
        { "repro", m_repro },   { "history", changes_method }, { "bisect", bisect_method },
        { NULL, NULL },
};
