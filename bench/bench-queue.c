/* SPDX-License-Identifier: MIT */
/*
 * bench-queue: what the job queue costs in a real mxmatrixd (issue 3). It
 * starts private daemons from the build tree (own state directory, control
 * socket and sd_notify socket), talks to them over the control socket with
 * the real protocol, and prints:
 *
 *   1. submit, with the queue paused so nothing runs: 10 000 one-run jobs
 *      over 1, 8 and 32 connections (submits/s, p50/p99/max), then one job of
 *      10 000 runs (--strategy full over 4 axes of 10 values) repeated until
 *      100 000 runs are stored (request to acknowledgement);
 *   2. latency of status, list, list --state active, list --before (deep),
 *      show JOB (10 000 runs), show rRUN and a one-run submit, twice:
 *      (Q) the 100 000 runs just submitted, all queued; (H) the same database
 *      rewritten with SQL while the daemon is stopped, so that every run but
 *      those of the newest big job is done with one attempt and two level
 *      verdicts (a history, as after weeks of use), then the daemon restarted;
 *   3. the daemon's VmRSS and VmHWM (/proc/PID/status) after each step;
 *   4. wake-ups while idle with no client connected: context switches of all
 *      the daemon's threads (and schedstat's count of times scheduled) over
 *      30 s, with an empty queue without and with the watchdog
 *      (WATCHDOG_USEC=30 s: a ping every 15 s), and with the 100 000 runs.
 *
 * Latency is CLOCK_MONOTONIC from writing the request to reading the whole
 * reply line, one request in flight per connection; percentiles are nearest
 * rank. The generated matrix, the config file, the databases and the daemons'
 * logs live in a temporary directory under --dir, removed at the end unless
 * --keep (or a failure) keeps it.
 *
 * Usage: bench-queue [--daemon PATH] [--dir DIR] [--calls N] [--quick] [--keep]
 */
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

#define AXES 4            /* axes a, b, c, d of the generated matrix */
#define VALUES 10         /* values per axis: a full plan is 10^4 runs */
#define BIG_RUNS 10000    /* runs of one --strategy full job */
#define SMALL_JOBS 10000  /* one-run jobs per connection count */
#define STORED_RUNS 100000
#define CALLS_MAX 100000
#define IDLE_S 30
#define QUICK_IDLE_S 5
#define QUICK_CALLS 50
#define SETTLE_MS 2000                     /* after READY=1, before an idle window */
#define ROW_CAP_US (30 * INT64_C(1000000)) /* a latency row stops after this much time */
#define READY_TIMEOUT_MS 120000
#define WATCHDOG_USEC "30000000"
#define READ_CHUNK 65536

static const int conn_counts[] = { 1, 8, 32 };
static const char *const value_names[VALUES] = {
        "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9",
};

struct opts {
        char *daemon; /* the mxmatrixd binary */
        char *dir;    /* where our temporary directory goes */
        int calls;    /* per latency row */
        int idle_s;
        bool keep;
};

/* ---- failure: kill what we started, keep the directory for its logs ---- */

static pid_t started[4];
static char *workdir;

static void kill_started(void)
{
        for (size_t i = 0; i < ELEMENTSOF(started); i++)
                if (started[i] > 0)
                        kill(started[i], SIGKILL);
}

_noreturn_ _printf_(1, 2) static void fail(const char *fmt, ...)
{
        va_list ap;

        fputs("bench-queue: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        if (workdir)
                fprintf(stderr, "bench-queue: kept %s (daemon logs: */daemon.log)\n", workdir);
        exit(EXIT_FAILURE);
}

static void track(pid_t pid, bool add)
{
        for (size_t i = 0; i < ELEMENTSOF(started); i++)
                if (add ? started[i] == 0 : started[i] == pid) {
                        started[i] = add ? pid : 0;
                        return;
                }
        fail("daemon %d is not in the table of started daemons", (int)pid);
}

static int remove_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        (void)remove(path);
        return 0;
}

/* ---- small helpers ---- */

static void sleep_ms(int64_t ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* Nearest rank: the smallest sample with at least p% of the samples at or below it. */
static int64_t percentile(const int64_t *sorted, size_t n, unsigned p)
{
        size_t k = (p * n + 99) / 100; /* ceil(p/100 * n) */

        return n == 0 ? 0 : sorted[k == 0 ? 0 : MX_MIN(k, n) - 1];
}

static double ms(int64_t us)
{
        return (double)us / 1000.0;
}

/* The first number on the line of a /proc status-like file that starts with key. */
static int64_t file_field(const char *path, const char *key)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        size_t klen = strlen(key);
        char line[512];

        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, key, klen) == 0)
                        return strtoll(line + klen + strspn(line + klen, ": \t"), NULL, 10);
        return -1;
}

static char *file_first_line(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[512];

        if (!f || !fgets(line, sizeof(line), f))
                return NULL;
        line[strcspn(line, "\n")] = '\0';
        return xstrdup(line);
}

/* ---- the daemon's process figures ---- */

struct pstat {
        int64_t rss_kb, hwm_kb;
        int64_t ctxsw;      /* voluntary + nonvoluntary context switches, all threads */
        int64_t sched_runs; /* times scheduled on a CPU (schedstat), all threads */
        int threads;
};

static void pstat_add_task(pid_t pid, const char *tid, struct pstat *p)
{
        _cleanup_free_ char *st = xasprintf("/proc/%d/task/%s/status", (int)pid, tid);
        _cleanup_free_ char *ss = xasprintf("/proc/%d/task/%s/schedstat", (int)pid, tid);
        _cleanup_free_ char *line = file_first_line(ss);
        unsigned long long run_ns, wait_ns, runs = 0;

        p->ctxsw += file_field(st, "voluntary_ctxt_switches") + file_field(st, "nonvoluntary_ctxt_switches");
        if (line && sscanf(line, "%llu %llu %llu", &run_ns, &wait_ns, &runs) == 3)
                p->sched_runs += (int64_t)runs;
        p->threads++;
}

