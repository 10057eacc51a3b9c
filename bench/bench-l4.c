/* SPDX-License-Identifier: MIT */
/*
 * L4's fidelity and cost: the benchmark engine (loadgen/bench.c) against mxsim
 * serving tokens on an exact schedule, at the GB10's decode rate. The GB10's
 * CPU cores also run vLLM's scheduler, so a busy harness would slow the
 * decode it measures: the goal is below 1 % of one core while measuring 60 t/s.
 *
 * Printed:
 *   1. our TTFT, ITL, tg and pp against the schedule mxsim logged
 *      (--mxsim-token-log; the same CLOCK_MONOTONIC on both sides), and
 *      against what mxsim really wrote when (its own lateness is not ours);
 *   2. the client's overhead per token: the delay from mxsim's write of a
 *      token to our stamp (loopback + libcurl + libevent + us, median and
 *      p99), and our CPU time (user + system) per token;
 *   3. our CPU time per second of the run at the schedule's decode rate.
 *
 * Usage: bench-l4 [DECODE_TPS [TG [RUNS]]]   (defaults 60 t/s, tg 128, 5 runs)
 * mxsim is ../tests/sim/mxsim next to this program, or $MXSIM.
 */
#include "bench-stats.h"
#include "bench.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <inttypes.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFILL_TPS 5000.0
#define FIRST_TOKEN_MS 5.0
#define PP 512

struct sreq {
        int64_t recv, prompt;
        char id[80];
        int64_t *sched, *sent;
        size_t n, cap;
};

static int free_port(void)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port;

        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &l) < 0)
                mx_die("cannot find a free port: %m");
        port = ntohs(a.sin_port);
        close(fd);
        return port;
}

static bool port_open(int port)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        return fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
}

static double cpu_s(void)
{
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
               (double)ru.ru_stime.tv_usec / 1e6;
}

static void done_cb(struct mx_bench *b, int error, const char *reason, void *userdata)
{
        if (error < 0)
                mx_die("benchmark failed: %s", strna(reason));
        event_base_loopbreak(userdata);
}

static size_t read_log(const char *path, struct sreq **ret)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        struct sreq *s = NULL;
        size_t n = 0, cap = 0;
        char *line = NULL;
        size_t len = 0;

        if (!f)
                mx_die("cannot read %s: %m", path);
        while (getline(&line, &len, f) > 0) {
                json_auto_t *o = json_loads(line, 0, NULL);
                const char *ev = json_string_value(json_object_get(o, "ev"));
                const char *id = json_string_value(json_object_get(o, "id"));

                if (streq_ptr(ev, "req")) {
                        MX_GROW(s, cap, n + 1);
                        s[n] = (struct sreq){.recv = json_integer_value(json_object_get(o, "recv_us")),
                                             .prompt = json_integer_value(json_object_get(o, "prompt_tokens"))};
                        snprintf(s[n].id, sizeof(s[n].id), "%s", id);
                        n++;
                } else if (streq_ptr(ev, "tok"))
                        for (size_t i = n; i-- > 0;)
                                if (streq(s[i].id, id)) {
                                        MX_GROW(s[i].sched, s[i].cap, s[i].n + 1);
                                        s[i].sent = xreallocarray(s[i].sent, s[i].cap, sizeof(int64_t));
                                        s[i].sched[s[i].n] = json_integer_value(json_object_get(o, "sched_us"));
                                        s[i].sent[s[i].n++] = json_integer_value(json_object_get(o, "sent_us"));
                                        break;
                                }
        }
        free(line);
        *ret = s;
        return n;
}

static void row(const char *metric, const struct mx_bstat *ours, const struct mx_bstat *sched,
                const struct mx_bstat *sent, const char *unit)
{
        printf("%-22s %12.3f %12.3f %12.3f %+10.3f %+8.3f %%   %s\n", metric, ours->p50, sched->p50, sent->p50,
               ours->p50 - sched->p50, sched->p50 != 0 ? (ours->p50 - sched->p50) / sched->p50 * 100 : 0, unit);
}

