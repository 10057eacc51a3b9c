/* SPDX-License-Identifier: MIT */
/*
 * The benchmark engine (see bench.h). One driver walks through the stages
 * below; every network step is an mx_http call whose done callback moves the
 * driver on, so nothing blocks and the caller's loop keeps running:
 *
 *   models     GET /v1/models: the model id and who serves it (owned_by)
 *   tokenize   POST /tokenize in vLLM's form {model, prompt,
 *              add_special_tokens} (vLLM, SGLang), else llama-server's
 *              {content, add_special}
 *   adapt      the chat template's overhead, as llama-benchy's --adapt-prompt:
 *              usage.prompt_tokens of a user-only and of a system + user
 *              request minus the raw token counts of their texts
 *   latency    llama-benchy's --latency-mode (api, generation, none)
 *   tests      per test: warm-ups, then runs; per batch the prompts are built
 *              (random words, lengths checked with /tokenize), then all of the
 *              batch's requests are sent at once
 *
 * Stamps: t0 is taken immediately before the request is handed to libcurl;
 * every SSE event gets the CLOCK_MONOTONIC time at which libcurl handed over
 * the bytes that completed it (http.h's on_data), taken before any parsing.
 */
#include "bench.h"

#include "bench-stats.h"
#include "http.h"
#include "prompt.h"
#include "server-kind.h"
#include "sse.h"

#include <event2/event.h>
#include <inttypes.h>
#include <math.h>
#include <unistd.h>

#define LATENCY_PROBES 3
#define ADAPT_TEXT "Warmup Warmup Warmup Warmup Warmup Warmup Warmup Warmup Warmup Warmup"
#define CTX_USER_TEXT "."
#define PEAK_WINDOW_US 1000000
/* Events a request may stream per generated token (role, finish and usage chunks on top). */
#define EVENTS_PER_TOKEN_MAX 4
#define ERROR_TEXT_MAX 300

enum req_kind {
        REQ_MEASURED, /* a run's request (or a warm-up's) */
        REQ_CTX,      /* llama-bench style: loads the context */
        REQ_ADAPT_USER,
        REQ_ADAPT_CTX,
        REQ_LATENCY,
};

/* One streamed chat completion and everything measured about it. */
struct breq {
        struct mx_bench *b;
        struct mx_http_call *call;
        enum req_kind kind;
        bool warmup;
        unsigned test, run; /* run: 0-based; warm-ups count separately */
        char salt[40];
        char prefix[16];    /* starts the request's first message ("": none, the forced-reuse mode) */
        uint64_t text_seed; /* the word sequence of its texts */
        char *depth_text, *user_text;
        int64_t depth_target, user_target; /* raw tokens wanted for each text */
        int64_t max_tokens;
        int64_t expected_prompt; /* what usage.prompt_tokens must be */
        int64_t cached_max;      /* the most cached prompt tokens the server may report (the chat template's) */
        int64_t reused_min;      /* llama-bench style: the fewest it must report (the context's); -1: none */
        struct mx_sse sse;
        int64_t now; /* stamp of the bytes being fed */
        bool sse_live;
        /* stamps, CLOCK_MONOTONIC µs; 0: did not happen */
        int64_t t0, t_headers, t_resp, t_tok1, t_last, t_last_tok, t_usage, t_done, t_end;
        int64_t *ev; /* every choices-bearing event */
        size_t n_ev, cap_ev;
        int64_t *cum; /* running token count of each choices-bearing event (bench-stats.h); -1: none */
        size_t cap_cum;
        const char *cum_field; /* which field carried the running counts, or NULL: none did */
        size_t i_tok1;         /* ev index of the first text-bearing event */
        int64_t *tok; /* every text-bearing event */
        size_t n_tok, cap_tok;
        int64_t prompt_tokens, completion_tokens, cached_tokens; /* -1: not reported */
        int64_t cache_n, prompt_n;                                /* llama-server's timings; -1: none */
        int64_t predicted_n;                                      /* the same; -1: none */
        double prompt_ms, predicted_ms;                           /* the same, ms; -1: none */
        int64_t draft_n, draft_accepted; /* llama-server's timings with speculative decoding; -1: none */
        int64_t cum_before_tok1;                                  /* running counts; -1: none */
        int64_t n_decode;          /* tg's N: tokens from the first text-bearing event on; -1: unknown */
        const char *decode_source; /* where n_decode came from */
        const char *known_issue;   /* the server's known issue that failed the request, or NULL */
        char finish[24];
        const char *first_field;
        long status;
        char *error; /* NULL: the request is valid */
        bool done;
};

/* One (depth, pp, tg) test and its requests. */
struct test {
        int64_t depth, pp, tg;
        struct breq **reqs; /* measured main requests, in order */
        size_t n_reqs, cap_reqs;
        struct breq **ctx; /* llama-bench style: measured context loads */
        size_t n_ctx, cap_ctx;
};

struct mx_bench {
        struct event_base *base;
        struct mx_bench_config cfg;
        char *url; /* base without a trailing slash or /v1 */
        char *model;
        char *auth_header;
        struct mx_http *http;
        struct event *kick;
        struct event *resume; /* goes on after a window callback */
        mx_bench_window_cb window;
        bool window_begun, window_ended; /* the current test's window callbacks were made */
        mx_bench_done_cb done;
        mx_bench_progress_cb progress;
        void *userdata;
        bool started, finished;
        uint64_t rng;
        uint64_t n_requests;
        enum mx_server_kind server;
        enum mx_tokenize_form tok_form;
        struct mx_prompt_tokenizer tk;
        /* adapt: raw counts and usage of the two probes */
        int64_t t_adapt_text, t_dot, p_adapt_user, p_adapt_ctx;
        int64_t delta_user, delta_ctx;
        /* latency */
        double latency_probe_ms[LATENCY_PROBES];
        unsigned n_latency;
        int64_t latency_t0;
        double latency_ms;
        /* tests */
        struct test *tests;
        size_t n_tests;
        size_t cur_test;
        unsigned cur_warm, cur_run; /* warm-ups done, runs done in the current test */
        struct breq *batch[MX_BENCH_CONCURRENCY_MAX];
        unsigned n_batch, n_built, n_sent, n_done;
        bool batch_ctx_phase;
        /* prompt building: which text of which request is being built */
        unsigned build_req;
        bool build_user;
        struct mx_prompt_build *pbuild; /* a build or count in flight */
        double tokens_per_word;         /* of the last build: the next one's first guess */
        uint64_t test_seed;             /* forced-reuse mode: every prompt of the test the same */
        /* a pending tokenize call's continuation */
        void (*tok_cont)(struct mx_bench *b, int64_t count);
        struct breq **all; /* every request made, for freeing */
        size_t n_all, cap_all;
        unsigned measured, failed;
        unsigned failed_known; /* of failed: lost to a known issue of the server (server-kind.h) */
        int64_t started_real_us, finished_real_us;
};

/* ---- configuration ---- */

static const char *const latency_mode_names[_MX_BENCH_LATENCY_MAX] = {
        [MX_BENCH_LATENCY_API] = "api",
        [MX_BENCH_LATENCY_GENERATION] = "generation",
        [MX_BENCH_LATENCY_NONE] = "none",
};

const char *mx_bench_latency_mode_to_string(enum mx_bench_latency_mode m)
{
        return m >= 0 && m < _MX_BENCH_LATENCY_MAX ? latency_mode_names[m] : NULL;
}

enum mx_bench_latency_mode mx_bench_latency_mode_from_string(const char *s)
{
        for (int i = 0; s && i < _MX_BENCH_LATENCY_MAX; i++)
                if (streq(s, latency_mode_names[i]))
                        return (enum mx_bench_latency_mode)i;
        return _MX_BENCH_LATENCY_INVALID;
}

void mx_bench_config_defaults(struct mx_bench_config *c)
{
        *c = (struct mx_bench_config){
                .pp = {2048},
                .n_pp = 1,
                .tg = {32, 128},
                .n_tg = 2,
                .depth = {0, 4096, 8192},
                .n_depth = 3,
                .runs = 10,
                .warmup = 3,
                .concurrency = 1,
                .latency_mode = MX_BENCH_LATENCY_API,
                .temperature = 1.0,
                .top_p = 1.0,
                .sampling_seed = 42,
        };
}

static int check_list(const char *what, const int64_t *v, size_t n, int64_t min, char **reterr)
{
        if (n == 0)
                return mx_reterr(reterr, -EINVAL, "benchmark: no %s value given", what);
        if (n > MX_BENCH_LIST_MAX)
                return mx_reterr(reterr, -E2BIG, "benchmark: more than %d %s values", MX_BENCH_LIST_MAX, what);
        for (size_t i = 0; i < n; i++)
                if (v[i] < min || v[i] > MX_BENCH_TOKENS_MAX)
                        return mx_reterr(reterr, -EINVAL, "benchmark: %s %" PRId64 " out of range (%" PRId64 "..%d)",
                                         what, v[i], min, MX_BENCH_TOKENS_MAX);
        return 0;
}

int mx_bench_config_check(const struct mx_bench_config *c, char **reterr)
{
        int r;

        if (!c->url || !startswith(c->url, "http://"))
                return mx_reterr(reterr, -EINVAL, "benchmark: the URL must start with http:// (got '%s')",
                                 strna(c->url));
        if (strlen(c->url) > MX_HTTP_URL_MAX / 2)
                return mx_reterr(reterr, -E2BIG, "benchmark: URL too long");
        if (c->model && (strlen(c->model) == 0 || strlen(c->model) > 1024))
                return mx_reterr(reterr, -EINVAL, "benchmark: model name empty or longer than 1024 bytes");
        if (c->api_key && (strlen(c->api_key) > 1024 || strpbrk(c->api_key, "\r\n")))
                return mx_reterr(reterr, -EINVAL, "benchmark: API key longer than 1024 bytes or with a line break");
        if ((r = check_list("pp", c->pp, c->n_pp, 1, reterr)) < 0 ||
            (r = check_list("tg", c->tg, c->n_tg, 2, reterr)) < 0 ||
            (r = check_list("depth", c->depth, c->n_depth, 0, reterr)) < 0)
                return r;
        if (c->runs < 1 || c->runs > MX_BENCH_RUNS_MAX)
                return mx_reterr(reterr, -EINVAL, "benchmark: runs %u out of range (1..%d)", c->runs,
                                 MX_BENCH_RUNS_MAX);
        if (c->warmup > MX_BENCH_WARMUP_MAX)
                return mx_reterr(reterr, -EINVAL, "benchmark: warmup %u out of range (0..%d)", c->warmup,
                                 MX_BENCH_WARMUP_MAX);
        if (c->concurrency < 1 || c->concurrency > MX_BENCH_CONCURRENCY_MAX)
                return mx_reterr(reterr, -EINVAL, "benchmark: concurrency %u out of range (1..%d)",
                                 c->concurrency, MX_BENCH_CONCURRENCY_MAX);
        if (mx_bench_latency_mode_to_string(c->latency_mode) == NULL)
                return mx_reterr(reterr, -EINVAL, "benchmark: unknown latency mode");
        if (c->timeout_ms < 0 || c->timeout_ms > MX_HTTP_TIMEOUT_MAX_MS)
                return mx_reterr(reterr, -EINVAL, "benchmark: timeout out of range");
        return 0;
}

/* ---- small helpers ---- */

/* xorshift64*: prompts and salts; quality is not a concern, uniqueness and speed are. */
static uint64_t rng_next(struct mx_bench *b)
{
        b->rng ^= b->rng >> 12;
        b->rng ^= b->rng << 25;
        b->rng ^= b->rng >> 27;
        return b->rng * UINT64_C(2685821657736338717);
}

_printf_(2, 3) static void progress(struct mx_bench *b, const char *fmt, ...)
{
        _cleanup_free_ char *line = NULL;
        va_list ap;

        if (!b->progress)
                return;
        va_start(ap, fmt);
        line = xvasprintf(fmt, ap);
        va_end(ap);
        b->progress(b->userdata, line);
}

