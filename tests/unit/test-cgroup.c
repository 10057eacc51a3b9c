/* SPDX-License-Identifier: MIT */
/*
 * Runs in cgroups (daemon/proc/cgroup.h) and the run in flight (proc_run_begin()):
 * processes start inside the run's cgroup (clone3, and the fork-and-write
 * fallback); a stop finds a descendant that cleared its environment and left
 * its session through the cgroup alone (no subreaper) or as an adopted child
 * alone (no cgroup); cgroup.kill and its per-pid fallback; and a process that
 * cannot be killed (frozen by the v1 freezer, where one is mounted) makes the
 * stop unclean. Needs a writable cgroup2 file system (root): exits 77 without.
 */
#include "test.h"

#include "cgroup.h"
#include "proc-reaper.h"
#include "proc-stop.h"
#include "proc.h"

#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define LOOP_TIMEOUT_MS 20000

static char *mfree_str(char *p)
{
        free(p);
        return NULL;
}

extern char **environ;

static struct mx_cgroup *cg_root;
static char *freezer; /* the v1 freezer cgroup a test made, thawed and removed at exit */

static void cleanup_freezer(void)
{
        _cleanup_free_ char *state = freezer ? xasprintf("%s/freezer.state", freezer) : NULL;
        int fd = state ? open(state, O_WRONLY | O_CLOEXEC) : -1;

        if (fd >= 0) {
                (void)!write(fd, "THAWED", 6);
                close(fd);
                usleep(100000);
        }
        if (freezer)
                (void)rmdir(freezer);
        freezer = mfree_str(freezer);
}

static void cleanup_root(void)
{
        if (cg_root && cg_root->base)
                (void)cgroup_kill_wait_remove(cg_root->base, 5000);
        cg_root = cgroup_free(cg_root);
}

/* The test's cgroup tree (skip without one); a new run cgroup named name below it. */
static char *run_cgroup(const char *name)
{
        _cleanup_free_ char *err = NULL;
        char *path = NULL;

        if (!cg_root) {
                unsetenv("INVOCATION_ID"); /* never move the test binary around a service's cgroup */
                if (cgroup_setup(test_tmpdir(), &cg_root, &err) < 0) {
                        _cleanup_free_ char *why = xasprintf("no writable cgroup2: %s", strna(err));
                        test_skip(why);
                }
                atexit(cleanup_root);
        }
        ASSERT_OK(cgroup_create(cg_root, name, &path, NULL));
        return path;
}

static void timeout_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        *(bool *)ud = true;
}

static bool run_until(struct event_base *base, const bool *done)
{
        struct timeval tv = { .tv_sec = LOOP_TIMEOUT_MS / 1000 };
        bool expired = false;
        struct event *t = evtimer_new(base, timeout_cb, &expired);

        evtimer_add(t, &tv);
        while (!*done && !expired)
                event_base_loop(base, EVLOOP_ONCE);
        event_free(t);
        return *done;
}

struct stop_rec {
        bool done, clean;
        size_t n_leftovers;
        pid_t first_leftover;
};

static void stop_cb(const struct proc_stop_result *res, void *ud)
{
        struct stop_rec *s = ud;

        s->done = true;
        s->clean = res->clean;
        s->n_leftovers = res->n_leftovers;
        s->first_leftover = res->n_leftovers ? res->leftovers[0] : 0;
}

static struct proc_info spawn(const char *script, const char *tag, int out_fd)
{
        char *const argv[] = { "sh", "-c", (char *)script, NULL };
        struct proc_spec spec = { .argv = argv, .env = environ, .tag = tag, .stdout_fd = out_fd, .stderr_fd = out_fd };
        _cleanup_free_ char *err = NULL;
        struct proc_info info;

        if (proc_spawn(&spec, &info, &err) < 0)
                test_fail(__FILE__, __LINE__, "spawn: %s", strna(err));
        return info;
}

/* A line holding a pid from fd (10 s at most). */
static pid_t read_pid(int fd)
{
        char buf[32] = "";
        size_t len = 0;
        int64_t v;

        while (len < sizeof(buf) - 1) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int k = poll(&p, 1, 10000);

                if (k < 0 && errno == EINTR) /* SIGCHLD: the reaper's signal event is installed */
                        continue;
                if (k <= 0 || read(fd, buf + len, 1) != 1)
                        test_fail(__FILE__, __LINE__, "no pid line from the child");
                if (buf[len] == '\n')
                        break;
                len++;
        }
        buf[len] = '\0';
        ASSERT_OK(mx_parse_int64(buf, 1, INT32_MAX, &v));
        return (pid_t)v;
}

