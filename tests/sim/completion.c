/* SPDX-License-Identifier: MIT */
/*
 * Completion requests, for every endpoint that generates: OpenAI
 * /v1/completions and /v1/chat/completions (all personalities), llama-server's
 * native /completion and SGLang's /generate.
 *
 * Life of a request: parse and validate the body as vLLM does
 * (target-surfaces.md §A1: empty prompt, stream_options without stream,
 * prompt_logprobs with stream, limits -> 400 with vLLM's messages), submit one
 * sequence per choice to the server's generator, collect tokens (stop strings
 * are applied here, as vLLM's output processor does in the API server), and
 * answer with one JSON body or, with "stream": true, Server-Sent Events ending
 * in "data: [DONE]". An engine that dies fails the request with 500 (or an
 * error event once streaming has started).
 */
#include "sim.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <sys/socket.h>

#define PROMPTS_MAX 64
#define CHOICES_MAX 64
#define STOP_STRINGS_MAX 32
#define STOP_STRING_LEN_MAX 1024
#define LOGPROBS_MAX 20 /* vLLM's default --max-logprobs */
#define DISCONNECT_PROBE_S 0.2

struct choice {
        struct sim_completion_priv *c;
        unsigned index;
        uint64_t gen_id;
        bool active; /* submitted, not yet finished */
        uint64_t key;
        int64_t prompt_tokens;
        char *prompt_text;       /* echo, llama's "prompt" */
        struct mx_buf text;      /* completion text or chat content */
        struct mx_buf reasoning; /* chat: analysis channel */
        int64_t tokens;          /* completion tokens so far */
        size_t scan;             /* stop strings: where the search resumes */
        size_t streamed;         /* bytes of text already sent as events */
        size_t streamed_reasoning;
        bool role_sent;
        enum sim_finish finish;
        json_t *stop_reason; /* null, the stop string, or the stop token id */
        json_t *logprobs;    /* completions: {text_offset,...}; chat/llama: [entries] */
        int64_t text_offset;
        int64_t stuck_id; /* degenerate-text */
        bool turn_ended;  /* --mxsim-harmony: the model emitted <|return|> and went on (ignore_eos) */
};

struct sim_completion_priv {
        struct sim_server *srv;
        struct sim_completion pub;
        struct evhttp_request *req;
        enum sim_api api;
        char *id;
        int64_t created;
        bool stream, include_usage, continuous_usage;
        int logprobs; /* top alternatives per token, -1: none */
        int prompt_logprobs;
        bool echo, include_stop, skip_special, include_reasoning;
        int64_t max_tokens, min_tokens, reasoning_tokens;
        bool ignore_eos;
        char **stop;
        int64_t stop_ids[SIM_STOP_IDS_MAX];
        size_t n_stop_ids;
        int64_t *prompt_ids; /* the first prompt's, for prompt_logprobs */
        size_t n_prompt_ids;
        unsigned n;
        struct choice *choices;
        unsigned open;
        int64_t t0_us, t_first_us, t_last_us;
        uint64_t no; /* from 1, in the order the API server received the completions (timings-no-prompt-n) */
        bool started; /* stream headers sent */
        json_t *body;
};

/* ---- the token log (--mxsim-token-log, sim.h) ---- */

/* Opened on first use, in the process that answers HTTP (never the engine); buffered, flushed per request. */
static FILE *token_log_file(const struct sim_config *cfg)
{
        static FILE *f;
        static bool failed;

        if (f || failed || !cfg->token_log)
                return f;
        f = fopen(cfg->token_log, "ae");
        if (!f) {
                failed = true;
                sim_print_raw(2, "mxsim: cannot open --mxsim-token-log %s: %m", cfg->token_log);
        }
        return f;
}

_printf_(2, 3) static void token_log(const struct sim_config *cfg, const char *fmt, ...)
{
        FILE *f = token_log_file(cfg);
        va_list ap;

        if (!f)
                return;
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        fputc('\n', f);
}

static void token_log_flush(const struct sim_config *cfg)
{
        FILE *f = token_log_file(cfg);

        if (f)
                fflush(f);
}

/* ---- small parsing helpers: each returns -EINVAL and sets *err naming the field ---- */

static int get_int(json_t *o, const char *k, int64_t def, int64_t min, int64_t max, int64_t *ret, char **err)
{
        json_t *v = json_object_get(o, k);

        if (!v || json_is_null(v)) {
                *ret = def;
                return 0;
        }
        if (!json_is_integer(v)) {
                *err = xasprintf("1 validation error: '%s': Input should be a valid integer", k);
                return -EINVAL;
        }
        if (json_integer_value(v) < min || json_integer_value(v) > max) {
                *err = xasprintf("%s must be in [%" PRId64 ", %" PRId64 "], got %" JSON_INTEGER_FORMAT ".",
                                 k, min, max, json_integer_value(v));
                return -EINVAL;
        }
        *ret = json_integer_value(v);
        return 0;
}

static int get_bool(json_t *o, const char *k, bool def, bool *ret, char **err)
{
        json_t *v = json_object_get(o, k);

        if (!v || json_is_null(v)) {
                *ret = def;
                return 0;
        }
        if (!json_is_boolean(v)) {
                *err = xasprintf("1 validation error: '%s': Input should be a valid boolean", k);
                return -EINVAL;
        }
        *ret = json_is_true(v);
        return 0;
}

static int get_number(json_t *o, const char *k, double def, double *ret, char **err)
{
        json_t *v = json_object_get(o, k);

        if (!v || json_is_null(v)) {
                *ret = def;
                return 0;
        }
        if (!json_is_number(v)) {
                *err = xasprintf("1 validation error: '%s': Input should be a valid number", k);
                return -EINVAL;
        }
        *ret = json_number_value(v);
        return 0;
}