static void pstat_read(pid_t pid, struct pstat *ret)
{
        _cleanup_free_ char *status = xasprintf("/proc/%d/status", (int)pid);
        _cleanup_free_ char *tasks = xasprintf("/proc/%d/task", (int)pid);
        struct pstat p = { .rss_kb = file_field(status, "VmRSS"), .hwm_kb = file_field(status, "VmHWM") };
        DIR *d = opendir(tasks);
        struct dirent *de;

        if (!d || p.rss_kb < 0)
                fail("cannot read %s", status);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        pstat_add_task(pid, de->d_name, &p);
        closedir(d);
        *ret = p;
}

/* ---- a private mxmatrixd ---- */

/* What a daemon said on its notify socket so far. */
struct notify_counts {
        unsigned msgs, pings, ready; /* datagrams, WATCHDOG=1, READY=1 */
};

/*
 * A daemon and its notify socket. A thread reads the socket all the time, as
 * systemd does: a sender blocks once 10 datagrams (net.unix.max_dgram_qlen)
 * wait unread, and mxmatrixd sends STATUS= up to once a second while busy.
 */
struct bench_daemon {
        const char *label;
        pid_t pid;
        char *dir, *socket, *state, *notify_path, *log;
        int notify_fd;
        pthread_t reader;
        pthread_mutex_t lock;
        struct notify_counts seen; /* under lock */
        atomic_bool stop;
};

static int notify_open(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
                fail("notify socket %s: %s", path, fd < 0 ? strerror(errno) : "path too long");
        strcpy(sa.sun_path, path);
        (void)unlink(path);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                fail("bind %s: %m", path);
        return fd;
}

static bool has_line(const char *text, const char *line)
{
        size_t n = strlen(line);

        for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

static void *notify_reader_main(void *ud)
{
        struct bench_daemon *d = ud;

        while (!atomic_load(&d->stop)) {
                struct pollfd p = { .fd = d->notify_fd, .events = POLLIN };
                char buf[4096];
                ssize_t n;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                n = recv(d->notify_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                pthread_mutex_lock(&d->lock);
                d->seen.msgs++;
                d->seen.pings += has_line(buf, "WATCHDOG=1");
                d->seen.ready += has_line(buf, "READY=1");
                pthread_mutex_unlock(&d->lock);
        }
        return NULL;
}

static struct notify_counts notify_seen(struct bench_daemon *d)
{
        struct notify_counts c;

        pthread_mutex_lock(&d->lock);
        c = d->seen;
        pthread_mutex_unlock(&d->lock);
        return c;
}

static void daemon_init(struct bench_daemon *d, const char *label)
{
        *d = (struct bench_daemon){ .label = label, .notify_fd = -1 };
        d->dir = xasprintf("%s/%s", workdir, label);
        if (mkdir(d->dir, 0755) < 0)
                fail("mkdir %s: %m", d->dir);
        d->socket = xasprintf("%s/control.sock", d->dir);
        d->state = xasprintf("%s/state", d->dir);
        d->notify_path = xasprintf("%s/notify", d->dir);
        d->log = xasprintf("%s/daemon.log", d->dir);
        d->notify_fd = notify_open(d->notify_path);
        pthread_mutex_init(&d->lock, NULL);
        atomic_init(&d->stop, false);
        if (pthread_create(&d->reader, NULL, notify_reader_main, d) != 0)
                fail("cannot start the notify reader");
}

static void daemon_done(struct bench_daemon *d)
{
        atomic_store(&d->stop, true);
        pthread_join(d->reader, NULL);
        pthread_mutex_destroy(&d->lock);
        close(d->notify_fd);
        free(d->dir);
        free(d->socket);
        free(d->state);
        free(d->notify_path);
        free(d->log);
}

/* The environment we run in, minus what systemd would set for us, plus NOTIFY_SOCKET and extra. */
static char **daemon_env(const struct bench_daemon *d, const char *extra)
{
        char **envp = NULL;

        for (char **e = environ; *e; e++)
                if (!startswith(*e, "NOTIFY_SOCKET=") && !startswith(*e, "LISTEN_") &&
                    !startswith(*e, "WATCHDOG_"))
                        strv_push(&envp, *e);
        strv_consume(&envp, xasprintf("NOTIFY_SOCKET=%s", d->notify_path));
        if (extra)
                strv_push(&envp, extra);
        return envp;
}

static void daemon_spawn(struct bench_daemon *d, const struct opts *o, const char *config,
                         const char *matrix, const char *extra_env)
{
        _cleanup_strv_free_ char **argv = NULL, **envp = daemon_env(d, extra_env);

        strv_push(&argv, o->daemon);
        strv_push(&argv, "--foreground");
        strv_consume(&argv, xasprintf("--config=%s", config));
        strv_consume(&argv, xasprintf("--socket=%s", d->socket));
        strv_consume(&argv, xasprintf("--state-dir=%s", d->state));
        strv_consume(&argv, xasprintf("--matrix=%s", matrix));
        d->pid = fork();
        if (d->pid < 0)
                fail("fork: %m");
        if (d->pid == 0) {
                int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

                if (fd >= 0)
                        dup2(fd, STDERR_FILENO);
                execve(argv[0], argv, envp);
                _exit(127);
        }
        track(d->pid, true);
}

/* Wait for a READY=1 after the ready_before seen so far; fail if the daemon exits or takes too long. */
static void daemon_wait_ready(struct bench_daemon *d, unsigned ready_before)
{
        int64_t deadline = mx_now_mono_us() + READY_TIMEOUT_MS * INT64_C(1000);

        while (notify_seen(d).ready == ready_before) {
                if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
                        track(d->pid, false);
                        fail("mxmatrixd (%s) exited before it was ready; see %s", d->label, d->log);
                }
                if (mx_now_mono_us() > deadline)
                        fail("mxmatrixd (%s) not ready after %d s; see %s", d->label,
                             READY_TIMEOUT_MS / 1000, d->log);
                sleep_ms(2);
        }
}

/* Start the daemon and return the time from fork to READY=1 (within 2 ms). */
static int64_t daemon_start(struct bench_daemon *d, const struct opts *o, const char *config,
                            const char *matrix, const char *extra_env)
{
        unsigned ready = notify_seen(d).ready;
        int64_t t0 = mx_now_mono_us();

        daemon_spawn(d, o, config, matrix, extra_env);
        daemon_wait_ready(d, ready);
        return mx_now_mono_us() - t0;
}

static void daemon_stop(struct bench_daemon *d)
{
        int status = 0;

        kill(d->pid, SIGTERM);
        if (waitpid(d->pid, &status, 0) < 0)
                fail("waitpid: %m");
        track(d->pid, false);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail("mxmatrixd (%s) did not stop cleanly (status 0x%x); see %s", d->label, (unsigned)status,
                     d->log);
        d->pid = 0;
}

/* ---- a client connection speaking the control protocol ---- */

struct conn {
        int fd;
        struct mx_buf in; /* bytes read, not yet consumed */
        int64_t next_id;
};

static void conn_write(struct conn *c, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        fail("send: %m");
                p += w;
                n -= (size_t)w;
        }
}

