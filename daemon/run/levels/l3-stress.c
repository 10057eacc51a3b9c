/* SPDX-License-Identifier: MIT */
/*
 * L3 stress (seed 001 Level 3, template 000): in this order
 *
 *   sequential   `sequential` requests one after the other (seed: 100), the
 *                server's memory sampled before, every `memory_every`
 *                requests, and after: more than `memory_growth_max` (seed:
 *                10 %) growth from the first sample to the last fails
 *   concurrent   `concurrency` requests at once (seed: 10; template: 2-4)
 *   long         one generation of `long_generation_tokens` (seed: 1024+)
 *   context      one prompt of exactly `long_context_tokens` (template: 32K+;
 *                32768) as the server's /tokenize counts it (prompt.h, the
 *                builder L4 uses; special tokens included, as /v1/completions
 *                adds them), checked against the context the server really
 *                has: vLLM's max_model_len in /v1/models, llama-server's
 *                data[].meta.n_ctx there or /props
 *                default_generation_settings.n_ctx, or the n_ctx of its 400.
 *                A prompt that does not fit with its 16 generated tokens
 *                fails naming both numbers (the matrix asked for more than
 *                the server has); usage.prompt_tokens must equal the asked
 *                count on /v1/completions
 *   zombies      no process of the server's tree is a zombie (state Z)
 *   after stop   (pending) nothing of the run outlived the stop
 *
 * Every reply gets L2's cheap checks (checks.h: status, UTF-8, NaN, text,
 * usage, exact token count with ignore_eos, coherence). A failure names the
 * phase and the request number and keeps the request and reply in
 * L3-evidence/. Memory comes from the level context's mem_sample hook (PSS
 * of the run's processes by default; the GPU sampler plugs in there). The
 * growth compares the first and the last sample of the sequential phase in
 * one figure (memtrack.h: device memory on a discrete GPU, the system figure
 * on unified memory, host PSS without a GPU) that both of them carry.
 */
#include "checks.h"
#include "http.h"
#include "levels.h"
#include "logcap.h"
#include "memtrack.h"
#include "proc.h"
#include "prompt.h"

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

static void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

#define L3_FAILURES_KEPT 16
#define L3_SERIES_MAX 512
#define L3_PROMPT "Write a short paragraph about the history of the printing press."

#define L3_CONTEXT_GEN 16

enum phase { PH_SEQUENTIAL, PH_CONCURRENT, PH_LONG, PH_MODELS, PH_PROPS, PH_TOKENIZE, PH_CONTEXT, PH_DONE };
static const char *const phase_names[] = { "sequential", "concurrent", "long generation", "models", "props",
                                           "long context", "long context", "zombie check" };

struct call {
        struct l3 *s;
        struct mx_http_call *h;
        unsigned no; /* request number within the phase, from 1 */
        char *body;
        struct mx_gen_request rq;
        int64_t expect_tokens;
};

struct l3 {
        struct mx_level base;
        enum phase phase;
        unsigned seq_done, conc_left, n_requests, n_failed;
        struct call *calls; /* in flight */
        size_t n_calls;
        json_t *failures, *artifacts, *series, *metrics;
        char *first_failure;
        struct mx_mem_track mem_seq; /* the sequential phase: before, during, after */
        struct mx_mem_track mem_all; /* every sample, for the peaks */
        const char *mem_source;
        int64_t started_mono, max_model_len;
        const char *ctx_field, *ctx_source; /* what max_model_len is and where it came from */
        char *context_prompt;
        struct mx_prompt_tokenizer tk;
        struct mx_prompt_build *pb; /* a /tokenize count or build in flight */
};

static int64_t setting_int(struct mx_level *l, const char *k)
{
        return json_integer_value(json_object_get(l->ctx->settings, k));
}

