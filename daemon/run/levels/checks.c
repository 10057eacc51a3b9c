/* SPDX-License-Identifier: MIT */
/*
 * The requests and reply checks L2 and L3 share: UTF-8, NaN, usage, exact token counts, coherence,
 * logprob shapes.
 */
#include "checks.h"

#include "server-kind.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

static const char *const endpoint_names[] = { "completions", "chat" };

const char *mx_endpoint_name(enum mx_endpoint e)
{
        return endpoint_names[e];
}

const char *mx_endpoint_path(enum mx_endpoint e)
{
        return e == MX_ENDPOINT_CHAT ? "/v1/chat/completions" : "/v1/completions";
}

int mx_endpoint_from_string(const char *s)
{
        for (size_t i = 0; i < ELEMENTSOF(endpoint_names); i++)
                if (streq_ptr(endpoint_names[i], s))
                        return (int)i;
        return -EINVAL;
}

char *mx_gen_body(const struct mx_gen_request *r)
{
        _cleanup_json_ json_t *b = json_object();

        if (r->model)
                json_object_set_new(b, "model", json_string(r->model));
        if (r->endpoint == MX_ENDPOINT_CHAT) {
                json_object_set_new(b, "messages", json_pack("[{s:s,s:s}]", "role", "user", "content", r->prompt));
                /* max_tokens is deprecated for chat in favour of max_completion_tokens (§A1). */
                json_object_set_new(b, "max_completion_tokens", json_integer(r->max_tokens));
                if (r->logprobs >= 0) {
                        json_object_set_new(b, "logprobs", json_true());
                        json_object_set_new(b, "top_logprobs", json_integer(r->logprobs));
                }
        } else {
                json_object_set_new(b, "prompt", json_string(r->prompt));
                json_object_set_new(b, "max_tokens", json_integer(r->max_tokens));
                if (r->logprobs >= 0)
                        json_object_set_new(b, "logprobs", json_integer(r->logprobs));
        }
        if (r->prompt_logprobs >= 0)
                json_object_set_new(b, "prompt_logprobs", json_integer(r->prompt_logprobs));
        json_object_set_new(b, "temperature", json_real(r->temperature));
        if (r->has_seed)
                json_object_set_new(b, "seed", json_integer(r->seed));
        /* exactly max_tokens, without vLLM's gpt-oss ignore_eos failure (server-kind.h, vllm#50690) */
        if (r->ignore_eos)
                mx_server_exact_tokens(b, r->max_tokens);
        if (r->defeat_cache)
                mx_server_defeat_cache(r->server, b, r->cache_salt);
        return json_dumps(b, JSON_COMPACT);
}

void mx_gen_reply_done(struct mx_gen_reply *r)
{
        json_decref(r->json);
        json_decref(r->tokens);
        json_decref(r->logprobs);
        free(r->text);
        free(r->finish_reason);
        *r = (struct mx_gen_reply){ .prompt_ppl = -1 };
}

/* The offset of the first byte that is not valid UTF-8, or -1. */
static ssize_t utf8_invalid_at(const char *p, size_t n)
{
        const unsigned char *s = (const unsigned char *)p;
        size_t i = 0;

        while (i < n) {
                unsigned char c = s[i];
                size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
                uint32_t cp;

                if (len == 0 || i + len > n || (len == 2 && c < 0xc2))
                        return (ssize_t)i;
                cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
                for (size_t k = 1; k < len; k++) {
                        if ((s[i + k] & 0xc0) != 0x80)
                                return (ssize_t)i;
                        cp = (cp << 6) | (s[i + k] & 0x3f);
                }
                if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
                    (cp >= 0xd800 && cp <= 0xdfff))
                        return (ssize_t)i;
                i += len;
        }
        return -1;
}

