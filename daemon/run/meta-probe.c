/* SPDX-License-Identifier: MIT */
/*
 * One metadata probe: a child process whose stdout and stderr are read on the
 * event loop, bounded in time (SIGKILL to its process group at the limit) and
 * in output (killed once stdout passes the cap, the first bytes kept), so a
 * hanging `docker` or an endless `yes` costs the loop nothing but a few reads.
 */
#include "meta-probe.h"
#include "proc-reaper.h"
#include "proc.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>

extern char **environ;

struct meta_probe {
        struct event_base *base;
        struct proc_reaper *reaper;
        meta_probe_cb cb;
        void *ud;
        pid_t pid;
        uint64_t starttime;
        bool alive; /* started and not yet reaped: its pid is still ours to signal */
        bool killed;
        int status;
        int fd[2]; /* stdout, stderr; -1 once at EOF */
        struct event *ev[2];
        struct event *timer, *done_ev;
        struct mx_buf buf[2];
        size_t max[2];
        bool timed_out, truncated;
        char *spawn_error;
        int64_t started, timeout_ms;
};

static void probe_kill(struct meta_probe *p)
{
        _cleanup_free_ struct proc_entry *left = NULL;
        size_t n = 0;

        if (p->pid <= 0 || p->killed)
                return;
        p->killed = true;
        /* The probe leads its own session and group (proc_spawn), so this reaches what it started too. */
        if (p->alive) {
                (void)kill(-p->pid, SIGKILL);
                return;
        }
        /*
         * Reaped, but something it started still holds a pipe: find the group's members by start time, as
         * the group's number may by now belong to someone else.
         */
        if (proc_scan(&(struct proc_match){.group = p->pid, .group_since = p->starttime}, &left, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                (void)kill(left[i].pid, SIGKILL);
}

static void close_stream(struct meta_probe *p, int i)
{
        if (p->ev[i]) {
                event_free(p->ev[i]);
                p->ev[i] = NULL;
        }
        if (p->fd[i] >= 0) {
                close(p->fd[i]);
                p->fd[i] = -1;
        }
}

/* Done once reaped and both pipes are at EOF; a killed probe's pipes may stay open in an escaped grandchild.
 */
static void maybe_done(struct meta_probe *p)
{
        if (p->alive || (!p->killed && (p->fd[0] >= 0 || p->fd[1] >= 0)))
                return;
        close_stream(p, 0);
        close_stream(p, 1);
        event_del(p->timer);
        event_active(p->done_ev, EV_TIMEOUT, 1);
}

static void read_cb(evutil_socket_t fd, short what, void *ud)
{
        struct meta_probe *p = ud;
        int i = fd == p->fd[0] ? 0 : 1;
        char chunk[65536];
        ssize_t n;

        (void)what;
        n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                close_stream(p, i);
                maybe_done(p);
                return;
        }
        if (p->buf[i].len + (size_t)n > p->max[i]) {
                mx_buf_add(&p->buf[i], chunk, p->max[i] - p->buf[i].len);
                if (i == 0) {
                        /* More output than anyone will read: stop it rather than drain it for the whole
                         * limit. */
                        p->truncated = true;
                        probe_kill(p);
                }
                return;
        }
        mx_buf_add(&p->buf[i], chunk, (size_t)n);
}

static void exit_cb(pid_t pid, int status, void *ud)
{
        struct meta_probe *p = ud;

        (void)pid;
        p->alive = false;
        p->status = status;
        maybe_done(p);
}

static void timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct meta_probe *p = ud;

        (void)fd, (void)what;
        p->timed_out = true;
        probe_kill(p);
        /* Reaped already but a pipe is held open by something it left: do not wait for the pipe. */
        p->killed = true;
        maybe_done(p);
}

static void done_cb(evutil_socket_t fd, short what, void *ud)
{
        struct meta_probe *p = ud;
        struct meta_probe_result res = {
                .spawn_error = p->spawn_error,
                .timed_out = p->timed_out,
                .truncated = p->truncated,
                .status = p->status,
                .out = p->buf[0].data ? p->buf[0].data : "",
                .out_len = p->buf[0].len,
                .err = p->buf[1].data ? p->buf[1].data : "",
                .err_len = p->buf[1].len,
                .duration_us = mx_now_mono_us() - p->started,
                .timeout_ms = p->timeout_ms,
        };

        (void)fd, (void)what;
        p->cb(&res, p->ud); /* may free p */
}

