/* SPDX-License-Identifier: MIT */
#include "scheduler.h"
#include "control.h"
#include "log.h"
#include "notify.h"

#include <inttypes.h>
#include <sys/random.h>
#include <sys/stat.h>

struct current {
        int64_t job, run, attempt_id;
        int attempt;
        char *tag, *config_key, *run_dir;
        json_t *spec, *levels;
        int64_t started_mono, started_real;
        const struct mx_runner_ops *ops;
        struct mx_runner *runner;
        char *level;     /* level being run, for status */
        bool stopping;   /* cancel() sent */
        bool finished;   /* finished() came; free from the loop */
};

/* STATUS= shows the running run's elapsed time; refresh it this often while nothing else changes. */
#define SCHED_STATUS_REFRESH_S 5

struct mx_sched {
        struct mx_daemon *d;
        struct event *kick_ev;
        struct event *status_ev; /* refreshes STATUS= while a run is active */
        struct event *reap_ev; /* frees a finished runner outside its own callback */
        struct event *timeout_ev;
        struct current *cur;
        void (*idle_cb)(void *);
        void *idle_ud;
};

static void current_free(struct current *c)
{
        if (!c)
                return;
        if (c->runner)
                c->ops->free(c->runner);
        free(c->tag);
        free(c->config_key);
        free(c->run_dir);
        free(c->level);
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
        _cleanup_json_ json_t *counts = NULL;
        int64_t queued = 0;

        if (queue_counts_json(s->d->db, &counts) >= 0)
                queued = json_integer_value(json_object_get(counts, "queued"));
        if (!s->cur)
                return xasprintf("%s, %" PRId64 " queued", s->d->paused ? "paused" : "idle", queued);
        {
                _cleanup_free_ char *el = mx_format_duration(mx_now_mono_us() - s->cur->started_mono);
                return xasprintf("running r%" PRId64 " (%s, %s), %" PRId64 " queued%s", s->cur->run,
                                 s->cur->level ? s->cur->level : "starting", el, queued,
                                 s->d->paused ? ", paused" : "");
        }
}

static void sched_update_status(struct mx_sched *s)
{
        _cleanup_free_ char *line = sched_status_line(s);

        notify_status(s->d->notify, line);
}

/* ---- runner callbacks ---- */

static void ev_process(void *ud, pid_t pid, pid_t pgid, uint64_t proc_start)
{
        struct mx_sched *s = ud;
        int r = queue_attempt_process(s->d->db, s->cur->attempt_id, pid, pgid, proc_start);

        if (r < 0)
                log_error_errno(r, "cannot record pid %d of run %" PRId64, (int)pid, s->cur->run);
}

static void ev_log_opened(void *ud, const char *path)
{
        struct mx_sched *s = ud;
        int r = queue_attempt_log(s->d->db, s->cur->attempt_id, path);

        if (r < 0)
                log_error_errno(r, "cannot record the log path of run %" PRId64, s->cur->run);
}

static void ev_log_appended(void *ud)
{
        struct mx_sched *s = ud;

        stream_log_appended(s->d, s->cur->run);
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
        struct queue_level l = {
                .level = lr->level, .verdict = lr->verdict, .started_at = lr->started_at,
                .finished_at = lr->finished_at, .metrics = lr->metrics, .artifacts = lr->artifacts,
                .message = lr->message,
        };
        _cleanup_json_ json_t *detail = json_pack("{s:s,s:s,s:s?}", "level", lr->level, "verdict", lr->verdict,
                                                  "message", lr->message);
        _cleanup_free_ char *verdict_field = xasprintf("MXMATRIX_VERDICT=%s", lr->verdict);
        const char *extra[] = { verdict_field, NULL };
        struct mx_log_ctx ctx = current_ctx(s->cur);
        int r;

        ctx.level = lr->level;
        r = queue_level_record(s->d->db, s->cur->attempt_id, &l);
        if (r >= 0)
                r = queue_event(s->d->db, s->cur->job, s->cur->run, "level-finished", -1, detail);
        if (r < 0)
                log_error_errno(r, "cannot record level %s of run %" PRId64, lr->level, s->cur->run);
        mx_log_full(LOG_INFO, 0, MX_MSGID_LEVEL_FINISHED, &ctx, extra, "run %" PRId64 ": %s %s%s%s",
                    s->cur->run, lr->level, lr->verdict, lr->message ? ": " : "", strempty(lr->message));
        stream_job_changed(s->d, s->cur->job);
}

static void sched_reap_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;

        (void)fd, (void)what;
        if (!s->cur || !s->cur->finished)
                return;
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

