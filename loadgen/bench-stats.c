/* SPDX-License-Identifier: MIT */
/* Benchmark metric formulas (see bench-stats.h). */
#include "bench-stats.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most tokens one event may add to the per-token ITL (bench.h's MX_BENCH_TOKENS_MAX). */
#define ITL_TOKENS_MAX 1048576

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y ? 1 : 0;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return x < y ? -1 : x > y ? 1 : 0;
}

double mx_bstat_percentile_sorted(const double *sorted, size_t n, double p)
{
        double rank, frac;
        size_t lo;

        if (n == 0 || !(p >= 0 && p <= 100))
                return NAN;
        rank = p / 100.0 * (double)(n - 1);
        lo = (size_t)floor(rank);
        if (lo >= n - 1)
                return sorted[n - 1];
        frac = rank - (double)lo;
        return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

void mx_bstat_compute(const double *v, size_t n, struct mx_bstat *ret)
{
        _cleanup_free_ double *s = NULL;
        double sum = 0, ss = 0;
        size_t k = 0;

        *ret = (struct mx_bstat){
                .mean = NAN, .std = NAN, .std_sample = NAN, .min = NAN, .max = NAN,
                .p50 = NAN, .p90 = NAN, .p99 = NAN, .p90_few = true, .p99_few = true,
        };
        if (n == 0)
                return;
        s = xreallocarray(NULL, n, sizeof(double));
        for (size_t i = 0; i < n; i++)
                if (isfinite(v[i]))
                        s[k++] = v[i];
        if (k == 0)
                return;
        qsort(s, k, sizeof(double), cmp_double);
        for (size_t i = 0; i < k; i++)
                sum += s[i];
        ret->n = k;
        ret->mean = sum / (double)k;
        /* two passes: the textbook one-pass formula loses digits on large, close values */
        for (size_t i = 0; i < k; i++)
                ss += (s[i] - ret->mean) * (s[i] - ret->mean);
        ret->std = sqrt(ss / (double)k);
        ret->std_sample = k > 1 ? sqrt(ss / (double)(k - 1)) : 0;
        ret->min = s[0];
        ret->max = s[k - 1];
        ret->p50 = mx_bstat_percentile_sorted(s, k, 50);
        ret->p90 = mx_bstat_percentile_sorted(s, k, 90);
        ret->p99 = mx_bstat_percentile_sorted(s, k, 99);
        ret->p90_few = k < MX_BSTAT_P90_MIN_N;
        ret->p99_few = k < MX_BSTAT_P99_MIN_N;
}

double mx_bench_ttfr_ms(int64_t t0, int64_t t_resp)
{
        return t0 > 0 && t_resp >= t0 ? (double)(t_resp - t0) / 1000.0 : NAN;
}

double mx_bench_ttft_ms(int64_t t0, int64_t t_tok1)
{
        return t0 > 0 && t_tok1 >= t0 ? (double)(t_tok1 - t0) / 1000.0 : NAN;
}

double mx_bench_est_ppt_ms(double ttfr_ms, double latency_ms)
{
        if (!isfinite(ttfr_ms))
                return NAN;
        return MX_MAX(0.0, ttfr_ms - (isfinite(latency_ms) ? latency_ms : 0.0));
}

int64_t mx_bench_pp_tokens(int64_t usage_prompt_tokens, int64_t cached_tokens, int64_t tokenizer_count)
{
        int64_t n = usage_prompt_tokens >= 0 ? usage_prompt_tokens : tokenizer_count;

        return n - MX_MAX(cached_tokens, 0);
}

int64_t mx_bench_prompt_cached(const struct mx_bench_prompt_seen *seen)
{
        return seen->cached_tokens >= 0 ? seen->cached_tokens : seen->cache_n;
}

char *mx_bench_prompt_problem(const struct mx_bench_prompt_seen *seen, int64_t expected, int64_t cached_max,
                              int64_t reused_min)
{
        int64_t cached = mx_bench_prompt_cached(seen);

        if (seen->prompt_tokens >= 0 && seen->prompt_tokens != expected)
                return xasprintf("usage.prompt_tokens %" PRId64 ", but the prompt was built to %" PRId64
                                 " tokens (the server's /tokenize and the chat template's overhead)",
                                 seen->prompt_tokens, expected);
        if (seen->cached_tokens >= 0 && seen->cache_n >= 0 && seen->cached_tokens != seen->cache_n)
                return xasprintf("usage.prompt_tokens_details.cached_tokens %" PRId64 " but timings.cache_n %" PRId64,
                                 seen->cached_tokens, seen->cache_n);
        if (seen->prompt_tokens >= 0 && seen->prompt_n >= 0 && seen->cache_n >= 0 &&
            seen->prompt_n + seen->cache_n != seen->prompt_tokens)
                return xasprintf("timings.prompt_n %" PRId64 " + cache_n %" PRId64 " is not usage.prompt_tokens %" PRId64,
                                 seen->prompt_n, seen->cache_n, seen->prompt_tokens);
        /* the server's own prefill figure (server_pp_tps) divides prompt_n: it must be the tokens ours counts */
        if (seen->prompt_tokens >= 0 && seen->prompt_n >= 0 && seen->prompt_n != seen->prompt_tokens - MX_MAX(cached, 0))
                return xasprintf("timings.prompt_n %" PRId64 " is not the %" PRId64 " prompt tokens counted "
                                 "(usage.prompt_tokens %" PRId64 " less %" PRId64 " cached)",
                                 seen->prompt_n, seen->prompt_tokens - MX_MAX(cached, 0), seen->prompt_tokens,
                                 MX_MAX(cached, 0));
        if (reused_min >= 0) {
                if (cached < 0)
                        return xstrdup("the server reports no cached tokens (usage.prompt_tokens_details.cached_tokens, "
                                       "timings.cache_n): the context's reuse cannot be verified");
                if (cached < reused_min)
                        return xasprintf("the server reused %" PRId64 " cached prompt tokens, but the context holds "
                                         "%" PRId64 ": the context was not reused",
                                         cached, reused_min);
                return NULL;
        }
        if (cached > cached_max)
                return xasprintf("the server reused %" PRId64 " cached prompt tokens of %" PRId64 " (at most %" PRId64
                                 ", the chat template's own, may be shared): the prefill was not measured",
                                 cached, seen->prompt_tokens >= 0 ? seen->prompt_tokens : expected, cached_max);
        return NULL;
}

double mx_bench_server_tps(int64_t n, double ms)
{
        if (n <= 0 || !isfinite(ms) || ms <= 0)
                return NAN;
        return (double)n / ms * 1000.0;
}

char *mx_bench_decode_problem(double ours_tps, int64_t predicted_n, double predicted_ms)
{
        double server;

        if (!(ours_tps > 0) || !isfinite(ours_tps) || predicted_n < 8 || !(predicted_ms > 0))
                return NULL;
        server = mx_bench_server_tps(predicted_n - 1, predicted_ms);
        if (ours_tps <= server * MX_BENCH_DECODE_FACTOR_MAX && ours_tps >= server / MX_BENCH_DECODE_FACTOR_MAX)
                return NULL;
        return xasprintf("the decode rate from the tokens' arrival, %.1f t/s, disagrees with the server's own timer, "
                         "%.1f t/s (timings: %" PRId64 " tokens, %.2f ms), by more than %gx: %s",
                         ours_tps, server, predicted_n, predicted_ms, MX_BENCH_DECODE_FACTOR_MAX,
                         ours_tps > server ? "the tokens reached the client in bursts, not as the server made them"
                                           : "the tokens reached the client slower than the server made them");
}

double mx_bench_preparation_ms(double ttfr_ms, double latency_ms, double server_prompt_ms)
{
        if (!isfinite(ttfr_ms) || !isfinite(server_prompt_ms) || server_prompt_ms < 0)
                return NAN;
        return ttfr_ms - (isfinite(latency_ms) ? latency_ms : 0) - server_prompt_ms;
}

double mx_bench_pp_tps(int64_t prompt_tokens, double est_ppt_ms)
{
        if (!isfinite(est_ppt_ms) || est_ppt_ms <= 0 || prompt_tokens <= 0)
                return NAN;
        return (double)prompt_tokens / (est_ppt_ms / 1000.0);
}

double mx_bench_tg_tps(int64_t n_tokens, int64_t t_tok1, int64_t t_last_tok)
{
        if (n_tokens <= 1 || t_tok1 <= 0 || t_last_tok <= t_tok1)
                return NAN;
        return (double)(n_tokens - 1) / ((double)(t_last_tok - t_tok1) / 1e6);
}

double mx_bench_e2el_ms(int64_t t0, int64_t t_last)
{
        return t0 > 0 && t_last >= t0 ? (double)(t_last - t0) / 1000.0 : NAN;
}

double mx_bench_tpot_ms(double e2el_ms, double origin_ms, int64_t tokens)
{
        if (tokens <= 1 || !isfinite(e2el_ms) || !isfinite(origin_ms))
                return NAN;
        return (e2el_ms - origin_ms) / (double)(tokens - 1);
}

size_t mx_bench_itl_append(const int64_t *ev_us, size_t n_ev, double **out, size_t *n_out, size_t *cap)
{
        if (n_ev < 2)
                return 0;
        MX_GROW(*out, *cap, *n_out + n_ev - 1);
        for (size_t i = 1; i < n_ev; i++)
                (*out)[(*n_out)++] = (double)(ev_us[i] - ev_us[i - 1]) / 1000.0;
        return n_ev - 1;
}

int mx_bench_decode_span(const int64_t *cum, size_t n_ev, size_t i_tok1, int64_t *ret_tokens, size_t *ret_end)
{
        int64_t prev, last;
        size_t end;

        if (i_tok1 >= n_ev || cum[i_tok1] < 0)
                return -ENODATA;
        prev = last = cum[i_tok1];
        end = i_tok1;
        for (size_t i = i_tok1 + 1; i < n_ev; i++) {
                if (cum[i] < 0)
                        continue;
                if (cum[i] < prev) {
                        *ret_end = i;
                        return -ERANGE;
                }
                if (cum[i] > last) {
                        last = cum[i];
                        end = i;
                }
                prev = cum[i];
        }
        *ret_tokens = last - cum[i_tok1] + 1;
        *ret_end = end;
        return 0;
}

size_t mx_bench_itl_tokens_append(const int64_t *ev_us, const int64_t *cum, size_t n_ev, size_t i_tok1,
                                  double **out, size_t *n_out, size_t *cap)
{
        size_t added = 0, prev;

        if (i_tok1 >= n_ev || cum[i_tok1] < 0)
                return 0;
        prev = i_tok1;
        for (size_t i = i_tok1 + 1; i < n_ev; i++) {
                int64_t k = cum[i] - cum[prev];

                if (cum[i] < 0 || k <= 0)
                        continue;
                if (k > ITL_TOKENS_MAX)
                        break; /* a count no request can reach: not a running count */
                MX_GROW(*out, *cap, *n_out + (size_t)k);
                for (int64_t j = 0; j < k; j++)
                        (*out)[(*n_out)++] = (double)(ev_us[i] - ev_us[prev]) / 1000.0 / (double)k;
                added += (size_t)k;
                prev = i;
        }
        return added;
}

double mx_bench_batch_pp_tps(int64_t sum_prompt_tokens, int64_t min_t0, int64_t max_tok1)
{
        if (sum_prompt_tokens <= 0 || max_tok1 <= min_t0)
                return NAN;
        return (double)sum_prompt_tokens / ((double)(max_tok1 - min_t0) / 1e6);
}

double mx_bench_batch_tg_tps(int64_t sum_tokens, size_t requests, int64_t min_tok1, int64_t max_last_tok)
{
        if (sum_tokens <= (int64_t)requests || max_last_tok <= min_tok1)
                return NAN;
        return (double)(sum_tokens - (int64_t)requests) / ((double)(max_last_tok - min_tok1) / 1e6);
}

size_t mx_bench_token_stamps(const int64_t *chunk_ts, const int64_t *tokens, size_t n, int64_t total,
                             int64_t **ret)
{
        int64_t *ts;
        size_t k = 0, want = 0;

        if (tokens)
                for (size_t i = 0; i < n; i++)
                        want += (size_t)MX_MAX(tokens[i], 0);
        else
                want = total > 0 && n > 0 ? (size_t)total : n;
        ts = xreallocarray(NULL, MX_MAX(want, 1), sizeof(int64_t));
        if (tokens) {
                for (size_t i = 0; i < n; i++) {
                        int64_t c = MX_MAX(tokens[i], 0), prev = i > 0 ? chunk_ts[i - 1] : chunk_ts[i];

                        for (int64_t j = 1; j <= c; j++)
                                ts[k++] = prev + (chunk_ts[i] - prev) * j / c;
                }
        } else if (total > 0 && n > 0) {
                int64_t first = chunk_ts[0], last = chunk_ts[n - 1];

                for (size_t j = 0; j < want; j++)
                        ts[k++] = want > 1 ? first + (int64_t)((double)(last - first) * (double)j / (double)(want - 1))
                                           : last;
        } else {
                memcpy(ts, chunk_ts, n * sizeof(int64_t));
                k = n;
        }
        *ret = ts;
        return k;
}

double mx_bench_peak_tps(int64_t *ts, size_t n, int64_t window_us)
{
        int64_t span;
        size_t start = 0, best = 0;

        if (n == 0 || window_us <= 0)
                return NAN;
        qsort(ts, n, sizeof(int64_t), cmp_i64);
        span = ts[n - 1] - ts[0];
        if (span > 0 && span < window_us)
                return (double)n / ((double)span / 1e6);
        for (size_t end = 0; end < n; end++) {
                while (start < end && ts[start] <= ts[end] - window_us)
                        start++;
                best = MX_MAX(best, end - start + 1);
        }
        return (double)best / ((double)window_us / 1e6);
}
