/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix-run RUNDIR: one run of the queue, executed where Slurm placed it.
 *
 * The daemon (executor-slurm.c) writes RUNDIR/ctx.json (the run's snapshot
 * and its settings) on the shared filesystem and submits this program as the
 * Slurm job. It runs the same code as the local executor: the health command,
 * then runner_meta_ops (metadata, then runner_for_spec(): the target runner
 * with its levels, stop and sweep), under the same time limits. What the
 * runner reports goes to RUNDIR as it happens:
 *   events.jsonl   one JSON object per line, appended (log, command, level-started, level-finished, metadata)
 *   metadata.json  the attempt's metadata record and blobs (written before its event)
 *   result.json    the outcome, written once at the end (temporary file + rename)
 * SIGTERM (scancel, Slurm's time limit, a node taken down) stops the run the
 * way a cancel does; the daemon decides the outcome from Slurm's state.
 * Exit status: 0 when result.json was written, 1 otherwise.
 */
#include "http.h"
#include "log.h"
#include "meta.h"
#include "proc-reaper.h"
#include "proc.h"
#include "runner.h"

#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ctx.json is the daemon's own file, but still read with a bound. */
#define MXRUN_CTX_MAX (16 * 1024 * 1024)

struct mxrun {
        struct event_base *base;
        struct proc_reaper *reaper;
        struct mx_http *http;
        const char *dir;
        json_t *ctx;
        int events_fd;
        const struct mx_runner_ops *ops;
        struct mx_runner *runner;
        struct event *timeout_ev, *term_ev, *health_timer;
        pid_t health_pid;
        bool health_timed_out;
        bool stopping, done, wrote;
        char hostname[256];
};

static void put_event(struct mxrun *m, json_t *e)
{
        _cleanup_free_ char *line = NULL;

        json_object_set_new(e, "at", json_integer(mx_now_real_us()));
        line = json_dumps(e, JSON_COMPACT);
        json_decref(e);
        if (!line)
                return;
        /* One write per line with O_APPEND: a reader never sees half a line followed by another. */
        {
                size_t n = strlen(line);
                _cleanup_free_ char *l = xasprintf("%s\n", line);

                if (write(m->events_fd, l, n + 1) != (ssize_t)(n + 1))
                        log_error("cannot append to %s/events.jsonl: %m", m->dir);
        }
}

/* Write path atomically (temporary file in the same directory, fsync, rename). */
static int write_atomic(const char *dir, const char *name, json_t *j)
{
        _cleanup_free_ char *tmp = xasprintf("%s/.%s.tmp", dir, name), *path = xasprintf("%s/%s", dir, name);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);

        if (fd < 0 || json_dumpfd(j, fd, JSON_COMPACT) < 0 || fsync(fd) < 0 || rename(tmp, path) < 0)
                return -errno ?: -EIO;
        return 0;
}

static void ev_process(void *ud, pid_t pid, pid_t pgid, uint64_t start)
{
        (void)ud, (void)pid, (void)pgid, (void)start; /* a node's pid means nothing to the daemon's recovery */
}

static void ev_log_opened(void *ud, const char *path)
{
        put_event(ud, json_pack("{s:s,s:s}", "t", "log", "path", path));
}

static void ev_log_appended(void *ud)
{
        (void)ud;
}

static void ev_command(void *ud, json_t *command)
{
        put_event(ud, json_pack("{s:s,s:O}", "t", "command", "command", command));
}

static void ev_level_started(void *ud, const char *level)
{
        put_event(ud, json_pack("{s:s,s:s}", "t", "level-started", "level", level));
}

static void ev_level_finished(void *ud, const struct mx_level_result *r)
{
        put_event(ud, json_pack("{s:s,s:s,s:s,s:I,s:I,s:O?,s:O?,s:s?}", "t", "level-finished", "level", r->level,
                                "verdict", r->verdict, "started_at", (json_int_t)r->started_at, "finished_at",
                                (json_int_t)r->finished_at, "metrics", r->metrics, "artifacts", r->artifacts,
                                "message", r->message));
}

/* The node's identity goes into the record: L5 compares runs of one GPU model only. */
static void ev_metadata(void *ud, json_t *record, json_t *blobs)
{
        struct mxrun *m = ud;
        json_t *summary = json_object_get(record, "summary");
        _cleanup_json_ json_t *file = NULL;
        const char *job = getenv("SLURM_JOB_ID");

        json_object_set_new(record, "node",
                            json_pack("{s:s,s:s?,s:s?,s:O?}", "hostname", m->hostname, "slurm_node",
                                      getenv("SLURMD_NODENAME"), "slurm_job_id", job, "gpu_model",
                                      json_object_get(summary, "gpu_name")));
        file = json_pack("{s:O,s:O?}", "record", record, "blobs", blobs);
        if (write_atomic(m->dir, "metadata.json", file) < 0)
                log_error("cannot write %s/metadata.json: %m", m->dir);
        else
                put_event(m, json_pack("{s:s}", "t", "metadata"));
}