static int get_stop(json_t *o, const char *k, char ***ret, char **err)
{
        json_t *v = json_object_get(o, k), *e;
        _cleanup_strv_free_ char **l = NULL;
        size_t i;

        if (!v || json_is_null(v))
                return 0;
        if (json_is_string(v)) {
                strv_push(&l, json_string_value(v));
                *ret = TAKE_PTR(l);
                return 0;
        }
        if (!json_is_array(v) || json_array_size(v) > STOP_STRINGS_MAX) {
                *err = xasprintf("'%s' must be a string or a list of at most %d strings", k,
                                 STOP_STRINGS_MAX);
                return -EINVAL;
        }
        json_array_foreach(v, i, e) {
                if (!json_is_string(e) || json_string_length(e) > STOP_STRING_LEN_MAX) {
                        *err = xasprintf("'%s'[%zu] must be a string of at most %d bytes", k, i,
                                         STOP_STRING_LEN_MAX);
                        return -EINVAL;
                }
                if (json_string_length(e) > 0)
                        strv_push(&l, json_string_value(e));
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* ---- lifetime ---- */

static void choice_done(struct choice *ch)
{
        mx_buf_free(&ch->text);
        mx_buf_free(&ch->reasoning);
        free(ch->prompt_text);
        json_decref(ch->stop_reason);
        json_decref(ch->logprobs);
}

/* Unlink and free a request, aborting whatever of it is still generating. */
static void priv_free(struct sim_completion_priv *c)
{
        struct sim_server *s = c->srv;

        for (unsigned i = 0; c->choices && i < c->n; i++) {
                if (c->choices[i].active && s->gen)
                        s->gen->abort(s->gen, c->choices[i].gen_id);
                choice_done(&c->choices[i]);
        }
        if (c->pub.prev)
                c->pub.prev->next = c->pub.next;
        else if (s->completions == &c->pub)
                s->completions = c->pub.next;
        if (c->pub.next)
                c->pub.next->prev = c->pub.prev;
        s->n_completions--;
        if (c->req) {
                struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
                if (evcon)
                        evhttp_connection_set_closecb(evcon, NULL, NULL);
        }
        free(c->choices);
        free(c->id);
        free(c->prompt_ids);
        strv_free(c->stop);
        json_decref(c->body);
        free(c);
}

/* The client went away (or the server is shutting down) while we were generating. */
static void conn_close_cb(struct evhttp_connection *evcon, void *arg)
{
        struct sim_completion_priv *c = arg;

        if (c->srv->cfg->flavor == SIM_FLAVOR_VLLM)
                sim_log(SIM_INFO, "async_llm.py:385", "Aborted request %s.", c->id);

        if (c->req && !evhttp_request_get_connection(c->req))
                evhttp_request_free(c->req); /* detached on EOF: ours to free */
        c->req = NULL;
        priv_free(c);
}

/*
 * evhttp does not read from a connection while its request is being handled,
 * so a client that gives up on a non-streaming request goes unnoticed; vLLM
 * (starlette) notices and aborts it. Peek at the sockets now and then.
 */
static void probe_cb(evutil_socket_t fd, short what, void *arg)
{
        struct sim_server *s = arg;
        struct sim_completion *next;
        bool any = false;

        for (struct sim_completion *p = s->completions; p; p = next) {
                struct sim_completion_priv *c = p->priv;
                struct evhttp_connection *evcon = c->req ? evhttp_request_get_connection(c->req) : NULL;
                struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
                char byte;

                next = p->next;
                if (!bev || c->stream)
                        continue;
                any = true;
                if (recv(bufferevent_getfd(bev), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
                        evhttp_connection_free(evcon); /* runs conn_close_cb, which frees c */
        }
        if (any) {
                struct timeval tv = sim_timeval(DISCONNECT_PROBE_S);
                evtimer_add(s->probe_ev, &tv);
        }
}

static void probe_arm(struct sim_server *s)
{
        struct timeval tv = sim_timeval(DISCONNECT_PROBE_S);

        if (!s->probe_ev)
                s->probe_ev = evtimer_new(s->base, probe_cb, s);
        if (!evtimer_pending(s->probe_ev, NULL))
                evtimer_add(s->probe_ev, &tv);
}

/* ---- rendering ---- */

static json_t *lp_value(struct sim_server *s, double lp)
{
        if (sim_fault_on(&s->cfg->faults, SIM_FAULT_NAN_LOGPROBS))
                return json_real(sim_nan_sentinel());
        if (sim_fault_on(&s->cfg->faults, SIM_FAULT_POSITIVE_LOGPROBS))
                return json_real(fabs(lp) + 0.25); /* a sign error in the log-softmax */
        return json_real(lp);
}

/* seed-drift: unseeded requests answered so far; they shift the sampling of seeded ones. */
static uint64_t unseeded_requests;

static char *token_str(int64_t id)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        sim_token_append(&b, id, false);
        return mx_buf_steal(&b);
}

static json_t *bytes_of(const char *s)
{
        json_t *a = json_array();

        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                json_array_append_new(a, json_integer(*p));
        return a;
}

/*
 * Append one token's logprobs in the shape of the request's API and flavour:
 * vLLM's completions the legacy arrays; every chat and llama-server's
 * completions the content form, llama-server's entries with their "id"
 * (../shared/targets/README.md: what the real server answers).
 */
static void add_logprobs(struct choice *ch, const struct sim_token *t, const char *text)
{
        struct sim_completion_priv *c = ch->c;
        struct sim_server *s = c->srv;
        _cleanup_free_ char *tok = token_str(t->id);
        bool with_id = c->api == SIM_API_LLAMA_NATIVE || s->cfg->flavor == SIM_FLAVOR_LLAMA;

        if (c->api == SIM_API_COMPLETIONS && s->cfg->flavor != SIM_FLAVOR_LLAMA) {
                json_t *top = json_object();
                if (!ch->logprobs)
                        ch->logprobs = json_pack("{s:[],s:[],s:[],s:[]}", "text_offset", "token_logprobs",
                                                 "tokens", "top_logprobs");
                json_array_append_new(json_object_get(ch->logprobs, "text_offset"),
                                      json_integer(ch->text_offset));
                json_array_append_new(json_object_get(ch->logprobs, "token_logprobs"),
                                      lp_value(s, t->logprob));
                json_array_append_new(json_object_get(ch->logprobs, "tokens"), json_string(tok));
                json_object_set_new(top, tok, lp_value(s, t->logprob));
                for (int k = 1; k < t->n_top; k++) {
                        _cleanup_free_ char *alt = token_str(t->top_id[k]);
                        json_object_set_new(top, alt, lp_value(s, t->top_lp[k]));
                }
                json_array_append_new(json_object_get(ch->logprobs, "top_logprobs"), top);
                ch->text_offset += (int64_t)strlen(text);
                return;
        }
        json_t *alts = json_array();
        for (int k = 0; k < t->n_top; k++) {
                _cleanup_free_ char *alt = token_str(t->top_id[k]);
                if (with_id)
                        json_array_append_new(alts,
                                              json_pack("{s:I,s:s,s:o,s:o}", "id", (json_int_t)t->top_id[k],
                                                        "token", alt, "bytes", bytes_of(alt), "logprob",
                                                        lp_value(s, t->top_lp[k])));
                else
                        json_array_append_new(alts,
                                              json_pack("{s:s,s:o,s:o}", "token", alt, "logprob",
                                                        lp_value(s, t->top_lp[k]), "bytes", bytes_of(alt)));
        }
        if (!ch->logprobs)
                ch->logprobs = json_array();
        if (with_id)
                json_array_append_new(ch->logprobs,
                                      json_pack("{s:I,s:s,s:o,s:o,s:o}", "id", (json_int_t)t->id, "token",
                                                tok, "bytes", bytes_of(tok), "logprob",
                                                lp_value(s, t->logprob), "top_logprobs", alts));
        else
                json_array_append_new(ch->logprobs, json_pack("{s:s,s:o,s:o,s:o}", "token", tok, "logprob",
                                                              lp_value(s, t->logprob), "bytes",
                                                              bytes_of(tok), "top_logprobs", alts));
}

static int64_t total_completion_tokens(const struct sim_completion_priv *c)
{
        int64_t n = 0;

        for (unsigned i = 0; i < c->n; i++)
                n += c->choices[i].tokens;
        return n;
}

/* The OpenAI usage object. */
static json_t *usage(const struct sim_completion_priv *c)
{
        int64_t p = c->pub.sum.prompt_tokens, k = total_completion_tokens(c);

        return json_pack("{s:I,s:I,s:I,s:n}", "prompt_tokens", (json_int_t)p, "total_tokens",
                         (json_int_t)(p + k), "completion_tokens", (json_int_t)k, "prompt_tokens_details");
}

/* llama-server's "timings" object from the request's clock readings. */
static json_t *llama_timings(const struct sim_completion_priv *c, const struct choice *ch)
{
        double prompt_ms = (double)(c->t_first_us - c->t0_us) / 1000.0;
        double gen_ms = (double)(c->t_last_us - c->t_first_us) / 1000.0;
        int64_t k = ch ? ch->tokens : total_completion_tokens(c);
        json_t *o;

        if (prompt_ms <= 0)
                prompt_ms = 0.001;
        if (gen_ms <= 0)
                gen_ms = 0.001;
        o = json_pack("{s:i,s:I,s:f,s:f,s:f,s:I,s:f,s:f,s:f}", "cache_n", 0, "prompt_n",
                      (json_int_t)c->pub.sum.prompt_tokens, "prompt_ms", prompt_ms, "prompt_per_token_ms",
                      prompt_ms / (double)MX_MAX(c->pub.sum.prompt_tokens, 1), "prompt_per_second",
                      (double)c->pub.sum.prompt_tokens * 1000.0 / prompt_ms, "predicted_n", (json_int_t)k,
                      "predicted_ms", gen_ms, "predicted_per_token_ms", gen_ms / (double)MX_MAX(k, 1),
                      "predicted_per_second", (double)k * 1000.0 / gen_ms);
        if (sim_faults_no_prompt_n(&c->srv->cfg->faults, c->no))
                json_object_del(o, "prompt_n");
        return o;
}

static const char *finish_name(const struct choice *ch)
{
        return ch->finish == SIM_FINISH_STOP ? "stop" : "length";
}

/* vLLM's prompt_logprobs: null for the first token, then {id: {logprob, rank, decoded_token}}. */
static json_t *prompt_logprobs_json(const struct sim_completion_priv *c)
{
        json_t *a;

        if (c->prompt_logprobs < 0 || !c->prompt_ids)
                return json_null();
        a = json_array();
        json_array_append_new(a, json_null());
        for (size_t i = 1; i < c->n_prompt_ids; i++) {
                int64_t rank;
                double lp = sim_prompt_logprob(c->prompt_ids, i, &rank);
                _cleanup_free_ char *tok = token_str(c->prompt_ids[i]),
                                    *key = xasprintf("%" PRId64, c->prompt_ids[i]);
                json_array_append_new(a, json_pack("{s:{s:o,s:I,s:s}}", key, "logprob", lp_value(c->srv, lp),
                                                   "rank", (json_int_t)rank, "decoded_token", tok));
        }
        return a;
}

/* Chat message content, or null (null-content fault, vllm#37030). */
static json_t *chat_content(const struct sim_completion_priv *c, const struct choice *ch, bool reasoning)
{
        const struct mx_buf *b = reasoning ? &ch->reasoning : &ch->text;

        if (sim_fault_on(&c->srv->cfg->faults, SIM_FAULT_NULL_CONTENT))
                return json_null();
        if (reasoning && (!c->include_reasoning || b->len == 0))
                return json_null();
        return json_string(b->data ? b->data : "");
}

/* One element of "choices" of a full (non-streaming) reply. */
static json_t *render_choice(struct sim_completion_priv *c, struct choice *ch)
{
        enum sim_flavor fl = c->srv->cfg->flavor;
        json_t *o;

        if (c->api == SIM_API_CHAT) {
                json_t *msg =
                        json_pack("{s:s,s:o}", "role", "assistant", "content", chat_content(c, ch, false));
                if (fl == SIM_FLAVOR_VLLM) {
                        json_object_set_new(msg, "refusal", json_null());
                        json_object_set_new(msg, "annotations", json_null());
                        json_object_set_new(msg, "audio", json_null());
                        json_object_set_new(msg, "function_call", json_null());
                        json_object_set_new(msg, "tool_calls", json_array());
                }
                json_object_set_new(msg, fl == SIM_FLAVOR_VLLM ? "reasoning" : "reasoning_content",
                                    chat_content(c, ch, true));
                o = json_pack("{s:i,s:o,s:o,s:s}", "index", ch->index, "message", msg, "logprobs",
                              ch->logprobs ? json_pack("{s:O}", "content", ch->logprobs) : json_null(),
                              "finish_reason", finish_name(ch));
        } else {
                _cleanup_free_ char *text =
                        c->echo ? xasprintf("%s%s", strempty(ch->prompt_text), strempty(ch->text.data))
                                : xstrdup(strempty(ch->text.data));
                json_t *lp = !ch->logprobs           ? json_null()
                             : json_is_array(ch->logprobs) ? json_pack("{s:O}", "content", ch->logprobs)
                                                           : json_incref(ch->logprobs);
                o = json_pack("{s:i,s:s,s:o,s:s}", "index", ch->index, "text", text, "logprobs", lp,
                              "finish_reason", finish_name(ch));
        }
        if (fl == SIM_FLAVOR_VLLM) {
                json_object_set(o, "stop_reason", ch->stop_reason ? ch->stop_reason : json_null());
                if (c->api == SIM_API_COMPLETIONS)
                        json_object_set_new(o, "prompt_logprobs",
                                            ch->index == 0 ? prompt_logprobs_json(c) : json_null());
        }
        return o;
}

/* llama-server's /completion reply; final adds the settings and timings. */
static json_t *render_llama_native(struct sim_completion_priv *c, struct choice *ch, bool final)
{
        const struct sim_config *cfg = c->srv->cfg;
        json_t *o = json_pack("{s:i,s:s,s:[],s:i,s:b,s:s,s:I,s:I}", "index", 0, "content",
                              final ? strempty(ch->text.data) : "", "tokens", "id_slot", 0, "stop", final,
                              "model", cfg->served_name, "tokens_predicted", (json_int_t)ch->tokens,
                              "tokens_evaluated", (json_int_t)ch->prompt_tokens);
        const char *stop_type = ch->finish == SIM_FINISH_LENGTH                      ? "limit"
                                : ch->stop_reason && json_is_string(ch->stop_reason) ? "word"
                                                                                     : "eos";

        if (!final)
                return o;
        json_object_set_new(o, "generation_settings",
                            json_pack("{s:I,s:f,s:i,s:f}", "n_predict", (json_int_t)c->max_tokens,
                                      "temperature", 0.8, "top_k", 40, "top_p", 0.95));
        json_object_set_new(o, "prompt", json_string(strempty(ch->prompt_text)));
        json_object_set_new(o, "has_new_line", json_false());
        json_object_set_new(o, "truncated", json_false());
        json_object_set_new(o, "stop_type", json_string(stop_type));
        json_object_set_new(o, "stopping_word",
                            json_string(ch->stop_reason && json_is_string(ch->stop_reason)
                                                ? json_string_value(ch->stop_reason)
                                                : ""));
        json_object_set_new(o, "tokens_cached", json_integer(ch->prompt_tokens + ch->tokens));
        json_object_set_new(o, "timings", llama_timings(c, ch));
        if (ch->logprobs)
                json_object_set(o, "completion_probabilities", ch->logprobs);
        return o;
}

/* SGLang's /generate reply (cumulative text). */
static json_t *render_sglang_native(struct sim_completion_priv *c, struct choice *ch, bool final)
{
        json_t *fin =
                final ? ch->finish == SIM_FINISH_LENGTH
                                ? json_pack("{s:s,s:I}", "type", "length", "length", (json_int_t)ch->tokens)
                                : json_pack("{s:s,s:O}", "type", "stop", "matched",
                                            ch->stop_reason ? ch->stop_reason : json_null())
                      : json_null();

        return json_pack("{s:s,s:{s:s,s:o,s:I,s:I,s:i,s:f}}", "text", strempty(ch->text.data), "meta_info",
                         "id", c->id, "finish_reason", fin, "prompt_tokens", (json_int_t)ch->prompt_tokens,
                         "completion_tokens", (json_int_t)ch->tokens, "cached_tokens", 0, "e2e_latency",
                         (double)(mx_now_mono_us() - c->t0_us) / 1e6);
}

/* The whole non-streaming reply in the shape of the API and flavour. */
static json_t *render_full(struct sim_completion_priv *c)
{
        const struct sim_config *cfg = c->srv->cfg;
        json_t *choices, *o;

        if (c->api == SIM_API_LLAMA_NATIVE)
                return render_llama_native(c, &c->choices[0], true);
        if (c->api == SIM_API_SGLANG_NATIVE)
                return render_sglang_native(c, &c->choices[0], true);
        choices = json_array();
        for (unsigned i = 0; i < c->n; i++)
                json_array_append_new(choices, render_choice(c, &c->choices[i]));
        o = json_pack("{s:s,s:s,s:I,s:s,s:o,s:o}", "id", c->id, "object",
                      c->api == SIM_API_CHAT ? "chat.completion" : "text_completion", "created",
                      (json_int_t)c->created, "model", cfg->served_name, "choices", choices, "usage",
                      usage(c));
        if (cfg->flavor == SIM_FLAVOR_VLLM) {
                if (c->api == SIM_API_CHAT) {
                        json_object_set_new(o, "service_tier", json_null());
                        json_object_set_new(o, "system_fingerprint", json_null());
                        json_object_set_new(o, "prompt_logprobs", prompt_logprobs_json(c));
                }
                json_object_set_new(o, "kv_transfer_params", json_null());
        } else if (cfg->flavor == SIM_FLAVOR_LLAMA) {
                json_object_set_new(o, "system_fingerprint", json_string("b6153-0a6a1d3c"));
                json_object_set_new(o, "timings", llama_timings(c, NULL));
        }
        return o;
}

/* ---- streaming ---- */

static void send_event(struct sim_completion_priv *c, const char *data)
{
        struct evbuffer *b;

        if (!c->req)
                return;
        b = evbuffer_new();
        if (!b)
                mx_die("evbuffer_new failed");
        evbuffer_add_printf(b, "data: %s\n\n", data);
        evhttp_send_reply_chunk(c->req, b);
        evbuffer_free(b);
}

static void send_event_json(struct sim_completion_priv *c, json_t *v)
{
        _cleanup_free_ char *s = sim_json_dump(v);

        json_decref(v);
        send_event(c, s);
}

/* Send the SSE headers once, before the first event. */
static void stream_start(struct sim_completion_priv *c)
{
        struct evkeyvalq *h;

        if (c->started || !c->req)
                return;
        c->started = true;
        h = evhttp_request_get_output_headers(c->req);
        evhttp_add_header(h, "Content-Type", "text/event-stream; charset=utf-8");
        evhttp_add_header(h, "Cache-Control", "no-cache");
        if (c->srv->access_log)
                c->srv->access_log(c->srv, c->req, 200);
        evhttp_send_reply_start(c->req, 200, "OK");
}

/* The envelope of one streamed chunk around one choice. */
static json_t *chunk_base(struct sim_completion_priv *c, json_t *choice)
{
        json_t *o =
                json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", c->id, "object",
                          c->api == SIM_API_CHAT ? "chat.completion.chunk" : "text_completion", "created",
                          (json_int_t)c->created, "model", c->srv->cfg->served_name, "choices", choice);

        if (c->continuous_usage)
                json_object_set_new(o, "usage", usage(c));
        return o;
}

/*
 * The chat stream's first chunk, on its own with the first engine output: vLLM's
 * {"role": "assistant", "content": ""} (its running usage says 0 completion tokens), llama-server's
 * {"role": "assistant", "content": null} (target-surfaces.md §A5; observed on the real llama-server).
 */
static void stream_role(struct sim_completion_priv *c, struct choice *ch)
{
        bool llama = c->srv->cfg->flavor == SIM_FLAVOR_LLAMA;
        json_t *choice = json_pack("{s:i,s:{s:s,s:o},s:n,s:n}", "index", ch->index, "delta", "role", "assistant",
                                   "content", llama ? json_null() : json_string(""), "logprobs", "finish_reason");
        json_t *o = chunk_base(c, choice), *u = json_object_get(o, "usage");

        if (u) {
                json_int_t p = json_integer_value(json_object_get(u, "prompt_tokens"));
                json_object_set_new(u, "completion_tokens", json_integer(0));
                json_object_set_new(u, "total_tokens", json_integer(p));
        }
        send_event_json(c, o);
}

/* Send what choice ch produced since the last event (delta text, or the finish). */
static void stream_delta(struct sim_completion_priv *c, struct choice *ch, json_t *lp, bool final)
{
        if (ch->streamed > ch->text.len)
                ch->streamed = ch->text.len;
        const char *text = strempty(ch->text.data) + ch->streamed;
        const char *reasoning = strempty(ch->reasoning.data) + ch->streamed_reasoning;
        bool null_content = sim_fault_on(&c->srv->cfg->faults, SIM_FAULT_NULL_CONTENT);
        json_t *choice;

        ch->streamed = ch->text.len;
        ch->streamed_reasoning = ch->reasoning.len;
        if (c->api == SIM_API_LLAMA_NATIVE) {
                json_t *o = render_llama_native(c, ch, final);
                json_object_set_new(o, "content", json_string(text));
                json_decref(lp);
                send_event_json(c, o);
                return;
        }
        if (c->api == SIM_API_SGLANG_NATIVE) {
                json_decref(lp);
                send_event_json(c, render_sglang_native(c, ch, final));
                return;
        }
        if (c->api == SIM_API_CHAT) {
                json_t *delta = json_object();
                if (!ch->role_sent) {
                        stream_role(c, ch);
                        ch->role_sent = true;
                }
                if (*reasoning && c->include_reasoning && !null_content)
                        json_object_set_new(delta,
                                            c->srv->cfg->flavor == SIM_FLAVOR_VLLM ? "reasoning"
                                                                                   : "reasoning_content",
                                            json_string(reasoning));
                if (*text && !null_content)
                        json_object_set_new(delta, "content", json_string(text));
                if (!*text && !*reasoning && !final)
                        json_object_set_new(delta, "content", json_string(""));
                choice = json_pack("{s:i,s:o,s:o,s:o}", "index", ch->index, "delta", delta, "logprobs",
                                   lp ? json_pack("{s:o}", "content", lp) : json_null(), "finish_reason",
                                   final ? json_string(finish_name(ch)) : json_null());
        } else
                choice = json_pack("{s:i,s:s,s:o,s:o}", "index", ch->index, "text", text, "logprobs",
                                   !lp                 ? json_null()
                                   : json_is_array(lp) ? json_pack("{s:o}", "content", lp)
                                                       : lp,
                                   "finish_reason", final ? json_string(finish_name(ch)) : json_null());
        if (c->srv->cfg->flavor == SIM_FLAVOR_VLLM)
                json_object_set(choice, "stop_reason",
                                final && ch->stop_reason ? ch->stop_reason : json_null());
        send_event_json(c, chunk_base(c, choice));
}

/* ---- completion of the whole request ---- */

static void summarise(struct sim_completion_priv *c)
{
        struct sim_completion_summary *sum = &c->pub.sum;

        sum->completion_tokens = total_completion_tokens(c);
        sum->ttft_s = c->t_first_us ? (double)(c->t_first_us - c->t0_us) / 1e6 : 0;
        sum->e2e_s = (double)(mx_now_mono_us() - c->t0_us) / 1e6;
        sum->stopped = c->n > 0 && c->choices[0].finish == SIM_FINISH_STOP;
}

/* All choices are done: answer (or end the stream), count it, free it. */
static void finish_request(struct sim_completion_priv *c)
{
        struct sim_server *s = c->srv;

        summarise(c);
        if (s->cfg->token_log) {
                token_log(s->cfg,
                          "{\"ev\":\"end\",\"id\":\"%s\",\"completion_tokens\":%" PRId64
                          ",\"finish\":\"%s\",\"end_us\":%" PRId64 "}",
                          c->id, c->pub.sum.completion_tokens, c->n > 0 ? finish_name(&c->choices[0]) : "none",
                          mx_now_mono_us());
                token_log_flush(s->cfg);
        }
        if (c->req) {
                if (c->stream) {
                        stream_start(c);
                        if (c->include_usage && (c->api == SIM_API_COMPLETIONS || c->api == SIM_API_CHAT)) {
                                json_t *u = json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", c->id, "object",
                                                      c->api == SIM_API_CHAT ? "chat.completion.chunk"
                                                                             : "text_completion",
                                                      "created", (json_int_t)c->created, "model",
                                                      s->cfg->served_name, "choices", "usage", usage(c));

                                /* llama-server's final chunk (choices [], usage) also carries the request's
                                 * timings, as the real server sends them (../shared/targets) */
                                if (s->cfg->flavor == SIM_FLAVOR_LLAMA)
                                        json_object_set_new(u, "timings", llama_timings(c, NULL));
                                send_event_json(c, u);
                        }
                        if (c->api != SIM_API_LLAMA_NATIVE)
                                send_event(c, "[DONE]");
                        evhttp_connection_set_closecb(evhttp_request_get_connection(c->req), NULL, NULL);
                        evhttp_send_reply_end(c->req);
                } else {
                        evhttp_connection_set_closecb(evhttp_request_get_connection(c->req), NULL, NULL);
                        sim_reply_json(s, c->req, 200, render_full(c));
                }
                c->req = NULL;
        }
        s->completions_done++;
        if (s->finished)
                s->finished(s, &c->pub);
        priv_free(c);
}

/*
 * An exception in the API server: 500 InternalServerError with message, or, once the stream started, an
 * error event and [DONE] without a usage chunk (vLLM's chat_completion_stream_generator, §A5).
 */
static void fail_request_with(struct sim_completion_priv *c, const char *message)
{
        struct sim_server *s = c->srv;

        if (s->cfg->token_log) {
                token_log(s->cfg,
                          "{\"ev\":\"end\",\"id\":\"%s\",\"completion_tokens\":%" PRId64
                          ",\"finish\":\"error\",\"end_us\":%" PRId64 "}",
                          strna(c->id), total_completion_tokens(c), mx_now_mono_us());
                token_log_flush(s->cfg);
        }
        if (c->req) {
                evhttp_connection_set_closecb(evhttp_request_get_connection(c->req), NULL, NULL);
                if (c->started) {
                        send_event_json(c, json_pack("{s:{s:s,s:s,s:n,s:i}}", "error", "message", message, "type",
                                                     "InternalServerError", "param", "code", 500));
                        send_event(c, "[DONE]");
                        evhttp_send_reply_end(c->req);
                } else
                        sim_reply_error(s, c->req, 500, "InternalServerError", "%s", message);
                c->req = NULL;
        }
        priv_free(c);
}

/* The engine died under this request. */
static void fail_request(struct sim_completion_priv *c)
{
        fail_request_with(c, "EngineCore encountered an issue. See stack trace (above) for the root cause.");
}

/*
 * vllm#50690 (--mxsim-harmony): gpt-oss ended its turn (<|return|>) before the limit, ignore_eos made it go
 * on, and vLLM's Harmony parser fails on the next token, expecting a new message's <|start|>.
 */
#define HARMONY_EOS_ERROR "Unexpected token 200002 while expecting start token 200006"

static void harmony_fail(struct sim_completion_priv *c)
{
        sim_log(SIM_ERROR, "serving.py:1410", "Error in chat completion stream generator.");
        sim_print(STDOUT_FILENO, "openai_harmony.HarmonyError: %s", HARMONY_EOS_ERROR);
        fail_request_with(c, HARMONY_EOS_ERROR);
}

/* ---- generator callbacks ---- */

/* Look for a stop string in the new text; on a hit cut the text and return true. */
static bool check_stop(struct choice *ch)
{
        struct sim_completion_priv *c = ch->c;
        size_t from = ch->scan;

        if (!c->stop || !ch->text.data)
                return false;
        for (char **p = c->stop; *p; p++) {
                size_t l = strlen(*p), back = MX_MIN(from, l - 1);
                char *hit = strstr(ch->text.data + from - back, *p);
                if (!hit)
                        continue;
                size_t cut = (size_t)(hit - ch->text.data) + (c->include_stop ? l : 0);
                ch->text.data[cut] = '\0';
                ch->text.len = cut;
                ch->stop_reason = json_string(*p);
                return true;
        }
        ch->scan = ch->text.len;
        return false;
}

/* One choice ended; the request ends with its last choice. */
static void choice_finished(struct choice *ch, enum sim_finish fin)
{
        struct sim_completion_priv *c = ch->c;

        ch->active = false;
        ch->finish = fin;
        if (ch->streamed > ch->text.len)
                ch->streamed = ch->text.len;
        if (c->stream && c->req) {
                stream_start(c);
                stream_delta(c, ch, NULL, true);
        }
        if (--c->open == 0)
                finish_request(c);
}

/* How many tokens have logprobs so far (for the streamed delta). */
static size_t logprob_entries(const struct choice *ch)
{
        if (!ch->logprobs)
                return 0;
        if (json_is_object(ch->logprobs))
                return json_array_size(json_object_get(ch->logprobs, "tokens"));
        return json_array_size(ch->logprobs);
}

/* The logprobs of the entries from "from" on, for one streamed event. */
static json_t *logprobs_since(const struct choice *ch, size_t from)
{
        static const char *const keys[] = {"text_offset", "token_logprobs", "tokens", "top_logprobs"};
        json_t *d;

        if (!ch->logprobs)
                return NULL;
        if (json_is_array(ch->logprobs)) {
                d = json_array();
                for (size_t j = from; j < json_array_size(ch->logprobs); j++)
                        json_array_append(d, json_array_get(ch->logprobs, j));
                return d;
        }
        d = json_object();
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                json_t *all = json_object_get(ch->logprobs, keys[k]), *part = json_array();
                for (size_t j = from; j < json_array_size(all); j++)
                        json_array_append(part, json_array_get(all, j));
                json_object_set_new(d, keys[k], part);
        }
        return d;
}

