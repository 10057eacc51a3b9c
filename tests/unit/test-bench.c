/* SPDX-License-Identifier: MIT */
/*
 * The benchmark engine (loadgen/bench.c) against mxsim serving tokens on an
 * exact schedule (--mxsim-decode-tps and friends), a real process on
 * loopback. The sim logs every token's scheduled and sent time
 * (--mxsim-token-log); both clocks are CLOCK_MONOTONIC on this machine, so our
 * stamps and the sim's compare directly: TTFT, ITL, tg and pp must agree with
 * what the sim really sent within 1 % or 0.2 ms (issue 8), where a loaded
 * machine can only delay a reading by at most half a decode step (issue 14;
 * the tolerances below say which mistake each still catches).
 */
#include "test.h"

#include "bench-stats.h"
#include "bench.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define DECODE_TPS 100.0
#define PREFILL_TPS 5000.0
#define FIRST_TOKEN_MS 5.0
/* mxsim --mxsim-harmony's silent tokens (tests/sim/README.md "Harmony") */
#define SIM_HEADER 3
#define SIM_SWITCH 6
#define SIM_END 6

struct sim {
        pid_t pid;
        int port;
        char *log;
};

static int free_port(void)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof(a);
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(bind(fd, (struct sockaddr *)&a, sizeof(a)));
        ASSERT_OK(getsockname(fd, (struct sockaddr *)&a, &l));
        return ntohs(a.sin_port);
}

static bool port_open(int port)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        return fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
}

/* Start mxsim with a schedule; extra: more flags (NULL-terminated). */
static void sim_start(struct sim *s, const char *flavor, double jitter_ms, const char *const *extra)
{
        _cleanup_free_ char *bin = xasprintf("%s/tests/sim/mxsim", MX_BUILD_DIR);
        char port[16], decode[32], prefill[32], first[32], jitter[32];
        int64_t deadline;

        if (access(bin, X_OK) < 0)
                test_skip("mxsim is not built");
        s->port = free_port();
        s->log = xasprintf("%s/tokens-%d.jsonl", test_tmpdir(), s->port);
        snprintf(port, sizeof(port), "%d", s->port);
        snprintf(decode, sizeof(decode), "%g", DECODE_TPS);
        snprintf(prefill, sizeof(prefill), "%g", PREFILL_TPS);
        snprintf(first, sizeof(first), "%g", FIRST_TOKEN_MS);
        snprintf(jitter, sizeof(jitter), "%g", jitter_ms);
        s->pid = fork();
        ASSERT_TRUE(s->pid >= 0);
        if (s->pid == 0) {
                const char *argv[32] = {bin, "serve", "gpt-oss-120b", "--host", "127.0.0.1", "--port", port,
                                        "--flavor", flavor, "--mxsim-decode-tps", decode, "--mxsim-prefill-tps",
                                        prefill, "--mxsim-first-token-ms", first, "--mxsim-jitter-ms", jitter,
                                        "--mxsim-token-log", s->log};
                size_t n = 19;
                _cleanup_free_ char *lock = xasprintf("%s/gpu-%d.lock", test_tmpdir(), s->port);

                for (; extra && *extra && n < 30; extra++)
                        argv[n++] = *extra;
                /* a failed assertion ends the test without sim_stop(): the sim goes with it */
                prctl(PR_SET_PDEATHSIG, SIGTERM);
                setenv("MXSIM_LOAD_S", "0.1", 1);
                setenv("MXSIM_GPU_LOCK", lock, 1);
                unsetenv("MXSIM_FAULTS");
                if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
                        _exit(127);
                execv(bin, (char **)argv);
                _exit(127);
        }
        deadline = mx_now_mono_us() + 60 * 1000000LL;
        while (!port_open(s->port)) {
                ASSERT_TRUE(mx_now_mono_us() < deadline);
                ASSERT_EQ(waitpid(s->pid, NULL, WNOHANG), 0);
                usleep(20000);
        }
        /* llama-server and SGLang listen while loading: wait until the models list answers 200 */
        usleep(flavor[0] == 'v' ? 100000 : 600000);
}

static void sim_stop(struct sim *s)
{
        kill(s->pid, SIGTERM);
        ASSERT_EQ(waitpid(s->pid, NULL, 0), s->pid);
        free(s->log);
}

struct done {
        struct event_base *base;
        int error;
        char *reason;
};

static void done_cb(struct mx_bench *b, int error, const char *reason, void *userdata)
{
        struct done *d = userdata;

        d->error = error;
        d->reason = reason ? xstrdup(reason) : NULL;
        event_base_loopbreak(d->base);
}