static bool alive(pid_t pid)
{
        _cleanup_free_ char *path = xasprintf("/proc/%d/stat", (int)pid);
        char buf[512], *p;
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[MX_MAX(n, (ssize_t)0)] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The cgroup2 path of pid, from /proc/PID/cgroup. */
static char *cgroup_of(pid_t pid)
{
        _cleanup_free_ char *path = xasprintf("/proc/%d/cgroup", (int)pid);
        char buf[4096], *p;
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        ASSERT_TRUE(n > 0);
        buf[n] = '\0';
        p = strstr(buf, "0::");
        ASSERT_NOT_NULL(p);
        p[strcspn(p, "\n")] = '\0';
        return xstrdup(p + 3);
}

/* A descendant with an empty environment in its own session, orphaned by a double fork; prints its pid. */
#define ESCAPE "sh -c '(env -i setsid sh -c \"echo \\$\\$; exec sleep 1000\" &)'; exit 0"

static void check_spawn_lands_in(const char *name, bool clone3)
{
        _cleanup_free_ char *cg = run_cgroup(name), *got = NULL;
        _cleanup_free_ char *tag = xasprintf("mxtest-cg-%d-%s", (int)getpid(), name);
        struct proc_info info;

        proc_spawn_set_clone3(clone3);
        ASSERT_OK(proc_run_begin(cg, NULL));
        ASSERT_ERR(proc_run_begin(cg, NULL), EBUSY);
        info = spawn("sleep 1000", tag, -1);
        got = cgroup_of(info.pid);
        ASSERT_TRUE(endswith(got, name));
        ASSERT_TRUE(endswith(cg, got));
        ASSERT_EQ(cgroup_is_populated(cg), 1);
        ASSERT_OK(cgroup_kill(cg));
        ASSERT_EQ(waitpid(info.pid, NULL, 0), info.pid);
        proc_run_end();
        ASSERT_OK(cgroup_kill_wait_remove(cg, 5000));
        ASSERT_TRUE(access(cg, F_OK) < 0);
        proc_spawn_set_clone3(true);
}

TEST(spawn_starts_in_the_run_cgroup_with_clone3)
{
        check_spawn_lands_in("clone3", true);
}

TEST(spawn_starts_in_the_run_cgroup_without_clone3)
{
        check_spawn_lands_in("forkwrite", false);
}

/* Stop a run whose command left an orphaned escapee; returns the escapee's pid. */
static pid_t stop_escape(struct event_base *base, struct proc_reaper *reaper, const char *tag,
                         const struct proc_stop_plan *plan, struct stop_rec *rec)
{
        struct proc_info info;
        int fds[2];
        pid_t esc;

        ASSERT_OK(pipe2(fds, O_CLOEXEC));
        info = spawn(ESCAPE, tag, fds[1]);
        close(fds[1]);
        esc = read_pid(fds[0]);
        close(fds[0]);
        ASSERT_EQ(waitpid(info.pid, NULL, 0), info.pid); /* the command is over; its escapee is not */
        ASSERT_TRUE(alive(esc));
        *rec = (struct stop_rec){ 0 };
        ASSERT_OK(proc_stop(reaper, plan, NULL, tag, stop_cb, rec, NULL, NULL));
        if (!run_until(base, &rec->done))
                test_fail(__FILE__, __LINE__, "the stop did not end");
        return esc;
}

static const struct proc_stop_step quick_steps[] = { { SIGTERM, 300 }, { SIGKILL, 1000 } };
static const struct proc_stop_plan quick_plan = { .steps = quick_steps, .n_steps = 2 };

/* The cgroup alone finds it: the binary is no subreaper here, so the escapee goes to init. */
TEST(a_stop_finds_an_escapee_through_the_cgroup_alone)
{
        _cleanup_free_ char *cg = run_cgroup("alone");
        _cleanup_free_ char *tag = xasprintf("mxtest-cg-%d-alone", (int)getpid());
        struct event_base *base = event_base_new();
        struct proc_reaper *reaper = NULL;
        struct stop_rec rec;
        int sub = -1;
        pid_t esc;

        ASSERT_OK(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0));
        ASSERT_OK(prctl(PR_GET_CHILD_SUBREAPER, &sub));
        ASSERT_EQ(sub, 0);
        ASSERT_OK(proc_reaper_new(base, &reaper));
        ASSERT_OK(proc_run_begin(cg, NULL));
        esc = stop_escape(base, reaper, tag, &quick_plan, &rec);
        ASSERT_TRUE(rec.clean);
        for (int i = 0; i < 500 && alive(esc); i++)
                usleep(10000); /* init reaps it, not us */
        ASSERT_FALSE(alive(esc));
        ASSERT_EQ(cgroup_is_populated(cg), 0);
        proc_run_end();
        ASSERT_OK(cgroup_remove(cg));
        proc_reaper_free(reaper);
        event_base_free(base);
}

/* Without a cgroup, the daemon's adopted children are the run's. */
TEST(a_stop_kills_adopted_orphans_without_a_cgroup)
{
        _cleanup_free_ char *tag = xasprintf("mxtest-cg-%d-adopt", (int)getpid());
        struct event_base *base = event_base_new();
        struct proc_reaper *reaper = NULL;
        struct stop_rec rec;
        pid_t esc;

        ASSERT_OK(proc_subreaper_enable());
        ASSERT_OK(proc_reaper_new(base, &reaper));
        ASSERT_OK(proc_run_begin(NULL, NULL));
        esc = stop_escape(base, reaper, tag, &quick_plan, &rec);
        ASSERT_TRUE(rec.clean);
        ASSERT_FALSE(alive(esc));
        proc_run_end();
        proc_reaper_free(reaper);
        event_base_free(base);
}

