/* SPDX-License-Identifier: MIT */
/* The benchmark formulas (loadgen/bench-stats.c) on examples computed by hand. */
#include "test.h"

#include <string.h>

#include "bench-stats.h"

#define ASSERT_NEAR(a, b, tol)                                                                              \
        do {                                                                                                \
                double _a = (a), _b = (b);                                                                  \
                if (!(fabs(_a - _b) <= (tol)))                                                              \
                        test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g != %.9g", #a, #b, _a, _b);             \
        } while (0)

TEST(summary_numpy_conventions)
{
        /* numpy: mean 2.5, std 1.118033989, std(ddof=1) 1.290994449, percentile 50/90/99: 2.5, 3.7, 3.97 */
        const double v[] = {4, 1, 3, 2};
        struct mx_bstat s;

        mx_bstat_compute(v, ELEMENTSOF(v), &s);
        ASSERT_EQ(s.n, 4);
        ASSERT_NEAR(s.mean, 2.5, 1e-12);
        ASSERT_NEAR(s.std, sqrt(1.25), 1e-12);
        ASSERT_NEAR(s.std_sample, sqrt(5.0 / 3.0), 1e-12);
        ASSERT_NEAR(s.min, 1, 0);
        ASSERT_NEAR(s.max, 4, 0);
        ASSERT_NEAR(s.p50, 2.5, 1e-12);
        ASSERT_NEAR(s.p90, 3.7, 1e-12);
        ASSERT_NEAR(s.p99, 3.97, 1e-12);
        ASSERT_TRUE(s.p90_few);
        ASSERT_TRUE(s.p99_few);
}

TEST(summary_skips_nan_and_single_value)
{
        const double v[] = {NAN, 7, NAN};
        struct mx_bstat s;

        mx_bstat_compute(v, ELEMENTSOF(v), &s);
        ASSERT_EQ(s.n, 1);
        ASSERT_NEAR(s.mean, 7, 0);
        ASSERT_NEAR(s.std, 0, 0);
        ASSERT_NEAR(s.std_sample, 0, 0); /* llama-bench: 0 when N <= 1 */
        ASSERT_NEAR(s.p99, 7, 0);

        mx_bstat_compute(v, 0, &s);
        ASSERT_EQ(s.n, 0);
        ASSERT_TRUE(isnan(s.mean) && isnan(s.p50));
        mx_bstat_compute((const double[]){NAN}, 1, &s);
        ASSERT_EQ(s.n, 0);
        ASSERT_TRUE(isnan(s.std));
}

TEST(few_samples_flags)
{
        _cleanup_free_ double *v = xcalloc(MX_BSTAT_P99_MIN_N, sizeof(double));
        struct mx_bstat s;

        for (size_t i = 0; i < MX_BSTAT_P99_MIN_N; i++)
                v[i] = (double)i;
        mx_bstat_compute(v, MX_BSTAT_P90_MIN_N - 1, &s);
        ASSERT_TRUE(s.p90_few && s.p99_few);
        mx_bstat_compute(v, MX_BSTAT_P90_MIN_N, &s);
        ASSERT_TRUE(!s.p90_few && s.p99_few);
        mx_bstat_compute(v, MX_BSTAT_P99_MIN_N - 1, &s);
        ASSERT_TRUE(s.p99_few);
        mx_bstat_compute(v, MX_BSTAT_P99_MIN_N, &s);
        ASSERT_TRUE(!s.p90_few && !s.p99_few);
        /* 0..458: rank 0.99 * 458 = 453.42 */
        ASSERT_NEAR(s.p99, 453.42, 1e-9);
        ASSERT_NEAR(mx_bstat_percentile_sorted(v, 5, 25), 1.0, 0);
        ASSERT_NEAR(mx_bstat_percentile_sorted(v, 5, 0), 0.0, 0);
        ASSERT_NEAR(mx_bstat_percentile_sorted(v, 5, 100), 4.0, 0);
        ASSERT_TRUE(isnan(mx_bstat_percentile_sorted(v, 5, 101)));
}

TEST(ttfr_ttft_e2el)
{
        ASSERT_NEAR(mx_bench_ttfr_ms(1000000, 1043500), 43.5, 1e-12);
        ASSERT_NEAR(mx_bench_ttft_ms(1000000, 1086500), 86.5, 1e-12);
        ASSERT_NEAR(mx_bench_e2el_ms(1000000, 1500000), 500, 1e-12);
        ASSERT_TRUE(isnan(mx_bench_ttft_ms(1000000, 0))); /* no token ever came */
        ASSERT_TRUE(isnan(mx_bench_ttfr_ms(0, 5)));
}

TEST(pp_llama_benchy)
{
        /* the README's gpt-oss-120b sample: pp2048 @ d4096 = 6144 tokens in 650 ms less 0.5 ms latency */
        double est = mx_bench_est_ppt_ms(650.0, 0.5);

        ASSERT_NEAR(est, 649.5, 1e-12);
        ASSERT_NEAR(mx_bench_pp_tps(6144, est), 6144 / 0.6495, 1e-6);
        ASSERT_NEAR(mx_bench_est_ppt_ms(0.3, 1.0), 0, 0); /* max(0, ...) */
        ASSERT_TRUE(isnan(mx_bench_pp_tps(6144, 0)));
        ASSERT_TRUE(isnan(mx_bench_est_ppt_ms(NAN, 1.0)));

        /*
         * The server's count, never the expected one in its place (the old +-20 % substitution turned 17
         * evaluated tokens into 2048): what it evaluated, usage less what it took from its cache.
         */
        ASSERT_EQ(mx_bench_pp_tokens(1199, -1, 1000), 1199);
        ASSERT_EQ(mx_bench_pp_tokens(17, 0, 2048), 17);
        ASSERT_EQ(mx_bench_pp_tokens(0, -1, 1000), 0);
        /* no usage: the count of the server's tokenizer (vllm bench serve's fallback) */
        ASSERT_EQ(mx_bench_pp_tokens(-1, -1, 1000), 1000);
        /* llama-bench style: usage = depth + pp, the cached context is not evaluated again */
        ASSERT_EQ(mx_bench_pp_tokens(6144, 4100, 6144), 2044);
}

TEST(tg_llama_benchy)
{
        /* 32 tokens, the last 31 at 16 ms intervals: 31 / 0.496 s = 62.5 t/s */
        ASSERT_NEAR(mx_bench_tg_tps(32, 1000000, 1000000 + 31 * 16000), 62.5, 1e-9);
        ASSERT_TRUE(isnan(mx_bench_tg_tps(1, 1000000, 2000000)));
        ASSERT_TRUE(isnan(mx_bench_tg_tps(32, 1000000, 1000000))); /* one burst: no value (0.4.x) */
}

TEST(tpot_vllm)
{
        /* (E2EL - TTFT) / (tokens - 1), vLLM's TTFT being the first choices event (our TTFR) */
        ASSERT_NEAR(mx_bench_tpot_ms(600, 100, 11), 50, 1e-12);
        ASSERT_TRUE(isnan(mx_bench_tpot_ms(600, 100, 1)));
        ASSERT_TRUE(isnan(mx_bench_tpot_ms(600, NAN, 5)));
}

TEST(itl_pooled)
{
        const int64_t a[] = {0, 10000, 25000, 45000};
        const int64_t b[] = {7, 1007};
        _cleanup_free_ double *out = NULL;
        size_t n = 0, cap = 0;

        ASSERT_EQ(mx_bench_itl_append(a, ELEMENTSOF(a), &out, &n, &cap), 3);
        ASSERT_EQ(mx_bench_itl_append(b, ELEMENTSOF(b), &out, &n, &cap), 1);
        ASSERT_EQ(mx_bench_itl_append(b, 1, &out, &n, &cap), 0);
        ASSERT_EQ(n, 4);
        ASSERT_NEAR(out[0], 10, 0);
        ASSERT_NEAR(out[1], 15, 0);
        ASSERT_NEAR(out[2], 20, 0);
        ASSERT_NEAR(out[3], 1, 0);
}

TEST(batch_throughput)
{
        /* 3 requests, 300 prompt tokens, the last first token 0.5 s after the first send */
        ASSERT_NEAR(mx_bench_batch_pp_tps(300, 1000000, 1500000), 600, 1e-9);
        /* 30 tokens in 3 requests: (30 - 3) / 0.9 s */
        ASSERT_NEAR(mx_bench_batch_tg_tps(30, 3, 2000000, 2900000), 30, 1e-9);
        ASSERT_TRUE(isnan(mx_bench_batch_tg_tps(3, 3, 2000000, 2900000)));
}

/*
 * Issue 15: peak_tps counted chunks. Speculative decoding sends several tokens a chunk: 20 chunks of 3
 * tokens 100 ms apart read a peak of 10 t/s against a mean of 31 t/s. Tokens spread over their chunks as
 * llama-benchy 0.4 does put the peak at or above the mean.
 */
TEST(peak_counts_tokens_not_chunks)
{
        int64_t chunks[20], k3[20];
        _cleanup_free_ int64_t *ts = NULL, *ts2 = NULL, *ts3 = NULL;
        int64_t copy[20];
        double mean, peak_chunks;
        size_t n;

        for (size_t i = 0; i < 20; i++) {
                chunks[i] = 1000000 + (int64_t)i * 100000;
                k3[i] = 3;
        }
        memcpy(copy, chunks, sizeof(copy));
        mean = mx_bench_tg_tps(60, chunks[0], chunks[19]);
        ASSERT_NEAR(mean, 59 / 1.9, 1e-9);
        peak_chunks = mx_bench_peak_tps(copy, 20, 1000000);
        ASSERT_NEAR(peak_chunks, 10, 1e-9); /* the old reading: below the mean */
        ASSERT_TRUE(peak_chunks < mean);

        /* usage only (60 tokens from the first text on): spread evenly from the first chunk to the last */
        n = mx_bench_token_stamps(chunks, NULL, 20, 60, &ts);
        ASSERT_EQ(n, 60u);
        ASSERT_EQ(ts[0], chunks[0]);
        ASSERT_EQ(ts[59], chunks[19]);
        ASSERT_TRUE(mx_bench_peak_tps(ts, n, 1000000) >= mean);

        /* per-chunk counts: each chunk's 3 stamps over the gap since the previous one, ending at it */
        n = mx_bench_token_stamps(chunks, k3, 20, 0, &ts2);
        ASSERT_EQ(n, 60u);
        ASSERT_EQ(ts2[0], chunks[0]);
        ASSERT_EQ(ts2[2], chunks[0]);
        ASSERT_EQ(ts2[3], chunks[0] + 33333);
        ASSERT_EQ(ts2[5], chunks[1]);
        /* the mean llama-benchy 0.4 reports with block streaming leaves the first block out: 57 / 1.9 s */
        ASSERT_TRUE(mx_bench_peak_tps(ts2, n, 1000000) >= mx_bench_tg_tps(58, chunks[0], chunks[19]) - 1e-9);

        /* nothing known about tokens: one stamp per chunk, as before */
        n = mx_bench_token_stamps(chunks, NULL, 20, 0, &ts3);
        ASSERT_EQ(n, 20u);
        ASSERT_NEAR(mx_bench_peak_tps(ts3, n, 1000000), 10, 1e-9);
}

TEST(peak_llama_benchy)
{
        int64_t burst[] = {400000, 0, 100000, 200000, 500000}; /* unsorted on purpose */
        int64_t even[20], one[] = {5};
        int64_t same[] = {5, 5, 5};

        /* span 0.5 s < 1 s: count / span = 5 / 0.5 */
        ASSERT_NEAR(mx_bench_peak_tps(burst, ELEMENTSOF(burst), 1000000), 10, 1e-9);
        /* 20 stamps 0.1 s apart: a window (end - 1 s, end] holds 10 */
        for (size_t i = 0; i < ELEMENTSOF(even); i++)
                even[i] = (int64_t)i * 100000;
        ASSERT_NEAR(mx_bench_peak_tps(even, ELEMENTSOF(even), 1000000), 10, 1e-9);
        /* no span: the window rule, n / 1 s */
        ASSERT_NEAR(mx_bench_peak_tps(one, 1, 1000000), 1, 0);
        ASSERT_NEAR(mx_bench_peak_tps(same, 3, 1000000), 3, 0);
        ASSERT_TRUE(isnan(mx_bench_peak_tps(one, 0, 1000000)));
}

/*
 * A gpt-oss stream as vLLM sends it, tokens every 10 ms from t = 100 ms: the role chunk with token 1
 * (running count 0), 2 header tokens without a chunk, reasoning tokens 4-8, 6 silent tokens at the
 * channel switch (9-14), content 15-18, 6 silent tokens at the turn's end (19-24) of which only the last
 * sends a chunk (empty delta, finish_reason). Truth: 100 t/s, every token 10 ms apart.
 */
TEST(silent_tokens_decode_span_and_itl)
{
        int64_t ev[16], cum[16];
        size_t n = 0, end = 0, i_tok1;
        int64_t tokens = 0;
        double *itl = NULL;
        size_t n_itl = 0, cap = 0;
        double sum = 0;

#define TOKEN_AT(k) (100000 + ((int64_t)(k) - 1) * 10000)
        ev[n] = TOKEN_AT(1), cum[n++] = 0; /* role chunk */
        i_tok1 = n;
        for (int k = 4; k <= 8; k++)
                ev[n] = TOKEN_AT(k), cum[n++] = k;
        for (int k = 15; k <= 18; k++)
                ev[n] = TOKEN_AT(k), cum[n++] = k;
        ev[n] = TOKEN_AT(24), cum[n++] = 24; /* the request's last token: a chunk though silent */
        ASSERT_OK(mx_bench_decode_span(cum, n, i_tok1, &tokens, &end));
        ASSERT_EQ(tokens, 21); /* tokens 4..24 */
        ASSERT_EQ(end, n - 1);
        /* tg: (N - 1) / (last token - first text) = 20 / 200 ms, the schedule's 100 t/s */
        ASSERT_NEAR(mx_bench_tg_tps(tokens, ev[i_tok1], ev[end]), 100, 1e-9);
        /* what counting to the last text-bearing event would say: 20 tokens in 140 ms, 43 % high */
        ASSERT_TRUE(mx_bench_tg_tps(tokens, ev[i_tok1], ev[end - 1]) > 140);
        /* per-token ITL: 20 gaps of 10 ms, the switch's and the end's 70 ms chunk gaps spread over 7 tokens */
        ASSERT_EQ(mx_bench_itl_tokens_append(ev, cum, n, i_tok1, &itl, &n_itl, &cap), 20);
        for (size_t i = 0; i < n_itl; i++) {
                ASSERT_NEAR(itl[i], 10, 1e-9);
                sum += itl[i];
        }
        ASSERT_NEAR(sum / (double)n_itl, 1000.0 / 100, 1e-9); /* mean ITL = 1 / tg */
        free(itl);
        /* a finish chunk without a count (llama-server) adds nothing; no count at the first text: no span */
        cum[n - 1] = -1;
        ASSERT_OK(mx_bench_decode_span(cum, n, i_tok1, &tokens, &end));
        ASSERT_EQ(tokens, 15);
        ASSERT_EQ(end, n - 2);
        cum[i_tok1] = -1;
        ASSERT_ERR(mx_bench_decode_span(cum, n, i_tok1, &tokens, &end), ENODATA);
        /* a count that falls is refused, naming the event */
        cum[i_tok1] = 4;
        cum[3] = 2;
        ASSERT_ERR(mx_bench_decode_span(cum, n, i_tok1, &tokens, &end), ERANGE);
        ASSERT_EQ(end, 3);
#undef TOKEN_AT
}

/* What the real llama-server reported (../shared/targets README), judged: a count it contradicts fails the request. */
TEST(prompt_problems_named_with_both_numbers)
{
        /* the defect of issue 14: 17 tokens evaluated of a prompt meant to be 2048 */
        struct mx_bench_prompt_seen short_prompt = {.prompt_tokens = 17, .cached_tokens = 0, .cache_n = 0, .prompt_n = 17};
        /* cache_prompt true, a distinct prompt: only the template's header is shared (5 of 29) */
        struct mx_bench_prompt_seen header = {.prompt_tokens = 2048, .cached_tokens = 5, .cache_n = 5, .prompt_n = 2043};
        /* the same prompt again: all but the last token reused */
        struct mx_bench_prompt_seen reused = {.prompt_tokens = 2048, .cached_tokens = 2047, .cache_n = 2047, .prompt_n = 1};
        /* llama-bench style: the context reused */
        struct mx_bench_prompt_seen ctx = {.prompt_tokens = 1280, .cached_tokens = 1015, .cache_n = 1015, .prompt_n = 265};
        struct mx_bench_prompt_seen none = {.prompt_tokens = -1, .cached_tokens = -1, .cache_n = -1, .prompt_n = -1};
        struct mx_bench_prompt_seen odd = {.prompt_tokens = 2048, .cached_tokens = 0, .cache_n = 3, .prompt_n = 2045};
        _cleanup_free_ char *p1 = mx_bench_prompt_problem(&short_prompt, 2048, 14, -1);
        _cleanup_free_ char *p2 = mx_bench_prompt_problem(&header, 2048, 14, -1);
        _cleanup_free_ char *p3 = mx_bench_prompt_problem(&reused, 2048, 14, -1);
        _cleanup_free_ char *p4 = mx_bench_prompt_problem(&ctx, 1280, -1, 1002);
        _cleanup_free_ char *p5 = mx_bench_prompt_problem(&header, 1280 + 768, -1, 1002);
        _cleanup_free_ char *p6 = mx_bench_prompt_problem(&none, 2048, 14, -1);
        _cleanup_free_ char *p7 = mx_bench_prompt_problem(&none, 2048, -1, 1002);
        _cleanup_free_ char *p8 = mx_bench_prompt_problem(&odd, 2048, 14, -1);

        ASSERT_CONTAINS(p1, "usage.prompt_tokens 17, but the prompt was built to 2048 tokens");
        ASSERT_NULL(p2);
        ASSERT_CONTAINS(p3, "reused 2047 cached prompt tokens of 2048 (at most 14");
        ASSERT_NULL(p4);
        ASSERT_CONTAINS(p5, "reused 5 cached prompt tokens, but the context holds 1002: the context was not reused");
        ASSERT_NULL(p6); /* no usage: the tokenizer's count stands, nothing contradicts it */
        ASSERT_CONTAINS(p7, "reports no cached tokens");
        ASSERT_CONTAINS(p8, "cached_tokens 0 but timings.cache_n 3");
        ASSERT_EQ(mx_bench_prompt_cached(&odd), 0);
        ASSERT_EQ(mx_bench_prompt_cached(&(struct mx_bench_prompt_seen){.cached_tokens = -1, .cache_n = 7}), 7);
}

/* server_pp_tps divides timings.prompt_n: it must be the tokens our pp counts, even without cache_n */
TEST(prompt_n_must_be_the_counted_tokens)
{
        struct mx_bench_prompt_seen no_cache_n = {.prompt_tokens = 2048, .cached_tokens = 0, .cache_n = -1, .prompt_n = 2040};
        struct mx_bench_prompt_seen agrees = {.prompt_tokens = 2048, .cached_tokens = 5, .cache_n = -1, .prompt_n = 2043};
        _cleanup_free_ char *p1 = mx_bench_prompt_problem(&no_cache_n, 2048, 14, -1);
        _cleanup_free_ char *p2 = mx_bench_prompt_problem(&agrees, 2048, 14, -1);

        ASSERT_CONTAINS(p1, "timings.prompt_n 2040 is not the 2048 prompt tokens counted (usage.prompt_tokens 2048 less 0 cached)");
        ASSERT_NULL(p2);
}

/* llama-server's own rates (its prompt_per_second, predicted_per_second) and what TTFR holds beyond prompt_ms */
TEST(server_rates_and_preparation)
{
        /* the real CPU server's final chunk: prompt_n 23, prompt_ms 687.634, prompt_per_second 33.448... */
        ASSERT_TRUE(fabs(mx_bench_server_tps(23, 687.634) - 33.44802613017972) < 1e-9);
        ASSERT_TRUE(fabs(mx_bench_server_tps(4, 1665.806) - 2.4012400003361734) < 1e-9);
        ASSERT_TRUE(isnan(mx_bench_server_tps(-1, 10)));
        ASSERT_TRUE(isnan(mx_bench_server_tps(23, -1)));
        ASSERT_TRUE(isnan(mx_bench_server_tps(23, 0)));
        /* TTFR 50 ms, latency 2 ms, prompt_ms 36: 12 ms of preparation; our pp = n / (36 + 12) */
        ASSERT_TRUE(fabs(mx_bench_preparation_ms(50, 2, 36) - 12) < 1e-12);
        ASSERT_TRUE(fabs(mx_bench_pp_tps(2048, mx_bench_est_ppt_ms(50, 2)) - 2048 / ((36 + 12) / 1000.0)) < 1e-6);
        ASSERT_TRUE(isnan(mx_bench_preparation_ms(50, 2, -1)));
        ASSERT_TRUE(isnan(mx_bench_preparation_ms(NAN, 2, 36)));
}

/* A request's decode rate from the arrival times against llama-server's own timer of it */
TEST(decode_rate_against_the_server_timer)
{
        /* 32 tokens in 24.0 ms of predicted_ms: the server made 1291.7 t/s ((32 - 1) / 24 ms) */
        ASSERT_NULL(mx_bench_decode_problem(1280.0, 32, 24.0));
        ASSERT_NULL(mx_bench_decode_problem(1291.7 * 1.9, 32, 24.0));
        /* what a descheduled client read: 16 tokens at once, 55 000 t/s against a server at 1000 */
        _cleanup_free_ char *burst = mx_bench_decode_problem(55000.0, 32, 31.0);
        ASSERT_CONTAINS(burst, "55000.0 t/s, disagrees with the server's own timer, 1000.0 t/s (timings: 32 tokens, 31.00 ms)");
        ASSERT_CONTAINS(burst, "in bursts");
        _cleanup_free_ char *slow = mx_bench_decode_problem(400.0, 32, 24.0);
        ASSERT_CONTAINS(slow, "slower than the server made them");
        /* nothing to compare: no timings, too few tokens, no figure of ours */
        ASSERT_NULL(mx_bench_decode_problem(55000.0, -1, -1));
        ASSERT_NULL(mx_bench_decode_problem(55000.0, 4, 3.0));
        ASSERT_NULL(mx_bench_decode_problem(NAN, 32, 24.0));
}