/* Tokens of one decode step: text, reasoning, logprobs, stop strings, stream events. */
static void on_tokens(void *userdata, const struct sim_token *t, size_t n)
{
        struct choice *ch = userdata;
        struct sim_completion_priv *c = ch->c;
        size_t lp_from = logprob_entries(ch), n_silent = 0;
        bool stopped = false;

        if (!c->t_first_us)
                c->t_first_us = mx_now_mono_us();
        c->t_last_us = mx_now_mono_us();
        for (size_t i = 0; i < n && !stopped; i++) {
                _cleanup_buf_ struct mx_buf piece = MX_BUF_INIT;
                bool in_reasoning = c->api == SIM_API_CHAT && t[i].part == SIM_PART_REASONING;
                struct sim_token tk = t[i];

                if (c->echo && c->max_tokens == 0)
                        continue; /* echo without generation: the one token is not output */
                if (ch->turn_ended) {
                        harmony_fail(c); /* frees c; the generator's abort is done there */
                        return;
                }
                if (tk.part == SIM_PART_CONTROL) {
                        /* a Harmony control token: counted, logprobs for it, but no text (and so no chunk) */
                        ch->tokens++;
                        n_silent++;
                        if (c->logprobs >= 0)
                                add_logprobs(ch, &tk, "");
                        ch->turn_ended = c->api == SIM_API_CHAT && c->srv->cfg->harmony &&
                                         tk.id == SIM_TOKEN_RETURN && c->ignore_eos;
                        continue;
                }
                /* degenerate-text: the model is stuck on its first token (a broken kernel's usual look). */
                if (sim_fault_on(&c->srv->cfg->faults, SIM_FAULT_DEGENERATE_TEXT)) {
                        if (ch->tokens == 0)
                                ch->stuck_id = tk.id;
                        tk.id = tk.top_id[0] = ch->stuck_id;
                }
                ch->tokens++;
                sim_token_append(&piece, tk.id, c->skip_special);
                /* invalid-utf8: a byte-level token cut in half (the marker becomes raw 0xff 0xfe in sim_json_dump). */
                if (sim_fault_on(&c->srv->cfg->faults, SIM_FAULT_INVALID_UTF8) && ch->tokens == 3)
                        mx_buf_puts(&piece, SIM_INVALID_UTF8_MARK);
                if (c->logprobs >= 0)
                        add_logprobs(ch, &tk, strempty(piece.data));
                if (in_reasoning) {
                        mx_buf_puts(&ch->reasoning, strempty(piece.data));
                        continue;
                }
                mx_buf_puts(&ch->text, strempty(piece.data));
                stopped = check_stop(ch);
        }
        if (c->stream && c->req) {
                json_t *lp = c->api == SIM_API_LLAMA_NATIVE ? NULL : logprobs_since(ch, lp_from);
                stream_start(c);
                /* the role chunk goes with the first engine output, even one of silent tokens (§A5) */
                if (c->api == SIM_API_CHAT && !ch->role_sent) {
                        stream_role(c, ch);
                        ch->role_sent = true;
                }
                if (ch->text.len > ch->streamed || ch->reasoning.len > ch->streamed_reasoning || lp)
                        stream_delta(c, ch, lp, false);
        }
        if (c->srv->cfg->token_log && n > 0)
                token_log(c->srv->cfg,
                          "{\"ev\":\"tok\",\"id\":\"%s\",\"choice\":%u,\"n\":%zu,\"silent\":%zu,\"tokens\":%" PRId64
                          ",\"sched_us\":%" PRId64 ",\"sent_us\":%" PRId64 "}",
                          c->id, ch->index, n, n_silent, ch->tokens, t[0].sched_us, mx_now_mono_us());
        if (stopped) {
                c->srv->gen->abort(c->srv->gen, ch->gen_id);
                choice_finished(ch, SIM_FINISH_STOP);
        }
}