/* Run a benchmark to its end and return its result document. */
static json_t *run_bench(struct mx_bench_config *cfg, unsigned *ret_failed)
{
        struct done d = {.base = event_base_new()};
        _cleanup_(mx_bench_freep) struct mx_bench *b = NULL;
        _cleanup_free_ char *err = NULL;
        json_t *doc;

        ASSERT_NOT_NULL(d.base);
        ASSERT_OK(mx_bench_new(d.base, cfg, &b, &err));
        ASSERT_OK(mx_bench_start(b, done_cb, NULL, &d));
        ASSERT_OK(event_base_dispatch(d.base));
        if (d.error < 0)
                test_fail(__FILE__, __LINE__, "benchmark failed: %s", strna(d.reason));
        doc = mx_bench_result_json(b);
        mx_bench_counts(b, NULL, ret_failed);
        b = mx_bench_free(b);
        event_base_free(d.base);
        free(d.reason);
        return doc;
}

/* The sim's token log: per request, its receipt and every token's schedule. */
struct sreq {
        char id[80];
        int64_t recv, prompt, max_tokens;
        int64_t sched[512], sent[512];
        int64_t silent[512]; /* --mxsim-harmony: tokens of the step that sent no text */
        bool failed;         /* its "end" says "error" */
        size_t n;
};

static size_t read_log(const char *path, struct sreq *out, size_t max)
{
        _cleanup_free_ char *text = test_read_file(path, NULL);
        size_t n = 0;

        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                json_auto_t *o = json_loads(line, 0, NULL);
                const char *ev = json_string_value(json_object_get(o, "ev")), *id;

                ASSERT_NOT_NULL(o);
                id = json_string_value(json_object_get(o, "id"));
                if (streq(ev, "req")) {
                        ASSERT_TRUE(n < max);
                        out[n] = (struct sreq){};
                        snprintf(out[n].id, sizeof(out[n].id), "%s", id);
                        out[n].recv = json_integer_value(json_object_get(o, "recv_us"));
                        out[n].prompt = json_integer_value(json_object_get(o, "prompt_tokens"));
                        out[n].max_tokens = json_integer_value(json_object_get(o, "max_tokens"));
                        n++;
                } else if (streq(ev, "tok")) {
                        for (size_t i = n; i-- > 0;)
                                if (streq(out[i].id, id)) {
                                        ASSERT_TRUE(out[i].n < ELEMENTSOF(out[i].sched));
                                        out[i].sched[out[i].n] = json_integer_value(json_object_get(o, "sched_us"));
                                        out[i].silent[out[i].n] = json_integer_value(json_object_get(o, "silent"));
                                        out[i].sent[out[i].n++] = json_integer_value(json_object_get(o, "sent_us"));
                                        break;
                                }
                } else if (streq(ev, "end")) {
                        for (size_t i = n; i-- > 0;)
                                if (streq(out[i].id, id)) {
                                        out[i].failed = streq_ptr(json_string_value(json_object_get(o, "finish")), "error");
                                        break;
                                }
                }
        }
        return n;
}

/* The sim request our request became: the first received after our t0. */
static struct sreq *match(struct sreq *s, size_t n, int64_t t0)
{
        struct sreq *best = NULL;