/* End the benchmark: the done callback runs from the kick event, never from inside mx_http. */
static void finish(struct mx_bench *b, int error, const char *reason)
{
        mx_bench_done_cb cb = b->done;

        if (b->finished)
                return;
        b->finished = true;
        b->finished_real_us = mx_now_real_us();
        if (cb)
                cb(b, error, reason, b->userdata);
}

_printf_(3, 4) static void fail_bench(struct mx_bench *b, int error, const char *fmt, ...)
{
        _cleanup_free_ char *reason = NULL;
        va_list ap;

        va_start(ap, fmt);
        reason = xvasprintf(fmt, ap);
        va_end(ap);
        finish(b, error, reason);
}

static char *url_of(const struct mx_bench *b, const char *path)
{
        return xasprintf("%s%s", b->url, path);
}

/* An excerpt of a response body fit for an error message. */
static char *body_excerpt(const struct mx_http_response *resp)
{
        return mx_escape(resp->body, 200);
}

/* ---- plain (non-streamed) calls ---- */

static int plain_call(struct mx_bench *b, const char *method, const char *path, json_t *body, mx_http_done_cb cb,
                      void *userdata)
{
        _cleanup_free_ char *url = url_of(b, path), *text = NULL, *err = NULL;
        const char *headers[] = {b->auth_header, NULL};
        struct mx_http_request req = {
                .method = method,
                .url = url,
                .headers = b->auth_header ? headers : NULL,
                .timeout_ms = b->cfg.timeout_ms ?: MX_BENCH_TIMEOUT_DEFAULT_MS,
        };
        int r;

        if (body) {
                text = json_dumps(body, JSON_COMPACT);
                if (!text)
                        mx_die("json_dumps failed");
                req.body = text;
        }
        r = mx_http_start(b->http, &req, cb, userdata, NULL, &err);
        if (r < 0)
                fail_bench(b, r, "%s %s: %s", method, url, strna(err));
        return r;
}

/* ---- tokenize ---- */

static void tokenize_done_cb(void *userdata, int64_t n, const char *reason)
{
        struct mx_bench *b = userdata;

        b->pbuild = NULL;
        if (n < 0 && b->tok_form != MX_TOKENIZE_NONE) {
                fail_bench(b, (int)n, "POST %s/tokenize: %s", b->url, strna(reason));
                return;
        }
        b->tok_cont(b, n);
}

/* Count text with form (probing: a failure reaches cont as a negative count while tok_form is none). */
static void tokenize(struct mx_bench *b, enum mx_tokenize_form form, const char *text,
                     void (*cont)(struct mx_bench *b, int64_t count))
{
        _cleanup_free_ char *err = NULL;
        int r;

        b->tok_cont = cont;
        r = mx_prompt_count(&b->tk, form, text, false, tokenize_done_cb, b, &b->pbuild, &err);
        if (r < 0)
                fail_bench(b, r, "POST %s/tokenize: %s", b->url, strna(err));
}

/* ---- streamed requests ---- */

static struct breq *breq_new(struct mx_bench *b, enum req_kind kind)
{
        struct breq *r = xcalloc(1, sizeof(*r));

        r->b = b;
        r->kind = kind;
        r->prompt_tokens = r->completion_tokens = r->cached_tokens = -1;
        r->cache_n = r->prompt_n = r->predicted_n = -1;
        r->prompt_ms = r->predicted_ms = -1;
        r->draft_n = r->draft_accepted = -1;
        r->cached_max = r->reused_min = -1;
        r->cum_before_tok1 = r->n_decode = -1;
        snprintf(r->salt, sizeof(r->salt), "mxbench-%016" PRIx64 "-%" PRIu64, rng_next(b), ++b->n_requests);
        MX_GROW(b->all, b->cap_all, b->n_all + 1);
        b->all[b->n_all++] = r;
        return r;
}

static void breq_free(struct breq *r)
{
        if (!r)
                return;
        mx_http_cancel(r->call);
        if (r->sse_live)
                mx_sse_done(&r->sse);
        free(r->depth_text);
        free(r->user_text);
        free(r->ev);
        free(r->cum);
        free(r->tok);
        free(r->error);
        free(r);
}

_printf_(2, 3) static void breq_error(struct breq *r, const char *fmt, ...)
{
        va_list ap;

        if (r->error)
                return; /* the first error is the cause */
        va_start(ap, fmt);
        r->error = xvasprintf(fmt, ap);
        va_end(ap);
}

static bool nonempty_string(json_t *v)
{
        return json_is_string(v) && json_string_length(v) > 0;
}

/* Which field of a choice carries generated text, or NULL (role-only, empty, finish-only chunks). */
static const char *text_field(json_t *choice)
{
        json_t *delta = json_object_get(choice, "delta");

        if (nonempty_string(json_object_get(delta, "content")))
                return "content";
        if (nonempty_string(json_object_get(delta, "reasoning")))
                return "reasoning";
        if (nonempty_string(json_object_get(delta, "reasoning_content")))
                return "reasoning_content";
        if (json_is_array(json_object_get(delta, "tool_calls")) &&
            json_array_size(json_object_get(delta, "tool_calls")) > 0)
                return "tool_calls";
        if (nonempty_string(json_object_get(choice, "text")))
                return "text";
        return NULL;
}

/*
 * llama-server's timings object: prompt tokens it evaluated (prompt_n) and took from its cache (cache_n),
 * and its own timers (prompt_ms, predicted_n, predicted_ms). Every chunk may carry one (timings_per_token);
 * the last one read, the final chunk's, is the request's.
 */
static void read_timings(struct breq *r, json_t *timings)
{
        json_t *v;

        if (json_is_number(v = json_object_get(timings, "prompt_ms")))
                r->prompt_ms = json_number_value(v);
        if (json_is_number(v = json_object_get(timings, "predicted_ms")))
                r->predicted_ms = json_number_value(v);
        if (json_is_integer(v = json_object_get(timings, "predicted_n")))
                r->predicted_n = json_integer_value(v);
        if (json_is_integer(v = json_object_get(timings, "draft_n")))
                r->draft_n = json_integer_value(v);
        if (json_is_integer(v = json_object_get(timings, "draft_n_accepted")))
                r->draft_accepted = json_integer_value(v);
        if (json_is_integer(json_object_get(timings, "cache_n")))
                r->cache_n = json_integer_value(json_object_get(timings, "cache_n"));
        if (json_is_integer(json_object_get(timings, "prompt_n")))
                r->prompt_n = json_integer_value(json_object_get(timings, "prompt_n"));
}

static void read_usage(struct breq *r, json_t *usage)
{
        json_t *details = json_object_get(usage, "prompt_tokens_details");

        if (json_is_integer(json_object_get(usage, "prompt_tokens")))
                r->prompt_tokens = json_integer_value(json_object_get(usage, "prompt_tokens"));
        if (json_is_integer(json_object_get(usage, "completion_tokens")))
                r->completion_tokens = json_integer_value(json_object_get(usage, "completion_tokens"));
        if (json_is_integer(json_object_get(details, "cached_tokens")))
                r->cached_tokens = json_integer_value(json_object_get(details, "cached_tokens"));
}

/*
 * The running count of generated tokens a chunk carries: usage.completion_tokens (vLLM's and SGLang's
 * continuous_usage_stats) or timings.predicted_n (llama-server's timings_per_token); -1 when it carries none.
 */
static int64_t event_count(json_t *o, const char **ret_field)
{
        json_t *v = json_object_get(json_object_get(o, "usage"), "completion_tokens");

        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                *ret_field = "usage.completion_tokens";
                return json_integer_value(v);
        }
        v = json_object_get(json_object_get(o, "timings"), "predicted_n");
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                *ret_field = "timings.predicted_n";
                return json_integer_value(v);
        }
        return -1;
}

/* The first error of a request that came from the server: its known issue named (server-kind.h). */
static void breq_server_error(struct breq *r, const char *what, const char *message)
{
        const char *issue = mx_server_known_issue(message);

        if (issue && !r->error)
                r->known_issue = issue;
        if (issue)
                breq_error(r, "server known issue %s: %s: %s", issue, what, message);
        else
                breq_error(r, "%s: %s", what, message);
}

/* One SSE event; r->now is when its last bytes arrived. */
static int on_event(const struct mx_sse_event *ev, void *userdata)
{
        struct breq *r = userdata;
        int64_t t = r->now;
        json_auto_t *o = NULL;
        json_t *choices, *usage, *err;

        if (mx_sse_is_done(ev)) {
                r->t_done = t;
                return 0;
        }
        o = json_loadb(ev->data, ev->data_len, 0, NULL);
        if (!json_is_object(o)) {
                _cleanup_free_ char *ex = mx_escape(ev->data, 80);
                breq_error(r, "an event is not a JSON object: %s", ex);
                return 0;
        }
        if ((err = json_object_get(o, "error"))) {
                _cleanup_free_ char *msg = mx_escape(json_string_value(json_object_get(err, "message"))
                                                             ?: json_string_value(err) ?: "?",
                                                     ERROR_TEXT_MAX);
                breq_server_error(r, "error event", msg);
                return 0;
        }
        choices = json_object_get(o, "choices");
        usage = json_object_get(o, "usage");
        if (json_is_object(json_object_get(o, "timings")))
                read_timings(r, json_object_get(o, "timings"));
        if (json_is_array(choices) && json_array_size(choices) > 0) {
                json_t *ch = json_array_get(choices, 0);
                const char *field = text_field(ch);
                json_t *fr = json_object_get(ch, "finish_reason");

                if (r->n_ev >= (size_t)(r->max_tokens * EVENTS_PER_TOKEN_MAX + 64))
                        return -E2BIG; /* a server that never stops: abort the transfer */
                if (!r->t_resp)
                        r->t_resp = t;
                r->t_last = t;
                MX_GROW(r->ev, r->cap_ev, r->n_ev + 1);
                MX_GROW(r->cum, r->cap_cum, r->n_ev + 1);
                r->cum[r->n_ev] = event_count(o, &r->cum_field);
                r->ev[r->n_ev++] = t;
                if (field) {
                        if (!r->t_tok1) {
                                r->t_tok1 = t;
                                r->first_field = field;
                                r->i_tok1 = r->n_ev - 1;
                        }
                        r->t_last_tok = t;
                        MX_GROW(r->tok, r->cap_tok, r->n_tok + 1);
                        r->tok[r->n_tok++] = t;
                }
                if (json_is_string(fr))
                        snprintf(r->finish, sizeof(r->finish), "%s", json_string_value(fr));
                /* usage may ride on a choices chunk (running counts, or a server without a usage-only chunk) */
                if (json_is_object(usage))
                        read_usage(r, usage);
        } else if (json_is_object(usage)) {
                r->t_usage = t;
                read_usage(r, usage);
        }
        return 0;
}

static int on_data(void *userdata, const char *p, size_t n, int64_t t_mono_us)
{
        struct breq *r = userdata;

        r->now = t_mono_us;
        return mx_sse_feed(&r->sse, p, n, on_event, r);
}

static void stream_done_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata);