static void finish(struct mxrun *m, const struct mx_run_result *r, const char *message)
{
        _cleanup_json_ json_t *j = json_pack(
                "{s:s,s:s?,s:s?,s:i,s:i,s:b,s:s}", "outcome", mx_outcome_to_string(r->outcome), "crash_class",
                r->crash_class, "message", message ? message : r->message, "exit_status", r->exit_status,
                "exit_signal", r->exit_signal, "leftovers", r->leftovers, "node", m->hostname);

        m->done = true;
        if (write_atomic(m->dir, "result.json", j) < 0)
                log_error("cannot write %s/result.json: %m", m->dir);
        else
                m->wrote = true;
        event_base_loopexit(m->base, NULL);
}

static void ev_finished(void *ud, const struct mx_run_result *r)
{
        finish(ud, r, NULL);
}

static const struct mx_run_events events = {
        .process = ev_process,
        .log_opened = ev_log_opened,
        .log_appended = ev_log_appended,
        .level_started = ev_level_started,
        .level_finished = ev_level_finished,
        .finished = ev_finished,
        .metadata = ev_metadata,
        .command = ev_command,
};

static void stop(struct mxrun *m, enum mx_outcome why)
{
        if (m->stopping || m->done)
                return;
        m->stopping = true;
        if (m->runner)
                m->ops->cancel(m->runner, why);
        else if (m->health_pid > 0)
                (void)kill(-m->health_pid, SIGKILL); /* health_exit_cb ends the run */
}

static void timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        log_warning("the run exceeded its time limit; stopping it");
        stop(ud, MX_OUTCOME_TIMEOUT);
}

static void term_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        log_warning("SIGTERM (scancel, Slurm's time limit or the node going down); stopping the run");
        stop(ud, MX_OUTCOME_CANCELLED);
}

static int64_t ctx_int(struct mxrun *m, const char *k)
{
        return json_integer_value(json_object_get(m->ctx, k));
}

static int start_runner(struct mxrun *m)
{
        _cleanup_free_ char *err = NULL;
        struct mx_run_ctx rc = {
                .base = m->base, .reaper = m->reaper, .http = m->http, .job = ctx_int(m, "job"),
                .run = ctx_int(m, "run"), .attempt_id = ctx_int(m, "attempt_id"),
                .attempt = (int)ctx_int(m, "attempt"),
                .tag = json_string_value(json_object_get(m->ctx, "tag")),
                .config_key = json_string_value(json_object_get(m->ctx, "config_key")), .run_dir = m->dir,
                .spec = json_object_get(m->ctx, "spec"), .levels = json_object_get(m->ctx, "levels"),
                .level_timeout_ms = ctx_int(m, "level_timeout_ms"),
                .log_max_bytes = (size_t)ctx_int(m, "log_max_bytes"),
        };
        int r;

        m->ops = &runner_meta_ops; /* metadata first, then runner_for_spec(spec): the local executor's code */
        r = m->ops->start(&rc, &events, m, &m->runner, &err);
        if (r < 0) {
                _cleanup_free_ char *why = xasprintf("the run could not start on %s: %s", m->hostname,
                                                     err ?: strerror(-r));

                finish(m, &(struct mx_run_result){ .outcome = MX_OUTCOME_INFRA_ERROR, .exit_status = -1 }, why);
        }
        return r;
}

static void health_exit_cb(pid_t pid, int status, void *ud)
{
        struct mxrun *m = ud;
        _cleanup_free_ char *why = NULL;

        (void)pid;
        m->health_pid = 0;
        evtimer_del(m->health_timer);
        if (!m->health_timed_out && !m->stopping && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                (void)start_runner(m);
                return;
        }
        why = m->stopping ? xasprintf("stopped during the health gate on %s", m->hostname)
              : m->health_timed_out
                      ? xasprintf("health gate on %s: the health command did not finish in time (its output: "
                                  "%s/health.log)", m->hostname, m->dir)
                      : xasprintf("health gate on %s: the health command failed (status 0x%x; its output: "
                                  "%s/health.log)", m->hostname, (unsigned)status, m->dir);
        finish(m, &(struct mx_run_result){ .outcome = MX_OUTCOME_INFRA_ERROR, .exit_status = -1 }, why);
}

static void health_timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mxrun *m = ud;

        (void)fd, (void)what;
        m->health_timed_out = true;
        if (m->health_pid > 0)
                (void)kill(-m->health_pid, SIGKILL);
}

/* The matrix's health command on this node, before the server starts (the local gate's last step). */
static int health_start(struct mxrun *m, json_t *argv_j)
{
        extern char **environ;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *log = xasprintf("%s/health.log", m->dir), *err = NULL, *tag = NULL;
        _cleanup_close_ int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0640);
        int64_t ms = ctx_int(m, "health_timeout_ms");
        struct proc_info info;
        size_t i;
        json_t *a;
        int r;

        json_array_foreach (argv_j, i, a)
                strv_push(&argv, json_string_value(a));
        tag = xasprintf("%s-health", json_string_value(json_object_get(m->ctx, "tag")));
        r = proc_spawn(&(struct proc_spec){ .argv = argv, .env = environ, .cwd = m->dir, .tag = tag,
                                            .stdout_fd = fd, .stderr_fd = fd },
                       &info, &err);
        if (r < 0) {
                _cleanup_free_ char *why = xasprintf("health gate on %s: cannot start the health command: %s",
                                                     m->hostname, strna(err));

                finish(m, &(struct mx_run_result){ .outcome = MX_OUTCOME_INFRA_ERROR, .exit_status = -1 }, why);
                return r;
        }
        m->health_pid = info.pid;
        (void)proc_reaper_watch(m->reaper, info.pid, health_exit_cb, m);
        {
                struct timeval tv = { .tv_sec = ms > 0 ? ms / 1000 : 60, .tv_usec = ms > 0 ? (ms % 1000) * 1000 : 0 };

                evtimer_add(m->health_timer, &tv);
        }
        return 0;
}