/* Under the pause policy an interrupted run waits in a paused queue; otherwise it is simply requeued. */
static bool finish_requeues(struct mx_sched *s, enum mx_outcome o)
{
        if (o != MX_OUTCOME_INTERRUPTED)
                return false;
        if (s->d->cfg.recovery == MX_RECOVERY_PAUSE && !s->d->paused) {
                int r = queue_set_paused(s->d->db, true, 0);
                if (r < 0)
                        log_error_errno(r, "cannot pause the queue");
                else
                        s->d->paused = true;
        }
        return true;
}

static void ev_finished(void *ud, const struct mx_run_result *res)
{
        struct mx_sched *s = ud;
        struct current *c = s->cur;
        struct queue_finish f = {
                .outcome = res->outcome, .crash_class = res->crash_class, .message = res->message,
                .exit_status = res->exit_status, .exit_signal = res->exit_signal,
        };
        _cleanup_free_ char *result = NULL, *el = mx_format_duration(mx_now_mono_us() - c->started_mono);
        _cleanup_free_ char *f_outcome = xasprintf("MXMATRIX_OUTCOME=%s", mx_outcome_to_string(res->outcome));
        _cleanup_free_ char *f_crash = res->crash_class ? xasprintf("MXMATRIX_CRASH_CLASS=%s", res->crash_class)
                                                         : NULL;
        const char *extra[] = { f_outcome, f_crash, NULL };
        struct mx_log_ctx ctx = current_ctx(c);
        int r;

        f.requeue = finish_requeues(s, res->outcome);
        if (res->leftovers && !s->d->paused) {
                /* Like a node drained after a failed epilog: no run starts next to what is left. */
                r = queue_set_paused(s->d->db, true, 0);
                if (r >= 0)
                        s->d->paused = true;
                mx_log_full(LOG_ERR, 0, MX_MSGID_ORPHAN_KILLED, &ctx, NULL,
                            "run %" PRId64 " left processes that could not be killed; the queue is paused until "
                            "someone checks the machine and runs 'mxmatrix resume'",
                            c->run);
        }
        r = queue_attempt_finish(s->d->db, c->attempt_id, &f, &result);
        if (r < 0)
                log_error_errno(r, "cannot record the end of run %" PRId64, c->run);
        ctx.level = NULL;
        if (res->outcome == MX_OUTCOME_CRASHED)
                mx_log_full(LOG_WARNING, 0, MX_MSGID_RUN_CRASHED, &ctx, extra,
                            "run %" PRId64 " crashed (%s) after %s%s%s", c->run, strna(res->crash_class), el,
                            res->message ? ": " : "", strempty(res->message));
        else
                mx_log_full(res->outcome == MX_OUTCOME_COMPLETED ? LOG_INFO : LOG_WARNING, 0,
                            res->outcome == MX_OUTCOME_INTERRUPTED ? MX_MSGID_RUN_INTERRUPTED
                                                                   : MX_MSGID_RUN_FINISHED,
                            &ctx, extra, "run %" PRId64 " finished: %s, result %s, after %s%s%s", c->run,
                            mx_outcome_to_string(res->outcome), f.requeue ? "requeued" : strna(result), el,
                            res->message ? ": " : "", strempty(res->message));
        event_del(s->timeout_ev);
        c->finished = true;
        stream_run_finished(s->d, c->run);
        stream_job_changed(s->d, c->job);
        event_active(s->reap_ev, EV_TIMEOUT, 1);
}