/* The generator finished a choice (length, EOS or a stop token id). */
static void on_done(void *userdata, enum sim_finish finish, int64_t stop_token)
{
        struct choice *ch = userdata;

        if (stop_token >= 0)
                ch->stop_reason = json_integer(stop_token);
        choice_finished(ch, finish);
}

/* The engine died under this choice. */
static void on_failed(void *userdata)
{
        struct choice *ch = userdata;

        fail_request(ch->c);
}

static const struct sim_gen_cb completion_cb = {on_tokens, on_done, on_failed};

/* ---- parsing the request ---- */

int sim_prompt_ids(json_t *prompt, int64_t **ret_ids, size_t *ret_n, char **reterr)
{
        _cleanup_free_ int64_t *ids = NULL;
        size_t n, i;
        json_t *v;

        if (json_is_string(prompt)) {
                n = sim_tokenize(json_string_value(prompt), json_string_length(prompt), &ids);
        } else if (json_is_array(prompt)) {
                n = json_array_size(prompt);
                ids = xreallocarray(NULL, n + 1, sizeof(int64_t));
                json_array_foreach(prompt, i, v) {
                        if (!json_is_integer(v)) {
                                *reterr = xasprintf("prompt[%zu]: Input should be a valid integer", i);
                                return -EINVAL;
                        }
                        ids[i] = json_integer_value(v);
                        if (ids[i] < 0 || ids[i] >= SIM_VOCAB_SIZE) {
                                *reterr = xasprintf("Token id %" PRId64 " is out of vocabulary", ids[i]);
                                return -EINVAL;
                        }
                }
        } else {
                *reterr = xstrdup("1 validation error: 'prompt': Input should be a valid string or a list");
                return -EINVAL;
        }
        if (n == 0) {
                *reterr = xstrdup("Either prompt or prompt_embeds must be provided and non-empty.");
                return -EINVAL;
        }
        *ret_ids = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

static char *ids_text(const int64_t *ids, size_t n)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < n; i++)
                sim_token_append(&b, ids[i], false);
        return mx_buf_steal(&b);
}