        for (size_t i = 0; i < n; i++)
                if (s[i].recv >= t0 && (!best || s[i].recv < best->recv))
                        best = &s[i];
        ASSERT_NOT_NULL(best);
        return best;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* The p-th percentile (linear interpolation), computed here: a truth must not come from the code under test. */
static double quantile(const double *v, size_t n, double p)
{
        _cleanup_free_ double *s = xreallocarray(NULL, n, sizeof(double));
        double rank;
        size_t i;

        ASSERT_TRUE(n > 0);
        memcpy(s, v, n * sizeof(double));
        qsort(s, n, sizeof(double), cmp_double);
        rank = p / 100 * (double)(n - 1);
        i = (size_t)rank;
        return i + 1 >= n ? s[n - 1] : s[i] + (rank - (double)i) * (s[i + 1] - s[i]);
}

static double median(double *v, size_t n)
{
        return quantile(v, n, 50);
}

static double minimum(const double *v, size_t n)
{
        return quantile(v, n, 0);
}

static double mean(const double *v, size_t n)
{
        double sum = 0;

        ASSERT_TRUE(n > 0);
        for (size_t i = 0; i < n; i++)
                sum += v[i];
        return sum / (double)n;
}

/*
 * The tolerances below are the optimized build's (issue 8: 1 % or 0.2 ms). Under AddressSanitizer every
 * function of the client and of mxsim (built with it too) runs several times slower, so the sim's own
 * lateness and our stamping cost grow: there the same invariants are held to SLACK times the tolerance
 * (the fidelity figures are the optimized tree's; the sanitizer tree checks memory, not microseconds).
 *
 * The truth is what the sim really did (its token log's sent_us: when it handed each event to its HTTP
 * layer, on our CLOCK_MONOTONIC), never its schedule: on a loaded machine (ctest -j2 on 2 cores) the sim
 * wakes late, and a test that held us to its schedule measured the machine. What lies between the sim's
 * write and our stamp (loopback, our own wake-up on a loaded machine) makes a reading later, never earlier.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SLACK 4.0
#else
#define SLACK 1.0
#endif
/* one decode step: the smallest mistake of a token (a stamp at the wrong event, a gap per chunk) */
#define STEP_MS (1000.0 / DECODE_TPS)

/*
 * |measured - truth| within 1 % of truth or 0.2 ms (issue 8), ms values; rates (tg t/s) within 2 %: a token
 * miscounted (N for N - 1) or a span a token off is 1/31 = 3.2 % (Harmony's 1/28 = 3.6 %), and a client woken
 * late for the last token on a loaded machine moved a mean of five by 1.3 % (3 busy loops beside it, seen).
 */
/* |measured - truth| within pct % of truth or abs_ms (0 for rates), times SLACK */
#define ASSERT_FAITHFUL(measured, truth, pct, abs_ms)                                                       \
        do {                                                                                                \
                double _m = (measured), _t = (truth);                                                       \
                if (!(fabs(_m - _t) <= SLACK * MX_MAX((pct) / 100.0 * fabs(_t), (abs_ms))))                 \
                        test_fail(__FILE__, __LINE__, "%s = %.4f, the sim's real times say %.4f", #measured, \
                                  _m, _t);                                                                  \
        } while (0)
#define ASSERT_FAITHFUL_MS(measured, truth) ASSERT_FAITHFUL(measured, truth, 1, 0.2)
#define ASSERT_FAITHFUL_RATE(measured, truth) ASSERT_FAITHFUL(measured, truth, 2, 0)
/*
 * A time from our t0 against the sim's real one: not earlier than 0.2 ms before it (a stamp before the sim
 * wrote is a bug), later by 1 % or 0.2 ms, or, on a loaded machine, by up to half a decode step: a mean of
 * five requests where one woke late moves that far, and a stamp at the wrong event is a whole step late.
 */
#define ASSERT_LATER_WITHIN(measured, truth)                                                                \
        do {                                                                                                \
                double _m = (measured), _t = (truth);                                                       \
                double _up = MX_MAX(SLACK * MX_MAX(0.01 * fabs(_t), 0.2), STEP_MS / 2);                     \
                if (!(_m >= _t - SLACK * 0.2 && _m <= _t + _up))                                            \
                        test_fail(__FILE__, __LINE__, "%s = %.4f, the sim sent at %.4f (up to %.3f ms later)", \
                                  #measured, _m, _t, _up);                                                  \
        } while (0)

/* tg as the definitions say it, written out here: (N - 1) tokens over the first to the last token's time */
static double tg_truth(int64_t n_tokens, int64_t t_first_us, int64_t t_last_us)
{
        ASSERT_TRUE(n_tokens > 1 && t_last_us > t_first_us);
        return (double)(n_tokens - 1) * 1e6 / (double)(t_last_us - t_first_us);
}

static json_t *row(json_t *doc, const char *name)
{
        json_t *r;
        size_t i;

        json_array_foreach(json_object_get(doc, "tests"), i, r)
                if (streq_ptr(json_string_value(json_object_get(r, "test")), name))
                        return r;
        test_fail(__FILE__, __LINE__, "no row '%s'", name);
}

static double row_mean(json_t *doc, const char *name, const char *metric)
{
        return json_number_value(json_object_get(json_object_get(row(doc, name), metric), "mean"));
}

/*
 * Our first-token stamps against the sim's writes of those tokens, ms (one per measured request): none before
 * the write; the least delayed within 0.2 ms (our own cost: a stamp taken after parsing or on a timer adds
 * to every request, where a loaded machine's late wake-ups add to some; this is issue 8's figure); the median
 * within half a decode step (a stamp at another event, a token later, is a whole step late).
 */
static void check_first_stamps(const double *err, size_t n)
{
        fprintf(stderr, "first token, our stamp after the sim's write: min %.3f ms, median %.3f ms\n",
                minimum(err, n), quantile(err, n, 50));
        if (!(minimum(err, n) >= 0))
                test_fail(__FILE__, __LINE__, "a first-token stamp %.3f ms before the sim wrote it", minimum(err, n));
        if (!(minimum(err, n) <= SLACK * 0.2))
                test_fail(__FILE__, __LINE__, "every first-token stamp is %.3f ms or more after the sim's write",
                          minimum(err, n));
        if (!(quantile(err, n, 50) <= STEP_MS / 2))
                test_fail(__FILE__, __LINE__, "the median first-token stamp is %.3f ms after the sim's write",
                          quantile(err, n, 50));
}

/* Check every measured request of doc against what the sim really sent (its token log). */
static void check_fidelity(json_t *doc, const char *log, double jitter_ms)
{
        static struct sreq sim[256];
        size_t n_sim = read_log(log, sim, ELEMENTSOF(sim)), i, n = 0, n_gap = 0;
        json_t *rq;
        double ttft_sched[64], client_err[64], gap_err[2048], sent_gap[2048], tg_true[2][64], ppt_true[2][64];
        double tpot_true[64];
        size_t n_tg[2] = {}, n_pp[2] = {};

        ASSERT_TRUE(n_sim > 0);
        json_array_foreach(json_object_get(doc, "requests"), i, rq) {
                int64_t t0 = json_integer_value(json_object_get(rq, "t0_us"));
                struct sreq *s = match(sim, n_sim, t0);
                json_t *tev = json_object_get(rq, "text_events_us");
                int64_t tok1 = t0 + json_integer_value(json_object_get(rq, "tok1_us"));
                int d = streq(json_string_value(json_object_get(rq, "test")), "pp256 tg32") ? 0 : 1;

                ASSERT_EQ(json_integer_value(json_object_get(rq, "completion_tokens")), 32);
                ASSERT_EQ((int64_t)s->n, 32); /* one token per step: no speculative decoding */
                ASSERT_EQ(json_array_size(tev), s->n);
                ASSERT_EQ(json_integer_value(json_object_get(rq, "prompt_tokens")), s->prompt);
                /* the schedule itself: first token at arrival + delay + prompt / prefill rate (+ jitter) */
                {
                        double due = (double)s->recv + FIRST_TOKEN_MS * 1000 + (double)s->prompt * 1e6 / PREFILL_TPS;
                        if (!((double)s->sched[0] >= due - 2 && (double)s->sched[0] <= due + jitter_ms * 1000 + 2))
                                test_fail(__FILE__, __LINE__, "first token due %.0f, scheduled %" PRId64, due, s->sched[0]);
                }
                /* how far the whole chain (the sim's lateness and ours) was off the schedule: shown, not held */
                ttft_sched[n] = (double)(tok1 - s->sched[0]) / 1000.0;
                /* TTFT: our first-token stamp against the sim's write of it */
                client_err[n] = (double)(tok1 - s->sent[0]) / 1000.0;
                for (size_t k = 1; k < s->n; k++) {
                        double ours = (double)(json_integer_value(json_array_get(tev, k)) -
                                               json_integer_value(json_array_get(tev, k - 1))) / 1000.0;
                        double theirs = (double)(s->sent[k] - s->sent[k - 1]) / 1000.0;
                        ASSERT_TRUE(n_gap < ELEMENTSOF(gap_err));
                        sent_gap[n_gap] = theirs;
                        gap_err[n_gap++] = fabs(ours - theirs);
                }
                tg_true[d][n_tg[d]++] = tg_truth((int64_t)s->n, s->sent[0], s->sent[s->n - 1]);
                tpot_true[n] = (double)(s->sent[s->n - 1] - s->sent[0]) / 1000.0 / (double)(s->n - 1);
                /* latency mode none: est_ppt = ttfr, the first event's time after t0 (the token's, in one chunk) */
                ppt_true[d][n_pp[d]++] = (double)(s->sent[0] - t0) / 1000.0;
                /* (a sim more than a step behind moves its timeline on: slower, never faster) */
                if (jitter_ms == 0)
                        ASSERT_TRUE(tg_truth((int64_t)s->n, s->sched[0], s->sched[s->n - 1]) <= DECODE_TPS * 1.01);
                n++;
        }
        ASSERT_EQ(n, 10); /* 2 tests x 5 runs, warm-ups not kept */
        fprintf(stderr, "TTFT against the schedule: median %.3f ms (shown only: the sim's lateness is the machine's); "
                        "ITL error against the sim's writes: median %.3f ms\n",
                median(ttft_sched, n), median(gap_err, n_gap));
        check_first_stamps(client_err, n);
        /*
         * ITL: each gap between our stamps against the gap between the sim's writes, the median within 0.2 ms
         * (what it catches: stamps of a coarse clock, or one stamp for the events of a read, are off by
         * 0.3 ms to a step in most gaps; a late wake-up lengthens one gap and shortens the next).
         */
        ASSERT_TRUE(median(gap_err, n_gap) <= SLACK * 0.2);
        for (int d = 0; d < 2; d++) {
                const char *tgname = d == 0 ? "tg32" : "tg32 @ d512";
                const char *ppname = d == 0 ? "pp256" : "pp256 @ d512";
                double prompt = d == 0 ? 256 : 768;

                /* tg against the sim's real rate (ASSERT_FAITHFUL_RATE says what its 2 % catches) */
                ASSERT_FAITHFUL_RATE(row_mean(doc, tgname, "tps"), mean(tg_true[d], n_tg[d]));
                /* pp: its time (est_ppt) from t0 to the sim's first write, and the rate from the same time */
                ASSERT_LATER_WITHIN(row_mean(doc, ppname, "est_ppt_ms"), mean(ppt_true[d], n_pp[d]));
                ASSERT_LATER_WITHIN(prompt * 1000.0 / row_mean(doc, ppname, "tps"), mean(ppt_true[d], n_pp[d]));
        }
        if (jitter_ms == 0) {
                json_t *sv = json_array_get(json_object_get(doc, "serving"), 0);
                /* pooled ITL median: the median of the sim's gaps (one decode step, as it really went) */
                ASSERT_FAITHFUL_MS(json_number_value(json_object_get(json_object_get(sv, "itl_ms"), "p50")),
                                   median(sent_gap, n_gap));
                /* TPOT: the sim's span from the first to the last token over its N - 1 gaps */
                ASSERT_FAITHFUL_MS(json_number_value(json_object_get(json_object_get(sv, "tpot_ms"), "mean")),
                                   mean(tpot_true, n));
        }
}

static void config(struct mx_bench_config *cfg, int port)
{
        static char url[64];

        mx_bench_config_defaults(cfg);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
        cfg->url = url;
        cfg->pp[0] = 256;
        cfg->tg[0] = 32;
        cfg->n_tg = 1;
        cfg->depth[1] = 512;
        cfg->n_depth = 2;
        cfg->runs = 5;
        cfg->warmup = 1;
        cfg->latency_mode = MX_BENCH_LATENCY_NONE;
        cfg->keep_requests = true;
        cfg->timeout_ms = 60000;
}

static void fidelity(const char *flavor, double jitter_ms)
{
        struct sim s;
        struct mx_bench_config cfg;
        _cleanup_json_ json_t *doc = NULL;
        unsigned failed;

        sim_start(&s, flavor, jitter_ms, NULL);
        config(&cfg, s.port);
        doc = run_bench(&cfg, &failed);
        ASSERT_EQ(failed, 0);
        ASSERT_EQ(json_integer_value(json_object_get(doc, "measured")), 10);
        /* prompts of exact length: usage.prompt_tokens = depth + pp */
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "pp256"), "prompt_tokens_min")), 256);
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "pp256"), "prompt_tokens_max")), 256);
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "pp256 @ d512"), "prompt_tokens_min")), 768);
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "pp256 @ d512"), "prompt_tokens_max")), 768);
        check_fidelity(doc, s.log, jitter_ms);
        sim_stop(&s);
}

