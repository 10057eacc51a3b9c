/* SPDX-License-Identifier: MIT */
/* The benchmark formulas (daemon/bench-stats.c) on examples computed by hand. */
#include "test.h"

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