/* Read until the buffer holds a whole line; return its length (without the newline). */
static size_t conn_read_line(struct conn *c)
{
        size_t scanned = 0;

        for (;;) {
                char *nl =
                        c->in.len > scanned ? memchr(c->in.data + scanned, '\n', c->in.len - scanned) : NULL;
                char chunk[READ_CHUNK];
                ssize_t n;

                if (nl)
                        return (size_t)(nl - c->in.data);
                scanned = c->in.len;
                n = recv(c->fd, chunk, sizeof(chunk), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        fail("mxmatrixd closed the connection%s%s", n < 0 ? ": " : "",
                             n < 0 ? strerror(errno) : "");
                mx_buf_add(&c->in, chunk, (size_t)n);
        }
}

/* Take the first line out of the buffer and parse it. */
static json_t *conn_take_line(struct conn *c, size_t len)
{
        json_error_t err;
        json_t *msg = json_loadb(c->in.data, len, 0, &err);

        if (!msg)
                fail("unparsable reply at column %d: %s", err.column, err.text);
        memmove(c->in.data, c->in.data + len + 1, c->in.len - len - 1);
        c->in.len -= len + 1;
        c->in.data[c->in.len] = '\0';
        return msg;
}

/*
 * Call method; the result (caller decrefs), its latency and the reply's size,
 * stream items included (show JOB sends its runs as batches of them; an
 * mxmatrixd before that sent them in the reply). runs, when given, gets the
 * runs of the stream items. Fails on an error reply.
 */
static json_t *conn_call_stream(struct conn *c, const char *method, json_t *params, int64_t *ret_us,
                                size_t *ret_bytes, json_t *runs)
{
        _cleanup_json_ json_t *req = json_pack("{s:I,s:s,s:O?}", "id", (json_int_t)++c->next_id, "method",
                                               method, "params", params);
        _cleanup_free_ char *text = json_dumps(req, JSON_COMPACT);
        _cleanup_json_ json_t *reply = NULL;
        _cleanup_free_ char *line = xasprintf("%s\n", text);
        int64_t t0 = mx_now_mono_us();
        size_t len;
        json_t *err;

        size_t total = 0;

        conn_write(c, line, strlen(line));
        for (;;) {
                len = conn_read_line(c);
                total += len + 1;
                reply = conn_take_line(c, len);
                if (!json_object_get(reply, "stream"))
                        break;
                if (runs)
                        json_array_extend(runs, json_object_get(json_object_get(reply, "stream"), "runs"));
                json_decref(reply);
                reply = NULL;
        }
        if (ret_us)
                *ret_us = mx_now_mono_us() - t0;
        if (ret_bytes)
                *ret_bytes = total;
        err = json_object_get(reply, "error");
        if (err)
                fail("%s: %s: %s", method, json_string_value(json_object_get(err, "code")),
                     json_string_value(json_object_get(err, "message")));
        return json_incref(json_object_get(reply, "result"));
}

static json_t *conn_call(struct conn *c, const char *method, json_t *params, int64_t *ret_us,
                         size_t *ret_bytes)
{
        return conn_call_stream(c, method, params, ret_us, ret_bytes, NULL);
}

static void conn_open(struct conn *c, const char *socket_path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_json_ json_t *hello = json_pack("{s:i,s:s}", "protocol", 1, "client", "bench-queue");

        *c = (struct conn){ .fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), .in = MX_BUF_INIT };
        if (c->fd < 0 || strlen(socket_path) >= sizeof(sa.sun_path))
                fail("socket %s: %s", socket_path, c->fd < 0 ? strerror(errno) : "path too long");
        strcpy(sa.sun_path, socket_path);
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                fail("connect %s: %m", socket_path);
        json_decref(conn_call(c, "hello", hello, NULL, NULL));
}

static void conn_close(struct conn *c)
{
        if (c->fd >= 0)
                close(c->fd);
        mx_buf_free(&c->in);
        c->fd = -1;
}

static json_int_t result_int(json_t *result, const char *key)
{
        json_t *v = json_object_get(result, key);

        if (!json_is_integer(v))
                fail("reply has no integer '%s'", key);
        return json_integer_value(v);
}

/* ---- fixtures: the matrix and the daemon's settings ---- */

static json_t *axis_json(char name)
{
        json_t *values = json_array();
        char env[2] = { (char)(name - 'a' + 'A'), '\0' }, axis[2] = { name, '\0' };

        for (int v = 0; v < VALUES; v++)
                json_array_append_new(values, json_pack("{s:s,s:{s:s}}", "name", value_names[v], "env", env,
                                                        value_names[v] + 1));
        return json_pack("{s:s,s:o}", "name", axis, "values", values);
}

/*
 * Four axes of ten values and one feature without a switch: "sweep" with
 * --strategy full plans the whole product (10 000 runs); with every axis
 * pinned it plans one run. The target is a command; nothing runs anyway.
 */
static char *write_matrix(void)
{
        _cleanup_free_ char *path = xasprintf("%s/matrix.json", workdir);
        _cleanup_json_ json_t *m = NULL;
        json_t *axes = json_array();

        for (int a = 0; a < AXES; a++)
                json_array_append_new(axes, axis_json((char)('a' + a)));
        m = json_pack("{s:i,s:s,s:s,s:{s:s,s:[s]},s:o,s:{s:s,s:s,s:s,s:s},"
                      "s:[{s:s,s:i,s:{},s:s,s:[{s:s,s:i}],s:s}]}",
                      "matrix", 1, "name", "bench-queue", "description",
                      "bench-queue: 4 axes of 10 values; a command target", "target", "profile", "command",
                      "command", "true", "axes", axes, "baseline", "a", "v0", "b", "v0", "c", "v0", "d",
                      "v0", "features", "name", "sweep", "priority", 1, "set", "hypothesis",
                      "a sweep of the whole product", "criteria", "metric", "tg32_tps", "min_gain_pct", 1,
                      "status", "in-progress");
        if (!m || json_dump_file(m, path, JSON_INDENT(1)) < 0)
                fail("cannot write %s", path);
        return TAKE_PTR(path);
}

