/* SPDX-License-Identifier: MIT */
/*
 * The target runner: start an inference server from the run's snapshot, wait
 * until it is ready, run the levels, stop it so that nothing is left, and say
 * what happened.
 *
 *   start     free port, argv/env from the snapshot, own session and group,
 *             run tag, output into the log (capped) and journald
 *   ready     the profile's probe on a timer: connection refused or 503 mean
 *             "still loading"; not ready by the deadline = outcome timeout
 *   levels    the selected levels in the seed's order (daemon/run/levels/: L1
 *             smoke, L1.5 kernel gate, L2 correctness, L3 stress, ...)
 *   health    the engine is still alive (vLLM's /health turns 503 when it died)
 *   stop      the profile's stop plan; then the run tag is swept and checked;
 *             the profiler's after_stop command; then the levels that wait
 *             for the stop (L1.5 reads the profiler report) decide
 *
 * A server that exits on its own, exit status 0 included (vLLM exits 0 when
 * its engine dies), or whose health turns bad, has crashed; its class comes
 * from the log's crash signatures (crash.h), else from the exit status.
 */
#include "crash.h"
#include "http.h"
#include "levels/levels.h"
#include "log.h"
#include "logcap.h"
#include "port.h"
#include "proc-stop.h"
#include "profile.h"
#include "runner-util.h"
#include "runner.h"
#include "sampler.h"
#include "levels/memsample.h"
#include "levels/memtrack.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>

enum phase {
        PHASE_STARTING, /* waiting for the ready probe */
        PHASE_LEVELS,   /* ready: running the levels and the health check */
        PHASE_STOPPING,
        PHASE_DONE,
};

struct mx_runner {
        struct mx_run_ctx ctx;
        const struct mx_run_events *ev;
        void *ud;
        json_t *profile; /* borrowed from the snapshot */
        char *url;       /* http://host:port */
        char *values[_MX_PLACEHOLDER_MAX];
        char *port_text;
        char **env; /* the server's environment, also the log and stop commands' */
        char *api_key;           /* the profile's bearer token, or NULL */
        char *auth_header;       /* "Authorization: Bearer KEY" */
        const char *headers[2];  /* every request's extra headers: auth_header, NULL */
        struct logcap *log;
        struct crash_scan *crash;
        struct mx_levels *levels;
        struct proc_info info;
        pid_t logs_pid;        /* the profile's log command, or 0 */
        struct event *timer;   /* probe interval */
        struct mx_http_call *call;
        struct proc_stop *stop;
        enum phase phase;
        int64_t started_mono, ready_deadline, ready_mono;
        bool exited, exited_on_its_own, engine_dead, cancelled;
        int status;
        enum mx_outcome why;
        char *failure; /* what went wrong with the server's life (not ready, exited, stopped), if anything */
        size_t n_leftovers;      /* processes the stop could not kill */
        pid_t after_pid;         /* the profiler's after_stop command, or 0 */
        struct proc_info after_info;
        struct event *after_timer;
};

/* How long the SIGKILL added to a stop plan that lacks one waits (the default plan's). */
#define STOP_KILL_GRACE_MS 10000
_Static_assert(MX_PROFILE_MAX_STOP_STEPS < PROC_STOP_STEPS_MAX, "no room for the SIGKILL added to a plan");

static void target_stop(struct mx_runner *r, const char *why);

static json_t *profile_get(struct mx_runner *r, const char *section, const char *key)
{
        json_t *s = json_object_get(r->profile, section);

        return key ? json_object_get(s, key) : s;
}

/* The first thing that went wrong with the server's life: the run's message, and the failing level's. */
static void fail_run(struct mx_runner *r, const char *fmt, ...) _printf_(2, 3);
static void fail_run(struct mx_runner *r, const char *fmt, ...)
{
        va_list ap;

        if (r->failure)
                return;
        va_start(ap, fmt);
        r->failure = xvasprintf(fmt, ap);
        va_end(ap);
        logcap_note(r->log, "%s", r->failure);
}

/* ---- the log ---- */