/* Split a completions "prompt" into its prompts: one string/id list, or a list of them. */
static int split_prompts(json_t *prompt, json_t **ret_list, char **err)
{
        json_t *first;

        if (!prompt || json_is_null(prompt) || (json_is_array(prompt) && json_array_size(prompt) == 0) ||
            (json_is_string(prompt) && json_string_length(prompt) == 0)) {
                *err = xstrdup("Either prompt or prompt_embeds must be provided and non-empty.");
                return -EINVAL;
        }
        first = json_is_array(prompt) ? json_array_get(prompt, 0) : NULL;
        if (first && (json_is_string(first) || json_is_array(first))) {
                if (json_array_size(prompt) > PROMPTS_MAX) {
                        *err = xasprintf("at most %d prompts per request", PROMPTS_MAX);
                        return -EINVAL;
                }
                *ret_list = json_incref(prompt);
        } else
                *ret_list = json_pack("[O]", prompt);
        return 0;
}

static const char *known_fields[] = {
        "model",
        "prompt",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "n",
        "seed",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "stream",
        "stream_options",
        "logprobs",
        "top_logprobs",
        "prompt_logprobs",
        "echo",
        "stop",
        "stop_token_ids",
        "ignore_eos",
        "min_tokens",
        "include_stop_str_in_output",
        "skip_special_tokens",
        "add_special_tokens",
        "reasoning_effort",
        "include_reasoning",
        "add_generation_prompt",
        "continue_final_message",
        "chat_template_kwargs",
        "frequency_penalty",
        "presence_penalty",
        "repetition_penalty",
        "user",
        "cache_salt",
        "priority",
        "request_id",
        "return_token_ids",
        "n_predict",
        "cache_prompt",
        "n_probs",
        "text",
        "input_ids",
        "sampling_params",
        "return_logprob",
        "top_logprobs_num",
        "tools",
        "tool_choice",
        "response_format",
        "logit_bias",
        "best_of",
        "suffix",
        "length_penalty",
        "vllm_xargs",
        "kv_transfer_params",
        "samplers",
        "timings_per_token",
        "id_slot",
        "chat_template",
};

