/* SPDX-License-Identifier: MIT */
/*
 * The command runner: run the snapshot's argv to completion in its own session
 * and judge it by its exit status. Level L1 passes when the command exits 0,
 * fails on any other status; a death by signal is a crash. Whatever the command
 * left behind (descendants carrying the run tag) is stopped before the run is
 * reported finished, so nothing outlives the run. Used by matrices whose target
 * profile is "command" (scripts, benchmarks) and by the daemon's own tests.
 */
#include "log.h"
#include "logcap.h"
#include "placeholder.h"
#include "proc-stop.h"
#include "runner-util.h"
#include "runner.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>

struct mx_runner {
        struct mx_run_ctx ctx;
        const struct mx_run_events *ev;
        void *ud;
        struct logcap *log;
        struct proc_info info;
        struct proc_stop *stop;
        struct event *level_timer;
        int64_t level_started;
        bool exited, stopping, done;
        int status;
        enum mx_outcome why; /* set by cancel() */
        bool cancelled;
};

static void runner_finish(struct mx_runner *r, const struct mx_run_result *res)
{
        if (r->done)
                return;
        r->done = true;
        r->ev->finished(r->ud, res);
}

/* Whether the level named at index i was named before (a job's levels may repeat one: record it once). */
static bool level_named_before(json_t *levels, size_t i)
{
        for (size_t k = 0; k < i; k++)
                if (json_equal(json_array_get(levels, k), json_array_get(levels, i)))
                        return true;
        return false;
}

static void record_levels(struct mx_runner *r, const char *verdict, const char *message)
{
        size_t i;
        json_t *l;

        json_array_foreach (r->ctx.levels, i, l) {
                const char *name = json_string_value(l);
                bool first = i == 0;
                struct mx_level_result lr = {
                        .level = name,
                        .verdict = first ? verdict : "skipped",
                        .started_at = r->level_started,
                        .finished_at = mx_now_real_us(),
                        .message = first ? message : "the command runner runs one level: the command itself",
                };

                if (!level_named_before(r->ctx.levels, i))
                        r->ev->level_finished(r->ud, &lr);
        }
}

/* The command and everything it left behind are gone: report. */
static void stopped_cb(const struct proc_stop_result *res, void *ud)
{
        struct mx_runner *r = ud;
        _cleanup_free_ char *msg = NULL;
        struct mx_run_result out = { .outcome = MX_OUTCOME_COMPLETED, .exit_status = -1 };
        bool signalled = r->exited && WIFSIGNALED(r->status);

        r->stop = NULL;
        if (r->exited && WIFEXITED(r->status))
                out.exit_status = WEXITSTATUS(r->status);
        if (signalled)
                out.exit_signal = WTERMSIG(r->status);
        if (!res->clean)
                msg = xasprintf("%zu processes of the run could not be killed", res->n_leftovers);
        out.leftovers = !res->clean;
        if (r->cancelled) {
                /* Over a time limit the command failed its level; cancelled or interrupted, it never ran. */
                record_levels(r, r->why == MX_OUTCOME_TIMEOUT ? "fail" : "skipped",
                              r->why == MX_OUTCOME_TIMEOUT     ? "the command exceeded its time limit"
                              : r->why == MX_OUTCOME_CANCELLED ? "cancelled"
                                                               : "interrupted by a daemon stop");
                out.outcome = r->why;
                out.message = msg ? msg : "stopped before the command ended";
        } else if (signalled) {
                _cleanup_free_ char *m = xasprintf("killed by signal %s", sigabbrev_np(out.exit_signal) ?: "?");

                out.outcome = MX_OUTCOME_CRASHED;
                out.crash_class = "signal";
                record_levels(r, "fail", m);
                out.message = msg ? msg : m;
                runner_finish(r, &out);
                return;
        } else {
                _cleanup_free_ char *m = xasprintf("exit status %d", out.exit_status);

                record_levels(r, out.exit_status == 0 ? "pass" : "fail", m);
                if (msg)
                        out.outcome = MX_OUTCOME_INFRA_ERROR;
                out.message = msg;
        }
        runner_finish(r, &out);
}

static void stop_everything(struct mx_runner *r)
{
        _cleanup_free_ char *err = NULL;
        int q;

        if (r->stopping)
                return;
        r->stopping = true;
        event_del(r->level_timer);
        q = proc_stop(r->ctx.reaper, NULL, r->info.pid > 0 ? &r->info : NULL, r->ctx.tag, stopped_cb, r, &r->stop,
                      &err);
        if (q < 0) {
                struct mx_run_result out = { .outcome = MX_OUTCOME_INFRA_ERROR, .message = err, .exit_status = -1 };
                runner_finish(r, &out);
        }
}

