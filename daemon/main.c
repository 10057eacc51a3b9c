/* SPDX-License-Identifier: MIT */
/*
 * mxmatrixd: open the queue, recover what a previous daemon left, serve the
 * control socket, run the queue one run at a time. A new-style daemon: it never
 * forks, logs to the journal (or stderr), and tells systemd when it is ready
 * (only once the database is open and the socket is served) and when it stops.
 */
#include "bisect.h"
#include "cgroup.h"
#include "health.h"
#include "config.h"
#include "control.h"
#include "daemon-reload.h"
#include "executor-slurm.h"
#include "daemon.h"
#include "http.h"
#include "listen.h"
#include "log.h"
#include "matrix.h"
#include "methods.h"
#include "notify.h"
#include "proc-reaper.h"
#include "proc.h"
#include "recover.h"
#include "scheduler.h"
#include "stream.h"

#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* 75 (EX_TEMPFAIL): another daemon holds the state directory; 78 (EX_CONFIG): a bad configuration. */
enum { EXIT_LOCKED = 75, EXIT_CONFIG = 78 };

/* The lock file in the state directory; it holds the holder's pid, for the message of the one refused. */
#define STATE_LOCK_FILE "lock"

static void load_matrix(struct mx_daemon *d)
{
        _cleanup_free_ char *err = NULL;

        if (!d->cfg.matrix_path)
                return;
        /* A broken matrix must not stop the queue: queued runs carry their own snapshots. */
        if (daemon_reload_matrix(d, &err) < 0)
                log_error("cannot load the matrix, submissions will fail until it is fixed: %s", err);
        else
                log_info("matrix %s loaded", d->cfg.matrix_path);
}

/* What the control socket's handlers need from up here. */
static const struct mx_control_hooks control_hooks = {
        .reload_matrix = daemon_reload_matrix,
};

/* The scheduler's and the executors' events: to the followers (stream.h) and to STATUS= (notify.h). */
static void watch_job_changed(void *ud, int64_t job)
{
        stream_job_changed(ud, job);
}

static void watch_log_appended(void *ud, int64_t run)
{
        stream_log_appended(ud, run);
}

static void watch_run_finished(void *ud, int64_t run)
{
        stream_run_finished(ud, run);
}

static void watch_status(void *ud, const char *line)
{
        struct mx_daemon *d = ud;

        notify_status(d->notify, line);
}

static void shutdown_done(void *ud)
{
        struct mx_daemon *d = ud;

        event_base_loopexit(d->base, NULL);
}

static void signal_term_cb(evutil_socket_t sig, short what, void *ud)
{
        struct mx_daemon *d = ud;

        (void)what;
        if (d->stopping)
                return;
        log_notice("%s received, stopping", strsignal((int)sig));
        d->stopping = true;
        notify_stopping(d->notify, sched_busy(d->sched) ? "Stopping the current run" : "Shutting down");
        /* Clients go first: nothing new may be accepted while the run is being stopped. */
        d->control = control_free(d->control);
        sched_shutdown(d->sched, shutdown_done, d);
}

static void signal_hup_cb(evutil_socket_t sig, short what, void *ud)
{
        struct mx_daemon *d = ud;
        _cleanup_free_ char *err = NULL, *status = NULL;

        (void)sig, (void)what;
        notify_reloading(d->notify);
        if (daemon_reload_matrix(d, &err) < 0)
                log_error("reload: keeping the previous matrix: %s", err);
        else
                log_ctx(LOG_NOTICE, MX_MSGID_MATRIX_RELOADED, NULL, "matrix %s reloaded", d->cfg.matrix_path);
        status = sched_status_line(d->sched);
        notify_ready(d->notify, status);
}

static int resolve_group(const char *name, gid_t *ret)
{
        struct group *g;

        errno = 0;
        g = getgrnam(name);
        if (!g)
                return errno ? -errno : -ENOENT;
        *ret = g->gr_gid;
        return 0;
}

/*
 * A stop holds a pidfd per process of the run (proc-stop.h) and every client
 * holds a socket: raise the soft descriptor limit to the hard one.
 */