/* Limits raised so one submission may plan 10 000 runs and one user queue 100 000. */
static char *write_config(void)
{
        _cleanup_free_ char *path = xasprintf("%s/mxmatrixd.json", workdir);
        _cleanup_json_ json_t *c =
                json_pack("{s:{s:i,s:i,s:i}}", "limits", "plan_runs", 2 * BIG_RUNS, "queued_runs_per_uid",
                          4 * STORED_RUNS, "connections_per_uid", 64);
        struct group *g = getgrgid(getgid());

        /* pause and the other admin methods: root is admin anyway, anyone else through its group */
        if (getuid() != 0 && g)
                json_object_set_new(c, "admin_group", json_string(g->gr_name));
        if (json_dump_file(c, path, JSON_INDENT(1)) < 0)
                fail("cannot write %s", path);
        return TAKE_PTR(path);
}

/* ---- the machine, so the figures mean something ---- */

static const char *fs_name(long type)
{
        switch ((unsigned long)type) {
        case 0xEF53:
                return "ext4";
        case 0x01021994:
                return "tmpfs";
        case 0x58465342:
                return "xfs";
        case 0x9123683E:
                return "btrfs";
        case 0x794c7630:
                return "overlayfs";
        default:
                return "other";
        }
}

static char *cpu_model(void)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
        char line[512];

        while (f && fgets(line, sizeof(line), f))
                if (startswith(line, "model name")) {
                        char *v = strchr(line, ':');

                        line[strcspn(line, "\n")] = '\0';
                        return xstrdup(v ? v + 2 : line);
                }
        return xstrdup("unknown CPU");
}