TEST(cgroup_kill_without_cgroup_kill_file)
{
        _cleanup_free_ char *cg = run_cgroup("bypids");
        _cleanup_free_ char *tag = xasprintf("mxtest-cg-%d-bypids", (int)getpid());
        struct proc_info a, b;

        ASSERT_OK(proc_run_begin(cg, NULL));
        a = spawn("sleep 1000", tag, -1);
        b = spawn("sleep 1000 & sleep 1000 & wait", tag, -1);
        proc_run_end();
        ASSERT_EQ(cgroup_is_populated(cg), 1);
        ASSERT_OK(cgroup_kill_by_pids(cg));
        ASSERT_EQ(waitpid(a.pid, NULL, 0), a.pid);
        ASSERT_EQ(waitpid(b.pid, NULL, 0), b.pid);
        ASSERT_OK(cgroup_kill_wait_remove(cg, 5000)); /* the reparented sleeps die too */
        ASSERT_ERR(cgroup_is_populated(cg), ENOENT);
}

TEST(recovery_touches_only_run_cgroups)
{
        _cleanup_free_ char *cg = run_cgroup("mxr-abc");

        ASSERT_TRUE(cgroup_path_is_run(cg, "mxr-abc"));
        ASSERT_FALSE(cgroup_path_is_run(cg, "mxr-abd"));
        ASSERT_FALSE(cgroup_path_is_run("/tmp/mxr-abc", "mxr-abc"));
        ASSERT_FALSE(cgroup_path_is_run(NULL, "mxr-abc"));
        ASSERT_OK(cgroup_remove(cg));
}

/*
 * Containment impossible: a member the v1 freezer holds cannot die of SIGKILL
 * until it is thawed. The stop must say so (not clean, the escapee a leftover),
 * which the scheduler turns into infra-error and a paused queue.
 */
TEST(a_process_that_cannot_be_killed_makes_the_stop_unclean)
{
        _cleanup_free_ char *cg = run_cgroup("frozen");
        _cleanup_free_ char *tag = xasprintf("mxtest-cg-%d-frozen", (int)getpid());
        _cleanup_free_ char *fz = xasprintf("/sys/fs/cgroup/freezer/mxtest-%d", (int)getpid());
        _cleanup_free_ char *tasks = xasprintf("%s/tasks", fz), *state = xasprintf("%s/freezer.state", fz);
        _cleanup_free_ char *pidline = NULL;
        struct event_base *base = event_base_new();
        struct proc_reaper *reaper = NULL;
        struct proc_info info;
        struct stop_rec rec = { 0 };
        int fds[2], fd;
        pid_t esc;

        if (mkdir(fz, 0755) < 0) {
                _cleanup_free_ char *why = xasprintf("no v1 freezer to make an unkillable process: %m");
                ASSERT_OK(cgroup_remove(cg));
                test_skip(why);
        }
        freezer = xstrdup(fz);
        atexit(cleanup_freezer);
        ASSERT_OK(proc_subreaper_enable());
        ASSERT_OK(proc_reaper_new(base, &reaper));
        ASSERT_OK(proc_run_begin(cg, NULL));
        ASSERT_OK(pipe2(fds, O_CLOEXEC));
        info = spawn(ESCAPE, tag, fds[1]);
        close(fds[1]);
        esc = read_pid(fds[0]);
        close(fds[0]);
        ASSERT_EQ(waitpid(info.pid, NULL, 0), info.pid);
        pidline = xasprintf("%d", (int)esc);
        fd = open(tasks, O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0 && write(fd, pidline, strlen(pidline)) > 0);
        close(fd);
        fd = open(state, O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0 && write(fd, "FROZEN", 6) == 6);
        close(fd);
        ASSERT_OK(proc_stop(reaper, &quick_plan, NULL, tag, stop_cb, &rec, NULL, NULL));
        ASSERT_TRUE(run_until(base, &rec.done));
        ASSERT_FALSE(rec.clean);
        ASSERT_EQ(rec.n_leftovers, 1);
        ASSERT_EQ(rec.first_leftover, esc);
        ASSERT_EQ(cgroup_is_populated(cg), 1);
        /* Thawed, it dies of the SIGKILL it has pending; then the cgroup empties. */
        fd = open(state, O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0 && write(fd, "THAWED", 6) == 6);
        close(fd);
        for (int i = 0; i < 500 && alive(esc); i++) {
                proc_reaper_reap(reaper);
                usleep(10000);
        }
        ASSERT_FALSE(alive(esc));
        proc_run_end();
        ASSERT_OK(cgroup_kill_wait_remove(cg, 5000));
        (void)rmdir(fz);
        proc_reaper_free(reaper);
        event_base_free(base);
}
