/* SPDX-License-Identifier: MIT */
/*
 * The serial scheduler: picks the next run, starts its runner, times it out, cancels, shuts down;
 * reports to the watcher main.c wires.
 */
#include "scheduler.h"
#include "cgroup.h"
#include "l5confirm.h"
#include "executor.h"
#include "history.h"
#include "log.h"
#include "matrix.h"
#include "meta.h"
#include "recover.h"
#include "sampler.h"
#include "sample-store.h"
#include "proc-reaper.h"
#include "proc.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>

struct run_sampling;
static void run_sampling_free(struct run_sampling *rs);

struct current {
        int64_t job, run, attempt_id;
        int attempt;
        char *tag, *config_key, *run_dir;
        char *cgroup; /* the run's cgroup (cgroup.h), or NULL */
        json_t *spec, *levels;
        int64_t started_mono, started_real;
        const struct mx_runner_ops *ops;
        struct mx_runner *runner;
        char *level;     /* level being run, for status */
        bool stopping;   /* cancel() sent */
        bool ended;      /* finished() came (or the start failed); the outcome may still wait for the database */
        bool finished;   /* the outcome is recorded; free from the loop */
        char *storage_error; /* a write of this attempt failed: it ends as infra-error with this reason */
        struct run_sampling *sampling; /* GPU and memory of the whole attempt (scope "run"), or NULL */
        struct mx_history_db history; /* earlier results, for the levels that compare (L5) */
        int64_t confirm_of; /* an L5 confirmation start for that attempt (l5confirm.h); 0: none */
};

/*
 * A queue write for the running attempt. Every write the runner's callbacks
 * cause goes through one list, in order: when the database refuses one (disk
 * full), it and all later ones wait and are retried on a timer.
 */
enum write_kind {
        W_PROCESS, /* the server's identity, for recovery */
        W_LOG,     /* the captured log's path */
        W_LEVEL,   /* a level's verdict and its event */
        W_FINISH,  /* the attempt's outcome */
        W_SAMPLES, /* the attempt's GPU and memory summary (scope "run"), after its last sample */
        W_COMMAND, /* the command as started, placeholders expanded (show rN, repro) */
};

struct pending_write {
        enum write_kind kind;
        int64_t attempt_id, job, run;
        pid_t pid, pgid;
        uint64_t proc_start;
        char *text;              /* W_LOG: the path; W_LEVEL: the level */
        char *verdict, *message; /* W_LEVEL */
        int64_t started_at, finished_at;
        json_t *metrics, *artifacts, *detail; /* W_COMMAND: the command in detail */
        struct queue_finish finish; /* W_FINISH; crash_class and message are owned */
        bool quiet;                 /* W_FINISH of a failed start: already logged */
        struct mx_sample_summary *summary; /* W_SAMPLES */
        struct pending_write *next;
};

/* First retry of a refused write after this long, doubling up to the maximum. */
#define SCHED_RETRY_FIRST_MS 500
#define SCHED_RETRY_MAX_MS (30 * 1000)

/* STATUS= shows the running run's elapsed time; refresh it this often while nothing else changes. */
#define SCHED_STATUS_REFRESH_S 5
/* How often the health gate looks again while an earlier run's processes or memory settle. */
#define SCHED_GATE_RETRY_MS 200
/* The health command's output, in the state directory (the latest check's only). */
#define SCHED_HEALTH_LOG "health.log"

struct mx_sched {
        struct mx_daemon *d;
        struct event *kick_ev;
        struct event *status_ev; /* refreshes STATUS= while a run is active */
        struct event *reap_ev; /* frees a finished runner outside its own callback */
        struct event *timeout_ev;
        struct current *cur;
        void (*idle_cb)(void *);
        void *idle_ud;
        struct pending_write *writes, **writes_tail; /* in order; the head is the one refused */
        struct event *retry_ev;
        struct event *stop_ev; /* stops the run after a refused write, from the loop, not inside a callback */
        int64_t retry_ms;
        char *fault; /* the write the database refused and why; NULL while it takes writes */

        /* The health gate (sched_gate()): what the last run may have left, until verified gone. */
        char *prev_tag, *prev_cgroup;
        int64_t prev_run;
        struct event *gate_ev;  /* looks again while things settle */
        int64_t gate_deadline;  /* CLOCK_MONOTONIC µs when a failing check pauses the queue; 0: none failing */
        sched_health_fn health_fn;
        void *health_ud;
        pid_t hc_pid;           /* the matrix's health command while it runs */
        struct event *hc_timer; /* its time limit */
        bool hc_timed_out;
        bool hc_passed;         /* it passed: the next kick starts a run without running it again */
        struct run_sampling *closing; /* ended runs' samplers taking their last sample */

        struct mx_sched_watch watch; /* who hears of job changes, logs, run ends, STATUS= (main.c) */

        /* Another executor (executor.h) that owns the entry points; NULL: the local path below. */
        const struct mx_executor_ops *exec_ops;
        void *exec;
};

static void pending_write_free(struct pending_write *w)
{
        if (!w)
                return;
        free(w->text);
        free(w->verdict);
        free(w->message);
        json_decref(w->metrics);
        json_decref(w->artifacts);
        json_decref(w->detail);
        free((char *)w->finish.crash_class);
        free((char *)w->finish.message);
        free(w->summary);
        free(w);
}

static void *mfree(void *p)
{
        free(p);
        return NULL;
}

static void current_free(struct current *c)
{
        if (!c)
                return;
        if (c->runner)
                c->ops->free(c->runner);
        if (c->sampling)
                run_sampling_free(c->sampling);
        free(c->tag);
        free(c->config_key);
        free(c->run_dir);
        free(c->cgroup);
        free(c->level);
        free(c->storage_error);
        json_decref(c->spec);
        json_decref(c->levels);
        free(c);
}

static struct mx_log_ctx current_ctx(const struct current *c)
{
        return (struct mx_log_ctx){
                .job = c->job, .run = c->run, .attempt = c->attempt, .config = c->config_key, .level = c->level,
        };
}

char *sched_status_line(struct mx_sched *s)
{
        if (s->exec_ops)
                return s->exec_ops->status_line(s->exec);
        _cleanup_json_ json_t *counts = NULL;
        int64_t queued = 0;

        if (queue_counts_json(s->d->db, &counts) >= 0)
                queued = json_integer_value(json_object_get(counts, "queued"));
        _cleanup_free_ char *paused = !s->d->paused ? xstrdup("")
                                      : s->d->pause_reason ? xasprintf("paused (%s)", s->d->pause_reason)
                                                           : xstrdup("paused");

        if (!s->cur)
                return xasprintf("%s, %" PRId64 " queued", s->d->paused ? paused : "idle", queued);
        {
                _cleanup_free_ char *el = mx_format_duration(mx_now_mono_us() - s->cur->started_mono);
                return xasprintf("running r%" PRId64 " (%s, %s), %" PRId64 " queued%s%s", s->cur->run,
                                 s->cur->ended    ? "recording its outcome"
                                 : s->cur->level ? s->cur->level
                                                 : "starting",
                                 el, queued, s->d->paused ? ", " : "", paused);
        }
}

