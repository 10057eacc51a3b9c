/* SPDX-License-Identifier: MIT */
/*
 * Streaming methods: follow (a job's events until all its runs are done),
 * logs (a run's server log, and with follow, what it appends until the run
 * ends) and show JOB (a page of a job's runs, in batches: pager.h).
 * Subscribers are woken by the scheduler's watch (main.c wires it), never by
 * polling; a slow reader pauses its stream until its output buffer drains.
 */
#include "stream.h"
#include "gates.h"
#include "control.h"
#include "log.h"
#include "bisect.h"
#include "pager.h"
#include "queue.h"

#include <fcntl.h>
#include <inttypes.h>

#define STREAM_CHUNK (64 * 1024)
#define FOLLOW_BATCH 500 /* events read from the database at a time */
#define SHOW_BATCH 200   /* runs read and sent at a time: ~110 KB of JSON */
#define SHOW_PAGE 1000   /* runs of a show JOB page unless the client asks for another size */

struct follow {
        struct mx_request *req;
        int64_t job;
        int64_t last_event;
        bool progress_due; /* events went out since the last progress item */
        struct follow *next;
};

struct logsub {
        struct mx_request *req;
        int64_t run;
        int attempt; /* 0: the latest, resolved when the log appears */
        bool follow;
        int fd;
        uint64_t sent;
        char *carry; /* bytes of an incomplete UTF-8 sequence */
        size_t n_carry;
        struct logsub *next;
};

struct mx_streams {
        struct follow *follows;
        struct logsub *logs;
};

static struct mx_streams *streams(struct mx_daemon *d)
{
        if (!d->streams)
                d->streams = xcalloc(1, sizeof(struct mx_streams));
        return d->streams;
}

void stream_free_all(struct mx_daemon *d)
{
        /* Requests belong to their connections, which control_free() closes first. */
        free(d->streams);
        d->streams = NULL;
}

/* ---- follow ---- */

static void follow_unlink(struct mx_daemon *d, struct follow *f)
{
        for (struct follow **p = &streams(d)->follows; *p; p = &(*p)->next)
                if (*p == f) {
                        *p = f->next;
                        break;
                }
        free(f);
}

static void follow_closed(struct mx_request *req, void *ud)
{
        follow_unlink(req->d, ud);
}

static void follow_drain_cb(struct mx_request *req, void *ud);

/*
 * Send events newer than the last one sent; end the stream once the job is
 * over. Returns true if ended. A long history waits for the reader (as logs
 * do): sent at once it would exceed the output limit and drop the client.
 */
static bool follow_pump(struct follow *f)
{
        struct mx_daemon *d = f->req->d;
        _cleanup_json_ json_t *job = NULL, *progress = NULL;
        const char *state;
        int r;

        for (;;) {
                _cleanup_json_ json_t *events = NULL;
                size_t i;
                json_t *e;

                r = queue_events(d->db, f->job, f->last_event, FOLLOW_BATCH, &events);
                if (r < 0) {
                        request_error_errno(f->req, r, "follow");
                        return true;
                }
                json_array_foreach (events, i, e) {
                        if (request_output_pending(f->req) > d->cfg.limits.output_bytes / 4) {
                                request_on_drain(f->req, follow_drain_cb, f);
                                return false;
                        }
                        f->last_event = json_integer_value(json_object_get(e, "id"));
                        request_stream(f->req, e);
                        f->progress_due = true;
                }
                if (json_array_size(events) < FOLLOW_BATCH)
                        break;
        }
        r = queue_job_json(d->db, f->job, &job);
        if (r >= 0)
                r = queue_job_progress(d->db, f->job, &progress);
        if (r < 0) {
                request_error_errno(f->req, r, "follow");
                return true;
        }
        json_object_set_new(progress, "paused", json_boolean(d->paused)); /* no ETA while paused */
        json_object_set(job, "progress", progress);
        state = json_string_value(json_object_get(job, "state"));
        if (streq(state, "queued") || streq(state, "running")) {
                /*
                 * Not stored: the job's counts and timing after what was just sent, for the
                 * client's progress line (one per batch, not per event).
                 */
                if (f->progress_due) {
                        _cleanup_json_ json_t *item = NULL;

                        if (request_output_pending(f->req) > d->cfg.limits.output_bytes / 4) {
                                request_on_drain(f->req, follow_drain_cb, f);
                                return false;
                        }
                        item = json_pack("{s:s,s:I,s:O}", "kind", "progress", "at",
                                         (json_int_t)mx_now_real_us(), "job", job);
                        request_stream(f->req, item);
                        f->progress_due = false;
                }
                return false;
        }
        /* The end of follow: the answer on one screen, as show JOB prints it (gates.h). */
        {
                json_t *criteria = NULL, *summary = NULL;

                gates_job_answer(d, job, &criteria, &summary);
                json_object_set_new(job, "criteria", criteria);
                json_object_set_new(job, "summary", summary);
        }
        request_reply(f->req, TAKE_PTR(job));
        return true;
}