static void add_failure(struct l3 *s, unsigned no, const char *check, const char *detail, const char *body,
                        const struct mx_http_response *res)
{
        struct mx_level *l = &s->base;
        _cleanup_free_ char *ev = NULL, *where = NULL;
        json_t *art = NULL;

        where = no ? xasprintf("%s request %u", phase_names[s->phase], no) : xstrdup(phase_names[s->phase]);
        s->n_failed++;
        if (!s->first_failure)
                s->first_failure = xasprintf("%s: %s", where, detail);
        logcap_note(l->ctx->log, "L3: %s: %s", where, detail);
        if (json_array_size(s->failures) >= L3_FAILURES_KEPT)
                return;
        if (body || res) {
                ev = xasprintf("%s-%u-%s", phase_names[s->phase], no, check);
                art = mx_evidence_write(l->ctx->run_dir, "L3-evidence", ev, detail, body, res);
        }
        json_array_append_new(s->failures, json_pack("{s:s,s:i,s:s,s:s,s:s?}", "phase",
                                                     phase_names[s->phase], "request", no, "check",
                                                     check, "detail", detail, "evidence",
                                                     art ? json_string_value(json_object_get(art, "path")) : NULL));
        if (art)
                json_array_append_new(s->artifacts, art);
}

/* One memory sample into the series; those of the sequential phase make the growth. */
static void sample(struct l3 *s, const char *when)
{
        struct mx_level *l = &s->base;
        struct mx_mem_sample m = {};

        if (!l->ctx->mem_sample || l->ctx->mem_sample(l->ctx->mem_ud, &m) < 0)
                return;
        s->mem_source = m.source;
        if (s->phase == PH_SEQUENTIAL)
                mx_mem_track_add(&s->mem_seq, &m);
        mx_mem_track_add(&s->mem_all, &m);
        if (json_array_size(s->series) < L3_SERIES_MAX)
                json_array_append_new(s->series,
                                      json_pack("{s:f,s:s,s:I,s:I,s:I,s:b,s:i}", "t_s",
                                                (double)(m.t_mono_us - s->started_mono) / 1e6, "when", when,
                                                "server_bytes", (json_int_t)m.server_bytes, "gpu_bytes",
                                                (json_int_t)m.gpu_bytes, "sys_used_bytes",
                                                (json_int_t)m.sys_used_bytes, "unified", m.unified, "procs",
                                                (int)m.n_procs));
}

static void next_phase(struct l3 *s);
static char *context_check(struct l3 *s, const struct mx_http_response *res, const struct mx_gen_reply *g);
static void start_request(struct l3 *s, unsigned no, int64_t max_tokens, const char *prompt);

static void call_done(struct mx_http_call *h, struct mx_http_response *res, void *ud)
{
        struct call *c = ud;
        struct l3 *s = c->s;
        struct mx_level *l = &s->base;
        struct mx_check_opts o = { .expect_tokens = c->expect_tokens, .min_printable = 0.9, .max_repeat = 0.5,
                                   .logprobs = -1, .key_sent = l->ctx->headers != NULL };
        struct mx_gen_reply g = { .prompt_ppl = -1 };
        _cleanup_free_ char *problem = NULL, *body = TAKE_PTR(c->body);
        const char *check = NULL;

        (void)h;
        c->h = NULL;
        problem = mx_check_reply(&c->rq, &o, res, &g, &check);
        if (s->phase == PH_CONTEXT) {
                char *ctx_problem = context_check(s, res, &g);

                if (ctx_problem) {
                        free(problem);
                        problem = ctx_problem;
                        check = "context";
                }
        }
        if (problem)
                add_failure(s, c->no, check, problem, body, res);
        if (s->phase == PH_CONTEXT)
                json_object_set_new(s->metrics, "long_context_prompt_tokens", json_integer(g.prompt_tokens));
        if (s->phase == PH_LONG)
                json_object_set_new(s->metrics, "long_generation_tokens", json_integer(g.completion_tokens));
        mx_gen_reply_done(&g);
        if (s->phase == PH_SEQUENTIAL) {
                s->seq_done++;
                if (s->seq_done % MX_MAX(1, setting_int(l, "memory_every")) == 0)
                        sample(s, "during");
                if (problem && !setting_int(l, "continue_on_fail")) {
                        next_phase(s); /* a failing server: the rest would only repeat it */
                        return;
                }
                if (s->seq_done < setting_int(l, "sequential")) {
                        start_request(s, s->seq_done + 1, setting_int(l, "max_tokens"), L3_PROMPT);
                        return;
                }
                sample(s, "after");
                next_phase(s);
                return;
        }
        if (s->phase == PH_CONCURRENT && --s->conc_left > 0)
                return;
        next_phase(s);
}

