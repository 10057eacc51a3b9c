/* SPDX-License-Identifier: MIT */
/*
 * The benchmark's metric formulas, as pure functions: no I/O, no clock, no
 * state. Each function names the definition it follows; the sources are
 * ../shared/docs/bench-methods.md §1-§2 (llama-benchy v0.3/0.4, vllm bench
 * serve, llama-bench, MLPerf LoadGen).
 *
 * Times are CLOCK_MONOTONIC microseconds (int64_t) as the client stamps them;
 * results are milliseconds or tokens per second (double). A value that is
 * undefined for its inputs (too few tokens, a zero duration) is NAN, never 0,
 * so that it cannot enter a mean unnoticed.
 */
#pragma once

#include "util.h"

#include <math.h>

/*
 * LoadGen's early-stopping minimum (99 % confidence, zero tolerance): with
 * fewer samples a percentile is not supported by the data and is flagged.
 */
#define MX_BSTAT_P90_MIN_N 44
#define MX_BSTAT_P99_MIN_N 459

/* Summary of a sample. */
struct mx_bstat {
        size_t n;          /* finite values used (NAN values are skipped) */
        double mean;       /* arithmetic mean */
        double std;        /* population std, ddof 0 (NumPy's default: llama-benchy, vLLM) */
        double std_sample; /* sample std, ddof 1 (llama-bench); 0 when n <= 1 */
        double min, max;
        double p50, p90, p99; /* NumPy's default "linear" interpolation: rank p/100 * (n - 1) */
        bool p90_few;         /* n < MX_BSTAT_P90_MIN_N */
        bool p99_few;         /* n < MX_BSTAT_P99_MIN_N */
};

/* Summarise n values (NAN ones skipped); with none left every field is NAN and n is 0. */
void mx_bstat_compute(const double *v, size_t n, struct mx_bstat *ret);
/* The p-th percentile (0..100) of n ascending values, linear interpolation (numpy.percentile). */
double mx_bstat_percentile_sorted(const double *sorted, size_t n, double p);

/* ---- one request (stamps in µs; 0 = never happened) ---- */

/* TTFR, llama-benchy's ttfr and vllm bench serve's "TTFT": first choices-bearing event − t0, in ms. */
double mx_bench_ttfr_ms(int64_t t0, int64_t t_resp);
/* TTFT, llama-benchy's e2e_ttft: first event carrying text (content, reasoning, tool call) − t0, in ms. */
double mx_bench_ttft_ms(int64_t t0, int64_t t_tok1);
/* llama-benchy's est_ppt: max(0, ttfr − latency), in ms. */
double mx_bench_est_ppt_ms(double ttfr_ms, double latency_ms);
/*
 * The prompt tokens in the pp numerator: those the server evaluated, its
 * usage.prompt_tokens less the cached tokens it reused (cached_tokens, -1:
 * not reported); without usage (-1), the count of the server's /tokenize
 * (tokenizer_count, template overhead included: vllm bench serve's fallback).
 * Never an expected count in place of the server's: the engine fails a
 * request whose usage contradicts the count its prompt was built to
 * (llama-benchy's ±20 % substitution is not followed).
 */
int64_t mx_bench_pp_tokens(int64_t usage_prompt_tokens, int64_t cached_tokens, int64_t tokenizer_count);
/* What a server reported about a request's prompt; -1: not reported. */
struct mx_bench_prompt_seen {
        int64_t prompt_tokens; /* usage.prompt_tokens (from any chunk) */
        int64_t cached_tokens; /* usage.prompt_tokens_details.cached_tokens */
        int64_t cache_n;       /* llama-server's timings.cache_n */
        int64_t prompt_n;      /* llama-server's timings.prompt_n */
};

/*
 * Why the server's view of a prompt fails the request, or NULL: usage.prompt_tokens
 * is not the count the prompt was built to (both named, never one replacing
 * the other); the two cache counts disagree; prompt_n + cache_n is not
 * prompt_tokens; with reused_min >= 0 (llama-bench style, the context cached
 * on purpose) fewer cached tokens than reused_min, or none reported; else more
 * than cached_max (the chat template's own tokens, which every request shares
 * before its unique prefix). Without usage nothing is contradicted: the count
 * is then the server tokenizer's.
 */
char *mx_bench_prompt_problem(const struct mx_bench_prompt_seen *seen, int64_t expected, int64_t cached_max,
                              int64_t reused_min);
/* The cached tokens of seen: cached_tokens, else cache_n; -1: none reported. */
int64_t mx_bench_prompt_cached(const struct mx_bench_prompt_seen *seen);

/*
 * A server's own rate for one request, as llama-server computes its
 * prompt_per_second and predicted_per_second: n tokens ÷ ms × 1000
 * (timings.prompt_n / prompt_ms, predicted_n / predicted_ms); NAN when
 * either was not reported (n <= 0, ms not > 0).
 */
double mx_bench_server_tps(int64_t n, double ms);
/*
 * The part of TTFR − latency that the server's prompt evaluation timer does
 * not cover (request preparation: chat template, tokenization, scheduling,
 * the first chunk's way back), in ms: ttfr − latency − the server's
 * prompt_ms, so that llama-benchy's pp = n ÷ (prompt_ms + this); may be
 * negative (latency over-subtracted). NAN without prompt_ms.
 */
double mx_bench_preparation_ms(double ttfr_ms, double latency_ms, double server_prompt_ms);

/* A request's decode rate as the client saw it against the server's own timer may differ by at most this
 * factor either way (mx_bench_decode_problem). */