static void sched_update_status(struct mx_sched *s)
{
        _cleanup_free_ char *line = sched_status_line(s);

        s->watch.status(s->watch.ud, line);
}

/* ---- queue writes from the runner's callbacks: one path, retried while the database refuses ---- */

static void sched_flush(struct mx_sched *s);

static const char *write_what(const struct pending_write *w)
{
        switch (w->kind) {
        case W_PROCESS:
                return "the server's process identity";
        case W_LOG:
                return "the log's path";
        case W_LEVEL:
                return "a level's verdict";
        case W_FINISH:
                return "the outcome";
        case W_SAMPLES:
                return "the GPU and memory summary";
        case W_COMMAND:
                return "the command as started";
        }
        return "a write";
}

static struct pending_write *write_new(struct mx_sched *s, enum write_kind kind)
{
        struct pending_write *w = xcalloc(1, sizeof(*w));

        w->kind = kind;
        w->attempt_id = s->cur->attempt_id;
        w->job = s->cur->job;
        w->run = s->cur->run;
        return w;
}

/* Queue a write behind any that wait, and try them now unless the database is known to refuse. */
static void sched_write(struct mx_sched *s, struct pending_write *w)
{
        *s->writes_tail = w;
        s->writes_tail = &w->next;
        if (!s->fault || s->d->stopping)
                sched_flush(s);
}

static int write_apply(struct mx_sched *s, struct pending_write *w, char **ret_result)
{
        struct mx_db *db = s->d->db;
        int r;

        switch (w->kind) {
        case W_PROCESS:
                return queue_attempt_process(db, w->attempt_id, w->pid, w->pgid, w->proc_start);
        case W_LOG:
                return queue_attempt_log(db, w->attempt_id, w->text);
        case W_LEVEL: {
                struct queue_level l = {
                        .level = w->text, .verdict = w->verdict, .started_at = w->started_at,
                        .finished_at = w->finished_at, .metrics = w->metrics, .artifacts = w->artifacts,
                        .message = w->message,
                };

                /* Both are idempotent to repeat: the level row is replaced, the event only follows it. */
                r = queue_level_record(db, w->attempt_id, &l);
                if (r >= 0)
                        r = queue_event(db, w->job, w->run, "level-finished", -1, w->detail);
                return r;
        }
        case W_FINISH:
                return queue_attempt_finish(db, w->attempt_id, &w->finish, ret_result);
        case W_SAMPLES:
                return sample_store_summary(db, w->attempt_id, "run", w->summary);
        case W_COMMAND:
                return queue_attempt_command(db, w->attempt_id, w->detail);
        }
        return -EINVAL;
}

/* Persist a pause the daemon decided; a refused write is retried with the others. */
static void sched_pause(struct mx_sched *s, const char *reason);
static void storage_failed(struct mx_sched *s, const char *what, int64_t run, int r);

static void finish_recorded(struct mx_sched *s, const struct pending_write *w, const char *result)
{
        struct current *c = s->cur;
        const struct queue_finish *f = &w->finish;
        _cleanup_free_ char *el = mx_format_duration(mx_now_mono_us() - c->started_mono);
        _cleanup_free_ char *f_outcome = xasprintf("MXMATRIX_OUTCOME=%s", mx_outcome_to_string(f->outcome));
        _cleanup_free_ char *f_crash = f->crash_class ? xasprintf("MXMATRIX_CRASH_CLASS=%s", f->crash_class)
                                                       : NULL;
        const char *extra[] = { f_outcome, f_crash, NULL };
        struct mx_log_ctx ctx = current_ctx(c);

        ctx.level = NULL;
        if (w->quiet)
                ;
        else if (f->outcome == MX_OUTCOME_CRASHED)
                mx_log_full(LOG_WARNING, 0, MX_MSGID_RUN_CRASHED, &ctx, extra,
                            "run %" PRId64 " crashed (%s) after %s%s%s", c->run, strna(f->crash_class), el,
                            f->message ? ": " : "", strempty(f->message));
        else
                mx_log_full(f->outcome == MX_OUTCOME_COMPLETED ? LOG_INFO : LOG_WARNING, 0,
                            f->outcome == MX_OUTCOME_INTERRUPTED ? MX_MSGID_RUN_INTERRUPTED
                                                                 : MX_MSGID_RUN_FINISHED,
                            &ctx, extra, "run %" PRId64 " finished: %s, result %s, after %s%s%s", c->run,
                            mx_outcome_to_string(f->outcome),
                            f->requeue && !streq_ptr(result, "cancelled") ? "requeued" : strna(result), el,
                            f->message ? ": " : "", strempty(f->message));
        c->finished = true;
        s->watch.run_finished(s->watch.ud, c->run);
        s->watch.job_changed(s->watch.ud, c->job);
        event_active(s->reap_ev, EV_TIMEOUT, 1);
}

/* The database takes writes again: the pause the fault caused is stored (unless a user resumed since). */
static void storage_recovered(struct mx_sched *s)
{
        int r;

        if (s->d->paused) {
                r = queue_set_paused_reason(s->d->db, true, 0, s->d->pause_reason);
                if (r < 0)
                        return storage_failed(s, "the queue's pause", 0, r);
        }
        log_notice("the database takes writes again; every delayed write is recorded%s",
                   s->d->paused ? "; the queue stays paused until 'mxmatrix resume'" : "");
        free(s->fault);
        s->fault = NULL;
        s->retry_ms = 0;
        event_del(s->retry_ev);
        sched_update_status(s);
}

/*
 * A confirmation start ended: L5 of the attempt it serves is decided again
 * once its round is in (even while the queue is paused). A failure here is
 * not lost: the pick finds the round in and decides it.
 */
static void confirm_finished(struct mx_sched *s, const struct pending_write *w)
{
        int r = l5confirm_after_finish(s->d->db, w->attempt_id);

        if (r < 0)
                log_error_errno(r, "run %" PRId64 ": cannot decide L5 after its confirmation starts yet", w->run);
        else if (r > 0)
                s->watch.job_changed(s->watch.ud, w->job);
}

/* Write what waits, in order; stop at the first refusal. */
static void sched_flush(struct mx_sched *s)
{
        while (s->writes) {
                struct pending_write *w = s->writes;
                _cleanup_free_ char *result = NULL;
                int r = write_apply(s, w, &result);

                if (r < 0)
                        return storage_failed(s, write_what(w), w->run, r);
                s->writes = w->next;
                if (!s->writes)
                        s->writes_tail = &s->writes;
                if (w->kind == W_FINISH && s->cur && s->cur->attempt_id == w->attempt_id)
                        finish_recorded(s, w, result);
                if (w->kind == W_FINISH)
                        confirm_finished(s, w);
                pending_write_free(w);
        }
        if (s->fault)
                storage_recovered(s);
}

