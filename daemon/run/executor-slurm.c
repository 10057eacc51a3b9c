/* SPDX-License-Identifier: MIT */
/*
 * Executor "slurm": every run is one Slurm job running mxmatrix-run on a node.
 *
 * Submitting: the attempt is opened and the job's name (the attempt's run tag)
 * stored in one transaction (migration 009), then ctx.json is written to the
 * run's directory on the shared filesystem and `sbatch --parsable` runs as a
 * child read on the event loop; its reply's job id is stored next. A daemon
 * that dies in between finds the job by its name (squeue) instead of
 * submitting it again. --no-requeue: Slurm never reruns a job by itself; a
 * run lost to a node failure comes back to our queue as a new attempt.
 *
 * Following: every poll_interval one `squeue --states=all` child for the
 * jobs in flight; a job squeue no longer knows (older than MinJobAge) is
 * looked up with `sacct --parsable2`. The run directory's events.jsonl is
 * read from where the last poll stopped (levels go into the same tables as
 * the local runner's) and result.json gives the outcome once Slurm says the
 * job has ended, so nothing of the run is alive when it counts as finished.
 *
 * A daemon restart leaves the jobs running (as slurmd leaves its steps):
 * stopping starts nothing and cancels nothing, and the next start reattaches
 * every open attempt with a job name (executor_slurm_new()).
 */
#include "executor-slurm.h"
#include "executor.h"
#include "log.h"
#include "matrix.h"
#include "meta.h"
#include "proc-reaper.h"
#include "queue-slurm.h"
#include "recover.h"
#include "scheduler.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A Slurm tool's reply is read into memory up to this (squeue for 1024 jobs is ~100 KB). */
#define SLURM_REPLY_MAX (4 * 1024 * 1024)
/* One line of events.jsonl (a level with its metrics) may not exceed this. */
#define SLURM_EVENT_LINE_MAX (4 * 1024 * 1024)
/* A Slurm command that does not answer in this long is killed (slurmctld down or wedged). */
#define SLURM_CMD_TIMEOUT_S 60
/* A reattached attempt whose job Slurm does not know is given up only after this long (sbatch may be late). */
#define SLURM_FIND_GRACE_US (10 * 1000 * 1000LL)

struct sl_cmd;
typedef void (*sl_cmd_cb)(struct sl_cmd *c, int status, const char *out, const char *err, void *ud);

/* A Slurm command run as a child; its stdout and stderr are read on the loop, never blocking. */
struct sl_cmd {
        struct mx_executor_slurm *x;
        pid_t pid;
        int fd_out, fd_err;
        struct event *ev_out, *ev_err, *timer;
        struct mx_buf out, err;
        bool exited;
        int status;
        sl_cmd_cb cb;
        void *ud;
        struct sl_cmd *next;
};

struct sjob {
        struct mx_executor_slurm *x;
        int64_t job, run, attempt_id;
        int attempt;
        char *tag, *config_key, *run_dir;
        int64_t jobid;        /* 0: not known yet (sbatch running, or its reply lost) */
        char *state, *node;   /* Slurm's last word */
        char *level;          /* level in progress */
        off_t ev_off;         /* events.jsonl read up to here */
        bool sbatch_running;
        bool cancel_req;      /* a user cancelled: scancel sent or to be sent */
        bool started_logged;
        bool missing_asked;   /* squeue lost it; sacct asked */
        int64_t since_mono;   /* submitted or reattached */
        int64_t started_mono;
        struct sjob *next;
};

struct mx_executor_slurm {
        struct mx_daemon *d;
        struct mx_sched_watch watch; /* as the scheduler's: followers hear of jobs and logs */
        struct sjob *jobs;
        struct sl_cmd *cmds;
        struct event *poll_ev, *kick_ev;
        bool polling;
        bool sbatch_busy;
        bool stopping;
};

static const char *CMD_SBATCH = "sbatch", *CMD_SQUEUE = "squeue", *CMD_SACCT = "sacct", *CMD_SCANCEL = "scancel";

/* ---- child commands ---- */

static void cmd_free(struct sl_cmd *c)
{
        struct sl_cmd **p;

        for (p = &c->x->cmds; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        if (c->ev_out)
                event_free(c->ev_out);
        if (c->ev_err)
                event_free(c->ev_err);
        if (c->timer)
                event_free(c->timer);
        if (c->fd_out >= 0)
                close(c->fd_out);
        if (c->fd_err >= 0)
                close(c->fd_err);
        mx_buf_free(&c->out);
        mx_buf_free(&c->err);
        free(c);
}

static void cmd_maybe_done(struct sl_cmd *c)
{
        if (!c->exited || c->fd_out >= 0 || c->fd_err >= 0)
                return;
        mx_buf_putc(&c->out, '\0');
        mx_buf_putc(&c->err, '\0');
        c->cb(c, c->status, c->out.data, c->err.data, c->ud);
        cmd_free(c);
}

static void cmd_read(struct sl_cmd *c, int *fd, struct event **ev, struct mx_buf *b)
{
        char buf[8192];
        ssize_t n = read(*fd, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n > 0) {
                if (b->len + (size_t)n <= SLURM_REPLY_MAX)
                        mx_buf_add(b, buf, (size_t)n);
                return;
        }
        event_free(*ev);
        *ev = NULL;
        close(*fd);
        *fd = -1;
        cmd_maybe_done(c);
}

static void cmd_out_cb(evutil_socket_t fd, short what, void *ud)
{
        struct sl_cmd *c = ud;

        (void)fd, (void)what;
        cmd_read(c, &c->fd_out, &c->ev_out, &c->out);
}

static void cmd_err_cb(evutil_socket_t fd, short what, void *ud)
{
        struct sl_cmd *c = ud;

        (void)fd, (void)what;
        cmd_read(c, &c->fd_err, &c->ev_err, &c->err);
}

static void cmd_exit_cb(pid_t pid, int status, void *ud)
{
        struct sl_cmd *c = ud;

        (void)pid;
        c->exited = true;
        c->status = status;
        evtimer_del(c->timer);
        cmd_maybe_done(c);
}

static void cmd_timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        struct sl_cmd *c = ud;

        (void)fd, (void)what;
        log_warning("%s did not answer within %d s; killed", c->out.len ? "a Slurm command" : "a Slurm command",
                    SLURM_CMD_TIMEOUT_S);
        (void)kill(c->pid, SIGKILL);
}