/* vLLM ignores unknown request fields, with a warning naming them. */
static void warn_unknown_fields(struct sim_server *s, json_t *body)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        const char *k;
        json_t *v;

        if (s->cfg->flavor != SIM_FLAVOR_VLLM)
                return;
        json_object_foreach(body, k, v) {
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(known_fields) && !known; i++)
                        known = streq(k, known_fields[i]);
                if (!known)
                        mx_buf_printf(&b, "%s'%s'", b.len ? ", " : "", k);
        }
        if (b.len)
                sim_log(SIM_WARNING, "protocol.py:81",
                        "The following fields were present in the request but ignored: {%s}", b.data);
}

/* Fields every API shares, after the API-specific names were mapped. */
static int parse_sampling(struct sim_completion_priv *c, json_t *o, int64_t *ret_seed, bool *ret_greedy,
                          char **err)
{
        json_t *so = json_object_get(o, "stream_options"), *sti = json_object_get(o, "stop_token_ids"), *v;
        int64_t seed, n, lp, plp;
        double temp;
        bool stream, have_seed;
        size_t i;
        int r;

        if ((r = get_bool(o, "stream", false, &stream, err)) < 0 ||
            (r = get_int(o, "n", 1, 1, CHOICES_MAX, &n, err)) < 0 ||
            (r = get_number(o, "temperature", 1.0, &temp, err)) < 0 ||
            (r = get_int(o, "min_tokens", 0, 0, INT32_MAX, &c->min_tokens, err)) < 0 ||
            (r = get_bool(o, "ignore_eos", false, &c->ignore_eos, err)) < 0 ||
            (r = get_bool(o, "include_stop_str_in_output", false, &c->include_stop, err)) < 0 ||
            (r = get_bool(o, "skip_special_tokens", true, &c->skip_special, err)) < 0 ||
            (r = get_int(o, "prompt_logprobs", -1, -1, LOGPROBS_MAX, &plp, err)) < 0 ||
            (r = get_stop(o, "stop", &c->stop, err)) < 0)
                return r;
        have_seed = json_is_integer(json_object_get(o, "seed"));
        if ((r = get_int(o, "seed", 0, INT64_MIN, INT64_MAX, &seed, err)) < 0)
                return r;
        if (temp < 0) {
                *err = xasprintf("temperature must be non-negative, got %g.", temp);
                return -EINVAL;
        }
        if (so && !json_is_null(so) && !stream) {
                *err = xstrdup("Stream options can only be defined when `stream=True`.");
                return -EINVAL;
        }
        /* vLLM's check_logprobs: rejected with stream when > 0 (or -1, all); 0 is accepted */
        if (plp > 0 && stream) {
                *err = xstrdup("`prompt_logprobs` are not available when `stream=True`.");
                return -EINVAL;
        }
        if (sti && !json_is_null(sti)) {
                if (!json_is_array(sti) || json_array_size(sti) > SIM_STOP_IDS_MAX) {
                        *err = xasprintf("'stop_token_ids' must be a list of at most %d integers",
                                         SIM_STOP_IDS_MAX);
                        return -EINVAL;
                }
                json_array_foreach(sti, i, v) {
                        if (!json_is_integer(v)) {
                                *err = xasprintf("stop_token_ids[%zu]: Input should be a valid integer", i);
                                return -EINVAL;
                        }
                        c->stop_ids[c->n_stop_ids++] = json_integer_value(v);
                }
        }
        if (c->api == SIM_API_CHAT) {
                bool want;
                if ((r = get_bool(o, "logprobs", false, &want, err)) < 0 ||
                    (r = get_int(o, "top_logprobs", want ? 0 : -1, 0, LOGPROBS_MAX, &lp, err)) < 0)
                        return r;
                if (json_is_integer(json_object_get(o, "top_logprobs")) && !want) {
                        *err = xstrdup("when using `top_logprobs`, `logprobs` must be set to true.");
                        return -EINVAL;
                }
                if (!want)
                        lp = -1;
        } else if ((r = get_int(o, "logprobs", -1, -1, INT32_MAX, &lp, err)) < 0)
                return r;
        if (lp > LOGPROBS_MAX ||
            (lp == -1 && json_is_integer(json_object_get(o, "logprobs")) && c->api != SIM_API_CHAT)) {
                *err = xasprintf("Requested sample logprobs of %" PRId64
                                 ", which is greater than max allowed: %d",
                                 lp, LOGPROBS_MAX);
                return -EINVAL;
        }
        c->stream = stream;
        c->n = (unsigned)n;
        c->logprobs = (int)lp;
        c->prompt_logprobs = (int)plp;
        c->include_usage = c->continuous_usage = false;
        if (json_is_object(so)) {
                c->include_usage = json_is_true(json_object_get(so, "include_usage"));
                c->continuous_usage =
                        c->include_usage && json_is_true(json_object_get(so, "continuous_usage_stats"));
        }
        *ret_greedy = temp == 0;
        *ret_seed = have_seed ? seed : (int64_t)sim_random_u64();
        if (sim_fault_on(&c->srv->cfg->faults, SIM_FAULT_SEED_DRIFT)) {
                /* Sampling that depends on what else the server did (a batch-variant kernel). */
                if (have_seed)
                        *ret_seed += (int64_t)unseeded_requests;
                else
                        unseeded_requests++;
        }
        if (*ret_greedy)
                *ret_seed = 0;
        return 0;
}

/* How many tokens gpt-oss spends in its analysis channel for this effort. */
static int64_t reasoning_budget(json_t *o, int64_t max_tokens)
{
        static const struct {
                const char *effort;
                int64_t tokens;
        } efforts[] = {{"none", 0},  {"minimal", 0}, {"low", 6}, {"medium", 12},
                       {"high", 24}, {"xhigh", 32},  {"max", 40}};
        const char *e = json_string_value(json_object_get(o, "reasoning_effort"));
        int64_t t = 12;

        for (size_t i = 0; e && i < ELEMENTSOF(efforts); i++)
                if (streq(e, efforts[i].effort))
                        t = efforts[i].tokens;
        return MX_MIN(t, max_tokens / 2);
}

/*
 * llama-server's prompt cache (on by default, keyed on the token prefix; one
 * slot here): a request that shares a prefix with the slot's last prompt
 * evaluates only the rest, in other batch shapes that round differently, so
 * its seeded sampling differs from the same request evaluated whole; the same
 * request from the same cache state gives the same tokens
 * (../shared/targets/README.md). "cache_prompt": false evaluates it whole.
 */
static void llama_prompt_cache(struct sim_completion_priv *c, json_t *o)
{
        static int64_t *slot;
        static size_t n_slot;
        size_t common = 0;

        if (c->srv->cfg->flavor != SIM_FLAVOR_LLAMA || !c->prompt_ids || c->n_prompt_ids == 0)
                return;
        if (!json_is_false(json_object_get(o, "cache_prompt"))) {
                while (common < n_slot && common < c->n_prompt_ids && slot[common] == c->prompt_ids[common])
                        common++;
                common = MX_MIN(common, c->n_prompt_ids - 1); /* the last prompt token is evaluated again */
        }
        for (unsigned i = 0; i < c->n && common > 0; i++)
                c->choices[i].key = sim_mix(c->choices[i].key, (uint64_t)common);
        free(slot);
        slot = xreallocarray(NULL, c->n_prompt_ids, sizeof(*slot));
        memcpy(slot, c->prompt_ids, c->n_prompt_ids * sizeof(*slot));
        n_slot = c->n_prompt_ids;
}