TEST(fidelity_vllm)
{
        fidelity("vllm", 0);
}

TEST(fidelity_vllm_jitter)
{
        fidelity("vllm", 3.0);
}

TEST(fidelity_llama_server)
{
        fidelity("llama-server", 0);
}

/*
 * gpt-oss as vLLM streams it (mxsim --mxsim-harmony): of a chat answer's 32 tokens, 3 header tokens, 6 at the
 * channel switch and the last 6 send no text (bench's default reasoning: 12 tokens, then 5 of content), yet
 * usage counts them as they happen. tg and the per-token ITL must give every token the time in which the sim
 * generated it: tg = (tokens after the first text) / (last token - first text), one decode step apart.
 */
static void check_harmony(json_t *doc, const char *log)
{
        static struct sreq sim[256];
        size_t n_sim = read_log(log, sim, ELEMENTSOF(sim)), i, n = 0;
        double tg_true[2][64], tok1_err[64], switch_err[64], step_gap[2048], span_ms = 0;
        size_t n_tg[2] = {}, n_step = 0;
        json_t *rq, *sv;

        json_array_foreach(json_object_get(doc, "requests"), i, rq) {
                int64_t t0 = json_integer_value(json_object_get(rq, "t0_us"));
                struct sreq *s = match(sim, n_sim, t0);
                int d = streq(json_string_value(json_object_get(rq, "test")), "pp256 tg32") ? 0 : 1;
                int64_t silent = 0, first_text = -1;

                ASSERT_EQ(json_integer_value(json_object_get(rq, "completion_tokens")), 32);
                ASSERT_EQ((int64_t)s->n, 32);
                ASSERT_FALSE(s->failed);
                for (size_t k = 0; k < s->n; k++) {
                        silent += s->silent[k];
                        if (first_text < 0 && s->silent[k] == 0)
                                first_text = (int64_t)k;
                }
                /* the layout the test is about: silent at the start, mid-stream and at the end */
                ASSERT_EQ(silent, SIM_HEADER + SIM_SWITCH + SIM_END);
                ASSERT_EQ(first_text, SIM_HEADER);
                ASSERT_EQ(s->silent[SIM_HEADER + 12], 1);
                ASSERT_EQ(s->silent[s->n - 1], 1);
                ASSERT_EQ(json_array_size(json_object_get(rq, "text_events_us")), 32 - silent);
                /* tg's N: the tokens from the first text on, from the running counts */
                ASSERT_EQ(json_integer_value(json_object_get(rq, "decode_tokens")), 32 - SIM_HEADER);
                ASSERT_STREQ(json_string_value(json_object_get(rq, "tokens_counted_from")),
                             "running counts (usage.completion_tokens)");
                /* the first text is the sim's first non-silent step, as sent */
                tok1_err[n] = (double)(t0 + json_integer_value(json_object_get(rq, "tok1_us")) - s->sent[first_text]) /
                              1000.0;
                /*
                 * The truth is what the sim did (its writes), not the schedule, which a loaded machine makes it
                 * miss; on the schedule the same N over the same tokens is one step per token exactly, where
                 * usage.completion_tokens over the text-bearing events' span (tokens 4 to 26, 22 steps) would
                 * say 31 / 0.22 s = 141 t/s.
                 */
                tg_true[d][n_tg[d]++] = tg_truth((int64_t)s->n - first_text, s->sent[first_text], s->sent[s->n - 1]);
                /* (a sim more than a step behind moves its timeline on: slower, never faster) */
                ASSERT_TRUE(tg_truth((int64_t)s->n - first_text, s->sched[first_text], s->sched[s->n - 1]) <=
                            DECODE_TPS * 1.01);
                span_ms += (double)(s->sent[s->n - 1] - s->sent[first_text]) / 1000.0;
                /* the sim's steps from the first text on, as it really went (a silent step is logged too) */
                for (int64_t k = first_text + 1; k < (int64_t)s->n; k++) {
                        ASSERT_TRUE(n_step < ELEMENTSOF(step_gap));
                        step_gap[n_step++] = (double)(s->sent[k] - s->sent[k - 1]) / 1000.0;
                }
                /*
                 * Per chunk, the chunk after the switch holds its 6 silent tokens' time and its own (7 steps):
                 * the request's longest gap between events, against the sim's writes of the two chunks.
                 */
                {
                        json_t *ev = json_object_get(rq, "events_us");
                        int64_t gap = 0, sw = SIM_HEADER + 12 + SIM_SWITCH;

                        for (size_t k = 1; k < json_array_size(ev); k++)
                                gap = MX_MAX(gap, json_integer_value(json_array_get(ev, k)) -
                                                          json_integer_value(json_array_get(ev, k - 1)));
                        ASSERT_TRUE(s->sched[sw] - s->sched[sw - SIM_SWITCH - 1] >=
                                    (int64_t)((SIM_SWITCH + 1) * 1e6 / DECODE_TPS));
                        switch_err[n] = fabs((double)(gap - (s->sent[sw] - s->sent[sw - SIM_SWITCH - 1])) / 1000.0);
                }
                n++;
        }
        ASSERT_EQ(n, 10);
        check_first_stamps(tok1_err, n);
        /*
         * The switch's gap within 0.2 ms of the sim's, the median request (what it catches: a gap per chunk
         * without the silent tokens' time is 6 steps short; a late wake-up moves one request's gap)
         */
        ASSERT_TRUE(median(switch_err, n) <= SLACK * 0.2);
        for (int d = 0; d < 2; d++) {
                const char *tgname = d == 0 ? "tg32" : "tg32 @ d512";

                /* the text-bearing span above says 141 t/s; a token miscounted is 1/28 = 3.6 % */
                ASSERT_FAITHFUL_RATE(row_mean(doc, tgname, "tps"), mean(tg_true[d], n_tg[d]));
                ASSERT_STREQ(json_string_value(json_object_get(row(doc, tgname), "tokens_counted_from")),
                             "running counts (usage.completion_tokens)");
        }
        sv = json_array_get(json_object_get(doc, "serving"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(sv, "itl_from")), "running counts (per token)");
        /* per token: the median gap is the sim's median step; the mean is its decode spans over their tokens */
        ASSERT_FAITHFUL_MS(json_number_value(json_object_get(json_object_get(sv, "itl_ms"), "p50")),
                           median(step_gap, n_step));
        ASSERT_FAITHFUL_MS(json_number_value(json_object_get(json_object_get(sv, "itl_ms"), "mean")),
                           span_ms / (double)(n * (32 - SIM_HEADER - 1)));
}