/* A bare NaN or Infinity (as Python's json writes them) outside strings, or NULL. */
static const char *bare_nonfinite(const char *p, size_t n)
{
        bool in_str = false;

        for (size_t i = 0; i < n; i++) {
                if (in_str) {
                        if (p[i] == '\\')
                                i++;
                        else if (p[i] == '"')
                                in_str = false;
                        continue;
                }
                if (p[i] == '"')
                        in_str = true;
                else if (n - i >= 3 && memcmp(p + i, "NaN", 3) == 0)
                        return "NaN";
                else if (n - i >= 8 && memcmp(p + i, "Infinity", 8) == 0)
                        return "Infinity";
        }
        return NULL;
}

static bool finite_logprob(json_t *v, double *ret)
{
        if (!json_is_number(v))
                return false;
        *ret = json_number_value(v);
        return isfinite(*ret);
}

static json_t *or_null(json_t *v)
{
        return v ? v : json_null();
}

/*
 * One token's logprobs, whatever form the server wrote them in:
 * {"token", "logprob", "top": [{"token", "logprob"}]}, the alternatives in the
 * server's order.
 */
static json_t *lp_entry(json_t *token, json_t *logprob, json_t *top)
{
        return json_pack("{s:O,s:O,s:o}", "token", or_null(token), "logprob", or_null(logprob), "top", top);
}

/* The legacy arrays (vLLM completions): tokens, token_logprobs, top_logprobs as {token: logprob} dicts. */
static char *logprobs_from_legacy(json_t *lp, json_t *out)
{
        json_t *tokens = json_object_get(lp, "tokens"), *tlp = json_object_get(lp, "token_logprobs");
        json_t *top = json_object_get(lp, "top_logprobs"), *t;
        size_t i;

        if (!json_is_array(tokens) || !json_is_array(tlp) || json_array_size(tokens) != json_array_size(tlp))
                return xstrdup("logprobs without tokens and token_logprobs of the same length");
        json_array_foreach (tokens, i, t) {
                json_t *dict = json_array_get(top, i), *alts = json_array(), *v;
                const char *k;

                if (!json_is_string(t)) {
                        json_decref(alts);
                        return xasprintf("token %zu: not a string in logprobs.tokens", i + 1);
                }
                json_object_foreach (dict, k, v)
                        json_array_append_new(alts, json_pack("{s:s,s:O}", "token", k, "logprob", v));
                json_array_append_new(out, lp_entry(t, json_array_get(tlp, i), alts));
        }
        return NULL;
}

/* The content form (every chat; llama-server's completions too): [{id?, token, bytes, logprob, top_logprobs}]. */
static char *logprobs_from_content(json_t *content, json_t *out)
{
        json_t *e, *a;
        size_t i, j;

        json_array_foreach (content, i, e) {
                json_t *alts = json_array();

                if (!json_is_string(json_object_get(e, "token"))) {
                        json_decref(alts);
                        return xasprintf("token %zu: a logprobs.content entry without a token", i + 1);
                }
                json_array_foreach (json_object_get(e, "top_logprobs"), j, a)
                        json_array_append_new(alts, json_pack("{s:O,s:O}", "token", or_null(json_object_get(a, "token")),
                                                              "logprob", or_null(json_object_get(a, "logprob"))));
                json_array_append_new(out, lp_entry(json_object_get(e, "token"), json_object_get(e, "logprob"), alts));
        }
        return NULL;
}

char *mx_logprobs_normalise(json_t *lp, json_t **ret, bool *ret_legacy)
{
        _cleanup_json_ json_t *out = json_array();
        json_t *content = json_object_get(lp, "content");
        char *p;

        *ret = NULL;
        if (!json_is_object(lp))
                return xstrdup("logprobs were asked for and are missing");
        *ret_legacy = !json_is_array(content);
        if (json_is_array(content))
                p = logprobs_from_content(content, out);
        else if (json_object_get(lp, "tokens") || json_object_get(lp, "token_logprobs"))
                p = logprobs_from_legacy(lp, out);
        else
                p = xstrdup("logprobs in neither form: no content array, no tokens and token_logprobs");
        if (!p)
                *ret = TAKE_PTR(out);
        return p;
}