/* Set up the choices for a list of prompts (each id list owned by the caller). */
static void add_prompt_choices(struct sim_completion_priv *c, const char *text, const int64_t *ids,
                               size_t n_ids, int64_t seed, unsigned *next_index, unsigned per_prompt)
{
        uint64_t h = sim_hash_ids(ids, n_ids, MX_FNV1A64_INIT);

        for (unsigned k = 0; k < per_prompt; k++) {
                struct choice *ch = &c->choices[*next_index];
                ch->c = c;
                ch->index = *next_index;
                ch->prompt_tokens = (int64_t)n_ids;
                ch->key = sim_mix(h, (uint64_t)seed + k);
                ch->prompt_text = text ? xstrdup(text) : ids_text(ids, n_ids);
                ch->stop_reason = NULL;
                (*next_index)++;
        }
}

static int check_context(struct sim_completion_priv *c, int64_t prompt_tokens, int64_t max_model_len,
                         bool explicit_max, char **err)
{
        /* vLLM's current wording (vllm/renderers/params.py, target-surfaces.md §A5 Errors) */
        if (c->srv->cfg->flavor == SIM_FLAVOR_VLLM &&
            (prompt_tokens >= max_model_len || (explicit_max && prompt_tokens + c->max_tokens > max_model_len))) {
                int64_t out = explicit_max ? c->max_tokens : 0;
                *err = xasprintf("You passed %" PRId64 " input tokens and requested %" PRId64 " output tokens. "
                                 "However, the model's context length is only %" PRId64 " tokens, resulting in a "
                                 "maximum input length of %" PRId64 " tokens. Please reduce the length of the "
                                 "input prompt. (parameter=input_tokens, value=%" PRId64 ")",
                                 prompt_tokens, out, max_model_len, MX_MAX(max_model_len - out, 0), prompt_tokens);
                return -EINVAL;
        }
        if (prompt_tokens >= max_model_len) {
                *err = xasprintf(
                        "This model's maximum context length is %" PRId64 " tokens. However, your request "
                        "has %" PRId64 " input tokens. Please reduce the length of the input messages.",
                        max_model_len, prompt_tokens);
                return -EINVAL;
        }
        if (!explicit_max) {
                c->max_tokens = MX_MIN(c->max_tokens, max_model_len - prompt_tokens);
                return 0;
        }
        if (prompt_tokens + c->max_tokens > max_model_len) {
                *err = xasprintf(
                        "This model's maximum context length is %" PRId64 " tokens. However, you requested "
                        "%" PRId64 " tokens (%" PRId64 " in the messages, %" PRId64 " in the completion). "
                        "Please reduce the length of the messages or completion.",
                        max_model_len, prompt_tokens + c->max_tokens, prompt_tokens, c->max_tokens);
                return -EINVAL;
        }
        return 0;
}

/* The API-specific prompt and length fields; fills c->choices. */
static int parse_prompts(struct sim_completion_priv *c, json_t *o, int64_t seed, char **err)
{
        const struct sim_config *cfg = c->srv->cfg;
        json_auto_t *list = NULL;
        unsigned next = 0, per = c->n;
        bool explicit_max = false;
        json_t *p;
        size_t i;
        int r;

        if (c->api == SIM_API_CHAT) {
                _cleanup_free_ int64_t *ids = NULL;
                size_t n;
                bool agp;
                const char *mk =
                        json_object_get(o, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
                explicit_max = json_is_integer(json_object_get(o, mk));
                if ((r = get_int(o, mk, INT32_MAX, 1, INT32_MAX, &c->max_tokens, err)) < 0 ||
                    (r = get_bool(o, "add_generation_prompt", true, &agp, err)) < 0 ||
                    (r = get_bool(o, "include_reasoning", true, &c->include_reasoning, err)) < 0 ||
                    (r = sim_chat_prompt(json_object_get(o, "messages"), agp, &ids, &n, err)) < 0)
                        return r;
                if ((r = check_context(c, (int64_t)n, cfg->max_model_len, explicit_max, err)) < 0)
                        return r;
                c->choices = xcalloc(c->n, sizeof(*c->choices));
                add_prompt_choices(c, NULL, ids, n, seed, &next, per);
                c->prompt_ids = TAKE_PTR(ids);
                c->n_prompt_ids = n;
                c->reasoning_tokens = reasoning_budget(o, c->max_tokens);
                c->pub.sum.prompt_tokens = (int64_t)n;
                return 0;
        }
        if (c->api == SIM_API_LLAMA_NATIVE) {
                int64_t np;
                if ((r = get_int(o, "n_predict", -1, -1, INT32_MAX, &np, err)) < 0)
                        return r;
                explicit_max = np >= 0;
                c->max_tokens = np < 0 ? INT32_MAX : np;
        } else if (c->api == SIM_API_SGLANG_NATIVE) {
                json_t *sp = json_object_get(o, "sampling_params");
                if ((r = get_int(sp, "max_new_tokens", 128, 0, INT32_MAX, &c->max_tokens, err)) < 0)
                        return r;
                explicit_max = true;
        } else {
                int64_t def = cfg->flavor == SIM_FLAVOR_VLLM ? 16 : INT32_MAX;
                json_t *mt = json_object_get(o, "max_tokens");
                explicit_max = json_is_integer(mt) || cfg->flavor == SIM_FLAVOR_VLLM;
                if ((r = get_bool(o, "echo", false, &c->echo, err)) < 0 ||
                    (r = get_int(o, "max_tokens", def, c->echo ? 0 : 1, INT32_MAX, &c->max_tokens, err)) < 0)
                        return r;
        }
        if (c->max_tokens == 0 && c->api != SIM_API_COMPLETIONS) {
                *err = xstrdup("max_tokens must be at least 1, got 0.");
                return -EINVAL;
        }
        p = json_object_get(o, c->api == SIM_API_SGLANG_NATIVE
                                       ? (json_object_get(o, "input_ids") ? "input_ids" : "text")
                                       : "prompt");
        if ((r = split_prompts(p, &list, err)) < 0)
                return r;
        if (c->api != SIM_API_COMPLETIONS && json_array_size(list) > 1) {
                *err = xstrdup("this endpoint takes one prompt");
                return -EINVAL;
        }
        c->choices = xcalloc(json_array_size(list) * c->n, sizeof(*c->choices));
        json_array_foreach(list, i, p) {
                _cleanup_free_ int64_t *ids = NULL;
                size_t n;
                if ((r = sim_prompt_ids(p, &ids, &n, err)) < 0 ||
                    (r = check_context(c, (int64_t)n, cfg->max_model_len, explicit_max, err)) < 0) {
                        c->n = next; /* only these were set up */
                        return r;
                }
                add_prompt_choices(c, json_string_value(p), ids, n, seed, &next, per);
                c->pub.sum.prompt_tokens += (int64_t)n;
                if (i == 0) {
                        c->prompt_ids = TAKE_PTR(ids);
                        c->n_prompt_ids = n;
                }
        }
        c->n = next;
        return 0;
}

/* Map llama-server's and SGLang's native field names onto the OpenAI ones we parse. */
static void normalise_native(enum sim_api api, json_t *o)
{
        if (api == SIM_API_LLAMA_NATIVE) {
                json_t *np = json_object_get(o, "n_probs");
                if (json_is_integer(np) && json_integer_value(np) > 0 && !json_object_get(o, "logprobs"))
                        json_object_set(o, "logprobs", np);
        } else if (api == SIM_API_SGLANG_NATIVE) {
                json_t *sp = json_object_get(o, "sampling_params");
                const char *keys[] = {"temperature",    "stop", "ignore_eos",
                                      "min_new_tokens", "seed", "stop_token_ids"};
                for (size_t i = 0; json_is_object(sp) && i < ELEMENTSOF(keys); i++) {
                        json_t *v = json_object_get(sp, keys[i]);
                        if (v)
                                json_object_set(o, streq(keys[i], "min_new_tokens") ? "min_tokens" : keys[i],
                                                v);
                }
                if (json_is_true(json_object_get(o, "return_logprob")))
                        json_object_set_new(
                                o, "logprobs",
                                json_integer(json_integer_value(json_object_get(o, "top_logprobs_num"))));
        }
}

/* A 400 in the flavour's error shape. */
static void reply_bad_request(struct sim_server *s, struct evhttp_request *req, const char *msg)
{
        if (s->cfg->flavor == SIM_FLAVOR_LLAMA)
                sim_reply_json(s, req, 400,
                               json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 400, "message", msg, "type",
                                         "invalid_request_error"));
        else
                sim_reply_error(s, req, 400, "BadRequestError", "%s", msg);
}

