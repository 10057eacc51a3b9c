/* SPDX-License-Identifier: MIT */
/*
 * Process control with real processes: sh scripts that exit, die by signals,
 * ignore SIGTERM, escape their session with setsid, orphan children and fail to
 * exec. Every test ends by asserting that nothing carrying its tag is alive; an
 * atexit handler kills whatever a failed test left behind.
 */
#include "test.h"

#include "proc.h"
#include "proc-reaper.h"
#include "proc-stop.h"

#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

extern char **environ;

static void *sleep_for_ever(void *arg)
{
        (void)arg;
        for (;;)
                pause();
        return NULL;
}

/*
 * This binary as a helper server (MXTEST_LEADER_EXITS set, before the tests
 * start): its main thread exits while another thread lives on, which leaves the
 * thread-group leader a zombie in /proc while the process is alive.
 */
__attribute__((constructor)) static void helper_leader_exits(void)
{
        pthread_t t;

        if (!getenv("MXTEST_LEADER_EXITS"))
                return;
        if (pthread_create(&t, NULL, sleep_for_ever, NULL) != 0)
                _exit(1);
        if (write(STDOUT_FILENO, "ready\n", 6) != 6)
                _exit(1);
        syscall(SYS_exit, 0); /* this thread only (not exit_group), without unwinding the loader's frames */
}

/* Generous: only a bug makes a loop wait this long. */
#define LOOP_TIMEOUT_MS 20000

static char **used_tags;

static char *drop(char *p)
{
        free(p);
        return NULL;
}

/* Kill everything a (failed) test left behind. */
static void kill_leftovers(void)
{
        static const struct proc_stop_step kill_now[] = { { SIGKILL, 2000 } };
        struct proc_stop_plan plan = { .steps = kill_now, .n_steps = 1 };

        for (size_t i = 0; used_tags && used_tags[i]; i++) {
                struct proc_stop_result res;

                if (proc_kill_recorded(NULL, used_tags[i], &plan, &res, NULL) >= 0)
                        proc_stop_result_done(&res);
        }
        used_tags = strv_free(used_tags);
}

/* A tag unique to this test binary and test; caller frees. */
static char *make_tag(const char *name)
{
        char *tag = xasprintf("mxtest-%d-%s", (int)getpid(), name);

        if (!used_tags)
                atexit(kill_leftovers);
        strv_push(&used_tags, tag);
        return tag;
}

static void assert_none_tagged(const char *tag)
{
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 99;

        ASSERT_OK(proc_find_tagged(tag, &pids, &n));
        ASSERT_EQ(n, 0);
        ASSERT_NULL(pids);
}

static void timeout_cb(evutil_socket_t fd, short what, void *userdata)
{
        *(bool *)userdata = true;
}