/*
 * The alternatives of one token: finite and <= 0, sorted best first apart
 * from the sampled token (vLLM lists it first: its sampler's logprob row
 * leads with it, in the completions dict and in the chat list alike), which
 * must carry its own logprob where it appears (content form; the legacy
 * dict's keys are decoded strings, so two ids that decode alike merge).
 * vLLM's legacy dict always holds the sampled token (N+1 keys); llama-server
 * lists the distribution's best N, which need not include it.
 */
static char *check_alternatives(size_t i, json_t *e, bool legacy)
{
        const char *tok = json_string_value(json_object_get(e, "token"));
        double lpv = json_number_value(json_object_get(e, "logprob")), prev = INFINITY, av;
        bool found = false;
        json_t *a;
        size_t j;

        if (json_array_size(json_object_get(e, "top")) == 0)
                return xasprintf("token %zu: no top_logprobs", i + 1);
        json_array_foreach (json_object_get(e, "top"), j, a) {
                const char *at = json_string_value(json_object_get(a, "token"));
                bool sampled = streq_ptr(at, tok);

                if (!finite_logprob(json_object_get(a, "logprob"), &av) || av > 1e-6)
                        return xasprintf("token %zu: the top logprob of '%s' is not a finite number <= 0", i + 1,
                                         strna(at));
                if (sampled && !found && !legacy && fabs(av - lpv) > 1e-4)
                        return xasprintf("token %zu: the sampled token's logprob %g is %g in top_logprobs", i + 1,
                                         lpv, av);
                if (sampled && !found) {
                        found = true;
                        continue;
                }
                if (av > prev + 1e-9)
                        return xasprintf("token %zu: top_logprobs not sorted best first", i + 1);
                prev = av;
        }
        if (legacy && !found)
                return xasprintf("token %zu: the sampled token is not among its top_logprobs", i + 1);
        return NULL;
}

/* Both forms: one entry per completion token, each logprob finite and <= 0, the alternatives as above. */
static char *check_logprobs(json_t *lp, const struct mx_check_opts *o, struct mx_gen_reply *ret)
{
        json_t *e;
        bool legacy = false;
        size_t i;
        char *p = mx_logprobs_normalise(lp, &ret->logprobs, &legacy);

        if (p)
                return p;
        if (ret->completion_tokens > 0 && (int64_t)json_array_size(ret->logprobs) != ret->completion_tokens)
                return xasprintf("%zu logprob entries for %" PRId64 " completion tokens",
                                 json_array_size(ret->logprobs), ret->completion_tokens);
        ret->tokens = json_array();
        json_array_foreach (ret->logprobs, i, e) {
                double lpv;

                json_array_append(ret->tokens, json_object_get(e, "token"));
                if (!finite_logprob(json_object_get(e, "logprob"), &lpv))
                        return xasprintf("token %zu: logprob is not a finite number", i + 1);
                if (lpv > 1e-6)
                        return xasprintf("token %zu: logprob %g is above 0", i + 1, lpv);
                if (o->logprobs > 0 && (p = check_alternatives(i, e, legacy)))
                        return p;
        }
        return NULL;
}

/* Perplexity from vLLM's prompt_logprobs: [null, {id: {logprob, rank, decoded_token}}, ...]. */
static double prompt_ppl(json_t *plp)
{
        double sum = 0, v;
        size_t n = 0, i;
        json_t *e;

        json_array_foreach (plp, i, e) {
                const char *k;
                json_t *x;

                json_object_foreach (e, k, x) {
                        if (!finite_logprob(json_object_get(x, "logprob"), &v))
                                return NAN;
                        sum += v;
                        n++;
                        break; /* prompt_logprobs=0: the prompt's own token only */
                }
        }
        return n > 0 ? exp(-sum / (double)n) : -1;
}

/*
 * A text of 8 tokens or more without white space that is one short unit (at
 * most 16 bytes) over and over, 8 times or more: "!!!!!!!!", what a model
 * whose logits are NaN emits (every step samples token 0, or the same
 * fallback). The unit's length, or 0. The word check below cannot see it: it
 * is one "word". Fewer tokens are left alone: vocabularies have tokens such
 * as "****************" (the real llama-server's random model sampled one).
 */