TEST(fidelity_vllm_harmony_silent_tokens)
{
        const char *const extra[] = {"--mxsim-harmony", NULL};
        struct sim s;
        struct mx_bench_config cfg;
        _cleanup_json_ json_t *doc = NULL;
        unsigned failed;

        sim_start(&s, "vllm", 0, extra);
        config(&cfg, s.port);
        doc = run_bench(&cfg, &failed);
        ASSERT_EQ(failed, 0);
        ASSERT_EQ(json_integer_value(json_object_get(doc, "measured")), 10);
        check_harmony(doc, s.log);
        sim_stop(&s);
}

/* vllm#50690: the model ends its turn at token 20 of 32; the bench's min_tokens keeps it from doing so. */
TEST(harmony_ignore_eos_failure_avoided)
{
        const char *const extra[] = {"--mxsim-harmony", "--mxsim-eos-at", "20", NULL};
        static struct sreq sim[64];
        struct sim s;
        struct mx_bench_config cfg;
        _cleanup_json_ json_t *doc = NULL;
        unsigned failed;
        size_t n_sim, n_tg = 0;

        sim_start(&s, "vllm", 0, extra);
        config(&cfg, s.port);
        cfg.n_depth = 1;
        cfg.runs = 3;
        doc = run_bench(&cfg, &failed);
        ASSERT_EQ(failed, 0);
        ASSERT_EQ(json_integer_value(json_object_get(doc, "failed_known_issue")), 0);
        n_sim = read_log(s.log, sim, ELEMENTSOF(sim));
        for (size_t i = 0; i < n_sim; i++) {
                if (sim[i].max_tokens != 32)
                        continue; /* the bench's latency requests */
                ASSERT_FALSE(sim[i].failed);
                ASSERT_EQ((int64_t)sim[i].n, 32);
                n_tg++;
        }
        ASSERT_EQ(n_tg, 4); /* a warm-up and 3 runs */
        sim_stop(&s);
}

