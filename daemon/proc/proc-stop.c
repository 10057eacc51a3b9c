/* SPDX-License-Identifier: MIT */
/* Stopping a run: signal escalation, /proc sweeps, verification (see proc-stop.h). */
#include "proc-stop.h"
#include "cgroup.h"

#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/wait.h>

static const struct proc_stop_step default_steps[] = {
        { SIGTERM, 30000 },
        { SIGKILL, 10000 },
};

static void *free_null(void *p)
{
        free(p);
        return NULL;
}


/* ---- the member set, shared by the asynchronous and the blocking stop ---- */

struct sweep_member {
        pid_t pid;
        uint64_t starttime;
        int pidfd;        /* -1: none could be opened (too many members, or out of descriptors) */
        bool fresh;       /* found by the latest scan, not signalled in this step yet */
        struct event *ev; /* the asynchronous stop's read event on pidfd */
};

struct sweep {
        char *tag;
        char *cgroup; /* the run's cgroup (proc_run_begin()), or NULL */
        struct proc_match match; /* .group is cleared once a scan finds the group and session empty */
        bool group_has_members;  /* the latest scan saw a live process in the process group itself */
        struct sweep_member *m;  /* the members believed alive */
        size_t n;
        size_t alloc;
};

/*
 * While a run is in flight, its cgroup's processes and the daemon's children
 * (what the runner started, and orphans of the run the daemon adopted as
 * subreaper) are members too (proc.h).
 */
static void sweep_init(struct sweep *sw, const char *tag, pid_t group, uint64_t since)
{
        *sw = (struct sweep){ .tag = xstrdup(tag) };
        sw->match = (struct proc_match){ .tag = sw->tag, .group = group, .group_since = since };
        if (proc_run_active()) {
                sw->cgroup = proc_run_cgroup() ? xstrdup(proc_run_cgroup()) : NULL;
                sw->match.cgroup = sw->cgroup;
                sw->match.parent = getpid();
        }
}

static void member_release(struct sweep_member *m)
{
        if (m->ev)
                event_free(m->ev);
        m->ev = NULL;
        if (m->pidfd >= 0)
                close(m->pidfd);
        m->pidfd = -1;
}

static void sweep_remove(struct sweep *sw, size_t i)
{
        member_release(&sw->m[i]);
        sw->m[i] = sw->m[--sw->n];
}

static void sweep_done(struct sweep *sw)
{
        for (size_t i = 0; i < sw->n; i++)
                member_release(&sw->m[i]);
        sw->m = free_null(sw->m);
        sw->n = sw->alloc = 0;
        sw->tag = free_null(sw->tag);
        sw->cgroup = free_null(sw->cgroup);
}

static size_t sweep_waitable(const struct sweep *sw)
{
        size_t k = 0;

        for (size_t i = 0; i < sw->n; i++)
                k += sw->m[i].pidfd >= 0;
        return k;
}

static ssize_t sweep_find(const struct sweep *sw, pid_t pid, uint64_t starttime)
{
        for (size_t i = 0; i < sw->n; i++)
                if (sw->m[i].pid == pid && sw->m[i].starttime == starttime)
                        return (ssize_t)i;
        return -1;
}

/*
 * A pidfd for the process the scan saw as e, or -1: opened first, then the start
 * time is read again, so a pid taken over by another process in between is not
 * mistaken for the member.
 */
static int member_open_pidfd(const struct proc_entry *e, size_t tracked)
{
        uint64_t st;
        int fd;

        if (tracked >= PROC_MEMBERS_MAX)
                return -1;
        fd = pidfd_open(e->pid, 0);
        if (fd < 0)
                return errno == ESRCH ? -2 : -1; /* gone already, or no pidfd to be had */
        if (proc_get_starttime(e->pid, &st) < 0 || st != e->starttime) {
                close(fd);
                return -2; /* gone, or someone else's now */
        }
        return fd;
}

/* Add the live entries of a scan that are not members yet, marked fresh. */
static void sweep_add(struct sweep *sw, const struct proc_entry *list, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const struct proc_entry *e = &list[i];
                int fd;

                if (e->state == 'Z' || e->state == 'X' || sweep_find(sw, e->pid, e->starttime) >= 0)
                        continue;
                fd = member_open_pidfd(e, sweep_waitable(sw));
                if (fd == -2)
                        continue;
                MX_GROW(sw->m, sw->alloc, sw->n + 1);
                sw->m[sw->n++] = (struct sweep_member){ e->pid, e->starttime, fd, true, NULL };
        }
}

