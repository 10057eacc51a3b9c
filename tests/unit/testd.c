/* SPDX-License-Identifier: MIT */
#include "testd.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

/* Daemons still running when a test fails: killed at exit so ctest is not left waiting on them. */
static pid_t running[16];
static pid_t running_owner;

static void kill_running(void)
{
        if (getpid() != running_owner)
                return; /* a forked test child exiting: the daemons are its parent's */
        for (size_t i = 0; i < ELEMENTSOF(running); i++)
                if (running[i] > 0)
                        kill(running[i], SIGKILL);
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

char *testd_notify_wait(struct testd *t, const char *line, int timeout_ms)
{
        int64_t deadline = mx_now_mono_us() + (int64_t)timeout_ms * 1000;

        for (;;) {
                struct pollfd p = { .fd = t->notify_fd, .events = POLLIN };
                int64_t left = (deadline - mx_now_mono_us()) / 1000;
                char buf[4096];
                ssize_t n;

                if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                        return NULL;
                n = recv(t->notify_fd, buf, sizeof(buf) - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                for (char *s = buf, *save = NULL, *l; (l = strtok_r(s, "\n", &save)); s = NULL)
                        if (streq(l, line) || (endswith(line, "=") && startswith(l, line))) {
                                /* strtok_r cut buf up; return a fresh copy of the datagram's start */
                                return xstrdup(l);
                        }
        }
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

void testd_start(struct testd *t, const char *name, const char *const *args, const char *const *env)
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
        spawn(t, args, env);
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

void testd_done(struct testd *t)
{
        if (t->pid > 0)
                testd_stop(t, SIGKILL);
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
        json_t *reply;

        testd_send(fd, line);
        for (;;) {
                _cleanup_free_ char *r = testd_recv_line(fd, 120000);
                if (!r)
                        return NULL;
                reply = json_loads(r, 0, NULL);
                if (!reply || !json_object_get(reply, "stream"))
                        return reply;
                json_decref(reply);
        }
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