/* The chat request body of r. */
static json_t *request_body(struct mx_bench *b, struct breq *r)
{
        json_t *messages = json_array();
        json_t *o;

        if (r->depth_text)
                json_array_append_new(messages,
                                      json_pack("{s:s,s:s}", "role", "system", "content", r->depth_text));
        json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content", r->user_text));
        o = json_pack("{s:s,s:o,s:I,s:b,s:{s:b,s:b}}", "model", b->model, "messages", messages, "max_tokens",
                      (json_int_t)r->max_tokens, "stream", true, "stream_options", "include_usage", true,
                      "continuous_usage_stats", true);
        /* the workload's sampling, sent rather than left to each server's defaults (llama-server: 0.8) */
        json_object_set_new(o, "temperature", json_real(b->cfg.temperature));
        json_object_set_new(o, "top_p", json_real(b->cfg.top_p));
        if (b->cfg.sampling_seed >= 0)
                json_object_set_new(o, "seed", json_integer(b->cfg.sampling_seed));
        /* exactly max_tokens without vLLM's gpt-oss ignore_eos failure (server-kind.h) */
        if (b->cfg.ignore_eos_only)
                json_object_set_new(o, "ignore_eos", json_true());
        else
                mx_server_exact_tokens(o, r->max_tokens);
        /* llama-server ignores continuous_usage_stats; its running count is timings.predicted_n */
        if (b->server == MX_SERVER_LLAMA)
                json_object_set_new(o, "timings_per_token", json_true());
        /*
         * Cache defeat (bench-methods.md §4.11): the server's field beside the unique prefix. llama-bench
         * style wants the context cached (vLLM: the context and its prompt share one salt); the forced-reuse
         * mode wants every cache to hit, to show that the checks catch it.
         */
        if (b->cfg.force_cache_reuse) {
                if (b->server == MX_SERVER_LLAMA)
                        json_object_set_new(o, "cache_prompt", json_true());
        } else if (b->server == MX_SERVER_LLAMA && b->cfg.llama_bench_style)
                json_object_set_new(o, "cache_prompt", json_true());
        else
                mx_server_defeat_cache(b->server, o, r->salt);
        return o;
}

/* Send r now: t0 is the last thing before the request goes to libcurl. */
static int breq_send(struct mx_bench *b, struct breq *r)
{
        _cleanup_free_ char *url = url_of(b, "/v1/chat/completions"), *text = NULL, *err = NULL;
        json_auto_t *body = request_body(b, r);
        const char *headers[] = {b->auth_header, NULL};
        struct mx_http_request req = {
                .method = "POST",
                .url = url,
                .headers = b->auth_header ? headers : NULL,
                .timeout_ms = b->cfg.timeout_ms ?: MX_BENCH_TIMEOUT_DEFAULT_MS,
                .max_body = 64 * 1024,
                .on_data = on_data,
        };
        int ret;

        text = json_dumps(body, JSON_COMPACT);
        if (!text)
                mx_die("json_dumps failed");
        req.body = text;
        mx_sse_init(&r->sse, 0);
        r->sse_live = true;
        r->t0 = mx_now_mono_us();
        ret = mx_http_start(b->http, &req, stream_done_cb, r, &r->call, &err);
        if (ret < 0)
                fail_bench(b, ret, "POST %s: %s", url, strna(err));
        return ret;
}

/*
 * tg's N and the event of the last token (bench-methods.md §4.1, bench-stats.h): from the running counts
 * when the server streams them, so that tokens without text (vLLM sends no chunk for gpt-oss's Harmony
 * headers, channel switches and turn end) are given the time in which they were generated; else
 * usage.completion_tokens over the text-bearing events' span, else the text-bearing events. Running
 * counts that fall, or end elsewhere than usage.completion_tokens, fail the request with both numbers.
 */
static void breq_decode_span(struct breq *r)
{
        int64_t n = 0, last = -1;
        size_t end = 0;
        int q;

        if (!r->t_tok1)
                return;
        for (size_t i = 0; i < r->n_ev; i++)
                last = MX_MAX(last, r->cum[i]);
        q = last >= 0 ? mx_bench_decode_span(r->cum, r->n_ev, r->i_tok1, &n, &end) : -ENODATA;
        if (q == -ERANGE) {
                breq_error(r, "the running token count (%s) fell to %" PRId64 " at event %zu", r->cum_field,
                           r->cum[end], end + 1);
                return;
        }
        /* a server's count is bounded by what was asked before anything is sized by it */
        if (q >= 0 && last > r->max_tokens) {
                breq_error(r, "the running token count (%s) reached %" PRId64 ", more than the %" PRId64
                              " tokens asked (max_tokens)",
                           r->cum_field, last, r->max_tokens);
                return;
        }
        if (q >= 0 && r->completion_tokens >= 0 && last != r->completion_tokens) {
                breq_error(r, "the running token count (%s) ends at %" PRId64 ", usage.completion_tokens says %" PRId64,
                           r->cum_field, last, r->completion_tokens);
                return;
        }
        if (q >= 0) {
                r->n_decode = n;
                r->cum_before_tok1 = r->cum[r->i_tok1] - 1;
                r->t_last_tok = r->ev[end];
                r->decode_source = streq(r->cum_field, "timings.predicted_n")
                                           ? "running counts (timings.predicted_n)"
                                           : "running counts (usage.completion_tokens)";
        } else if (r->completion_tokens > 0) {
                r->n_decode = r->completion_tokens;
                r->decode_source = "usage (no running counts: tokens without text are counted in the span)";
        } else {
                r->n_decode = (int64_t)r->n_tok;
                r->decode_source = "text-bearing events";
        }
}

/* The cached prompt tokens the server reported: usage's, else llama-server's timings.cache_n; -1: none. */
static int64_t breq_cached(const struct breq *r)
{
        return r->cached_tokens >= 0 ? r->cached_tokens : r->cache_n;
}

/* The prompt as the server saw it, against what r was built to (bench-stats.h: mx_bench_prompt_problem). */
static void breq_check_prompt(struct breq *r)
{
        struct mx_bench_prompt_seen seen = {
                .prompt_tokens = r->prompt_tokens,
                .cached_tokens = r->cached_tokens,
                .cache_n = r->cache_n,
                .prompt_n = r->prompt_n,
        };
        _cleanup_free_ char *problem = mx_bench_prompt_problem(&seen, r->expected_prompt, r->cached_max, r->reused_min);

        if (problem)
                breq_error(r, "%s", problem);
}

/* The client's decode rate against the server's own timer of the same request (llama-server's timings). */
static void breq_check_decode(struct breq *r)
{
        _cleanup_free_ char *problem = NULL;

        problem = mx_bench_decode_problem(mx_bench_tg_tps(r->max_tokens, r->t_tok1, r->t_last_tok), r->predicted_n,
                                          r->predicted_ms);
        if (problem)
                breq_error(r, "%s", problem);
}

/* Check a finished request against what was asked (bench-methods.md §4.12): failures are named. */
static void breq_validate(struct breq *r, const struct mx_http_response *resp)
{
        if (resp->error < 0) {
                breq_error(r, "transport: %s", strna(resp->error_text));
                return;
        }
        if (resp->status != 200) {
                _cleanup_free_ char *ex = body_excerpt(resp), *what = xasprintf("HTTP %ld", resp->status);
                breq_server_error(r, what, ex);
                return;
        }
        if (mx_sse_finish(&r->sse) > 0)
                breq_error(r, "the stream ended inside an event");
        /* a 1-token context load or probe may produce only a header token without text */
        if (!r->t_tok1 && r->kind == REQ_MEASURED)
                breq_error(r, "no event carried text (content and reasoning empty or null)");
        else if (!r->finish[0])
                breq_error(r, "no finish_reason");
        else if (!streq(r->finish, "length"))
                breq_error(r, "finish_reason \"%s\", expected \"length\" (ignore_eos)", r->finish);
        if (r->completion_tokens >= 0 && r->completion_tokens != r->max_tokens)
                breq_error(r, "completion_tokens %" PRId64 ", expected %" PRId64, r->completion_tokens,
                           r->max_tokens);
        breq_decode_span(r);
        if (r->kind == REQ_MEASURED || r->kind == REQ_CTX)
                breq_check_prompt(r);
        if (r->kind == REQ_MEASURED)
                breq_check_decode(r);
}

/* ---- stages ---- */

static void next_batch(struct mx_bench *b);
static void start_latency(struct mx_bench *b);
static void latency_next(struct mx_bench *b);

static void adapt_stream_done(struct mx_bench *b, struct breq *r)
{
        /* a 1-token answer may carry no text (a gpt-oss header token): only the usage matters here */
        if (r->status != 200 || r->prompt_tokens < 0) {
                fail_bench(b, -EPROTO, "measuring the chat template's overhead: %s",
                           r->status != 200 ? strna(r->error) : "the server reported no usage.prompt_tokens");
                return;
        }
        if (r->kind == REQ_ADAPT_USER) {
                struct breq *c = breq_new(b, REQ_ADAPT_CTX);

                b->p_adapt_user = r->prompt_tokens;
                c->depth_text = xstrdup(ADAPT_TEXT);
                c->user_text = xstrdup(CTX_USER_TEXT);
                c->max_tokens = 1;
                breq_send(b, c);
                return;
        }
        b->p_adapt_ctx = r->prompt_tokens;
        b->delta_user = b->p_adapt_user - b->t_adapt_text;
        b->delta_ctx = b->p_adapt_ctx - b->t_adapt_text - b->t_dot;
        progress(b, "chat template overhead: %" PRId64 " tokens (user message), %" PRId64
                    " (system + user message)",
                 b->delta_user, b->delta_ctx);
        start_latency(b);
}

static void test_add(struct breq ***arr, size_t *n, size_t *cap, struct breq *r)
{
        MX_GROW(*arr, *cap, *n + 1);
        (*arr)[(*n)++] = r;
}

static void batch_request_done(struct mx_bench *b, struct breq *r)
{
        struct test *t = &b->tests[r->test];

        if (!r->warmup) {
                b->measured++;
                if (r->error)
                        b->failed++;
                if (r->known_issue)
                        b->failed_known++;
                if (r->kind == REQ_CTX)
                        test_add(&t->ctx, &t->n_ctx, &t->cap_ctx, r);
                else
                        test_add(&t->reqs, &t->n_reqs, &t->cap_reqs, r);
        }
        if (r->error)
                progress(b, "%s request failed: %s", r->warmup ? "warm-up" : "measured", r->error);
        if (++b->n_done < b->n_batch)
                return;
        next_batch(b);
}

static void stream_done_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct breq *r = userdata;
        struct mx_bench *b = r->b;

        r->call = NULL;
        r->done = true;
        r->t_end = mx_now_mono_us();
        r->status = resp->status;
        if (resp->starttransfer_s > 0)
                r->t_headers = resp->t_start_mono_us + (int64_t)(resp->starttransfer_s * 1e6);
        breq_validate(r, resp);
        mx_sse_done(&r->sse);
        r->sse_live = false;

        switch (r->kind) {
        case REQ_ADAPT_USER:
        case REQ_ADAPT_CTX:
                adapt_stream_done(b, r);
                break;
        case REQ_LATENCY:
                if (!r->t_resp && !r->t_usage) {
                        fail_bench(b, -EPROTO, "latency probe: %s", r->error ?: "no event");
                        return;
                }
                b->latency_probe_ms[b->n_latency++] =
                        (double)((r->t_resp ?: r->t_usage) - r->t0) / 1000.0;
                latency_next(b);
                break;
        case REQ_MEASURED:
        case REQ_CTX:
                batch_request_done(b, r);
                break;
        }
}

/* adapt: raw counts of the probe texts, then the two probe requests */
static void adapt_dot_counted(struct mx_bench *b, int64_t n)
{
        struct breq *r = breq_new(b, REQ_ADAPT_USER);

        b->t_dot = n;
        r->user_text = xstrdup(ADAPT_TEXT);
        r->max_tokens = 1;
        progress(b, "measuring the chat template's overhead");
        breq_send(b, r);
}

static void adapt_text_counted(struct mx_bench *b, int64_t n)
{
        b->t_adapt_text = n;
        tokenize(b, b->tok_form, CTX_USER_TEXT, adapt_dot_counted);
}

static void tokprobe_llama_done(struct mx_bench *b, int64_t n)
{
        if (n <= 0) {
                fail_bench(b, -EOPNOTSUPP,
                           "%s/tokenize answers neither vLLM's form {model, prompt} nor llama-server's "
                           "{content}; prompts of exact length need it",
                           b->url);
                return;
        }
        b->tok_form = b->tk.form = MX_TOKENIZE_LLAMA;
        progress(b, "tokenize: POST /tokenize {content} (llama-server's form)");
        tokenize(b, b->tok_form, ADAPT_TEXT, adapt_text_counted);
}