static size_t repeated_unit(const char *text, int64_t tokens)
{
        size_t n = strlen(text);

        if (n < 8 || tokens < 8 || strpbrk(text, " \t\n\r"))
                return 0;
        for (size_t p = 1; p <= 16 && p * 8 <= n; p++) {
                size_t i = p;

                while (i < n && text[i] == text[i % p])
                        i++;
                if (i == n)
                        return p;
        }
        return 0;
}

/*
 * Text checks: replacement characters, printable share, one symbol repeated,
 * one word repeated. The word "NaN" in a text is text (a bare NaN in the JSON
 * is caught before, outside strings); a random-weight model's nonsense
 * ("I weard copyright Imenttiesmenticenshis") is healthy output and passes.
 */
static char *check_text(const char *text, int64_t tokens, const struct mx_check_opts *o)
{
        _cleanup_strv_free_ char **words = NULL;
        size_t printable = 0, chars = 0, best = 0, n = 0, unit;
        const char *best_w = NULL;
        _cleanup_free_ char *copy = xstrdup(text);
        char *save = NULL;

        if (strstr(text, "\xef\xbf\xbd"))
                return xstrdup("the text contains U+FFFD replacement characters (undecodable bytes)");
        for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
                if ((*p & 0xc0) == 0x80)
                        continue; /* a continuation byte: counted with its lead */
                chars++;
                if (*p >= 0x80 || *p >= 0x20 || *p == '\n' || *p == '\t')
                        printable += *p == 0x7f ? 0 : 1;
        }
        if (o->min_printable > 0 && chars > 0 && (double)printable < o->min_printable * (double)chars)
                return xasprintf("only %.0f%% of the text is printable (at least %.0f%% wanted)",
                                 100.0 * (double)printable / (double)chars, 100.0 * o->min_printable);
        unit = repeated_unit(text, tokens);
        if (unit > 0) {
                _cleanup_free_ char *u = xstrndup(text, unit), *e = mx_escape(u, 40);
                return xasprintf("degenerate text: '%s' repeated %zu times with no space (what NaN logits give)", e,
                                 strlen(text) / unit);
        }
        for (char *w = strtok_r(copy, " \t\n\r", &save); w; w = strtok_r(NULL, " \t\n\r", &save)) {
                size_t count = 1;

                for (size_t i = 0; i < n; i++)
                        if (streq(words[i], w))
                                count++;
                if (count > best) {
                        best = count;
                        best_w = w;
                }
                strv_push(&words, w);
                n++;
        }
        if (o->max_repeat > 0 && n >= 8 && (double)best > o->max_repeat * (double)n) {
                _cleanup_free_ char *e = mx_escape(best_w, 40);
                return xasprintf("degenerate text: '%s' is %zu of %zu words", e, best, n);
        }
        return NULL;
}

const char *mx_check_auth_hint(long status, bool key_sent)
{
        if (status != 401 && status != 403)
                return "";
        return key_sent ? "the server refused the profile's API key (api_key / api_key_env, mxmatrix.json(5))"
                        : "the server wants an API key, and the profile declares none (api_key or api_key_env, "
                          "mxmatrix.json(5))";
}

/* A failed check of the reply: its name into *ret_check, the message (allocated) returned. */
#define FAIL(check, ...)                                                                                           \
        do {                                                                                                       \
                *ret_check = check;                                                                                \
                return xasprintf(__VA_ARGS__);                                                                     \
        } while (0)

/* The request came back with HTTP 200: else what the server or the transport said. */
static char *check_status(const struct mx_check_opts *o, const struct mx_http_response *res, const char **ret_check)
{
        if (res->error < 0)
                FAIL("http", "the request failed: %s", strna(res->error_text));
        if (res->status != 200) {
                _cleanup_free_ char *b = mx_utf8_sanitize(res->body, MX_MIN(res->body_len, 200), false, NULL);
                const char *issue = mx_server_known_issue(b);

                /* the server's own bug, named as such: not the harness's, not the feature's */
                if (issue)
                        FAIL("known-issue", "server known issue %s: HTTP %ld: %s", issue, res->status, b);
                if (res->status == 401 || res->status == 403)
                        FAIL("auth", "HTTP %ld: %s: %s", res->status, b, mx_check_auth_hint(res->status, o->key_sent));
                FAIL("http", "HTTP %ld: %s", res->status, b);
        }
        return NULL;
}