/* ... and without min_tokens every request fails, named as the server's known issue, not averaged away. */
TEST(harmony_ignore_eos_failure_named)
{
        const char *const extra[] = {"--mxsim-harmony", "--mxsim-eos-at", "20", NULL};
        static struct sreq sim[64];
        struct sim s;
        struct mx_bench_config cfg;
        _cleanup_json_ json_t *doc = NULL;
        unsigned failed;
        json_t *f;
        size_t n_sim, n_tg = 0;

        sim_start(&s, "vllm", 0, extra);
        config(&cfg, s.port);
        cfg.n_depth = 1;
        cfg.runs = 3;
        cfg.ignore_eos_only = true;
        doc = run_bench(&cfg, &failed);
        ASSERT_EQ(failed, 3);
        ASSERT_EQ(json_integer_value(json_object_get(doc, "failed_known_issue")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "tg32"), "failed_known_issue")), 3);
        f = json_array_get(json_object_get(doc, "failures"), 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(f, "known_issue")), "vllm#50690");
        ASSERT_CONTAINS(json_string_value(json_object_get(f, "error")), "server known issue vllm#50690");
        ASSERT_CONTAINS(json_string_value(json_object_get(f, "error")),
                        "Unexpected token 200002 while expecting start token 200006");
        ASSERT_TRUE(json_is_null(json_object_get(json_object_get(row(doc, "tg32"), "tps"), "mean")));
        /* the sim failed them: after <|return|> (token 21) on the next, which is logged as no step */
        n_sim = read_log(s.log, sim, ELEMENTSOF(sim));
        for (size_t i = 0; i < n_sim; i++) {
                if (sim[i].max_tokens != 32)
                        continue; /* the bench's latency requests */
                ASSERT_TRUE(sim[i].failed);
                ASSERT_EQ((int64_t)sim[i].n, 21);
                n_tg++;
        }
        ASSERT_EQ(n_tg, 4); /* a warm-up and 3 runs */
        sim_stop(&s);
}