/* Run the loop until *done, or fail the test after ms. */
static bool run_until(struct event_base *base, const bool *done, int ms)
{
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
        bool expired = false;
        struct event *t = evtimer_new(base, timeout_cb, &expired);

        evtimer_add(t, &tv);
        while (!*done && !expired)
                event_base_loop(base, EVLOOP_ONCE);
        event_free(t);
        return *done;
}
#define RUN_UNTIL(base, done)                                                                               \
        do {                                                                                                \
                if (!run_until(base, done, LOOP_TIMEOUT_MS))                                                \
                        test_fail(__FILE__, __LINE__, "event loop timed out waiting for %s", #done);        \
        } while (0)

static int order_counter;

struct exit_rec {
        bool done;
        pid_t pid;
        int status;
        int order;
};

static void exit_cb(pid_t pid, int status, void *userdata)
{
        struct exit_rec *e = userdata;

        e->done = true;
        e->pid = pid;
        e->status = status;
        e->order = ++order_counter;
}

struct stop_rec {
        bool done;
        int order;
        struct proc_stop_result res; /* arrays copied */
};

static void stop_cb(const struct proc_stop_result *res, void *userdata)
{
        struct stop_rec *s = userdata;

        s->done = true;
        s->order = ++order_counter;
        s->res = *res;
        s->res.leftovers = res->n_leftovers ? xcalloc(res->n_leftovers, sizeof(pid_t)) : NULL;
        s->res.zombies = res->n_zombies ? xcalloc(res->n_zombies, sizeof(pid_t)) : NULL;
        if (res->n_leftovers)
                memcpy(s->res.leftovers, res->leftovers, res->n_leftovers * sizeof(pid_t));
        if (res->n_zombies)
                memcpy(s->res.zombies, res->zombies, res->n_zombies * sizeof(pid_t));
}

/* One test's loop and reaper. */
struct rig {
        struct event_base *base;
        struct proc_reaper *reaper;
};

static void rig_init(struct rig *g)
{
        ASSERT_OK(proc_subreaper_enable());
        g->base = event_base_new();
        ASSERT_NOT_NULL(g->base);
        ASSERT_OK(proc_reaper_new(g->base, &g->reaper));
}

static void rig_done(struct rig *g)
{
        g->reaper = proc_reaper_free(g->reaper);
        event_base_free(g->base);
}

/* Start argv with our environment plus extra, output to out_fd (-1: /dev/null). */
static struct proc_info spawn_ok(char *const *argv, const char *tag, int out_fd, char *const *extra)
{
        _cleanup_strv_free_ char **env = strv_copy(environ);
        _cleanup_free_ char *err = NULL;
        struct proc_spec spec = { .argv = argv, .tag = tag, .stdout_fd = out_fd, .stderr_fd = -1 };
        struct proc_info info;
        int r;

        for (size_t i = 0; extra && extra[i]; i++)
                strv_push(&env, extra[i]);
        spec.env = env;
        r = proc_spawn(&spec, &info, &err);
        if (r < 0)
                test_fail(__FILE__, __LINE__, "spawning %s: %s", argv[0], strna(err));
        return info;
}

/* The parent of pid, from /proc/PID/stat (waiting out the moment before an orphan is reparented). */
static pid_t getppid_of(pid_t pid)
{
        struct proc_match m = { .group = pid };
        _cleanup_free_ struct proc_entry *list = NULL;
        size_t n = 0;

        ASSERT_OK(proc_scan(&m, &list, &n));
        for (size_t i = 0; i < n; i++)
                if (list[i].pid == pid)
                        return list[i].ppid;
        return 0;
}

/* Whether pid is stopped by a signal. */
static bool stopped(pid_t pid)
{
        struct proc_match m = { .group = pid };
        _cleanup_free_ struct proc_entry *list = NULL;
        size_t n = 0;

        ASSERT_OK(proc_scan(&m, &list, &n));
        for (size_t i = 0; i < n; i++)
                if (list[i].pid == pid)
                        return list[i].state == 'T';
        return false;
}

static void make_pipe(int fds[2])
{
        ASSERT_OK(pipe2(fds, O_CLOEXEC));
}

#define SH(script) ((char *const[]){ "sh", "-c", script, NULL })

/* Read a line holding a pid from fd, waiting at most 10 s. */
static pid_t read_pid(int fd)
{
        char buf[32];
        size_t len = 0;
        int64_t v;

        while (len < sizeof(buf) - 1) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t k;

                if (poll(&p, 1, 10000) <= 0)
                        test_fail(__FILE__, __LINE__, "no pid line from the child");
                k = read(fd, buf + len, 1);
                if (k <= 0)
                        test_fail(__FILE__, __LINE__, "child closed its output before a pid line");
                if (buf[len] == '\n')
                        break;
                len++;
        }
        buf[len] = '\0';
        if (mx_parse_int64(buf, 1, INT32_MAX, &v) < 0)
                test_fail(__FILE__, __LINE__, "not a pid: '%s'", buf);
        return (pid_t)v;
}

/* Wait (at most 10 s) for the child to print "ready", i.e. its traps are set. */
static void wait_ready(int fd)
{
        char buf[6];
        size_t len = 0;

        while (len < sizeof(buf)) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t k;

                if (poll(&p, 1, 10000) <= 0)
                        test_fail(__FILE__, __LINE__, "child never said ready");
                k = read(fd, buf + len, sizeof(buf) - len);
                if (k <= 0)
                        test_fail(__FILE__, __LINE__, "child closed its output before ready");
                len += (size_t)k;
        }
        ASSERT_TRUE(memcmp(buf, "ready\n", 6) == 0);
}

/* Start a shell that ignores SIGTERM (and says so before we go on), as a server that will not stop. */
static struct proc_info spawn_term_ignorer(const char *tag)
{
        struct proc_info info;
        int fds[2];

        make_pipe(fds);
        info = spawn_ok(SH("trap '' TERM; echo ready; sleep 1000"), tag, fds[1], NULL);
        close(fds[1]);
        wait_ready(fds[0]);
        close(fds[0]);
        return info;
}

