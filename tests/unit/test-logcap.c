/* SPDX-License-Identifier: MIT */
/*
 * Server output capture: the file is capped, lines reach the callback, and a
 * server that writes faster than its lines are handled cannot hold the event
 * loop (or a drain) for ever.
 */
#include "logcap.h"
#include "test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

struct seen {
        size_t lines;
        int64_t line_cost_us; /* busy time per line, as a journald write costs */
};

static void line_cb(void *ud, const char *line, size_t len)
{
        struct seen *s = ud;
        int64_t until = mx_now_mono_us() + s->line_cost_us;

        (void)line, (void)len;
        s->lines++;
        while (mx_now_mono_us() < until)
                ;
}

static const struct logcap_ops ops = { .line = line_cb };

/* A child that writes 4000-byte lines into fd as fast as the pipe takes them, until killed. */
static pid_t start_flood(int fd)
{
        pid_t pid = fork();

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                char line[4000];

                memset(line, 'x', sizeof(line) - 1);
                line[sizeof(line) - 1] = '\n';
                for (;;)
                        if (write(fd, line, sizeof(line)) < 0 && errno != EINTR)
                                _exit(0);
        }
        close(fd);
        return pid;
}

static void stop_flood(pid_t pid)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* A loop that never comes back fails here instead of hanging until ctest's timeout. */
static void alarm_cb(int sig)
{
        static const char msg[] = "FAIL: the loop (or a drain) never returned while a server flooded it\n";

        (void)sig;
        (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
        _exit(1);
}

static void set_alarm(unsigned s)
{
        struct sigaction sa = { .sa_handler = alarm_cb };

        sigaction(SIGALRM, &sa, NULL);
        alarm(s);
}

static void break_cb(evutil_socket_t fd, short what, void *ud)
{
        bool *fired = ud;

        (void)fd, (void)what;
        *fired = true;
}

TEST(a_flooding_server_cannot_hold_the_loop)
{
        _cleanup_free_ char *path = xasprintf("%s/flood.log", test_tmpdir());
        struct event_base *base = event_base_new();
        struct seen seen = { .line_cost_us = 1000 };
        struct logcap *lc = NULL;
        struct event *t;
        bool fired = false;
        int p[2];
        pid_t w;

        ASSERT_OK(pipe2(p, O_CLOEXEC));
        ASSERT_OK(logcap_new(base, path, 4096, &ops, &seen, &lc));
        ASSERT_OK(logcap_add_source(lc, p[0]));
        w = start_flood(p[1]);
        t = evtimer_new(base, break_cb, &fired);
        evtimer_add(t, &(struct timeval){ .tv_usec = 100000 });
        set_alarm(20);
        while (!fired)
                event_base_loop(base, EVLOOP_ONCE);
        alarm(0);
        ASSERT_TRUE(seen.lines > 0);
        ASSERT_EQ(logcap_bytes(lc), 4096); /* the cap held */
        ASSERT_FALSE(logcap_eof(lc));
        stop_flood(w);
        event_free(t);
        logcap_free(lc);
        event_base_free(base);
}

TEST(a_drain_returns_while_the_server_still_writes)
{
        _cleanup_free_ char *path = xasprintf("%s/drain.log", test_tmpdir());
        struct event_base *base = event_base_new();
        struct seen seen = { .line_cost_us = 1000 };
        struct logcap *lc = NULL;
        int p[2];
        pid_t w;

        ASSERT_OK(pipe2(p, O_CLOEXEC));
        ASSERT_OK(logcap_new(base, path, 1 << 20, &ops, &seen, &lc));
        ASSERT_OK(logcap_add_source(lc, p[0]));
        w = start_flood(p[1]);
        ASSERT_EQ(poll(&(struct pollfd){ .fd = p[0], .events = POLLIN }, 1, 10000), 1);
        set_alarm(20);
        logcap_drain(lc);
        alarm(0);
        ASSERT_TRUE(seen.lines > 0);
        stop_flood(w);
        logcap_free(lc);
        event_base_free(base);
}

TEST(lines_and_notes_reach_the_callback_and_the_file)
{
        _cleanup_free_ char *path = xasprintf("%s/lines.log", test_tmpdir()), *text = NULL;
        struct event_base *base = event_base_new();
        struct seen seen = {};
        struct logcap *lc = NULL;
        int p[2];

        ASSERT_OK(pipe2(p, O_CLOEXEC));
        ASSERT_OK(logcap_new(base, path, 1 << 20, &ops, &seen, &lc));
        ASSERT_OK(logcap_add_source(lc, p[0]));
        ASSERT_EQ(write(p[1], "one\ntwo\nthree", 13), 13);
        close(p[1]);
        logcap_note(lc, "a note");
        while (!logcap_eof(lc))
                event_base_loop(base, EVLOOP_ONCE);
        ASSERT_EQ(seen.lines, 4); /* the note, one, two, and three at end of file */
        text = test_read_file(path, NULL);
        ASSERT_STREQ(text, "[mxmatrixd] a note\none\ntwo\nthree");
        logcap_free(lc);
        event_base_free(base);
}