TEST(failures_counted_not_dropped)
{
        const char *const extra[] = {"--mxsim-fault", "null-content", NULL};
        struct sim s;
        struct mx_bench_config cfg;
        _cleanup_json_ json_t *doc = NULL;
        unsigned failed;
        json_t *f;

        sim_start(&s, "vllm", 0, extra);
        config(&cfg, s.port);
        cfg.n_depth = 1;
        cfg.runs = 3;
        doc = run_bench(&cfg, &failed);
        ASSERT_EQ(failed, 3);
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "pp256"), "failed")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "pp256"), "requests")), 3);
        f = json_object_get(doc, "failures");
        ASSERT_EQ(json_array_size(f), 3);
        ASSERT_CONTAINS(json_string_value(json_object_get(json_array_get(f, 0), "error")), "no event carried text");
        /* no number is made from failed requests */
        ASSERT_TRUE(json_is_null(json_object_get(json_object_get(row(doc, "tg32"), "tps"), "mean")));
        sim_stop(&s);
}

/*
 * One pp row per (pp, depth): prefill does not depend on tg, so the tests that differ only in tg pool their
 * requests into one row (it used to repeat under one name, once per tg, and L5 paired the wrong rows).
 */
TEST(one_pp_row_per_pp_and_depth)
{
        struct sim s;
        struct mx_bench_config cfg;
        _cleanup_json_ json_t *doc = NULL;
        unsigned failed, n_pp = 0, n_tg = 0;
        json_t *r, *pp;
        size_t i;

        sim_start(&s, "llama-server", 0, NULL);
        config(&cfg, s.port);
        cfg.tg[0] = 8;
        cfg.tg[1] = 16;
        cfg.n_tg = 2;
        cfg.n_depth = 1;
        cfg.runs = 2;
        cfg.warmup = 0;
        doc = run_bench(&cfg, &failed);
        ASSERT_EQ(failed, 0);
        json_array_foreach(json_object_get(doc, "tests"), i, r) {
                if (streq_ptr(json_string_value(json_object_get(r, "kind")), "pp"))
                        n_pp++;
                else
                        n_tg++;
        }
        ASSERT_EQ(n_pp, 1u);
        ASSERT_EQ(n_tg, 2u);
        pp = row(doc, "pp256");
        ASSERT_EQ(json_integer_value(json_object_get(pp, "requests")), 4);
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(pp, "tps"), "values")), 4);
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(pp, "tg_pooled"), 1)), 16);
        ASSERT_EQ(json_integer_value(json_object_get(pp, "prompt_tokens_min")), 256);
        ASSERT_STREQ(json_string_value(json_object_get(pp, "prompt_tokens_from")), "usage");
        ASSERT_EQ(json_integer_value(json_object_get(row(doc, "tg16"), "requests")), 2);
        sim_stop(&s);
}

/*
 * A server that sends prompt_ms without prompt_n on every second request (mxsim timings-no-prompt-n=2): the
 * pp row's server_pp_tps and preparation_ms are both means over the requests that reported the pair, and
 * the row says how many that is and how many reported half of it; the tg row is untouched.
 */