static void exit_cb(pid_t pid, int status, void *ud)
{
        struct mx_runner *r = ud;

        (void)pid;
        r->exited = true;
        r->status = status;
        if (r->log)
                logcap_drain(r->log);
        /* The command is done; its descendants may not be. */
        stop_everything(r);
}

static void level_timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_runner *r = ud;

        (void)fd, (void)what;
        logcap_note(r->log, "the command exceeded the level time limit; stopping it");
        r->cancelled = true;
        r->why = MX_OUTCOME_TIMEOUT;
        stop_everything(r);
}

static void log_line(void *ud, const char *line, size_t len)
{
        struct mx_runner *r = ud;
        struct mx_log_ctx ctx = { .job = r->ctx.job, .run = r->ctx.run, .attempt = r->ctx.attempt,
                                  .config = r->ctx.config_key };

        mx_log_target_line(&ctx, "command", LOG_INFO, line, len);
}

static void log_appended(void *ud)
{
        struct mx_runner *r = ud;

        r->ev->log_appended(r->ud);
}

static const struct logcap_ops log_ops = { .line = log_line, .appended = log_appended };

static int command_start(const struct mx_run_ctx *ctx, const struct mx_run_events *ev, void *ud,
                         struct mx_runner **ret, char **reterr)
{
        _cleanup_free_ struct mx_runner *r = xcalloc(1, sizeof(*r));
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        _cleanup_free_ char *log_path = xasprintf("%s/server.log", ctx->run_dir);
        _cleanup_close_ int out_r = -1, out_w = -1;
        struct proc_spec spec = {};
        int pfd[2], q;

        r->ctx = *ctx;
        r->ev = ev;
        r->ud = ud;
        q = runner_build_command(ctx, NULL, &argv, &env, reterr);
        if (q < 0)
                return q;
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        out_r = pfd[0];
        out_w = pfd[1];
        q = logcap_new(ctx->base, log_path, ctx->log_max_bytes, &log_ops, r, &r->log);
        if (q < 0)
                return *reterr = xasprintf("cannot create %s: %s", log_path, strerror(-q)), q;
        ev->log_opened(ud, log_path);
        spec = (struct proc_spec){ .argv = argv, .env = env, .cwd = ctx->run_dir, .tag = ctx->tag,
                                   .stdout_fd = out_w, .stderr_fd = out_w };
        r->level_started = mx_now_real_us();
        ev->level_started(ud, json_string_value(json_array_get(ctx->levels, 0)) ?: "L1");
        q = proc_spawn(&spec, &r->info, reterr);
        if (q < 0) {
                r->log = logcap_free(r->log);
                return q;
        }
        q = proc_reaper_watch(ctx->reaper, r->info.pid, exit_cb, r);
        if (q < 0)
                mx_die("cannot watch a child we just started: %s", strerror(-q));
        ev->process(ud, r->info.pid, r->info.pgid, r->info.starttime);
        if (ev->command) {
                _cleanup_(json_decrefp) json_t *cmd = runner_command_record(ctx, NULL, argv);

                ev->command(ud, cmd);
        }
        (void)logcap_add_source(r->log, TAKE_FD(out_r));
        r->level_timer = evtimer_new(ctx->base, level_timeout_cb, r);
        {
                struct timeval tv = { .tv_sec = ctx->level_timeout_ms / 1000,
                                      .tv_usec = (ctx->level_timeout_ms % 1000) * 1000 };
                evtimer_add(r->level_timer, &tv);
        }
        *ret = TAKE_PTR(r);
        return 0;
}

static void command_cancel(struct mx_runner *r, enum mx_outcome why)
{
        /* Once the command has ended (stopping), its exit status is the verdict, whatever comes now. */
        if (r->done || r->cancelled || r->stopping)
                return;
        r->cancelled = true;
        r->why = why;
        logcap_note(r->log, "stopping the command (%s)", mx_outcome_to_string(why));
        stop_everything(r);
}

static const char *command_level(struct mx_runner *r)
{
        return r->done ? NULL : json_string_value(json_array_get(r->ctx.levels, 0));
}

static struct mx_runner *command_free(struct mx_runner *r)
{
        if (!r)
                return NULL;
        if (r->stop)
                proc_stop_cancel(r->stop);
        if (r->info.pid > 0 && !r->exited)
                (void)proc_reaper_unwatch(r->ctx.reaper, r->info.pid);
        if (r->level_timer)
                event_free(r->level_timer);
        logcap_free(r->log);
        free(r);
        return NULL;
}

const struct mx_runner_ops runner_command_ops = {
        .name = "command",
        .start = command_start,
        .cancel = command_cancel,
        .current_level = command_level,
        .free = command_free,
};