static void start_request(struct l3 *s, unsigned no, int64_t max_tokens, const char *prompt)
{
        struct mx_level *l = &s->base;
        struct call *c = NULL;
        struct mx_http_request req = { .method = "POST", .content_type = "application/json", .max_body = 16 << 20,
                                       .headers = l->ctx->headers };
        _cleanup_free_ char *url = NULL, *err = NULL;
        int endpoint = mx_endpoint_from_string(json_string_value(json_object_get(l->ctx->settings, "endpoint")));

        for (size_t i = 0; i < s->n_calls; i++)
                if (!s->calls[i].h && !s->calls[i].body) {
                        c = &s->calls[i];
                        break;
                }
        if (!c)
                mx_die("L3: no call slot free");
        *c = (struct call){ .s = s, .no = no, .expect_tokens = max_tokens };
        c->rq = (struct mx_gen_request){ .endpoint = endpoint < 0 ? MX_ENDPOINT_COMPLETIONS : (enum mx_endpoint)endpoint,
                                         .model = l->ctx->model, .prompt = prompt, .max_tokens = max_tokens,
                                         .ignore_eos = true, .temperature = 1.0, .logprobs = -1,
                                         .prompt_logprobs = -1 };
        c->body = mx_gen_body(&c->rq);
        url = xasprintf("%s%s", l->ctx->url, mx_endpoint_path(c->rq.endpoint));
        req.url = url;
        req.body = c->body;
        req.timeout_ms = MX_MIN(mx_level_timeout_ms(l), MX_HTTP_TIMEOUT_MAX_MS);
        s->n_requests++;
        if (mx_http_start(l->ctx->http, &req, call_done, c, &c->h, &err) < 0) {
                struct mx_http_response res = { .error = -EIO, .error_text = err, .body = (char *)"" };

                /* Delivered as a failed request, from the loop's point of view at once. */
                call_done(NULL, &res, c);
        }
}

/* The context the server has, from /v1/models: vLLM's data[].max_model_len, llama-server's data[].meta.n_ctx. */
static void models_done(struct mx_http_call *h, struct mx_http_response *res, void *ud)
{
        struct l3 *s = ud;
        _cleanup_json_ json_t *j = NULL;
        json_t *d;
        size_t i;

        (void)h;
        s->calls[0].h = NULL;
        j = res->error == 0 && res->status == 200 ? json_loadb(res->body, res->body_len, 0, NULL) : NULL;
        json_array_foreach (json_object_get(j, "data"), i, d) {
                json_t *mml = json_object_get(d, "max_model_len"),
                       *nctx = json_object_get(json_object_get(d, "meta"), "n_ctx");

                if (s->base.ctx->model && s->max_model_len != 0 &&
                    !streq_ptr(json_string_value(json_object_get(d, "id")), s->base.ctx->model))
                        continue;
                if (json_is_integer(mml) && json_integer_value(mml) > 0) {
                        s->max_model_len = json_integer_value(mml);
                        s->ctx_field = "max_model_len";
                        s->ctx_source = "/v1/models";
                } else if (json_is_integer(nctx) && json_integer_value(nctx) > 0) {
                        s->max_model_len = json_integer_value(nctx);
                        s->ctx_field = "n_ctx";
                        s->ctx_source = "/v1/models meta";
                }
        }
        next_phase(s);
}

/* llama-server's /props: default_generation_settings.n_ctx (a server without /props answers 404: no figure). */
static void props_done(struct mx_http_call *h, struct mx_http_response *res, void *ud)
{
        struct l3 *s = ud;
        _cleanup_json_ json_t *j = NULL;
        json_t *n;

        (void)h;
        s->calls[0].h = NULL;
        j = res->error == 0 && res->status == 200 ? json_loadb(res->body, res->body_len, 0, NULL) : NULL;
        n = json_object_get(json_object_get(j, "default_generation_settings"), "n_ctx");
        if (json_is_integer(n) && json_integer_value(n) > 0) {
                s->max_model_len = json_integer_value(n);
                s->ctx_field = "n_ctx";
                s->ctx_source = "/props";
        }
        next_phase(s);
}

/* A prompt of about n words when the server has no /tokenize: not token-exact, and the metrics say so. */
static char *long_prompt(int64_t n)
{
        return mx_prompt_text("Summarise the following text.", 1, n, 0, 0);
}