TEST(server_figures_rest_on_the_same_requests)
{
        const char *const extra[] = {"--mxsim-fault", "timings-no-prompt-n=2", NULL};
        struct sim s;
        struct mx_bench_config cfg;
        _cleanup_json_ json_t *doc = NULL;
        double tps[16], prep[16];
        struct mx_bstat st_tps, st_prep;
        unsigned failed;
        size_t i, k = 0, half = 0;
        json_t *rq, *pp, *tg;

        sim_start(&s, "llama-server", 0, extra);
        config(&cfg, s.port);
        cfg.n_depth = 1;
        cfg.runs = 6;
        cfg.warmup = 0;
        doc = run_bench(&cfg, &failed);
        ASSERT_EQ(failed, 0);
        /* the truth from what the server sent per request: the pair, or prompt_ms alone */
        json_array_foreach (json_object_get(doc, "requests"), i, rq) {
                json_t *t = json_object_get(rq, "server_timings");
                double ms = json_number_value(json_object_get(t, "prompt_ms"));

                ASSERT_FALSE(json_is_true(json_object_get(rq, "warmup")));
                ASSERT_TRUE(json_is_number(json_object_get(t, "prompt_ms")) && ms > 0);
                if (json_is_null(json_object_get(t, "prompt_n"))) {
                        half++;
                        continue;
                }
                ASSERT_TRUE(k < ELEMENTSOF(tps));
                tps[k] = (double)json_integer_value(json_object_get(t, "prompt_n")) / ms * 1000.0;
                /* no latency measured (latency_mode none): preparation = TTFR - prompt_ms */
                prep[k] = (double)json_integer_value(json_object_get(rq, "resp_us")) / 1000.0 - ms;
                k++;
        }
        ASSERT_EQ(k, 3);
        ASSERT_EQ(half, 3);
        mx_bstat_compute(tps, k, &st_tps);
        mx_bstat_compute(prep, k, &st_prep);
        pp = row(doc, "pp256");
        ASSERT_EQ(json_integer_value(json_object_get(pp, "requests")), 6);
        ASSERT_EQ(json_integer_value(json_object_get(pp, "server_timings_requests")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(pp, "server_timings_partial")), 3);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(pp, "server_pp_tps")) - st_tps.mean) <=
                    1e-9 * st_tps.mean);
        /* over all six requests' prompt_ms it would be another mean: the same three */
        ASSERT_TRUE(fabs(json_number_value(json_object_get(pp, "preparation_ms")) - st_prep.mean) <= 1e-6);
        ASSERT_CONTAINS(
                json_string_value(json_object_get(pp, "server_timings")),
                "over the 3 requests that reported prompt_n and prompt_ms; 3 requests carried only one of "
                "prompt_n and prompt_ms and are in no figure");
        tg = row(doc, "tg32");
        ASSERT_EQ(json_integer_value(json_object_get(tg, "server_timings_requests")), 6);
        ASSERT_EQ(json_integer_value(json_object_get(tg, "server_timings_partial")), 0);
        ASSERT_TRUE(json_number_value(json_object_get(tg, "server_tg_tps")) > 0);
        sim_stop(&s);
}

TEST(unreachable_server_is_an_error)
{
        struct mx_bench_config cfg;
        struct done d = {.base = event_base_new()};
        _cleanup_(mx_bench_freep) struct mx_bench *b = NULL;
        _cleanup_free_ char *err = NULL;

        config(&cfg, free_port());
        ASSERT_OK(mx_bench_new(d.base, &cfg, &b, &err));
        ASSERT_OK(mx_bench_start(b, done_cb, NULL, &d));
        ASSERT_OK(event_base_dispatch(d.base));
        ASSERT_EQ(d.error, -ECONNREFUSED);
        ASSERT_CONTAINS(d.reason, "/v1/models");
        free(d.reason);
        b = mx_bench_free(b);
        event_base_free(d.base);
}

TEST(config_checked)
{
        struct mx_bench_config cfg;
        _cleanup_free_ char *err = NULL;

        config(&cfg, 1);
        cfg.tg[0] = 1;
        ASSERT_ERR(mx_bench_config_check(&cfg, &err), EINVAL);
        ASSERT_CONTAINS(err, "tg 1");
        free(TAKE_PTR(err));
        config(&cfg, 1);
        cfg.url = "https://x";
        ASSERT_ERR(mx_bench_config_check(&cfg, &err), EINVAL);
        free(TAKE_PTR(err));
        config(&cfg, 1);
        cfg.concurrency = MX_BENCH_CONCURRENCY_MAX + 1;
        ASSERT_ERR(mx_bench_config_check(&cfg, &err), EINVAL);
        free(TAKE_PTR(err));
        config(&cfg, 1);
        cfg.n_depth = MX_BENCH_LIST_MAX + 1;
        ASSERT_ERR(mx_bench_config_check(&cfg, &err), E2BIG);
}