/* Note which of the group criteria still hold; once the group and session are empty, drop them. */
static void sweep_note_group(struct sweep *sw, const struct proc_entry *list, size_t n)
{
        bool any = false;

        sw->group_has_members = false;
        if (sw->match.group <= 0)
                return;
        for (size_t i = 0; i < n; i++) {
                if (list[i].pgid != sw->match.group && list[i].sid != sw->match.group)
                        continue;
                any = true; /* a zombie, too, keeps the number allocated */
                if (list[i].pgid == sw->match.group && list[i].state != 'Z')
                        sw->group_has_members = true;
        }
        if (!any)
                sw->match.group = 0;
}

/*
 * Scan /proc and bring the member set up to date: new members are added (fresh),
 * members without a pidfd that the scan no longer shows are dropped. Members
 * with a pidfd stay until it reports their exit, even if they stopped matching.
 */
static int sweep_refresh(struct sweep *sw)
{
        _cleanup_free_ struct proc_entry *list = NULL;
        size_t n = 0;
        int r;

        r = proc_scan(&sw->match, &list, &n);
        if (r < 0)
                return r;
        for (size_t i = sw->n; i-- > 0;) {
                struct sweep_member *m = &sw->m[i];
                bool seen = false;

                if (m->pidfd >= 0)
                        continue;
                for (size_t j = 0; j < n && !seen; j++)
                        seen = list[j].pid == m->pid && list[j].starttime == m->starttime &&
                               list[j].state != 'Z';
                if (!seen)
                        sweep_remove(sw, i);
        }
        sweep_note_group(sw, list, n);
        sweep_add(sw, list, n);
        return 0;
}

static void member_signal(const struct sweep_member *m, int sig)
{
        uint64_t st;

        if (m->pidfd >= 0) {
                (void)pidfd_send_signal(m->pidfd, sig, NULL, 0);
                return;
        }
        /* No pidfd: check the start time right before kill(), which leaves a window of microseconds. */
        if (proc_get_starttime(m->pid, &st) >= 0 && st == m->starttime)
                (void)kill(m->pid, sig);
}

/* Signal the group (if a member is in it) and the members, all or only the fresh ones. */
static void sweep_signal(struct sweep *sw, int sig, bool only_fresh)
{
        int sigs[2] = { sig, SIGCONT };
        int n = sig == SIGKILL || sig == SIGCONT ? 1 : 2;

        /* One write kills the whole cgroup, processes forked a moment ago included. */
        if (sig == SIGKILL && sw->cgroup)
                (void)cgroup_kill(sw->cgroup);
        for (int k = 0; k < n; k++) {
                if (!only_fresh && sw->group_has_members)
                        (void)killpg(sw->match.group, sigs[k]);
                for (size_t i = 0; i < sw->n; i++)
                        if (!only_fresh || sw->m[i].fresh)
                                member_signal(&sw->m[i], sigs[k]);
        }
        for (size_t i = 0; i < sw->n; i++)
                sw->m[i].fresh = false;
}

static bool pidfd_exited(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, 0) > 0;
}

static void push_pid(pid_t **array, size_t *n, pid_t pid)
{
        for (size_t i = 0; i < *n; i++)
                if ((*array)[i] == pid)
                        return;
        *array = xreallocarray(*array, *n + 1, sizeof(**array));
        (*array)[(*n)++] = pid;
}

/* Reap our own exited children among list (the blocking path has no reaper); returns how many. */
static size_t reap_listed_children(const struct proc_entry *list, size_t n)
{
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
                if (list[i].state == 'Z' && list[i].ppid == getpid() &&
                    waitpid(list[i].pid, NULL, WNOHANG) > 0)
                        k++;
        return k;
}