struct meta_probe *meta_probe_start(const struct meta_probe_opts *o, char *const *argv, meta_probe_cb cb,
                                    void *ud)
{
        struct meta_probe *p = xcalloc(1, sizeof(*p));
        int out[2] = {-1, -1}, err[2] = {-1, -1};
        struct proc_info info;
        char *why = NULL;
        int r;

        p->base = o->base;
        p->reaper = o->reaper;
        p->cb = cb;
        p->ud = ud;
        p->fd[0] = p->fd[1] = -1;
        p->max[0] = o->output_max;
        p->max[1] = META_STDERR_MAX;
        p->started = mx_now_mono_us();
        p->timeout_ms = o->timeout_ms;
        p->timer = evtimer_new(o->base, timeout_cb, p);
        p->done_ev = event_new(o->base, -1, 0, done_cb, p);
        if (!p->timer || !p->done_ev)
                mx_die("out of memory creating a probe");
        /* Only our ends are non-blocking: the flag lives in the open file, and the child's end must block.
         */
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
            fcntl(out[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(err[0], F_SETFL, O_NONBLOCK) < 0) {
                p->spawn_error = xasprintf("cannot create a pipe: %m");
                goto fail;
        }
        r = proc_spawn(&(struct proc_spec){.argv = argv,
                                           .env = o->env ? o->env : environ,
                                           .cwd = o->cwd,
                                           .tag = o->tag,
                                           .stdout_fd = out[1],
                                           .stderr_fd = err[1]},
                       &info, &why);
        if (r < 0) {
                p->spawn_error = why ? why : xasprintf("cannot start %s: %s", argv[0], strerror(-r));
                goto fail;
        }
        p->pid = info.pid;
        p->starttime = info.starttime;
        p->alive = true;
        (void)proc_reaper_watch(o->reaper, p->pid, exit_cb, p);
        close(out[1]);
        close(err[1]);
        p->fd[0] = out[0];
        p->fd[1] = err[0];
        for (int i = 0; i < 2; i++) {
                p->ev[i] = event_new(o->base, p->fd[i], EV_READ | EV_PERSIST, read_cb, p);
                if (!p->ev[i] || event_add(p->ev[i], NULL) < 0)
                        mx_die("out of memory creating a probe");
        }
        {
                struct timeval tv = {.tv_sec = o->timeout_ms / 1000,
                                     .tv_usec = (o->timeout_ms % 1000) * 1000};

                evtimer_add(p->timer, &tv);
        }
        return p;
fail:
        for (int i = 0; i < 2; i++) {
                if (out[i] >= 0)
                        close(out[i]);
                if (err[i] >= 0)
                        close(err[i]);
        }
        event_active(p->done_ev, EV_TIMEOUT, 1);
        return p;
}

struct meta_probe *meta_probe_free(struct meta_probe *p)
{
        if (!p)
                return NULL;
        if (p->alive) {
                probe_kill(p);
                (void)proc_reaper_unwatch(p->reaper, p->pid); /* the reaper still reaps it, silently */
        }
        close_stream(p, 0);
        close_stream(p, 1);
        event_free(p->timer);
        event_free(p->done_ev);
        mx_buf_free(&p->buf[0]);
        mx_buf_free(&p->buf[1]);
        free(p->spawn_error);
        free(p);
        return NULL;
}

/* The last non-empty line of stderr, escaped, for a one-line reason. */
static char *stderr_line(const struct meta_probe_result *res)
{
        size_t end = res->err_len, start;

        while (end > 0 &&
               (res->err[end - 1] == '\n' || res->err[end - 1] == '\r' || res->err[end - 1] == ' '))
                end--;
        start = end;
        while (start > 0 && res->err[start - 1] != '\n')
                start--;
        if (start == end)
                return NULL;
        {
                _cleanup_free_ char *line = xstrndup(res->err + start, end - start);
                return mx_escape(line, 300);
        }
}

char *meta_probe_failure(const struct meta_probe_result *res)
{
        _cleanup_free_ char *line = NULL;

        if (res->spawn_error)
                return xstrdup(res->spawn_error);
        if (res->timed_out)
                return xasprintf("timed out (limit %" PRId64 " ms)", res->timeout_ms);
        if (res->truncated)
                return NULL; /* killed by us for its size: what it printed is kept */
        line = stderr_line(res);
        if (WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0)
                return NULL;
        if (WIFEXITED(res->status))
                return xasprintf("exited with status %d%s%s", WEXITSTATUS(res->status), line ? ": " : "",
                                 strempty(line));
        if (WIFSIGNALED(res->status))
                return xasprintf("killed by signal %d (%s)%s%s", WTERMSIG(res->status),
                                 strsignal(WTERMSIG(res->status)), line ? ": " : "", strempty(line));
        return xstrdup("ended in an unknown way");
}
