/* SPDX-License-Identifier: MIT */
/*
 * The benchmark engine (L4 and `mxmatrix bench`): llama-benchy's workloads
 * against an OpenAI-compatible server that is already running, measured by a
 * streaming client on the caller's libevent loop (mx_http + mx_sse), with
 * every figure computed by bench-stats.h's named formulas.
 *
 * A benchmark is a list of tests, one per (depth D, prompt P, generation M)
 * in the order depth -> pp -> tg (llama-benchy's hierarchy). Each test sends
 * `warmup` untimed requests of its shape, then `runs` batches of
 * `concurrency` requests sent together. Every request has a fresh prompt:
 * depth tokens of random words as a system message (unique per run, so no
 * prefix is shared), then P tokens as the user message, their lengths made
 * exact with the server's /tokenize and the chat template's overhead measured
 * once (llama-benchy's --adapt-prompt), so that the server's
 * usage.prompt_tokens is D + P. Each request also carries a unique
 * cache_salt (vLLM) or cache_prompt:false (llama-server), ignore_eos and
 * max_tokens = M, and must end with finish_reason "length" and
 * completion_tokens = M; a request that does not is counted as failed and
 * named, never dropped silently. usage.prompt_tokens_details.cached_tokens
 * is checked where the server reports it.
 *
 * With llama_bench_style, a test at depth D > 0 first loads the context (D
 * tokens, max_tokens 1, reported as "ctx_pp @ dD") and then sends the same
 * context plus the prompt under the same cache_salt, so that pp counts only
 * the P new tokens over a cached depth, as llama-bench's `pp @ dD` does
 * (llama-benchy --enable-prefix-caching); there a cache hit is expected.
 *
 * The engine has no global state and no logging: the daemon's L4 level and
 * the client both link it. Results are a JSON document (mx_bench_result_json)
 * whose definitions and statistics are named in it.
 */
#pragma once

#include "util.h"

#include <jansson.h>

struct event_base;
struct mx_bench;

/* Limits on what a caller (a matrix file, a command line) may ask for. */
#define MX_BENCH_TOKENS_MAX 1048576 /* pp, tg, depth */
#define MX_BENCH_LIST_MAX 32        /* values of pp, tg, depth each */
#define MX_BENCH_RUNS_MAX 10000
#define MX_BENCH_WARMUP_MAX 1000
#define MX_BENCH_CONCURRENCY_MAX 128
#define MX_BENCH_TIMEOUT_DEFAULT_MS (600 * 1000)

enum mx_bench_latency_mode {
        MX_BENCH_LATENCY_API,        /* GET /v1/models round trip, whole body (llama-benchy's default) */
        MX_BENCH_LATENCY_GENERATION, /* first event of a streamed 1-token request */
        MX_BENCH_LATENCY_NONE,       /* 0 */
        _MX_BENCH_LATENCY_MAX,
        _MX_BENCH_LATENCY_INVALID = -EINVAL,
};
const char *mx_bench_latency_mode_to_string(enum mx_bench_latency_mode m);
enum mx_bench_latency_mode mx_bench_latency_mode_from_string(const char *s);

struct mx_bench_config {
        const char *url;   /* base URL: http://host:port (a trailing /v1 is accepted) */
        const char *model; /* NULL: the first id of GET /v1/models */
        const char *api_key;
        int64_t pp[MX_BENCH_LIST_MAX];
        size_t n_pp;
        int64_t tg[MX_BENCH_LIST_MAX];
        size_t n_tg;
        int64_t depth[MX_BENCH_LIST_MAX];
        size_t n_depth;
        unsigned runs;        /* batches per test */
        unsigned warmup;      /* untimed requests per test */
        unsigned concurrency; /* requests per batch */
        bool llama_bench_style;
        enum mx_bench_latency_mode latency_mode;
        int64_t timeout_ms; /* per request; 0: MX_BENCH_TIMEOUT_DEFAULT_MS */
        uint64_t seed;      /* prompt words and salts; 0: random */
        /* Sampling sent with every request (seed 002's workload: temperature 1.0, top_p 1.0, seed 42). */
        double temperature;
        double top_p;
        int64_t sampling_seed; /* < 0: none sent */
        bool keep_requests; /* keep every request's raw stamps in the JSON */
        /*
         * Testing the checks: every request of a test gets the same prompt,
         * without a unique prefix or cache field (llama-server: cache_prompt
         * true), so that a server's cache is reused and the requests fail.
         */
        bool force_cache_reuse;
        /*
         * Tests only, not on the command line: "ignore_eos" without "min_tokens", the request that
         * vLLM with gpt-oss fails once the model ends its turn early (vllm#50690, server-kind.h).
         */
        bool ignore_eos_only;
};

/* Seed 002's defaults: pp 2048, tg 32 and 128, depths 0/4096/8192, 10 runs, 3 warm-ups, c = 1, temperature
 * 1.0, top_p 1.0, seed 42. */
void mx_bench_config_defaults(struct mx_bench_config *c);
/* Check a configuration against the limits above; -EINVAL/-E2BIG with a reason naming the field. */
int mx_bench_config_check(const struct mx_bench_config *c, char **reterr);

/*
 * Progress lines ("tokenize: /tokenize (vLLM form)", "pp2048 tg32 run 3/10")
 * for a caller that wants to show or log them; may be NULL.
 */
typedef void (*mx_bench_progress_cb)(void *userdata, const char *line);
/* The benchmark finished (error 0, even when requests failed) or could not go on (negative errno, reason). */
typedef void (*mx_bench_done_cb)(struct mx_bench *b, int error, const char *reason, void *userdata);

/* A benchmark on base; the configuration is copied. -EINVAL/-E2BIG for a bad one. */
int mx_bench_new(struct event_base *base, const struct mx_bench_config *cfg, struct mx_bench **ret,
                 char **reterr);
/* Start it; done runs later from the loop, exactly once unless the benchmark is freed first. */
int mx_bench_start(struct mx_bench *b, mx_bench_done_cb done, mx_bench_progress_cb progress, void *userdata);
/* Cancel whatever is in flight (no callback runs) and free. */
struct mx_bench *mx_bench_free(struct mx_bench *b);
DEFINE_POINTER_CLEANUP(struct mx_bench, mx_bench_free)

/*
 * The window of each test's measured requests: called with begin true before its first measured batch (after
 * its warm-ups) and with begin false after its last, name as in the result ("pp2048 tg32"). The engine sends
 * nothing until the caller calls mx_bench_resume() (at once or later on the loop): L4 reads the server's
 * /metrics and the GPU's energy counter there, so no request is in flight while it reads. Set before
 * mx_bench_start(); the callback gets mx_bench_start()'s userdata.
 */
typedef void (*mx_bench_window_cb)(struct mx_bench *b, size_t test, const char *name, bool begin, void *userdata);
void mx_bench_set_window_hook(struct mx_bench *b, mx_bench_window_cb cb);
/* Go on after a window callback. */
void mx_bench_resume(struct mx_bench *b);
/* Tokens the server generated for test's measured requests (context loads included; usage or the count). */
int64_t mx_bench_test_tokens(const struct mx_bench *b, size_t test);

/* Requests measured (warm-ups excluded) and how many of them failed. */
void mx_bench_counts(const struct mx_bench *b, unsigned *ret_measured, unsigned *ret_failed);

/*
 * The result document (new reference): configuration, server facts,
 * definitions, statistics conventions, one entry per llama-benchy row
 * ("tests"), serving metrics per test ("serving"), seed 002's Results block
 * ("results") and, with keep_requests, every request's stamps.
 */
json_t *mx_bench_result_json(const struct mx_bench *b);