/* The journal mode recorded in the database file (WAL persists); synchronous is per connection. */
static char *db_journal_mode(const char *state_dir)
{
        _cleanup_free_ char *path = xasprintf("%s/queue.db", state_dir);
        sqlite3 *db = NULL;
        sqlite3_stmt *s = NULL;
        char *mode = NULL;

        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
                mode = xstrdup((const char *)sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
        sqlite3_close(db);
        return mode ? mode : xstrdup("unknown");
}

static void print_machine(const struct opts *o, const struct bench_daemon *d)
{
        _cleanup_free_ char *cpu = cpu_model(), *mode = db_journal_mode(d->state);
        struct utsname u;
        struct statfs fs;

        if (uname(&u) < 0 || statfs(d->state, &fs) < 0)
                fail("uname/statfs: %m");
        printf("# bench-queue: issue 3 figures for mxmatrixd\n");
        printf("machine   %ld CPUs online (%s), %" PRId64 " MiB RAM, %s %s %s\n",
               sysconf(_SC_NPROCESSORS_ONLN), cpu, file_field("/proc/meminfo", "MemTotal") / 1024, u.sysname,
               u.release, u.machine);
        printf("daemon    %s\n", o->daemon);
#ifdef MX_BUILD_TYPE
        printf("build     %s (the tree bench-queue was built in)\n", MX_BUILD_TYPE);
#endif
        printf("storage   %s on %s\n", workdir, fs_name((long)fs.f_type));
        printf("sqlite    %s; journal_mode=%s (read back from queue.db),\n"
               "          synchronous=FULL and foreign_keys=ON "
               "(daemon/store/db.c sets them at open)\n",
               sqlite3_libversion(), mode);
        printf("method    latency = CLOCK_MONOTONIC from writing a request to reading its whole\n"
               "          reply line, one request in flight per connection; p50/p99 are nearest-rank;\n"
               "          the queue is paused before the first submission, so no run starts\n\n");
}

/* ---- the run of the benchmark ---- */

struct rss_row {
        const char *when;
        struct pstat p;
};

struct idle_row {
        const char *label;
        struct pstat before, after;
        unsigned msgs, pings, expect_pings;
};

struct bench {
        struct opts o;
        char *matrix, *config;
        struct bench_daemon d;
        struct conn c;
        int64_t runs;                         /* stored so far (run ids 1..runs) */
        int64_t first_big, last_big;          /* job ids of the first and newest 10 000-run jobs */
        int64_t last_big_run0, last_big_run1; /* run ids of the newest big job */
        size_t next_pin;                      /* pin index of the next one-run job */
        bool history;                         /* scenario H: all but the newest big job done */
        uint64_t rng;
        struct rss_row rss[12];
        size_t n_rss;
        struct idle_row idle[3];
        size_t n_idle;
};

static void rss_note(struct bench *b, const char *when)
{
        if (b->n_rss == ELEMENTSOF(b->rss))
                fail("too many RSS rows");
        b->rss[b->n_rss].when = when;
        pstat_read(b->d.pid, &b->rss[b->n_rss++].p);
}

static int64_t file_size(const char *path)
{
        struct stat st;

        return stat(path, &st) < 0 ? 0 : (int64_t)st.st_size;
}

/* The database's size on disk (with its WAL) and what that is per stored run. */
static void disk_note(struct bench *b, const char *when)
{
        _cleanup_free_ char *db = xasprintf("%s/queue.db", b->d.state);
        _cleanup_free_ char *wal = xasprintf("%s/queue.db-wal", b->d.state);
        int64_t main_b = file_size(db), wal_b = file_size(wal);

        printf("disk %-34s queue.db %7.1f MiB + WAL %5.1f MiB = %6.0f bytes per run (%" PRId64 " runs)\n",
               when, (double)main_b / 1048576.0, (double)wal_b / 1048576.0,
               (double)(main_b + wal_b) / (double)b->runs, b->runs);
}

static uint64_t rng_next(struct bench *b)
{
        b->rng ^= b->rng << 13;
        b->rng ^= b->rng >> 7;
        b->rng ^= b->rng << 17;
        return b->rng;
}

/* A one-run submission: the feature with every axis pinned, k picking the values. */
static json_t *one_run_params(size_t k)
{
        return json_pack("{s:s,s:{s:s,s:s,s:s,s:s}}", "feature", "sweep", "pins", "a", value_names[k % 10],
                         "b", value_names[k / 10 % 10], "c", value_names[k / 100 % 10], "d",
                         value_names[k / 1000 % 10]);
}

/* Idle windows, several daemons at once: no client connected, nothing to do. */
static void idle_window(struct bench *b, struct bench_daemon *const *ds, struct idle_row *out, size_t n)
{
        struct notify_counts before[4];

        if (n > ELEMENTSOF(before))
                fail("too many daemons in one idle window");
        sleep_ms(SETTLE_MS);
        for (size_t i = 0; i < n; i++) {
                before[i] = notify_seen(ds[i]);
                pstat_read(ds[i]->pid, &out[i].before);
        }
        sleep_ms(b->o.idle_s * INT64_C(1000));
        for (size_t i = 0; i < n; i++) {
                struct notify_counts after;

                pstat_read(ds[i]->pid, &out[i].after);
                after = notify_seen(ds[i]);
                out[i].msgs = after.msgs - before[i].msgs;
                out[i].pings = after.pings - before[i].pings;
        }
}

/* ---- 1. submit ---- */

struct worker {
        const char *socket;
        size_t first, count; /* pin indices */
        int64_t *lat;        /* count latencies */
        pthread_barrier_t *go;
};

static void *worker_main(void *ud)
{
        struct worker *w = ud;
        struct conn c;

        conn_open(&c, w->socket);
        pthread_barrier_wait(w->go);
        for (size_t i = 0; i < w->count; i++) {
                _cleanup_json_ json_t *p = one_run_params(w->first + i);
                _cleanup_json_ json_t *res = conn_call(&c, "submit", p, &w->lat[i], NULL);

                if (json_array_size(json_object_get(res, "runs")) != 1)
                        fail("a one-run submission planned %zu runs",
                             json_array_size(json_object_get(res, "runs")));
        }
        conn_close(&c);
        return NULL;
}

/* SMALL_JOBS one-run jobs over n connections at once; prints one row. */
static void submit_small(struct bench *b, int n)
{
        _cleanup_free_ int64_t *lat = xcalloc(SMALL_JOBS, sizeof(int64_t));
        _cleanup_free_ struct worker *w = xcalloc((size_t)n, sizeof(*w));
        _cleanup_free_ pthread_t *th = xcalloc((size_t)n, sizeof(*th));
        pthread_barrier_t go;
        size_t off = 0;
        int64_t t0, wall;

        pthread_barrier_init(&go, NULL, (unsigned)n + 1);
        for (int i = 0; i < n; i++) {
                size_t count = SMALL_JOBS / (size_t)n + ((size_t)i < SMALL_JOBS % (size_t)n);

                w[i] = (struct worker){ b->d.socket, b->next_pin + off, count, lat + off, &go };
                off += count;
                if (pthread_create(&th[i], NULL, worker_main, &w[i]) != 0)
                        fail("pthread_create failed");
        }
        pthread_barrier_wait(&go);
        t0 = mx_now_mono_us();
        for (int i = 0; i < n; i++)
                pthread_join(th[i], NULL);
        wall = mx_now_mono_us() - t0;
        pthread_barrier_destroy(&go);
        b->next_pin += SMALL_JOBS;
        b->runs += SMALL_JOBS;
        qsort(lat, SMALL_JOBS, sizeof(int64_t), cmp_i64);
        printf("%6d %7d %9.2f %10.0f %9.3f %9.3f %9.3f\n", n, SMALL_JOBS, (double)wall / 1e6,
               SMALL_JOBS / ((double)wall / 1e6), ms(percentile(lat, SMALL_JOBS, 50)),
               ms(percentile(lat, SMALL_JOBS, 99)), ms(lat[SMALL_JOBS - 1]));
}

/* One job of BIG_RUNS runs; prints one row. */
static void submit_big(struct bench *b, int k)
{
        _cleanup_json_ json_t *p = json_pack("{s:s,s:s}", "feature", "sweep", "strategy", "full");
        _cleanup_json_ json_t *res = NULL;
        struct pstat ps;
        size_t bytes = 0, n;
        int64_t us = 0;
        json_t *runs;

        res = conn_call(&b->c, "submit", p, &us, &bytes);
        runs = json_object_get(res, "runs");
        /* The reply holds the first page of the runs (all of them before migration 003's mxmatrixd). */
        n = json_is_integer(json_object_get(res, "total")) ? (size_t)result_int(res, "total")
                                                            : json_array_size(runs);
        if (n != BIG_RUNS)
                fail("--strategy full planned %zu runs, expected %d", n, BIG_RUNS);
        b->last_big = result_int(res, "job");
        if (b->first_big == 0)
                b->first_big = b->last_big;
        /* One transaction numbers a job's runs consecutively. */
        b->last_big_run0 = result_int(json_array_get(runs, 0), "id");
        b->last_big_run1 = b->last_big_run0 + BIG_RUNS - 1;
        b->runs += BIG_RUNS;
        pstat_read(b->d.pid, &ps);
        printf("%6d %8" PRId64 " %7d %10.2f %10.1f %14.1f\n", k, b->last_big, BIG_RUNS,
               (double)bytes / 1048576.0, ms(us), (double)ps.hwm_kb / 1024.0);
}

static void section_submit(struct bench *b)
{
        _cleanup_json_ json_t *res = NULL;

        printf("== 1. submit (queue paused) ==\n");
        printf("(b) %d jobs of 1 run each (feature with every axis pinned), over N connections at once\n",
               SMALL_JOBS);
        printf("%6s %7s %9s %10s %9s %9s %9s\n", "conns", "jobs", "wall-s", "submits/s", "p50-ms", "p99-ms",
               "max-ms");
        for (size_t i = 0; i < ELEMENTSOF(conn_counts); i++)
                submit_small(b, conn_counts[i]);
        rss_note(b, "after the one-run jobs");
        printf("\n(a) one job of %d runs (--strategy full), repeated until %d runs are stored\n", BIG_RUNS,
               STORED_RUNS);
        printf("%6s %8s %7s %10s %10s %14s\n", "#", "job", "runs", "reply-MiB", "ack-ms", "daemon-HWM-MiB");
        for (int k = 1; b->runs < STORED_RUNS; k++)
                submit_big(b, k);
        res = conn_call(&b->c, "status", NULL, NULL, NULL);
        if (result_int(json_object_get(res, "counts"), "queued") != b->runs)
                fail("status counts %" PRId64 " queued runs, the bench submitted %" PRId64,
                     (int64_t)result_int(json_object_get(res, "counts"), "queued"), b->runs);
        rss_note(b, "after the fill");
        disk_note(b, "after the fill");
        printf("\n");
}

/* ---- 2. latency with the runs stored ---- */

struct row {
        const char *label;
        const char *method;
        json_t *(*params)(struct bench *b);
        const char *array; /* a reply array whose length is checked, or NULL */
        size_t expect;
};

static json_t *p_none(struct bench *b)
{
        return NULL;
}

static json_t *p_active(struct bench *b)
{
        return json_pack("{s:s}", "state", "active");
}

/* Jobs 100..51: the start of the history. */
static json_t *p_before(struct bench *b)
{
        return json_pack("{s:i}", "before", 101);
}

static json_t *p_show_job(struct bench *b)
{
        return json_pack("{s:I}", "job", (json_int_t)b->first_big);
}

/* A random run; in the history scenario one that is done (not of the queued big job). */
static json_t *p_show_run(struct bench *b)
{
        int64_t run;

        do
                run = 1 + (int64_t)(rng_next(b) % (uint64_t)b->runs);
        while (b->history && run >= b->last_big_run0 && run <= b->last_big_run1);
        return json_pack("{s:I}", "run", (json_int_t)run);
}

static json_t *p_submit(struct bench *b)
{
        b->runs++;
        return one_run_params(b->next_pin++);
}

static const struct row rows[] = {
        { "status", "status", p_none, NULL, 0 },
        { "list", "list", p_none, "jobs", 50 },
        { "list --state active", "list", p_active, NULL, 0 },
        { "list --before 101", "list", p_before, "jobs", 50 },
        { "show JOB (10000, pages)", "show", p_show_job, "runs", BIG_RUNS },
        { "show rRUN (random)", "show", p_show_run, NULL, 0 },
        { "submit (1 run)", "submit", p_submit, "runs", 1 },
};

/*
 * show JOB as the client does it: every page (with the runs streamed in
 * batches), one request after the other; before paging, one reply. The
 * latency is the whole job's, the bytes all lines of all pages.
 */
static json_t *show_job_all(struct bench *b, int64_t *ret_us, size_t *ret_bytes)
{
        _cleanup_json_ json_t *p = p_show_job(b);
        json_t *runs = json_array();
        int64_t t0 = mx_now_mono_us();
        size_t bytes = 0;

        for (;;) {
                _cleanup_json_ json_t *res = NULL;
                size_t got = 0;

                res = conn_call_stream(&b->c, "show", p, NULL, &got, runs);
                bytes += got;
                json_array_extend(runs, json_object_get(res, "runs"));
                if (!json_is_true(json_object_get(res, "more")))
                        break;
                json_object_set(p, "after", json_object_get(res, "after"));
        }
        *ret_us = mx_now_mono_us() - t0;
        *ret_bytes = bytes;
        return json_pack("{s:o}", "runs", runs);
}

static void measure_row(struct bench *b, const struct row *row)
{
        _cleanup_free_ int64_t *lat = xcalloc((size_t)b->o.calls, sizeof(int64_t));
        int64_t start = mx_now_mono_us();
        size_t n = 0, bytes = 0;

        for (; n < (size_t)b->o.calls && (n == 0 || mx_now_mono_us() - start < ROW_CAP_US); n++) {
                _cleanup_json_ json_t *p = row->params(b);
                _cleanup_json_ json_t *res = NULL;
                size_t got = 0, len;

                if (row->params == p_show_job)
                        res = show_job_all(b, &lat[n], &got);
                else
                        res = conn_call(&b->c, row->method, p, &lat[n], &got);
                bytes += got;
                len = row->array ? json_array_size(json_object_get(res, row->array)) : 0;
                if (row->array && len != row->expect)
                        fail("%s: '%s' has %zu entries, expected %zu", row->label, row->array, len,
                             row->expect);
        }
        qsort(lat, n, sizeof(int64_t), cmp_i64);
        printf("%-24s %5zu %9.3f %9.3f %9.3f %10.1f\n", row->label, n, ms(percentile(lat, n, 50)),
               ms(percentile(lat, n, 99)), ms(lat[n - 1]), (double)bytes / (double)n / 1024.0);
}

static void print_counts(struct bench *b)
{
        _cleanup_json_ json_t *res = conn_call(&b->c, "status", NULL, NULL, NULL);
        json_t *c = json_object_get(res, "counts");

        printf("stored: %" PRId64 " runs (queued %" PRId64 ", done %" PRId64 "), %" PRId64 " jobs\n",
               (int64_t)(result_int(c, "queued") + result_int(c, "running") + result_int(c, "done")),
               (int64_t)result_int(c, "queued"), (int64_t)result_int(c, "done"),
               (int64_t)result_int(c, "jobs"));
}

static void section_latency(struct bench *b, const char *title)
{
        printf("%s\n", title);
        print_counts(b);
        printf("%-24s %5s %9s %9s %9s %10s\n", "call", "n", "p50-ms", "p99-ms", "max-ms", "reply-KiB");
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                measure_row(b, &rows[i]);
                if (rows[i].params == p_show_job)
                        rss_note(b, b->history ? "after show JOB (H)" : "after show JOB (Q)");
        }
        printf("\n");
}