/* Scan, reaping our exited children first (through the reaper if there is one) and again if some appear. */
static int verify_scan(struct sweep *sw, struct proc_reaper *reaper, struct proc_entry **ret, size_t *ret_n)
{
        int r = 0;

        for (unsigned round = 0; round < 3; round++) {
                bool zombie_child = false;

                *ret = free_null(*ret);
                if (reaper)
                        proc_reaper_reap(reaper);
                r = proc_scan(&sw->match, ret, ret_n);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < *ret_n; i++)
                        zombie_child |= (*ret)[i].state == 'Z' && (*ret)[i].ppid == getpid();
                if (!zombie_child)
                        break;
                if (!reaper)
                        reap_listed_children(*ret, *ret_n);
        }
        return r;
}

/*
 * The final word: what is still alive (from a fresh scan, plus members whose
 * pidfd has not reported an exit although they no longer match), which zombies
 * remain, and whether that is clean.
 */
static void sweep_verify(struct sweep *sw, struct proc_reaper *reaper, struct proc_stop_result *res)
{
        _cleanup_free_ struct proc_entry *list = NULL;
        bool unreaped = false;
        size_t n = 0;
        int r;

        r = verify_scan(sw, reaper, &list, &n);
        if (r < 0) {
                res->error = r;
                res->clean = false;
                return;
        }
        for (size_t i = 0; i < n; i++) {
                if (list[i].state == 'Z' || list[i].state == 'X') {
                        unreaped |= list[i].ppid == getpid();
                        push_pid(&res->zombies, &res->n_zombies, list[i].pid);
                } else
                        push_pid(&res->leftovers, &res->n_leftovers, list[i].pid);
        }
        for (size_t i = 0; i < sw->n; i++)
                if (sw->m[i].pidfd >= 0 && !pidfd_exited(sw->m[i].pidfd))
                        push_pid(&res->leftovers, &res->n_leftovers, sw->m[i].pid);
        res->clean = res->error == 0 && res->n_leftovers == 0 && !unreaped;
}

void proc_stop_result_done(struct proc_stop_result *res)
{
        if (!res)
                return;
        res->leftovers = free_null(res->leftovers);
        res->zombies = free_null(res->zombies);
        res->n_leftovers = res->n_zombies = 0;
}

/* ---- plans ---- */

static int plan_check(const struct proc_stop_plan *plan, char **reterr)
{
        if (!plan)
                return 0;
        if (plan->n_steps > PROC_STOP_STEPS_MAX)
                return mx_reterr(reterr, -E2BIG, "stop plan has %zu steps, more than %d", plan->n_steps,
                            PROC_STOP_STEPS_MAX);
        if (plan->n_steps > 0 && !plan->steps)
                return mx_reterr(reterr, -EINVAL, "stop plan has %zu steps but no step array", plan->n_steps);
        for (size_t i = 0; i < plan->n_steps; i++) {
                const struct proc_stop_step *s = &plan->steps[i];

                if (s->signal <= 0 || s->signal >= NSIG)
                        return mx_reterr(reterr, -EINVAL, "stop step %zu: %d is not a signal to stop with", i + 1,
                                    s->signal);
                if (s->grace_ms < 0 || s->grace_ms > PROC_GRACE_MAX_MS)
                        return mx_reterr(reterr, -ERANGE,
                                    "stop step %zu: grace %" PRId64 " ms is outside 0..%lld", i + 1,
                                    s->grace_ms, PROC_GRACE_MAX_MS);
        }
        if (plan->stop_argv && (!plan->stop_argv[0] || !plan->stop_argv[0][0]))
                return mx_reterr(reterr, -EINVAL, "stop command is empty");
        if (plan->stop_timeout_ms < 0 || plan->stop_timeout_ms > PROC_GRACE_MAX_MS)
                return mx_reterr(reterr, -ERANGE, "stop command timeout %" PRId64 " ms is outside 0..%lld",
                            plan->stop_timeout_ms, PROC_GRACE_MAX_MS);
        return 0;
}

static const struct proc_stop_step *plan_steps(const struct proc_stop_plan *plan, size_t *ret_n)
{
        if (!plan || plan->n_steps == 0) {
                *ret_n = ELEMENTSOF(default_steps);
                return default_steps;
        }
        *ret_n = plan->n_steps;
        return plan->steps;
}

static int64_t plan_stop_timeout(const struct proc_stop_plan *plan)
{
        return plan->stop_timeout_ms > 0 ? plan->stop_timeout_ms : PROC_STOP_COMMAND_TIMEOUT_MS;
}