/* The body as JSON with a first choice (*ret_choice), a finish reason and usage counts, into ret. */
static char *check_body(const struct mx_http_response *res, struct mx_gen_reply *ret, json_t **ret_choice,
                        const char **ret_check)
{
        static const char *const keys[] = { "prompt_tokens", "completion_tokens", "total_tokens" };
        json_t *choice, *usage;
        const char *nf;
        json_error_t jerr;
        ssize_t bad;

        bad = utf8_invalid_at(res->body, res->body_len);
        if (bad >= 0)
                FAIL("utf8", "the reply is not valid UTF-8 (byte %zd of %zu)", bad, res->body_len);
        nf = bare_nonfinite(res->body, res->body_len);
        if (nf)
                FAIL("nan", "the reply contains %s (not a finite number, not valid JSON)", nf);
        ret->json = json_loadb(res->body, res->body_len, 0, &jerr);
        if (!ret->json)
                FAIL("json", "the reply is not JSON: %s", jerr.text);
        choice = json_array_get(json_object_get(ret->json, "choices"), 0);
        if (!json_is_object(choice))
                FAIL("json", "the reply has no choices");
        usage = json_object_get(ret->json, "usage");
        ret->finish_reason = json_is_string(json_object_get(choice, "finish_reason"))
                                     ? xstrdup(json_string_value(json_object_get(choice, "finish_reason")))
                                     : NULL;
        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                if (!json_is_integer(json_object_get(usage, keys[k])) ||
                    json_integer_value(json_object_get(usage, keys[k])) < 0)
                        FAIL("usage", "usage.%s is not a count", keys[k]);
        ret->completion_tokens = json_integer_value(json_object_get(usage, "completion_tokens"));
        ret->prompt_tokens = json_integer_value(json_object_get(usage, "prompt_tokens"));
        *ret_choice = choice;
        return NULL;
}

/* The reply's text: the reasoning, then the content (chat), or the completion's text. */
static char *reply_text(const struct mx_gen_request *rq, json_t *choice)
{
        const char *content, *reasoning = NULL;

        if (rq->endpoint == MX_ENDPOINT_CHAT) {
                json_t *msg = json_object_get(choice, "message");

                content = json_string_value(json_object_get(msg, "content"));
                /* gpt-oss's analysis channel: "reasoning" (vLLM), "reasoning_content" (older vLLM, llama-server). */
                reasoning = json_string_value(json_object_get(msg, "reasoning"));
                if (!reasoning)
                        reasoning = json_string_value(json_object_get(msg, "reasoning_content"));
        } else
                content = json_string_value(json_object_get(choice, "text"));
        return xasprintf("%s%s%s", strempty(reasoning), reasoning && content ? "\n" : "", strempty(content));
}

/* The text: there, as long as asked for, coherent, holding what is expected. */
static char *check_content(const struct mx_gen_request *rq, const struct mx_check_opts *o, struct mx_gen_reply *ret,
                           const char **ret_check)
{
        size_t i;
        json_t *e;
        char *p;

        if (!*ret->text)
                FAIL("text", "no text (%s) with completion_tokens %" PRId64,
                     rq->endpoint == MX_ENDPOINT_CHAT ? "content and reasoning are null or empty" : "text is empty",
                     ret->completion_tokens);
        if (o->expect_tokens > 0 && ret->completion_tokens != o->expect_tokens)
                FAIL("tokens", "completion_tokens %" PRId64 ", asked for exactly %" PRId64 " (ignore_eos)",
                     ret->completion_tokens, o->expect_tokens);
        if (o->expect_tokens > 0 && !streq_ptr(ret->finish_reason, "length"))
                FAIL("tokens", "finish_reason %s, expected length", strna(ret->finish_reason));
        p = check_text(ret->text, ret->completion_tokens, o);
        if (p) {
                *ret_check = "coherence";
                return p;
        }
        json_array_foreach (o->expect, i, e)
                if (!strstr(ret->text, json_string_value(e)))
                        FAIL("expect", "the text does not contain '%s'", json_string_value(e));
        return NULL;
}