/*
 * Scenario H: what the scheduler would have written had the runs executed:
 * one completed attempt per run, levels L1 (every tenth run fails) and L1.5,
 * the run done with its result. Only the newest big job stays queued.
 */
#define HISTORY_SQL                                                                                         \
        "BEGIN IMMEDIATE;"                                                                                  \
        "INSERT INTO attempts (run_id, n, started_at, finished_at, outcome, tag, boot_id, pid, pgid, "     \
        "proc_start, exit_status, log_path) SELECT id, 1, queued_at + 1000000, queued_at + 61000000, "     \
        "'completed', 'bench-' || id, 'bench-boot', 1000 + id %% 30000, 1000 + id %% 30000, id, 0, "       \
        "'/var/lib/mxmatrix/runs/' || id || '/server.log' FROM runs WHERE job_id <> %" PRId64 ";"           \
        "INSERT INTO levels (attempt_id, level, verdict, started_at, finished_at, metrics) SELECT id, "    \
        "'L1', CASE WHEN run_id %% 10 = 0 THEN 'fail' ELSE 'pass' END, started_at + 1000, "                \
        "started_at + 20000000, '{\"ttft_ms\":41.5,\"tg32_tps\":61.2}' FROM attempts "                      \
        "WHERE boot_id = 'bench-boot';"                                                                     \
        "INSERT INTO levels (attempt_id, level, verdict, started_at, finished_at, metrics) SELECT id, "    \
        "'L1.5', 'pass', started_at + 20000000, started_at + 50000000, '{\"kernels_seen\":12}' "           \
        "FROM attempts WHERE boot_id = 'bench-boot';"                                                       \
        "UPDATE runs SET state = 'done', attempts = 1, result = CASE WHEN id %% 10 = 0 THEN 'fail' "       \
        "ELSE 'pass' END WHERE job_id <> %" PRId64 ";"                                                      \
        "COMMIT;"