/* vLLM answers 404 for a model it does not serve. */
static bool model_ok(struct sim_server *s, struct evhttp_request *req, json_t *o)
{
        json_t *m = json_object_get(o, "model");

        if (!m || json_is_null(m) || s->cfg->flavor != SIM_FLAVOR_VLLM)
                return true;
        if (json_is_string(m) && streq(json_string_value(m), s->cfg->served_name))
                return true;
        sim_reply_error(s, req, 404, "NotFoundError", "The model `%s` does not exist.",
                        json_is_string(m) ? json_string_value(m) : "?");
        return false;
}

static void link_completion(struct sim_server *s, struct sim_completion_priv *c)
{
        c->pub.priv = c;
        c->pub.next = s->completions;
        if (s->completions)
                s->completions->prev = &c->pub;
        s->completions = &c->pub;
        s->n_completions++;
}

/* A fresh request id with the flavour's prefix (cmpl-, chatcmpl-). */
static char *new_id(enum sim_api api, enum sim_flavor fl)
{
        const char *prefix = api == SIM_API_CHAT || fl == SIM_FLAVOR_LLAMA ? "chatcmpl-" : "cmpl-";

        if (api == SIM_API_SGLANG_NATIVE)
                prefix = "";
        return xasprintf("%s%016" PRIx64 "%016" PRIx64, prefix, sim_random_u64(), sim_random_u64());
}

/* Parse, validate and submit one request; the reply comes from the callbacks. */
void sim_completion_handle(struct sim_server *s, struct evhttp_request *req, enum sim_api api)
{
        struct sim_completion_priv *c;
        _cleanup_free_ char *err = NULL;
        json_t *o;
        int64_t seed;
        bool greedy;

        if (!s->gen) {
                s->unavailable(s, req);
                return;
        }
        if (s->n_completions >= SIM_INFLIGHT_MAX) {
                sim_reply_error(s, req, 503, "ServiceUnavailableError", "too many requests in flight (%d)",
                                SIM_INFLIGHT_MAX);
                return;
        }
        o = sim_read_json(s, req, api == SIM_API_CHAT ? "ChatCompletionRequest" : "CompletionRequest");
        if (!o)
                return;
        c = xcalloc(1, sizeof(*c));
        c->srv = s;
        c->api = api;
        c->body = o;
        c->no = ++s->completions_received;
        c->t0_us = mx_now_mono_us();
        c->created = mx_now_real_us() / 1000000;
        c->pub.sum.api = api;
        link_completion(s, c);
        if (!model_ok(s, req, o)) {
                priv_free(c);
                return;
        }
        warn_unknown_fields(s, o);
        normalise_native(api, o);
        if (parse_sampling(c, o, &seed, &greedy, &err) < 0 || parse_prompts(c, o, seed, &err) < 0 ||
            (c->min_tokens > c->max_tokens &&
             (err = xasprintf("min_tokens must be less than or equal to max_tokens=%" PRId64 ", got %" PRId64
                              ".",
                              c->max_tokens, c->min_tokens)))) {
                reply_bad_request(s, req, err);
                priv_free(c);
                return;
        }
        llama_prompt_cache(c, o);
        c->id = new_id(api, s->cfg->flavor);
        c->req = req;
        evhttp_connection_set_closecb(evhttp_request_get_connection(req), conn_close_cb, c);
        if (!c->stream)
                probe_arm(s);
        c->open = c->n;
        /* short-output=N: N tokens fewer than asked, still "length" (a truncation bug). */
        if (sim_fault_on(&s->cfg->faults, SIM_FAULT_SHORT_OUTPUT) && c->max_tokens > 1)
                c->max_tokens = MX_MAX(1, c->max_tokens - (int64_t)MX_MAX(1, s->cfg->faults.value[SIM_FAULT_SHORT_OUTPUT]));
        if (s->cfg->token_log)
                token_log(s->cfg,
                          "{\"ev\":\"req\",\"id\":\"%s\",\"recv_us\":%" PRId64 ",\"prompt_tokens\":%" PRId64
                          ",\"max_tokens\":%" PRId64 ",\"stream\":%s}",
                          c->id, c->t0_us, c->pub.sum.prompt_tokens, c->max_tokens, c->stream ? "true" : "false");
        for (unsigned i = 0; i < c->n; i++) {
                struct choice *ch = &c->choices[i];
                struct sim_gen_params p = {
                        .key = ch->key,
                        .prompt_tokens = ch->prompt_tokens,
                        .max_tokens = c->max_tokens == 0 ? 1 : c->max_tokens,
                        .min_tokens = c->min_tokens,
                        .reasoning_tokens = c->reasoning_tokens,
                        .ignore_eos = c->ignore_eos,
                        .chat = api == SIM_API_CHAT,
                        .top_logprobs = c->logprobs < 0 ? -1 : MX_MAX(c->logprobs, 1),
                        .n_stop_ids = c->n_stop_ids,
                        .arrival_us = c->t0_us,
                };
                memcpy(p.stop_ids, c->stop_ids, sizeof(p.stop_ids));
                if (s->gen->submit(s->gen, &p, &completion_cb, ch, &ch->gen_id) < 0) {
                        fail_request(c);
                        return;
                }
                ch->active = true;
        }
}

/* See sim.h; used on shutdown, when evhttp is about to free every connection. */
void sim_completion_abort_all(struct sim_server *s)
{
        if (s->probe_ev) {
                event_free(s->probe_ev);
                s->probe_ev = NULL;
        }
        while (s->completions) {
                struct sim_completion_priv *c = s->completions->priv;
                if (c->req) {
                        struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
                        if (evcon)
                                evhttp_connection_set_closecb(evcon, NULL, NULL);
                        /* the connection is closed with the server; libevent frees the request */
                        c->req = NULL;
                }
                priv_free(c);
        }
}

/* gpt-oss's harmony format: a fixed system preamble, then per message a header and the text. */
#define HARMONY_PREAMBLE 64
#define HARMONY_PER_MESSAGE 4
#define HARMONY_GENERATION_PROMPT 3
#define MESSAGES_MAX 4096

int sim_chat_prompt(json_t *messages, bool add_generation_prompt, int64_t **ret_ids, size_t *ret_n,
                    char **reterr)
{
        _cleanup_free_ int64_t *ids = NULL;
        size_t n = 0, cap = 0, i;
        json_t *m;

        if (!json_is_array(messages) || json_array_size(messages) == 0 ||
            json_array_size(messages) > MESSAGES_MAX) {
                *reterr = xasprintf("'messages' must be a non-empty list of at most %d messages",
                                    MESSAGES_MAX);
                return -EINVAL;
        }
        MX_GROW(ids, cap, HARMONY_PREAMBLE);
        for (; n < HARMONY_PREAMBLE; n++)
                ids[n] = 200006 + (int64_t)(n % 3); /* <|start|>system<|message|>... */
        json_array_foreach(messages, i, m) {
                json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
                _cleanup_buf_ struct mx_buf text = MX_BUF_INIT;
                _cleanup_free_ int64_t *part = NULL;
                size_t k;

                if (!json_is_string(role)) {
                        *reterr = xasprintf("messages[%zu]: 'role' must be a string", i);
                        return -EINVAL;
                }
                if (json_is_string(content))
                        mx_buf_puts(&text, json_string_value(content));
                else if (json_is_array(content)) {
                        size_t j;
                        json_t *partv;
                        json_array_foreach(content, j, partv) {
                                const char *t = json_string_value(json_object_get(partv, "text"));
                                if (t)
                                        mx_buf_printf(&text, "%s%s", j ? " " : "", t);
                        }
                } else if (!json_is_null(content) && content) {
                        *reterr =
                                xasprintf("messages[%zu]: 'content' must be a string or a list of parts", i);
                        return -EINVAL;
                }
                k = sim_tokenize(strempty(text.data), text.len, &part);
                MX_GROW(ids, cap, n + HARMONY_PER_MESSAGE + k);
                ids[n++] = 200006;
                ids[n++] = (int64_t)(mx_fnv1a64(json_string_value(role), json_string_length(role),
                                                MX_FNV1A64_INIT) %
                                     199998);
                ids[n++] = 200008;
                memcpy(ids + n, part, k * sizeof(int64_t));
                n += k;
                ids[n++] = 200007;
        }
        if (add_generation_prompt) {
                MX_GROW(ids, cap, n + HARMONY_GENERATION_PROMPT);
                ids[n++] = 200006;
                ids[n++] = 200005;
                ids[n++] = 200008;
        }
        *ret_ids = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}