static void log_line(void *ud, const char *line, size_t len)
{
        struct mx_runner *r = ud;
        struct mx_log_ctx ctx = { .job = r->ctx.job, .run = r->ctx.run, .attempt = r->ctx.attempt,
                                  .config = r->ctx.config_key };
        const char *ident = json_string_value(json_object_get(r->profile, "identifier"));

        if (len >= 12 && memcmp(line, "[mxmatrixd] ", 12) == 0)
                return; /* our own notes: in the file, not evidence */
        mx_log_target_line(&ctx, ident ? ident : "target", LOG_INFO, line, len);
        crash_scan_line(r->crash, line, len);
        if (r->levels)
                mx_levels_log_line(r->levels, line, len);
}

static void log_appended(void *ud)
{
        struct mx_runner *r = ud;

        r->ev->log_appended(r->ud);
}

static const struct logcap_ops log_ops = { .line = log_line, .appended = log_appended };

/* ---- the end ---- */

static void finish(struct mx_runner *r)
{
        _cleanup_free_ char *cls = NULL, *msg = NULL, *leftover = NULL;
        struct mx_run_result out = { .outcome = MX_OUTCOME_COMPLETED, .exit_status = -1 };
        bool crashed = r->exited_on_its_own || r->engine_dead;

        r->phase = PHASE_DONE;
        if (r->exited && WIFEXITED(r->status))
                out.exit_status = WEXITSTATUS(r->status);
        if (r->exited && WIFSIGNALED(r->status))
                out.exit_signal = WTERMSIG(r->status);
        if (crashed) {
                const char *c = crash_scan_class(r->crash);

                cls = c ? xstrdup(c) : r->engine_dead ? xstrdup("engine-dead") : crash_class_from_status(r->status);
        }
        {
                /* Cancelled or interrupted is not the configuration's fault: no verdict on what did not run. */
                bool skip = r->cancelled && (r->why == MX_OUTCOME_CANCELLED || r->why == MX_OUTCOME_INTERRUPTED);
                struct mx_level_stop st = {
                        .ready = r->ready_mono != 0, .crashed = crashed, .cancelled = skip,
                        .why = skip ? (r->why == MX_OUTCOME_CANCELLED ? "cancelled" : "interrupted by a daemon stop")
                                    : r->failure,
                        .n_leftovers = r->n_leftovers,
                };

                if (r->levels)
                        mx_levels_end(r->levels, &st);
        }
        if (r->n_leftovers > 0)
                leftover = xasprintf("%zu processes of the run could not be killed", r->n_leftovers);
        if (r->cancelled)
                out.outcome = r->why;
        else if (crashed)
                out.outcome = MX_OUTCOME_CRASHED;
        /* What is left behind is the infrastructure's problem first (mxmatrixd(8), OUTCOMES). */
        out.leftovers = leftover != NULL;
        if (out.leftovers && out.outcome != MX_OUTCOME_INTERRUPTED)
                out.outcome = MX_OUTCOME_INFRA_ERROR;
        out.crash_class = cls;
        if (crashed && crash_scan_evidence(r->crash))
                msg = xasprintf("%s%s%s", crash_scan_evidence(r->crash), leftover ? "; " : "", strempty(leftover));
        else {
                const char *f = r->failure ? r->failure : mx_levels_failure(r->levels);

                msg = f || leftover ? xasprintf("%s%s%s", strempty(f), f && leftover ? "; " : "", strempty(leftover))
                                    : NULL;
        }
        out.message = msg;
        r->ev->finished(r->ud, &out);
}

static int spawn_tagged(struct mx_runner *r, json_t *cmd, proc_exit_cb cb, struct proc_info *ret);

/* After the after_stop command: whatever it left is swept like the server's own processes. */
static void after_swept_cb(const struct proc_stop_result *res, void *ud)
{
        struct mx_runner *r = ud;

        r->stop = NULL;
        if (!res->clean)
                r->n_leftovers += res->n_leftovers;
        if (r->log)
                logcap_drain(r->log);
        finish(r);
}

static void after_sweep(struct mx_runner *r)
{
        _cleanup_free_ char *err = NULL;

        event_del(r->after_timer);
        if (proc_stop(r->ctx.reaper, NULL, r->after_pid > 0 ? &r->after_info : NULL, r->ctx.tag, after_swept_cb, r,
                      &r->stop, &err) < 0) {
                logcap_note(r->log, "cannot sweep after the after_stop command: %s", strna(err));
                finish(r);
        }
}

static void after_exit_cb(pid_t pid, int status, void *ud)
{
        struct mx_runner *r = ud;
        _cleanup_free_ char *how = crash_class_from_status(status);

        (void)pid;
        r->after_pid = 0;
        logcap_note(r->log, "the profiler's after_stop command ended (%s)", how);
        after_sweep(r);
}