/* The logprobs asked for: the generated tokens' (check_logprobs()), the prompt's perplexity. */
static char *check_reply_logprobs(const struct mx_gen_request *rq, const struct mx_check_opts *o, json_t *choice,
                                  struct mx_gen_reply *ret, const char **ret_check)
{
        char *p;

        if (rq->logprobs >= 0) {
                p = check_logprobs(json_object_get(choice, "logprobs"), o, ret);
                if (p) {
                        *ret_check = "logprobs";
                        return p;
                }
        }
        if (rq->prompt_logprobs >= 0) {
                json_t *plp = json_object_get(choice, "prompt_logprobs");

                /* vLLM: in the choice (completions) or at the top level (chat); llama-server: none. */
                if (!json_is_array(plp))
                        plp = json_object_get(ret->json, "prompt_logprobs");
                ret->no_prompt_logprobs = !json_is_array(plp);
                ret->prompt_ppl = prompt_ppl(plp);
                if (isnan(ret->prompt_ppl))
                        FAIL("logprobs", "a prompt logprob is not a finite number");
        }
        return NULL;
}
#undef FAIL

char *mx_check_reply(const struct mx_gen_request *rq, const struct mx_check_opts *o,
                     const struct mx_http_response *res, struct mx_gen_reply *ret, const char **ret_check)
{
        json_t *choice = NULL;
        char *p;

        *ret = (struct mx_gen_reply){ .prompt_ppl = -1 };
        if ((p = check_status(o, res, ret_check)) || (p = check_body(res, ret, &choice, ret_check)))
                return p;
        ret->text = reply_text(rq, choice);
        if ((p = check_content(rq, o, ret, ret_check)))
                return p;
        return check_reply_logprobs(rq, o, choice, ret, ret_check);
}

char *mx_file_safe(const char *s)
{
        size_t n = MX_MIN(strlen(s), 64);
        char *r = xstrndup(s, n);

        for (size_t i = 0; i < n; i++)
                if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= 'A' && r[i] <= 'Z') || (r[i] >= '0' && r[i] <= '9') ||
                      r[i] == '.' || r[i] == '-' || r[i] == '_'))
                        r[i] = '_';
        return r;
}

json_t *mx_evidence_write(const char *run_dir, const char *dir, const char *name, const char *what,
                          const char *request_body, const struct mx_http_response *res)
{
        _cleanup_free_ char *d = xasprintf("%s/%s", run_dir, dir), *rel = NULL, *path = NULL, *text = NULL;
        _cleanup_free_ char *safe = mx_file_safe(name), *body = NULL;
        _cleanup_json_ json_t *req = request_body ? json_loads(request_body, 0, NULL) : NULL, *doc = NULL;
        _cleanup_fclose_ FILE *f = NULL;

        if (mx_mkdir_p(d, 0750) < 0)
                return NULL;
        rel = xasprintf("%s/%s.json", dir, safe);
        path = xasprintf("%s/%s", run_dir, rel);
        /* The reply as it came, made valid UTF-8 (an invalid reply is part of the evidence: its bytes differ). */
        body = res ? mx_utf8_sanitize(res->body, res->body_len, false, NULL) : NULL;
        doc = json_pack("{s:s,s:O?,s:I,s:s?,s:s?}", "what", what, "request", req, "status",
                        (json_int_t)(res ? res->status : 0), "transport_error", res ? res->error_text : NULL,
                        "response", body);
        text = json_dumps(doc, JSON_INDENT(2));
        f = fopen(path, "we");
        if (!f || !text || fputs(text, f) < 0)
                return NULL;
        return json_pack("{s:s,s:s,s:s}", "name", name, "path", rel, "what", what);
}