static int stop_command_spawn(const struct proc_stop_plan *plan, const char *tag, struct proc_info *ret)
{
        struct proc_spec spec = {
                .argv = plan->stop_argv,
                .env = plan->stop_env,
                .cwd = plan->stop_cwd,
                .tag = tag,
                .stdout_fd = plan->stop_output_fd,
                .stderr_fd = plan->stop_output_fd,
        };

        return proc_spawn(&spec, ret, NULL);
}

static int check_tag(const char *tag, char **reterr)
{
        if (!proc_tag_is_valid(tag))
                return mx_reterr(reterr, -EINVAL, "run tag '%s' is not 1-%d characters of [A-Za-z0-9._-]",
                            strna(tag), PROC_TAG_MAX);
        return 0;
}

/* ---- the asynchronous stop ---- */

enum stop_phase {
        STOP_COMMAND, /* waiting for the stop command */
        STOP_STEPS,   /* signalling and waiting */
        STOP_DONE,    /* finishing scheduled or running */
};

struct proc_stop {
        struct proc_reaper *reaper;
        struct event_base *base;
        struct sweep sw;
        struct proc_stop_step steps[PROC_STOP_STEPS_MAX];
        size_t n_steps;
        struct event *timer;
        struct event *recheck; /* rescans while some member has no pidfd */
        struct event *kick_ev; /* starts the first step from the loop */
        struct event *finish_ev;
        proc_stop_cb cb;
        void *userdata;
        enum stop_phase phase;
        pid_t cmd_pid; /* the stop command while watched, else 0 */
        int64_t start_us;
        bool finishing;
        bool cancelled;
        struct proc_stop_result res;
};

static void stop_free(struct proc_stop *s)
{
        if (s->cmd_pid > 0)
                (void)proc_reaper_unwatch(s->reaper, s->cmd_pid);
        if (s->timer)
                event_free(s->timer);
        if (s->recheck)
                event_free(s->recheck);
        if (s->kick_ev)
                event_free(s->kick_ev);
        if (s->finish_ev)
                event_free(s->finish_ev);
        sweep_done(&s->sw);
        proc_stop_result_done(&s->res);
        free(s);
}

static void stop_arm_timer(struct proc_stop *s, int64_t ms)
{
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        evtimer_add(s->timer, &tv);
}

static void stop_finish(struct proc_stop *s)
{
        if (s->phase == STOP_DONE)
                return;
        s->phase = STOP_DONE;
        evtimer_del(s->timer);
        evtimer_del(s->recheck);
        for (size_t i = 0; i < s->sw.n; i++)
                if (s->sw.m[i].ev) {
                        event_free(s->sw.m[i].ev);
                        s->sw.m[i].ev = NULL;
                }
        event_active(s->finish_ev, 0, 0);
}

/* From the loop: reap (delivering watched statuses, which may cancel us), verify, report, free. */
static void stop_finish_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct proc_stop *s = userdata;

        s->finishing = true;
        sweep_verify(&s->sw, s->reaper, &s->res);
        s->res.elapsed_us = mx_now_mono_us() - s->start_us;
        if (!s->cancelled)
                s->cb(&s->res, s->userdata);
        stop_free(s);
}

static void stop_member_cb(evutil_socket_t fd, short what, void *userdata);

/* Give every member with a pidfd but no event yet a read event: readable means it exited. */
static void stop_watch_members(struct proc_stop *s)
{
        for (size_t i = 0; i < s->sw.n; i++) {
                struct sweep_member *m = &s->sw.m[i];

                if (m->pidfd < 0 || m->ev)
                        continue;
                m->ev = event_new(s->base, m->pidfd, EV_READ, stop_member_cb, s);
                if (!m->ev || event_add(m->ev, NULL) < 0) {
                        /* Cannot wait on it: it becomes a member without pidfd (rechecked). */
                        if (m->ev)
                                event_free(m->ev);
                        m->ev = NULL;
                        close(m->pidfd);
                        m->pidfd = -1;
                }
        }
}

static void stop_arm_recheck(struct proc_stop *s);