static void retry_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;

        (void)fd, (void)what;
        sched_flush(s);
}

/* Shutting down with writes the database refuses: leave the attempt open for the next start's recovery. */
static void storage_abandon(struct mx_sched *s)
{
        struct current *c = s->cur;

        log_error("stopping with %s unrecorded; the next start ends the attempt as interrupted",
                  s->writes ? write_what(s->writes) : "nothing");
        while (s->writes) {
                struct pending_write *w = s->writes;

                s->writes = w->next;
                pending_write_free(w);
        }
        s->writes_tail = &s->writes;
        if (c && c->ended && !c->finished) {
                c->finished = true;
                event_active(s->reap_ev, EV_TIMEOUT, 1);
        }
}

/*
 * The one path for a queue write the database refused (disk full, I/O error):
 * the running attempt is stopped and will end as infra-error, the queue is
 * paused with the reason (status, STATUS=, the journal), and the write is
 * retried with backoff until it succeeds, so no run is left without an outcome.
 */
static void storage_failed(struct mx_sched *s, const char *what, int64_t run, int r)
{
        struct current *c = s->cur;
        struct mx_log_ctx ctx = c ? current_ctx(c) : (struct mx_log_ctx){ .run = run };
        _cleanup_free_ char *why = run > 0 ? xasprintf("cannot record %s of run %" PRId64 ": %s", what, run,
                                                       strerror(-r))
                                           : xasprintf("cannot record %s: %s", what, strerror(-r));
        bool first = !s->fault;
        struct timeval tv;

        free(s->fault);
        s->fault = xstrdup(why);
        if (c && !c->storage_error)
                c->storage_error = xasprintf("the database refused a write (%s)", why);
        if (s->d->stopping)
                return storage_abandon(s);
        if (first) {
                free(s->d->pause_reason);
                s->d->pause_reason = xasprintf("the database refused a write: %s", why);
                s->d->paused = true;
                ctx.level = NULL;
                mx_log_full(LOG_ERR, 0, MX_MSGID_QUEUE_WRITE_FAILED, &ctx, NULL,
                            "%s; the queue is paused, %sthe write is retried until the database takes it",
                            why, c && !c->ended ? "the run is stopped and ends as infra-error, " : "");
        }
        if (c && !c->ended && !c->stopping)
                event_active(s->stop_ev, EV_TIMEOUT, 1);
        if (!evtimer_pending(s->retry_ev, NULL)) {
                s->retry_ms = s->retry_ms <= 0 ? SCHED_RETRY_FIRST_MS : MX_MIN(s->retry_ms * 2, SCHED_RETRY_MAX_MS);
                tv = (struct timeval){ .tv_sec = s->retry_ms / 1000, .tv_usec = (s->retry_ms % 1000) * 1000 };
                evtimer_add(s->retry_ev, &tv);
        }
        sched_update_status(s);
}

static void storage_stop_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;
        struct current *c = s->cur;

        (void)fd, (void)what;
        if (!c || c->ended || c->stopping || !c->storage_error)
                return;
        c->stopping = true;
        c->ops->cancel(c->runner, MX_OUTCOME_INFRA_ERROR);
}

static void sched_pause(struct mx_sched *s, const char *reason)
{
        int r;

        free(s->d->pause_reason);
        s->d->pause_reason = xstrdup(reason);
        s->d->paused = true;
        if (s->fault)
                return; /* stored once the database takes writes again (storage_recovered) */
        r = queue_set_paused_reason(s->d->db, true, 0, reason);
        if (r < 0)
                storage_failed(s, "the queue's pause", 0, r);
}

/*
 * The daemon pauses the queue itself: nothing more starts until someone has
 * looked at the machine and run 'mxmatrix resume'. The reason goes to the
 * database (status shows it, after a restart too) and to the journal.
 */
static void sched_pause_because(struct mx_sched *s, const char *msgid, const struct mx_log_ctx *ctx,
                                const char *reason)
{
        _cleanup_free_ char *field = xasprintf("MXMATRIX_REASON=%s", reason);
        const char *extra[] = { field, NULL };

        sched_pause(s, reason);
        mx_log_full(LOG_ERR, 0, msgid, ctx, extra,
                    "the queue is paused until someone checks the machine and runs 'mxmatrix resume': %s", reason);
        sched_update_status(s);
}

/*
 * The attempt's GPU and memory sampler (sampler.h): from before the server
 * starts to its end, at the sampler's default rate, over the processes of the
 * run (its tag). At the end one last sample is taken (a short run may end
 * before the first), then the summary is stored as the attempt's "run" scope
 * (show rRUN) and the sampler freed; levels read its latest sample (L3's
 * memory). A sampler that cannot be made (a gpu_source that does not load)
 * leaves the run without one: the health gate reports a broken GPU source.
 */
struct run_sampling {
        struct mx_sched *s;
        int64_t attempt_id, job, run;
        bool closing;
        struct mx_sampler *sampler;
        struct run_sampling *next; /* closing ones, in s->closing */
};

static void run_sampling_free(struct run_sampling *rs)
{
        mx_sampler_free(rs->sampler);
        free(rs);
}

static void run_sample_cb(struct mx_sampler *sampler, const struct mx_sample *sample, void *ud)
{
        struct run_sampling *rs = ud, **p;
        struct pending_write *w;

        (void)sample;
        if (!rs->closing)
                return;
        /* Through the writes' list like the attempt's other writes: a refused one waits and is retried. */
        w = xcalloc(1, sizeof(*w));
        w->kind = W_SAMPLES;
        w->attempt_id = rs->attempt_id;
        w->job = rs->job;
        w->run = rs->run;
        w->summary = xcalloc(1, sizeof(*w->summary));
        *w->summary = *mx_sampler_summary(sampler);
        sched_write(rs->s, w);
        for (p = &rs->s->closing; *p; p = &(*p)->next)
                if (*p == rs) {
                        *p = rs->next;
                        break;
                }
        run_sampling_free(rs);
}

static void run_sampler_begin(struct mx_sched *s, struct current *c)
{
        struct mx_sampler_opts o = { .nvml_path = s->d->cfg.nvml_library };
        struct proc_match m = { .tag = c->tag };
        struct run_sampling *rs = xcalloc(1, sizeof(*rs));
        _cleanup_free_ char *err = NULL;

        *rs = (struct run_sampling){ .s = s, .attempt_id = c->attempt_id, .job = c->job, .run = c->run };
        o.source = s->d->cfg.gpu_source ? mx_sample_source_from_string(s->d->cfg.gpu_source)
                                        : MX_SAMPLE_SOURCE_AUTO;
        if (mx_sampler_new(s->d->base, s->d->reaper, &o, run_sample_cb, rs, &rs->sampler, &err) < 0) {
                log_debug("run %" PRId64 " is not sampled: %s", c->run, strna(err));
                free(rs);
                return;
        }
        mx_sampler_set_tree(rs->sampler, &m, 0);
        (void)mx_sampler_start(rs->sampler);
        c->sampling = rs;
}