static void context_built(void *ud, struct mx_prompt_result *res)
{
        struct l3 *s = ud;

        s->pb = NULL;
        json_object_set_new(s->metrics, "long_context_tokenize_calls", json_integer(res->tries));
        if (res->error < 0) {
                _cleanup_free_ char *m = xasprintf("no prompt of %" PRId64 " tokens by the server's /tokenize: %s",
                                                   setting_int(&s->base, "long_context_tokens"), strna(res->reason));
                add_failure(s, 0, "context", m, NULL, NULL);
                s->phase = PH_CONTEXT; /* nothing to send */
        } else {
                free(s->context_prompt);
                s->context_prompt = TAKE_PTR(res->text);
        }
        next_phase(s);
}

/* The /tokenize form: vLLM's first, then llama-server's; neither: words, said so. */
static void tokenize_probed(void *ud, int64_t n, const char *reason)
{
        struct l3 *s = ud;
        struct mx_prompt_spec spec = {
                .target = setting_int(&s->base, "long_context_tokens"),
                .seed = (uint64_t)s->started_mono,
                /* /v1/completions adds BOS and the like; the chat template's tokens are the server's */
                .add_special = mx_endpoint_from_string(json_string_value(
                                       json_object_get(s->base.ctx->settings, "endpoint"))) != MX_ENDPOINT_CHAT,
        };
        _cleanup_free_ char *err = NULL;

        (void)reason;
        s->pb = NULL;
        if (n <= 0 && s->tk.form == MX_TOKENIZE_VLLM) {
                s->tk.form = MX_TOKENIZE_LLAMA;
                if (mx_prompt_count(&s->tk, MX_TOKENIZE_LLAMA, "hello world", false, tokenize_probed, s, &s->pb, NULL) >= 0)
                        return;
        }
        if (n <= 0) {
                logcap_note(s->base.ctx->log, "L3: the server answers no /tokenize: the long-context prompt is "
                                              "sized by words, not token-exact");
                json_object_set_new(s->metrics, "long_context_exact", json_false());
                s->context_prompt = long_prompt(spec.target);
                next_phase(s);
                return;
        }
        json_object_set_new(s->metrics, "long_context_exact", json_true());
        json_object_set_new(s->metrics, "tokenize", json_string(mx_tokenize_form_describe(s->tk.form)));
        if (mx_prompt_build(&s->tk, &spec, context_built, s, &s->pb, &err) < 0) {
                struct mx_prompt_result res = { .error = -EIO, .reason = err };

                context_built(s, &res);
        }
}

/* The long-context request's reply: the count the server evaluated is the one asked, or both are named. */
static char *context_check(struct l3 *s, const struct mx_http_response *res, const struct mx_gen_reply *g)
{
        int64_t want = setting_int(&s->base, "long_context_tokens");
        _cleanup_json_ json_t *j = NULL;
        json_t *e;

        if (res->status == 400 && (j = json_loadb(res->body, res->body_len, 0, NULL)) &&
            json_is_integer(json_object_get((e = json_object_get(j, "error")), "n_ctx")))
                return xasprintf("the server's context (n_ctx %" PRId64 ", from its HTTP 400) cannot hold the "
                                 "long-context prompt of %" PRId64 " tokens (the server counted %" PRId64
                                 ") plus %d generated (L3.long_context_tokens)",
                                 (int64_t)json_integer_value(json_object_get(e, "n_ctx")), want,
                                 (int64_t)json_integer_value(json_object_get(e, "n_prompt_tokens")), L3_CONTEXT_GEN);
        if (res->status != 200 || !json_is_true(json_object_get(s->metrics, "long_context_exact")) ||
            mx_endpoint_from_string(json_string_value(json_object_get(s->base.ctx->settings, "endpoint"))) ==
                    MX_ENDPOINT_CHAT)
                return NULL;
        if (g->prompt_tokens != want)
                return xasprintf("usage.prompt_tokens %" PRId64 ", but the long-context prompt was built to %" PRId64
                                 " tokens by the server's /tokenize",
                                 g->prompt_tokens, want);
        return NULL;
}

