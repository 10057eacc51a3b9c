/* SPDX-License-Identifier: MIT */
/* Starting target servers, and reading /proc to find them again (see proc.h). */
#include "proc.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "cgroup.h"

/* The default search path when neither the spec nor the daemon has PATH (execvp's choice, less ".") */
#define PROC_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"


int proc_subreaper_enable(void)
{
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

/* The run in flight (proc.h): its cgroup, as a path and as a directory descriptor for clone3(). */
static struct {
        bool active;
        char *cgroup;
        int cgroup_fd;
} run = { .cgroup_fd = -1 };
static bool use_clone3 = true;

int proc_run_begin(const char *cgroup_path, char **reterr)
{
        int fd = -1;

        if (run.active)
                return mx_reterr(reterr, -EBUSY, "%s", "a run is in flight already");
        if (cgroup_path) {
                fd = open(cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return mx_reterr(reterr, -errno, "cannot open the cgroup %s: %m", cgroup_path);
        }
        run.active = true;
        run.cgroup = cgroup_path ? xstrdup(cgroup_path) : NULL;
        run.cgroup_fd = fd;
        return 0;
}

void proc_run_end(void)
{
        if (run.cgroup_fd >= 0)
                close(run.cgroup_fd);
        free(run.cgroup);
        run.cgroup = NULL;
        run.cgroup_fd = -1;
        run.active = false;
}

bool proc_run_active(void)
{
        return run.active;
}

const char *proc_run_cgroup(void)
{
        return run.cgroup;
}

void proc_spawn_set_clone3(bool use)
{
        use_clone3 = use;
}

bool proc_tag_is_valid(const char *tag)
{
        size_t n;

        if (!tag)
                return false;
        n = strlen(tag);
        if (n == 0 || n > PROC_TAG_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)tag[i]) && !strchr("._-", tag[i]))
                        return false;
        return true;
}

int proc_read_small(const char *path, char *buf, size_t size, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        size_t len = 0;

        if (fd < 0)
                return -errno;
        while (len < size - 1) {
                ssize_t k = read(fd, buf + len, size - 1 - len);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        buf[len] = '\0';
        *ret_len = len;
        return 0;
}

int proc_boot_id(char ret[static PROC_BOOT_ID_SIZE])
{
        static char cached[PROC_BOOT_ID_SIZE];
        char buf[64];
        size_t len;
        int r;

        if (!cached[0]) {
                r = proc_read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf), &len);
                if (r < 0)
                        return r;
                if (len < PROC_BOOT_ID_SIZE - 1 || (len > PROC_BOOT_ID_SIZE - 1 && buf[36] != '\n'))
                        return -EIO;
                memcpy(cached, buf, PROC_BOOT_ID_SIZE - 1);
                cached[PROC_BOOT_ID_SIZE - 1] = '\0';
        }
        memcpy(ret, cached, PROC_BOOT_ID_SIZE);
        return 0;
}

/* Kernel task flags (/proc/PID/stat field 9), from include/linux/sched.h. */
#define KFLAG_EXITING 0x00000004U
#define KFLAG_KTHREAD 0x00200000U

/* Parse /proc/PID/stat into e (pid untouched); the command name may hold spaces and ')'. */
static int parse_stat(const char *buf, struct proc_entry *e, unsigned *ret_kflags)
{
        const char *p = strrchr(buf, ')');
        unsigned long long starttime;
        int ppid, pgid, sid, threads;
        unsigned kflags;
        char state;

        if (!p)
                return -EIO;
        /* fields 3..22: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
         * utime stime cutime cstime priority nice num_threads itrealvalue starttime */
        if (sscanf(p + 1, " %c %d %d %d %*d %*d %u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %d %*d %llu",
                   &state, &ppid, &pgid, &sid, &kflags, &threads, &starttime) != 7)
                return -EIO;
        /*
         * A leader whose main thread exited while other threads run reads 'Z', but the
         * process lives (and holds its memory): it must be signalled and waited for.
         */
        if (state == 'Z' && threads > 1)
                state = 'R';
        e->state = state;
        e->ppid = ppid;
        e->pgid = pgid;
        e->sid = sid;
        e->starttime = starttime;
        if (ret_kflags)
                *ret_kflags = kflags;
        return 0;
}