static void tokprobe_vllm_done(struct mx_bench *b, int64_t n)
{
        if (n <= 0) {
                tokenize(b, MX_TOKENIZE_LLAMA, "hello world", tokprobe_llama_done);
                return;
        }
        b->tok_form = b->tk.form = MX_TOKENIZE_VLLM;
        progress(b, "tokenize: POST /tokenize {model, prompt} (vLLM's and SGLang's form)");
        tokenize(b, b->tok_form, ADAPT_TEXT, adapt_text_counted);
}

static void models_done_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct mx_bench *b = userdata;
        json_auto_t *o = NULL;
        json_t *data, *m, *owner = NULL;
        size_t i;

        if (resp->error < 0 || resp->status != 200 || !(o = json_loadb(resp->body, resp->body_len, 0, NULL))) {
                _cleanup_free_ char *ex = body_excerpt(resp);
                fail_bench(b, resp->error ?: -EPROTO, "GET %s/v1/models: %s", b->url,
                           resp->error ? strna(resp->error_text) : ex);
                return;
        }
        data = json_object_get(o, "data");
        json_array_foreach(data, i, m) {
                const char *id = json_string_value(json_object_get(m, "id"));
                if (!id)
                        continue;
                if (!b->model)
                        b->model = xstrdup(id);
                if (streq(b->model, id)) {
                        owner = json_object_get(m, "owned_by");
                        break;
                }
        }
        if (!b->model) {
                fail_bench(b, -ENOENT, "GET %s/v1/models lists no model; name one with --model", b->url);
                return;
        }
        if (json_is_string(owner)) {
                b->server = mx_server_kind_from_owner(json_string_value(owner));
        }
        progress(b, "model %s, server %s", b->model, mx_server_kind_name(b->server));
        b->tok_form = b->tk.form = MX_TOKENIZE_NONE;
        b->tk.model = b->model;
        tokenize(b, MX_TOKENIZE_VLLM, "hello world", tokprobe_vllm_done);
}

/* latency */
static void latency_done(struct mx_bench *b)
{
        double sum = 0;

        for (unsigned i = 0; i < b->n_latency; i++)
                sum += b->latency_probe_ms[i];
        b->latency_ms = b->n_latency ? sum / b->n_latency : 0;
        progress(b, "latency (%s): %.3f ms", mx_bench_latency_mode_to_string(b->cfg.latency_mode), b->latency_ms);
        b->cur_test = 0;
        b->cur_warm = b->cur_run = 0;
        next_batch(b);
}

static void latency_api_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct mx_bench *b = userdata;

        if (resp->error < 0 || resp->status != 200) {
                fail_bench(b, resp->error ?: -EPROTO, "latency probe GET /v1/models: %s",
                           resp->error ? strna(resp->error_text) : "not 200");
                return;
        }
        b->latency_probe_ms[b->n_latency++] = (double)(mx_now_mono_us() - b->latency_t0) / 1000.0;
        latency_next(b);
}

static void latency_next(struct mx_bench *b)
{
        struct breq *r;

        if (b->n_latency >= LATENCY_PROBES || b->cfg.latency_mode == MX_BENCH_LATENCY_NONE) {
                latency_done(b);
                return;
        }
        if (b->cfg.latency_mode == MX_BENCH_LATENCY_API) {
                b->latency_t0 = mx_now_mono_us();
                plain_call(b, "GET", "/v1/models", NULL, latency_api_cb, b);
                return;
        }
        r = breq_new(b, REQ_LATENCY);
        r->user_text = xstrdup("hello");
        r->max_tokens = 1;
        breq_send(b, r);
}

static void start_latency(struct mx_bench *b)
{
        b->n_latency = 0;
        latency_next(b);
}

/* ---- tests: prompts, batches ---- */

static struct breq *build_target(struct mx_bench *b)
{
        return b->build_req < b->n_batch ? b->batch[b->build_req] : NULL;
}

static void build_next(struct mx_bench *b);

/* A text of the batch is built (exactly its target) or could not be: then the request fails, named. */
static void build_done(void *userdata, struct mx_prompt_result *res)
{
        struct mx_bench *b = userdata;
        struct breq *r = build_target(b);
        char **slot = b->build_user ? &r->user_text : &r->depth_text;

        b->pbuild = NULL;
        if (res->error < 0) {
                breq_error(r, "building a prompt of %" PRId64 " tokens: %s",
                           b->build_user ? r->user_target : r->depth_target, strna(res->reason));
                /* the request is not sent; it still needs texts to be skipped by build_next */
                *slot = xstrdup("");
        } else {
                *slot = TAKE_PTR(res->text);
                if (res->words > 0)
                        b->tokens_per_word = (double)res->tokens / (double)res->words;
        }
        build_next(b);
}

/* Build one text of r: its first message starts with r's unique prefix. */
static void build_text(struct mx_bench *b, struct breq *r, bool user)
{
        bool first = user ? r->depth_target <= 0 : true;
        struct mx_prompt_spec spec = {
                .target = user ? r->user_target : r->depth_target,
                .prefix = first && r->prefix[0] ? r->prefix : NULL,
                .seed = r->text_seed + (user ? 1 : 0),
                .tokens_per_word = b->tokens_per_word,
        };
        _cleanup_free_ char *err = NULL;
        int ret;

        b->build_user = user;
        if (spec.target < 1) {
                /* nothing left for the text after the chat template's own tokens */
                breq_error(r, "no prompt of %" PRId64 " tokens: the chat template alone has %" PRId64,
                           r->expected_prompt, r->expected_prompt - spec.target);
                *(user ? &r->user_text : &r->depth_text) = xstrdup("");
                build_next(b);
                return;
        }
        ret = mx_prompt_build(&b->tk, &spec, build_done, b, &b->pbuild, &err);
        if (ret < 0)
                fail_bench(b, ret, "building a prompt: %s", strna(err));
}

/* Build the next missing text of the batch, or send the batch once all are built (those that could not be fail). */
static void build_next(struct mx_bench *b)
{
        struct breq *r;

        while ((r = build_target(b))) {
                if (r->error) {
                        b->build_req++;
                        continue;
                }
                if (r->depth_target > 0 && !r->depth_text) {
                        build_text(b, r, false);
                        return;
                }
                if (!r->user_text) {
                        build_text(b, r, true);
                        return;
                }
                b->build_req++;
        }
        for (unsigned i = 0; i < b->n_batch; i++) {
                struct breq *q = b->batch[i];

                if (q->error) {
                        /* no prompt of its length could be built: failed without a request */
                        q->done = true;
                        batch_request_done(b, q);
                        continue;
                }
                if (breq_send(b, q) < 0)
                        return;
        }
}

/*
 * A request's prompt identity: its own word sequence and a prefix unique to it at the start of its first
 * message, so that no prefix cache (a server's own, whatever its cache field) can reuse its text. The
 * forced-reuse mode (a test of the checks) sends every request of a test the same text instead.
 */
static void breq_prepare(struct mx_bench *b, struct breq *r)
{
        r->reused_min = -1;
        if (b->cfg.force_cache_reuse) {
                r->text_seed = b->test_seed;
                r->prefix[0] = '\0';
                return;
        }
        r->text_seed = rng_next(b);
        mx_prompt_unique_prefix(r->text_seed, b->n_requests, r->prefix);
}

static void test_name(const struct test *t, const char *kind, char *buf, size_t n)
{
        if (streq(kind, "ctx_pp"))
                snprintf(buf, n, "ctx_pp @ d%" PRId64, t->depth);
        else if (t->depth > 0)
                snprintf(buf, n, "%s%" PRId64 " @ d%" PRId64, kind, streq(kind, "pp") ? t->pp : t->tg, t->depth);
        else
                snprintf(buf, n, "%s%" PRId64, kind, streq(kind, "pp") ? t->pp : t->tg);
}

/* The caller's window callback for the current test, once per side: true when the engine must wait for it. */
static bool window_call(struct mx_bench *b, bool begin)
{
        const struct test *t = &b->tests[b->cur_test];
        char name[64], full[96];

        if (!b->window || (begin ? b->window_begun : b->window_ended))
                return false;
        if (begin)
                b->window_begun = true;
        else
                b->window_ended = true;
        test_name(t, "pp", name, sizeof(name));
        snprintf(full, sizeof(full), "%s tg%" PRId64, name, t->tg);
        b->window(b, b->cur_test, full, begin, b->userdata);
        return true;
}

/*
 * llama-bench style at depth, after the context batch: the same contexts again with the prompt, which
 * must reuse the context's tokens.
 */
static void prompt_batch(struct mx_bench *b)
{
        b->batch_ctx_phase = false;
        for (unsigned i = 0; i < b->n_batch; i++) {
                struct breq *ctx = b->batch[i], *r = breq_new(b, REQ_MEASURED);
                struct test *t = &b->tests[ctx->test];

                r->test = ctx->test;
                r->run = ctx->run;
                r->warmup = ctx->warmup;
                memcpy(r->salt, ctx->salt, sizeof(r->salt));
                memcpy(r->prefix, ctx->prefix, sizeof(r->prefix));
                r->text_seed = ctx->text_seed;
                r->depth_text = xstrdup(ctx->depth_text);
                r->depth_target = ctx->depth_target;
                r->user_target = t->pp;
                r->max_tokens = t->tg;
                /* the same context, now with the prompt: the server must reuse the context's tokens */
                r->expected_prompt = t->depth + t->pp;
                r->reused_min = ctx->depth_target;
                r->cached_max = -1;
                if (ctx->error)
                        breq_error(r, "its context load failed: %s", ctx->error);
                b->batch[i] = r;
        }
        b->n_done = 0;
        b->build_req = 0;
        build_next(b);
}

/* "pp512 tg32: warm-up 1/2" or "...: run 3/5" for the batch starting. */
static void batch_progress(struct mx_bench *b, const struct test *t)
{
        char name[64];

        test_name(t, "pp", name, sizeof(name));
        if (b->cur_warm < b->cfg.warmup)
                progress(b, "%s tg%" PRId64 ": warm-up %u/%u", name, t->tg, b->cur_warm + 1, b->cfg.warmup);
        else
                progress(b, "%s tg%" PRId64 ": run %u/%u", name, t->tg, b->cur_run + 1, b->cfg.runs);
}

/* One request of the batch starting for test t: its context alone (ctx_phase), or its measured request. */
static struct breq *batch_request(struct mx_bench *b, const struct test *t, bool ctx_phase)
{
        struct breq *r = breq_new(b, ctx_phase ? REQ_CTX : REQ_MEASURED);

        r->test = (unsigned)b->cur_test;
        r->run = b->cur_warm < b->cfg.warmup ? b->cur_warm : b->cur_run;
        r->warmup = b->cur_warm < b->cfg.warmup;
        breq_prepare(b, r);
        if (t->depth > 0) {
                r->depth_target = t->depth - b->delta_ctx;
                r->user_target = ctx_phase ? 0 : t->pp;
                if (ctx_phase)
                        r->user_text = xstrdup(CTX_USER_TEXT);
                r->expected_prompt = ctx_phase ? t->depth + b->t_dot : t->depth + t->pp;
                r->max_tokens = ctx_phase ? 1 : t->tg;
                r->cached_max = MX_MAX(b->delta_ctx, 0);
        } else {
                r->user_target = t->pp - b->delta_user;
                r->expected_prompt = t->pp;
                r->max_tokens = t->tg;
                r->cached_max = MX_MAX(b->delta_user, 0);
        }
        if (r->depth_target < 1 && t->depth > 0)
                r->depth_target = 1;
        return r;
}