static void zombie_check(struct l3 *s)
{
        _cleanup_free_ pid_t *pids = NULL;
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        size_t n = 0;

        if (!json_is_true(json_object_get(s->base.ctx->settings, "check_zombies")) ||
            proc_find_tagged(s->base.ctx->tag, &pids, &n) < 0)
                return;
        /* A zombie has no environment (no tag): look for children in state Z of the tagged processes. */
        d = opendir("/proc");
        while (d && (de = readdir(d))) {
                char path[300], buf[512], comm[64] = "";
                _cleanup_fclose_ FILE *f = NULL;
                char state = 0, *close_paren;
                int ppid = 0;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
                f = fopen(path, "re");
                if (!f || !fgets(buf, sizeof(buf), f) || !(close_paren = strrchr(buf, ')')))
                        continue;
                if (sscanf(close_paren + 2, "%c %d", &state, &ppid) != 2 || state != 'Z')
                        continue;
                snprintf(comm, sizeof(comm), "%.*s", (int)MX_MIN(sizeof(comm) - 1, (size_t)(close_paren - strchr(buf, '(') - 1)),
                         strchr(buf, '(') + 1);
                for (size_t i = 0; i < n; i++)
                        if (pids[i] == ppid) {
                                _cleanup_free_ char *m = xasprintf(
                                        "process %s (%s) is a zombie: its parent %d of the server never reaped it",
                                        de->d_name, comm, ppid);
                                add_failure(s, 0, "zombie", m, NULL, NULL);
                        }
        }
}

/* The sequential phase's growth in the figure memtrack picks ("figure", "first_bytes", ...), and the series. */
static json_t *memory_json(struct l3 *s)
{
        json_t *o = mx_mem_track_json(&s->mem_seq);
        enum mx_mem_kind k;

        if (mx_mem_track_pick(&s->mem_seq, &k, NULL) >= 0) {
                json_object_set(o, "first_bytes", json_object_get(o, "first"));
                json_object_set(o, "last_bytes", json_object_get(o, "last"));
                json_object_set_new(o, "peak_bytes", json_integer(s->mem_all.k[k].peak));
        }
        json_object_set_new(o, "source", s->mem_source ? json_string(s->mem_source) : json_null());
        json_object_set_new(o, "window", json_string("first to last sample of the sequential phase"));
        json_object_set(o, "series", s->series);
        return o;
}

static void memory_check(struct l3 *s)
{
        double max = json_number_value(json_object_get(s->base.ctx->settings, "memory_growth_max"));
        double growth;
        enum mx_mem_kind k;
        const struct mx_mem_series *ms;

        if (mx_mem_track_pick(&s->mem_seq, &k, NULL) < 0)
                return;
        mx_mem_track_growth(&s->mem_seq, k, &growth);
        ms = &s->mem_seq.k[k];
        if (isfinite(growth) && growth > max) {
                _cleanup_free_ char *m = xasprintf(
                        "memory grew %.1f%% over %u sequential requests (%.1f MiB to %.1f MiB, %s: %s; at most "
                        "%.0f%%)",
                        100 * growth, s->seq_done, (double)ms->first / 1048576, (double)ms->last / 1048576,
                        mx_mem_kind_to_string(k), mx_mem_kind_describe(k), 100 * max);
                enum phase p = s->phase;

                s->phase = PH_SEQUENTIAL;
                add_failure(s, 0, "memory", m, NULL, NULL);
                s->phase = p;
        }
}

static json_t *l3_metrics(struct mx_level *l)
{
        struct l3 *s = (struct l3 *)l;
        json_t *m = json_deep_copy(s->metrics);

        json_object_set_new(m, "requests", json_integer(s->n_requests));
        json_object_set_new(m, "sequential_done", json_integer(s->seq_done));
        json_object_set_new(m, "failed_checks", json_integer(s->n_failed));
        json_object_set_new(m, "failures", json_incref(s->failures));
        json_object_set_new(m, "memory", memory_json(s));
        return m;
}

static void end_in_slot(struct l3 *s)
{
        struct mx_level *l = &s->base;

        zombie_check(s);
        memory_check(s);
        if (s->n_failed > 0)
                mx_level_finish(l, MX_VERDICT_FAIL, l3_metrics(l), json_incref(s->artifacts), "%s%s", s->first_failure,
                                s->n_failed > 1 ? " (and more: metrics.failures)" : "");
        else
                mx_level_pending(l); /* the last word: nothing outlives the stop */
}