/* The run ended: its sampler takes a last sample, stores the summary and goes (run_sample_cb). */
static void run_sampler_end(struct mx_sched *s, struct current *c)
{
        struct run_sampling *rs = TAKE_PTR(c->sampling);

        if (!rs)
                return;
        mx_sampler_stop(rs->sampler);
        rs->closing = true;
        rs->next = s->closing;
        s->closing = rs;
        (void)mx_sampler_request(rs->sampler);
}

/* ---- runner callbacks ---- */

static void ev_process(void *ud, pid_t pid, pid_t pgid, uint64_t proc_start)
{
        struct mx_sched *s = ud;
        struct pending_write *w = write_new(s, W_PROCESS);

        w->pid = pid;
        w->pgid = pgid;
        w->proc_start = proc_start;
        sched_write(s, w);
}

static void ev_log_opened(void *ud, const char *path)
{
        struct mx_sched *s = ud;
        struct pending_write *w = write_new(s, W_LOG);

        w->text = xstrdup(path);
        sched_write(s, w);
}

static void ev_command(void *ud, json_t *command)
{
        struct mx_sched *s = ud;
        struct pending_write *w = write_new(s, W_COMMAND);

        w->detail = json_incref(command);
        sched_write(s, w);
}

static void ev_log_appended(void *ud)
{
        struct mx_sched *s = ud;

        s->watch.log_appended(s->watch.ud, s->cur->run);
}

static void ev_level_started(void *ud, const char *level)
{
        struct mx_sched *s = ud;
        struct mx_log_ctx ctx;

        /* The target runner announces L1 at the server's start (the ready wait is L1's) and again at the
         * completion: one level, one start. */
        if (streq_ptr(s->cur->level, level))
                return;
        free(s->cur->level);
        s->cur->level = xstrdup(level);
        ctx = current_ctx(s->cur);
        log_ctx(LOG_INFO, NULL, &ctx, "run %" PRId64 ": level %s started", s->cur->run, level);
        sched_update_status(s);
}

static void ev_level_finished(void *ud, const struct mx_level_result *lr)
{
        struct mx_sched *s = ud;
        struct pending_write *w = write_new(s, W_LEVEL);
        _cleanup_free_ char *verdict_field = xasprintf("MXMATRIX_VERDICT=%s", lr->verdict);
        const char *extra[] = { verdict_field, NULL };
        struct mx_log_ctx ctx = current_ctx(s->cur);

        w->text = xstrdup(lr->level);
        w->verdict = xstrdup(lr->verdict);
        w->message = lr->message ? xstrdup(lr->message) : NULL;
        w->started_at = lr->started_at;
        w->finished_at = lr->finished_at;
        w->metrics = json_incref(lr->metrics);
        w->artifacts = json_incref(lr->artifacts);
        w->detail = json_pack("{s:s,s:s,s:s?}", "level", lr->level, "verdict", lr->verdict, "message",
                              lr->message);
        ctx.level = lr->level;
        mx_log_full(LOG_INFO, 0, MX_MSGID_LEVEL_FINISHED, &ctx, extra, "run %" PRId64 ": %s %s%s%s",
                    s->cur->run, lr->level, lr->verdict, lr->message ? ": " : "", strempty(lr->message));
        sched_write(s, w);
        s->watch.job_changed(s->watch.ud, s->cur->job);
}

/*
 * The run is over: from now on nothing the daemon adopts is the run's, and
 * whatever of it is left is the health gate's to find. Its cgroup is killed
 * once more if anything is in it (the runner's stop already waited for
 * everything it found) and removed once empty.
 */
static void run_end(struct mx_sched *s, struct current *c)
{
        int r;

        proc_run_end();
        free(s->prev_tag);
        free(s->prev_cgroup);
        s->prev_tag = xstrdup(c->tag);
        s->prev_cgroup = TAKE_PTR(c->cgroup);
        s->prev_run = c->run;
        s->gate_deadline = 0;
        s->hc_passed = false;
        if (!s->prev_cgroup)
                return;
        r = cgroup_is_populated(s->prev_cgroup);
        if (r > 0)
                (void)cgroup_kill(s->prev_cgroup);
        else if (cgroup_remove(s->prev_cgroup) >= 0)
                s->prev_cgroup = mfree(s->prev_cgroup);
}

static void sched_reap_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;

        (void)fd, (void)what;
        if (!s->cur || !s->cur->finished)
                return;
        run_end(s, s->cur);
        current_free(s->cur);
        s->cur = NULL;
        event_del(s->status_ev);
        if (s->d->stopping) {
                if (s->idle_cb)
                        s->idle_cb(s->idle_ud);
                return;
        }
        sched_update_status(s);
        sched_kick(s);
}

/*
 * An interrupted run goes back to the queue, at most max_requeues times
 * (recover_requeue_allowed); under the pause policy it waits in a paused queue.
 * Sets f->requeue, or turns f into an infra-error with the reason.
 */
static void finish_requeues(struct mx_sched *s, struct pending_write *w)
{
        struct queue_finish *f = &w->finish;
        _cleanup_free_ char *why = NULL;

        if (f->outcome != MX_OUTCOME_INTERRUPTED)
                return;
        if (!recover_requeue_allowed(s->d, w->run, w->attempt_id, &why)) {
                f->outcome = MX_OUTCOME_INFRA_ERROR;
                free((char *)f->message);
                f->message = TAKE_PTR(why);
                return;
        }
        f->requeue = true;
        if (s->d->cfg.recovery == MX_RECOVERY_PAUSE && !s->d->paused)
                sched_pause(s, "a run was interrupted and the recovery policy is 'pause'");
}

/*
 * A run cut by the machine (a write refused: the disk full) measured nothing
 * of its own: it goes back to the queue, which the storage error paused, and
 * runs again once the cause is gone and the queue resumed; at most
 * max_requeues times, counting its interruptions, so a machine that keeps
 * failing cannot hold it forever.
 */
static void finish_machine_requeue(struct mx_sched *s, struct pending_write *w)
{
        struct queue_finish *f = &w->finish;
        int n = 0;
        char *m;

        if (queue_attempt_machine_failures(s->d->db, w->attempt_id, &n) < 0)
                n = 0; /* the database is what failed: the count is read again at the next end */
        if (n >= s->d->cfg.max_requeues) {
                m = xasprintf("%s; ended %d times because of the machine, not requeued again (max_requeues %d): "
                              "'mxmatrix retry' runs it once more",
                              strna(f->message), n + 1, s->d->cfg.max_requeues);
                free((char *)f->message);
                f->message = m;
                return;
        }
        f->requeue = true;
        m = xasprintf("%s; requeued: it runs again once the cause is gone and the queue is resumed",
                      strna(f->message));
        free((char *)f->message);
        f->message = m;
}