/* Run argv; cb gets its exit status and output on the loop. Returns 0 or -errno (cb never comes). */
static int cmd_run(struct mx_executor_slurm *x, char **argv, sl_cmd_cb cb, void *ud)
{
        extern char **environ;
        int po[2], pe[2], r;
        posix_spawn_file_actions_t fa;
        struct sl_cmd *c;

        if (pipe2(po, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        if (pipe2(pe, O_CLOEXEC | O_NONBLOCK) < 0) {
                r = -errno;
                close(po[0]), close(po[1]);
                return r;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, po[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        c = xcalloc(1, sizeof(*c));
        c->x = x;
        c->cb = cb;
        c->ud = ud;
        r = -posix_spawnp(&c->pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(po[1]);
        close(pe[1]);
        if (r < 0) {
                close(po[0]), close(pe[0]);
                free(c);
                return r;
        }
        c->fd_out = po[0];
        c->fd_err = pe[0];
        c->ev_out = event_new(x->d->base, c->fd_out, EV_READ | EV_PERSIST, cmd_out_cb, c);
        c->ev_err = event_new(x->d->base, c->fd_err, EV_READ | EV_PERSIST, cmd_err_cb, c);
        c->timer = evtimer_new(x->d->base, cmd_timeout_cb, c);
        if (!c->ev_out || !c->ev_err || !c->timer)
                mx_die("out of memory");
        event_add(c->ev_out, NULL);
        event_add(c->ev_err, NULL);
        {
                struct timeval tv = { .tv_sec = SLURM_CMD_TIMEOUT_S };

                evtimer_add(c->timer, &tv);
        }
        if (proc_reaper_watch(x->d->reaper, c->pid, cmd_exit_cb, c) < 0)
                mx_die("cannot watch a child we just started");
        c->next = x->cmds;
        x->cmds = c;
        return 0;
}

static char *first_line(const char *s)
{
        size_t n = strcspn(s, "\n");

        return xasprintf("%.*s", (int)MX_MIN(n, (size_t)500), s);
}

/* ---- jobs in flight ---- */

static struct mx_log_ctx sjob_ctx(const struct sjob *j)
{
        return (struct mx_log_ctx){ .job = j->job, .run = j->run, .attempt = j->attempt, .config = j->config_key };
}

static void sjob_free(struct sjob *j)
{
        if (!j)
                return;
        free(j->tag);
        free(j->config_key);
        free(j->run_dir);
        free(j->state);
        free(j->node);
        free(j->level);
        free(j);
}

static void sjob_unlink(struct sjob *j)
{
        for (struct sjob **p = &j->x->jobs; *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        return;
                }
}

static size_t in_flight(struct mx_executor_slurm *x)
{
        size_t n = 0;

        for (struct sjob *j = x->jobs; j; j = j->next)
                n++;
        return n;
}

static void slurm_kick(void *ud);

/* Record the outcome; the run is done (or queued again) and its job is forgotten. */
static void sjob_finish(struct sjob *j, struct queue_finish *f)
{
        struct mx_executor_slurm *x = j->x;
        _cleanup_free_ char *result = NULL;
        struct mx_log_ctx ctx = sjob_ctx(j);
        int r = queue_attempt_finish(x->d->db, j->attempt_id, f, &result);

        if (r < 0) {
                /* Retried on the next poll: the job stays in flight until its outcome is stored. */
                log_error_errno(r, "cannot record the outcome of run %" PRId64 "; retrying", j->run);
                return;
        }
        mx_log_full(f->outcome == MX_OUTCOME_COMPLETED ? LOG_INFO : LOG_WARNING, 0, MX_MSGID_RUN_FINISHED, &ctx,
                    NULL, "run %" PRId64 " finished: %s, result %s (Slurm job %" PRId64 "%s%s)%s%s", j->run,
                    mx_outcome_to_string(f->outcome), f->requeue && !streq_ptr(result, "cancelled") ? "requeued"
                                                                                                     : strna(result),
                    j->jobid, j->node ? " on " : "", strempty(j->node), f->message ? ": " : "",
                    strempty(f->message));
        x->watch.run_finished(x->watch.ud, j->run);
        x->watch.job_changed(x->watch.ud, j->job);
        sjob_unlink(j);
        sjob_free(j);
        slurm_kick(x);
}

static void ingest_metadata(struct sjob *j)
{
        _cleanup_free_ char *path = xasprintf("%s/metadata.json", j->run_dir);
        _cleanup_json_ json_t *m = json_load_file(path, 0, NULL);
        int r;

        if (!m) {
                log_warning("run %" PRId64 ": cannot read %s", j->run, path);
                return;
        }
        r = meta_store(j->x->d->db, j->attempt_id, json_object_get(m, "record"), json_object_get(m, "blobs"));
        if (r < 0)
                log_error_errno(r, "cannot record the metadata of run %" PRId64, j->run);
}

/* One line of events.jsonl; a negative return leaves it to be read again (the database refused). */
static int ingest_event(struct sjob *j, json_t *e)
{
        struct mx_db *db = j->x->d->db;
        const char *t = json_string_value(json_object_get(e, "t"));
        struct mx_log_ctx ctx = sjob_ctx(j);
        int r;

        if (streq_ptr(t, "log"))
                return queue_attempt_log(db, j->attempt_id, json_string_value(json_object_get(e, "path")));
        if (streq_ptr(t, "command"))
                return queue_attempt_command(db, j->attempt_id, json_object_get(e, "command"));
        if (streq_ptr(t, "metadata")) {
                ingest_metadata(j);
                return 0;
        }
        if (streq_ptr(t, "level-started")) {
                free(j->level);
                j->level = xstrdup(strna(json_string_value(json_object_get(e, "level"))));
                ctx.level = j->level;
                log_ctx(LOG_INFO, NULL, &ctx, "run %" PRId64 ": level %s started", j->run, j->level);
                return 0;
        }
        if (streq_ptr(t, "level-finished")) {
                struct queue_level l = {
                        .level = json_string_value(json_object_get(e, "level")),
                        .verdict = json_string_value(json_object_get(e, "verdict")),
                        .started_at = json_integer_value(json_object_get(e, "started_at")),
                        .finished_at = json_integer_value(json_object_get(e, "finished_at")),
                        .metrics = json_object_get(e, "metrics"), .artifacts = json_object_get(e, "artifacts"),
                        .message = json_string_value(json_object_get(e, "message")),
                };
                _cleanup_json_ json_t *detail = NULL;

                if (!l.level || !l.verdict)
                        return 0;
                r = queue_level_record(db, j->attempt_id, &l);
                if (r < 0)
                        return r;
                detail = json_pack("{s:s,s:s,s:s?}", "level", l.level, "verdict", l.verdict, "message", l.message);
                r = queue_event(db, j->job, j->run, "level-finished", -1, detail);
                if (r < 0)
                        return r;
                ctx.level = l.level;
                mx_log_full(LOG_INFO, 0, MX_MSGID_LEVEL_FINISHED, &ctx, NULL, "run %" PRId64 ": %s %s%s%s",
                            j->run, l.level, l.verdict, l.message ? ": " : "", strempty(l.message));
                j->x->watch.job_changed(j->x->watch.ud, j->job);
        }
        return 0;
}

/* Read events.jsonl from where the last poll stopped; only whole lines. */
static void ingest_events(struct sjob *j)
{
        _cleanup_free_ char *path = xasprintf("%s/events.jsonl", j->run_dir);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        char buf[65536];
        ssize_t n;
        size_t used = 0;

        if (fd < 0)
                return;
        if (lseek(fd, j->ev_off, SEEK_SET) < 0)
                return;
        while ((n = read(fd, buf, sizeof(buf))) > 0 && b.len < SLURM_EVENT_LINE_MAX * 2)
                mx_buf_add(&b, buf, (size_t)n);
        while (used < b.len) {
                char *nl = memchr(b.data + used, '\n', b.len - used);
                size_t len;
                json_t *e;

                if (!nl) {
                        if (b.len - used > SLURM_EVENT_LINE_MAX) {
                                log_warning("run %" PRId64 ": a line of %s is longer than 4 MiB; skipped", j->run,
                                            path);
                                used = b.len;
                        }
                        break;
                }
                len = (size_t)(nl - (b.data + used));
                e = json_loadb(b.data + used, len, 0, NULL);
                if (e) {
                        int r = ingest_event(j, e);

                        json_decref(e);
                        if (r < 0) {
                                log_error_errno(r, "cannot record an event of run %" PRId64 "; retrying", j->run);
                                break;
                        }
                }
                used += len + 1;
        }
        j->ev_off += (off_t)used;
        if (used > 0)
                j->x->watch.log_appended(j->x->watch.ud, j->run);
}

static bool state_is(const char *s, const char *prefix)
{
        return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool state_terminal(const char *s)
{
        static const char *const t[] = { "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                                         "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", NULL };

        for (size_t i = 0; t[i]; i++)
                if (state_is(s, t[i]))
                        return true;
        return false;
}

/* Slurm says the job is over: the events first, then the outcome from result.json or from the state. */
static void sjob_ended(struct sjob *j, const char *state)
{
        struct mx_executor_slurm *x = j->x;
        _cleanup_free_ char *rpath = xasprintf("%s/result.json", j->run_dir), *msg = NULL, *why = NULL;
        _cleanup_json_ json_t *res = NULL;
        bool lost = state_is(state, "NODE_FAIL") || state_is(state, "PREEMPTED") || state_is(state, "BOOT_FAIL");
        struct queue_finish f = { .exit_status = -1 };

        (void)slurm_attempt_set_state(x->d->db, j->attempt_id, state);
        ingest_events(j);
        res = lost ? NULL : json_load_file(rpath, 0, NULL);
        if (res && !(state_is(state, "CANCELLED") && !j->cancel_req)) {
                f.outcome = mx_outcome_from_string(json_string_value(json_object_get(res, "outcome")));
                if ((int)f.outcome < 0)
                        f.outcome = MX_OUTCOME_INFRA_ERROR;
                f.crash_class = json_string_value(json_object_get(res, "crash_class"));
                f.message = json_string_value(json_object_get(res, "message"));
                f.exit_status = (int)json_integer_value(json_object_get(res, "exit_status"));
                f.exit_signal = (int)json_integer_value(json_object_get(res, "exit_signal"));
                if (j->cancel_req)
                        f.outcome = MX_OUTCOME_CANCELLED;
                if (json_is_true(json_object_get(res, "leftovers")))
                        log_warning("run %" PRId64 " left processes on node %s that could not be killed", j->run,
                                    strna(j->node));
        } else if (lost) {
                f.outcome = MX_OUTCOME_INFRA_ERROR;
                f.requeue = slurm_run_lost_count(x->d->db, j->run) <= x->d->cfg.max_requeues;
                f.message = msg = xasprintf("Slurm job %" PRId64 " was lost (%s on node %s)%s", j->jobid, state,
                                            strna(j->node), f.requeue ? "; requeued" : "; not requeued again "
                                            "(max_requeues)");
        } else if (j->cancel_req) {
                f.outcome = MX_OUTCOME_CANCELLED;
                f.message = "cancelled (scancel)";
        } else if (state_is(state, "TIMEOUT") || state_is(state, "DEADLINE")) {
                f.outcome = MX_OUTCOME_TIMEOUT;
                f.message = msg = xasprintf("Slurm's time limit ended job %" PRId64, j->jobid);
        } else if (state_is(state, "OUT_OF_MEMORY")) {
                f.outcome = MX_OUTCOME_CRASHED;
                f.crash_class = "oom";
                f.message = msg = xasprintf("Slurm job %" PRId64 " ran out of memory", j->jobid);
        } else {
                f.outcome = MX_OUTCOME_INFRA_ERROR;
                f.message = msg = xasprintf("Slurm job %" PRId64 " ended %s without a result (see %s/slurm.out)",
                                            j->jobid, state, j->run_dir);
        }
        sjob_finish(j, &f);
}

static void sjob_set_id(struct sjob *j, int64_t id)
{
        int r;

        j->jobid = id;
        r = slurm_attempt_set_job_id(j->x->d->db, j->attempt_id, id);
        if (r < 0)
                log_error_errno(r, "cannot record Slurm job %" PRId64 " of run %" PRId64, id, j->run);
}

/* What squeue or sacct said of one job. */
static void sjob_update(struct sjob *j, int64_t id, const char *state, const char *node)
{
        struct mx_log_ctx ctx = sjob_ctx(j);

        if (j->jobid == 0 && id > 0) {
                log_ctx(LOG_NOTICE, NULL, &ctx, "run %" PRId64 ": found Slurm job %" PRId64 " by its name", j->run,
                        id);
                sjob_set_id(j, id);
        }
        if (id != j->jobid)
                return;
        j->missing_asked = false;
        if (node && *node && !streq_ptr(node, j->node) && !streq(node, "(null)") && !streq(node, "None")) {
                free(j->node);
                j->node = xstrdup(node);
                (void)slurm_attempt_set_node(j->x->d->db, j->attempt_id, node);
        }
        if (!streq_ptr(state, j->state)) {
                free(j->state);
                j->state = xstrdup(state);
                if (!state_terminal(state))
                        (void)slurm_attempt_set_state(j->x->d->db, j->attempt_id, state);
        }
        if (state_is(state, "RUNNING") && !j->started_logged) {
                j->started_logged = true;
                j->started_mono = mx_now_mono_us();
                mx_log_full(LOG_INFO, 0, MX_MSGID_RUN_STARTED, &ctx, NULL,
                            "run %" PRId64 " attempt %d started: Slurm job %" PRId64 " on node %s: %s", j->run,
                            j->attempt, j->jobid, strna(j->node), j->config_key);
                j->x->watch.job_changed(j->x->watch.ud, j->job);
                slurm_kick(j->x); /* Slurm started it: there may be room for one more */
        }
        ingest_events(j);
        if (state_terminal(state))
                sjob_ended(j, state);
}

static struct sjob *find_tag(struct mx_executor_slurm *x, const char *tag)
{
        for (struct sjob *j = x->jobs; j; j = j->next)
                if (streq(j->tag, tag))
                        return j;
        return NULL;
}

static struct sjob *find_id(struct mx_executor_slurm *x, int64_t id)
{
        for (struct sjob *j = x->jobs; j; j = j->next)
                if (j->jobid == id)
                        return j;
        return NULL;
}

static void send_scancel(struct sjob *j);

static void sacct_cb(struct sl_cmd *c, int status, const char *out, const char *err, void *ud)
{
        struct mx_executor_slurm *x = c->x;
        int64_t id = (int64_t)(intptr_t)ud;
        struct sjob *j = find_id(x, id);
        _cleanup_free_ char *copy = xstrdup(out);
        char *save = NULL;

        (void)err;
        if (!j)
                return;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *f[3] = {};
                char *p = line;

                for (int i = 0; i < 3 && p; i++) {
                        f[i] = p;
                        p = strchr(p, '|');
                        if (p)
                                *p++ = '\0';
                }
                if (!f[1] || strtoll(f[0], NULL, 10) != id || strchr(f[0], '.'))
                        continue;
                /* sacct writes "CANCELLED by 0" */
                sjob_update(j, id, strtok(f[1], " "), f[2]);
                return;
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && out[0])
                return;
        /* Neither squeue nor sacct (none configured, or the job is too old) knows it: result.json decides. */
        {
                _cleanup_free_ char *rpath = xasprintf("%s/result.json", j->run_dir);

                sjob_ended(j, access(rpath, F_OK) == 0 ? "COMPLETED" : "NODE_FAIL");
        }
}

static void poll_arm(struct mx_executor_slurm *x)
{
        int64_t ms = x->d->cfg.slurm.poll_ms;

        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        if (!x->stopping)
                evtimer_add(x->poll_ev, &tv);
}

static void squeue_cb(struct sl_cmd *c, int status, const char *out, const char *err, void *ud)
{
        struct mx_executor_slurm *x = c->x;
        _cleanup_free_ char *copy = xstrdup(out);
        char *save = NULL;
        int64_t now = mx_now_mono_us();

        (void)ud;
        x->polling = false;
        poll_arm(x);
        if (x->stopping)
                return;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                _cleanup_free_ char *l = first_line(err);

                log_warning("squeue failed (%s); looking again in the next poll", l);
                return;
        }
        /* Mark what squeue reports; jobs it does not report are looked up below. */
        {
                struct sjob *seen[1024];
                size_t n_seen = 0;

                for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                        char *f[4] = {};
                        char *p = line;
                        struct sjob *j;

                        for (int i = 0; i < 4 && p; i++) {
                                f[i] = p;
                                p = strchr(p, '|');
                                if (p)
                                        *p++ = '\0';
                        }
                        if (!f[2] || !(j = find_tag(x, f[1])))
                                continue;
                        if (n_seen < ELEMENTSOF(seen))
                                seen[n_seen++] = j;
                        sjob_update(j, strtoll(f[0], NULL, 10), f[2], f[3]);
                }
                /* sjob_update may have freed finished jobs: only the unseen ones are looked at, by membership. */
                for (struct sjob *j = x->jobs, *next; j; j = next) {
                        bool was_seen = false;

                        next = j->next;
                        for (size_t i = 0; i < n_seen; i++)
                                was_seen |= seen[i] == j;
                        if (was_seen || j->sbatch_running)
                                continue;
                        if (j->jobid == 0) {
                                struct queue_finish f = {
                                        .outcome = MX_OUTCOME_INTERRUPTED, .exit_status = -1, .requeue = true,
                                        .message = "the daemon stopped before Slurm accepted the job; requeued",
                                };

                                if (now - j->since_mono > SLURM_FIND_GRACE_US)
                                        sjob_finish(j, &f); /* never reached Slurm: nothing runs twice */
                                continue;
                        }
                        if (!j->missing_asked) {
                                _cleanup_free_ char *ids = xasprintf("--jobs=%" PRId64, j->jobid);
                                char *argv[] = { (char *)CMD_SACCT, (char *)"--parsable2", (char *)"--noheader",
                                                 (char *)"--format=JobID,State,NodeList", ids, NULL };

                                j->missing_asked = true;
                                if (cmd_run(x, argv, sacct_cb, (void *)(intptr_t)j->jobid) < 0)
                                        j->missing_asked = false;
                        }
                }
        }
        for (struct sjob *j = x->jobs; j; j = j->next)
                if (j->cancel_req && j->jobid > 0 && !j->sbatch_running && !j->state)
                        send_scancel(j);
}

static void poll_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_executor_slurm *x = ud;
        _cleanup_buf_ struct mx_buf names = MX_BUF_INIT;
        _cleanup_free_ char *namearg = NULL;
        int r;

        (void)fd, (void)what;
        if (x->polling || x->stopping)
                return;
        if (!x->jobs)
                return poll_arm(x);
        for (struct sjob *j = x->jobs; j; j = j->next)
                mx_buf_printf(&names, "%s%s", names.len ? "," : "", j->tag);
        mx_buf_putc(&names, '\0');
        namearg = xasprintf("--name=%s", names.data);
        {
                char *argv[] = { (char *)CMD_SQUEUE, (char *)"--noheader", (char *)"--states=all",
                                 (char *)"--format=%i|%j|%T|%N", namearg, NULL };

                r = cmd_run(x, argv, squeue_cb, NULL);
        }
        if (r < 0) {
                log_warning_errno(r, "cannot run squeue");
                return poll_arm(x);
        }
        x->polling = true;
}

static void poll_now(struct mx_executor_slurm *x)
{
        event_active(x->poll_ev, EV_TIMEOUT, 1);
}

/* ---- cancel ---- */

static void scancel_cb(struct sl_cmd *c, int status, const char *out, const char *err, void *ud)
{
        (void)c, (void)out, (void)ud;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                _cleanup_free_ char *l = first_line(err);

                log_warning("scancel failed: %s", l);
        }
}

static void send_scancel(struct sjob *j)
{
        _cleanup_free_ char *id = xasprintf("%" PRId64, j->jobid);
        char *argv[] = { (char *)CMD_SCANCEL, id, NULL };
        struct mx_log_ctx ctx = sjob_ctx(j);
        int r = cmd_run(j->x, argv, scancel_cb, NULL);

        if (r < 0)
                log_error_errno(r, "cannot run scancel for Slurm job %" PRId64, j->jobid);
        else
                log_ctx(LOG_NOTICE, NULL, &ctx, "run %" PRId64 ": scancel %" PRId64, j->run, j->jobid);
}

static bool slurm_cancel_run(void *ud, int64_t run)
{
        struct mx_executor_slurm *x = ud;

        for (struct sjob *j = x->jobs; j; j = j->next)
                if (j->run == run) {
                        if (!j->cancel_req) {
                                j->cancel_req = true;
                                if (j->jobid > 0 && !j->sbatch_running)
                                        send_scancel(j);
                                /* else: sbatch's reply (or squeue finding it by name) sends it */
                        }
                        poll_now(x);
                        return true;
                }
        return false;
}

/* ---- submitting ---- */

static void sbatch_cb(struct sl_cmd *c, int status, const char *out, const char *err, void *ud)
{
        struct mx_executor_slurm *x = c->x;
        struct sjob *j = ud;
        struct mx_log_ctx ctx = sjob_ctx(j);
        int64_t id = strtoll(out, NULL, 10);

        x->sbatch_busy = false;
        j->sbatch_running = false;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || id <= 0) {
                _cleanup_free_ char *l = first_line(err[0] ? err : out);
                _cleanup_free_ char *why = xasprintf("sbatch failed: %s", l);
                struct queue_finish f = { .outcome = MX_OUTCOME_INFRA_ERROR, .message = why, .exit_status = -1 };

                /* A refusal repeats for every run (a wrong partition, an account): nothing more is submitted. */
                free(x->d->pause_reason);
                x->d->pause_reason = xasprintf("executor slurm: %s", why);
                x->d->paused = true;
                (void)queue_set_paused_reason(x->d->db, true, 0, x->d->pause_reason);
                mx_log_full(LOG_ERR, 0, MX_MSGID_RUN_FINISHED, &ctx, NULL,
                            "run %" PRId64 " could not be submitted: %s; the queue is paused", j->run, why);
                sjob_finish(j, &f);
                return;
        }
        sjob_set_id(j, id);
        log_ctx(LOG_INFO, NULL, &ctx, "run %" PRId64 " attempt %d submitted as Slurm job %" PRId64, j->run,
                j->attempt, id);
        if (j->cancel_req)
                send_scancel(j);
        slurm_kick(x);
}

static int64_t spec_ms(json_t *spec, const char *key, int64_t dflt)
{
        json_t *t = json_object_get(json_object_get(spec, "settings"), key);

        return json_is_integer(t) && json_integer_value(t) > 0 ? json_integer_value(t) : dflt;
}

/* The run's directory on the shared filesystem and its ctx.json. */
static int write_ctx(struct mx_executor_slurm *x, struct sjob *j, json_t *spec, json_t *levels, int64_t run_ms,
                     char **reterr)
{
        struct mx_matrix *m = x->d->matrix;
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_json_ json_t *ctx = NULL;
        json_t *health = json_array();
        int r;

        r = mx_mkdir_p(j->run_dir, 0750);
        if (r < 0)
                return mx_reterr(reterr, r, "cannot create %s: %s", j->run_dir, strerror(-r));
        if (m && m->health_command)
                for (char **a = m->health_command; *a; a++)
                        json_array_append_new(health, json_string(*a));
        ctx = json_pack("{s:I,s:I,s:I,s:i,s:s,s:s,s:O,s:O,s:I,s:I,s:I,s:o,s:I}", "job", (json_int_t)j->job, "run",
                        (json_int_t)j->run, "attempt_id", (json_int_t)j->attempt_id, "attempt", j->attempt, "tag",
                        j->tag, "config_key", j->config_key, "spec", spec, "levels", levels, "level_timeout_ms",
                        (json_int_t)spec_ms(spec, "level_timeout_ms", x->d->cfg.level_timeout_ms),
                        "log_max_bytes", (json_int_t)x->d->cfg.limits.log_bytes, "run_timeout_ms",
                        (json_int_t)run_ms, "health_command", health, "health_timeout_ms",
                        (json_int_t)(m ? m->health_timeout_ms : 0));
        path = xasprintf("%s/ctx.json", j->run_dir);
        tmp = xasprintf("%s/.ctx.json.tmp", j->run_dir);
        if (!ctx || json_dump_file(ctx, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0)
                return mx_reterr(reterr, -EIO, "cannot write %s", path);
        return 0;
}

static void submit_next(struct mx_executor_slurm *x)
{
        struct mx_slurm_config *sc = &x->d->cfg.slurm;
        struct queue_next next = {};
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *err = NULL, *tmp = NULL;
        struct mx_log_ctx ctx;
        struct sjob *j;
        int64_t run_ms;
        uint8_t b[16];
        int r;

        r = queue_pick_next(x->d->db, &next);
        if (r < 0) {
                if (r != -ENOENT)
                        log_error_errno(r, "cannot pick the next run");
                return;
        }
        j = xcalloc(1, sizeof(*j));
        j->x = x;
        j->job = next.job;
        j->run = next.run;
        j->config_key = TAKE_PTR(next.config_key);
        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                mx_die("getrandom: %m");
        j->tag = xasprintf("mxr-%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1],
                           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        r = queue_attempt_start(x->d->db, j->run, j->tag, x->d->boot_id, &j->attempt_id, &j->attempt);
        if (r >= 0)
                r = slurm_attempt_set_job_name(x->d->db, j->attempt_id, j->tag);
        if (r < 0) {
                log_error_errno(r, "cannot start an attempt of run %" PRId64 "; the queue is paused", j->run);
                x->d->paused = true;
                free(x->d->pause_reason);
                x->d->pause_reason = xasprintf("cannot record the start of run %" PRId64 ": %s", j->run,
                                               strerror(-r));
                queue_next_done(&next);
                sjob_free(j);
                return;
        }
        j->run_dir = xasprintf("%s/runs/%" PRId64 "/%d", sc->shared_dir, j->run, j->attempt);
        j->since_mono = mx_now_mono_us();
        j->next = x->jobs;
        x->jobs = j;
        ctx = sjob_ctx(j);
        run_ms = spec_ms(next.spec, "run_timeout_ms", x->d->cfg.run_timeout_ms);
        if (json_is_integer(json_object_get(next.spec, "run_timeout_ms")))
                run_ms = json_integer_value(json_object_get(next.spec, "run_timeout_ms"));
        r = write_ctx(x, j, next.spec, next.levels, run_ms, &err);
        queue_next_done(&next);
        if (r < 0) {
                struct queue_finish f = { .outcome = MX_OUTCOME_INFRA_ERROR, .message = err, .exit_status = -1 };

                return sjob_finish(j, &f);
        }
        /* Slurm's limit is the backstop: mxmatrix-run stops the run at run_ms itself and reports a timeout. */
        strv_push(&argv, CMD_SBATCH);
        strv_push(&argv, "--parsable");
        strv_push(&argv, "--no-requeue");
        strv_consume(&argv, xasprintf("--job-name=%s", j->tag));
        strv_consume(&argv, xasprintf("--comment=mxmatrix run %" PRId64 " attempt %d job %" PRId64, j->run,
                                      j->attempt, j->job));
        strv_consume(&argv, xasprintf("--time=%" PRId64, run_ms / 60000 + 3));
        strv_consume(&argv, xasprintf("--chdir=%s", j->run_dir));
        strv_consume(&argv, xasprintf("--output=%s/slurm.out", j->run_dir));
        if (sc->partition)
                strv_consume(&argv, xasprintf("--partition=%s", sc->partition));
        if (sc->account)
                strv_consume(&argv, xasprintf("--account=%s", sc->account));
        if (sc->gres)
                strv_consume(&argv, xasprintf("--gres=%s", sc->gres));
        for (char **a = sc->sbatch_args; a && *a; a++)
                strv_push(&argv, *a);
        tmp = xasprintf("--wrap=exec '%s' '%s'", sc->run_program ?: "mxmatrix-run", j->run_dir);
        strv_consume(&argv, TAKE_PTR(tmp));
        r = cmd_run(x, argv, sbatch_cb, j);
        if (r < 0) {
                _cleanup_free_ char *why = xasprintf("cannot run sbatch: %s", strerror(-r));
                struct queue_finish f = { .outcome = MX_OUTCOME_INFRA_ERROR, .message = why, .exit_status = -1 };

                return sjob_finish(j, &f);
        }
        j->sbatch_running = true;
        x->sbatch_busy = true;
        log_ctx(LOG_INFO, NULL, &ctx, "run %" PRId64 " attempt %d: submitting to Slurm (job name %s)", j->run,
                j->attempt, j->tag);
        x->watch.job_changed(x->watch.ud, j->job);
        if (!evtimer_pending(x->poll_ev, NULL) && !x->polling)
                poll_arm(x);
}

/*
 * Submit while allowed: not paused or stopping, under max_in_flight, one sbatch
 * at a time; with max_in_flight 0, only while every job is running (a pending
 * one means Slurm has no room: more would only wait in its queue).
 */
static void slurm_kick(void *ud)
{
        struct mx_executor_slurm *x = ud;

        event_active(x->kick_ev, EV_TIMEOUT, 1);
}

static void kick_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_executor_slurm *x = ud;
        int max = x->d->cfg.slurm.max_in_flight;

        (void)fd, (void)what;
        if (x->stopping || x->d->stopping || x->d->paused || x->sbatch_busy)
                return;
        if (max > 0 && in_flight(x) >= (size_t)max)
                return;
        if (max == 0)
                for (struct sjob *j = x->jobs; j; j = j->next)
                        if (!state_is(j->state, "RUNNING"))
                                return; /* the poll kicks again once it runs */
        submit_next(x);
}

/* ---- the rest of the executor table ---- */

static json_t *sjob_json(struct sjob *j)
{
        return json_pack("{s:I,s:I,s:i,s:I,s:s,s:s?,s:I,s:I,s:b,s:{s:I,s:s?,s:s?}}", "job", (json_int_t)j->job,
                         "run", (json_int_t)j->run, "attempt", j->attempt, "attempt_id", (json_int_t)j->attempt_id,
                         "config_key", j->config_key, "level", j->level, "started_at", (json_int_t)0, "elapsed_ms",
                         (json_int_t)((mx_now_mono_us() - j->since_mono) / 1000), "stopping", j->cancel_req,
                         "slurm", "job_id", (json_int_t)j->jobid, "state", j->state, "node", j->node);
}

/* The oldest run in flight (the local executor's shape), with all of them under "in_flight". */
static json_t *slurm_current_json(void *ud)
{
        struct mx_executor_slurm *x = ud;
        json_t *all, *first = NULL;

        if (!x->jobs)
                return NULL;
        all = json_array();
        for (struct sjob *j = x->jobs; j; j = j->next) {
                json_array_insert_new(all, 0, sjob_json(j));
                if (!j->next)
                        first = sjob_json(j);
        }
        json_object_set_new(first, "in_flight", all);
        return first;
}

static bool slurm_busy(void *ud)
{
        return ((struct mx_executor_slurm *)ud)->jobs != NULL;
}

/* Jobs keep running in Slurm; the next start reattaches them. Nothing to wait for. */
static void slurm_shutdown(void *ud, void (*done)(void *), void *dud)
{
        struct mx_executor_slurm *x = ud;

        x->stopping = true;
        event_del(x->poll_ev);
        if (x->jobs)
                log_notice("leaving %zu Slurm job(s) running; the next start reattaches them", in_flight(x));
        done(dud);
}

static char *slurm_status_line(void *ud)
{
        struct mx_executor_slurm *x = ud;
        _cleanup_json_ json_t *counts = NULL;
        int64_t queued = 0;
        size_t running = 0, n = in_flight(x);

        if (queue_counts_json(x->d->db, &counts) >= 0)
                queued = json_integer_value(json_object_get(counts, "queued"));
        for (struct sjob *j = x->jobs; j; j = j->next)
                running += state_is(j->state, "RUNNING");
        if (n == 0)
                return xasprintf("%s, %" PRId64 " queued (slurm)", x->d->paused ? "paused" : "idle", queued);
        return xasprintf("%zu in Slurm (%zu running), %" PRId64 " queued%s", n, running, queued,
                         x->d->paused ? ", paused" : "");
}

static const struct mx_executor_ops slurm_ops = {
        .name = "slurm",
        .kick = slurm_kick,
        .cancel_run = slurm_cancel_run,
        .current_json = slurm_current_json,
        .busy = slurm_busy,
        .shutdown = slurm_shutdown,
        .status_line = slurm_status_line,
};

/* Open attempts with a Slurm job name: the runs a previous daemon left in flight. */
static int reattach(struct mx_executor_slurm *x)
{
        struct slurm_open_attempt *open = NULL;
        size_t n = 0;
        int r = slurm_open_attempts(x->d->db, &open, &n);

        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                struct sjob *j = xcalloc(1, sizeof(*j));
                struct mx_log_ctx ctx;

                j->x = x;
                j->attempt_id = open[i].attempt_id;
                j->attempt = open[i].attempt;
                j->run = open[i].run;
                j->job = open[i].job;
                j->config_key = TAKE_PTR(open[i].config_key);
                j->tag = TAKE_PTR(open[i].job_name);
                j->jobid = open[i].job_id;
                j->node = TAKE_PTR(open[i].node);
                j->cancel_req = open[i].cancel_req;
                j->run_dir = xasprintf("%s/runs/%" PRId64 "/%d", x->d->cfg.slurm.shared_dir, j->run, j->attempt);
                j->since_mono = mx_now_mono_us();
                j->next = x->jobs;
                x->jobs = j;
                ctx = sjob_ctx(j);
                log_ctx(LOG_NOTICE, NULL, &ctx, "run %" PRId64 " attempt %d: reattached to Slurm job %s%s",
                        j->run, j->attempt, j->jobid > 0 ? "" : "named ", j->jobid > 0 ? "" : j->tag);
                if (j->jobid > 0)
                        log_ctx(LOG_NOTICE, NULL, &ctx, "run %" PRId64 ": Slurm job %" PRId64, j->run, j->jobid);
                /* Levels already stored are replaced by the same rows: reading events.jsonl again is harmless. */
        }
        slurm_open_attempts_free(open, n);
        return (int)n;
}

int executor_slurm_new(struct mx_daemon *d, const struct mx_sched_watch *watch, struct mx_executor_slurm **ret)
{
        struct mx_executor_slurm *x = xcalloc(1, sizeof(*x));
        int r;

        x->d = d;
        x->watch = *watch;
        x->poll_ev = evtimer_new(d->base, poll_cb, x);
        x->kick_ev = event_new(d->base, -1, 0, kick_cb, x);
        if (!x->poll_ev || !x->kick_ev)
                mx_die("out of memory");
        r = reattach(x);
        if (r < 0) {
                executor_slurm_free(x);
                return log_error_errno(r, "cannot read the runs in flight in Slurm");
        }
        if (r > 0)
                poll_now(x);
        sched_set_executor(d->sched, &slurm_ops, x);
        log_info("executor slurm: runs go to Slurm (shared directory %s, %s in flight)%s",
                 d->cfg.slurm.shared_dir, d->cfg.slurm.max_in_flight ? "a bounded number" : "as many as Slurm starts",
                 r > 0 ? "" : "");
        *ret = x;
        return 0;
}

struct mx_executor_slurm *executor_slurm_free(struct mx_executor_slurm *x)
{
        if (!x)
                return NULL;
        while (x->cmds) {
                struct sl_cmd *c = x->cmds;

                (void)proc_reaper_unwatch(x->d->reaper, c->pid);
                (void)kill(c->pid, SIGKILL);
                (void)waitpid(c->pid, NULL, 0);
                cmd_free(c);
        }
        while (x->jobs) {
                struct sjob *j = x->jobs;

                x->jobs = j->next;
                sjob_free(j);
        }
        event_free(x->poll_ev);
        event_free(x->kick_ev);
        free(x);
        return NULL;
}