static int read_stat(pid_t pid, struct proc_entry *ret, unsigned *ret_kflags)
{
        char path[64], buf[1024];
        struct proc_entry e = { .pid = pid };
        size_t len;
        int r;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        r = proc_read_small(path, buf, sizeof(buf), &len);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        r = parse_stat(buf, &e, ret_kflags);
        if (r < 0)
                return r;
        *ret = e;
        return 0;
}

int proc_get_starttime(pid_t pid, uint64_t *ret)
{
        struct proc_entry e;
        int r;

        if (pid <= 0)
                return -EINVAL;
        r = read_stat(pid, &e, NULL);
        if (r < 0)
                return r;
        *ret = e.starttime;
        return 0;
}

int proc_identity_matches(pid_t pid, const char *boot_id, uint64_t starttime)
{
        char now[PROC_BOOT_ID_SIZE];
        uint64_t st;
        int r;

        if (pid <= 0 || !boot_id)
                return -EINVAL;
        r = proc_boot_id(now);
        if (r < 0)
                return r;
        if (!streq(now, boot_id))
                return 0; /* another boot: every process of it is gone */
        r = proc_get_starttime(pid, &st);
        if (r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        return st == starttime;
}

/*
 * Search fd (an environ file) for needle, which is "\0NAME=value\0": the
 * environment is read in chunks, with the last needle-1 bytes carried over, and
 * framed by a NUL on each side so the first and last entries match too. The
 * size of an environment is bounded by the kernel (at most a quarter of the stack
 * limit at exec), and nothing of it is kept.
 */
static int environ_contains(int fd, const char *needle, size_t nlen, bool *ret_empty)
{
        char buf[65536 + 2 * PROC_TAG_MAX];
        size_t have = 1, total = 0;
        bool eof = false;

        buf[0] = '\0';
        while (!eof) {
                ssize_t k = read(fd, buf + have, sizeof(buf) - have - 1);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                have += (size_t)k;
                total += (size_t)k;
                if (k == 0) {
                        eof = true;
                        buf[have++] = '\0';
                }
                if (memmem(buf, have, needle, nlen))
                        return 1;
                *ret_empty = total == 0;
                if (have >= nlen) {
                        memmove(buf, buf + have - (nlen - 1), nlen - 1);
                        have = nlen - 1;
                }
        }
        return 0;
}

static char *tag_needle(const char *tag, size_t *ret_len)
{
        char *n = xasprintf("%c%s=%s%c", 'x', PROC_TAG_ENV, tag, 'x');
        size_t len = strlen(n);

        n[0] = n[len - 1] = '\0';
        *ret_len = len;
        return n;
}

static int has_needle(pid_t pid, const char *needle, size_t nlen, bool *ret_empty)
{
        char path[64];
        _cleanup_close_ int fd = -1;

        snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        return environ_contains(fd, needle, nlen, ret_empty);
}

int proc_has_tag(pid_t pid, const char *tag)
{
        _cleanup_free_ char *needle = NULL;
        size_t nlen;

        if (pid <= 0 || !proc_tag_is_valid(tag))
                return -EINVAL;
        needle = tag_needle(tag, &nlen);
        return has_needle(pid, needle, nlen, &(bool){ false });
}

/* A process as a scan reads it: its stat, its kernel flags, and whether it belongs to the run. */
struct scan_item {
        struct proc_entry e;
        unsigned kflags;
        bool matched;
};

/*
 * Whether the process carries the tag. During execve() there is a moment when
 * the new image's environment is not set up yet and reads as empty; a process
 * caught there (an empty environment, neither a kernel thread, nor exiting, nor a
 * zombie) is read again a few times, a millisecond apart. This costs time only
 * for processes with an empty environment (env -i), which are rare.
 */
static bool scan_tagged(const struct scan_item *it, const char *needle, size_t nlen)
{
        struct timespec pause = { 0, 1000 * 1000 };

        if (it->kflags & KFLAG_KTHREAD)
                return false;
        for (unsigned attempt = 0; attempt < PROC_EXEC_RETRIES; attempt++) {
                bool empty = false;
                int r = has_needle(it->e.pid, needle, nlen, &empty);

                if (r != 0 || !empty || (it->kflags & KFLAG_EXITING) || it->e.state == 'Z')
                        return r > 0;
                nanosleep(&pause, NULL);
        }
        return false;
}

static bool scan_in_group(const struct proc_match *m, const struct proc_entry *e)
{
        return m->group > 0 && (e->pgid == m->group || e->sid == m->group) && e->starttime >= m->group_since;
}

static bool pid_listed(const pid_t *pids, size_t n, pid_t pid)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (pids[mid] == pid)
                        return true;
                if (pids[mid] < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

static int cmp_item(const void *a, const void *b)
{
        const struct scan_item *x = a, *y = b;

        return (x->e.pid > y->e.pid) - (x->e.pid < y->e.pid);
}

/* Every process's stat but ours, in pid order; processes that vanish or cannot be read are skipped. */
static int scan_read_all(struct scan_item **ret, size_t *ret_n)
{
        _cleanup_free_ struct scan_item *items = NULL;
        size_t n = 0, alloc = 0;
        pid_t self = getpid();
        struct dirent *de;
        DIR *d = opendir("/proc");
        int r = 0;

        if (!d)
                return -errno;
        while ((errno = 0, de = readdir(d))) {
                struct scan_item it = { 0 };
                int64_t pid;

                if (mx_parse_int64(de->d_name, 1, INT32_MAX, &pid) < 0 || pid == self)
                        continue;
                if (read_stat((pid_t)pid, &it.e, &it.kflags) < 0)
                        continue;
                MX_GROW(items, alloc, n + 1);
                items[n++] = it;
        }
        if (errno != 0)
                r = -errno;
        closedir(d);
        if (r < 0)
                return r;
        if (n > 1)
                qsort(items, n, sizeof(*items), cmp_item);
        *ret = TAKE_PTR(items);
        *ret_n = n;
        return 0;
}

/*
 * Children of members are members: this catches a child that cleared its
 * environment and left the session (env -i setsid ...) while its parent lives,
 * and one caught mid-exec. A child is younger than its parent; anything else
 * would be a stale ppid. Repeated until nothing changes (once per tree level).
 */
static void scan_add_descendants(struct scan_item *items, size_t n)
{
        bool changed = true;

        while (changed) {
                changed = false;
                for (size_t i = 0; i < n; i++) {
                        struct scan_item key = { .e.pid = items[i].e.ppid }, *parent;

                        if (items[i].matched || items[i].e.ppid <= 1)
                                continue;
                        parent = bsearch(&key, items, n, sizeof(*items), cmp_item);
                        if (parent && parent->matched && items[i].e.starttime >= parent->e.starttime)
                                changed = items[i].matched = true;
                }
        }
}

int proc_scan(const struct proc_match *m, struct proc_entry **ret, size_t *ret_n)
{
        _cleanup_free_ struct scan_item *items = NULL;
        _cleanup_free_ struct proc_entry *list = NULL;
        _cleanup_free_ char *needle = NULL;
        _cleanup_free_ pid_t *cg = NULL;
        size_t n = 0, k = 0, nlen = 0, n_cg = 0;
        int r;

        if (!m || (m->tag && !proc_tag_is_valid(m->tag)) ||
            (!m->tag && m->group <= 0 && !m->cgroup && m->parent <= 0))
                return -EINVAL;
        if (m->tag)
                needle = tag_needle(m->tag, &nlen);
        r = scan_read_all(&items, &n);
        if (r < 0)
                return r;
        /* Read after /proc: a process that moved in meanwhile is a fork of a member, found as its child. */
        if (m->cgroup) {
                r = cgroup_read_pids(m->cgroup, &cg, &n_cg);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                struct proc_entry *e = &items[i].e;

                e->tagged = needle && scan_tagged(&items[i], needle, nlen);
                e->in_cgroup = pid_listed(cg, n_cg, e->pid);
                e->adopted = m->parent > 0 && e->ppid == m->parent;
                items[i].matched = e->tagged || e->in_cgroup || e->adopted || scan_in_group(m, e);
                k += items[i].matched;
        }
        if (k > 0)
                scan_add_descendants(items, n);
        k = 0;
        for (size_t i = 0; i < n; i++)
                if (items[i].matched) {
                        if (!list)
                                list = xcalloc(n, sizeof(*list));
                        list[k++] = items[i].e;
                }
        *ret = TAKE_PTR(list);
        *ret_n = k;
        return 0;
}

int proc_find_tagged(const char *tag, pid_t **ret, size_t *ret_n)
{
        _cleanup_free_ struct proc_entry *list = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        struct proc_match m = { .tag = tag };
        size_t n = 0, k = 0;
        int r;

        if (!proc_tag_is_valid(tag))
                return -EINVAL;
        r = proc_scan(&m, &list, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (list[i].tagged && list[i].state != 'Z') {
                        if (!pids)
                                pids = xcalloc(n, sizeof(*pids));
                        pids[k++] = list[i].pid;
                }
        *ret = TAKE_PTR(pids);
        *ret_n = k;
        return 0;
}

/* ---- spawning ---- */

enum spawn_step {
        SPAWN_CGROUP,
        SPAWN_SETSID,
        SPAWN_FDS,
        SPAWN_CHDIR,
        SPAWN_EXEC,
};

/* What the child reports through the CLOEXEC pipe when a step before exec fails. */
struct spawn_error {
        int32_t step;
        int32_t error;
};

/* Everything the child needs, prepared before fork() so the child only makes system calls. */
struct spawn_prep {
        char **env;
        char **candidates; /* full paths to try with execve(), in order */
        char *const *argv;
        const char *cwd;
        int null_fd;
        int out_fd;
        int err_fd;
        int report_fd;
        int cgroup_fd;   /* the run's cgroup directory, or -1 */
        int cg_procs_fd; /* its cgroup.procs, for a child that must move itself (no clone3), or -1 */
};

static void spawn_prep_done(struct spawn_prep *p)
{
        p->env = strv_free(p->env);
        p->candidates = strv_free(p->candidates);
        if (p->null_fd >= 0)
                close(p->null_fd);
        p->null_fd = -1;
        if (p->cg_procs_fd >= 0)
                close(p->cg_procs_fd);
        p->cg_procs_fd = -1;
}

/* Variables that address the daemon itself (sd_notify, socket activation, watchdog) and the tag. */
static bool env_is_reserved(const char *e)
{
        return startswith(e, "NOTIFY_SOCKET=") || startswith(e, "LISTEN_") || startswith(e, "WATCHDOG_") ||
               startswith(e, PROC_TAG_ENV "=");
}

static int spawn_build_env(const struct proc_spec *spec, char ***ret, char **reterr)
{
        _cleanup_strv_free_ char **env = NULL;
        size_t n = strv_length(spec->env);

        if (n > PROC_ENV_MAX) {
                return mx_reterr(reterr, -E2BIG, "environment has %zu entries, more than %d", n, PROC_ENV_MAX);
        }
        for (size_t i = 0; i < n; i++) {
                const char *eq = strchr(spec->env[i], '=');

                if (!eq || eq == spec->env[i]) {
                        return mx_reterr(reterr, -EINVAL, "environment entry %zu ('%s') is not NAME=value", i,
                                    spec->env[i]);
                }
                if (!env_is_reserved(spec->env[i]))
                        strv_push(&env, spec->env[i]);
        }
        strv_consume(&env, xasprintf("%s=%s", PROC_TAG_ENV, spec->tag));
        *ret = TAKE_PTR(env);
        return 0;
}

/* The value of PATH in env, else in ours, else the default. */
static const char *spawn_path(char *const *env)
{
        const char *p;

        for (size_t i = 0; env && env[i]; i++)
                if (startswith(env[i], "PATH="))
                        return env[i] + 5;
        p = getenv("PATH");
        return p ? p : PROC_DEFAULT_PATH;
}

/* execvp's search, done here because the child may not allocate: every dir/file, "" meaning ".". */
static int spawn_build_candidates(const char *file, char *const *env, char ***ret, char **reterr)
{
        _cleanup_strv_free_ char **list = NULL;
        const char *p;
        size_t n = 0;

        if (strchr(file, '/')) {
                strv_push(&list, file);
                *ret = TAKE_PTR(list);
                return 0;
        }
        p = spawn_path(env);
        for (;;) {
                size_t len = strcspn(p, ":");

                if (++n > PROC_PATH_DIRS_MAX) {
                        return mx_reterr(reterr, -E2BIG, "PATH has more than %d directories", PROC_PATH_DIRS_MAX);
                }
                if (len == 0)
                        strv_consume(&list, xasprintf("./%s", file));
                else
                        strv_consume(&list, xasprintf("%.*s/%s", (int)len, p, file));
                if (p[len] == '\0')
                        break;
                p += len + 1;
        }
        *ret = TAKE_PTR(list);
        return 0;
}

static int spawn_check_spec(const struct proc_spec *spec, char **reterr)
{
        size_t n;

        if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0]) {
                return mx_reterr(reterr, -EINVAL, "%s", "no command to start (argv is empty)");
        }
        n = strv_length(spec->argv);
        if (n > PROC_ARGV_MAX) {
                return mx_reterr(reterr, -E2BIG, "command has %zu arguments, more than %d", n, PROC_ARGV_MAX);
        }
        if (!proc_tag_is_valid(spec->tag)) {
                return mx_reterr(reterr, -EINVAL, "run tag '%s' is not 1-%d characters of [A-Za-z0-9._-]",
                            strna(spec->tag), PROC_TAG_MAX);
        }
        return 0;
}

static int spawn_prepare(const struct proc_spec *spec, struct spawn_prep *p, char **reterr)
{
        int r;

        r = spawn_check_spec(spec, reterr);
        if (r < 0)
                return r;
        r = spawn_build_env(spec, &p->env, reterr);
        if (r < 0)
                return r;
        r = spawn_build_candidates(spec->argv[0], spec->env, &p->candidates, reterr);
        if (r < 0)
                return r;
        p->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (p->null_fd < 0)
                return mx_reterr(reterr, -errno, "open /dev/null: %m");
        p->cgroup_fd = run.cgroup_fd;
        if (run.cgroup_fd >= 0) {
                p->cg_procs_fd = openat(run.cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (p->cg_procs_fd < 0)
                        return mx_reterr(reterr, -errno, "opening %s/cgroup.procs: %m", run.cgroup);
        }
        p->argv = spec->argv;
        p->cwd = spec->cwd;
        p->out_fd = spec->stdout_fd >= 0 ? spec->stdout_fd : p->null_fd;
        p->err_fd = spec->stderr_fd >= 0 ? spec->stderr_fd : p->null_fd;
        return 0;
}

/* In the child: tell the parent which step failed, and end. Async-signal-safe. */
_noreturn_ static void child_fail(int report_fd, enum spawn_step step, int error)
{
        struct spawn_error m = { .step = step, .error = error };
        ssize_t k _unused_ = write(report_fd, &m, sizeof(m));

        _exit(127);
}

/* In the child: the default action for every signal, and none blocked (we block all around fork()). */
static void child_reset_signals(void)
{
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t none;

        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)sigaction(sig, &sa, NULL); /* glibc's internal signals refuse; fine */
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * In the child: stdin, stdout, stderr from the prepared descriptors (moved above 2
 * first, so that an fd already at 0-2 is not clobbered), everything else closed
 * at exec. The report pipe stays open until exec, which closes it.
 */
static int child_setup_fds(const struct spawn_prep *p)
{
        int src[3] = { p->null_fd, p->out_fd, p->err_fd }, tmp[3];

        for (int i = 0; i < 3; i++) {
                tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
                if (tmp[i] < 0)
                        return -errno;
        }
        for (int i = 0; i < 3; i++)
                if (dup2(tmp[i], i) < 0)
                        return -errno;
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
                /* Before Linux 5.11: close all but the report pipe now. */
                if (p->report_fd > 3 && close_range(3, (unsigned)p->report_fd - 1, 0) < 0)
                        return -errno;
                if (close_range((unsigned)p->report_fd + 1, ~0U, 0) < 0)
                        return -errno;
        }
        return 0;
}

_noreturn_ static void spawn_child(const struct spawn_prep *p, bool in_cgroup)
{
        int r, error = ENOENT;
        bool eacces = false;

        /* Without clone3(): into the run's cgroup before anything else, so nothing of it can start outside. */
        if (!in_cgroup && p->cg_procs_fd >= 0 && write(p->cg_procs_fd, "0", 1) != 1)
                child_fail(p->report_fd, SPAWN_CGROUP, errno);
        child_reset_signals();
        if (setsid() < 0)
                child_fail(p->report_fd, SPAWN_SETSID, errno);
        r = child_setup_fds(p);
        if (r < 0)
                child_fail(p->report_fd, SPAWN_FDS, -r);
        if (p->cwd && chdir(p->cwd) < 0)
                child_fail(p->report_fd, SPAWN_CHDIR, errno);
        for (size_t i = 0; p->candidates[i]; i++) {
                execve(p->candidates[i], p->argv, p->env);
                /* As execvp(): try the next directory on "not here", remember "here but not allowed". */
                if (errno == EACCES)
                        eacces = true;
                else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
                         errno != ETIMEDOUT && errno != ELOOP && errno != ENAMETOOLONG) {
                        error = errno;
                        break;
                }
        }
        if (eacces && error == ENOENT)
                error = EACCES;
        child_fail(p->report_fd, SPAWN_EXEC, error);
}

