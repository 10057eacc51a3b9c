/* SPDX-License-Identifier: MIT */
/*
 * The control socket against a real mxmatrixd: handshake, malformed and
 * oversized frames, a client that stalls half-way through a line while 100
 * others are served, per-uid connection limits and privileges with a second
 * uid, and every reply checked against the shapes in schema/protocol.json.
 */
#include "protocol.h"
#include "testd.h"

#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define NOBODY 65534

static const char *reply_error_code(json_t *reply)
{
        return json_string_value(json_object_get(json_object_get(reply, "error"), "code"));
}

static void check_reply_shape(const char *method, json_t *reply)
{
        const struct mx_proto *p = mx_proto_get();
        const struct mx_proto_method *m = mx_proto_find(p, method);
        _cleanup_free_ char *err = NULL;

        ASSERT_NOT_NULL(m);
        ASSERT_NOT_NULL(json_object_get(reply, "result"));
        if (mx_proto_check_value(p, m->reply, json_object_get(reply, "result"), method, &err) < 0)
                test_fail(__FILE__, __LINE__, "%s reply does not match protocol.json: %s", method, err);
}

/* The limits these tests rely on, through a config file as an operator would set them. */
static const char *config_file(const char *name, const char *body)
{
        char *path = xasprintf("%s/%s.json", test_tmpdir(), name);

        test_write_file(path, body);
        return path;
}