/* Start the next batch: warm-ups, then runs, test after test; the end of the last finishes the benchmark. */
static void next_batch(struct mx_bench *b)
{
        struct test *t;
        bool ctx_phase;

        if (b->batch_ctx_phase && b->n_batch > 0) {
                prompt_batch(b);
                return;
        }
        if (b->n_batch > 0) {
                /* the batch that just ended */
                if (b->cur_warm < b->cfg.warmup)
                        b->cur_warm++;
                else
                        b->cur_run++;
                b->n_batch = 0;
        }
        if (b->cur_test < b->n_tests && b->cur_run >= b->cfg.runs) {
                if (window_call(b, false))
                        return;
                b->cur_test++;
                b->cur_warm = b->cur_run = 0;
                b->window_begun = b->window_ended = false;
        }
        if (b->cur_test >= b->n_tests) {
                progress(b, "done: %u requests measured, %u failed (%u of them to a known issue of the server)",
                         b->measured, b->failed, b->failed_known);
                finish(b, 0, NULL);
                return;
        }
        if (b->cur_warm >= b->cfg.warmup && b->cur_run == 0 && window_call(b, true))
                return;
        t = &b->tests[b->cur_test];
        ctx_phase = b->cfg.llama_bench_style && t->depth > 0;
        batch_progress(b, t);
        b->n_batch = b->cfg.concurrency;
        b->n_done = 0;
        b->build_req = 0;
        b->batch_ctx_phase = ctx_phase;
        b->test_seed = UINT64_C(0x51ed270b27f1b3d5) * (b->cur_test + 1);
        for (unsigned i = 0; i < b->n_batch; i++)
                b->batch[i] = batch_request(b, t, ctx_phase);
        build_next(b);
}

/* ---- life cycle ---- */

static void kick_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct mx_bench *b = userdata;

        plain_call(b, "GET", "/v1/models", NULL, models_done_cb, b);
}

static void resume_cb(evutil_socket_t fd, short what, void *userdata)
{
        (void)fd, (void)what;
        next_batch(userdata);
}

void mx_bench_set_window_hook(struct mx_bench *b, mx_bench_window_cb cb)
{
        b->window = cb;
}

void mx_bench_resume(struct mx_bench *b)
{
        /* from the loop, never from inside the callback's caller */
        event_active(b->resume, EV_TIMEOUT, 0);
}

/* The tokens the server generated for r: its usage, else the tokens counted from its stream. */
static int64_t breq_generated(const struct breq *r)
{
        return r->completion_tokens >= 0 ? r->completion_tokens : MX_MAX(r->n_decode, 0);
}

int64_t mx_bench_test_tokens(const struct mx_bench *b, size_t test)
{
        const struct test *t;
        int64_t n = 0;

        if (test >= b->n_tests)
                return 0;
        t = &b->tests[test];
        for (size_t i = 0; i < t->n_reqs; i++)
                n += breq_generated(t->reqs[i]);
        for (size_t i = 0; i < t->n_ctx; i++)
                n += breq_generated(t->ctx[i]);
        return n;
}

int mx_bench_new(struct event_base *base, const struct mx_bench_config *cfg, struct mx_bench **ret,
                 char **reterr)
{
        _cleanup_(mx_bench_freep) struct mx_bench *b = NULL;
        size_t k = 0;
        int r;

        if (!base || !cfg)
                return mx_reterr(reterr, -EINVAL, "mx_bench_new() without an event base or configuration");
        r = mx_bench_config_check(cfg, reterr);
        if (r < 0)
                return r;
        b = xcalloc(1, sizeof(*b));
        b->base = base;
        b->cfg = *cfg;
        b->url = xstrdup(cfg->url);
        while (endswith(b->url, "/"))
                b->url[strlen(b->url) - 1] = '\0';
        if (endswith(b->url, "/v1"))
                b->url[strlen(b->url) - 3] = '\0';
        b->cfg.url = b->url;
        b->model = cfg->model ? xstrdup(cfg->model) : NULL;
        b->cfg.model = NULL;
        if (cfg->api_key)
                b->auth_header = xasprintf("Authorization: Bearer %s", cfg->api_key);
        b->cfg.api_key = NULL;
        b->rng = cfg->seed ?: ((uint64_t)mx_now_real_us() ^ ((uint64_t)getpid() << 32) ^ UINT64_C(0x9e3779b97f4a7c15));
        if (b->rng == 0)
                b->rng = 1;
        r = mx_http_new(base, &b->http, reterr);
        if (r < 0)
                return r;
        b->tk = (struct mx_prompt_tokenizer){
                .http = b->http,
                .url = b->url,
                .auth_header = b->auth_header,
                .timeout_ms = b->cfg.timeout_ms ?: MX_BENCH_TIMEOUT_DEFAULT_MS,
        };
        b->kick = event_new(base, -1, 0, kick_cb, b);
        b->resume = event_new(base, -1, 0, resume_cb, b);
        if (!b->kick || !b->resume)
                mx_die("event_new failed");
        b->n_tests = cfg->n_depth * cfg->n_pp * cfg->n_tg;
        b->tests = xcalloc(b->n_tests, sizeof(*b->tests));
        for (size_t d = 0; d < cfg->n_depth; d++)
                for (size_t p = 0; p < cfg->n_pp; p++)
                        for (size_t g = 0; g < cfg->n_tg; g++)
                                b->tests[k++] = (struct test){
                                        .depth = cfg->depth[d], .pp = cfg->pp[p], .tg = cfg->tg[g]};
        *ret = TAKE_PTR(b);
        return 0;
}

int mx_bench_start(struct mx_bench *b, mx_bench_done_cb done, mx_bench_progress_cb progress_cb, void *userdata)
{
        if (!b || b->started)
                return -EALREADY;
        b->started = true;
        b->done = done;
        b->progress = progress_cb;
        b->userdata = userdata;
        b->started_real_us = mx_now_real_us();
        event_active(b->kick, EV_TIMEOUT, 0);
        return 0;
}

struct mx_bench *mx_bench_free(struct mx_bench *b)
{
        if (!b)
                return NULL;
        /* requests and builds first: each cancels its call while the client still exists */
        mx_prompt_build_cancel(b->pbuild);
        for (size_t i = 0; i < b->n_all; i++)
                breq_free(b->all[i]);
        free(b->all);
        mx_http_free(b->http);
        if (b->kick)
                event_free(b->kick);
        if (b->resume)
                event_free(b->resume);
        for (size_t i = 0; i < b->n_tests; i++) {
                free(b->tests[i].reqs);
                free(b->tests[i].ctx);
        }
        free(b->tests);
        free(b->url);
        free(b->model);
        free(b->auth_header);
        free(b);
        return NULL;
}

void mx_bench_counts(const struct mx_bench *b, unsigned *ret_measured, unsigned *ret_failed)
{
        if (ret_measured)
                *ret_measured = b->measured;
        if (ret_failed)
                *ret_failed = b->failed;
}

/* ---- results ---- */

static json_t *num(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

static json_t *stat_json(const double *v, size_t n)
{
        struct mx_bstat s;

        mx_bstat_compute(v, n, &s);
        return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:b}", "n", (json_int_t)s.n, "mean",
                         num(s.mean), "std", num(s.std), "std_sample", num(s.std_sample), "min", num(s.min),
                         "max", num(s.max), "p50", num(s.p50), "p90", num(s.p90), "p99", num(s.p99), "p90_few",
                         s.p90_few, "p99_few", s.p99_few);
}

/*
 * The same with every value kept ("values", NAN as null, in the order measured): the per-run samples L5
 * (daemon/run/levels/l5-regress.c) tests for a significant difference between runs of two configurations.
 */
static json_t *stat_values_json(const double *v, size_t n)
{
        json_t *o = stat_json(v, n), *a = json_array();

        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, num(v[i]));
        json_object_set_new(o, "values", a);
        return o;
}

/* Tokens from the first text-bearing event on (breq_decode_span()), and where the count came from. */
static int64_t tg_tokens(const struct breq *r, const char **ret_source)
{
        if (r->decode_source)
                *ret_source = r->decode_source;
        return r->n_decode;
}

/*
 * The request's token stamps for peak t/s: its text-bearing events with their
 * tokens spread over them (llama-benchy 0.4, bench-stats.h), the tokens
 * counted as tg_tokens() does. A new array in *ret; how many.
 */
static size_t token_stamps(const struct breq *r, int64_t **ret)
{
        _cleanup_free_ int64_t *ts = NULL, *k = NULL;
        const char *source;
        int64_t prev;
        size_t n = 0;

        if (r->cum_before_tok1 < 0)
                return mx_bench_token_stamps(r->tok, NULL, r->n_tok, tg_tokens(r, &source), ret);
        /* running counts: each event from the first text on carries the tokens its count added */
        ts = xcalloc(r->n_ev ?: 1, sizeof(*ts));
        k = xcalloc(r->n_ev ?: 1, sizeof(*k));
        prev = r->cum_before_tok1;
        for (size_t i = r->i_tok1; i < r->n_ev; i++) {
                if (r->cum[i] <= prev)
                        continue;
                ts[n] = r->ev[i];
                k[n++] = r->cum[i] - prev;
                prev = r->cum[i];
        }
        return mx_bench_token_stamps(ts, k, n, prev - r->cum_before_tok1, ret);
}

struct vals {
        double *v;
        size_t n, cap;
};

static void vals_add(struct vals *a, double v)
{
        MX_GROW(a->v, a->cap, a->n + 1);
        a->v[a->n++] = v;
}

static void vals_free(struct vals *a)
{
        free(a->v);
        *a = (struct vals){};
}

/* Append the failures of a request list to arr. */
static void failures_json(json_t *arr, const char *name, struct breq **reqs, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (reqs[i]->error)
                        json_array_append_new(arr, json_pack("{s:s,s:i,s:s,s:s?}", "test", name, "run",
                                                             (int)reqs[i]->run + 1, "error", reqs[i]->error,
                                                             "known_issue", reqs[i]->known_issue));
}

static bool batch_range(struct breq **reqs, size_t n, unsigned run, size_t *ret_from, size_t *ret_to)
{
        size_t i = *ret_to;

        while (i < n && reqs[i]->run != run)
                i++;
        *ret_from = i;
        while (i < n && reqs[i]->run == run)
                i++;
        *ret_to = i;
        return *ret_from < *ret_to;
}

enum row_mode {
        ROW_PP,  /* one per (depth, pp): every measured request of the tests that share them */
        ROW_CTX, /* llama-bench style: the context loads of those tests */
        ROW_TG,  /* one per test */
};

/* What a row is made from: its tests' requests, in run order per test. */
struct row_acc {
        struct vals rate, rate_req, ttfr, est, e2e, peak, peak_req, rate_text;
        struct vals server, prep; /* the server's own rate and the preparation, per request that has timings */
        unsigned failed, failed_known;
        size_t server_partial; /* requests that carried one of the pair a server figure divides, not both */
        size_t requests;
        int64_t cached_max, prompt_min, prompt_max, expected;
        bool from_usage, from_tokenizer;
        const char *source;
};

/* The prompt tokens of r's pp numerator (bench-stats.h), and where the count came from. */
static int64_t pp_tokens(const struct breq *r, struct row_acc *a)
{
        if (r->prompt_tokens >= 0)
                a->from_usage = true;
        else
                a->from_tokenizer = true;
        return mx_bench_pp_tokens(r->prompt_tokens, breq_cached(r), r->expected_prompt);
}

/*
 * A pp request's server figures, both or neither: server_pp_tps needs prompt_n and prompt_ms, preparation_ms
 * prompt_ms and the TTFR, and the two are shown side by side, so they must describe the same requests. A
 * server that sends only one of prompt_n and prompt_ms is counted (server_timings_partial), not averaged.
 */
static void row_add_server_pp(const struct mx_bench *b, const struct breq *r, double v_ttfr,
                              struct row_acc *a)
{
        /* prompt_n is the request's pp tokens here: breq_check_prompt() failed the request otherwise */
        double tps = mx_bench_server_tps(r->prompt_n, r->prompt_ms);
        double prep = mx_bench_preparation_ms(v_ttfr, b->latency_ms, r->prompt_ms);

