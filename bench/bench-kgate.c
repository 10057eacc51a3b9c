/* SPDX-License-Identifier: MIT */
/*
 * How fast the L1.5 kernel gate eats a server log, and how fast profiler
 * reports parse. The runner feeds every line of a vLLM server's output to
 * mx_kgate_feed_log_line(); a long run writes tens of megabytes.
 *
 * Usage: bench-kgate [LOG_MB] [REPS]   (defaults: 64 MB, 5 repetitions)
 *
 * The log is synthetic but shaped like vLLM's (timestamps, logger names,
 * per-request lines, throughput lines; the callsite line near the end, so
 * must-see patterns stay open for almost the whole log). Each figure is the
 * median of REPS runs on CLOCK_MONOTONIC; the log is split into lines once,
 * before timing, so the figures are the gate's own cost.
 */
#include "kgate.h"
#include "lines.h"
#include "profreport.h"

#include <inttypes.h>

struct line {
        const char *p;
        size_t n;
};

/* One log line in one of four shapes vLLM prints most, varied by x. */
static void log_line(struct mx_buf *b, unsigned x)
{
        int a = (int)(x % 12), d = (int)(x % 28), m = (int)(x % 60), k = (int)(x % 9000);

        switch ((x >> 7) % 4) {
        case 0:
                mx_buf_printf(
                        b,
                        "INFO %02d-%02d 12:%02d:%02d [loggers.py:123] Engine 000: Avg prompt throughput: "
                        "%d.%d tokens/s, Avg generation throughput: %d.%d tokens/s, Running: %d reqs, "
                        "Waiting: 0 reqs, GPU KV cache usage: %d.%d%%, Prefix cache hit rate: 0.0%%\n",
                        a, d, m, m, k, a, k % 400, a, d, m, a);
                break;
        case 1:
                mx_buf_printf(
                        b,
                        "INFO %02d-%02d 12:%02d:%02d [logger.py:43] Received request chatcmpl-%08x: "
                        "prompt: '<|start|>system<|message|>You are ChatGPT, a large language model trained "
                        "by OpenAI.', params: SamplingParams(n=1, temperature=%d.%d, top_p=1.0, "
                        "max_tokens=%d), prompt_token_ids: None\n",
                        a, d, m, m, x, a % 2, a, k);
                break;
        case 2:
                mx_buf_printf(b, "INFO:     127.0.0.1:%d - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
                              k + 30000);
                break;
        default:
                mx_buf_printf(
                        b,
                        "DEBUG %02d-%02d 12:%02d:%02d [core.py:%d] scheduled %d tokens in %d.%d ms for %d "
                        "sequences\n",
                        a, d, m, m, k % 900, k, a, d, m);
                break;
        }
}

static char *make_log(size_t mb, size_t *ret_len)
{
        struct mx_buf b = MX_BUF_INIT;
        unsigned x = 12345;

        while (b.len < mb * 1024 * 1024) {
                x = x * 1103515245 + 12345;
                log_line(&b, x);
        }
        mx_buf_puts(
                &b,
                "[MoE] backend=flashinfer format=MXFP4_NATIVE fn=flashinfer.fused_moe.cutlass_fused_moe\n"
                "[MoE] activation input dtype=torch.bfloat16 shape=(32, 4096) \xe2\x86\x92 MXFP8 "
                "quantized\n");
        *ret_len = b.len;
        return mx_buf_steal(&b);
}

static struct line *split(const char *log, size_t len, size_t *ret_n)
{
        _cleanup_(mx_lines_freep) struct mx_lines *l =
                mx_lines_new_buffer(log, len, 1 << 20, MX_LINES_TRUNCATE);
        struct line *v = NULL;
        size_t n = 0, alloc = 0, ln;
        const char *p;

        while (mx_lines_next(l, &p, &ln) > 0) {
                MX_GROW(v, alloc, n + 1);
                v[n++] = (struct line){ p, ln };
        }
        *ret_n = n;
        return v;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

static int64_t median(int64_t *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp_i64);
        return v[n / 2];
}

/* Feed all lines through a gate built from e, reps times; print the median. */
static void bench_gate(const char *label, const struct mx_kgate_expect *e, const struct line *lines,
                       size_t n, size_t bytes, int reps, enum mx_verdict want)
{
        int64_t t[64];

        for (int r = 0; r < reps; r++) {
                _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
                _cleanup_free_ char *err = NULL;
                int64_t start;

                if (mx_kgate_new(e, &g, &err) < 0)
                        mx_die("%s: %s", label, err);
                start = mx_now_mono_us();
                for (size_t i = 0; i < n; i++)
                        mx_kgate_feed_log_line(g, lines[i].p, lines[i].n);
                t[r] = mx_now_mono_us() - start;
                if (mx_kgate_verdict(g, NULL) != want)
                        mx_die("%s: unexpected verdict", label);
        }
        {
                double us = (double)median(t, reps);

                printf("%-44s %9.1f ms %9.1f MB/s %7.1f ns/line\n", label, us / 1e3,
                       (double)bytes / (1024.0 * 1024.0) / (us / 1e6), us * 1e3 / (double)n);
        }
}