/* Scan again; signal new members with the current step's signal; finish if none is left. */
static void stop_refresh_and_signal(struct proc_stop *s)
{
        int r = sweep_refresh(&s->sw);

        if (r < 0) {
                s->res.error = r;
                stop_finish(s);
                return;
        }
        if (s->sw.n == 0) {
                stop_finish(s);
                return;
        }
        sweep_signal(&s->sw, s->steps[s->res.steps_taken - 1].signal, true);
        stop_watch_members(s);
        stop_arm_recheck(s);
}

/*
 * Members without a pidfd (more than PROC_MEMBERS_MAX, no descriptors left, or
 * no pidfd_open() at all: Linux < 5.3, valgrind) cannot report their exit; for
 * them, and only while there are any, the stop scans again every
 * PROC_RECHECK_MS instead of sitting out the whole grace period.
 */
static void stop_arm_recheck(struct proc_stop *s)
{
        struct timeval tv = { .tv_sec = 0, .tv_usec = PROC_RECHECK_MS * 1000 };

        if (s->sw.n > sweep_waitable(&s->sw) && !evtimer_pending(s->recheck, NULL))
                evtimer_add(s->recheck, &tv);
}

static void stop_recheck_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct proc_stop *s = userdata;

        if (s->phase == STOP_STEPS)
                stop_refresh_and_signal(s);
}

/* Begin the next step, or finish if nothing is left or no step is. */
static void stop_next_step(struct proc_stop *s)
{
        int r;

        s->phase = STOP_STEPS;
        r = sweep_refresh(&s->sw);
        if (r < 0)
                s->res.error = r;
        if (r < 0 || s->sw.n == 0 || s->res.steps_taken == s->n_steps) {
                stop_finish(s);
                return;
        }
        s->res.steps_taken++;
        sweep_signal(&s->sw, s->steps[s->res.steps_taken - 1].signal, false);
        stop_watch_members(s);
        stop_arm_recheck(s);
        stop_arm_timer(s, s->steps[s->res.steps_taken - 1].grace_ms);
}

static void stop_member_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct proc_stop *s = userdata;

        if (s->phase != STOP_STEPS)
                return;
        for (size_t i = 0; i < s->sw.n; i++)
                if (s->sw.m[i].pidfd == fd) {
                        sweep_remove(&s->sw, i);
                        break;
                }
        /* The last member we could wait on is gone: is anything left, or new? */
        if (sweep_waitable(&s->sw) == 0)
                stop_refresh_and_signal(s);
}

static void stop_timer_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct proc_stop *s = userdata;

        if (s->phase == STOP_COMMAND) {
                /* Overran: kill its group (our unreaped child leads it, so the number is still its). */
                s->res.stop_command_timed_out = true;
                (void)kill(-s->cmd_pid, SIGKILL);
        }
        if (s->phase != STOP_DONE)
                stop_next_step(s);
}

static void stop_command_exited(pid_t pid, int status, void *userdata)
{
        struct proc_stop *s = userdata;

        s->cmd_pid = 0;
        s->res.stop_command_status = status;
        if (s->phase == STOP_COMMAND) {
                evtimer_del(s->timer);
                stop_next_step(s);
        }
}

/* Run the plan's stop command first; returns false when there is none to wait for. */
static bool stop_start_command(struct proc_stop *s, const struct proc_stop_plan *plan)
{
        struct proc_info info;
        int r;

        if (!plan || !plan->stop_argv)
                return false;
        r = stop_command_spawn(plan, s->sw.tag, &info);
        if (r < 0) {
                s->res.stop_command_error = r;
                return false;
        }
        r = proc_reaper_watch(s->reaper, info.pid, stop_command_exited, s);
        if (r < 0) {
                s->res.stop_command_error = r;
                return false;
        }
        s->cmd_pid = info.pid;
        s->phase = STOP_COMMAND;
        stop_arm_timer(s, plan_stop_timeout(plan));
        return true;
}

static void stop_kickoff_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct proc_stop *s = userdata;

        /* The first step runs from the loop, so that the callback never runs inside proc_stop(). */
        if (s->phase == STOP_STEPS && s->res.steps_taken == 0)
                stop_next_step(s);
}