        a->server_partial += (r->prompt_n >= 0) != (r->prompt_ms >= 0);
        if (!isfinite(tps) || !isfinite(prep))
                return;
        vals_add(&a->server, tps);
        vals_add(&a->prep, prep);
}

/* One request's values into the row: its failure, or its prompt counts and per-request figures. */
static void request_add(const struct mx_bench *b, struct breq *r, enum row_mode mode, struct row_acc *a)
{
        double v_ttfr, v_est;
        int64_t ptoks;

        a->expected = r->expected_prompt;
        if (r->error) {
                a->failed++;
                a->failed_known += r->known_issue ? 1 : 0;
                return;
        }
        if (breq_cached(r) >= 0)
                a->cached_max = MX_MAX(a->cached_max, breq_cached(r));
        if (r->prompt_tokens >= 0) {
                a->prompt_min = MX_MIN(a->prompt_min, r->prompt_tokens);
                a->prompt_max = MX_MAX(a->prompt_max, r->prompt_tokens);
        }
        v_ttfr = mx_bench_ttfr_ms(r->t0, r->t_resp);
        v_est = mx_bench_est_ppt_ms(v_ttfr, b->latency_ms);
        if (mode == ROW_TG) {
                _cleanup_free_ int64_t *ts = NULL;
                size_t nts = token_stamps(r, &ts);

                vals_add(&a->rate_req, mx_bench_tg_tps(tg_tokens(r, &a->source), r->t_tok1, r->t_last_tok));
                vals_add(&a->peak_req, mx_bench_peak_tps(ts, nts, PEAK_WINDOW_US));
                vals_add(&a->server, mx_bench_server_tps(r->predicted_n, r->predicted_ms));
                a->server_partial += (r->predicted_n >= 0) != (r->predicted_ms >= 0);
                return;
        }
        ptoks = pp_tokens(r, a);
        row_add_server_pp(b, r, v_ttfr, a);
        vals_add(&a->ttfr, v_ttfr);
        vals_add(&a->est, v_est);
        vals_add(&a->e2e, mx_bench_ttft_ms(r->t0, r->t_tok1));
        vals_add(&a->rate_req, mx_bench_pp_tps(ptoks, v_est));
        /* llama-benchy 0.4: over the time to the first text (e2e_ttft), which a role-only first chunk
         * sent before the prefill cannot shorten. */
        vals_add(&a->rate_text,
                 mx_bench_pp_tps(ptoks, mx_bench_est_ppt_ms(mx_bench_ttft_ms(r->t0, r->t_tok1), b->latency_ms)));
}

/* One batch (reqs[from..to)): its peak rate (tg) and, with several requests at once, its total rate. */
static void batch_add(const struct mx_bench *b, struct breq **reqs, size_t from, size_t to, enum row_mode mode,
                      struct row_acc *a)
{
        int64_t sum_p = 0, sum_n = 0, min_t0 = INT64_MAX, max_tok1 = 0, min_tok1 = INT64_MAX, max_last = 0;
        size_t valid = 0, n_ts = 0, cap_ts = 0;
        _cleanup_free_ int64_t *ts = NULL;

        for (size_t i = from; i < to; i++) {
                struct breq *r = reqs[i];
                if (r->error || !r->t_tok1)
                        continue;
                valid++;
                if (mode != ROW_TG)
                        sum_p += pp_tokens(r, a);
                sum_n += tg_tokens(r, &a->source);
                min_t0 = MX_MIN(min_t0, r->t0);
                max_tok1 = MX_MAX(max_tok1, r->t_tok1);
                min_tok1 = MX_MIN(min_tok1, r->t_tok1);
                max_last = MX_MAX(max_last, r->t_last_tok);
                {
                        _cleanup_free_ int64_t *rts = NULL;
                        size_t nr = token_stamps(r, &rts);

                        MX_GROW(ts, cap_ts, n_ts + nr + 1);
                        memcpy(ts + n_ts, rts, nr * sizeof(int64_t));
                        n_ts += nr;
                }
        }
        if (valid == 0)
                return;
        if (mode == ROW_TG)
                vals_add(&a->peak, mx_bench_peak_tps(ts, n_ts, PEAK_WINDOW_US));
        if (b->cfg.concurrency > 1)
                vals_add(&a->rate, mode == ROW_TG ? mx_bench_batch_tg_tps(sum_n, valid, min_tok1, max_last)
                                                  : mx_bench_batch_pp_tps(sum_p, min_t0, max_tok1));
}

/* One test's requests into a row: per request, and per batch when c > 1. */
static void row_add(const struct mx_bench *b, struct breq **reqs, size_t n, enum row_mode mode, struct row_acc *a)
{
        size_t to = 0, from;

        a->requests += n;
        for (size_t i = 0; i < n; i++)
                request_add(b, reqs[i], mode, a);
        /* per batch: c = 1 uses the request values themselves; c > 1 the batch totals */
        for (unsigned run = 0; batch_range(reqs, n, run, &from, &to) || to < n; run++)
                if (from < to)
                        batch_add(b, reqs, from, to, mode, a);
}

static void row_acc_free(struct row_acc *a)
{
        vals_free(&a->rate);
        vals_free(&a->rate_req);
        vals_free(&a->ttfr);
        vals_free(&a->est);
        vals_free(&a->e2e);
        vals_free(&a->peak);
        vals_free(&a->peak_req);
        vals_free(&a->rate_text);
        vals_free(&a->server);
        vals_free(&a->prep);
}

/*
 * The server's own figures beside ours (server_pp_tps or server_tg_tps, and preparation_ms on pp rows):
 * means over the row's requests whose stream carried llama-server's timings, both pp figures over the same
 * requests (server_timings_requests), or null and why. Requests that carried only half a pair are counted.
 */
static void row_server_json(const struct mx_bench *b, json_t *o, enum row_mode mode, const struct row_acc *a)
{
        const char *pair = mode == ROW_TG ? "predicted_n and predicted_ms" : "prompt_n and prompt_ms";
        _cleanup_free_ char *partial = NULL;
        struct mx_bstat st, prep;

        mx_bstat_compute(a->server.v, a->server.n, &st);
        mx_bstat_compute(a->prep.v, a->prep.n, &prep);
        json_object_set_new(o, mode == ROW_TG ? "server_tg_tps" : "server_pp_tps", num(st.mean));
        if (mode != ROW_TG)
                json_object_set_new(o, "preparation_ms", num(prep.mean));
        json_object_set_new(o, "server_timings_requests", json_integer((json_int_t)st.n));
        json_object_set_new(o, "server_timings_partial", json_integer((json_int_t)a->server_partial));
        if (a->server_partial > 0)
                partial = xasprintf("; %zu request%s carried only one of %s and %s in no figure",
                                    a->server_partial, a->server_partial == 1 ? "" : "s", pair,
                                    a->server_partial == 1 ? "is" : "are");
        if (st.n > 0)
                json_object_set_new(o, "server_timings",
                                    json_sprintf("%s over the %zu requests that reported %s%s",
                                                 mode == ROW_TG
                                                         ? "llama-server's timings: predicted_n / "
                                                           "predicted_ms x 1000 per request, the mean"
                                                         : "llama-server's timings: prompt_n / prompt_ms x "
                                                           "1000 per request, the mean, and preparation_ms",
                                                 st.n, pair, partial ? partial : ""));
        else if (a->server_partial > 0)
                json_object_set_new(
                        o, "server_timings",
                        json_sprintf("not reported by the server (%s): no request reported both %s%s",
                                     mx_server_kind_name(b->server), pair, partial));
        else
                json_object_set_new(o, "server_timings",
                                    json_sprintf("not reported by the server (%s): no request's stream carried "
                                                 "llama-server's timings (prompt_n, prompt_ms, predicted_n, "
                                                 "predicted_ms); vLLM and SGLang send none",
                                                 mx_server_kind_name(b->server)));
}

/* The row as llama-benchy prints it. */
static json_t *row_json(const struct mx_bench *b, const struct test *t, enum row_mode mode, struct row_acc *a,
                        json_t *pooled_tg)
{
        unsigned c = b->cfg.concurrency;
        const struct vals *rate = c > 1 ? &a->rate : &a->rate_req;
        char name[64];
        bool ttfr_early;
        json_t *o;

        test_name(t, mode == ROW_CTX ? "ctx_pp" : mode == ROW_PP ? "pp" : "tg", name, sizeof(name));
        if (mode == ROW_TG) {
                o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:i,s:I,s:i,s:o,s:o,s:o,s:o,s:n,s:n,s:n,s:s?}", "test", name,
                                 "kind", "tg", "depth", (json_int_t)t->depth, "pp", (json_int_t)t->pp, "tg",
                                 (json_int_t)t->tg, "concurrency", c, "requests", (json_int_t)a->requests, "failed",
                                 a->failed, "tps", stat_values_json(rate->v, rate->n), "tps_req",
                                 c > 1 ? stat_json(a->rate_req.v, a->rate_req.n) : json_null(), "peak_tps",
                                 stat_json(a->peak.v, a->peak.n), "peak_tps_req",
                                 c > 1 ? stat_json(a->peak_req.v, a->peak_req.n) : json_null(), "ttfr_ms",
                                 "est_ppt_ms", "e2e_ttft_ms", "tokens_counted_from", a->source);
                /* the row's statistics are the survivors': how many requests a known server issue took */
                json_object_set_new(o, "failed_known_issue", json_integer(a->failed_known));
                row_server_json(b, o, mode, a);
                return o;
        }
        {
                struct mx_bstat st_ttfr, st_e2e;

                /*
                 * A server that sends its role-only chunk before the prefill ends (older vLLM with chunked
                 * prefill) makes ttfr, and so pp t/s, meaningless: say so, and keep tps_first_text.
                 */
                mx_bstat_compute(a->ttfr.v, a->ttfr.n, &st_ttfr);
                mx_bstat_compute(a->e2e.v, a->e2e.n, &st_e2e);
                ttfr_early = st_ttfr.n > 0 && st_e2e.n > 0 && st_ttfr.p50 < st_e2e.p50 / 4;
        }
        o = json_pack("{s:s,s:s,s:I,s:I,s:i,s:I,s:i,s:o,s:o,s:n,s:n,s:o,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:b,s:s}",
                      "test", name, "kind", mode == ROW_CTX ? "ctx_pp" : "pp", "depth", (json_int_t)t->depth, "pp",
                      (json_int_t)t->pp, "concurrency", c, "requests", (json_int_t)a->requests, "failed", a->failed,
                      "tps", stat_values_json(rate->v, rate->n), "tps_req",
                      c > 1 ? stat_json(a->rate_req.v, a->rate_req.n) : json_null(), "peak_tps", "peak_tps_req",
                      "ttfr_ms", stat_json(a->ttfr.v, a->ttfr.n), "est_ppt_ms", stat_json(a->est.v, a->est.n),
                      "e2e_ttft_ms", stat_json(a->e2e.v, a->e2e.n), "cached_tokens_max",
                      a->cached_max >= 0 ? json_integer(a->cached_max) : json_null(), "prompt_tokens_expected",
                      (json_int_t)a->expected, "prompt_tokens_min",
                      a->prompt_max >= 0 ? json_integer(a->prompt_min) : json_null(), "prompt_tokens_max",
                      a->prompt_max >= 0 ? json_integer(a->prompt_max) : json_null(), "tps_first_text",
                      stat_json(a->rate_text.v, a->rate_text.n), "ttfr_before_prefill", ttfr_early,
                      "prompt_tokens_from",
                      a->from_tokenizer ? (a->from_usage ? "usage, else the server's tokenizer" : "the server's tokenizer")
                                        : "usage");
        if (mode == ROW_CTX) {
                json_object_set_new(o, "tg", json_integer(1));
                json_decref(pooled_tg); /* the context loads are one per tg test, each with tg 1 */
        } else
                json_object_set_new(o, "tg_pooled", pooled_tg);
        json_object_set_new(o, "failed_known_issue", json_integer(a->failed_known));
        row_server_json(b, o, mode, a);
        return o;
}