static void bench_gates(size_t mb, int reps)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect seed = {}, regex = {}, worst = {};
        static const char *const worst_globs[] = {
                "cutlass_*_grouped_gemm", "marlin_*moe",       "gemv_fp4_*",    "mxfp8_*quantize*",
                "Using NVFP4 ? path",     "format=MXFP4_BF16", "*t?ken*s/s*ZZ", "r*e*q*u*e*s*t*ZZ",
        };
        _cleanup_free_ char *log = NULL, *lines = NULL;
        struct line *v;
        size_t len, n;

        log = make_log(mb, &len);
        v = split(log, len, &n);
        lines = (char *)v;
        printf("log: %.1f MB, %zu lines, %d repetitions, median\n", (double)len / (1024.0 * 1024.0), n,
               reps);

        /* seed 004's callsite lines: one must-see (matched on the last lines), three red flags */
        mx_kgate_rules_add_must_see(&seed.log, "backend=flashinfer format=MXFP4_NATIVE");
        mx_kgate_rules_add_must_not_see(&seed.log, "Using NVFP4 path");
        mx_kgate_rules_add_must_not_see(&seed.log, "format=MXFP4_BF16");
        mx_kgate_rules_add_must_not_see(&seed.log, "quant_dtype=nvfp4");
        bench_gate("4 globs (seed callsite checks)", &seed, v, n, len, reps, MX_VERDICT_PASS);

        mx_kgate_expect_merge(&regex, &seed);
        mx_kgate_rules_add_must_see(&regex.log, "re:MXFP8 quantized$");
        mx_kgate_rules_add_must_not_see(&regex.log, "re:Traceback|CUDA error|out of memory");
        bench_gate("4 globs + 2 POSIX EREs", &regex, v, n, len, reps, MX_VERDICT_PASS);

        /* every pattern stays open and tested on every line; two with literals that appear in most lines */
        for (size_t i = 0; i < ELEMENTSOF(worst_globs); i++)
                mx_kgate_rules_add_must_see(&worst.log, worst_globs[i]);
        bench_gate("8 never-matching globs (worst case)", &worst, v, n, len, reps, MX_VERDICT_FAIL);
}

/* A synthetic nsys cuda_gpu_trace with n rows over 200 kernel names. */
static char *make_trace(size_t rows, size_t *ret_len)
{
        struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b, "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),"
                        "DymSMem (MB),Bytes (MB),Throughput "
                        "(MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n");
        for (size_t i = 0; i < rows; i++)
                mx_buf_printf(
                        &b,
                        "%zu,%zu,%zu,128,1,1,256,1,1,64,0.000,0.049,,,,,NVIDIA H200 (0),1,,7,"
                        "\"void cutlass::Kernel2<cutlass_sm90_grouped_gemm_%zu<float, 128, 64>>(Params)\"\n",
                        i * 1000, 500 + i % 97, i, i % 200);
        *ret_len = b.len;
        return mx_buf_steal(&b);
}

static void bench_report(const char *label, const char *text, size_t len, int reps)
{
        int64_t t[64];
        size_t kernels = 0;

        for (int r = 0; r < reps; r++) {
                _cleanup_(mx_profreport_freep) struct mx_profreport *rep = NULL;
                _cleanup_free_ char *err = NULL;
                int64_t start = mx_now_mono_us();

                if (mx_profreport_parse_buffer(text, len, MX_PROFREPORT_TOOL_ANY, &rep, &err) < 0)
                        mx_die("%s: %s", label, err);
                t[r] = mx_now_mono_us() - start;
                kernels = rep->n_kernels;
        }
        {
                double us = (double)median(t, reps);

                printf("%-44s %9.1f ms %9.1f MB/s (%zu kernels)\n", label, us / 1e3,
                       (double)len / (1024.0 * 1024.0) / (us / 1e6), kernels);
        }
}

int main(int argc, char **argv)
{
        size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 64, len;
        int reps = argc > 2 ? atoi(argv[2]) : 5;
        _cleanup_free_ char *trace = NULL;

        if (mb == 0 || reps < 1 || reps > 64) {
                fprintf(stderr, "usage: bench-kgate [LOG_MB] [REPS (1-64)]\n");
                return 2;
        }
        bench_gates(mb, reps);
        trace = make_trace(500000, &len);
        printf("report: nsys cuda_gpu_trace, %.1f MB, 500000 rows\n", (double)len / (1024.0 * 1024.0));
        bench_report("parse nsys cuda_gpu_trace", trace, len, reps);
        return 0;
}