static void ev_finished(void *ud, const struct mx_run_result *res)
{
        struct mx_sched *s = ud;
        struct current *c = s->cur;
        struct pending_write *w = write_new(s, W_FINISH);
        bool storage = c->storage_error != NULL;

        run_sampler_end(s, c);
        w->finish = (struct queue_finish){
                .outcome = storage ? MX_OUTCOME_INFRA_ERROR : res->outcome,
                .crash_class = !storage && res->crash_class ? xstrdup(res->crash_class) : NULL,
                .message = storage ? xstrdup(c->storage_error) : res->message ? xstrdup(res->message) : NULL,
                .exit_status = res->exit_status, .exit_signal = res->exit_signal,
        };
        c->ended = true;
        event_del(s->timeout_ev);
        finish_requeues(s, w);
        if (storage)
                finish_machine_requeue(s, w);
        if (res->leftovers) {
                /* Like a node drained after a failed epilog: no run starts next to what is left. */
                struct mx_log_ctx ctx = current_ctx(c);
                _cleanup_free_ char *why =
                        xasprintf("run %" PRId64 " left processes that could not be killed", c->run);

                ctx.level = NULL;
                sched_pause_because(s, MX_MSGID_ORPHAN_KILLED, &ctx, why);
        }
        sched_write(s, w);
}

static void ev_metadata(void *ud, json_t *record, json_t *blobs)
{
        struct mx_sched *s = ud;
        int r = meta_store(s->d->db, s->cur->attempt_id, record, blobs);

        if (r < 0)
                log_error_errno(r, "cannot record the metadata of run %" PRId64, s->cur->run);
}

static const struct mx_run_events run_events = {

        .process = ev_process,
        .log_opened = ev_log_opened,
        .log_appended = ev_log_appended,
        .level_started = ev_level_started,
        .level_finished = ev_level_finished,
        .finished = ev_finished,
        .metadata = ev_metadata,
        .command = ev_command,
};

/* ---- starting runs ---- */

static char *new_tag(void)
{
        uint8_t b[16];
        struct mx_buf t = MX_BUF_INIT;

        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                mx_die("getrandom: %m");
        mx_buf_puts(&t, "mxr-");
        for (size_t i = 0; i < sizeof(b); i++)
                mx_buf_printf(&t, "%02x", b[i]);
        return mx_buf_steal(&t);
}

static int make_run_dir(struct mx_sched *s, struct current *c)
{
        _cleanup_free_ char *runs = xasprintf("%s/runs", s->d->cfg.state_dir);
        _cleanup_free_ char *run = xasprintf("%s/%" PRId64, runs, c->run);

        c->run_dir = xasprintf("%s/%d", run, c->attempt);
        if ((mkdir(runs, 0750) < 0 && errno != EEXIST) || (mkdir(run, 0750) < 0 && errno != EEXIST) ||
            (mkdir(c->run_dir, 0750) < 0 && errno != EEXIST))
                return -errno;
        return 0;
}

/* A time limit the run's matrix set (the snapshot's "settings"), else the daemon's flag. */
static int64_t spec_setting_ms(json_t *spec, const char *key, int64_t dflt)
{
        json_t *t = json_object_get(json_object_get(spec, "settings"), key);

        return json_is_integer(t) && json_integer_value(t) > 0 ? json_integer_value(t) : dflt;
}

static void start_timeout(struct mx_sched *s, struct current *c)
{
        int64_t ms = spec_setting_ms(c->spec, "run_timeout_ms", s->d->cfg.run_timeout_ms);
        json_t *t = json_object_get(c->spec, "run_timeout_ms");
        struct timeval tv;

        if (json_is_integer(t) && json_integer_value(t) > 0)
                ms = json_integer_value(t);
        tv = (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
        evtimer_add(s->timeout_ev, &tv);
}

/* A run that could not start at all ends at once as an infrastructure error. */
static void fail_start(struct mx_sched *s, struct current *c, int r, const char *why)
{
        struct pending_write *w = write_new(s, W_FINISH);
        struct mx_log_ctx ctx = current_ctx(c);

        mx_log_full(LOG_ERR, r, MX_MSGID_RUN_FINISHED, &ctx, NULL, "run %" PRId64 " could not start: %s", c->run,
                    why);
        w->finish = (struct queue_finish){ .outcome = MX_OUTCOME_INFRA_ERROR, .message = xstrdup(why),
                                           .exit_status = -1 };
        w->quiet = true;
        c->ended = true;
        sched_write(s, w);
}

/*
 * The run's containment, before anything of it starts: its own cgroup (named
 * by its tag, recorded in the attempt for recovery) where the daemon has
 * cgroups, and in any case every process the daemon adopts from now on is the
 * run's (proc.h). Without a cgroup the run still starts: the adopted children
 * and the tag sweep contain it, as before cgroups.
 */
static void run_begin(struct mx_sched *s, struct current *c, const struct mx_log_ctx *ctx)
{
        _cleanup_free_ char *err = NULL;
        int r;

        if (s->d->cgroup) {
                r = cgroup_create(s->d->cgroup, c->tag, &c->cgroup, &err);
                if (r < 0)
                        log_ctx(LOG_WARNING, NULL, ctx, "run %" PRId64 " gets no cgroup: %s", c->run, err);
                else if ((r = queue_attempt_cgroup(s->d->db, c->attempt_id, c->cgroup)) < 0)
                        log_error_errno(r, "cannot record the cgroup of run %" PRId64, c->run);
        }
        free(err);
        err = NULL;
        r = proc_run_begin(c->cgroup, &err);
        if (r < 0) {
                log_ctx(LOG_WARNING, NULL, ctx, "run %" PRId64 ": %s; it runs without a cgroup", c->run, err);
                if (c->cgroup)
                        (void)cgroup_remove(c->cgroup);
                c->cgroup = mfree(c->cgroup);
                proc_run_end();
                (void)proc_run_begin(NULL, NULL);
        }
}

static int start_next(struct mx_sched *s)
{
        struct queue_next next = {};
        struct current *c;
        _cleanup_free_ char *err = NULL;
        struct mx_run_ctx ctx;
        struct mx_log_ctx lctx;
        int r;

        r = queue_pick_next(s->d->db, &next);
        if (r < 0)
                return r;
        if (next.decide) {
                /* a round of L5 confirmation starts is in (a restart came between): decide, then pick again */
                int64_t job = next.job, run = next.run;

                r = l5confirm_decide(s->d->db, next.decide);
                queue_next_done(&next);
                if (r < 0) {
                        storage_failed(s, "an L5 decision", run, r);
                        return r;
                }
                if (r == 0) {
                        log_error("run %" PRId64 " waits for L5 confirmation starts that are not in", run);
                        return -ENOENT;
                }
                s->watch.job_changed(s->watch.ud, job);
                return start_next(s);
        }
        c = xcalloc(1, sizeof(*c));
        c->job = next.job;
        c->run = next.run;
        c->config_key = TAKE_PTR(next.config_key);
        c->spec = TAKE_PTR(next.spec);
        c->levels = TAKE_PTR(next.levels);
        c->tag = new_tag();
        c->confirm_of = next.confirm_of;
        if (next.confirm_row)
                r = queue_confirm_attempt_start(s->d->db, next.confirm_row, c->tag, s->d->boot_id, &c->attempt_id,
                                                &c->attempt);
        else
                r = queue_attempt_start(s->d->db, c->run, c->tag, s->d->boot_id, &c->attempt_id, &c->attempt);
        queue_next_done(&next);
        if (r < 0) {
                int64_t run = c->run;

                current_free(c);
                /* Nothing changed (one transaction); the queue pauses until the database takes writes. */
                storage_failed(s, "the start", run, r);
                return r;
        }
        c->started_mono = mx_now_mono_us();
        c->started_real = mx_now_real_us();
        s->cur = c;
        lctx = current_ctx(c);
        run_begin(s, c, &lctx);
        r = make_run_dir(s, c);
        if (r < 0) {
                fail_start(s, c, r, "cannot create the run directory");
                return 0;
        }
        c->ops = &runner_meta_ops; /* metadata first, then runner_for_spec(c->spec) */
        run_sampler_begin(s, c);
        mx_history_db_init(&c->history, s->d->db, c->attempt_id);
        ctx = (struct mx_run_ctx){
                .sampler = c->sampling ? c->sampling->sampler : NULL,
                .base = s->d->base, .reaper = s->d->reaper, .http = s->d->http, .job = c->job, .run = c->run,
                .attempt_id = c->attempt_id, .attempt = c->attempt, .tag = c->tag, .config_key = c->config_key,
                .run_dir = c->run_dir, .spec = c->spec, .levels = c->levels,
                .level_timeout_ms = spec_setting_ms(c->spec, "level_timeout_ms", s->d->cfg.level_timeout_ms),
                .log_max_bytes = s->d->cfg.limits.log_bytes,
                .history = &c->history.ops,
        };
        {
                /* the levels this attempt runs: a confirmation start's are L1, L1.5 when selected, and L4 */
                _cleanup_free_ char *lv = c->confirm_of ? json_dumps(c->levels, JSON_COMPACT) : NULL;

                mx_log_full(LOG_INFO, 0, MX_MSGID_RUN_STARTED, &lctx, NULL,
                            "run %" PRId64 " attempt %d started: %s%s%s%s", c->run, c->attempt, c->config_key,
                            c->confirm_of ? " (an L5 confirmation start: levels " : "", strempty(lv),
                            c->confirm_of ? ")" : "");
        }
        s->watch.job_changed(s->watch.ud, c->job);
        r = c->ops->start(&ctx, &run_events, s, &c->runner, &err);
        if (r < 0) {
                fail_start(s, c, r, err ? err : strerror(-r));
                return 0;
        }
        start_timeout(s, c);
        sched_update_status(s);
        event_add(s->status_ev, &(struct timeval){ .tv_sec = SCHED_STATUS_REFRESH_S });
        return 0;
}

static void status_refresh_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;

        (void)fd, (void)what;
        if (s->cur && !s->cur->finished && !s->d->stopping)
                sched_update_status(s);
}