static void raise_fd_limit(void)
{
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int read_boot_id(struct mx_daemon *d)
{
        char id[PROC_BOOT_ID_SIZE];
        int r = proc_boot_id(id);

        if (r < 0)
                return r;
        d->boot_id = xstrdup(id);
        return 0;
}

/*
 * One daemon per state directory: a second one would recover the first one's
 * running attempt as interrupted, kill its server, record a false crash, and
 * then both would run servers on the one GPU. An exclusive flock() on a file in
 * the state directory, held (by the open descriptor) for the daemon's life and
 * released by the kernel however it ends, is taken before anything touches the
 * database or a process. Returns 0, or an exit code.
 */
static int lock_state_dir(struct mx_daemon *d)
{
        _cleanup_free_ char *path = xasprintf("%s/" STATE_LOCK_FILE, d->cfg.state_dir);
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
        char buf[32];

        if (fd < 0)
                return log_error_errno(-errno, "cannot open the lock file %s", path), EXIT_FAILURE;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                ssize_t k = errno == EWOULDBLOCK ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
                int64_t holder = 0;

                if (errno != EWOULDBLOCK && k < 0)
                        return log_error_errno(-errno, "cannot lock %s", path), EXIT_FAILURE;
                buf[MX_MAX(k, (ssize_t)0)] = '\0';
                buf[strcspn(buf, "\n")] = '\0';
                (void)mx_parse_int64(buf, 1, INT32_MAX, &holder);
                notify_failure(d->notify, -EBUSY, "The state directory is in use by another mxmatrixd");
                log_ctx(LOG_ERR, MX_MSGID_STATE_LOCKED, NULL,
                        "another mxmatrixd (pid %s) is using the state directory %s; stop it or choose another "
                        "--state-dir (the lock is %s)",
                        holder > 0 ? buf : "unknown", d->cfg.state_dir, path);
                return EXIT_LOCKED;
        }
        /* Ours now: say who holds it. A failure here costs only the pid in the other one's message. */
        if (ftruncate(fd, 0) == 0) {
                int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
                ssize_t k _unused_ = pwrite(fd, buf, (size_t)n, 0);
        }
        d->lock_fd = TAKE_FD(fd);
        return 0;
}

/*
 * Runs' cgroups (cgroup.h). Without one the daemon still works: stops go by
 * the adopted children and the run tag, as the log says.
 */
static void setup_cgroups(struct mx_daemon *d)
{
        _cleanup_free_ char *err = NULL;
        int r = cgroup_setup(d->cfg.state_dir, &d->cgroup, &err);

        if (r == -ECANCELED)
                log_notice("%s; runs are contained by adopted children and their run tag only", err);
        else if (r < 0)
                log_warning("runs get no cgroup: %s; they are contained by adopted children and their run tag "
                            "only",
                            err);
        else
                log_info("runs' cgroups go below %s%s", d->cgroup->base,
                         d->cgroup->delegated ? " (delegated by systemd; the daemon moved into its leaf 'daemon')"
                                              : "");
}

/* Everything up to the event loop; returns an exit code, 0 to run. */
static int setup(struct mx_daemon *d, struct listen_socket *ls)
{
        const struct mx_sched_watch watch = {
                .job_changed = watch_job_changed, .log_appended = watch_log_appended,
                .run_finished = watch_run_finished, .status = watch_status, .ud = d,
        };
        _cleanup_free_ char *dbpath = NULL, *err = NULL;
        gid_t sock_gid = (gid_t)-1;
        int r;

        notify_status(d->notify, "Opening the job database");
        r = mx_mkdir_p(d->cfg.state_dir, 0750);
        if (r < 0) {
                notify_failure(d->notify, r, "Cannot create the state directory");
                log_error_errno(r, "cannot create %s", d->cfg.state_dir);
                return EXIT_FAILURE;
        }
        r = lock_state_dir(d);
        if (r != 0)
                return r;
        dbpath = xasprintf("%s/queue.db", d->cfg.state_dir);
        r = db_open(dbpath, &d->db, &err);
        if (r < 0) {
                notify_failure(d->notify, r, "Cannot open the job database");
                log_error("%s", err);
                return EXIT_FAILURE;
        }
        r = queue_get_paused(d->db, &d->paused);
        if (r >= 0)
                r = queue_get_pause_reason(d->db, &d->pause_reason);
        if (r < 0)
                return log_error_errno(r, "cannot read the queue state"), EXIT_FAILURE;
        if (d->cfg.admin_group) {
                r = resolve_group(d->cfg.admin_group, &d->admin_gid);
                if (r < 0)
                        return log_error_errno(r, "admin group '%s'", d->cfg.admin_group), EXIT_CONFIG;
                d->has_admin_gid = true;
        }
        if (d->cfg.socket_group && (r = resolve_group(d->cfg.socket_group, &sock_gid)) < 0)
                return log_error_errno(r, "socket group '%s'", d->cfg.socket_group), EXIT_CONFIG;
        load_matrix(d);

        r = proc_subreaper_enable();
        if (r < 0)
                log_warning_errno(r, "cannot become a child subreaper; escaped server processes will be found by tag only");
        r = read_boot_id(d);
        if (r < 0)
                return log_error_errno(r, "cannot read the boot id"), EXIT_FAILURE;
        setup_cgroups(d);
        notify_status(d->notify, "Recovering interrupted runs");
        r = recover_interrupted(d);
        if (r < 0)
                return EXIT_FAILURE;
        r = proc_reaper_new(d->base, &d->reaper);
        if (r < 0)
                return log_error_errno(r, "cannot watch child processes"), EXIT_FAILURE;
        r = mx_http_new(d->base, &d->http, &err);
        if (r < 0)
                return log_error("cannot set up HTTP: %s", strna(err)), EXIT_FAILURE;

        free(err);
        err = NULL;
        r = listen_open(d->cfg.socket_path, d->cfg.socket_mode, sock_gid, ls, &err);
        if (r < 0) {
                notify_failure(d->notify, r, "Cannot open the control socket");
                log_error("%s", err ? err : strerror(-r));
                return EXIT_FAILURE;
        }
        d->control = control_new(d, ls->fd, methods_table, &control_hooks, &err);
        if (!d->control) {
                log_error("%s", err);
                return EXIT_FAILURE;
        }
        d->sched = sched_new(d, &watch);
        (void)mx_health_new(d, &d->health);
        sched_set_health_check(d->sched, mx_health_check, d->health);
        d->bisect = bisect_new(d); /* resumes interrupted bisections from the loop */
        if (d->cfg.executor == MX_EXECUTOR_SLURM && executor_slurm_new(d, &watch, &d->slurm) < 0)
                return EXIT_FAILURE;
        return 0;
}