static int spawn_report(const struct spawn_error *m, const struct proc_spec *spec, char **reterr)
{
        int r = -m->error;

        switch (m->step) {
        case SPAWN_CGROUP:
                return mx_reterr(reterr, r, "moving '%s' into the run's cgroup %s: %s", spec->argv[0],
                                 strna(run.cgroup), strerror(m->error));
        case SPAWN_SETSID:
                return mx_reterr(reterr, r, "setsid for '%s': %s", spec->argv[0], strerror(m->error));
        case SPAWN_FDS:
                return mx_reterr(reterr, r, "setting up descriptors for '%s': %s", spec->argv[0],
                            strerror(m->error));
        case SPAWN_CHDIR:
                return mx_reterr(reterr, r, "chdir to '%s' for '%s': %s", spec->cwd, spec->argv[0],
                            strerror(m->error));
        default:
                return mx_reterr(reterr, r, "executing '%s': %s", spec->argv[0], strerror(m->error));
        }
}

/* Wait for exec: EOF on the pipe means it happened (CLOEXEC), a message means a step failed. */
static int spawn_wait_exec(int fd, struct spawn_error *ret)
{
        for (;;) {
                ssize_t k = read(fd, ret, sizeof(*ret));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                return k == (ssize_t)sizeof(*ret) ? 1 : 0;
        }
}

