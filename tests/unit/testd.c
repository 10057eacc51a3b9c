/* SPDX-License-Identifier: MIT */
#include "testd.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

/* Daemons still running when a test fails: killed at exit so ctest is not left waiting on them. */
static pid_t running[16];
static pid_t running_owner;

/* "MX_TESTD_TAG=<pid>": in every daemon's environment, so in every process of its runs. */
static const char *tag_entry(void)
{
        static char tag[64];

        if (!tag[0])
                snprintf(tag, sizeof(tag), "MX_TESTD_TAG=%d", (int)getpid());
        return tag;
}

/* Call fn for each process (not us) whose environment holds entry exactly. */
static unsigned for_each_with_env(const char *entry, void (*fn)(pid_t))
{
        DIR *dir = opendir("/proc");
        size_t n = strlen(entry) + 1;
        unsigned count = 0;
        struct dirent *de;

        if (!dir)
                return 0;
        while ((de = readdir(dir))) {
                _cleanup_free_ char *path = NULL;
                struct mx_buf b = MX_BUF_INIT;
                char chunk[4096];
                ssize_t k;
                int fd;

                if (de->d_name[0] < '1' || de->d_name[0] > '9' || atoi(de->d_name) == getpid())
                        continue;
                path = xasprintf("/proc/%s/environ", de->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                while ((k = read(fd, chunk, sizeof(chunk))) > 0)
                        mx_buf_add(&b, chunk, (size_t)k);
                close(fd);
                for (size_t i = 0; i < b.len; i += strnlen(b.data + i, b.len - i) + 1)
                        if (b.len - i >= n && memcmp(b.data + i, entry, n) == 0) {
                                count++;
                                if (fn)
                                        fn(atoi(de->d_name));
                                break;
                        }
                mx_buf_free(&b);
        }
        closedir(dir);
        return count;
}

unsigned testd_count_env(const char *entry)
{
        return for_each_with_env(entry, NULL);
}

static void kill9(pid_t pid)
{
        kill(pid, SIGKILL);
}

/*
 * SIGTERM first: a daemon stops its running server properly, where SIGKILL
 * would orphan it (that is what recovery at the next start is for, and a failed
 * test has no next start). SIGKILL only if it does not exit in time.
 */
static void kill_running(void)
{
        if (getpid() != running_owner)
                return; /* a forked test child exiting: the daemons are its parent's */
        for (size_t i = 0; i < ELEMENTSOF(running); i++) {
                if (running[i] <= 0)
                        continue;
                kill(running[i], SIGTERM);
                for (int k = 0; k < 300 && waitpid(running[i], NULL, WNOHANG) == 0; k++)
                        usleep(100000);
                kill(running[i], SIGKILL);
        }
        /* Whatever their runs left (a daemon killed by the test stops nothing), escaped grandchildren too. */
        (void)for_each_with_env(tag_entry(), kill9);
}

static void track(pid_t pid, bool add)
{
        static bool registered;

        if (!registered) {
                running_owner = getpid();
                atexit(kill_running);
                registered = true;
        }
        for (size_t i = 0; i < ELEMENTSOF(running); i++)
                if (add ? running[i] == 0 : running[i] == pid) {
                        running[i] = add ? pid : 0;
                        return;
                }
}

char *testd_build_path(const char *rel)
{
        return xasprintf("%s/%s", MX_BUILD_DIR, rel);
}

static int notify_socket(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int one = 1;

        if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
                test_fail(__FILE__, __LINE__, "notify socket %s: %m", path);
        strcpy(sa.sun_path, path);
        unlink(path);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                test_fail(__FILE__, __LINE__, "bind %s: %m", path);
        (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
        return fd;
}

static void *notify_reader(void *ud)
{
        struct testd *t = ud;
        struct testd_notify *n = t->notify;

        for (;;) {
                struct pollfd p = { .fd = t->notify_fd, .events = POLLIN };
                char buf[4096];
                ssize_t len;

                pthread_mutex_lock(&n->lock);
                if (!n->running) {
                        pthread_mutex_unlock(&n->lock);
                        return NULL;
                }
                pthread_mutex_unlock(&n->lock);
                if (poll(&p, 1, 100) <= 0)
                        continue;
                len = recv(t->notify_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
                if (len <= 0)
                        continue;
                buf[len] = '\0';
                pthread_mutex_lock(&n->lock);
                MX_GROW(n->dgrams, n->cap_dgrams, n->n_dgrams + 1);
                MX_GROW(n->dgram_at, n->cap_dgram_at, n->n_dgrams + 1);
                n->dgrams[n->n_dgrams] = xstrdup(buf);
                n->dgram_at[n->n_dgrams++] = mx_now_mono_us();
                for (char *s = buf, *save = NULL, *l; (l = strtok_r(s, "\n", &save)); s = NULL) {
                        MX_GROW(n->lines, n->cap, n->n + 1);
                        n->lines[n->n++] = xstrdup(l);
                }
                pthread_cond_broadcast(&n->cond);
                pthread_mutex_unlock(&n->lock);
        }
}

static void notify_start(struct testd *t)
{
        t->notify = xcalloc(1, sizeof(*t->notify));
        pthread_mutex_init(&t->notify->lock, NULL);
        pthread_cond_init(&t->notify->cond, NULL);
        t->notify->running = true;
        if (pthread_create(&t->notify->thread, NULL, notify_reader, t) != 0)
                test_fail(__FILE__, __LINE__, "pthread_create failed");
}

static void notify_stop(struct testd *t)
{
        struct testd_notify *n = t->notify;

        if (!n)
                return;
        pthread_mutex_lock(&n->lock);
        n->running = false;
        pthread_mutex_unlock(&n->lock);
        pthread_join(n->thread, NULL);
        for (size_t i = 0; i < n->n; i++)
                free(n->lines[i]);
        free(n->lines);
        for (size_t i = 0; i < n->n_dgrams; i++)
                free(n->dgrams[i]);
        free(n->dgrams);
        free(n->dgram_at);
        pthread_mutex_destroy(&n->lock);
        pthread_cond_destroy(&n->cond);
        free(n);
        t->notify = NULL;
}

static bool line_matches(const char *l, const char *line)
{
        return streq(l, line) || (endswith(line, "=") && startswith(l, line));
}

static struct timespec deadline_in(int timeout_ms)
{
        struct timespec deadline;

        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000;
        }
        return deadline;
}

char *testd_notify_next(struct testd *t, int timeout_ms, int64_t *ret_at_us)
{
        struct testd_notify *n = t->notify;
        struct timespec deadline = deadline_in(timeout_ms);
        char *d = NULL;

        pthread_mutex_lock(&n->lock);
        while (n->next_dgram >= n->n_dgrams && pthread_cond_timedwait(&n->cond, &n->lock, &deadline) == 0)
                ;
        if (n->next_dgram < n->n_dgrams) {
                if (ret_at_us)
                        *ret_at_us = n->dgram_at[n->next_dgram];
                d = xstrdup(n->dgrams[n->next_dgram++]);
        }
        pthread_mutex_unlock(&n->lock);
        return d;
}

char *testd_notify_wait(struct testd *t, const char *line, int timeout_ms)
{
        struct testd_notify *n = t->notify;
        struct timespec deadline = deadline_in(timeout_ms);
        char *found = NULL;

        pthread_mutex_lock(&n->lock);
        while (!found) {
                while (n->next < n->n && !found)
                        if (line_matches(n->lines[n->next++], line))
                                found = xstrdup(n->lines[n->next - 1]);
                if (found || pthread_cond_timedwait(&n->cond, &n->lock, &deadline) != 0)
                        break;
        }
        pthread_mutex_unlock(&n->lock);
        return found;
}

static void spawn(struct testd *t, const char *const *args, const char *const *env)
{
        _cleanup_free_ char *bin = testd_build_path("daemon/mxmatrixd");
        _cleanup_strv_free_ char **argv = NULL, **envp = NULL;
        pid_t pid;

        strv_push(&argv, bin);
        strv_push(&argv, "--foreground");
        strv_push(&argv, "--log-level=debug");
        strv_consume(&argv, xasprintf("--socket=%s", t->socket));
        strv_consume(&argv, xasprintf("--state-dir=%s", t->state));
        for (size_t i = 0; args && args[i]; i++)
                strv_push(&argv, args[i]);
        for (char **e = environ; *e; e++) {
                bool overridden = false;

                for (size_t i = 0; env && env[i]; i++) {
                        size_t k = strcspn(env[i], "=");
                        overridden |= strncmp(*e, env[i], k + 1) == 0;
                }
                if (!overridden && !startswith(*e, "NOTIFY_SOCKET=") && !startswith(*e, "LISTEN_") &&
                    !startswith(*e, "WATCHDOG_"))
                        strv_push(&envp, *e);
        }
        strv_consume(&envp, xasprintf("NOTIFY_SOCKET=%s", t->notify_path));
        strv_push(&envp, tag_entry());
        for (size_t i = 0; env && env[i]; i++)
                strv_push(&envp, env[i]);
        pid = fork();
        if (pid < 0)
                test_fail(__FILE__, __LINE__, "fork: %m");
        if (pid == 0) {
                int fd = open(t->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (fd >= 0)
                        dup2(fd, STDERR_FILENO);
                execve(argv[0], argv, envp);
                _exit(127);
        }
        t->pid = pid;
        track(pid, true);
}

static void wait_ready(struct testd *t)
{
        _cleanup_free_ char *ready = testd_notify_wait(t, "READY=1", 20000);

        if (!ready) {
                _cleanup_free_ char *log = test_read_file(t->log, NULL);
                test_fail(__FILE__, __LINE__, "mxmatrixd did not become ready; its log:\n%s", log);
        }
}

void testd_launch(struct testd *t, const char *name, const char *const *args, const char *const *env)
{
        *t = (struct testd){ .notify_fd = -1 };
        t->dir = xasprintf("%s/%s", test_tmpdir(), name);
        if (mkdir(t->dir, 0755) < 0)
                test_fail(__FILE__, __LINE__, "mkdir %s: %m", t->dir);
        /* Other uids (permission tests) must reach the socket. */
        chmod(test_tmpdir(), 0755);
        t->socket = xasprintf("%s/control.sock", t->dir);
        t->state = xasprintf("%s/state", t->dir);
        t->notify_path = xasprintf("%s/notify", t->dir);
        t->log = xasprintf("%s/daemon.log", t->dir);
        t->notify_fd = notify_socket(t->notify_path);
        notify_start(t);
        spawn(t, args, env);
}

void testd_start(struct testd *t, const char *name, const char *const *args, const char *const *env)
{
        testd_launch(t, name, args, env);
        wait_ready(t);
}

void testd_restart(struct testd *t, const char *const *args, const char *const *env)
{
        spawn(t, args, env);
        wait_ready(t);
}

int testd_stop(struct testd *t, int sig)
{
        int status = 0;

        if (t->pid <= 0)
                return -1;
        kill(t->pid, sig);
        if (waitpid(t->pid, &status, 0) < 0)
                test_fail(__FILE__, __LINE__, "waitpid: %m");
        track(t->pid, false);
        t->pid = 0;
        return status;
}

int testd_wait_exit(struct testd *t, int timeout_ms)
{
        int64_t deadline = mx_now_mono_us() + (int64_t)timeout_ms * 1000;
        int status = 0;

        if (t->pid <= 0)
                return -1;
        /* No SIGCHLD plumbing in tests: poll the child, which is cheap at this rate. */
        for (;;) {
                pid_t r = waitpid(t->pid, &status, WNOHANG);

                if (r == t->pid) {
                        track(t->pid, false);
                        t->pid = 0;
                        return status;
                }
                if (r < 0)
                        test_fail(__FILE__, __LINE__, "waitpid: %m");
                if (mx_now_mono_us() >= deadline)
                        return -1;
                usleep(10000);
        }
}

void testd_done(struct testd *t)
{
        if (t->pid > 0)
                testd_stop(t, SIGKILL);
        notify_stop(t);
        if (t->notify_fd >= 0)
                close(t->notify_fd);
        free(t->dir);
        free(t->socket);
        free(t->state);
        free(t->notify_path);
        free(t->log);
        *t = (struct testd){ .notify_fd = -1 };
}

int testd_connect(struct testd *t)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        strcpy(sa.sun_path, t->socket);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

void testd_send(int fd, const char *text)
{
        size_t n = strlen(text);

        while (n > 0) {
                ssize_t w = send(fd, text, n, MSG_NOSIGNAL);
                if (w < 0)
                        test_fail(__FILE__, __LINE__, "send: %m");
                text += w;
                n -= (size_t)w;
        }
}

char *testd_recv_line(int fd, int timeout_ms)
{
        struct mx_buf b = MX_BUF_INIT;
        int64_t deadline = mx_now_mono_us() + (int64_t)timeout_ms * 1000;

        /* Byte at a time: simple, and never reads past the line. */
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int64_t left = (deadline - mx_now_mono_us()) / 1000;
                char c;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0 || recv(fd, &c, 1, 0) != 1) {
                        mx_buf_free(&b);
                        return NULL;
                }
                if (c == '\n')
                        return mx_buf_steal(&b);
                mx_buf_putc(&b, c);
        }
}

bool testd_closed(int fd, int timeout_ms)
{
        int64_t deadline = mx_now_mono_us() + (int64_t)timeout_ms * 1000;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int64_t left = (deadline - mx_now_mono_us()) / 1000;
                char buf[4096];
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        return false;
                n = recv(fd, buf, sizeof(buf), 0);
                if (n == 0 || (n < 0 && errno == ECONNRESET))
                        return true;
        }
}