int main(int argc, char **argv)
{
        double decode = argc > 1 ? atof(argv[1]) : 60.0;
        int64_t tg = argc > 2 ? atoll(argv[2]) : 128;
        unsigned runs = argc > 3 ? (unsigned)atoi(argv[3]) : 5;
        _cleanup_free_ char *self = realpath("/proc/self/exe", NULL), *sim = NULL, *dir = NULL, *log = NULL;
        _cleanup_free_ char *lock = NULL, *url = NULL;
        char port_s[16], decode_s[32], prefill_s[32], first_s[32];
        struct event_base *base;
        struct mx_bench_config cfg;
        _cleanup_(mx_bench_freep) struct mx_bench *b = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_json_ json_t *doc = NULL;
        struct sreq *s = NULL;
        size_t n_s;
        int port;
        pid_t pid;
        double cpu0, cpu1;
        int64_t wall0, wall1, tokens = 0;
        json_t *rq;
        size_t i;
        double *v[9] = {};
        size_t nv[9] = {}, capv[9] = {};
        enum { TTFT, TTFT_S, TTFT_W, ITL, ITL_S, ITL_W, DELIV, TG, TG_S };

        if (decode <= 0 || tg < 2 || runs < 1)
                mx_die("usage: bench-l4 [DECODE_TPS [TG [RUNS]]]");
        sim = getenv("MXSIM") ? xstrdup(getenv("MXSIM")) : xasprintf("%s/../tests/sim/mxsim", dirname(self));
        dir = xstrdup("/tmp/bench-l4-XXXXXX");
        if (!mkdtemp(dir))
                mx_die("mkdtemp: %m");
        log = xasprintf("%s/tokens.jsonl", dir);
        lock = xasprintf("%s/gpu.lock", dir);
        port = free_port();
        snprintf(port_s, sizeof(port_s), "%d", port);
        snprintf(decode_s, sizeof(decode_s), "%g", decode);
        snprintf(prefill_s, sizeof(prefill_s), "%g", PREFILL_TPS);
        snprintf(first_s, sizeof(first_s), "%g", FIRST_TOKEN_MS);
        pid = fork();
        if (pid == 0) {
                setenv("MXSIM_LOAD_S", "0.1", 1);
                setenv("MXSIM_GPU_LOCK", lock, 1);
                if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
                        _exit(127);
                execl(sim, sim, "serve", "gpt-oss-120b", "--host", "127.0.0.1", "--port", port_s,
                      "--mxsim-decode-tps", decode_s, "--mxsim-prefill-tps", prefill_s, "--mxsim-first-token-ms",
                      first_s, "--mxsim-token-log", log, (char *)NULL);
                _exit(127);
        }
        for (int k = 0; !port_open(port); k++) {
                if (k > 3000 || waitpid(pid, NULL, WNOHANG) != 0)
                        mx_die("mxsim (%s) did not start", sim);
                usleep(10000);
        }

        url = xasprintf("http://127.0.0.1:%d", port);
        mx_bench_config_defaults(&cfg);
        cfg.url = url;
        cfg.pp[0] = PP;
        cfg.tg[0] = tg;
        cfg.n_tg = 1;
        cfg.n_depth = 1;
        cfg.runs = runs;
        cfg.warmup = 1;
        cfg.latency_mode = MX_BENCH_LATENCY_NONE;
        cfg.keep_requests = true;
        base = event_base_new();
        if (mx_bench_new(base, &cfg, &b, &err) < 0)
                mx_die("%s", err);
        cpu0 = cpu_s();
        wall0 = mx_now_mono_us();
        mx_bench_start(b, done_cb, NULL, base);
        event_base_dispatch(base);
        wall1 = mx_now_mono_us();
        cpu1 = cpu_s();
        doc = mx_bench_result_json(b);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);

        n_s = read_log(log, &s);
        json_array_foreach(json_object_get(doc, "requests"), i, rq) {
                int64_t t0 = json_integer_value(json_object_get(rq, "t0_us"));
                json_t *tev = json_object_get(rq, "text_events_us");
                struct sreq *m = NULL;

                for (size_t k = 0; k < n_s; k++)
                        if (s[k].recv >= t0 && (!m || s[k].recv < m->recv))
                                m = &s[k];
                if (!m || m->n != json_array_size(tev) || m->n < 2)
                        mx_die("request %zu does not match mxsim's log", i);
#define ADD(k, x)                                                                                           \
        do {                                                                                                \
                MX_GROW(v[k], capv[k], nv[k] + 1);                                                          \
                v[k][nv[k]++] = (x);                                                                        \
        } while (0)
#define AT(k) (t0 + json_integer_value(json_array_get(tev, k)))
                ADD(TTFT, (double)(AT(0) - t0) / 1000.0);
                ADD(TTFT_S, (double)(m->sched[0] - t0) / 1000.0);
                ADD(TTFT_W, (double)(m->sent[0] - t0) / 1000.0);
                for (size_t k = 0; k < m->n; k++) {
                        ADD(DELIV, (double)(AT(k) - m->sent[k]));
                        if (k == 0)
                                continue;
                        ADD(ITL, (double)(AT(k) - AT(k - 1)) / 1000.0);
                        ADD(ITL_S, (double)(m->sched[k] - m->sched[k - 1]) / 1000.0);
                        ADD(ITL_W, (double)(m->sent[k] - m->sent[k - 1]) / 1000.0);
                }
                ADD(TG, mx_bench_tg_tps((int64_t)m->n, AT(0), AT(m->n - 1)));
                ADD(TG_S, mx_bench_tg_tps((int64_t)m->n, m->sched[0], m->sched[m->n - 1]));
                tokens += json_integer_value(json_object_get(rq, "completion_tokens"));
        }
        {
                struct mx_bstat st[9], pp_ours, pp_sched, pp_sent, tg_sent;
                double ppv[3][64];
                size_t np = 0;

                for (int k = 0; k < 9; k++)
                        mx_bstat_compute(v[k], nv[k], &st[k]);
                for (size_t k = 0; k < nv[TTFT] && np < 64; k++, np++) {
                        ppv[0][np] = mx_bench_pp_tps(PP, v[TTFT][k]);
                        ppv[1][np] = mx_bench_pp_tps(PP, v[TTFT_S][k]);
                        ppv[2][np] = mx_bench_pp_tps(PP, v[TTFT_W][k]);
                }
                mx_bstat_compute(ppv[0], np, &pp_ours);
                mx_bstat_compute(ppv[1], np, &pp_sched);
                mx_bstat_compute(ppv[2], np, &pp_sent);
                tg_sent = st[TG_S];
                printf("bench-l4 (%s build): mxsim vLLM flavour, decode %g t/s, prefill %g t/s, first-token "
                       "delay %g ms;\npp%d tg%" PRId64 ", %u runs + 1 warm-up, latency mode none; medians over "
                       "requests (ITL: over every gap)\n\n",
                       MX_BUILD_TYPE, decode, PREFILL_TPS, FIRST_TOKEN_MS, PP, tg, runs);
                printf("%-22s %12s %12s %12s %10s %10s\n", "metric", "ours", "schedule", "sim wrote",
                       "ours-sched", "error");
                row("TTFT (ms)", &st[TTFT], &st[TTFT_S], &st[TTFT_W], "first text event - t0");
                row("ITL (ms)", &st[ITL], &st[ITL_S], &st[ITL_W], "gaps between text events");
                row("tg (t/s)", &st[TG], &st[TG_S], &tg_sent, "(N-1)/(last-first)");
                row("pp (t/s)", &pp_ours, &pp_sched, &pp_sent, "prompt tokens / ttft, PP tokens");
                printf("\nclient overhead per token: mxsim's write -> our stamp: median %.1f µs, p99 %.1f µs "
                       "(%zu tokens)\n",
                       st[DELIV].p50, st[DELIV].p99, st[DELIV].n);
                printf("client CPU (user+system) per token: %.1f µs over %" PRId64 " measured tokens "
                       "(the whole run, probes and prompt building included)\n",
                       (cpu1 - cpu0) * 1e6 / (double)MX_MAX(tokens, 1), tokens);
                printf("client CPU per second of the run: %.3f %% of one core (%.3f s CPU in %.1f s; goal < 1 %%)\n",
                       (cpu1 - cpu0) / ((double)(wall1 - wall0) / 1e6) * 100, cpu1 - cpu0,
                       (double)(wall1 - wall0) / 1e6);
        }
        for (size_t k = 0; k < n_s; k++) {
                free(s[k].sched);
                free(s[k].sent);
        }
        free(s);
        for (int k = 0; k < 9; k++)
                free(v[k]);
        unlink(log);
        unlink(lock);
        rmdir(dir);
        b = mx_bench_free(b);
        event_base_free(base);
        return 0;
}