#define MX_BENCH_DECODE_FACTOR_MAX 2.0
/*
 * NULL when the client's decode rate of one request, ours_tps ((N - 1) over the first to the last token's
 * arrival), agrees with the server's own timer of the same request (llama-server's timings: predicted_n
 * tokens over predicted_ms, M - 1 intervals) within MX_BENCH_DECODE_FACTOR_MAX; else why not, with both
 * numbers (caller frees). Tokens that reach the client in bursts (a descheduled client reads several at
 * once) read many times faster than the server made them: that figure is the client's, not the server's.
 * NULL too when either figure is missing or the request has fewer than 8 tokens (too few to time).
 */
char *mx_bench_decode_problem(double ours_tps, int64_t predicted_n, double predicted_ms);
/* llama-benchy's pp t/s: prompt tokens ÷ est_ppt; NAN when est_ppt is 0. */
double mx_bench_pp_tps(int64_t prompt_tokens, double est_ppt_ms);
/*
 * llama-benchy's tg t/s (0.4.x, c = 1): (N − 1) ÷ (t_last_token − t_tok1), N the
 * tokens from the first text-bearing event on; NAN when N <= 1 or the span is 0
 * (all tokens in one burst).
 */
double mx_bench_tg_tps(int64_t n_tokens, int64_t t_tok1, int64_t t_last_tok);
/* vllm bench serve's E2EL: last choices-bearing event − t0, in ms. */
double mx_bench_e2el_ms(int64_t t0, int64_t t_last);
/*
 * TPOT: (E2EL − origin) ÷ (tokens − 1); NAN when tokens <= 1. mxmatrix's
 * tpot_ms takes TTFT as the origin and the tokens from the first text on
 * (one origin with ttft_ms); vllm bench serve's TPOT (tpot_vllm_ms) takes
 * TTFR (what vLLM calls TTFT) and usage.completion_tokens.
 */
double mx_bench_tpot_ms(double e2el_ms, double origin_ms, int64_t tokens);
/*
 * vllm bench serve's ITL: the gaps between consecutive choices-bearing events
 * of one request, in ms, appended to *out (n_ev − 1 of them); callers pool them
 * over all requests. Returns how many were appended.
 */
size_t mx_bench_itl_append(const int64_t *ev_us, size_t n_ev, double **out, size_t *n_out, size_t *cap);

/*
 * Running token counts: cum[i] is the number of tokens generated up to and
 * including choices-bearing event i, as the server streams it (vLLM's
 * continuous_usage_stats: usage.completion_tokens in every chunk;
 * llama-server's timings_per_token: timings.predicted_n), -1 where the event
 * carries none. They let tokens that sent no text (gpt-oss Harmony headers
 * and channel switches, for which vLLM sends no chunk) be given the time in
 * which they were really generated.
 */

/*
 * The decode span of one request (tg): from the first text-bearing event
 * (index i_tok1, count c1) to the first event at which the count reached its
 * last value cN (the event that delivered the last token, text or not).
 * *ret_tokens = cN - c1 + 1, so that mx_bench_tg_tps(*ret_tokens, t[i_tok1],
 * t[*ret_end]) = (cN - c1) / span: the tokens generated after the first text,
 * over the time they took. -ENODATA when event i_tok1 carries no count,
 * -ERANGE when a count is lower than an earlier one (*ret_end is then the
 * event where it fell).
 */
int mx_bench_decode_span(const int64_t *cum, size_t n_ev, size_t i_tok1, int64_t *ret_tokens, size_t *ret_end);
/*
 * ITL per token (the attribution of vLLM PR #42661): from the first
 * text-bearing event on, every event whose count rose by k > 0 since the
 * previous such event adds k gaps of (its time - that event's time) / k, in
 * ms; events that add no token add nothing (their time goes to the next
 * token). The mean of these gaps is 1 / tg of mx_bench_decode_span(). Returns
 * how many were appended (0 without counts).
 */
size_t mx_bench_itl_tokens_append(const int64_t *ev_us, const int64_t *cum, size_t n_ev, size_t i_tok1,
                                  double **out, size_t *n_out, size_t *cap);

/* ---- one batch of concurrent requests (llama-benchy, c > 1) ---- */

/* Σ prompt tokens ÷ (latest t_tok1 − earliest t0). */
double mx_bench_batch_pp_tps(int64_t sum_prompt_tokens, int64_t min_t0, int64_t max_tok1);
/* (Σ N − requests) ÷ (latest last token − earliest t_tok1). */
double mx_bench_batch_tg_tps(int64_t sum_tokens, size_t requests, int64_t min_tok1, int64_t max_last_tok);

/*
 * Token timestamps from the timestamps of the n text-bearing chunks that
 * carried them, as llama-benchy 0.4 does, so that a chunk of k tokens
 * (speculative decoding, --stream-interval, a parser's buffer) counts k
 * tokens, not one: with per-chunk counts (tokens[i], e.g. token_ids or the
 * difference of running usage counts) a chunk's k stamps are spread evenly
 * over the gap since the previous chunk, ending at its own stamp (the first
 * chunk's all at its stamp); without them (tokens NULL) total stamps are
 * spread evenly from the first chunk to the last (total: the tokens of those
 * chunks, e.g. from usage). total <= 0 or n == 0 with tokens NULL: one stamp
 * per chunk. Returns how many stamps *ret (a new array) holds.
 */
size_t mx_bench_token_stamps(const int64_t *chunk_ts, const int64_t *tokens, size_t n, int64_t total,
                             int64_t **ret);
/*
 * llama-benchy's peak t/s: the most token timestamps in any window of
 * window_us (a window ends at a token and holds the tokens after end −
 * window), ÷ the window; when all timestamps span more than 0 and less than
 * the window, the count ÷ the span. ts (µs) is sorted in place. NAN when n is 0.
 */
double mx_bench_peak_tps(int64_t *ts, size_t n, int64_t window_us);