/* ---- the health gate between runs (LAVA's device health check) ---- */

static void gate_retry_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        sched_kick(ud);
}

/* SIGKILL a process found carrying tag, through a pidfd opened after the tag was seen (no pid reuse). */
static void kill_tagged(pid_t pid, const char *tag)
{
        _cleanup_close_ int fd = pidfd_open(pid, 0);

        if (fd >= 0 && proc_has_tag(pid, tag) > 0)
                (void)pidfd_send_signal(fd, SIGKILL, NULL, 0);
}

/*
 * Nothing of an earlier run may be alive when the next one starts: its cgroup
 * is empty, no process the daemon adopted lives, nothing carries its tag. What
 * is found is killed (SIGKILL: its run is over) and reported; the gate looks
 * again until the settle time is up. Returns 0 when nothing is left, else
 * -EBUSY with *reason.
 */
static int gate_processes(struct mx_sched *s, char **reason)
{
        _cleanup_free_ struct proc_entry *list = NULL;
        _cleanup_free_ pid_t *tagged = NULL;
        struct proc_match m = { .parent = getpid() };
        size_t n = 0, n_tagged = 0, alive = 0;
        pid_t first = 0;
        int r;

        if (s->d->reaper)
                proc_reaper_reap(s->d->reaper); /* adopted orphans that ended are no one's problem */
        if (s->prev_cgroup) {
                r = cgroup_is_populated(s->prev_cgroup);
                if (r > 0) {
                        (void)cgroup_kill(s->prev_cgroup);
                        return mx_reterr(reason, -EBUSY, "the cgroup of run %" PRId64 " (%s) still has processes",
                                         s->prev_run, s->prev_cgroup);
                }
                r = cgroup_remove(s->prev_cgroup);
                if (r < 0)
                        return mx_reterr(reason, r, "cannot remove the cgroup of run %" PRId64 " (%s): %s",
                                         s->prev_run, s->prev_cgroup, strerror(-r));
                s->prev_cgroup = mfree(s->prev_cgroup);
        }
        r = proc_scan(&m, &list, &n);
        if (r < 0)
                return mx_reterr(reason, r, "cannot read /proc: %s", strerror(-r));
        for (size_t i = 0; i < n; i++)
                if (list[i].adopted && list[i].state != 'Z') {
                        /* Our unreaped child: its pid cannot have been reused. */
                        (void)kill(list[i].pid, SIGKILL);
                        first = first ?: list[i].pid;
                        alive++;
                }
        if (alive > 0)
                return mx_reterr(reason, -EBUSY,
                                 "%zu process(es) the daemon adopted from an earlier run are alive (pid %d first)",
                                 alive, (int)first);
        if (!s->prev_tag)
                return 0;
        r = proc_find_tagged(s->prev_tag, &tagged, &n_tagged);
        if (r < 0)
                return mx_reterr(reason, r, "cannot read /proc: %s", strerror(-r));
        for (size_t i = 0; i < n_tagged; i++)
                kill_tagged(tagged[i], s->prev_tag);
        if (n_tagged > 0)
                return mx_reterr(reason, -EBUSY, "%zu process(es) of run %" PRId64 " are alive (pid %d first)",
                                 n_tagged, s->prev_run, (int)tagged[0]);
        return 0;
}

/* The settle time: how long the checks may fail before the queue is paused. */
static int64_t gate_settle_ms(struct mx_sched *s)
{
        return s->d->matrix ? s->d->matrix->health_settle_ms : MX_MATRIX_HEALTH_SETTLE_MS;
}

/*
 * The synchronous checks: processes, then the machine (sched_set_health_check()).
 * 1: pass. 0: failing, looked at again in SCHED_GATE_RETRY_MS. -1: failed past
 * the settle time, the queue is paused.
 */