TEST(hello_first_and_version)
{
        struct testd t;
        int fd;
        _cleanup_json_ json_t *r1 = NULL, *r2 = NULL, *p = NULL;

        testd_start(&t, "hello", NULL, NULL);
        /* Anything before hello is refused and the connection closed. */
        fd = testd_connect(&t);
        ASSERT_OK(fd);
        r1 = testd_request(fd, "status", NULL);
        ASSERT_STREQ(reply_error_code(r1), "protocol-mismatch");
        ASSERT_TRUE(testd_closed(fd, 2000));
        close(fd);
        /* A client of another protocol version is told so, then dropped. */
        fd = testd_connect(&t);
        p = json_pack("{s:i}", "protocol", 99);
        r2 = testd_request(fd, "hello", p);
        ASSERT_STREQ(reply_error_code(r2), "protocol-mismatch");
        ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(r2, "error"), "message")), "protocol 1");
        ASSERT_TRUE(testd_closed(fd, 2000));
        close(fd);
        /* The right one works and says who we are. */
        {
                _cleanup_json_ json_t *q = json_pack("{s:i,s:s}", "protocol", 1, "client", "test");
                _cleanup_json_ json_t *r = NULL;

                fd = testd_connect(&t);
                r = testd_request(fd, "hello", q);
                check_reply_shape("hello", r);
                ASSERT_EQ(json_integer_value(json_object_get(json_object_get(r, "result"), "uid")), getuid());
                close(fd);
        }
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(bad_frames_lose_the_connection_not_the_daemon)
{
        static const char *const bad[] = {
                "this is not json\n",
                "[1,2,3]\n",
                "{\"id\":1,\"method\":\"hello\",\"params\":{\"protocol\":1},\"extra\":true}\n",
                "{\"id\":1,\"method\":\"hello\",\"params\":{\"protocol\":1},\"id\":2}\n",
                "{\"id\":[1],\"method\":\"hello\"}\n",
                "{\"id\":1,\"method\":5}\n",
                "{\"id\":1,\"method\":\"hello\",\"params\":\"x\"}\n",
        };
        struct testd t;

        testd_start(&t, "badframes", NULL, NULL);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int fd = testd_connect(&t);
                _cleanup_free_ char *line = NULL;
                _cleanup_json_ json_t *j = NULL;

                testd_send(fd, bad[i]);
                line = testd_recv_line(fd, 5000);
                ASSERT_NOT_NULL(line);
                j = json_loads(line, 0, NULL);
                ASSERT_NOT_NULL(j);
                ASSERT_STREQ(reply_error_code(j), "bad-request");
                ASSERT_TRUE(testd_closed(fd, 2000));
                close(fd);
        }
        /* Still serving. */
        close(testd_session(&t));
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(errors_that_keep_the_connection)
{
        struct testd t;
        int fd;

        testd_start(&t, "keep", NULL, NULL);
        fd = testd_session(&t);
        {
                _cleanup_json_ json_t *r = testd_request(fd, "frobnicate", NULL);
                ASSERT_STREQ(reply_error_code(r), "unknown-method");
        }
        {
                _cleanup_json_ json_t *p = json_pack("{s:s}", "state", "sideways");
                _cleanup_json_ json_t *r = testd_request(fd, "list", p);
                ASSERT_STREQ(reply_error_code(r), "bad-request");
                ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(r, "error"), "message")), "state");
        }
        {
                _cleanup_json_ json_t *p = json_pack("{s:i,s:i}", "job", 1, "run", 2);
                _cleanup_json_ json_t *r = testd_request(fd, "show", p);
                ASSERT_STREQ(reply_error_code(r), "bad-request");
        }
        {
                _cleanup_json_ json_t *p = json_pack("{s:i}", "job", 424242);
                _cleanup_json_ json_t *r = testd_request(fd, "show", p);
                ASSERT_STREQ(reply_error_code(r), "not-found");
        }
        {
                _cleanup_json_ json_t *r = testd_request(fd, "status", NULL);
                check_reply_shape("status", r);
        }
        {
                _cleanup_json_ json_t *r = testd_request(fd, "list", NULL);
                check_reply_shape("list", r);
        }
        close(fd);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(oversized_frame)
{
        const char *cfg = config_file("oversize", "{\"limits\": {\"frame_bytes\": 8192}}");
        const char *const args[] = { "--config", cfg, NULL };
        _cleanup_free_ char *big = xmalloc(20000), *line = NULL;
        struct testd t;
        int fd;

        testd_start(&t, "oversize", args, NULL);
        fd = testd_session(&t);
        memset(big, 'x', 19999);
        big[19999] = '\0';
        testd_send(fd, "{\"id\":1,\"method\":\"status\",\"params\":{\"pad\":\"");
        testd_send(fd, big);
        line = testd_recv_line(fd, 5000);
        ASSERT_NOT_NULL(line);
        ASSERT_CONTAINS(line, "longer than 8192");
        ASSERT_TRUE(testd_closed(fd, 2000));
        close(fd);
        close(testd_session(&t));
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

struct worker {
        struct testd *t;
        int ok;
};

static void *client_thread(void *ud)
{
        struct worker *w = ud;
        int fd = testd_connect(w->t);
        _cleanup_json_ json_t *p = json_pack("{s:i}", "protocol", 1), *r1 = NULL, *r2 = NULL;

        if (fd < 0)
                return NULL;
        r1 = testd_request(fd, "hello", p);
        r2 = testd_request(fd, "status", NULL);
        w->ok = r1 && r2 && json_object_get(r2, "result") != NULL;
        close(fd);
        return NULL;
}

TEST(hundred_clients_and_a_staller)
{
        const char *cfg = config_file("stall", "{\"limits\": {\"frame_timeout_ms\": 1500, \"connections\": 512}}");
        const char *const args[] = { "--config", cfg, NULL };
        struct worker w[100];
        pthread_t th[100];
        struct testd t;
        int staller, ok = 0;
        int64_t start;

        testd_start(&t, "stall", args, NULL);
        staller = testd_session(&t);
        testd_send(staller, "{\"id\":7,\"method\":\"sta"); /* and nothing more */
        start = mx_now_mono_us();
        for (int i = 0; i < 100; i++) {
                w[i] = (struct worker){ .t = &t };
                ASSERT_EQ(pthread_create(&th[i], NULL, client_thread, &w[i]), 0);
        }
        for (int i = 0; i < 100; i++) {
                pthread_join(th[i], NULL);
                ok += w[i].ok;
        }
        ASSERT_EQ(ok, 100);
        /* The staller is cut off after the frame timeout, with an error. */
        {
                _cleanup_free_ char *line = testd_recv_line(staller, 10000);
                ASSERT_NOT_NULL(line);
                ASSERT_CONTAINS(line, "not finished in time");
                ASSERT_TRUE(testd_closed(staller, 2000));
                ASSERT_TRUE(mx_now_mono_us() - start >= 1000000);
        }
        close(staller);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

/*
 * A partial line must complete within frame_timeout_ms of its first byte: a
 * client that trickles one byte at a time, each well inside the limit, is
 * still cut off (slow loris), and one that sends whole lines slowly is not.
 */
TEST(trickled_line_times_out_from_its_first_byte)
{
        const char *cfg = config_file("trickle", "{\"limits\": {\"frame_timeout_ms\": 1000}}");
        const char *const args[] = { "--config", cfg, NULL };
        _cleanup_free_ char *line = NULL;
        struct testd t;
        int fd, slow, sent = 0;

        testd_start(&t, "trickle", args, NULL);
        fd = testd_session(&t);
        slow = testd_session(&t);
        testd_send(fd, "{\"id\":1,\"method\":\"status\",\"params\":{");
        /* 5 s of one byte every 250 ms: five times the limit. */
        for (int i = 0; i < 20; i++) {
                if (send(fd, " ", 1, MSG_NOSIGNAL) == 1)
                        sent++;
                /* Whole requests 250 ms apart: each line is short, so this one stays. */
                if (i % 4 == 0) {
                        _cleanup_json_ json_t *r = testd_request(slow, "status", NULL);
                        ASSERT_NOT_NULL(json_object_get(r, "result"));
                }
                usleep(250000);
        }
        line = testd_recv_line(fd, 100);
        ASSERT_NOT_NULL(line);
        ASSERT_CONTAINS(line, "not finished in time");
        ASSERT_TRUE(testd_closed(fd, 2000));
        ASSERT_TRUE(sent < 20);
        close(fd);
        close(slow);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

static unsigned count_substr(const char *s, const char *needle)
{
        unsigned n = 0;

        for (const char *p = s; p && (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* Wait until job's runs are all done (show, polled); asserts it within a minute. */
static void wait_job_done(int fd, int64_t job)
{
        _cleanup_json_ json_t *p = json_pack("{s:I}", "job", (json_int_t)job);

        for (int i = 0; i < 1200; i++) {
                _cleanup_json_ json_t *r = testd_request(fd, "show", p);
                const char *state = json_string_value(
                        json_object_get(json_object_get(json_object_get(r, "result"), "job"), "state"));

                ASSERT_NOT_NULL(state);
                if (streq(state, "done"))
                        return;
                usleep(50000);
        }
        test_fail(__FILE__, __LINE__, "job %" PRId64 " not done within a minute", job);
}

/*
 * follow sends a job's whole history at once: with more of it than the
 * connection's output limit, a client that reads everything must still get
 * it all (paced like logs), not lose its connection as a slow reader would.
 */
TEST(follow_paces_a_long_history)
{
        const char *cfg = config_file("follow", "{\"limits\": {\"output_bytes\": 512}}");
        _cleanup_free_ char *m = test_source_path("tests/fixtures/daemon/command.json");
        _cleanup_free_ char *marg = xasprintf("--matrix=%s", m), *out = NULL, *jobarg = NULL;
        const char *const args[] = { "--config", cfg, marg, NULL };
        _cleanup_json_ json_t *p = json_pack("{s:s,s:{s:s}}", "feature", "fast", "pins", "mode", "ok");
        _cleanup_json_ json_t *r = NULL;
        struct testd t;
        int64_t job;
        int fd;

        testd_start(&t, "follow", args, NULL);
        fd = testd_session(&t);
        r = testd_request(fd, "submit", p);
        job = json_integer_value(json_object_get(json_object_get(r, "result"), "job"));
        ASSERT_TRUE(job > 0);
        wait_job_done(fd, job);
        jobarg = xasprintf("%" PRId64, job);
        /* job-accepted, then run-started, two level-finished and run-finished per run: over 1 KiB. */
        ASSERT_EQ(testd_client(&t, &out, (const char *const[]){ "--json", "follow", jobarg, NULL }), 0);
        ASSERT_CONTAINS(out, "job-accepted");
        ASSERT_EQ(count_substr(out, "\"run-finished\""), 2);
        ASSERT_EQ(count_substr(out, "\"level-finished\""), 4);
        close(fd);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

/* The daemon's client count, asked on fd. */
static int64_t clients_now(int fd)
{
        _cleanup_json_ json_t *r = testd_request(fd, "status", NULL);

        json_t *daemon = json_object_get(json_object_get(r, "result"), "daemon");

        return json_integer_value(json_object_get(daemon, "clients"));
}

/*
 * A client that sends requests and never reads the replies is dropped: once
 * its socket is full the daemon cannot even deliver the error, and must close
 * the connection anyway instead of keeping it (and its slot) forever.
 */
TEST(non_reader_is_dropped_even_with_a_full_socket)
{
        /* More than one read's worth of replies, so the socket fills before the limit is reached. */
        const char *cfg = config_file("nonreader", "{\"limits\": {\"output_bytes\": 65536, "
                                                  "\"frame_timeout_ms\": 1000}}");
        const char *const args[] = { "--config", cfg, NULL };
        static const char req[] = "{\"id\":1,\"method\":\"frobnicate\"}\n"; /* a short error each */
        _cleanup_free_ char *log = NULL;
        struct testd t;
        int64_t start, n = -1;
        int bad, good;

        testd_start(&t, "nonreader", args, NULL);
        good = testd_session(&t);
        bad = testd_session(&t);
        ASSERT_EQ(clients_now(good), 2);
        ASSERT_OK(fcntl(bad, F_SETFL, O_NONBLOCK));
        /* Requests until the daemon stops reading them (it dropped us), for at most 10 s. */
        start = mx_now_mono_us();
        for (int eagain = 0; eagain < 100 && mx_now_mono_us() - start < 10000000;) {
                if (send(bad, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0) {
                        if (errno != EAGAIN)
                                break;
                        eagain++;
                        usleep(10000);
                }
        }
        /* Gone within a few frame timeouts, although we never read a byte. */
        for (int i = 0; i < 100 && (n = clients_now(good)) != 1; i++)
                usleep(50000);
        log = test_read_file(t.log, NULL);
        ASSERT_CONTAINS(log, "bytes of replies unread");
        ASSERT_EQ(n, 1);
        close(bad);
        close(good);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

/*
 * A client may send its requests and shut down its writing side (as nc -N
 * or socat do) before it reads: every reply must still reach it.
 */
TEST(half_closed_client_gets_every_reply)
{
        static const char req[] = "{\"id\":2,\"method\":\"status\"}\n";
        _cleanup_free_ char *m = test_source_path("tests/fixtures/daemon/command.json");
        _cleanup_free_ char *marg = xasprintf("--matrix=%s", m);
        struct mx_buf all = MX_BUF_INIT;
        struct testd t;
        unsigned lines = 0;
        int fd;

        testd_start(&t, "halfclose", (const char *const[]){ marg, NULL }, NULL);
        fd = testd_connect(&t);
        ASSERT_OK(fd);
        /* hello, then 2000 status requests (about 1 MiB of replies), then EOF. */
        mx_buf_puts(&all, "{\"id\":1,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n");
        for (int i = 0; i < 2000; i++)
                mx_buf_puts(&all, req);
        testd_send(fd, all.data);
        ASSERT_OK(shutdown(fd, SHUT_WR));
        for (;;) {
                char buf[65536];
                ssize_t n = recv(fd, buf, sizeof(buf), 0);

                ASSERT_TRUE(n >= 0);
                if (n == 0)
                        break;
                for (ssize_t i = 0; i < n; i++)
                        lines += buf[i] == '\n';
        }
        ASSERT_EQ(lines, 2001);
        mx_buf_free(&all);
        close(fd);
        /* A client that closes its socket while a stream waits is gone at once, not at the next event. */
        {
                int good = testd_session(&t), f = testd_session(&t);
                _cleanup_json_ json_t *p =
                        json_pack("{s:s,s:{s:s}}", "feature", "fast", "pins", "mode", "ok");
                _cleanup_json_ json_t *r = testd_request(good, "pause", NULL);
                _cleanup_json_ json_t *sub = testd_request(good, "submit", p);
                json_t *res = json_object_get(sub, "result");
                int64_t n = -1, job = json_integer_value(json_object_get(res, "job"));
                _cleanup_free_ char *freq = xasprintf(
                        "{\"id\":5,\"method\":\"follow\",\"params\":{\"job\":%" PRId64 "}}\n", job);
                _cleanup_free_ char *first = NULL;

                ASSERT_TRUE(job > 0);
                testd_send(f, freq);
                first = testd_recv_line(f, 5000); /* job-accepted: the stream is open */
                ASSERT_CONTAINS(first, "job-accepted");
                ASSERT_EQ(clients_now(good), 2);
                close(f);
                for (int i = 0; i < 40 && (n = clients_now(good)) != 1; i++)
                        usleep(50000);
                ASSERT_EQ(n, 1);
                close(good);
        }
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

/* Run fn in a child process with uid/gid NOBODY; returns its exit status. */
static int as_nobody(void (*fn)(struct testd *), struct testd *t)
{
        pid_t pid;
        int status;

        if (geteuid() != 0)
                test_skip("needs root to act as a second uid");
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
                    setresuid(NOBODY, NOBODY, NOBODY) < 0)
                        _exit(99);
                fn(t);
                _exit(0);
        }
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void nobody_limits(struct testd *t)
{
        int fds[4];

        for (int i = 0; i < 3; i++)
                fds[i] = testd_session(t);
        /* The fourth connection of this uid is refused with a reason. */
        fds[3] = testd_connect(t);
        ASSERT_OK(fds[3]);
        {
                _cleanup_free_ char *line = testd_recv_line(fds[3], 5000);
                ASSERT_NOT_NULL(line);
                ASSERT_CONTAINS(line, "limit-exceeded");
        }
        /* Read verbs work; admin verbs do not. */
        {
                _cleanup_json_ json_t *r = testd_request(fds[0], "status", NULL);
                ASSERT_NOT_NULL(json_object_get(r, "result"));
                ASSERT_FALSE(json_is_true(json_object_get(json_object_get(r, "result"), "paused")));
        }
        {
                _cleanup_json_ json_t *r = testd_request(fds[0], "pause", NULL);
                ASSERT_STREQ(reply_error_code(r), "permission-denied");
        }
        {
                _cleanup_json_ json_t *p = json_pack("{s:i}", "protocol", 1);
                _cleanup_json_ json_t *r = testd_request(fds[1], "hello", p);
                ASSERT_FALSE(json_is_true(json_object_get(json_object_get(r, "result"), "admin")));
        }
        for (int i = 0; i < 4; i++)
                close(fds[i]);
}

TEST(second_uid_limits_and_privileges)
{
        const char *cfg = config_file("uid", "{\"limits\": {\"connections_per_uid\": 3}}");
        const char *const args[] = { "--config", cfg, "--socket-mode", "0666", NULL };
        struct testd t;

        if (geteuid() != 0)
                test_skip("needs root to act as a second uid");
        testd_start(&t, "uid", args, NULL);
        ASSERT_EQ(as_nobody(nobody_limits, &t), 0);
        /* Root may pause; the flag survives a restart. */
        {
                int fd = testd_session(&t);
                _cleanup_json_ json_t *r = testd_request(fd, "pause", NULL);
                check_reply_shape("pause", r);
                close(fd);
        }
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_restart(&t, args, NULL);
        {
                int fd = testd_session(&t);
                _cleanup_json_ json_t *r = testd_request(fd, "status", NULL);
                ASSERT_TRUE(json_is_true(json_object_get(json_object_get(r, "result"), "paused")));
                close(fd);
        }
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

static int64_t nobody_submit(int fd)
{
        _cleanup_json_ json_t *p = json_pack("{s:s,s:{s:s}}", "feature", "fast", "pins", "mode", "ok");
        _cleanup_json_ json_t *r = testd_request(fd, "submit", p);
        int64_t job = json_integer_value(json_object_get(json_object_get(r, "result"), "job"));

        ASSERT_TRUE(job > 0);
        return job;
}

static json_t *nobody_on_job(int fd, const char *method, int64_t job, bool all)
{
        _cleanup_json_ json_t *p = json_pack("{s:I}", "job", (json_int_t)job);

        if (all)
                json_object_set_new(p, "all", json_true());
        return testd_request(fd, method, p);
}

/* queued_runs_per_uid is 3 and each job has 2 runs (the queue is paused). */
static void nobody_retry_limit(struct testd *t)
{
        int fd = testd_session(t);
        int64_t a = nobody_submit(fd), b;
        _cleanup_json_ json_t *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;

        r1 = nobody_on_job(fd, "cancel", a, false);
        ASSERT_NOT_NULL(json_object_get(r1, "result"));
        b = nobody_submit(fd);
        /* 2 queued, and retry would add 2 more. */
        r2 = nobody_on_job(fd, "retry", a, true);
        ASSERT_STREQ(reply_error_code(r2), "limit-exceeded");
        ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(r2, "error"), "message")),
                        "queued_runs_per_uid");
        r3 = nobody_on_job(fd, "cancel", b, false);
        ASSERT_NOT_NULL(json_object_get(r3, "result"));
        r4 = nobody_on_job(fd, "retry", a, true);
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(r4, "result"), "requeued")), 2);
        close(fd);
}

TEST(retry_counts_against_the_queued_limit)
{
        const char *cfg = config_file("retry", "{\"limits\": {\"queued_runs_per_uid\": 3}}");
        _cleanup_free_ char *m = test_source_path("tests/fixtures/daemon/command.json");
        _cleanup_free_ char *marg = xasprintf("--matrix=%s", m);
        const char *const args[] = { "--config", cfg, "--socket-mode", "0666", marg, NULL };
        struct testd t;

        if (geteuid() != 0)
                test_skip("needs root to act as a second uid");
        testd_start(&t, "retry", args, NULL);
        {
                int fd = testd_session(&t);
                _cleanup_json_ json_t *r = testd_request(fd, "pause", NULL);
                check_reply_shape("pause", r);
                close(fd);
        }
        ASSERT_EQ(as_nobody(nobody_retry_limit, &t), 0);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

static void nobody_denied_socket(struct testd *t)
{
        /* Mode 0660 and another group: the socket itself keeps us out. */
        ASSERT_ERR(testd_connect(t), EACCES);
}

TEST(socket_mode_keeps_others_out)
{
        struct testd t;

        if (geteuid() != 0)
                test_skip("needs root to act as a second uid");
        testd_start(&t, "mode", NULL, NULL);
        ASSERT_EQ(as_nobody(nobody_denied_socket, &t), 0);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}

TEST(second_daemon_refused)
{
        struct testd t;
        _cleanup_free_ char *bin = testd_build_path("daemon/mxmatrixd");
        _cleanup_free_ char *sock = NULL, *state = NULL, *cmd = NULL;
        int status;

        testd_start(&t, "single", NULL, NULL);
        sock = xasprintf("--socket=%s", t.socket);
        state = xasprintf("--state-dir=%s/other", t.dir);
        cmd = xasprintf("%s --foreground %s %s 2>%s/second.log", bin, sock, state, t.dir);
        status = system(cmd);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
        {
                _cleanup_free_ char *p = xasprintf("%s/second.log", t.dir);
                _cleanup_free_ char *log = test_read_file(p, NULL);
                ASSERT_CONTAINS(log, "another daemon is already listening");
        }
        /* The first is unharmed and its socket still there. */
        close(testd_session(&t));
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}