/* Whether pid exists and is not a zombie. */
static bool alive(pid_t pid)
{
        _cleanup_free_ char *path = xasprintf("/proc/%d/stat", (int)pid), *stat = NULL;
        const char *p;
        FILE *f = fopen(path, "re");
        char buf[512];
        size_t n;

        if (!f)
                return false;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Stop by tag (and leader) with plan and wait for the result. */
static void stop_and_wait(struct rig *g, const struct proc_stop_plan *plan, const struct proc_info *leader,
                          const char *tag, struct stop_rec *rec)
{
        _cleanup_free_ char *err = NULL;
        int r;

        *rec = (struct stop_rec){ 0 };
        r = proc_stop(g->reaper, plan, leader, tag, stop_cb, rec, NULL, &err);
        if (r < 0)
                test_fail(__FILE__, __LINE__, "proc_stop: %s", strna(err));
        ASSERT_FALSE(rec->done); /* never called from inside proc_stop() */
        RUN_UNTIL(g->base, &rec->done);
}

static const struct proc_stop_step quick_steps[] = { { SIGTERM, 300 }, { SIGKILL, 10000 } };
static const struct proc_stop_plan quick_plan = { .steps = quick_steps, .n_steps = 2 };

TEST(spawn_environment_session_identity)
{
        _cleanup_free_ char *tag = make_tag("env"), *forged = make_tag("forged"), *env = NULL, *path = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        char *const extra[] = { "NOTIFY_SOCKET=/run/x",
                                "LISTEN_FDS=3",
                                "LISTEN_PID=1",
                                "WATCHDOG_USEC=5",
                                "MXMATRIX_RUN_TAG=mxtest-forged",
                                NULL };
        char boot[PROC_BOOT_ID_SIZE];
        struct exit_rec ex = { 0 };
        struct stop_rec st;
        struct proc_info info;
        struct rig g;
        uint64_t start;
        size_t n = 0, len;

        rig_init(&g);
        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, extra);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        ASSERT_EQ(info.pgid, info.pid);
        ASSERT_EQ(getpgid(info.pid), info.pid);
        ASSERT_EQ(getsid(info.pid), info.pid);
        ASSERT_OK(proc_get_starttime(info.pid, &start));
        ASSERT_EQ(start, info.starttime);
        ASSERT_OK(proc_boot_id(boot));
        ASSERT_STREQ(info.boot_id, boot);

        ASSERT_EQ(proc_has_tag(info.pid, tag), 1);
        ASSERT_EQ(proc_has_tag(info.pid, "mxtest-forged"), 0);
        ASSERT_EQ(proc_has_tag(getpid(), tag), 0);
        path = xasprintf("/proc/%d/environ", (int)info.pid);
        env = test_read_file(path, &len);
        for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
                ASSERT_FALSE(startswith(env + i, "NOTIFY_SOCKET="));
                ASSERT_FALSE(startswith(env + i, "LISTEN_"));
                ASSERT_FALSE(startswith(env + i, "WATCHDOG_"));
        }
        ASSERT_OK(proc_find_tagged(tag, &pids, &n));
        ASSERT_EQ(n, 1);
        ASSERT_EQ(pids[0], info.pid);

        stop_and_wait(&g, NULL, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_EQ(st.res.steps_taken, 1); /* sleep dies of SIGTERM */
        ASSERT_EQ(st.res.n_leftovers, 0);
        ASSERT_TRUE(ex.done);
        ASSERT_LT(ex.order, st.order); /* the leader's status came before the stop's result */
        ASSERT_TRUE(WIFSIGNALED(ex.status));
        ASSERT_EQ(WTERMSIG(ex.status), SIGTERM);
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(reaper_reports_exit_codes_and_signals)
{
        _cleanup_free_ char *tag = make_tag("status");
        struct exit_rec a = { 0 }, b = { 0 };
        struct proc_info pa, pb;
        struct rig g;

        rig_init(&g);
        pa = spawn_ok(SH("exit 7"), tag, -1, NULL);
        ASSERT_OK(proc_reaper_watch(g.reaper, pa.pid, exit_cb, &a));
        ASSERT_ERR(proc_reaper_watch(g.reaper, pa.pid, exit_cb, &a), EEXIST);
        pb = spawn_ok(SH("kill -USR1 $$; sleep 5"), tag, -1, NULL);
        ASSERT_OK(proc_reaper_watch(g.reaper, pb.pid, exit_cb, &b));
        RUN_UNTIL(g.base, &a.done);
        RUN_UNTIL(g.base, &b.done);
        ASSERT_EQ(a.pid, pa.pid);
        ASSERT_TRUE(WIFEXITED(a.status));
        ASSERT_EQ(WEXITSTATUS(a.status), 7);
        ASSERT_EQ(b.pid, pb.pid);
        ASSERT_TRUE(WIFSIGNALED(b.status));
        ASSERT_EQ(WTERMSIG(b.status), SIGUSR1);
        ASSERT_ERR(proc_reaper_unwatch(g.reaper, pa.pid), ENOENT); /* delivered once, then gone */
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(spawn_failures_are_synchronous)
{
        _cleanup_free_ char *tag = make_tag("fail"), *err = NULL, *noexec = NULL;
        char *const no_path_sh[] = { "PATH=/nonexistent", NULL };
        struct proc_spec spec = { .tag = tag, .stdout_fd = -1, .stderr_fd = -1 };
        struct proc_info info = { .pid = 4242 };

        spec.argv = (char *const[]){ "/nonexistent/mxmatrix-no-such-server", NULL };
        ASSERT_ERR(proc_spawn(&spec, &info, &err), ENOENT);
        ASSERT_CONTAINS(err, "/nonexistent/mxmatrix-no-such-server");
        ASSERT_EQ(info.pid, 4242); /* untouched on failure */
        err = drop(err);

        /* (A directory on PATH we may not search would make it EACCES, as with execvp().) */
        spec.argv = (char *const[]){ "mxmatrix-no-such-server", NULL };
        spec.env = (char *const[]){ "PATH=/usr/bin:/bin", NULL };
        ASSERT_ERR(proc_spawn(&spec, &info, &err), ENOENT);
        ASSERT_CONTAINS(err, "executing 'mxmatrix-no-such-server'");
        err = drop(err);
        spec.env = NULL;

        /* PATH comes from the spec's environment, not ours. */
        spec.argv = SH("exit 0");
        spec.env = no_path_sh;
        ASSERT_ERR(proc_spawn(&spec, &info, &err), ENOENT);
        err = drop(err);
        spec.env = NULL;

        spec.cwd = "/nonexistent/dir";
        ASSERT_ERR(proc_spawn(&spec, &info, &err), ENOENT);
        ASSERT_CONTAINS(err, "chdir to '/nonexistent/dir'");
        err = drop(err);
        spec.cwd = NULL;

        noexec = xasprintf("%s/not-executable", test_tmpdir());
        test_write_file(noexec, "#!/bin/sh\nexit 0\n");
        spec.argv = (char *const[]){ noexec, NULL };
        ASSERT_ERR(proc_spawn(&spec, &info, &err), EACCES);
        err = drop(err);

        spec.argv = SH("exit 0");
        spec.env = (char *const[]){ "NOEQUALS", NULL };
        ASSERT_ERR(proc_spawn(&spec, &info, &err), EINVAL);
        ASSERT_CONTAINS(err, "environment entry 0 ('NOEQUALS')");
        err = drop(err);
        spec.env = NULL;

        spec.tag = "bad tag";
        ASSERT_ERR(proc_spawn(&spec, &info, &err), EINVAL);
        ASSERT_CONTAINS(err, "run tag 'bad tag'");
        err = drop(err);

        /* Every failed child was reaped inside proc_spawn(). */
        ASSERT_EQ(waitpid(-1, NULL, WNOHANG), -1);
        ASSERT_EQ(errno, ECHILD);
        assert_none_tagged(tag);
}

TEST(spawn_stdio_descriptors_and_signals)
{
        _cleanup_free_ char *tag = make_tag("fds"), *out = NULL, *script = NULL;
        _cleanup_close_ int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: must not reach the child */
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct mx_buf b = MX_BUF_INIT;
        sigset_t block, old;
        int fds[2];
        struct rig g;
        char chunk[4096];
        ssize_t k;

        rig_init(&g);
        ASSERT_TRUE(leak >= 3);
        make_pipe(fds);
        /* A handler-less ignored signal and a blocked one must not survive into the server. */
        signal(SIGUSR2, SIG_IGN);
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigprocmask(SIG_BLOCK, &block, &old);
        script = xasprintf(
                "readlink /proc/self/fd/0; test -e /proc/self/fd/%d && echo leaked || echo closed; "
                "grep -E '^Sig(Blk|Ign)' /proc/self/status; echo to-stderr >&2",
                leak);
        info = spawn_ok(SH(script), tag, fds[1], NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        signal(SIGUSR2, SIG_DFL);
        close(fds[1]);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        while ((k = read(fds[0], chunk, sizeof(chunk))) > 0)
                mx_buf_add(&b, chunk, (size_t)k);
        close(fds[0]);
        out = mx_buf_steal(&b);
        ASSERT_CONTAINS(out, "/dev/null\n");
        ASSERT_CONTAINS(out, "closed\n");
        ASSERT_CONTAINS(out, "SigBlk:\t0000000000000000\n");
        ASSERT_CONTAINS(out, "SigIgn:\t0000000000000000\n");
        ASSERT_TRUE(strstr(out, "to-stderr") == NULL); /* stderr went to /dev/null */
        RUN_UNTIL(g.base, &ex.done);
        ASSERT_EQ(WEXITSTATUS(ex.status), 0);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(stop_escalates_and_finds_escaped_grandchild)
{
        _cleanup_free_ char *tag = make_tag("escape");
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct stop_rec st;
        struct rig g;
        pid_t grandchild;
        int fds[2];

        rig_init(&g);
        make_pipe(fds);
        /*
         * The leader ignores SIGTERM; the grandchild leaves the session, ignores it
         * too, and is orphaned at once (the subshell exits), so that only its tag
         * ties it to the run: not its session, group or parent.
         */
        info = spawn_ok(
                SH("trap '' TERM; (setsid sh -c 'echo $$; while :; do sleep 1; done' &); sleep 1000"), tag,
                fds[1], NULL);
        close(fds[1]);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        grandchild = read_pid(fds[0]);
        close(fds[0]);
        ASSERT_EQ(getsid(grandchild), grandchild); /* escaped the server's session and group */
        ASSERT_NE(getpgid(grandchild), info.pgid);
        ASSERT_EQ(proc_has_tag(grandchild, tag), 1);
        /* Adopted by the subreaper once the subshell has exited (bounded wait). */
        for (int i = 0; i < 1000 && getppid_of(grandchild) != getpid(); i++)
                usleep(10000);
        ASSERT_EQ(getppid_of(grandchild), getpid());

        stop_and_wait(&g, &quick_plan, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_EQ(st.res.steps_taken, 2); /* SIGTERM was ignored: SIGKILL did it */
        ASSERT_EQ(st.res.n_leftovers, 0);
        ASSERT_EQ(st.res.error, 0);
        ASSERT_TRUE(ex.done);
        ASSERT_EQ(WTERMSIG(ex.status), SIGKILL);
        ASSERT_FALSE(alive(grandchild));
        ASSERT_EQ(kill(grandchild, 0), -1); /* reaped, not a zombie */
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(stop_follows_children_that_clear_their_environment)
{
        _cleanup_free_ char *tag = make_tag("env-cleared");
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct stop_rec st;
        struct rig g;
        pid_t child;
        int fds[2];

        rig_init(&g);
        make_pipe(fds);
        /* No tag, its own session: only its parent (the leader) ties it to the run. */
        info = spawn_ok(SH("env -i /usr/bin/setsid /bin/sh -c 'echo $$; exec /bin/sleep 1000' & sleep 1000"),
                        tag, fds[1], NULL);
        close(fds[1]);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        child = read_pid(fds[0]);
        close(fds[0]);
        ASSERT_EQ(proc_has_tag(child, tag), 0);
        ASSERT_EQ(getsid(child), child);

        stop_and_wait(&g, &quick_plan, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_EQ(st.res.steps_taken, 1);
        ASSERT_FALSE(alive(child));
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(stop_continues_a_stopped_server)
{
        _cleanup_free_ char *tag = make_tag("stopped");
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct stop_rec st;
        struct rig g;
        int fds[2];

        rig_init(&g);
        make_pipe(fds);
        /* A server with a SIGTERM handler, stopped (SIGSTOP): the handler can only run after SIGCONT. */
        info = spawn_ok(SH("trap 'exit 0' TERM; echo ready; kill -STOP $$; sleep 1000"), tag, fds[1], NULL);
        close(fds[1]);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        wait_ready(fds[0]);
        close(fds[0]);
        for (int i = 0; i < 1000 && !stopped(info.pid); i++)
                usleep(10000);
        ASSERT_TRUE(stopped(info.pid));

        stop_and_wait(&g, &quick_plan, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_EQ(st.res.steps_taken, 1);
        ASSERT_TRUE(ex.done);
        ASSERT_TRUE(WIFEXITED(ex.status)); /* its handler ran: not killed by SIGKILL */
        ASSERT_EQ(WEXITSTATUS(ex.status), 0);
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

/* The state letter in /proc/PID/stat, as the kernel writes it, or 0 when pid is gone. */
static char proc_state(pid_t pid)
{
        _cleanup_free_ char *path = xasprintf("/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "re");
        char buf[512], *p;
        size_t n;

        if (!f)
                return 0;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' ? p[2] : 0;
}

TEST(stop_kills_a_server_whose_main_thread_exited)
{
        _cleanup_free_ char *tag = make_tag("leader"), *self = NULL;
        char *const extra[] = { "MXTEST_LEADER_EXITS=1", NULL };
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct stop_rec st;
        struct rig g;
        int fds[2];

        self = realpath("/proc/self/exe", NULL);
        ASSERT_NOT_NULL(self);
        rig_init(&g);
        make_pipe(fds);
        info = spawn_ok((char *const[]){ self, NULL }, tag, fds[1], extra);
        close(fds[1]);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        wait_ready(fds[0]);
        close(fds[0]);
        for (int i = 0; i < 1000 && proc_state(info.pid) != 'Z'; i++)
                usleep(10000);
        ASSERT_EQ(proc_state(info.pid), 'Z'); /* the leader is a zombie, its other thread runs */

        stop_and_wait(&g, &quick_plan, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_TRUE(ex.done); /* killed and reaped */
        ASSERT_EQ(proc_state(info.pid), 0);
        proc_stop_result_done(&st.res);
        rig_done(&g);
}

TEST(stop_reports_leftovers_when_the_plan_is_too_weak)
{
        _cleanup_free_ char *tag = make_tag("weak");
        static const struct proc_stop_step term_only[] = { { SIGTERM, 200 } };
        struct proc_stop_plan weak = { .steps = term_only, .n_steps = 1 };
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct stop_rec st;
        struct rig g;

        rig_init(&g);
        info = spawn_term_ignorer(tag);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        stop_and_wait(&g, &weak, &info, tag, &st);
        ASSERT_FALSE(st.res.clean);
        ASSERT_EQ(st.res.steps_taken, 1);
        ASSERT_TRUE(st.res.n_leftovers >= 1);
        ASSERT_EQ(st.res.leftovers[0], info.pid);
        ASSERT_TRUE(alive(info.pid));
        proc_stop_result_done(&st.res);

        stop_and_wait(&g, &quick_plan, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(stop_with_nothing_alive)
{
        _cleanup_free_ char *tag = make_tag("nothing");
        struct stop_rec st;
        struct rig g;

        rig_init(&g);
        stop_and_wait(&g, NULL, NULL, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_EQ(st.res.steps_taken, 0);
        ASSERT_EQ(st.res.stop_command_status, -1);
        proc_stop_result_done(&st.res);
        rig_done(&g);
}

TEST(orphans_are_adopted_and_reaped)
{
        _cleanup_free_ char *tag = make_tag("orphan");
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct rig g;
        uint64_t before;
        pid_t orphan;
        int64_t deadline;
        int fds[2];

        rig_init(&g);
        before = proc_reaper_adopted(g.reaper);
        make_pipe(fds);
        /* Double fork: the leader exits at once and leaves its background child behind. */
        info = spawn_ok(SH("sleep 1 & echo $!; exit 3"), tag, fds[1], NULL);
        close(fds[1]);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        orphan = read_pid(fds[0]);
        close(fds[0]);
        RUN_UNTIL(g.base, &ex.done);
        ASSERT_EQ(WEXITSTATUS(ex.status), 3);
        /* The orphan now has us, the subreaper, as parent (PID 1 otherwise). */
        if (alive(orphan)) {
                struct proc_match m = { .tag = tag };
                _cleanup_free_ struct proc_entry *list = NULL;
                size_t n = 0;

                ASSERT_OK(proc_scan(&m, &list, &n));
                for (size_t i = 0; i < n; i++)
                        if (list[i].pid == orphan)
                                ASSERT_EQ(list[i].ppid, getpid());
        }
        /* The orphan's SIGCHLD comes to us when its sleep ends; the deadline only guards against a hang. */
        deadline = mx_now_mono_us() + LOOP_TIMEOUT_MS * 1000LL;
        while (proc_reaper_adopted(g.reaper) == before) {
                bool never = false;

                ASSERT_LT(mx_now_mono_us(), deadline);
                (void)run_until(g.base, &never, 100);
        }
        ASSERT_EQ(proc_reaper_adopted(g.reaper), before + 1);
        ASSERT_EQ(kill(orphan, 0), -1);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(identity_guards_against_pid_reuse)
{
        _cleanup_free_ char *tag = make_tag("identity");
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct stop_rec st;
        struct rig g;

        rig_init(&g);
        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, NULL);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        ASSERT_EQ(proc_identity_matches(info.pid, info.boot_id, info.starttime), 1);
        /* The same pid with another start time is another process: a reused pid. */
        ASSERT_EQ(proc_identity_matches(info.pid, info.boot_id, info.starttime + 1), 0);
        ASSERT_EQ(proc_identity_matches(info.pid, "00000000-0000-0000-0000-000000000000", info.starttime),
                  0);
        ASSERT_ERR(proc_identity_matches(0, info.boot_id, info.starttime), EINVAL);

        stop_and_wait(&g, NULL, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        proc_stop_result_done(&st.res);
        RUN_UNTIL(g.base, &ex.done);
        /* Gone now: no identity matches, whatever the record says. */
        ASSERT_EQ(proc_identity_matches(info.pid, info.boot_id, info.starttime), 0);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(kill_recorded_kills_a_matching_group)
{
        _cleanup_free_ char *tag = make_tag("recorded");
        struct proc_stop_result res;
        struct proc_info info;
        pid_t untagged;
        int fds[2];

        make_pipe(fds);
        /* A group member without the tag: only the (verified) group reaches it. */
        info = spawn_ok(SH("trap '' TERM; env -u MXMATRIX_RUN_TAG sh -c 'echo $$; exec sleep 1000' & "
                           "exec sleep 1000"),
                        tag, fds[1], NULL);
        close(fds[1]);
        untagged = read_pid(fds[0]);
        close(fds[0]);
        ASSERT_EQ(proc_has_tag(untagged, tag), 0);
        ASSERT_EQ(getpgid(untagged), info.pgid);

        ASSERT_OK(proc_kill_recorded(&info, tag, &quick_plan, &res, NULL));
        ASSERT_TRUE(res.identity_matched);
        ASSERT_TRUE(res.clean);
        ASSERT_TRUE(res.steps_taken >= 1);
        ASSERT_EQ(res.n_leftovers, 0);
        ASSERT_FALSE(alive(info.pid));
        ASSERT_FALSE(alive(untagged));
        ASSERT_EQ(kill(info.pid, 0), -1); /* our child: reaped there */
        proc_stop_result_done(&res);
        assert_none_tagged(tag);
}

TEST(kill_recorded_refuses_a_mismatched_identity)
{
        _cleanup_free_ char *tag = make_tag("mine"), *other = make_tag("other-run");
        struct proc_stop_result res;
        struct proc_info info, rec;
        struct exit_rec ex = { 0 };
        struct stop_rec st;
        struct rig g;

        rig_init(&g);
        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, NULL);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        /* A record that names this pid but another start time, and another run's tag. */
        rec = info;
        rec.starttime = info.starttime - 1;
        ASSERT_OK(proc_kill_recorded(&rec, other, &quick_plan, &res, NULL));
        ASSERT_FALSE(res.identity_matched);
        ASSERT_EQ(res.steps_taken, 0);
        ASSERT_TRUE(res.clean);
        ASSERT_TRUE(alive(info.pid)); /* not ours to kill */
        proc_stop_result_done(&res);

        /* Another boot: the same. */
        rec = info;
        memcpy(rec.boot_id, "00000000-0000-0000-0000-000000000000", PROC_BOOT_ID_SIZE);
        ASSERT_OK(proc_kill_recorded(&rec, other, &quick_plan, &res, NULL));
        ASSERT_FALSE(res.identity_matched);
        ASSERT_TRUE(alive(info.pid));
        proc_stop_result_done(&res);

        stop_and_wait(&g, NULL, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(kill_recorded_runs_the_stop_command)
{
        _cleanup_free_ char *tag = make_tag("recorded-cmd"), *pidarg = NULL;
        struct proc_stop_plan plan = quick_plan;
        struct proc_stop_result res;
        struct proc_info info;

        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, NULL);
        pidarg = xasprintf("%d", (int)info.pid);
        plan.stop_argv = (char *const[]){ "sh", "-c", "kill -INT \"$1\"", "sh", pidarg, NULL };
        plan.stop_env = environ;
        ASSERT_OK(proc_kill_recorded(&info, tag, &plan, &res, NULL));
        ASSERT_TRUE(res.clean);
        ASSERT_FALSE(res.stop_command_timed_out);
        ASSERT_TRUE(WIFEXITED(res.stop_command_status));
        ASSERT_EQ(WEXITSTATUS(res.stop_command_status), 0);
        ASSERT_FALSE(alive(info.pid));
        proc_stop_result_done(&res);

        /* A stop command that hangs is killed at its timeout, and the steps still run. */
        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, NULL);
        plan.stop_argv = SH("trap '' TERM; sleep 1000");
        plan.stop_timeout_ms = 200;
        ASSERT_OK(proc_kill_recorded(&info, tag, &plan, &res, NULL));
        ASSERT_TRUE(res.stop_command_timed_out);
        ASSERT_TRUE(WIFSIGNALED(res.stop_command_status));
        ASSERT_EQ(WTERMSIG(res.stop_command_status), SIGKILL);
        ASSERT_TRUE(res.clean);
        ASSERT_EQ(res.steps_taken, 1);
        ASSERT_FALSE(alive(info.pid));
        proc_stop_result_done(&res);
        assert_none_tagged(tag);
}

TEST(stop_command_runs_first)
{
        _cleanup_free_ char *tag = make_tag("stopcmd"), *pidarg = NULL;
        struct exit_rec ex = { 0 };
        struct proc_info info;
        struct stop_rec st;
        struct proc_stop_plan plan = quick_plan;
        struct rig g;

        rig_init(&g);
        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, NULL);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        /* Like "docker compose down": the stop command ends the server itself. */
        pidarg = xasprintf("%d", (int)info.pid);
        plan.stop_argv = (char *const[]){ "sh", "-c", "kill -INT \"$1\"", "sh", pidarg, NULL };
        plan.stop_env = environ;
        stop_and_wait(&g, &plan, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_FALSE(st.res.stop_command_timed_out);
        ASSERT_EQ(st.res.stop_command_error, 0);
        ASSERT_TRUE(WIFEXITED(st.res.stop_command_status));
        ASSERT_EQ(WEXITSTATUS(st.res.stop_command_status), 0);
        /* The server may still be dying of the stop command's SIGINT when the steps look. */
        ASSERT_LE(st.res.steps_taken, 1);
        ASSERT_TRUE(ex.done);
        ASSERT_EQ(WTERMSIG(ex.status), SIGINT);
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(stop_command_overrun_is_killed)
{
        _cleanup_free_ char *tag = make_tag("stopcmd-hang");
        struct proc_info info;
        struct stop_rec st;
        struct proc_stop_plan plan = quick_plan;
        struct exit_rec ex = { 0 };
        struct rig g;

        rig_init(&g);
        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, NULL);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        plan.stop_argv = SH("trap '' TERM; sleep 1000");
        plan.stop_timeout_ms = 200;
        stop_and_wait(&g, &plan, &info, tag, &st);
        ASSERT_TRUE(st.res.clean);
        ASSERT_TRUE(st.res.stop_command_timed_out);
        ASSERT_TRUE(WIFSIGNALED(st.res.stop_command_status));
        ASSERT_EQ(WTERMSIG(st.res.stop_command_status), SIGKILL);
        ASSERT_EQ(st.res.steps_taken, 1);
        proc_stop_result_done(&st.res);

        /* A stop command that does not exist is reported, and the signals still run. */
        plan.stop_argv = (char *const[]){ "/nonexistent/docker", NULL };
        info = spawn_ok((char *const[]){ "sleep", "1000", NULL }, tag, -1, NULL);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        stop_and_wait(&g, &plan, &info, tag, &st);
        ASSERT_EQ(st.res.stop_command_error, -ENOENT);
        ASSERT_TRUE(st.res.clean);
        ASSERT_EQ(st.res.steps_taken, 1);
        proc_stop_result_done(&st.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(stop_cancel_suppresses_the_callback)
{
        _cleanup_free_ char *tag = make_tag("cancel");
        static const struct proc_stop_step slow[] = { { SIGTERM, 60000 } };
        struct proc_stop_plan plan = { .steps = slow, .n_steps = 1 };
        struct exit_rec ex = { 0 };
        struct proc_stop *s = NULL;
        struct proc_info info;
        struct stop_rec st = { 0 }, st2;
        struct rig g;
        bool tick = false;

        rig_init(&g);
        info = spawn_term_ignorer(tag);
        ASSERT_OK(proc_reaper_watch(g.reaper, info.pid, exit_cb, &ex));
        ASSERT_OK(proc_stop(g.reaper, &plan, &info, tag, stop_cb, &st, &s, NULL));
        ASSERT_NOT_NULL(s);
        (void)run_until(g.base, &tick, 300); /* let the first step run */
        ASSERT_NULL(proc_stop_cancel(s));
        (void)run_until(g.base, &tick, 100);
        ASSERT_FALSE(st.done);
        ASSERT_TRUE(alive(info.pid));

        stop_and_wait(&g, &quick_plan, &info, tag, &st2);
        ASSERT_TRUE(st2.res.clean);
        proc_stop_result_done(&st2.res);
        assert_none_tagged(tag);
        rig_done(&g);
}

TEST(stop_refuses_bad_plans_and_tags)
{
        static const struct proc_stop_step too_many[PROC_STOP_STEPS_MAX + 1] = { { SIGTERM, 1 } };
        static const struct proc_stop_step zero_sig[] = { { 0, 100 } };
        static const struct proc_stop_step neg_grace[] = { { SIGKILL, -1 } };
        struct proc_stop_plan plan = { .steps = too_many, .n_steps = PROC_STOP_STEPS_MAX + 1 };
        _cleanup_free_ char *tag = make_tag("plans"), *err = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        struct stop_rec st = { 0 };
        struct proc_stop_result res;
        struct rig g;
        size_t n;

        rig_init(&g);
        ASSERT_ERR(proc_stop(g.reaper, &plan, NULL, tag, stop_cb, &st, NULL, &err), E2BIG);
        ASSERT_CONTAINS(err, "10 steps");
        err = drop(err);
        plan = (struct proc_stop_plan){ .steps = zero_sig, .n_steps = 1 };
        ASSERT_ERR(proc_stop(g.reaper, &plan, NULL, tag, stop_cb, &st, NULL, &err), EINVAL);
        ASSERT_CONTAINS(err, "stop step 1");
        err = drop(err);
        plan = (struct proc_stop_plan){ .steps = neg_grace, .n_steps = 1 };
        ASSERT_ERR(proc_stop(g.reaper, &plan, NULL, tag, stop_cb, &st, NULL, &err), ERANGE);
        err = drop(err);
        ASSERT_ERR(proc_stop(g.reaper, NULL, NULL, "no/slash", stop_cb, &st, NULL, &err), EINVAL);
        ASSERT_CONTAINS(err, "no/slash");
        err = drop(err);
        ASSERT_ERR(proc_kill_recorded(NULL, "", NULL, &res, &err), EINVAL);
        err = drop(err);
        ASSERT_ERR(proc_find_tagged("two words", &pids, &n), EINVAL);
        ASSERT_FALSE(proc_tag_is_valid(NULL));
        ASSERT_TRUE(proc_tag_is_valid("170bd001-4226-45d0-b1a1-64c29cb013d8-42"));
        ASSERT_FALSE(st.done);
        rig_done(&g);
}