static void follow_drain_cb(struct mx_request *req, void *ud)
{
        struct mx_daemon *d = req->d; /* the pump may end (free) the request */

        request_on_drain(req, NULL, NULL);
        if (follow_pump(ud))
                follow_unlink(d, ud);
}

void stream_follow_start(struct mx_request *req, int64_t job)
{
        struct follow *f;
        uid_t owner;
        int r = queue_job_owner(req->d->db, job, &owner);

        if (r < 0) {
                request_error_errno(req, r, "follow");
                return;
        }
        f = xcalloc(1, sizeof(*f));
        f->req = req;
        f->job = job;
        request_keep(req, follow_closed, f);
        if (follow_pump(f)) {
                free(f);
                return;
        }
        f->next = streams(req->d)->follows;
        streams(req->d)->follows = f;
}

void stream_job_changed(struct mx_daemon *d, int64_t job)
{
        struct follow *f = streams(d)->follows, *next;

        bisect_poke(d->bisect); /* a bisection's step may be in: it goes on from the loop */
        for (; f; f = next) {
                next = f->next;
                if (f->job == job && follow_pump(f))
                        follow_unlink(d, f);
        }
}

/* ---- logs ---- */

static void logsub_unlink(struct mx_daemon *d, struct logsub *l)
{
        for (struct logsub **p = &streams(d)->logs; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
        if (l->fd >= 0)
                close(l->fd);
        free(l->carry);
        free(l);
}

static void logsub_closed(struct mx_request *req, void *ud)
{
        logsub_unlink(req->d, ud);
}

/* Is the run finished (state done)? For runs that never got an attempt. */
static bool run_is_done(struct mx_daemon *d, int64_t run)
{
        _cleanup_json_ json_t *j = NULL;

        return queue_run_json(d->db, run, false, &j) >= 0 &&
               streq_ptr(json_string_value(json_object_get(j, "state")), "done");
}

/*
 * Open the attempt's log if it exists yet. *ret_missing: no log to read (yet);
 * *ret_over: the attempt (or the run, if it never started) has ended.
 */
static int logsub_open(struct logsub *l, char **ret_outcome, bool *ret_missing, bool *ret_over)
{
        _cleanup_free_ char *path = NULL;
        int n = 0, r;

        *ret_missing = true;
        *ret_over = false;
        r = queue_attempt_log_path(l->req->d->db, l->run, l->attempt, &path, &n, ret_outcome);
        if (r == -ENOENT) {
                *ret_over = run_is_done(l->req->d, l->run);
                return 0;
        }
        if (r < 0)
                return r;
        l->attempt = n;
        *ret_over = *ret_outcome != NULL;
        if (!path)
                return 0;
        if (l->fd < 0) {
                l->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (l->fd < 0)
                        return errno == ENOENT ? 0 : -errno;
                if (lseek(l->fd, (off_t)l->sent, SEEK_SET) < 0)
                        return -errno;
        }
        *ret_missing = false;
        return 0;
}

/* Read one chunk and stream it; 0 at end of file. */
static ssize_t logsub_chunk(struct logsub *l)
{
        char buf[STREAM_CHUNK];
        _cleanup_free_ char *text = NULL, *joined = NULL;
        size_t used = 0, total;
        ssize_t n = read(l->fd, buf, sizeof(buf));
        _cleanup_json_ json_t *item = NULL;

        if (n <= 0)
                return n < 0 ? -errno : 0;
        l->sent += (uint64_t)n;
        total = l->n_carry + (size_t)n;
        joined = xmalloc(total);
        if (l->n_carry > 0)
                memcpy(joined, l->carry, l->n_carry);
        memcpy(joined + l->n_carry, buf, (size_t)n);
        text = mx_utf8_sanitize(joined, total, true, &used);
        free(l->carry);
        l->n_carry = total - used;
        l->carry = l->n_carry ? xstrndup(joined + used, l->n_carry) : NULL;
        item = json_pack("{s:s}", "data", text);
        request_stream(l->req, item);
        return n;
}

static void logsub_drain_cb(struct mx_request *req, void *ud);

/*
 * Stream what the log holds now. Ends the request when the attempt is over
 * (or at end of file without follow). Returns true when the request ended.
 */
static bool logsub_pump(struct logsub *l)
{
        struct mx_daemon *d = l->req->d;
        _cleanup_free_ char *outcome = NULL;
        bool missing, over;
        int r = logsub_open(l, &outcome, &missing, &over);

        if (r < 0) {
                request_error_errno(l->req, r, "logs");
                return true;
        }
        while (!missing) {
                ssize_t n;

                /* Flow control: resume from the drain callback. */
                if (request_output_pending(l->req) > d->cfg.limits.output_bytes / 4) {
                        request_on_drain(l->req, logsub_drain_cb, l);
                        return false;
                }
                n = logsub_chunk(l);
                if (n < 0) {
                        request_error_errno(l->req, (int)n, "logs");
                        return true;
                }
                if (n == 0)
                        break;
        }
        if (l->follow && !over)
                return false; /* wait for the scheduler's watch */
        request_reply(l->req, json_pack("{s:I,s:i,s:I,s:s?}", "run", (json_int_t)l->run, "attempt", l->attempt,
                                        "bytes", (json_int_t)l->sent, "outcome", outcome));
        return true;
}

static void logsub_drain_cb(struct mx_request *req, void *ud)
{
        struct mx_daemon *d = req->d; /* the pump may end (free) the request */
        struct logsub *l = ud;

        request_on_drain(req, NULL, NULL);
        if (logsub_pump(l))
                logsub_unlink(d, l);
}

void stream_logs_start(struct mx_request *req, int64_t run, int attempt, bool follow, int64_t tail)
{
        struct mx_daemon *d = req->d; /* the pump may end (free) the request */
        struct logsub *l;
        uid_t owner;
        int r = queue_run_owner(req->d->db, run, &owner, NULL);

        if (r < 0) {
                request_error_errno(req, r, "logs");
                return;
        }
        l = xcalloc(1, sizeof(*l));
        l->req = req;
        l->run = run;
        l->attempt = attempt;
        l->follow = follow;
        l->fd = -1;
        request_keep(req, logsub_closed, l);
        l->next = streams(req->d)->logs;
        streams(req->d)->logs = l;
        if (tail > 0) {
                _cleanup_free_ char *outcome = NULL;
                bool missing, over;
                off_t end;

                if (logsub_open(l, &outcome, &missing, &over) >= 0 && !missing &&
                    (end = lseek(l->fd, 0, SEEK_END)) >= 0) {
                        l->sent = end > tail ? (uint64_t)(end - tail) : 0;
                        (void)lseek(l->fd, (off_t)l->sent, SEEK_SET);
                }
        }
        if (logsub_pump(l))
                logsub_unlink(d, l);
}

static void logs_wake(struct mx_daemon *d, int64_t run)
{
        struct logsub *l = streams(d)->logs, *next;

        for (; l; l = next) {
                next = l->next;
                if (l->run == run && logsub_pump(l))
                        logsub_unlink(d, l);
        }
}

void stream_log_appended(struct mx_daemon *d, int64_t run)
{
        logs_wake(d, run);
}

void stream_run_finished(struct mx_daemon *d, int64_t run)
{
        logs_wake(d, run);
}

/* ---- show JOB ---- */

/*
 * The reply after the page's runs (pager.h): the job, whether runs follow the
 * page and the last one sent (the next page's after); with the last page, the
 * feature's success criteria and the per-configuration summary from the job's
 * runs (gates.h).
 */
static void show_reply(struct mx_request *req, json_t *job, int64_t after_run, bool more)
{
        json_t *criteria = json_null(), *summary = json_null();

        if (!more)
                gates_job_answer(req->d, job, &criteria, &summary);
        request_reply(req, json_pack("{s:O,s:b,s:o,s:o,s:o}", "job", job, "more", more, "after",
                                     after_run > 0 ? json_integer(after_run) : json_null(), "criteria", criteria,
                                     "summary", summary));
}

static const struct mx_pager_ops show_pager = {
        .what = "show",
        .batch = SHOW_BATCH,
        .page = SHOW_PAGE,
        .read = queue_job_runs_json,
        .reply = show_reply,
};

void stream_show_job_start(struct mx_request *req, int64_t job, int64_t after_run, int64_t limit)
{
        pager_start(req, &show_pager, job, after_run, limit);
}