static int gate_check(struct mx_sched *s)
{
        _cleanup_free_ char *reason = NULL;
        int64_t now = mx_now_mono_us();
        int r;

        r = gate_processes(s, &reason);
        if (r >= 0 && s->health_fn) {
                r = s->health_fn(s->health_ud, &reason);
                if (r < 0 && !reason)
                        reason = xasprintf("the machine's health check failed: %s", strerror(-r));
        }
        if (r >= 0) {
                s->gate_deadline = 0;
                return 1;
        }
        if (s->gate_deadline == 0) {
                _cleanup_free_ char *settle = mx_format_duration(gate_settle_ms(s) * 1000);

                s->gate_deadline = now + gate_settle_ms(s) * 1000;
                if (r != -EINPROGRESS) /* a sample on its way is no news */
                        log_notice("health gate: %s; waiting up to %s for it to settle", reason, settle);
        }
        if ((r == -EBUSY || r == -EAGAIN || r == -EINPROGRESS) && now < s->gate_deadline) {
                struct timeval tv = { .tv_usec = SCHED_GATE_RETRY_MS * 1000 };

                evtimer_add(s->gate_ev, &tv);
                return 0;
        }
        s->gate_deadline = 0;
        {
                _cleanup_free_ char *why = xasprintf("health gate before the next run: %s", reason);

                sched_pause_because(s, MX_MSGID_HEALTH_GATE, NULL, why);
        }
        return -1;
}

static void health_exit_cb(pid_t pid, int status, void *ud)
{
        struct mx_sched *s = ud;
        _cleanup_free_ char *why = NULL;

        (void)pid;
        s->hc_pid = 0;
        evtimer_del(s->hc_timer);
        if (s->d->stopping)
                return;
        if (!s->hc_timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                s->hc_passed = true;
                sched_kick(s);
                return;
        }
        if (s->hc_timed_out)
                why = xasprintf("health gate before the next run: the health command did not finish within "
                                "%" PRId64 " ms (its output: %s/" SCHED_HEALTH_LOG ")",
                                s->d->matrix ? s->d->matrix->health_timeout_ms : MX_MATRIX_HEALTH_TIMEOUT_MS,
                                s->d->cfg.state_dir);
        else if (WIFEXITED(status))
                why = xasprintf("health gate before the next run: the health command exited with status %d "
                                "(its output: %s/" SCHED_HEALTH_LOG ")",
                                WEXITSTATUS(status), s->d->cfg.state_dir);
        else
                why = xasprintf("health gate before the next run: the health command was killed by signal %s "
                                "(its output: %s/" SCHED_HEALTH_LOG ")",
                                sigabbrev_np(WTERMSIG(status)) ?: "?", s->d->cfg.state_dir);
        sched_pause_because(s, MX_MSGID_HEALTH_GATE, NULL, why);
}

static void health_timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;

        (void)fd, (void)what;
        if (s->hc_pid <= 0)
                return;
        s->hc_timed_out = true;
        /* It leads its own group and is not reaped yet, so the number is still its own. */
        (void)kill(-s->hc_pid, SIGKILL);
}

/* Start the matrix's health command (its own session, output in the state directory). 0 or -errno. */
static int health_start(struct mx_sched *s, char **reterr)
{
        extern char **environ;
        _cleanup_free_ char *log = xasprintf("%s/" SCHED_HEALTH_LOG, s->d->cfg.state_dir), *tag = NULL;
        _cleanup_close_ int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0640);
        struct mx_matrix *m = s->d->matrix;
        struct proc_info info;
        uint8_t b[8];
        int64_t ms = m->health_timeout_ms;
        int r;

        if (fd < 0)
                return mx_reterr(reterr, -errno, "cannot create %s: %m", log);
        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                return mx_reterr(reterr, -EIO, "%s", "getrandom failed");
        tag = xasprintf("mxh-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
        r = proc_spawn(&(struct proc_spec){ .argv = m->health_command, .env = environ, .cwd = s->d->cfg.state_dir,
                                            .tag = tag, .stdout_fd = fd, .stderr_fd = fd },
                       &info, reterr);
        if (r < 0)
                return r;
        r = proc_reaper_watch(s->d->reaper, info.pid, health_exit_cb, s);
        if (r < 0)
                mx_die("cannot watch a child we just started: %s", strerror(-r));
        s->hc_pid = info.pid;
        s->hc_timed_out = false;
        {
                struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

                evtimer_add(s->hc_timer, &tv);
        }
        log_debug("health gate: running the health command (pid %d)", (int)info.pid);
        return 0;
}

/*
 * Whether the next run may start now. The gate runs only when a run is waiting:
 * an idle daemon does not poke the machine. When the matrix has a health
 * command, it runs last; its end kicks the scheduler again.
 */
static bool gate_open(struct mx_sched *s)
{
        _cleanup_free_ char *err = NULL;
        struct queue_next peek = {};
        int r;

        r = queue_pick_next(s->d->db, &peek);
        queue_next_done(&peek);
        if (r < 0) {
                /* Nothing waits: still tidy up the last run's empty cgroup. */
                if (s->prev_cgroup && cgroup_is_populated(s->prev_cgroup) == 0 &&
                    cgroup_remove(s->prev_cgroup) >= 0)
                        s->prev_cgroup = mfree(s->prev_cgroup);
                return r != -ENOENT; /* a database error: let start_next() report it */
        }
        if (gate_check(s) <= 0)
                return false;
        if (s->hc_passed || !s->d->matrix || !s->d->matrix->health_command)
                return true;
        r = health_start(s, &err);
        if (r < 0) {
                _cleanup_free_ char *why = xasprintf("health gate before the next run: cannot start the health "
                                                     "command: %s", strna(err));

                sched_pause_because(s, MX_MSGID_HEALTH_GATE, NULL, why);
        }
        return false;
}

static void kick_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;
        int r;

        (void)fd, (void)what;
        if (s->d->stopping)
                return;
        if (s->exec_ops)
                return s->exec_ops->kick(s->exec);
        if (s->fault)
                sched_flush(s); /* someone acted (cancel, resume): maybe there is space again */
        if (s->cur || s->d->paused || s->hc_pid > 0) {
                /* The queue changed (submit, cancel, pause, retry) but nothing starts: keep STATUS= true. */
                if (s->d->paused)
                        s->gate_deadline = 0; /* a resume starts the settle time afresh */
                sched_update_status(s);
                return;
        }
        if (!gate_open(s)) {
                sched_update_status(s);
                return;
        }
        s->hc_passed = false;
        r = start_next(s);
        if (r == -ENOENT)
                sched_update_status(s);
}

void sched_set_health_check(struct mx_sched *s, sched_health_fn fn, void *ud)
{
        s->health_fn = fn;
        s->health_ud = ud;
}

void sched_set_executor(struct mx_sched *s, const struct mx_executor_ops *ops, void *x)
{
        s->exec_ops = ops;
        s->exec = x;
}

void sched_kick(struct mx_sched *s)
{
        event_active(s->kick_ev, EV_TIMEOUT, 1);
}