static void after_timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_runner *r = ud;

        (void)fd, (void)what;
        logcap_note(r->log, "the profiler's after_stop command exceeded its time limit; stopping it");
        after_sweep(r);
}

/*
 * The profiler's after_stop command (e.g. "nsys stats ... -o {run_dir}/kern"
 * turning the capture into the report the gate reads), when the gate will
 * use its report. Returns true when it was started; finish() follows its end.
 */
static bool start_after_stop(struct mx_runner *r)
{
        json_t *cmd = profile_get(r, "profiler", "after_stop");
        int64_t ms = json_integer_value(profile_get(r, "profiler", "timeout_ms"));
        struct timeval tv;
        int q;

        if (!json_is_array(cmd) || !mx_levels_pending(r->levels, "L1.5") || !r->ready_mono)
                return false;
        q = spawn_tagged(r, cmd, after_exit_cb, &r->after_info);
        if (q < 0) {
                logcap_note(r->log, "cannot start the profiler's after_stop command: %s", strerror(-q));
                return false;
        }
        r->after_pid = r->after_info.pid;
        logcap_note(r->log, "running the profiler's after_stop command (pid %d)", (int)r->after_pid);
        ms = ms > 0 ? ms : 120000;
        tv = (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
        evtimer_add(r->after_timer, &tv);
        return true;
}

static void stopped_cb(const struct proc_stop_result *res, void *ud)
{
        struct mx_runner *r = ud;

        r->stop = NULL;
        if (!res->clean)
                r->n_leftovers = res->n_leftovers;
        if (r->log)
                logcap_drain(r->log);
        if (!start_after_stop(r))
                finish(r);
}

/* The stop plan from the profile (signals and grace periods ending with SIGKILL, optional stop command). */
static void stop_plan(struct mx_runner *r, struct proc_stop_plan *plan, struct proc_stop_step *steps,
                      char ***ret_cmd)
{
        json_t *stop = json_object_get(r->profile, "stop"), *s, *cmd = json_object_get(stop, "command");
        size_t i;

        *plan = (struct proc_stop_plan){ .steps = steps, .stop_output_fd = -1 };
        json_array_foreach (json_object_get(stop, "steps"), i, s) {
                if (i >= PROC_STOP_STEPS_MAX - 1)
                        break;
                steps[i] = (struct proc_stop_step){ .signal = (int)json_integer_value(json_object_get(s, "signal")),
                                                    .grace_ms = json_integer_value(json_object_get(s, "grace_ms")) };
                plan->n_steps = i + 1;
        }
        /* A plan may end with a signal the server ignores: the last word is always SIGKILL. */
        if (plan->n_steps > 0 && steps[plan->n_steps - 1].signal != SIGKILL)
                steps[plan->n_steps++] =
                        (struct proc_stop_step){ .signal = SIGKILL, .grace_ms = STOP_KILL_GRACE_MS };
        if (json_is_array(cmd)) {
                json_t *w;

                json_array_foreach (cmd, i, w) {
                        char *x = NULL;
                        _cleanup_free_ char *err = NULL;
                        if (mx_placeholder_expand(json_string_value(w), (const char *const *)r->values, &x, &err) < 0)
                                x = xstrdup(json_string_value(w));
                        strv_consume(ret_cmd, x);
                }
                plan->stop_argv = *ret_cmd;
                plan->stop_env = r->env;
                plan->stop_cwd = r->ctx.run_dir;
                plan->stop_timeout_ms = json_integer_value(json_object_get(stop, "timeout_ms"));
        }
}

static void target_stop(struct mx_runner *r, const char *why)
{
        struct proc_stop_step steps[PROC_STOP_STEPS_MAX];
        _cleanup_strv_free_ char **cmd = NULL;
        _cleanup_free_ char *err = NULL;
        struct proc_stop_plan plan;
        int q;

        if (r->phase >= PHASE_STOPPING)
                return;
        r->phase = PHASE_STOPPING;
        event_del(r->timer);
        mx_levels_abort(r->levels);
        if (r->call) {
                mx_http_cancel(r->call);
                r->call = NULL;
        }
        logcap_note(r->log, "stopping the server: %s", why);
        stop_plan(r, &plan, steps, &cmd);
        q = proc_stop(r->ctx.reaper, &plan, r->info.pid > 0 ? &r->info : NULL, r->ctx.tag, stopped_cb, r, &r->stop,
                      &err);
        if (q < 0) {
                /* A snapshot's plan the stop refuses must not leave the server running: use the default. */
                logcap_note(r->log, "the profile's stop plan was refused (%s); using the default plan",
                            strna(err));
                free(err);
                err = NULL;
                q = proc_stop(r->ctx.reaper, NULL, r->info.pid > 0 ? &r->info : NULL, r->ctx.tag, stopped_cb,
                              r, &r->stop, &err);
        }
        if (q < 0) {
                fail_run(r, "cannot stop the server: %s", strna(err));
                finish(r);
        }
}

/* ---- levels ---- */

static void health_done(struct mx_http_call *call, struct mx_http_response *res, void *ud)
{
        struct mx_runner *r = ud;
        json_t *dead = profile_get(r, "health", "dead_status"), *s;
        size_t i;

        (void)call;
        r->call = NULL;
        json_array_foreach (dead, i, s)
                if (res->error == 0 && res->status == json_integer_value(s)) {
                        r->engine_dead = true;
                        logcap_note(r->log, "health check answered %ld: the engine is dead", res->status);
                }
        target_stop(r, "levels done");
}

static void check_health(struct mx_runner *r)
{
        json_t *path = profile_get(r, "health", "path");
        _cleanup_free_ char *url = NULL;
        struct mx_http_request req = { .method = "GET", .timeout_ms = 10000, .max_body = 4096,
                                       .headers = r->auth_header ? r->headers : NULL };

        if (!json_is_string(path)) {
                target_stop(r, "levels done");
                return;
        }
        url = xasprintf("%s%s", r->url, json_string_value(path));
        req.url = url;
        if (mx_http_start(r->ctx.http, &req, health_done, r, &r->call, NULL) < 0)
                target_stop(r, "levels done");
}

static void became_ready(struct mx_runner *r)
{
        double ready_s;

        r->ready_mono = mx_now_mono_us();
        r->phase = PHASE_LEVELS;
        ready_s = (double)(r->ready_mono - r->started_mono) / 1e6;
        logcap_note(r->log, "ready after %.1fs", ready_s);
        mx_levels_run(r->levels, ready_s);
}

/* ---- readiness ---- */

/* The next probe after the profile's interval, but no later than the ready deadline. */
static void probe_arm(struct mx_runner *r)
{
        int64_t ms = json_integer_value(profile_get(r, "ready", "interval_ms"));
        int64_t left_ms = (r->ready_deadline - mx_now_mono_us() + 999) / 1000;
        struct timeval tv;

        if (ms <= 0)
                ms = 1000;
        ms = MX_MAX(MX_MIN(ms, left_ms), 0);
        tv = (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
        evtimer_add(r->timer, &tv);
}

/* Not ready by the deadline: outcome timeout. */
static void ready_timed_out(struct mx_runner *r, const char *last)
{
        _cleanup_free_ char *t = mx_format_duration(r->ready_deadline - r->started_mono);

        fail_run(r, "not ready within %s (last probe: %s)", t, last);
        r->cancelled = true;
        r->why = MX_OUTCOME_TIMEOUT;
        target_stop(r, "not ready in time");
}

static void probe_done(struct mx_http_call *call, struct mx_http_response *res, void *ud)
{
        struct mx_runner *r = ud;

        (void)call;
        r->call = NULL;
        if (r->phase != PHASE_STARTING)
                return;
        if (res->error == 0 && res->status == json_integer_value(profile_get(r, "ready", "status"))) {
                became_ready(r);
                return;
        }
        /* Refused (vLLM loading), 503 (llama-server, SGLang loading): not yet. */
        if (mx_now_mono_us() >= r->ready_deadline) {
                ready_timed_out(r, res->error ? strna(res->error_text)
                                              : "an HTTP status other than the expected one");
                return;
        }
        probe_arm(r);
}

static void probe_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_runner *r = ud;
        _cleanup_free_ char *url = xasprintf("%s%s", r->url, json_string_value(profile_get(r, "ready", "path")));
        _cleanup_free_ char *err = NULL;
        struct mx_http_request req = { .method = "GET", .url = url, .timeout_ms = 5000, .max_body = 4096,
                                       .headers = r->auth_header ? r->headers : NULL };

        (void)fd, (void)what;
        if (r->phase != PHASE_STARTING || r->call)
                return;
        if (mx_http_start(r->ctx.http, &req, probe_done, r, &r->call, &err) >= 0)
                return;
        if (mx_now_mono_us() >= r->ready_deadline)
                ready_timed_out(r, strna(err));
        else
                probe_arm(r);
}

/* The server exited. On its own, before we stopped it: that is a crash, whatever the status. */
static void server_exit_cb(pid_t pid, int status, void *ud)
{
        struct mx_runner *r = ud;
        _cleanup_free_ char *how = crash_class_from_status(status);

        (void)pid;
        r->exited = true;
        r->status = status;
        if (r->phase >= PHASE_STOPPING)
                return;
        r->exited_on_its_own = true;
        logcap_drain(r->log);
        logcap_note(r->log, "the server exited on its own (%s)", how);
        fail_run(r, "the server exited (%s)%s", how, r->ready_mono ? "" : " before it was ready");
        /* Its engine or workers may live on (vLLM's EngineCore survives its parent): stop them too. */
        target_stop(r, "the server exited");
}

/* ---- start ---- */

static int placeholder_values(struct mx_runner *r, char **reterr)
{
        const char *host = json_string_value(json_object_get(r->profile, "host"));
        int port = (int)json_integer_value(json_object_get(r->profile, "port")), q;

        if (!host)
                host = "127.0.0.1";
        if (port == 0) {
                q = port_pick_free(host, &port, reterr);
                if (q < 0)
                        return q;
        } else if (port_probe_listener(host, port) > 0) {
                /* The ready probe and L1 would talk to whatever answers there (a server left running). */
                *reterr = xasprintf("port %d on %s is in use: something already answers there", port, host);
                return -EADDRINUSE;
        }
        r->port_text = xasprintf("%d", port);
        r->values[MX_PLACEHOLDER_HOST] = xstrdup(host);
        r->values[MX_PLACEHOLDER_PORT] = xstrdup(r->port_text);
        r->values[MX_PLACEHOLDER_RUN_DIR] = xstrdup(r->ctx.run_dir);
        if (json_is_string(json_object_get(r->ctx.spec, "source_dir")))
                r->values[MX_PLACEHOLDER_SOURCE_DIR] =
                        xstrdup(json_string_value(json_object_get(r->ctx.spec, "source_dir")));
        if (json_is_string(json_object_get(r->ctx.spec, "model")))
                r->values[MX_PLACEHOLDER_MODEL] = xstrdup(json_string_value(json_object_get(r->ctx.spec, "model")));
        if (json_is_string(json_object_get(r->ctx.spec, "served_model_name")))
                r->values[MX_PLACEHOLDER_SERVED_MODEL_NAME] =
                        xstrdup(json_string_value(json_object_get(r->ctx.spec, "served_model_name")));
        else if (r->values[MX_PLACEHOLDER_MODEL])
                r->values[MX_PLACEHOLDER_SERVED_MODEL_NAME] = xstrdup(r->values[MX_PLACEHOLDER_MODEL]);
        r->url = strchr(host, ':') ? xasprintf("http://[%s]:%d", host, port) : xasprintf("http://%s:%d", host, port);
        return 0;
}

/* Expand s as a check; a failure names where s comes from. */
static int check_expands(struct mx_runner *r, const char *where, const char *s, char **reterr)
{
        _cleanup_free_ char *x = NULL, *err = NULL;
        int q = mx_placeholder_expand(strempty(s), (const char *const *)r->values, &x, &err);

        if (q < 0)
                *reterr = xasprintf("%s: %s", where, strna(err));
        return q;
}

/* The profile's other commands and the report path expand now, so that a missing value fails the start. */
static int check_profile_placeholders(struct mx_runner *r, char **reterr)
{
        static const char *const cmds[][3] = { { "stop", "command", "stop.command" },
                                               { "logs", "command", "logs.command" },
                                               { "profiler", "after_stop", "profiler.after_stop" } };
        json_t *report = profile_get(r, "profiler", "report"), *w;
        size_t i;
        int q;

        for (size_t k = 0; k < ELEMENTSOF(cmds); k++)
                json_array_foreach (profile_get(r, cmds[k][0], cmds[k][1]), i, w) {
                        q = check_expands(r, cmds[k][2], json_string_value(w), reterr);
                        if (q < 0)
                                return q;
                }
        if (!json_is_string(report))
                return 0;
        return check_expands(r, "profiler.report", json_string_value(report), reterr);
}

static void logs_exit_cb(pid_t pid, int status, void *ud)
{
        struct mx_runner *r = ud;

        (void)pid, (void)status;
        r->logs_pid = 0;
}

/* Start a command of the profile, tagged like the server, its output into the run's log. */
static int spawn_tagged(struct mx_runner *r, json_t *cmd, proc_exit_cb cb, struct proc_info *ret)
{
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *err = NULL;
        int p[2], q;
        size_t i;
        json_t *w;

        json_array_foreach (cmd, i, w) {
                char *x = NULL;
                q = mx_placeholder_expand(json_string_value(w), (const char *const *)r->values, &x, &err);
                if (q < 0)
                        return q;
                strv_consume(&argv, x);
        }
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        q = proc_spawn(&(struct proc_spec){ .argv = argv, .env = r->env, .cwd = r->ctx.run_dir, .tag = r->ctx.tag,
                                            .stdout_fd = p[1], .stderr_fd = p[1] },
                       ret, &err);
        close(p[1]);
        if (q < 0) {
                close(p[0]);
                return q;
        }
        (void)proc_reaper_watch(r->ctx.reaper, ret->pid, cb, r);
        return logcap_add_source(r->log, p[0]);
}

/* A second log source (docker logs -f ...), tagged like the server so the stop sweeps it. */
static int start_logs_command(struct mx_runner *r)
{
        json_t *cmd = profile_get(r, "logs", "command");
        struct proc_info info;
        int q;

        if (!json_is_array(cmd))
                return 0;
        q = spawn_tagged(r, cmd, logs_exit_cb, &info);
        if (q >= 0)
                r->logs_pid = info.pid;
        return q;
}

static int target_spawn(struct mx_runner *r, char **reterr)
{
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *log_path = xasprintf("%s/server.log", r->ctx.run_dir);
        int p[2], q;

        q = runner_build_command(&r->ctx, (const char *const *)r->values, &argv, &r->env, reterr);
        if (q < 0)
                return q;
        q = logcap_new(r->ctx.base, log_path, r->ctx.log_max_bytes, &log_ops, r, &r->log);
        if (q < 0)
                return *reterr = xasprintf("cannot create %s: %s", log_path, strerror(-q)), q;
        r->ev->log_opened(r->ud, log_path);
        mx_levels_set_log(r->levels, r->log);
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        q = proc_spawn(&(struct proc_spec){ .argv = argv, .env = r->env, .cwd = r->ctx.run_dir,
                                            .tag = r->ctx.tag, .stdout_fd = p[1], .stderr_fd = p[1] },
                       &r->info, reterr);
        close(p[1]);
        if (q < 0) {
                close(p[0]);
                return q;
        }
        q = proc_reaper_watch(r->ctx.reaper, r->info.pid, server_exit_cb, r);
        if (q < 0)
                mx_die("cannot watch a child we just started: %s", strerror(-q));
        r->ev->process(r->ud, r->info.pid, r->info.pgid, r->info.starttime);
        if (r->ev->command) {
                _cleanup_(json_decrefp) json_t *cmd =
                        runner_command_record(&r->ctx, (const char *const *)r->values, argv);

                r->ev->command(r->ud, cmd);
        }
        (void)logcap_add_source(r->log, p[0]);
        logcap_note(r->log, "started %s (pid %d) on %s", argv[0], (int)r->info.pid, r->url);
        q = start_logs_command(r);
        if (q < 0)
                logcap_note(r->log, "cannot start the log command: %s", strerror(-q));
        return 0;
}

/* ---- what the levels tell the runner ---- */

static void levels_started(void *ud, const char *level)
{
        struct mx_runner *r = ud;

        r->ev->level_started(r->ud, level);
}

static void levels_recorded(void *ud, const struct mx_level_result *lr)
{
        struct mx_runner *r = ud;

        r->ev->level_finished(r->ud, lr);
}

static void levels_done(void *ud)
{
        struct mx_runner *r = ud;

        check_health(r);
}

static void levels_timed_out(void *ud, const char *level)
{
        struct mx_runner *r = ud;

        fail_run(r, "%s exceeded its time limit", level);
        r->cancelled = true;
        r->why = MX_OUTCOME_TIMEOUT;
        target_stop(r, "level time limit");
}

static const struct mx_levels_hooks levels_hooks = {
        .started = levels_started,
        .recorded = levels_recorded,
        .done = levels_done,
        .timed_out = levels_timed_out,
};

/* The levels of the run, each with its context: the server's address, model, log and run directory. */
/*
 * Levels' memory sample: the PSS of the run's processes (levels.h), plus what
 * the attempt's GPU sampler saw last: the device memory of the run's compute
 * processes, and the system's used memory (the GB10's unified memory).
 */
static int mem_sample(void *ud, struct mx_mem_sample *ret)
{
        struct mx_runner *r = ud;
        const struct mx_sample *last = r->ctx.sampler ? mx_sampler_last(r->ctx.sampler) : NULL;
        int q = mx_mem_sample_pss((void *)r->ctx.tag, ret);

        if (q < 0)
                return q;
        mx_mem_sample_add_gpu(ret, last);
        return 0;
}

/*
 * The bearer token of every request (mxmatrix.json(5): api_key, api_key_env): the profile's api_key, else
 * the variable api_key_env names, from the run's env (the server's, placeholders expanded) and then the
 * daemon's environment. A named variable that is set nowhere fails the start: every /v1 request would 401.
 */
static int resolve_api_key(struct mx_runner *r, char **reterr)
{
        const char *key = json_string_value(json_object_get(r->profile, "api_key"));
        const char *var = json_string_value(json_object_get(r->profile, "api_key_env"));
        _cleanup_free_ char *from_env = NULL;
        size_t i, n = var ? strlen(var) : 0;
        json_t *e;

        json_array_foreach (json_object_get(r->ctx.spec, "env"), i, e) {
                const char *kv = strempty(json_string_value(e));
                if (var && strncmp(kv, var, n) == 0 && kv[n] == '=') {
                        free(from_env);
                        from_env = NULL;
                        if (mx_placeholder_expand(kv + n + 1, (const char *const *)r->values, &from_env, reterr) < 0)
                                return -EINVAL;
                }
        }
        if (var && !from_env && getenv(var))
                from_env = xstrdup(getenv(var));
        if (var && (!from_env || !*from_env))
                return *reterr = xasprintf("api_key_env names %s, which is set neither in the run's env nor in "
                                           "the daemon's environment",
                                           var),
                       -ENOKEY;
        if (from_env)
                key = from_env;
        if (!key)
                return 0;
        if (strpbrk(key, "\r\n"))
                return *reterr = xstrdup("the API key holds a line break"), -EINVAL;
        r->api_key = xstrdup(key);
        r->auth_header = xasprintf("Authorization: Bearer %s", key);
        r->headers[0] = r->auth_header;
        return 0;
}

/* The sampler's window for a level (levels.h): begin starts it. */
static const struct mx_sample_summary *gpu_window(void *ud, bool begin)
{
        struct mx_runner *r = ud;

        if (!r->ctx.sampler)
                return NULL;
        if (begin)
                mx_sampler_window_begin(r->ctx.sampler);
        return mx_sampler_window(r->ctx.sampler);
}

/* The GPU's energy counter for a level (levels.h). */
static int gpu_energy(void *ud, int64_t *ret_mj, char **reterr)
{
        struct mx_runner *r = ud;

        if (!r->ctx.sampler)
                return mx_reterr(reterr, -ENODEV, "the daemon has no GPU sampler");
        return mx_sampler_energy_mj(r->ctx.sampler, ret_mj, reterr);
}

static int setup_levels(struct mx_runner *r, char **reterr)
{
        const char *model = json_string_value(json_object_get(r->ctx.spec, "served_model_name"));
        struct mx_level_ctx lc = {
                .base = r->ctx.base, .http = r->ctx.http, .url = r->url,
                .headers = r->auth_header ? r->headers : NULL, .api_key = r->api_key,
                .model = model ? model : json_string_value(json_object_get(r->ctx.spec, "model")),
                .run_dir = r->ctx.run_dir, .tag = r->ctx.tag, .spec = r->ctx.spec, .profile = r->profile,
                .crash = r->crash, .values = r->values, .mem_sample = mem_sample, .mem_ud = r,
                .gpu_window = gpu_window, .gpu_energy = gpu_energy,
                .history = r->ctx.history,
        };

        return mx_levels_new(&lc, r->ctx.levels, r->ctx.level_timeout_ms, &levels_hooks, r, &r->levels, reterr);
}

static struct mx_runner *target_free(struct mx_runner *r);

static int target_start(const struct mx_run_ctx *ctx, const struct mx_run_events *ev, void *ud,
                        struct mx_runner **ret, char **reterr)
{
        struct mx_runner *r = xcalloc(1, sizeof(*r));
        int64_t timeout;
        int q;

        r->ctx = *ctx;
        r->ev = ev;
        r->ud = ud;
        r->profile = json_object_get(ctx->spec, "profile");
        r->timer = evtimer_new(ctx->base, probe_cb, r);
        r->after_timer = evtimer_new(ctx->base, after_timeout_cb, r);
        if (!json_is_object(r->profile) || !json_is_object(profile_get(r, "ready", NULL))) {
                *reterr = xstrdup("the run's snapshot has no server profile");
                target_free(r);
                return -EINVAL;
        }
        q = crash_scan_new(json_object_get(r->profile, "crash_signatures"), &r->crash, reterr);
        if (q >= 0)
                q = placeholder_values(r, reterr);
        if (q >= 0)
                q = check_profile_placeholders(r, reterr);
        if (q >= 0)
                q = resolve_api_key(r, reterr);
        if (q >= 0)
                q = setup_levels(r, reterr);
        if (q >= 0)
                q = target_spawn(r, reterr);
        if (q < 0) {
                target_free(r);
                return q;
        }
        r->started_mono = mx_now_mono_us();
        /* The matrix's settings.ready_timeout (in the snapshot) over the profile's. */
        timeout = json_integer_value(
                json_object_get(json_object_get(ctx->spec, "settings"), "ready_timeout_ms"));
        if (timeout <= 0)
                timeout = json_integer_value(profile_get(r, "ready", "timeout_ms"));
        r->ready_deadline = r->started_mono + (timeout > 0 ? timeout : 300000) * 1000;
        /* L1 includes the start: "ready within 5 minutes" (seed 001 Level 1). */
        r->ev->level_started(r->ud, json_array_size(ctx->levels) ? json_string_value(json_array_get(ctx->levels, 0))
                                                                  : "starting");
        probe_arm(r);
        *ret = r;
        return 0;
}

static void target_cancel(struct mx_runner *r, enum mx_outcome why)
{
        if (r->phase >= PHASE_STOPPING || r->cancelled)
                return;
        r->cancelled = true;
        r->why = why;
        target_stop(r, mx_outcome_to_string(why));
}

static const char *target_level(struct mx_runner *r)
{
        switch (r->phase) {
        case PHASE_STARTING:
                return "starting";
        case PHASE_LEVELS:
                return mx_levels_current(r->levels) ? mx_levels_current(r->levels) : "health";
        case PHASE_STOPPING:
                return "stopping";
        default:
                return NULL;
        }
}

static struct mx_runner *target_free(struct mx_runner *r)
{
        if (!r)
                return NULL;
        if (r->call)
                mx_http_cancel(r->call);
        if (r->stop)
                proc_stop_cancel(r->stop);
        if (r->info.pid > 0 && !r->exited)
                (void)proc_reaper_unwatch(r->ctx.reaper, r->info.pid);
        if (r->logs_pid > 0)
                (void)proc_reaper_unwatch(r->ctx.reaper, r->logs_pid);
        if (r->timer)
                event_free(r->timer);
        if (r->after_timer)
                event_free(r->after_timer);
        if (r->after_pid > 0)
                (void)proc_reaper_unwatch(r->ctx.reaper, r->after_pid);
        logcap_free(r->log);
        crash_scan_free(r->crash);
        mx_levels_free(r->levels);
        for (size_t i = 0; i < _MX_PLACEHOLDER_MAX; i++)
                free(r->values[i]);
        strv_free(r->env);
        free(r->api_key);
        free(r->auth_header);
        free(r->port_text);
        free(r->url);
        free(r->failure);
        free(r);
        return NULL;
}

const struct mx_runner_ops runner_target_ops = {
        .name = "target",
        .start = target_start,
        .cancel = target_cancel,
        .current_level = target_level,
        .free = target_free,
};