static void next_phase(struct l3 *s)
{
        struct mx_level *l = &s->base;

        if (s->n_failed > 0 && !setting_int(l, "continue_on_fail")) {
                end_in_slot(s);
                return;
        }
        switch (s->phase) {
        case PH_SEQUENTIAL:
                s->phase = PH_CONCURRENT;
                s->conc_left = (unsigned)setting_int(l, "concurrency");
                if (s->conc_left > 0) {
                        unsigned n = s->conc_left;

                        logcap_note(l->ctx->log, "L3: %u concurrent requests", n);
                        for (unsigned i = 1; i <= n; i++)
                                start_request(s, i, setting_int(l, "max_tokens"), L3_PROMPT);
                        sample(s, "concurrent");
                        return;
                }
                /* fall through */
        case PH_CONCURRENT:
                s->phase = PH_LONG;
                if (setting_int(l, "long_generation_tokens") > 0) {
                        start_request(s, 1, setting_int(l, "long_generation_tokens"), L3_PROMPT);
                        return;
                }
                /* fall through */
        case PH_LONG:
                s->phase = PH_MODELS;
                if (setting_int(l, "long_context_tokens") > 0) {
                        _cleanup_free_ char *url = xasprintf("%s/v1/models", l->ctx->url);
                        struct mx_http_request req = { .method = "GET", .url = url, .timeout_ms = 30000,
                                                                       .headers = l->ctx->headers };

                        if (mx_http_start(l->ctx->http, &req, models_done, s, &s->calls[0].h, NULL) >= 0)
                                return;
                }
                /* fall through */
        case PH_MODELS:
                s->phase = PH_PROPS;
                if (setting_int(l, "long_context_tokens") > 0 && s->max_model_len == 0) {
                        _cleanup_free_ char *url = xasprintf("%s/props", l->ctx->url);
                        /* llama-server guards /props with its --api-key */
                        struct mx_http_request req = { .method = "GET", .url = url, .timeout_ms = 30000,
                                                       .headers = l->ctx->headers };

                        if (mx_http_start(l->ctx->http, &req, props_done, s, &s->calls[0].h, NULL) >= 0)
                                return;
                }
                /* fall through */
        case PH_PROPS: {
                int64_t want = setting_int(l, "long_context_tokens");

                s->phase = PH_TOKENIZE;
                if (want <= 0)
                        goto done;
                json_object_set_new(s->metrics, "max_model_len", json_integer(s->max_model_len));
                json_object_set_new(s->metrics, "max_model_len_from",
                                    s->ctx_source ? json_sprintf("%s, %s", s->ctx_field, s->ctx_source) : json_null());
                json_object_set_new(s->metrics, "long_context_tokens_asked", json_integer(want));
                /* the matrix asked for more than the server has: the check fails, naming both */
                if (s->max_model_len > 0 && want + L3_CONTEXT_GEN > s->max_model_len) {
                        _cleanup_free_ char *m = xasprintf(
                                "the server's context (%s %" PRId64 ", from %s) cannot hold the long-context "
                                "prompt of %" PRId64 " tokens plus %d generated (L3.long_context_tokens)",
                                s->ctx_field, s->max_model_len, s->ctx_source, want, L3_CONTEXT_GEN);
                        add_failure(s, 0, "context", m, NULL, NULL);
                        goto done;
                }
                /* headers[0] is the profile's bearer token where it names one (runner: api_key, api_key_env) */
                s->tk = (struct mx_prompt_tokenizer){ .http = l->ctx->http, .url = l->ctx->url, .model = l->ctx->model,
                                                      .auth_header = l->ctx->headers ? l->ctx->headers[0] : NULL,
                                                      .form = MX_TOKENIZE_VLLM,
                                                      .timeout_ms = MX_MIN(mx_level_timeout_ms(l), 600000) };
                if (mx_prompt_count(&s->tk, MX_TOKENIZE_VLLM, "hello world", false, tokenize_probed, s, &s->pb,
                                    NULL) < 0)
                        tokenize_probed(s, -EIO, NULL);
                return;
        }
        case PH_TOKENIZE:
                s->phase = PH_CONTEXT;
                start_request(s, 1, L3_CONTEXT_GEN, s->context_prompt);
                return;
        case PH_CONTEXT:
        done:
                s->phase = PH_DONE;
                end_in_slot(s);
                return;
        case PH_DONE:
                return;
        }
}

