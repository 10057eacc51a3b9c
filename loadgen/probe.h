/* SPDX-License-Identifier: MIT */
/*
 * The harness's assumptions about a server, checked against the live server
 * (`mxmatrix probe URL`, and L1 after its smoke request). Each check ends as
 * one line: pass, fail or not measured, with what was seen:
 *
 *   api_key        a completion without a bearer token: 401 means a key is needed
 *   server_kind    /v1/models owned_by (vllm, llamacpp, sglang), /props for llama-server
 *   tokenize       vLLM's {prompt} -> {count, tokens}, else llama-server's {content} -> {tokens}
 *   context        vLLM /v1/models max_model_len; llama-server /props n_ctx or /v1/models meta.n_ctx
 *   streamed_usage a streamed chat with stream_options.include_usage ends with usage;
 *                  whether continuous_usage_stats is honoured
 *   logprobs_completions, logprobs_chat   legacy arrays or the `content` form
 *   metrics        GET /metrics answers Prometheus text
 *   cache_defeat   a prompt sent twice with the kind's defeat (server-kind.h) is evaluated
 *                  again: timings.prompt_n / cache_n, usage.prompt_tokens_details.cached_tokens,
 *                  vLLM's vllm:prefix_cache_hits_total; and whether the cache is on without it
 *   determinism    the same seed gave the same tokens on those two requests
 *
 * Like bench.c: event-driven on mx_http, no global state and no logging, so the
 * daemon (L1) and the client both link it. The parsing helpers below are pure
 * functions of recorded replies, for the unit test.
 */
#pragma once

#include "server-kind.h"
#include "util.h"

#include <jansson.h>

struct event_base;
struct mx_probe;

enum mx_probe_status {
        MX_PROBE_NOT_MEASURED,
        MX_PROBE_PASS,
        MX_PROBE_FAIL,
};

/* "not measured", "pass", "fail" (the words of the JSON document). */
const char *mx_probe_status_name(enum mx_probe_status s);

struct mx_probe_config {
        const char *url;     /* http://host:port (a trailing /v1 is accepted) */
        const char *model;   /* NULL: the first id of /v1/models */
        const char *api_key; /* NULL: none */
        /* What the caller expects (a run's profile); MX_SERVER_OTHER: no expectation. */
        enum mx_server_kind expect_kind;
        int64_t timeout_ms; /* per request; 0: 60 s */
};

typedef void (*mx_probe_done_cb)(struct mx_probe *p, void *userdata);

/* A probe on base; the configuration is copied. -EINVAL with a reason for a bad one. */
int mx_probe_new(struct event_base *base, const struct mx_probe_config *cfg, struct mx_probe **ret, char **reterr);
/* Start it; done runs later from the loop, exactly once unless the probe is freed first. */
void mx_probe_start(struct mx_probe *p, mx_probe_done_cb done, void *userdata);
struct mx_probe *mx_probe_free(struct mx_probe *p);
DEFINE_POINTER_CLEANUP(struct mx_probe, mx_probe_free)

/*
 * The result (new reference): {"url", "server", "model", "checks": [{"check",
 * "status", "line"}...], "failed", "not_measured"}. Checks not reached say
 * "not measured" and why.
 */
json_t *mx_probe_result_json(const struct mx_probe *p);
unsigned mx_probe_failed(const struct mx_probe *p);

/* In a result document: the line of check `check` when it failed, else NULL (borrowed). */
const char *mx_probe_result_failed(json_t *result, const char *check);

/* ---- parsing, pure (exposed for tests) ---- */

/*
 * The logprobs form of a completions or chat reply's first choice: "legacy"
 * (tokens / token_logprobs arrays of one length), "content" (an array of
 * {token, logprob}), or NULL with *ret_why saying what is there instead.
 * *ret_n: tokens with a logprob.
 */
const char *mx_probe_logprobs_form(json_t *reply, size_t *ret_n, char **ret_why);

/*
 * The context size a server states: vLLM's data[].max_model_len in
 * /v1/models, llama-server's /props default_generation_settings.n_ctx, else
 * /v1/models data[].meta.n_ctx. props may be NULL. -ENOENT when none.
 */
int mx_probe_context(json_t *models, json_t *props, int64_t *ret_n, const char **ret_source);

/* What a reply says about prompt evaluation; -1 where it says nothing. */
struct mx_probe_reuse {
        int64_t prompt_tokens; /* usage.prompt_tokens */
        int64_t cached_tokens; /* usage.prompt_tokens_details.cached_tokens */
        int64_t prompt_n;      /* timings.prompt_n (llama-server): tokens evaluated */
        int64_t cache_n;       /* timings.cache_n: tokens taken from the cache */
};
void mx_probe_reuse_of(json_t *reply, struct mx_probe_reuse *ret);

/* What a streamed reply (its whole SSE body) said about usage. */
struct mx_probe_stream_usage {
        unsigned events;       /* JSON events */
        unsigned with_usage;   /* events carrying a usage object */
        bool usage_chunk;      /* a usage event with no choices (vLLM, llama-server chat) */
        bool usage_in_choices; /* usage on an event that also carries a choice (llama-server completions) */
        int64_t completion_tokens; /* of the last usage; -1: none */
        bool done;             /* [DONE] arrived */
};
int mx_probe_stream_usage_of(const char *body, size_t len, struct mx_probe_stream_usage *ret);

/* The sum of every sample of metric `name` (labels ignored) in Prometheus text; -ENOENT when absent. */
int mx_probe_prom_sum(const char *text, const char *name, double *ret);