static void teardown(struct mx_daemon *d, struct listen_socket *ls)
{
        d->control = control_free(d->control);
        stream_free_all(d);
        d->bisect = bisect_free(d->bisect);
        d->sched = sched_free(d->sched);
        d->health = mx_health_free(d->health);
        d->slurm = executor_slurm_free(d->slurm);
        listen_close(ls);
        d->http = mx_http_free(d->http);
        d->reaper = proc_reaper_free(d->reaper);
        d->cgroup = cgroup_free(d->cgroup);
        d->db = db_close(d->db);
        d->matrix = mx_matrix_free(d->matrix);
        d->notify = notify_free(d->notify);
        free(d->matrix_error);
        free(d->pause_reason);
        free(d->boot_id);
        config_done(&d->cfg);
        if (d->lock_fd >= 0)
                close(d->lock_fd); /* last: the next daemon may start only once this one is done */
        if (d->base)
                event_base_free(d->base);
}

static void setup_logging(struct mx_config *c)
{
        enum mx_log_sink sink = MX_LOG_AUTO;
        int level = LOG_INFO;

        if (c->log_sink)
                (void)mx_log_parse_sink(c->log_sink, &sink);
        if (c->foreground && !c->log_sink)
                sink = MX_LOG_STDERR;
        if (c->log_level)
                (void)mx_log_parse_level(c->log_level, &level);
        mx_log_setup("mxmatrixd", sink, level);
}

int main(int argc, char **argv)
{
        struct mx_daemon d = { .lock_fd = -1 };
        struct listen_socket ls = { .fd = -1 };
        struct event *sigs[4] = {};
        int r;

        config_defaults(&d.cfg);
        r = config_parse(&d.cfg, argc, argv);
        if (r != 0) {
                config_done(&d.cfg);
                return r < 0 ? EXIT_SUCCESS : r;
        }
        setup_logging(&d.cfg);
        signal(SIGPIPE, SIG_IGN);
        raise_fd_limit();
        d.started_at = mx_now_real_us();
        d.base = event_base_new();
        if (!d.base)
                mx_die("cannot create the event loop");
        d.notify = notify_new(d.base);
        r = setup(&d, &ls);
        if (r != 0) {
                teardown(&d, &ls);
                return r;
        }
        sigs[0] = evsignal_new(d.base, SIGTERM, signal_term_cb, &d);
        sigs[1] = evsignal_new(d.base, SIGINT, signal_term_cb, &d);
        sigs[2] = evsignal_new(d.base, SIGHUP, signal_hup_cb, &d);
        for (int i = 0; i < 3; i++)
                event_add(sigs[i], NULL);
        {
                _cleanup_free_ char *status = sched_status_line(d.sched);
                notify_ready(d.notify, status);
                log_ctx(LOG_INFO, MX_MSGID_DAEMON_STARTED, NULL,
                        "mxmatrixd %s ready on %s (state %s, %s)", MX_VERSION,
                        ls.activated ? "the socket the service manager passed" : d.cfg.socket_path,
                        d.cfg.state_dir, status);
        }
        sched_kick(d.sched);
        event_base_dispatch(d.base);
        log_info("stopped");
        for (int i = 0; i < 3; i++)
                event_free(sigs[i]);
        teardown(&d, &ls);
        return EXIT_SUCCESS;
}