json_t *testd_request(int fd, const char *method, json_t *params)
{
        static int64_t id = 1000;
        _cleanup_json_ json_t *req = json_pack("{s:I,s:s,s:O?}", "id", (json_int_t)++id, "method", method, "params",
                                               params);
        _cleanup_free_ char *text = json_dumps(req, JSON_COMPACT);
        _cleanup_free_ char *line = xasprintf("%s\n", text);
        _cleanup_json_ json_t *runs = json_array();
        json_t *reply, *res;

        testd_send(fd, line);
        for (;;) {
                _cleanup_free_ char *r = testd_recv_line(fd, 120000);
                if (!r)
                        return NULL;
                reply = json_loads(r, 0, NULL);
                if (!reply || !json_object_get(reply, "stream"))
                        break;
                /* show JOB sends its runs in batches: gather them into the result, as the client does. */
                json_array_extend(runs, json_object_get(json_object_get(reply, "stream"), "runs"));
                json_decref(reply);
        }
        res = json_object_get(reply, "result");
        if (streq(method, "show") && json_is_object(res) && json_object_get(res, "job"))
                json_object_set(res, "runs", runs);
        return reply;
}

int testd_session(struct testd *t)
{
        int fd = testd_connect(t);
        _cleanup_json_ json_t *p = NULL, *r = NULL;

        ASSERT_OK(fd);
        p = json_pack("{s:i}", "protocol", 1);
        r = testd_request(fd, "hello", p);
        ASSERT_NOT_NULL(r);
        ASSERT_NOT_NULL(json_object_get(r, "result"));
        return fd;
}

int testd_client(struct testd *t, char **ret_out, const char *const *args)
{
        _cleanup_free_ char *bin = testd_build_path("client/mxmatrix");
        _cleanup_strv_free_ char **argv = NULL;
        struct mx_buf out = MX_BUF_INIT;
        int pipefd[2], status = 0;
        pid_t pid;

        strv_push(&argv, bin);
        strv_consume(&argv, xasprintf("--socket=%s", t->socket));
        for (size_t i = 0; args[i]; i++)
                strv_push(&argv, args[i]);
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                test_fail(__FILE__, __LINE__, "pipe: %m");
        pid = fork();
        if (pid == 0) {
                dup2(pipefd[1], STDOUT_FILENO);
                execv(argv[0], argv);
                _exit(127);
        }
        close(pipefd[1]);
        for (;;) {
                char buf[4096];
                ssize_t n = read(pipefd[0], buf, sizeof(buf));
                if (n <= 0)
                        break;
                mx_buf_add(&out, buf, (size_t)n);
        }
        close(pipefd[0]);
        waitpid(pid, &status, 0);
        if (ret_out)
                *ret_out = mx_buf_steal(&out);
        else
                mx_buf_free(&out);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