int proc_stop(struct proc_reaper *r, const struct proc_stop_plan *plan, const struct proc_info *leader,
              const char *tag, proc_stop_cb cb, void *userdata, struct proc_stop **ret_stop, char **reterr)
{
        const struct proc_stop_step *steps;
        struct proc_stop *s;
        int k;

        if (!r || !cb)
                return mx_reterr(reterr, -EINVAL, "%s", "no reaper or no callback for the stop");
        k = check_tag(tag, reterr);
        if (k < 0)
                return k;
        k = plan_check(plan, reterr);
        if (k < 0)
                return k;
        if (leader && leader->pgid <= 0)
                return mx_reterr(reterr, -EINVAL, "leader has no process group (%d)", (int)leader->pgid);
        s = xcalloc(1, sizeof(*s));
        s->reaper = r;
        s->base = proc_reaper_get_base(r);
        s->cb = cb;
        s->userdata = userdata;
        s->start_us = mx_now_mono_us();
        s->res.stop_command_status = -1;
        steps = plan_steps(plan, &s->n_steps);
        memcpy(s->steps, steps, s->n_steps * sizeof(*steps));
        sweep_init(&s->sw, tag, leader ? leader->pgid : 0, leader ? leader->starttime : 0);
        s->timer = evtimer_new(s->base, stop_timer_cb, s);
        s->recheck = evtimer_new(s->base, stop_recheck_cb, s);
        s->kick_ev = event_new(s->base, -1, 0, stop_kickoff_cb, s);
        s->finish_ev = event_new(s->base, -1, 0, stop_finish_cb, s);
        if (!s->timer || !s->recheck || !s->kick_ev || !s->finish_ev) {
                stop_free(s);
                return mx_reterr(reterr, -ENOMEM, "%s", "cannot create the stop's events");
        }
        s->phase = STOP_STEPS;
        if (!stop_start_command(s, plan))
                event_active(s->kick_ev, 0, 0);
        if (ret_stop)
                *ret_stop = s;
        return 0;
}

struct proc_stop *proc_stop_cancel(struct proc_stop *s)
{
        if (!s)
                return NULL;
        if (s->finishing) {
                s->cancelled = true; /* from a watch callback during the final reap: freed there */
                return NULL;
        }
        stop_free(s);
        return NULL;
}

/* ---- the blocking stop, for start-up recovery ---- */

/* Milliseconds left until deadline_us (CLOCK_MONOTONIC), for poll(). */
static int ms_until(int64_t deadline_us)
{
        int64_t left = deadline_us - mx_now_mono_us();

        if (left <= 0)
                return 0;
        return (int)MX_MIN((left + 999) / 1000, INT32_MAX);
}

/*
 * Wait for our child pid to exit until the deadline; reap it and return its
 * status, or -1. Without a pidfd (Linux < 5.3, valgrind) it looks every
 * PROC_RECHECK_MS / 10 instead: this runs before the event loop exists.
 */
static int wait_child_exit(int pidfd, pid_t pid, int64_t deadline_us)
{
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int status, k, timeout;

        for (;;) {
                if (waitpid(pid, &status, WNOHANG) == pid)
                        return status;
                if (mx_now_mono_us() >= deadline_us)
                        return -1;
                timeout = ms_until(deadline_us);
                if (pidfd < 0)
                        timeout = MX_MIN(timeout, PROC_RECHECK_MS / 10);
                k = poll(&p, pidfd >= 0 ? 1 : 0, timeout);
                if (k < 0 && errno != EINTR)
                        return -1;
        }
}

/* Run the stop command and wait for it (bounded); on overrun kill its group and reap it. */
static void block_stop_command(const struct proc_stop_plan *plan, const char *tag,
                               struct proc_stop_result *res)
{
        _cleanup_close_ int pidfd = -1;
        struct proc_info info;
        int r;

        if (!plan || !plan->stop_argv)
                return;
        r = stop_command_spawn(plan, tag, &info);
        if (r < 0) {
                res->stop_command_error = r;
                return;
        }
        pidfd = pidfd_open(info.pid, 0); /* -1 is handled by wait_child_exit() */
        res->stop_command_status =
                wait_child_exit(pidfd, info.pid, mx_now_mono_us() + plan_stop_timeout(plan) * 1000);
        if (res->stop_command_status >= 0)
                return;
        res->stop_command_timed_out = true;
        (void)kill(-info.pid, SIGKILL);
        res->stop_command_status = wait_child_exit(pidfd, info.pid, mx_now_mono_us() + 10 * 1000 * 1000);
}

