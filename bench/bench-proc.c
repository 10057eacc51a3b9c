/* SPDX-License-Identifier: MIT */
/*
 * What a /proc sweep and a stop cost. The stop scans /proc at every step and
 * whenever the members it waits on are gone, so the scan's cost decides whether
 * that is cheap enough to do on every exit; and a stop of a server that obeys
 * SIGTERM should take about as long as the server needs, not the grace period.
 *
 * For N in {0, 100, 500} tagged processes (one server: sh starting N sleeps):
 * the median and maximum time of proc_scan() over 30 runs, the processes on the
 * host, and the time proc_stop() with the default plan (SIGTERM, 30 s grace)
 * takes to verify the whole tree gone.
 *
 * Usage: bench-proc [N...]
 */
#include "proc.h"
#include "proc-reaper.h"
#include "proc-stop.h"

#include <dirent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>

extern char **environ;

#define SCAN_RUNS 30

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

static size_t count_processes(void)
{
        DIR *d = opendir("/proc");
        struct dirent *de;
        size_t n = 0;

        if (!d)
                return 0;
        while ((de = readdir(d)))
                n += de->d_name[0] >= '1' && de->d_name[0] <= '9';
        closedir(d);
        return n;
}

struct stop_outcome {
        bool done;
        bool clean;
        unsigned steps;
        int64_t elapsed_us;
};

static void stopped_cb(const struct proc_stop_result *res, void *userdata)
{
        struct stop_outcome *o = userdata;

        *o = (struct stop_outcome){ true, res->clean, res->steps_taken, res->elapsed_us };
}

/* Start one server that starts n sleeps and says "ready" when all are running. */
static int start_tree(const char *tag, int n, struct proc_info *ret)
{
        _cleanup_free_ char *script =
                xasprintf("i=0; while [ $i -lt %d ]; do sleep 1000 & i=$((i+1)); done; "
                          "echo ready; wait",
                          n);
        char *const argv[] = { "sh", "-c", script, NULL };
        _cleanup_free_ char *err = NULL;
        struct proc_spec spec = { .argv = argv, .env = environ, .tag = tag, .stderr_fd = -1 };
        struct pollfd p = { .events = POLLIN };
        char buf[8];
        int fds[2], r;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        spec.stdout_fd = fds[1];
        r = proc_spawn(&spec, ret, &err);
        close(fds[1]);
        if (r < 0) {
                fprintf(stderr, "bench-proc: %s\n", err);
                close(fds[0]);
                return r;
        }
        p.fd = fds[0];
        if (poll(&p, 1, 60000) <= 0 || read(fds[0], buf, sizeof(buf)) <= 0)
                r = -ETIMEDOUT;
        close(fds[0]);
        return r;
}

static int64_t scan_once(const char *tag, size_t *ret_n)
{
        struct proc_match m = { .tag = tag };
        _cleanup_free_ struct proc_entry *list = NULL;
        int64_t t0 = mx_now_mono_us();

        if (proc_scan(&m, &list, ret_n) < 0)
                mx_die("proc_scan failed");
        return mx_now_mono_us() - t0;
}

static void noop_exit(pid_t pid, int status, void *userdata)
{
}

static int bench_one(struct event_base *base, struct proc_reaper *reaper, int n)
{
        _cleanup_free_ char *tag = xasprintf("bench-%d-%d", (int)getpid(), n);
        struct stop_outcome o = { 0 };
        int64_t runs[SCAN_RUNS];
        struct proc_info info;
        size_t found = 0, host;
        int r;

        r = start_tree(tag, n, &info);
        if (r < 0)
                return r;
        (void)proc_reaper_watch(reaper, info.pid, noop_exit, NULL);
        for (int i = 0; i < SCAN_RUNS; i++)
                runs[i] = scan_once(tag, &found);
        qsort(runs, SCAN_RUNS, sizeof(runs[0]), cmp_i64);
        host = count_processes();
        r = proc_stop(reaper, NULL, &info, tag, stopped_cb, &o, NULL, NULL);
        if (r < 0)
                return r;
        while (!o.done)
                event_base_loop(base, EVLOOP_ONCE);
        printf("%9d %8zu %8zu %12.2f %12.2f %10.1f %6u %6s\n", n, found, host, runs[SCAN_RUNS / 2] / 1000.0,
               runs[SCAN_RUNS - 1] / 1000.0, o.elapsed_us / 1000.0, o.steps, o.clean ? "yes" : "NO");
        return 0;
}

int main(int argc, char **argv)
{
        int sizes[16] = { 0, 100, 500 }, n_sizes = 3;
        struct proc_reaper *reaper = NULL;
        struct event_base *base;

        if (argc > 1) {
                n_sizes = 0;
                for (int i = 1; i < argc && n_sizes < 16; i++) {
                        int64_t v;

                        if (mx_parse_int64(argv[i], 0, 5000, &v) < 0) {
                                fprintf(stderr, "bench-proc: '%s' is not a count in 0..5000\n", argv[i]);
                                return 2;
                        }
                        sizes[n_sizes++] = (int)v;
                }
        }
        if (proc_subreaper_enable() < 0 || !(base = event_base_new()) ||
            proc_reaper_new(base, &reaper) < 0) {
                fprintf(stderr, "bench-proc: cannot set up the reaper\n");
                return 1;
        }
        printf("# proc_scan over %d runs (ms); stop = proc_stop, default plan (SIGTERM, 30 s grace)\n",
               SCAN_RUNS);
        printf("%9s %8s %8s %12s %12s %10s %6s %6s\n", "tagged", "members", "host", "scan-median",
               "scan-max", "stop-ms", "steps", "clean");
        for (int i = 0; i < n_sizes; i++)
                if (bench_one(base, reaper, sizes[i]) < 0) {
                        fprintf(stderr, "bench-proc: run with %d processes failed\n", sizes[i]);
                        return 1;
                }
        proc_reaper_free(reaper);
        event_base_free(base);
        return 0;
}