/* The logprob tok has among an entry's alternatives (or as the entry's own token); false when not listed. */
static bool listed_logprob(json_t *e, const char *tok, double *ret)
{
        json_t *a;
        size_t j;

        if (streq_ptr(json_string_value(json_object_get(e, "token")), tok))
                return finite_logprob(json_object_get(e, "logprob"), ret);
        json_array_foreach (json_object_get(e, "top"), j, a)
                if (streq_ptr(json_string_value(json_object_get(a, "token")), tok))
                        return finite_logprob(json_object_get(a, "logprob"), ret);
        return false;
}

static json_t *side(json_t *e)
{
        return json_pack("{s:O,s:O}", "token", or_null(json_object_get(e, "token")), "logprob",
                         or_null(json_object_get(e, "logprob")));
}

json_t *mx_divergence(json_t *a, json_t *b, double epsilon, char **ret_text)
{
        size_t na = json_array_size(a), nb = json_array_size(b), n = MX_MIN(na, nb), i;
        double drift = 0, la = NAN, lb = NAN, x, y, gap;
        const char *ta, *tb;
        _cleanup_free_ char *ea = NULL, *eb = NULL;
        bool near = false, a_in_b, b_in_a;
        json_t *d;

        *ret_text = NULL;
        for (i = 0; i < n; i++) {
                json_t *pa = json_array_get(a, i), *pb = json_array_get(b, i);

                if (!streq_ptr(json_string_value(json_object_get(pa, "token")),
                               json_string_value(json_object_get(pb, "token"))))
                        break;
                if (finite_logprob(json_object_get(pa, "logprob"), &x) &&
                    finite_logprob(json_object_get(pb, "logprob"), &y))
                        drift = MX_MAX(drift, fabs(x - y));
        }
        if (i == n && na == nb)
                return NULL;
        if (i == n) {
                *ret_text = xasprintf("%zu tokens against %zu", na, nb);
                return json_pack("{s:I,s:I,s:f}", "tokens_first", (json_int_t)na, "tokens_second", (json_int_t)nb,
                                 "drift", drift);
        }
        ta = json_string_value(json_object_get(json_array_get(a, i), "token"));
        tb = json_string_value(json_object_get(json_array_get(b, i), "token"));
        finite_logprob(json_object_get(json_array_get(a, i), "logprob"), &la);
        finite_logprob(json_object_get(json_array_get(b, i), "logprob"), &lb);
        gap = fabs(la - lb);
        near = gap <= epsilon;
        /* The other run's token among this run's alternatives, at nearly the sampled one's logprob. */
        b_in_a = listed_logprob(json_array_get(a, i), tb, &x);
        a_in_b = listed_logprob(json_array_get(b, i), ta, &y);
        near = near || (b_in_a && fabs(x - la) <= epsilon) || (a_in_b && fabs(y - lb) <= epsilon);
        ea = mx_escape(strempty(ta), 24);
        eb = mx_escape(strempty(tb), 24);
        d = json_pack("{s:I,s:o,s:o,s:f,s:f,s:b,s:f}", "token", (json_int_t)(i + 1), "first",
                      side(json_array_get(a, i)), "second", side(json_array_get(b, i)), "gap", gap, "drift", drift,
                      "near_tie", near, "epsilon", epsilon);
        if (b_in_a)
                json_object_set_new(d, "second_in_first_top", json_real(x));
        if (a_in_b)
                json_object_set_new(d, "first_in_second_top", json_real(y));
        *ret_text = xasprintf("token %zu differs: '%s' (logprob %.4g) then '%s' (logprob %.4g), gap %.3g: %s "
                              "(near-tie epsilon %g)",
                              i + 1, ea, la, eb, lb, gap,
                              near ? "a near tie, as a rounding difference flips" : "a real difference, not a near tie",
                              epsilon);
        return d;
}
