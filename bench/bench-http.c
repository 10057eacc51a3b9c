/* SPDX-License-Identifier: MIT */
/*
 * What an HTTP call on the daemon's loop costs. Probes are few (one /health a
 * second), so the figure that matters is not peak throughput but that a call
 * is cheap in CPU and adds little latency over loopback, and that many calls
 * at once (later: concurrent streamed benchmark requests) do not serialise.
 *
 * A child process serves GET /health (200, empty JSON object) with libevent's
 * evhttp on 127.0.0.1; the parent runs mx_http with C calls in flight, each
 * completion starting the next, N calls per C. Printed per C: requests per
 * second, median and 99th percentile latency (mx_http_start() to the done
 * callback), and the parent's CPU time (user + system) per request, which is
 * the client's cost on the loop. Both processes share the machine's cores.
 *
 * Usage: bench-http [N [C...]]   (defaults: 5000 calls; C = 1 8 64)
 */
#include "http.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

struct bench {
        struct event_base *base;
        struct mx_http *http;
        const char *url;
        size_t total, started, finished, failed;
        int64_t *latency_us;
};

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

static void health_cb(struct evhttp_request *req, void *userdata)
{
        struct evbuffer *b = evbuffer_new();

        evbuffer_add(b, "{}", 2);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply(req, 200, "OK", b);
        evbuffer_free(b);
}

/* The server process: serve fd until killed. */
_noreturn_ static void serve(int fd)
{
        struct event_base *base = event_base_new();
        struct evhttp *http = evhttp_new(base);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!base || !http || evhttp_accept_socket(http, fd) < 0)
                mx_die("cannot start the benchmark server");
        evhttp_set_gencb(http, health_cb, NULL);
        event_base_dispatch(base);
        _exit(0);
}

static void start_one(struct bench *b);

static void done_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct bench *b = userdata;

        b->latency_us[b->finished++] = mx_now_mono_us() - resp->t_start_mono_us;
        if (resp->error != 0 || resp->status != 200)
                b->failed++;
        if (b->started < b->total)
                start_one(b);
        else if (b->finished == b->total)
                event_base_loopbreak(b->base);
}

static void start_one(struct bench *b)
{
        _cleanup_free_ char *err = NULL;
        int r;

        r = mx_http_start(b->http, &(struct mx_http_request){ .method = "GET", .url = b->url }, done_cb, b,
                          NULL, &err);
        if (r < 0)
                mx_die("mx_http_start: %s", err);
        b->started++;
}

static int64_t cpu_us(void)
{
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
               ru.ru_stime.tv_usec;
}

static void run(struct event_base *base, const char *url, size_t n, size_t c)
{
        struct bench b = { .base = base, .url = url, .total = n };
        _cleanup_free_ char *err = NULL;
        int64_t t0, t1, cpu0, cpu1;

        b.latency_us = xcalloc(n, sizeof(int64_t));
        if (mx_http_new(base, &b.http, &err) < 0)
                mx_die("mx_http_new: %s", err);
        t0 = mx_now_mono_us();
        cpu0 = cpu_us();
        for (size_t i = 0; i < c && i < n; i++)
                start_one(&b);
        event_base_dispatch(base);
        t1 = mx_now_mono_us();
        cpu1 = cpu_us();
        qsort(b.latency_us, n, sizeof(int64_t), cmp_i64);
        printf("%11zu %8zu %10.0f %10" PRId64 " %10" PRId64 " %14.1f %7zu\n", c, n, n / ((t1 - t0) / 1e6),
               b.latency_us[n / 2], b.latency_us[n * 99 / 100], (double)(cpu1 - cpu0) / n, b.failed);
        mx_http_free(b.http);
        free(b.latency_us);
}

int main(int argc, char **argv)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000;
        static const size_t default_c[] = { 1, 8, 64 };
        _cleanup_free_ char *url = NULL;
        struct event_base *base;
        int fd, status;
        pid_t pid;

        if (n == 0)
                mx_die("usage: bench-http [N [C...]]");
        signal(SIGPIPE, SIG_IGN);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
                mx_die("cannot bind the benchmark server: %m");
        url = xasprintf("http://127.0.0.1:%d/health", ntohs(sa.sin_port));
        pid = fork();
        if (pid < 0)
                mx_die("fork: %m");
        if (pid == 0)
                serve(fd);
        close(fd);

        base = event_base_new();
        printf("mx_http on loopback, GET /health from an evhttp server in another process (%ld CPUs "
               "online)\n",
               sysconf(_SC_NPROCESSORS_ONLN));
        printf("%11s %8s %10s %10s %10s %14s %7s\n", "concurrency", "requests", "req/s", "p50 us", "p99 us",
               "client CPU us", "failed");
        if (argc > 2)
                for (int i = 2; i < argc; i++)
                        run(base, url, n, strtoul(argv[i], NULL, 10) ?: 1);
        else
                for (size_t i = 0; i < ELEMENTSOF(default_c); i++)
                        run(base, url, n, default_c[i]);
        event_base_free(base);
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        return 0;
}