/* The kernel's struct clone_args up to the cgroup field (CLONE_ARGS_SIZE_VER2), and its flag. */
struct spawn_clone_args {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
                set_tid_size, cgroup;
};
#define SPAWN_CLONE_INTO_CGROUP 0x200000000ULL

/*
 * fork() straight into the cgroup (Linux 5.7): the child never exists outside
 * it. The child runs only system calls before exec, as after fork(). -ENOSYS
 * (or -E2BIG, -EINVAL on kernels without CLONE_INTO_CGROUP) means "use fork()".
 */
static pid_t spawn_clone3(int cgroup_fd)
{
#ifdef SYS_clone3
        struct spawn_clone_args a = { .flags = SPAWN_CLONE_INTO_CGROUP, .exit_signal = SIGCHLD,
                                      .cgroup = (uint64_t)cgroup_fd };

        return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
#else
        (void)cgroup_fd;
        errno = ENOSYS;
        return -1;
#endif
}

static int spawn_fork(struct spawn_prep *p, pid_t *ret_pid)
{
        sigset_t all, old;
        bool cloned = false;
        pid_t pid = -1;

        /* No signal handler of ours may run in the child before it has reset them all. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (p->cgroup_fd >= 0 && use_clone3) {
                pid = spawn_clone3(p->cgroup_fd);
                if (pid == 0)
                        spawn_child(p, true);
                cloned = pid > 0;
                if (pid < 0 && errno != ENOSYS && errno != E2BIG && errno != EINVAL && errno != EPERM)
                        cloned = true; /* a real failure (EAGAIN, ENOMEM, a cgroup refusing): report it */
        }
        if (!cloned) {
                pid = fork();
                if (pid == 0)
                        spawn_child(p, false);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (pid < 0)
                return -errno;
        *ret_pid = pid;
        return 0;
}