/* RUNDIR/ctx.json into m->ctx and RUNDIR/events.jsonl opened: 0, or -1 after saying why not. */
static int ctx_load(struct mxrun *m)
{
        _cleanup_free_ char *ctx_path = xasprintf("%s/ctx.json", m->dir), *ev_path = NULL;
        json_error_t jerr;
        struct stat st;

        if (stat(ctx_path, &st) < 0 || st.st_size > MXRUN_CTX_MAX) {
                fprintf(stderr, "mxmatrix-run: %s: %s\n", ctx_path, errno ? strerror(errno) : "larger than 16 MiB");
                return -1;
        }
        m->ctx = json_load_file(ctx_path, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(m->ctx)) {
                fprintf(stderr, "mxmatrix-run: %s:%d:%d: %s\n", ctx_path, jerr.line, jerr.column,
                        m->ctx ? "expected an object" : jerr.text);
                return -1;
        }
        ev_path = xasprintf("%s/events.jsonl", m->dir);
        m->events_fd = open(ev_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (m->events_fd < 0) {
                fprintf(stderr, "mxmatrix-run: cannot open %s: %m\n", ev_path);
                return -1;
        }
        return 0;
}

/* The event loop, the reaper, HTTP, SIGTERM and the timers (the run's own armed): 0, or -1. */
static int loop_setup(struct mxrun *m)
{
        _cleanup_free_ char *err = NULL;
        int64_t ms;
        int r;

        (void)signal(SIGPIPE, SIG_IGN);
        r = proc_subreaper_enable();
        if (r < 0)
                log_warning_errno(r, "cannot become a child subreaper; escaped server processes are found by tag");
        m->base = event_base_new();
        if (!m->base || proc_reaper_new(m->base, &m->reaper) < 0 || mx_http_new(m->base, &m->http, &err) < 0) {
                fprintf(stderr, "mxmatrix-run: cannot set up the event loop: %s\n", strna(err));
                return -1;
        }
        (void)proc_run_begin(NULL, NULL); /* every process adopted from now on is this run's */
        m->timeout_ev = evtimer_new(m->base, timeout_cb, m);
        m->term_ev = evsignal_new(m->base, SIGTERM, term_cb, m);
        m->health_timer = evtimer_new(m->base, health_timeout_cb, m);
        if (!m->timeout_ev || !m->term_ev || !m->health_timer || event_add(m->term_ev, NULL) < 0)
                return -1;
        ms = ctx_int(m, "run_timeout_ms");
        if (ms > 0) {
                struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

                evtimer_add(m->timeout_ev, &tv);
        }
        return 0;
}

int main(int argc, char **argv)
{
        struct mxrun m = { .events_fd = -1 };
        json_t *health;
        int rc;

        if (argc != 2 || argv[1][0] == '-') {
                fprintf(stderr, "usage: mxmatrix-run RUNDIR\n"
                                "Execute the run the daemon stored in RUNDIR/ctx.json (a Slurm job of mxmatrixd's "
                                "executor \"slurm\"),\nwriting events.jsonl, metadata.json and result.json there.\n");
                return argc == 2 && streq(argv[1], "--help") ? 0 : 2;
        }
        mx_log_setup("mxmatrix-run", MX_LOG_STDERR, LOG_INFO);
        m.dir = argv[1];
        if (gethostname(m.hostname, sizeof(m.hostname) - 1) < 0)
                snprintf(m.hostname, sizeof(m.hostname), "unknown");
        if (ctx_load(&m) < 0 || loop_setup(&m) < 0)
                return 1;
        put_event(&m, json_pack("{s:s,s:s,s:s?}", "t", "started", "node", m.hostname, "slurm_job_id",
                                getenv("SLURM_JOB_ID")));
        health = json_object_get(m.ctx, "health_command");
        if (json_is_array(health) && json_array_size(health) > 0)
                (void)health_start(&m, health);
        else
                (void)start_runner(&m);
        if (!m.done)
                event_base_dispatch(m.base);
        rc = m.wrote ? 0 : 1;
        if (m.runner)
                m.ops->free(m.runner);
        proc_run_end();
        event_free(m.timeout_ev);
        event_free(m.term_ev);
        event_free(m.health_timer);
        mx_http_free(m.http);
        proc_reaper_free(m.reaper);
        event_base_free(m.base);
        close(m.events_fd);
        json_decref(m.ctx);
        return rc;
}