static void timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;
        struct mx_log_ctx ctx;

        (void)fd, (void)what;
        if (!s->cur || s->cur->ended)
                return;
        ctx = current_ctx(s->cur);
        log_ctx(LOG_WARNING, NULL, &ctx, "run %" PRId64 " exceeded its time limit; stopping it", s->cur->run);
        s->cur->stopping = true;
        s->cur->ops->cancel(s->cur->runner, MX_OUTCOME_TIMEOUT);
}

bool sched_cancel_run(struct mx_sched *s, int64_t run)
{
        if (s->exec_ops)
                return s->exec_ops->cancel_run(s->exec, run);
        if (!s->cur || s->cur->run != run || s->cur->finished)
                return false;
        /* Ended, its outcome waiting for the database: it stops by itself (kick_cb retries the write). */
        if (!s->cur->stopping && !s->cur->ended) {
                s->cur->stopping = true;
                s->cur->ops->cancel(s->cur->runner, MX_OUTCOME_CANCELLED);
        }
        return true;
}

bool sched_busy(struct mx_sched *s)
{
        if (s->exec_ops)
                return s->exec_ops->busy(s->exec);
        return s->cur != NULL;
}

json_t *sched_current_json(struct mx_sched *s)
{
        struct current *c = s->cur;
        const char *level;

        if (s->exec_ops)
                return s->exec_ops->current_json(s->exec);
        if (!c)
                return NULL;
        level = c->runner && c->ops->current_level ? c->ops->current_level(c->runner) : c->level;
        return json_pack("{s:I,s:I,s:i,s:I,s:s,s:s?,s:I,s:I,s:b}", "job", (json_int_t)c->job, "run",
                         (json_int_t)c->run, "attempt", c->attempt, "attempt_id", (json_int_t)c->attempt_id,
                         "config_key", c->config_key, "level", level, "started_at", (json_int_t)c->started_real,
                         "elapsed_ms", (json_int_t)((mx_now_mono_us() - c->started_mono) / 1000), "stopping",
                         c->stopping || c->ended);
}

void sched_shutdown(struct mx_sched *s, void (*done)(void *), void *ud)
{
        if (s->exec_ops)
                return s->exec_ops->shutdown(s->exec, done, ud);
        s->idle_cb = done;
        s->idle_ud = ud;
        if (s->fault)
                sched_flush(s); /* one last try; what is still refused is left to the next start's recovery */
        evtimer_del(s->gate_ev);
        if (s->hc_pid > 0) {
                /* The health command is ours: killed with its group, reaped here (it dies at once). */
                (void)kill(-s->hc_pid, SIGKILL);
                (void)proc_reaper_unwatch(s->d->reaper, s->hc_pid);
                (void)waitpid(s->hc_pid, NULL, 0);
                s->hc_pid = 0;
                evtimer_del(s->hc_timer);
        }
        if (!s->cur) {
                done(ud);
                return;
        }
        if (!s->cur->ended && !s->cur->stopping) {
                s->cur->stopping = true;
                s->cur->ops->cancel(s->cur->runner, MX_OUTCOME_INTERRUPTED);
        }
}

struct mx_sched *sched_new(struct mx_daemon *d, const struct mx_sched_watch *watch)
{
        struct mx_sched *s = xcalloc(1, sizeof(*s));

        s->d = d;
        s->watch = *watch;
        s->kick_ev = event_new(d->base, -1, 0, kick_cb, s);
        s->reap_ev = event_new(d->base, -1, 0, sched_reap_cb, s);
        s->timeout_ev = evtimer_new(d->base, timeout_cb, s);
        s->status_ev = event_new(d->base, -1, EV_PERSIST, status_refresh_cb, s);
        s->retry_ev = evtimer_new(d->base, retry_cb, s);
        s->stop_ev = event_new(d->base, -1, 0, storage_stop_cb, s);
        s->writes_tail = &s->writes;
        s->gate_ev = evtimer_new(d->base, gate_retry_cb, s);
        s->hc_timer = evtimer_new(d->base, health_timeout_cb, s);
        if (!s->kick_ev || !s->reap_ev || !s->timeout_ev || !s->status_ev || !s->retry_ev || !s->stop_ev ||
            !s->gate_ev || !s->hc_timer)
                mx_die("out of memory creating the scheduler");
        return s;
}

/*
 * The daemon is exiting: nothing it started may stay. The last run's cgroup is
 * killed and waited for (bounded), adopted children are killed and reaped, and
 * what carries the last run's tag is killed.
 */
static void sched_final_sweep(struct mx_sched *s)
{
        _cleanup_free_ struct proc_entry *list = NULL;
        _cleanup_free_ pid_t *tagged = NULL;
        struct proc_match m = { .parent = getpid() };
        size_t n = 0, n_tagged = 0;
        int r;

        if (s->cur && s->cur->cgroup) {
                s->prev_cgroup = mfree(s->prev_cgroup);
                s->prev_cgroup = TAKE_PTR(s->cur->cgroup);
        }
        if (proc_run_active())
                proc_run_end();
        if (s->prev_cgroup) {
                r = cgroup_kill_wait_remove(s->prev_cgroup, CGROUP_KILL_WAIT_MS);
                if (r < 0)
                        log_error_errno(r, "cannot empty and remove the cgroup %s", s->prev_cgroup);
        }
        if (proc_scan(&m, &list, &n) >= 0)
                for (size_t i = 0; i < n; i++) {
                        if (list[i].state != 'Z')
                                (void)kill(list[i].pid, SIGKILL);
                        (void)waitpid(list[i].pid, NULL, 0);
                }
        if (s->prev_tag && proc_find_tagged(s->prev_tag, &tagged, &n_tagged) >= 0)
                for (size_t i = 0; i < n_tagged; i++)
                        kill_tagged(tagged[i], s->prev_tag);
}

struct mx_sched *sched_free(struct mx_sched *s)
{
        if (!s)
                return NULL;
        sched_final_sweep(s);
        current_free(s->cur);
        while (s->closing) {
                struct run_sampling *rs = s->closing;
                const struct mx_sample_summary *sum = mx_sampler_summary(rs->sampler);

                /* Stopping before its last sample came: keep what was sampled (the database is still open). */
                if (sum->n > 0 && !s->fault &&
                    sample_store_summary(s->d->db, rs->attempt_id, "run", sum) < 0)
                        log_warning("cannot record the GPU and memory summary of run %" PRId64, rs->run);
                s->closing = rs->next;
                run_sampling_free(rs);
        }
        while (s->writes) {
                struct pending_write *w = s->writes;

                s->writes = w->next;
                pending_write_free(w);
        }
        free(s->fault);
        event_free(s->retry_ev);
        event_free(s->stop_ev);
        event_free(s->kick_ev);
        event_free(s->reap_ev);
        event_free(s->timeout_ev);
        event_free(s->status_ev);
        event_free(s->gate_ev);
        event_free(s->hc_timer);
        free(s->prev_tag);
        free(s->prev_cgroup);
        free(s);
        return NULL;
}