/* After fork(): the exec report, then the new process's start time. Reaps the child on failure. */
static int spawn_finish(int rd, pid_t pid, const struct proc_spec *spec, struct proc_info *info,
                        char **reterr)
{
        struct spawn_error m;
        int r;

        r = spawn_wait_exec(rd, &m);
        if (r != 0) {
                (void)waitpid(pid, NULL, 0); /* the child _exit()s right after its report */
                if (r > 0)
                        return spawn_report(&m, spec, reterr);
                return mx_reterr(reterr, r, "reading the exec report of '%s': %s", spec->argv[0], strerror(-r));
        }
        /* Not reaped yet (the loop is not running), so the pid is still this child's, zombie or not. */
        r = proc_get_starttime(pid, &info->starttime);
        if (r < 0) {
                (void)kill(pid, SIGKILL);
                (void)waitpid(pid, NULL, 0);
                return mx_reterr(reterr, r, "reading /proc/%d/stat: %s", (int)pid, strerror(-r));
        }
        info->pid = info->pgid = pid;
        return 0;
}

int proc_spawn(const struct proc_spec *spec, struct proc_info *ret, char **reterr)
{
        struct spawn_prep p = { .null_fd = -1, .cgroup_fd = -1, .cg_procs_fd = -1 };
        _cleanup_close_ int rd = -1;
        struct proc_info info = { 0 };
        int fds[2], r;
        pid_t pid = 0;

        r = spawn_prepare(spec, &p, reterr);
        if (r < 0)
                goto out;
        r = proc_boot_id(info.boot_id);
        if (r < 0) {
                r = mx_reterr(reterr, r, "reading the boot id: %s", strerror(-r));
                goto out;
        }
        if (pipe2(fds, O_CLOEXEC) < 0) {
                r = mx_reterr(reterr, -errno, "pipe: %m");
                goto out;
        }
        rd = fds[0];
        p.report_fd = fds[1];
        r = spawn_fork(&p, &pid);
        close(fds[1]);
        if (r < 0) {
                r = mx_reterr(reterr, r, "fork: %s", strerror(-r));
                goto out;
        }
        r = spawn_finish(rd, pid, spec, &info, reterr);
        if (r >= 0)
                *ret = info;
out:
        spawn_prep_done(&p);
        return r;
}
