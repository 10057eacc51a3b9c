/* SPDX-License-Identifier: MIT */
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
        return json_dumps(b, JSON_COMPACT);
}

void mx_gen_reply_done(struct mx_gen_reply *r)
{
        json_decref(r->json);
        json_decref(r->tokens);
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

/* Logprobs of a completions reply: {tokens, token_logprobs, top_logprobs: [{token: lp}]}. */
static char *check_logprobs_completions(json_t *lp, const struct mx_check_opts *o, struct mx_gen_reply *ret)
{
        json_t *tokens = json_object_get(lp, "tokens"), *tlp = json_object_get(lp, "token_logprobs");
        json_t *top = json_object_get(lp, "top_logprobs");
        size_t i;
        json_t *t;

        if (!json_is_array(tokens) || !json_is_array(tlp) || json_array_size(tokens) != json_array_size(tlp))
                return xstrdup("logprobs without tokens and token_logprobs of the same length");
        if (ret->completion_tokens > 0 && (int64_t)json_array_size(tokens) != ret->completion_tokens)
                return xasprintf("%zu logprob entries for %" PRId64 " completion tokens", json_array_size(tokens),
                                 ret->completion_tokens);
        ret->tokens = json_incref(tokens);
        json_array_foreach (tokens, i, t) {
                json_t *alts = json_array_get(top, i), *v;
                double lpv, prev = INFINITY, a;
                const char *k;
                bool found = false;

                if (!finite_logprob(json_array_get(tlp, i), &lpv))
                        return xasprintf("token %zu: logprob is not a finite number", i + 1);
                if (lpv > 1e-6)
                        return xasprintf("token %zu: logprob %g is above 0", i + 1, lpv);
                if (o->logprobs <= 0)
                        continue;
                if (!json_is_object(alts))
                        return xasprintf("token %zu: no top_logprobs", i + 1);
                json_object_foreach (alts, k, v) {
                        if (!finite_logprob(v, &a) || a > 1e-6)
                                return xasprintf("token %zu: top logprob of '%s' is not a finite number <= 0",
                                                 i + 1, k);
                        if (streq_ptr(k, json_string_value(t)))
                                found = true;
                        else if (a > prev + 1e-9)
                                return xasprintf("token %zu: top_logprobs not sorted best first", i + 1);
                        else
                                prev = a;
                }
                if (!found)
                        return xasprintf("token %zu: the sampled token is not among its top_logprobs", i + 1);
        }
        return NULL;
}

/* Logprobs of a chat reply: {content: [{token, logprob, bytes, top_logprobs: [{token, logprob}]}]}. */
static char *check_logprobs_chat(json_t *lp, const struct mx_check_opts *o, struct mx_gen_reply *ret)
{
        json_t *content = json_object_get(lp, "content"), *e;
        size_t i;

        if (!json_is_array(content))
                return xstrdup("logprobs without content");
        if (ret->completion_tokens > 0 && (int64_t)json_array_size(content) != ret->completion_tokens)
                return xasprintf("%zu logprob entries for %" PRId64 " completion tokens", json_array_size(content),
                                 ret->completion_tokens);
        ret->tokens = json_array();
        json_array_foreach (content, i, e) {
                const char *tok = json_string_value(json_object_get(e, "token"));
                json_t *alts = json_object_get(e, "top_logprobs"), *a;
                double lpv, prev = INFINITY, av;
                size_t j;

                if (!tok)
                        return xasprintf("token %zu: no token", i + 1);
                json_array_append_new(ret->tokens, json_string(tok));
                if (!finite_logprob(json_object_get(e, "logprob"), &lpv))
                        return xasprintf("token %zu: logprob is not a finite number", i + 1);
                if (lpv > 1e-6)
                        return xasprintf("token %zu: logprob %g is above 0", i + 1, lpv);
                if (o->logprobs <= 0)
                        continue;
                if (!json_is_array(alts) || json_array_size(alts) == 0)
                        return xasprintf("token %zu: no top_logprobs", i + 1);
                json_array_foreach (alts, j, a) {
                        bool sampled = streq_ptr(json_string_value(json_object_get(a, "token")), tok);

                        if (!finite_logprob(json_object_get(a, "logprob"), &av) || av > 1e-6)
                                return xasprintf("token %zu: a top logprob is not a finite number <= 0", i + 1);
                        if (sampled && fabs(av - lpv) > 1e-4)
                                return xasprintf("token %zu: the sampled token's logprob differs in top_logprobs",
                                                 i + 1);
                        /*
                         * vLLM V1 puts the sampled token first (its sampler's logprob row leads with it, and
                         * the chat reply takes the row's first top_logprobs entries), so the list is sorted
                         * best first apart from it, as the completions dict is.
                         */
                        if (sampled)
                                continue;
                        if (av > prev + 1e-9)
                                return xasprintf("token %zu: top_logprobs not sorted best first", i + 1);
                        prev = av;
                }
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

/* Text checks: replacement characters, printable share, one word repeated, a bare NaN. */
static char *check_text(const char *text, const struct mx_check_opts *o)
{
        _cleanup_strv_free_ char **words = NULL;
        size_t printable = 0, chars = 0, best = 0, n = 0;
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
        for (char *w = strtok_r(copy, " \t\n\r", &save); w; w = strtok_r(NULL, " \t\n\r", &save)) {
                size_t count = 1;

                if (streq(w, "NaN"))
                        return xstrdup("the text contains NaN");
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

char *mx_check_reply(const struct mx_gen_request *rq, const struct mx_check_opts *o,
                     const struct mx_http_response *res, struct mx_gen_reply *ret, const char **ret_check)
{
        json_t *choice, *usage, *msg, *lp;
        const char *content = NULL, *reasoning = NULL, *nf;
        json_error_t jerr;
        ssize_t bad;
        size_t i;
        json_t *e;
        char *p;

        *ret = (struct mx_gen_reply){ .prompt_ppl = -1 };
#define FAIL(check, ...)                                                                                           \
        do {                                                                                                       \
                *ret_check = check;                                                                                \
                return xasprintf(__VA_ARGS__);                                                                     \
        } while (0)
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
        {
                static const char *const keys[] = { "prompt_tokens", "completion_tokens", "total_tokens" };

                for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                        if (!json_is_integer(json_object_get(usage, keys[k])) ||
                            json_integer_value(json_object_get(usage, keys[k])) < 0)
                                FAIL("usage", "usage.%s is not a count", keys[k]);
        }
        ret->completion_tokens = json_integer_value(json_object_get(usage, "completion_tokens"));
        ret->prompt_tokens = json_integer_value(json_object_get(usage, "prompt_tokens"));
        if (rq->endpoint == MX_ENDPOINT_CHAT) {
                msg = json_object_get(choice, "message");
                content = json_string_value(json_object_get(msg, "content"));
                /* gpt-oss's analysis channel: "reasoning" (vLLM), "reasoning_content" (older vLLM, llama-server). */
                reasoning = json_string_value(json_object_get(msg, "reasoning"));
                if (!reasoning)
                        reasoning = json_string_value(json_object_get(msg, "reasoning_content"));
        } else
                content = json_string_value(json_object_get(choice, "text"));
        ret->text = xasprintf("%s%s%s", strempty(reasoning), reasoning && content ? "\n" : "", strempty(content));
        if (!*ret->text)
                FAIL("text", "no text (%s) with completion_tokens %" PRId64,
                     rq->endpoint == MX_ENDPOINT_CHAT ? "content and reasoning are null or empty" : "text is empty",
                     ret->completion_tokens);
        if (o->expect_tokens > 0 && ret->completion_tokens != o->expect_tokens)
                FAIL("tokens", "completion_tokens %" PRId64 ", asked for exactly %" PRId64 " (ignore_eos)",
                     ret->completion_tokens, o->expect_tokens);
        if (o->expect_tokens > 0 && !streq_ptr(ret->finish_reason, "length"))
                FAIL("tokens", "finish_reason %s, expected length", strna(ret->finish_reason));
        p = check_text(ret->text, o);
        if (p) {
                *ret_check = "coherence";
                return p;
        }
        json_array_foreach (o->expect, i, e)
                if (!strstr(ret->text, json_string_value(e)))
                        FAIL("expect", "the text does not contain '%s'", json_string_value(e));
        lp = json_object_get(choice, "logprobs");
        if (rq->logprobs >= 0) {
                if (!json_is_object(lp))
                        FAIL("logprobs", "logprobs were asked for and are missing");
                p = rq->endpoint == MX_ENDPOINT_CHAT ? check_logprobs_chat(lp, o, ret)
                                                     : check_logprobs_completions(lp, o, ret);
                if (p) {
                        *ret_check = "logprobs";
                        return p;
                }
        }
        if (rq->prompt_logprobs >= 0) {
                json_t *plp = json_object_get(choice, "prompt_logprobs");

                if (!plp)
                        plp = json_object_get(ret->json, "prompt_logprobs");
                ret->prompt_ppl = prompt_ppl(plp);
                if (isnan(ret->prompt_ppl))
                        FAIL("logprobs", "a prompt logprob is not a finite number");
        }
#undef FAIL
        return NULL;
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