/* Since migration 003 a run's result comes from an attempt it names, which carries the result too. */
#define HISTORY_SQL_V3                                                                                      \
        "BEGIN IMMEDIATE;"                                                                                  \
        "UPDATE attempts SET result = (SELECT r.result FROM runs r WHERE r.id = attempts.run_id) "         \
        "WHERE boot_id = 'bench-boot';"                                                                     \
        "UPDATE runs SET result_attempt = 1 WHERE state = 'done' AND job_id <> %" PRId64 ";"                \
        "COMMIT;"

static void make_history(struct bench *b)
{
        _cleanup_free_ char *path = xasprintf("%s/queue.db", b->d.state);
        _cleanup_free_ char *sql = xasprintf(HISTORY_SQL, b->last_big, b->last_big);
        int64_t t0 = mx_now_mono_us();
        sqlite3 *db = NULL;
        char *err = NULL;

        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
            sqlite3_exec(db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;", NULL, NULL, &err) !=
                    SQLITE_OK ||
            sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
                fail("writing the history into %s: %s", path, err ? err : sqlite3_errmsg(db));
        {
                _cleanup_free_ char *v3 = xasprintf(HISTORY_SQL_V3, b->last_big);
                sqlite3_stmt *s = NULL;
                int version = 0;

                if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
                    sqlite3_step(s) == SQLITE_ROW)
                        version = sqlite3_column_int(s, 0);
                sqlite3_finalize(s);
                if (version >= 6 && sqlite3_exec(db, v3, NULL, NULL, &err) != SQLITE_OK)
                        fail("writing the history into %s: %s", path, err ? err : sqlite3_errmsg(db));
        }
        sqlite3_close(db);
        b->history = true;
        printf("history written with SQL while the daemon was stopped (%.1f s): every run but those of "
               "job %" PRId64
               "\nis done with one completed attempt and two levels (L1 fails for every tenth run)\n",
               (double)(mx_now_mono_us() - t0) / 1e6, b->last_big);
}

/* ---- 3. and 4. ---- */

static void section_rss(const struct bench *b)
{
        printf("== 3. daemon memory (/proc/PID/status) ==\n");
        printf("%-44s %9s %9s\n", "when", "VmRSS-MiB", "VmHWM-MiB");
        for (size_t i = 0; i < b->n_rss; i++)
                printf("%-44s %9.1f %9.1f\n", b->rss[i].when, (double)b->rss[i].p.rss_kb / 1024.0,
                       (double)b->rss[i].p.hwm_kb / 1024.0);
        printf("\n");
}

static void section_idle(const struct bench *b)
{
        printf("== 4. wake-ups while idle, no client connected, %d s window ==\n", b->o.idle_s);
        printf("%-40s %7s %8s %10s %11s %8s %8s\n", "daemon", "threads", "ctxt-sw", "scheduled",
               "notify-msgs", "pings", "expect");
        for (size_t i = 0; i < b->n_idle; i++) {
                const struct idle_row *r = &b->idle[i];

                printf("%-40s %7d %8" PRId64 " %10" PRId64 " %11u %8u %8u\n", r->label, r->after.threads,
                       r->after.ctxsw - r->before.ctxsw, r->after.sched_runs - r->before.sched_runs, r->msgs,
                       r->pings, r->expect_pings);
        }
        printf("ctxt-sw: voluntary + nonvoluntary context switches of all threads; scheduled: schedstat's\n"
               "count of times on a CPU; pings: WATCHDOG=1 datagrams received; expect: pings the design\n"
               "says (one every WATCHDOG_USEC/2 = 15 s, none without a watchdog)\n");
}

/* ---- main ---- */

static char *default_daemon_path(void)
{
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash;

        if (n <= 0)
                return NULL;
        self[n] = '\0';
        /* build/bench/bench-queue -> build/daemon/mxmatrixd */
        for (int i = 0; i < 2; i++) {
                slash = strrchr(self, '/');
                if (!slash)
                        return NULL;
                *slash = '\0';
        }
        return xasprintf("%s/daemon/mxmatrixd", self);
}

static void usage(void)
{
        printf("Usage: bench-queue [--daemon PATH] [--dir DIR] [--calls N] [--quick] [--keep]\n\n"
               "Start private mxmatrixd daemons and print submit throughput and latency, status, list and\n"
               "show latency with %d runs stored, daemon memory, and wake-ups while idle.\n\n"
               "  --daemon PATH  the mxmatrixd to run (default: ../daemon/mxmatrixd next to this program)\n"
               "  --dir DIR      where the temporary directory goes (default $TMPDIR, else /var/tmp);\n"
               "                 its file system decides what an fsync costs\n"
               "  --calls N      calls per latency row (default 200; a row stops after 30 s)\n"
               "  --quick        %d s idle windows instead of %d s, %d calls per row\n"
               "  --keep         keep the temporary directory (databases, logs)\n",
               STORED_RUNS, QUICK_IDLE_S, IDLE_S, QUICK_CALLS);
}