/* One pooled row per mode over the requests of tests [first, first + n): ctx_pp (llama-bench style), pp. */
static void rows_pooled_json(const struct mx_bench *b, size_t first, size_t n, json_t *rows)
{
        const struct test *t0 = &b->tests[first];

        static const enum row_mode modes[] = {ROW_CTX, ROW_PP};

        for (size_t mi = 0; mi < ELEMENTSOF(modes); mi++) {
                enum row_mode m = modes[mi];
                struct row_acc a = {.cached_max = -1, .prompt_min = INT64_MAX, .prompt_max = -1};
                json_t *pooled = json_array();
                size_t k = 0;

                for (size_t i = first; i < first + n; i++) {
                        const struct test *t = &b->tests[i];

                        k += m == ROW_CTX ? t->n_ctx : t->n_reqs;
                        row_add(b, m == ROW_CTX ? t->ctx : t->reqs, m == ROW_CTX ? t->n_ctx : t->n_reqs, m, &a);
                        json_array_append_new(pooled, json_integer(t->tg));
                }
                if (k > 0)
                        json_array_append_new(rows, row_json(b, t0, m, &a, json_incref(pooled)));
                json_decref(pooled);
                row_acc_free(&a);
        }
}

/* One tg row per test of [first, first + n), and the failures of its context and tg requests. */
static void rows_tg_json(const struct mx_bench *b, size_t first, size_t n, json_t *rows, json_t *failures)
{
        char name_pp[64];

        test_name(&b->tests[first], "pp", name_pp, sizeof(name_pp));
        for (size_t i = first; i < first + n; i++) {
                const struct test *t = &b->tests[i];
                struct row_acc a = {.cached_max = -1, .prompt_min = INT64_MAX, .prompt_max = -1};
                char fname[96];

                if (t->n_ctx > 0) {
                        snprintf(fname, sizeof(fname), "%s tg1", name_pp);
                        failures_json(failures, fname, t->ctx, t->n_ctx);
                }
                if (t->n_reqs == 0)
                        continue;
                row_add(b, t->reqs, t->n_reqs, ROW_TG, &a);
                json_array_append_new(rows, row_json(b, t, ROW_TG, &a, NULL));
                row_acc_free(&a);
                snprintf(fname, sizeof(fname), "%s tg%" PRId64, name_pp, t->tg);
                failures_json(failures, fname, t->reqs, t->n_reqs);
        }
}

/*
 * The rows of the tests [first, first + n) that share (depth, pp): one pp row (and one ctx_pp row in
 * llama-bench style) over all of their requests (prefill does not depend on tg), then one tg row per test.
 */
static void rows_json(const struct mx_bench *b, size_t first, size_t n, json_t *rows, json_t *failures)
{
        rows_pooled_json(b, first, n, rows);
        rows_tg_json(b, first, n, rows, failures);
}

/* vllm bench serve's distributions over a request list; the pooled ITL goes to *itl too. */
static json_t *serving_json(struct breq **reqs, size_t n, struct vals *all_ttfr, struct vals *all_ttft,
                            struct vals *all_tpot, struct vals *all_itl, struct vals *all_e2el)
{
        struct vals ttfr = {}, ttft = {}, tpot = {}, tpot_vllm = {}, e2el = {}, tpc = {};
        double *itl = NULL, *itl_ev = NULL;
        size_t n_itl = 0, cap_itl = 0, n_itl_ev = 0, cap_itl_ev = 0, valid = 0, counted = 0;
        json_t *o, *first = json_object();

        for (size_t i = 0; i < n; i++) {
                struct breq *r = reqs[i];
                double v_ttfr, v_ttft, v_e2el;
                const char *source;

                if (r->error)
                        continue;
                valid++;
                v_ttfr = mx_bench_ttfr_ms(r->t0, r->t_resp);
                v_ttft = mx_bench_ttft_ms(r->t0, r->t_tok1);
                v_e2el = mx_bench_e2el_ms(r->t0, r->t_last);
                vals_add(&ttfr, v_ttfr);
                vals_add(&ttft, v_ttft);
                /* TPOT from the TTFT's origin, over the tokens from the first text on: TTFT + (N-1) TPOT = E2EL */
                vals_add(&tpot, mx_bench_tpot_ms(v_e2el, v_ttft, tg_tokens(r, &source)));
                vals_add(&tpot_vllm, mx_bench_tpot_ms(v_e2el, v_ttfr, r->completion_tokens));
                vals_add(&e2el, v_e2el);
                if (r->completion_tokens > 0 && r->n_ev > 0)
                        vals_add(&tpc, (double)r->completion_tokens / (double)r->n_ev);
                mx_bench_itl_append(r->ev, r->n_ev, &itl_ev, &n_itl_ev, &cap_itl_ev);
                /* per token where running counts say which event delivered how many tokens */
                if (r->cum_before_tok1 >= 0) {
                        mx_bench_itl_tokens_append(r->ev, r->cum, r->n_ev, r->i_tok1, &itl, &n_itl, &cap_itl);
                        counted++;
                } else
                        mx_bench_itl_append(r->ev, r->n_ev, &itl, &n_itl, &cap_itl);
                if (r->first_field) {
                        json_t *k = json_object_get(first, r->first_field);
                        json_object_set_new(first, r->first_field,
                                            json_integer(k ? json_integer_value(k) + 1 : 1));
                }
        }
        for (size_t i = 0; all_ttfr && i < ttfr.n; i++)
                vals_add(all_ttfr, ttfr.v[i]);
        for (size_t i = 0; all_ttft && i < ttft.n; i++)
                vals_add(all_ttft, ttft.v[i]);
        for (size_t i = 0; all_tpot && i < tpot.n; i++)
                vals_add(all_tpot, tpot.v[i]);
        for (size_t i = 0; all_itl && i < n_itl; i++)
                vals_add(all_itl, itl[i]);
        for (size_t i = 0; all_e2el && i < e2el.n; i++)
                vals_add(all_e2el, e2el.v[i]);
        o = json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:o,s:o}", "requests", (json_int_t)n, "valid",
                      (json_int_t)valid, "ttfr_ms", stat_values_json(ttfr.v, ttfr.n), "ttft_ms",
                      stat_values_json(ttft.v, ttft.n), "tpot_ms", stat_json(tpot.v, tpot.n), "tpot_vllm_ms",
                      stat_json(tpot_vllm.v, tpot_vllm.n), "itl_ms", stat_json(itl, n_itl), "itl_from",
                      counted == 0       ? "events (no running counts)"
                      : counted == valid ? "running counts (per token)"
                                         : "running counts where streamed, else events",
                      "itl_event_ms", stat_json(itl_ev, n_itl_ev), "e2el_ms", stat_json(e2el.v, e2el.n),
                      "tokens_per_event", stat_json(tpc.v, tpc.n), "first_token_field", first);
        vals_free(&ttfr);
        vals_free(&ttft);
        vals_free(&tpot);
        vals_free(&tpot_vllm);
        vals_free(&e2el);
        vals_free(&tpc);
        free(itl);
        free(itl_ev);
        return o;
}

static json_t *request_json(const struct breq *r)
{
        json_t *ev = json_array(), *tok = json_array(), *cum = json_array(), *o;

        for (size_t i = 0; i < r->n_ev; i++) {
                json_array_append_new(ev, json_integer(r->ev[i] - r->t0));
                json_array_append_new(cum, r->cum[i] >= 0 ? json_integer(r->cum[i]) : json_null());
        }
        for (size_t i = 0; i < r->n_tok; i++)
                json_array_append_new(tok, json_integer(r->tok[i] - r->t0));
#define REL(x) ((x) ? json_integer((x) - r->t0) : json_null())
        o = json_pack("{s:I,s:i,s:b,s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:s,s:s?,s:s?,s:o,s:o}",
                         "t0_us", (json_int_t)r->t0, "run", (int)r->run + 1, "warmup", r->warmup, "salt", r->salt,
                         "expected_prompt_tokens", (json_int_t)r->expected_prompt, "headers_us", REL(r->t_headers),
                         "resp_us", REL(r->t_resp), "tok1_us", REL(r->t_tok1), "last_us", REL(r->t_last),
                         "last_tok_us", REL(r->t_last_tok), "usage_us", REL(r->t_usage), "done_us",
                         REL(r->t_done), "prompt_tokens", (json_int_t)r->prompt_tokens, "completion_tokens",
                         (json_int_t)r->completion_tokens, "cached_tokens", (json_int_t)r->cached_tokens,
                         "tokens_before_first_text", (json_int_t)r->cum_before_tok1, "finish_reason", r->finish,
                         "first_token_field", r->first_field, "error", r->error, "events_us", ev, "text_events_us",
                         tok);
#undef REL
        json_object_set_new(o, "events_tokens", cum);
        json_object_set_new(o, "decode_tokens", r->n_decode >= 0 ? json_integer(r->n_decode) : json_null());
        json_object_set_new(o, "tokens_counted_from", r->decode_source ? json_string(r->decode_source) : json_null());
        json_object_set_new(o, "known_issue", r->known_issue ? json_string(r->known_issue) : json_null());
        /* llama-server's own timers of this request, as its final chunk gave them; null: not reported */
        json_object_set_new(o, "server_timings",
                            r->prompt_ms >= 0 || r->predicted_ms >= 0
                                    ? json_pack("{s:o,s:o,s:o,s:o}", "prompt_n",
                                                r->prompt_n >= 0 ? json_integer(r->prompt_n) : json_null(),
                                                "prompt_ms", r->prompt_ms >= 0 ? json_real(r->prompt_ms) : json_null(),
                                                "predicted_n",
                                                r->predicted_n >= 0 ? json_integer(r->predicted_n) : json_null(),
                                                "predicted_ms",
                                                r->predicted_ms >= 0 ? json_real(r->predicted_ms) : json_null())
                                    : json_null());
        return o;
}