static const struct mx_run_events run_events = {
        .process = ev_process,
        .log_opened = ev_log_opened,
        .log_appended = ev_log_appended,
        .level_started = ev_level_started,
        .level_finished = ev_level_finished,
        .finished = ev_finished,
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

static void start_timeout(struct mx_sched *s, struct current *c)
{
        int64_t ms = s->d->cfg.run_timeout_ms;
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
        struct queue_finish f = { .outcome = MX_OUTCOME_INFRA_ERROR, .message = why, .exit_status = -1 };
        struct mx_log_ctx ctx = current_ctx(c);

        mx_log_full(LOG_ERR, r, MX_MSGID_RUN_FINISHED, &ctx, NULL, "run %" PRId64 " could not start: %s", c->run,
                    why);
        r = queue_attempt_finish(s->d->db, c->attempt_id, &f, NULL);
        if (r < 0)
                log_error_errno(r, "cannot record the failed start of run %" PRId64, c->run);
        stream_job_changed(s->d, c->job);
        stream_run_finished(s->d, c->run);
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
        c = xcalloc(1, sizeof(*c));
        c->job = next.job;
        c->run = next.run;
        c->config_key = TAKE_PTR(next.config_key);
        c->spec = TAKE_PTR(next.spec);
        c->levels = TAKE_PTR(next.levels);
        c->tag = new_tag();
        queue_next_done(&next);
        r = queue_attempt_start(s->d->db, c->run, c->tag, s->d->boot_id, &c->attempt_id, &c->attempt);
        if (r < 0) {
                current_free(c);
                return log_error_errno(r, "cannot start an attempt");
        }
        c->started_mono = mx_now_mono_us();
        c->started_real = mx_now_real_us();
        s->cur = c;
        lctx = current_ctx(c);
        r = make_run_dir(s, c);
        if (r < 0) {
                fail_start(s, c, r, "cannot create the run directory");
                c->finished = true;
                event_active(s->reap_ev, EV_TIMEOUT, 1);
                return 0;
        }
        c->ops = runner_for_spec(c->spec);
        ctx = (struct mx_run_ctx){
                .base = s->d->base, .reaper = s->d->reaper, .http = s->d->http, .job = c->job, .run = c->run,
                .attempt_id = c->attempt_id, .attempt = c->attempt, .tag = c->tag, .config_key = c->config_key,
                .run_dir = c->run_dir, .spec = c->spec, .levels = c->levels,
                .level_timeout_ms = s->d->cfg.level_timeout_ms, .log_max_bytes = s->d->cfg.limits.log_bytes,
        };
        mx_log_full(LOG_INFO, 0, MX_MSGID_RUN_STARTED, &lctx, NULL, "run %" PRId64 " attempt %d started: %s",
                    c->run, c->attempt, c->config_key);
        stream_job_changed(s->d, c->job);
        r = c->ops->start(&ctx, &run_events, s, &c->runner, &err);
        if (r < 0) {
                fail_start(s, c, r, err ? err : strerror(-r));
                c->finished = true;
                event_active(s->reap_ev, EV_TIMEOUT, 1);
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

static void kick_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_sched *s = ud;
        int r;

        (void)fd, (void)what;
        if (s->d->stopping)
                return;
        if (s->cur || s->d->paused) {
                /* The queue changed (submit, cancel, pause, retry) but nothing starts: keep STATUS= true. */
                sched_update_status(s);
                return;
        }
        r = start_next(s);
        if (r == -ENOENT)
                sched_update_status(s);
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
        if (!s->cur || s->cur->finished)
                return;
        ctx = current_ctx(s->cur);
        log_ctx(LOG_WARNING, NULL, &ctx, "run %" PRId64 " exceeded its time limit; stopping it", s->cur->run);
        s->cur->stopping = true;
        s->cur->ops->cancel(s->cur->runner, MX_OUTCOME_TIMEOUT);
}

bool sched_cancel_run(struct mx_sched *s, int64_t run)
{
        if (!s->cur || s->cur->run != run || s->cur->finished)
                return false;
        if (!s->cur->stopping) {
                s->cur->stopping = true;
                s->cur->ops->cancel(s->cur->runner, MX_OUTCOME_CANCELLED);
        }
        return true;
}

bool sched_busy(struct mx_sched *s)
{
        return s->cur != NULL;
}

json_t *sched_current_json(struct mx_sched *s)
{
        struct current *c = s->cur;
        const char *level;

        if (!c)
                return NULL;
        level = c->runner && c->ops->current_level ? c->ops->current_level(c->runner) : c->level;
        return json_pack("{s:I,s:I,s:i,s:I,s:s,s:s?,s:I,s:I,s:b}", "job", (json_int_t)c->job, "run",
                         (json_int_t)c->run, "attempt", c->attempt, "attempt_id", (json_int_t)c->attempt_id,
                         "config_key", c->config_key, "level", level, "started_at", (json_int_t)c->started_real,
                         "elapsed_ms", (json_int_t)((mx_now_mono_us() - c->started_mono) / 1000), "stopping",
                         c->stopping);
}

void sched_shutdown(struct mx_sched *s, void (*done)(void *), void *ud)
{
        s->idle_cb = done;
        s->idle_ud = ud;
        if (!s->cur) {
                done(ud);
                return;
        }
        if (!s->cur->finished && !s->cur->stopping) {
                s->cur->stopping = true;
                s->cur->ops->cancel(s->cur->runner, MX_OUTCOME_INTERRUPTED);
        }
}

struct mx_sched *sched_new(struct mx_daemon *d)
{
        struct mx_sched *s = xcalloc(1, sizeof(*s));

        s->d = d;
        s->kick_ev = event_new(d->base, -1, 0, kick_cb, s);
        s->reap_ev = event_new(d->base, -1, 0, sched_reap_cb, s);
        s->timeout_ev = evtimer_new(d->base, timeout_cb, s);
        s->status_ev = event_new(d->base, -1, EV_PERSIST, status_refresh_cb, s);
        if (!s->kick_ev || !s->reap_ev || !s->timeout_ev || !s->status_ev)
                mx_die("out of memory creating the scheduler");
        return s;
}

struct mx_sched *sched_free(struct mx_sched *s)
{
        if (!s)
                return NULL;
        current_free(s->cur);
        event_free(s->kick_ev);
        event_free(s->reap_ev);
        event_free(s->timeout_ev);
        event_free(s->status_ev);
        free(s);
        return NULL;
}