static int parse_args(struct opts *o, int argc, char **argv)
{
        static const struct option longopts[] = {
                { "daemon", required_argument, NULL, 'd' }, { "dir", required_argument, NULL, 'D' },
                { "calls", required_argument, NULL, 'n' },  { "quick", no_argument, NULL, 'q' },
                { "keep", no_argument, NULL, 'k' },         { "help", no_argument, NULL, 'h' },
                {},
        };
        int64_t v;
        int c;

        while ((c = getopt_long(argc, argv, "h", longopts, NULL)) >= 0)
                switch (c) {
                case 'd':
                        free(o->daemon);
                        o->daemon = xstrdup(optarg);
                        break;
                case 'D':
                        free(o->dir);
                        o->dir = xstrdup(optarg);
                        break;
                case 'n':
                        if (mx_parse_int64(optarg, 1, CALLS_MAX, &v) < 0) {
                                fprintf(stderr, "bench-queue: --calls '%s' is not a count in 1..%d\n",
                                        optarg, CALLS_MAX);
                                return 2;
                        }
                        o->calls = (int)v;
                        break;
                case 'q':
                        o->idle_s = QUICK_IDLE_S;
                        o->calls = QUICK_CALLS;
                        break;
                case 'k':
                        o->keep = true;
                        break;
                case 'h':
                        usage();
                        return 1;
                default:
                        return 2;
                }
        if (optind < argc) {
                fprintf(stderr, "bench-queue: unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        return 0;
}

/* Options, the daemon's path, the directory and the fixtures; an exit code, with *ret_go to run. */
static int setup(struct bench *b, int argc, char **argv, bool *ret_go)
{
        const char *tmp = getenv("TMPDIR");
        int r;

        b->o = (struct opts){ .calls = 200, .idle_s = IDLE_S };
        b->o.dir = xstrdup(tmp && *tmp ? tmp : "/var/tmp");
        r = parse_args(&b->o, argc, argv);
        if (r != 0)
                return r == 1 ? 0 : r;
        if (!b->o.daemon)
                b->o.daemon = default_daemon_path();
        if (!b->o.daemon || access(b->o.daemon, X_OK) < 0) {
                fprintf(stderr, "bench-queue: no mxmatrixd at %s; name one with --daemon PATH\n",
                        strna(b->o.daemon));
                return 2;
        }
        workdir = xasprintf("%s/bench-queue.XXXXXX", b->o.dir);
        if (!mkdtemp(workdir))
                fail("mkdtemp %s: %m", workdir);
        b->matrix = write_matrix();
        b->config = write_config();
        b->rng = UINT64_C(0x9e3779b97f4a7c15);
        *ret_go = true;
        return 0;
}

/* Empty queue: the daemon the rest uses and one with the watchdog, idle side by side. */
static void phase_start(struct bench *b)
{
        struct bench_daemon w;
        struct bench_daemon *ds[2] = { &b->d, &w };

        daemon_init(&b->d, "queue");
        daemon_init(&w, "watchdog");
        (void)daemon_start(&b->d, &b->o, b->config, b->matrix, NULL);
        (void)daemon_start(&w, &b->o, b->config, b->matrix, "WATCHDOG_USEC=" WATCHDOG_USEC);
        print_machine(&b->o, &b->d);
        fprintf(stderr, "bench-queue: idle windows on empty queues (%d s)...\n", b->o.idle_s);
        b->idle[0] = (struct idle_row){ .label = "empty queue" };
        b->idle[1] = (struct idle_row){ .label = "empty queue, WATCHDOG_USEC=30000000",
                                        .expect_pings = (unsigned)(b->o.idle_s / 15) };
        idle_window(b, ds, b->idle, 2);
        b->n_idle = 2;
        rss_note(b, "idle after start (empty queue)");
        daemon_stop(&w);
        daemon_done(&w);
}

static void phase_history(struct bench *b)
{
        struct bench_daemon *ds[1] = { &b->d };
        int64_t ready;

        conn_close(&b->c);
        daemon_stop(&b->d);
        disk_note(b, "after the fill, daemon stopped");
        make_history(b);
        disk_note(b, "with the history");
        ready = daemon_start(&b->d, &b->o, b->config, b->matrix, NULL);
        printf("restart on that database: READY=1 after %.1f ms\n\n", ms(ready));
        rss_note(b, "after the restart on the history");
        conn_open(&b->c, b->d.socket);
        section_latency(b, "(H) history: the newest big job queued, every other run done");
        rss_note(b, "after the latency calls (H)");
        conn_close(&b->c);
        fprintf(stderr, "bench-queue: idle window with the runs stored (%d s)...\n", b->o.idle_s);
        b->idle[2] = (struct idle_row){ .label = "100000+ runs stored, paused" };
        idle_window(b, ds, &b->idle[2], 1);
        b->n_idle = 3;
        daemon_stop(&b->d);
}

int main(int argc, char **argv)
{
        struct bench b = { .c = { .fd = -1 } };
        _cleanup_json_ json_t *paused = NULL;
        bool go = false;
        int r;

        setvbuf(stdout, NULL, _IOLBF, 0);
        r = setup(&b, argc, argv, &go);
        if (!go)
                return r;
        atexit(kill_started);
        phase_start(&b);
        conn_open(&b.c, b.d.socket);
        paused = conn_call(&b.c, "pause", NULL, NULL, NULL);
        fprintf(stderr, "bench-queue: submitting...\n");
        section_submit(&b);
        printf("== 2. latency with %d runs stored, one connection ==\n", STORED_RUNS);
        section_latency(&b, "(Q) the runs just submitted, all queued");
        rss_note(&b, "after the latency calls (Q)");
        phase_history(&b);
        section_rss(&b);
        section_idle(&b);
        daemon_done(&b.d);
        if (!b.o.keep)
                nftw(workdir, remove_cb, 16, FTW_DEPTH | FTW_PHYS);
        else
                printf("\nkept %s\n", workdir);
        free(workdir);
        free(b.matrix);
        free(b.config);
        free(b.o.daemon);
        free(b.o.dir);
        return 0;
}