static json_t *definitions_json(void)
{
        json_t *o = json_pack(
                "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "t0",
                "CLOCK_MONOTONIC immediately before the request is handed to libcurl; every event is stamped "
                "when libcurl hands over the bytes that complete it",
                "pp_tps",
                "llama-benchy v0.3: prompt tokens / est_ppt; prompt tokens = those the server evaluated, "
                "usage.prompt_tokens less the cached tokens it reports (--llama-bench-style: the cached context; "
                "else at most the chat template's header), one row over every tg of a (pp, depth); a request whose "
                "usage.prompt_tokens is not depth + pp, or whose cache was reused where it must not be (or not "
                "reused in llama-bench style), fails naming both numbers; without usage the count of the server's "
                "/tokenize (prompt_tokens_from); c > 1: sum of prompt tokens / (latest first text - earliest t0)",
                "pp_tps_first_text",
                "llama-benchy 0.4: prompt tokens / max(0, e2e_ttft - latency), per request (the pp row's "
                "tps_first_text); ttfr_before_prefill is true when the median ttfr is under a quarter of the "
                "median e2e_ttft: the server sent its first chunk before the prefill ended, and pp_tps says little",
                "tg_tps",
                "llama-benchy 0.4: (N - 1) / (last token's event - first text-bearing event). With running counts "
                "(usage.completion_tokens in every chunk, vLLM continuous_usage_stats; timings.predicted_n, "
                "llama-server timings_per_token): N - 1 = the last count - the first text-bearing event's count, "
                "and the last token's event is the first event that reached the last count, text or not, so "
                "tokens that sent no text (gpt-oss Harmony headers, channel switches, turn end) count with the time "
                "in which they were generated; without: N = usage.completion_tokens (else text-bearing events) "
                "over the text-bearing events' span (tokens_counted_from says which); c > 1: (sum N - requests) / "
                "(latest last token - earliest first text)",
                "peak_tps",
                "llama-benchy 0.4: most tokens within any 1 s window / 1 s (count / span when they span less than "
                "1 s), per batch; tokens, not events: the tokens counted as for tg_tps are spread evenly from the "
                "first text-bearing event to the last, so a chunk of k tokens (speculative decoding) counts k",
                "ttfr_ms", "TTFR, time to first response: first event with a non-empty choices array - t0 "
                           "(llama-benchy ttfr; what vllm bench serve calls TTFT, role-only chunk included)",
                "ttft_ms",
                "TTFT, time to first token: first event carrying text in delta.content, delta.reasoning, "
                "delta.reasoning_content or delta.tool_calls - t0 (llama-benchy e2e_ttft); every ttft_* here, in "
                "the criteria, L5 and the reports is this one",
                "e2e_ttft_ms", "the same as ttft_ms (llama-benchy's name)", "est_ppt_ms",
                "llama-benchy: max(0, ttfr - latency); latency as latency_mode says", "tpot_ms",
                "(E2EL - TTFT) / (N - 1), N the tokens from the first text on as for tg_tokens, requests with more "
                "than one: the same origin as ttft_ms, so TTFT + (N - 1) TPOT = E2EL; tpot_vllm_ms is vllm bench "
                "serve's TPOT, (E2EL - TTFR) / (usage.completion_tokens - 1)",
                "itl_ms",
                "per token, pooled over all requests of the test: with running counts, from the first text-bearing "
                "event on, an event that added k tokens adds k gaps of (its time - the previous token event's "
                "time) / k (vLLM PR #42661), so its mean is 1 / tg; without, as itl_event_ms (itl_from says which)",
                "itl_event_ms",
                "vllm bench serve: every gap between consecutive choices-bearing events, pooled over all requests "
                "of the test (a chunk that follows tokens without text holds their time)",
                "e2el_ms", "vllm bench serve: last choices-bearing event - t0", "tokens_per_event",
                "usage.completion_tokens / choices-bearing events (1 unless the server batches tokens)");

        json_object_set_new(
                o, "server_pp_tps",
                json_string(
                        "the server's own prefill rate, where it reports one per request (llama-server's "
                        "final timings): prompt_n / prompt_ms x 1000 per request (its "
                        "prompt_per_second, the log's \"prompt eval time\"), the mean over the row's "
                        "requests that reported both prompt_n and prompt_ms (server_timings_requests; "
                        "those that reported one of them only, server_timings_partial, are in neither "
                        "server figure); null with server_timings saying why where it reports none "
                        "(vLLM, SGLang). Its timer starts after the request is prepared, so it reads "
                        "above pp_tps: see preparation_ms"));
        json_object_set_new(
                o, "server_tg_tps",
                json_string("the server's own decode rate, where it reports one per request: predicted_n / "
                            "predicted_ms x 1000 (llama-server's predicted_per_second, the log's \"eval "
                            "time\"), the mean over the row's requests that reported both; llama-server "
                            "times the M tokens from the first one's sampling to the last one's, M - 1 "
                            "intervals, so it reads about M / (M - 1) above tg_tps's (N - 1) / span"));
        json_object_set_new(
                o, "preparation_ms",
                json_string("per request ttfr - latency - the server's prompt_ms, the mean: what TTFR holds "
                            "beyond the server's prompt evaluation (chat template, tokenization, "
                            "scheduling, the first chunk's way back), over the same requests as "
                            "server_pp_tps; pp_tps = prompt tokens / (prompt_ms + preparation_ms) per "
                            "request"));
        return o;
}

static json_t *statistics_json(void)
{
        return json_pack("{s:s,s:s,s:s,s:s,s:i,s:i}", "mean_std",
                         "mean +- population std (ddof 0, as llama-benchy and vllm bench serve) over requests "
                         "(c = 1) or batches (c > 1) of the test",
                         "std_sample", "sample std (ddof 1, as llama-bench), given beside it", "percentiles",
                         "linear interpolation between closest ranks, rank = p/100 * (n - 1) (NumPy's default)",
                         "few_samples",
                         "p90 from fewer than 44 and p99 from fewer than 459 samples are flagged (p90_few, "
                         "p99_few): MLPerf LoadGen's minimum for 99 % confidence",
                         "p90_min_n", MX_BSTAT_P90_MIN_N, "p99_min_n", MX_BSTAT_P99_MIN_N);
}

static double row_mean(json_t *rows, const char *kind, int64_t depth, int64_t size)
{
        json_t *row;
        size_t i;
        double sum = 0;
        unsigned n = 0;

        json_array_foreach(rows, i, row) {
                json_t *mean = json_object_get(json_object_get(row, "tps"), "mean");
                if (!streq_ptr(json_string_value(json_object_get(row, "kind")), kind) ||
                    json_integer_value(json_object_get(row, "depth")) != depth ||
                    json_integer_value(json_object_get(row, streq(kind, "pp") ? "pp" : "tg")) != size ||
                    !json_is_number(mean))
                        continue;
                sum += json_number_value(mean);
                n++;
        }
        return n ? sum / n : NAN;
}

/* Seed 002's Results block: throughput at depth 0 and latency percentiles over every depth-0 request. */
static json_t *results_json(const struct mx_bench *b, json_t *rows, struct vals *ttfr, struct vals *ttft,
                            struct vals *tpot, struct vals *itl, struct vals *e2el)
{
        json_t *thr = json_object(), *lat = json_object();
        struct mx_bstat s;

        for (size_t i = 0; i < b->cfg.n_pp; i++) {
                _cleanup_free_ char *k = xasprintf("pp%" PRId64 "_tps", b->cfg.pp[i]);
                json_object_set_new(thr, k, num(row_mean(rows, "pp", 0, b->cfg.pp[i])));
        }
        for (size_t i = 0; i < b->cfg.n_tg; i++) {
                _cleanup_free_ char *k = xasprintf("tg%" PRId64 "_tps", b->cfg.tg[i]);
                json_object_set_new(thr, k, num(row_mean(rows, "tg", 0, b->cfg.tg[i])));
        }
#define LAT(name, a)                                                                                        \
        do {                                                                                                \
                mx_bstat_compute((a)->v, (a)->n, &s);                                                       \
                json_object_set_new(lat, name "_p50_ms", num(s.p50));                                       \
                json_object_set_new(lat, name "_p99_ms", num(s.p99));                                       \
        } while (0)
        LAT("ttft", ttft);
        LAT("ttfr", ttfr);
        LAT("tpot", tpot);
        LAT("itl", itl);
        LAT("e2e", e2el);
#undef LAT
        return json_pack("{s:o,s:o,s:s}", "throughput", thr, "latency", lat, "note",
                         "throughput: means of the depth-0 rows; latency: over every valid depth-0 request "
                         "(ttft = TTFT: first text; ttfr = TTFR: first response chunk; tpot from TTFT; e2e = E2EL; as "
                         "defined above)");
}

/* The draft figures llama-server's timings gave for a test's measured requests, summed: "draft_timings". */
static void draft_timings_json(const struct test *t, json_t *sv)
{
        int64_t drafted = 0, accepted = 0;
        unsigned n = 0;

        for (size_t i = 0; i < t->n_reqs; i++) {
                const struct breq *r = t->reqs[i];

                if (r->draft_n < 0)
                        continue;
                drafted += r->draft_n;
                accepted += MX_MAX(r->draft_accepted, 0);
                n++;
        }
        if (n > 0)
                json_object_set_new(sv, "draft_timings",
                                    json_pack("{s:I,s:I,s:i}", "draft_n", (json_int_t)drafted, "draft_n_accepted",
                                              (json_int_t)accepted, "requests", n));
}

json_t *mx_bench_result_json(const struct mx_bench *b)
{
        json_t *rows = json_array(), *serving = json_array(), *failures = json_array(), *requests = json_array();
        json_t *cfg, *pp = json_array(), *tg = json_array(), *depth = json_array();
        struct vals ttfr0 = {}, ttft0 = {}, tpot0 = {}, itl0 = {}, e2el0 = {};
        json_t *o;

        for (size_t i = 0; i < b->cfg.n_pp; i++)
                json_array_append_new(pp, json_integer(b->cfg.pp[i]));
        for (size_t i = 0; i < b->cfg.n_tg; i++)
                json_array_append_new(tg, json_integer(b->cfg.tg[i]));
        for (size_t i = 0; i < b->cfg.n_depth; i++)
                json_array_append_new(depth, json_integer(b->cfg.depth[i]));
        cfg = json_pack("{s:o,s:o,s:o,s:i,s:i,s:i,s:s,s:s}", "pp", pp, "tg", tg, "depth", depth, "runs",
                        b->cfg.runs, "warmup", b->cfg.warmup, "concurrency", b->cfg.concurrency, "style",
                        b->cfg.llama_bench_style ? "llama-bench" : "llama-benchy", "latency_mode",
                        mx_bench_latency_mode_to_string(b->cfg.latency_mode));
        /* the sampling every request sent (seed 002's Workload Parameters) */
        json_object_set_new(cfg, "temperature", json_real(b->cfg.temperature));
        json_object_set_new(cfg, "top_p", json_real(b->cfg.top_p));
        json_object_set_new(cfg, "seed", b->cfg.sampling_seed >= 0 ? json_integer(b->cfg.sampling_seed) : json_null());
        for (size_t i = 0; i < b->n_tests; i++) {
                const struct test *t = &b->tests[i];
                char name[64];
                json_t *sv;

                if (i == 0 || t->depth != t[-1].depth || t->pp != t[-1].pp) {
                        size_t n = 1;

                        while (i + n < b->n_tests && t[n].depth == t->depth && t[n].pp == t->pp)
                                n++;
                        rows_json(b, i, n, rows, failures);
                }
                if (t->n_reqs == 0)
                        continue;
                test_name(t, "pp", name, sizeof(name));
                sv = t->depth == 0 ? serving_json(t->reqs, t->n_reqs, &ttfr0, &ttft0, &tpot0, &itl0, &e2el0)
                                   : serving_json(t->reqs, t->n_reqs, NULL, NULL, NULL, NULL, NULL);
                json_object_set_new(sv, "test", json_sprintf("%s tg%" PRId64, name, t->tg));
                json_object_set_new(sv, "depth", json_integer(t->depth));
                json_object_set_new(sv, "pp", json_integer(t->pp));
                json_object_set_new(sv, "tg", json_integer(t->tg));
                draft_timings_json(t, sv);
                json_array_append_new(serving, sv);
                if (b->cfg.keep_requests)
                        for (size_t k = 0; k < t->n_reqs; k++) {
                                json_t *rj = request_json(t->reqs[k]);
                                json_object_set_new(rj, "test", json_sprintf("%s tg%" PRId64, name, t->tg));
                                json_array_append_new(requests, rj);
                        }
        }
        o = json_pack("{s:s,s:s,s:s?,s:s,s:s,s:o,s:{s:I,s:I},s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:i,s:i}",
                      "tool", "mxmatrix bench " MX_VERSION, "url", b->url, "model", b->model, "server",
                      mx_server_kind_name(b->server), "tokenize",
                      mx_tokenize_form_describe(b->tok_form),
                      "latency_ms", num(b->latency_ms), "template_overhead", "user", (json_int_t)b->delta_user,
                      "context", (json_int_t)b->delta_ctx, "config", cfg, "definitions", definitions_json(),
                      "statistics", statistics_json(), "tests", rows, "serving", serving, "failures", failures,
                      "results", results_json(b, rows, &ttfr0, &ttft0, &tpot0, &itl0, &e2el0), "started_us",
                      (json_int_t)b->started_real_us, "finished_us", (json_int_t)b->finished_real_us,
                      "measured", b->measured, "failed", b->failed);
        /* the statistics are the survivors': say how many a known server issue took (never averaged away) */
        json_object_set_new(o, "failed_known_issue", json_integer(b->failed_known));
        if (b->cfg.keep_requests)
                json_object_set_new(o, "requests", requests);
        else
                json_decref(requests);
        vals_free(&ttfr0);
        vals_free(&ttft0);
        vals_free(&tpot0);
        vals_free(&itl0);
        vals_free(&e2el0);
        return o;
}