static void l3_run(struct mx_level *l)
{
        struct l3 *s = (struct l3 *)l;

        /* the long-context prompt is sized by the context the server has */
        if (mx_level_fail_on_assumptions(l, (const char *const[]){ "api_key",
                                                                  setting_int(l, "long_context_tokens") > 0 ? "context"
                                                                                                            : NULL,
                                                                  NULL }))
                return;
        s->started_mono = mx_now_mono_us();
        s->n_calls = (size_t)MX_MAX(1, setting_int(l, "concurrency"));
        s->calls = xcalloc(s->n_calls, sizeof(*s->calls));
        logcap_note(l->ctx->log, "L3: %" PRId64 " sequential requests", setting_int(l, "sequential"));
        s->phase = PH_SEQUENTIAL;
        sample(s, "before");
        if (setting_int(l, "sequential") > 0)
                start_request(s, 1, setting_int(l, "max_tokens"), L3_PROMPT);
        else
                next_phase(s);
}

/* "+1.2% (system)", or "not compared (<why>)". */
static const char *growth_text(struct l3 *s, char *buf, size_t size)
{
        _cleanup_free_ char *note = NULL;
        enum mx_mem_kind k;
        double g;

        if (mx_mem_track_pick(&s->mem_seq, &k, &note) < 0) {
                snprintf(buf, size, "not compared (%s)", note ? note : "no sample");
                return buf;
        }
        mx_mem_track_growth(&s->mem_seq, k, &g);
        snprintf(buf, size, "%+.1f%% (%s%s%s)", isfinite(g) ? 100 * g : 0.0, mx_mem_kind_to_string(k),
                 note ? "; " : "", strempty(note));
        return buf;
}

static void l3_after_stop(struct mx_level *l, const struct mx_level_stop *st)
{
        struct l3 *s = (struct l3 *)l;
        char buf[320];

        if (st->n_leftovers > 0)
                mx_level_finish(l, MX_VERDICT_FAIL, l3_metrics(l), json_incref(s->artifacts),
                                "%zu processes of the server outlived the stop", st->n_leftovers);
        else {
                json_t *got = json_object_get(s->metrics, "long_context_prompt_tokens");
                _cleanup_free_ char *ctx = NULL;

                if (json_is_integer(got))
                        ctx = s->ctx_source ? xasprintf(", long context %" PRId64 " tokens of the server's %s %" PRId64
                                                        " (from %s)",
                                                        (int64_t)json_integer_value(got), s->ctx_field,
                                                        s->max_model_len, s->ctx_source)
                                            : xasprintf(", long context %" PRId64 " tokens (the server reports "
                                                        "no context size)",
                                                        (int64_t)json_integer_value(got));
                mx_level_finish(l, MX_VERDICT_PASS, l3_metrics(l), json_incref(s->artifacts),
                                "%u requests, memory %s%s, nothing left after the stop", s->n_requests,
                                growth_text(s, buf, sizeof(buf)), strempty(ctx));
        }
}

static int l3_new(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr)
{
        struct l3 *s = xcalloc(1, sizeof(*s));

        (void)ctx, (void)reterr;
        s->failures = json_array();
        s->artifacts = json_array();
        s->series = json_array();
        s->metrics = json_object();
        mx_mem_track_init(&s->mem_seq);
        mx_mem_track_init(&s->mem_all);
        *ret = &s->base;
        return 0;
}

static void l3_cancel(struct mx_level *l)
{
        struct l3 *s = (struct l3 *)l;

        for (size_t i = 0; i < s->n_calls; i++) {
                mx_http_cancel(s->calls[i].h);
                s->calls[i].h = NULL;
        }
        mx_prompt_build_cancel(s->pb);
        s->pb = NULL;
}

static void l3_free(struct mx_level *l)
{
        struct l3 *s = (struct l3 *)l;

        l3_cancel(l);
        for (size_t i = 0; i < s->n_calls; i++)
                free(s->calls[i].body);
        free(s->calls);
        json_decref(s->failures);
        json_decref(s->artifacts);
        json_decref(s->series);
        json_decref(s->metrics);
        free(s->first_failure);
        free(s->context_prompt);
        free(s);
}

const struct mx_level_ops mx_level_l3_ops = {
        .name = "L3",
        .new = l3_new,
        .run = l3_run,
        .cancel = l3_cancel,
        .after_stop = l3_after_stop,
        .metrics = l3_metrics,
        .free = l3_free,
};