/* Wait until every waitable member has exited or the deadline passed; reap our children among them. */
static void block_wait_members(struct sweep *sw, int64_t deadline_us)
{
        struct pollfd *p = NULL;
        size_t n = 0;
        int k;

        p = xcalloc(MX_MAX(sw->n, 1u), sizeof(*p));
        for (size_t i = 0; i < sw->n; i++)
                if (sw->m[i].pidfd >= 0)
                        p[n++] = (struct pollfd){ .fd = sw->m[i].pidfd, .events = POLLIN };
        k = poll(p, n, ms_until(deadline_us));
        for (size_t j = 0; k > 0 && j < n; j++) {
                if (!p[j].revents)
                        continue;
                for (size_t i = 0; i < sw->n; i++)
                        if (sw->m[i].pidfd == p[j].fd) {
                                (void)waitpid(sw->m[i].pid, NULL, WNOHANG); /* if it is our child */
                                sweep_remove(sw, i);
                                break;
                        }
        }
        free(p);
}

/*
 * One step: signal everything, then wait for exits until the deadline, scanning
 * again whenever every waitable member is gone, and every PROC_RECHECK_MS while
 * some member has no pidfd.
 */
static int block_step(struct sweep *sw, const struct proc_stop_step *step)
{
        int64_t deadline = mx_now_mono_us() + step->grace_ms * 1000;
        int r;

        sweep_signal(sw, step->signal, false);
        for (;;) {
                int64_t now = mx_now_mono_us(), until = deadline;
                bool untracked = sw->n > sweep_waitable(sw);

                if (now >= deadline)
                        return 0;
                if (untracked)
                        until = MX_MIN(deadline, now + PROC_RECHECK_MS * 1000);
                if (sweep_waitable(sw) > 0)
                        block_wait_members(sw, until);
                else
                        (void)poll(NULL, 0, ms_until(until));
                if (sweep_waitable(sw) > 0 && sw->n == sweep_waitable(sw))
                        continue;
                r = sweep_refresh(sw);
                if (r < 0)
                        return r;
                if (sw->n == 0)
                        return 0;
                sweep_signal(sw, step->signal, true);
        }
}

/* Whether rec still names the same live process; if so its group and session count as the run's. */
static int recorded_identity(const struct proc_info *rec, char **reterr)
{
        int r;

        if (!rec)
                return 0;
        if (rec->pid <= 0 || rec->pgid <= 0)
                return mx_reterr(reterr, -EINVAL, "recorded process has pid %d, group %d", (int)rec->pid,
                            (int)rec->pgid);
        r = proc_identity_matches(rec->pid, rec->boot_id, rec->starttime);
        if (r < 0)
                return mx_reterr(reterr, r, "checking the identity of recorded process %d: %s", (int)rec->pid,
                            strerror(-r));
        return r;
}

int proc_kill_recorded(const struct proc_info *rec, const char *tag, const struct proc_stop_plan *plan,
                       struct proc_stop_result *ret, char **reterr)
{
        struct proc_stop_result res = { .stop_command_status = -1 };
        const struct proc_stop_step *steps;
        struct sweep sw;
        int64_t start = mx_now_mono_us();
        size_t n_steps;
        int r, same;

        r = check_tag(tag, reterr);
        if (r < 0)
                return r;
        r = plan_check(plan, reterr);
        if (r < 0)
                return r;
        same = recorded_identity(rec, reterr);
        if (same < 0)
                return same;
        res.identity_matched = same > 0;
        sweep_init(&sw, tag, same > 0 ? rec->pgid : 0, same > 0 ? rec->starttime : 0);
        block_stop_command(plan, sw.tag, &res);
        steps = plan_steps(plan, &n_steps);
        for (size_t i = 0; i < n_steps && res.error == 0; i++) {
                r = sweep_refresh(&sw);
                if (r < 0 || sw.n == 0) {
                        res.error = MX_MIN(r, 0);
                        break;
                }
                res.steps_taken++;
                res.error = block_step(&sw, &steps[i]);
        }
        if (res.error == 0)
                sweep_verify(&sw, NULL, &res);
        else
                res.clean = false;
        res.elapsed_us = mx_now_mono_us() - start;
        sweep_done(&sw);
        *ret = res;
        return 0;
}
