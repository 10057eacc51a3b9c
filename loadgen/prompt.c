/* SPDX-License-Identifier: MIT */
/* Prompts of an exact token count (see prompt.h). */
#include "prompt.h"

#include "http.h"

#include <inttypes.h>
#include <math.h>

#define TOKENIZE_TIMEOUT_DEFAULT_MS 60000

/* Common words: the sequence a prompt's text is drawn from. */
static const char *const words[] = {
        "the",   "of",    "and",   "to",    "in",    "is",    "was",   "that",  "for",   "it",    "with",
        "as",    "his",   "on",    "be",    "at",    "by",    "had",   "are",   "but",   "from",  "or",
        "have",  "an",    "they",  "which", "one",   "you",   "were",  "her",   "all",   "she",   "there",
        "would", "their", "we",    "him",   "been",  "has",   "when",  "who",   "will",  "more",  "no",
        "if",    "out",   "so",    "said",  "what",  "up",    "its",   "about", "into",  "than",  "them",
        "can",   "only",  "other", "new",   "some",  "could", "time",  "these", "two",   "may",   "then",
        "do",    "first", "any",   "my",    "now",   "such",  "like",  "our",   "over",  "man",   "me",
        "even",  "most",  "made",  "after", "also",  "did",   "many",  "before", "must", "through", "back",
        "years", "where", "much",  "your",  "way",   "well",  "down",  "should", "because", "each", "just",
        "those", "people", "how",  "too",   "little", "state", "good", "very",  "make",  "world", "still",
        "own",   "see",   "men",   "work",  "long",  "get",   "here",  "between", "both", "life", "being",
        "under", "never", "day",   "same",  "another", "know", "while", "last", "might", "us",   "great",
        "old",   "year",  "off",   "come",  "since", "against", "go", "came",  "right", "used",  "take",
        "three", "house", "light", "water", "night", "place", "hand",  "city",  "river", "road",  "stone",
        "paper", "green", "small", "large", "early", "young", "open",  "short", "high",  "order", "point",
        "table", "window", "door", "field", "story", "music", "money", "power", "heart", "voice", "friend",
};

/*
 * Filler units for the last few tokens: one token each in most tokenizers
 * (a space-led single letter is its own pre-token, so copies do not merge);
 * the search checks, and tries the next when one does not fit.
 */
static const char *const units[] = {" a", " I", " x", " o", ".", " 1"};

/* ---- /tokenize ---- */

const char *mx_tokenize_form_describe(enum mx_tokenize_form f)
{
        switch (f) {
        case MX_TOKENIZE_VLLM:
                return "POST /tokenize {model, prompt} (vLLM, SGLang)";
        case MX_TOKENIZE_LLAMA:
                return "POST /tokenize {content} (llama-server)";
        default:
                return "none";
        }
}

json_t *mx_tokenize_body(enum mx_tokenize_form f, const char *model, const char *text, bool add_special)
{
        if (f == MX_TOKENIZE_LLAMA)
                return json_pack("{s:s,s:b}", "content", text, "add_special", add_special);
        return json_pack("{s:s?,s:s,s:b}", "model", model, "prompt", text, "add_special_tokens", add_special);
}

int mx_tokenize_parse(const struct mx_http_response *resp, int64_t *ret_count, char **reterr)
{
        json_auto_t *o = NULL;
        json_t *count, *tokens;

        if (resp->error < 0)
                return mx_reterr(reterr, resp->error, "%s", strna(resp->error_text));
        if (resp->status != 200) {
                _cleanup_free_ char *ex = mx_escape(resp->body, 200);
                return mx_reterr(reterr, -EPROTO, "HTTP %ld: %s", resp->status, ex);
        }
        o = json_loadb(resp->body, resp->body_len, 0, NULL);
        count = json_object_get(o, "count");
        tokens = json_object_get(o, "tokens");
        if (json_is_integer(count) && json_integer_value(count) >= 0)
                *ret_count = json_integer_value(count);
        else if (json_is_array(tokens))
                *ret_count = (int64_t)json_array_size(tokens);
        else
                return mx_reterr(reterr, -EPROTO, "no \"count\" or \"tokens\" in the reply");
        return 0;
}

/* ---- texts ---- */

/* splitmix64: the i-th word of a seed's sequence, and unique prefixes. */
static uint64_t mix(uint64_t x)
{
        x += UINT64_C(0x9e3779b97f4a7c15);
        x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
        return x ^ (x >> 31);
}

unsigned mx_prompt_units(void)
{
        return ELEMENTSOF(units);
}

char *mx_prompt_text(const char *prefix, uint64_t seed, int64_t n_words, unsigned unit, int64_t n_fill)
{
        _cleanup_buf_ struct mx_buf t = MX_BUF_INIT;

        if (prefix)
                mx_buf_puts(&t, prefix);
        for (int64_t i = 0; i < n_words; i++) {
                const char *w = words[mix(seed ^ mix((uint64_t)i)) % ELEMENTSOF(words)];

                if (t.len > 0)
                        mx_buf_putc(&t, ' ');
                if (i == 0 && !prefix) {
                        mx_buf_putc(&t, (char)(w[0] - 'a' + 'A'));
                        mx_buf_puts(&t, w + 1);
                } else
                        mx_buf_puts(&t, w);
        }
        for (int64_t i = 0; i < n_fill; i++)
                mx_buf_puts(&t, units[unit % ELEMENTSOF(units)]);
        return mx_buf_steal(&t);
}

void mx_prompt_unique_prefix(uint64_t seed, uint64_t serial, char buf[static 16])
{
        static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
        uint64_t x = mix(seed ^ mix(serial));

        /* the first character already differs between most requests: a shared first token is rare */
        buf[0] = (char)('A' + x % 26);
        x /= 26;
        /* six more: unique enough among a benchmark's requests, short enough for small prompts */
        for (int i = 1; i < 7; i++) {
                buf[i] = alnum[x % 36];
                x /= 36;
                if (x == 0)
                        x = mix(seed + serial + (uint64_t)i);
        }
        buf[7] = '\0';
}

/* ---- the search ---- */

void mx_prompt_search_init(struct mx_prompt_search *s, int64_t target, double tokens_per_word)
{
        double tpw = tokens_per_word > 0 && isfinite(tokens_per_word) ? tokens_per_word : 1.0;

        *s = (struct mx_prompt_search){
                .target = target,
                .phase = MX_PROMPT_WORDS,
                .n = (int64_t)llround((double)target / tpw),
                .lo_n = -1,
                .lo_c = -1,
                .hi_n = -1,
                .hi_c = -1,
                .best_c = -1,
        };
        if (s->n < 0)
                s->n = 0;
}

/* The next word count between what is known (lo below or at the target, hi above it). */
static int64_t next_words(struct mx_prompt_search *s)
{
        int64_t n;

        if (s->lo_c >= 0 && s->hi_n >= 0) {
                /* secant between the bounds; bisection when the last secant step did not halve them */
                if (s->last_bisect || s->hi_n - s->lo_n <= 2) {
                        n = s->lo_n + (int64_t)((double)(s->target - s->lo_c) * (double)(s->hi_n - s->lo_n) /
                                                (double)(s->hi_c - s->lo_c));
                        s->last_bisect = false;
                } else {
                        n = s->lo_n + (s->hi_n - s->lo_n) / 2;
                        s->last_bisect = true;
                }
                return MX_MIN(MX_MAX(n, s->lo_n + 1), s->hi_n - 1);
        }
        if (s->lo_c >= 0) {
                /* everything so far too short: extend at the rate seen (tokens per word) */
                double rate = s->lo_n > 0 ? (double)s->lo_c / (double)s->lo_n : 1.0;
                n = s->lo_n + (int64_t)ceil((double)(s->target - s->lo_c) / MX_MAX(rate, 1e-3));
                return MX_MAX(n, s->lo_n + 1);
        }
        /* everything so far too long: shrink proportionally */
        n = (int64_t)floor((double)s->hi_n * (double)s->target / (double)s->hi_c);
        return MX_MAX(MX_MIN(n, s->hi_n - 1), 0);
}

static int search_words(struct mx_prompt_search *s, int64_t count, char **reterr)
{
        if (count == s->target)
                return 1;
        if (count < s->target) {
                if (s->lo_c < 0 || s->n > s->lo_n) {
                        s->lo_n = s->n;
                        s->lo_c = count;
                }
        } else if (s->hi_n < 0 || s->n < s->hi_n) {
                s->hi_n = s->n;
                s->hi_c = count;
        }
        if (s->hi_n == 0)
                return mx_reterr(reterr, -ERANGE,
                                 "a prompt of %" PRId64 " tokens is shorter than the request's unique prefix "
                                 "(%" PRId64 " tokens)",
                                 s->target, s->hi_c);
        if (s->lo_c >= 0 && s->hi_n == s->lo_n + 1) {
                /* one word apart: the rest is less than one word's tokens, fill it */
                s->phase = MX_PROMPT_FILL;
                s->n = s->lo_n;
                s->unit = 0;
                s->fill = s->target - s->lo_c;
                return 0;
        }
        s->n = next_words(s);
        return 0;
}

int mx_prompt_search_feed(struct mx_prompt_search *s, int64_t count, char **reterr)
{
        int r;

        if (s->phase == MX_PROMPT_DONE)
                return 1;
        if (s->phase == MX_PROMPT_FAILED)
                return mx_reterr(reterr, -ERANGE, "the search already failed");
        s->tries++;
        if (s->best_c < 0 || llabs(count - s->target) < llabs(s->best_c - s->target))
                s->best_c = count;
        if (s->phase == MX_PROMPT_WORDS)
                r = search_words(s, count, reterr);
        else if (count == s->target)
                r = 1;
        else if (++s->unit < ELEMENTSOF(units)) {
                s->fill = s->target - s->lo_c;
                r = 0;
        } else
                r = mx_reterr(reterr, -ERANGE,
                              "no text reaches %" PRId64 " tokens on this tokenizer: %" PRId64 " words give %" PRId64
                              ", one more gives %" PRId64 ", and no filler unit adds exactly one token (closest "
                              "%" PRId64 ")",
                              s->target, s->lo_n, s->lo_c, s->hi_c, s->best_c);
        if (r == 0 && s->tries >= MX_PROMPT_TRIES_MAX)
                r = mx_reterr(reterr, -ERANGE,
                              "no text of %" PRId64 " tokens after %u /tokenize calls (closest %" PRId64 ")",
                              s->target, s->tries, s->best_c);
        if (r > 0)
                s->phase = MX_PROMPT_DONE;
        else if (r < 0)
                s->phase = MX_PROMPT_FAILED;
        return r;
}

/* ---- against a server ---- */

struct mx_prompt_build {
        struct mx_http *http;
        struct mx_http_call *call;
        char *url, *model, *auth_header;
        enum mx_tokenize_form form;
        int64_t timeout_ms;
        bool add_special;
        char *prefix;
        uint64_t seed;
        struct mx_prompt_search search;
        char *text; /* being measured */
        mx_prompt_done_cb done;
        mx_prompt_count_cb count_done; /* a single count instead of a search */
        void *userdata;
};

static void build_free(struct mx_prompt_build *p)
{
        if (!p)
                return;
        free(p->url);
        free(p->model);
        free(p->auth_header);
        free(p->prefix);
        free(p->text);
        free(p);
}

void mx_prompt_build_cancel(struct mx_prompt_build *p)
{
        if (!p)
                return;
        mx_http_cancel(p->call);
        build_free(p);
}

static void tokenize_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata);

static int send_text(struct mx_prompt_build *p, char **reterr)
{
        _cleanup_free_ char *url = xasprintf("%s/tokenize", p->url), *body = NULL;
        json_auto_t *o = mx_tokenize_body(p->form, p->model, p->text, p->add_special);
        const char *headers[] = {p->auth_header, NULL};
        struct mx_http_request req = {
                .method = "POST",
                .url = url,
                .headers = p->auth_header ? headers : NULL,
                .timeout_ms = p->timeout_ms,
                .max_body = MX_HTTP_BODY_MAX,
        };

        body = json_dumps(o, JSON_COMPACT);
        if (!body)
                mx_die("json_dumps failed");
        req.body = body;
        return mx_http_start(p->http, &req, tokenize_cb, p, &p->call, reterr);
}

static void build_end(struct mx_prompt_build *p, int error, const char *reason)
{
        struct mx_prompt_result res = {
                .error = error,
                .text = error == 0 ? TAKE_PTR(p->text) : NULL,
                .tokens = error == 0 ? p->search.target : -1,
                .words = p->search.n,
                .tries = p->search.tries,
                .reason = reason,
        };

        p->done(p->userdata, &res);
        free(res.text); /* unless the callback took it */
        build_free(p);
}

static void tokenize_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct mx_prompt_build *p = userdata;
        _cleanup_free_ char *err = NULL;
        int64_t n = -1;
        int r;

        p->call = NULL;
        r = mx_tokenize_parse(resp, &n, &err);
        if (p->count_done) {
                p->count_done(p->userdata, r < 0 ? r : n, err);
                build_free(p);
                return;
        }
        if (r < 0) {
                _cleanup_free_ char *m = xasprintf("POST %s/tokenize: %s", p->url, strna(err));
                build_end(p, r, m);
                return;
        }
        r = mx_prompt_search_feed(&p->search, n, &err);
        if (r != 0) {
                build_end(p, r > 0 ? 0 : r, err);
                return;
        }
        free(p->text);
        p->text = mx_prompt_text(p->prefix, p->seed, p->search.n, p->search.unit,
                                 p->search.phase == MX_PROMPT_FILL ? p->search.fill : 0);
        if (send_text(p, &err) < 0) {
                _cleanup_free_ char *m = xasprintf("POST %s/tokenize: %s", p->url, strna(err));
                build_end(p, -EIO, m);
        }
}

static struct mx_prompt_build *build_new(const struct mx_prompt_tokenizer *tk, enum mx_tokenize_form form,
                                         bool add_special, void *userdata)
{
        struct mx_prompt_build *p = xcalloc(1, sizeof(*p));

        p->http = tk->http;
        p->url = xstrdup(tk->url);
        p->model = tk->model ? xstrdup(tk->model) : NULL;
        p->auth_header = tk->auth_header ? xstrdup(tk->auth_header) : NULL;
        p->form = form;
        p->timeout_ms = tk->timeout_ms ?: TOKENIZE_TIMEOUT_DEFAULT_MS;
        p->add_special = add_special;
        p->userdata = userdata;
        return p;
}

/* Send p's first text to count: 0 with p in *ret (when asked for), or -errno with p freed. */
static int build_send(struct mx_prompt_build *p, struct mx_prompt_build **ret, char **reterr)
{
        int r = send_text(p, reterr);

        if (r < 0) {
                build_free(p);
                return r;
        }
        if (ret)
                *ret = p;
        return 0;
}

int mx_prompt_build(const struct mx_prompt_tokenizer *tk, const struct mx_prompt_spec *spec, mx_prompt_done_cb done,
                    void *userdata, struct mx_prompt_build **ret, char **reterr)
{
        struct mx_prompt_build *p;

        if (spec->target < 1)
                return mx_reterr(reterr, -EINVAL, "a prompt of %" PRId64 " tokens", spec->target);
        if (tk->form == MX_TOKENIZE_NONE)
                return mx_reterr(reterr, -EOPNOTSUPP, "the server has no /tokenize to count a prompt with");
        p = build_new(tk, tk->form, spec->add_special, userdata);
        p->done = done;
        p->prefix = spec->prefix ? xstrdup(spec->prefix) : NULL;
        p->seed = spec->seed;
        mx_prompt_search_init(&p->search, spec->target, spec->tokens_per_word);
        p->text = mx_prompt_text(p->prefix, p->seed, p->search.n, 0, 0);
        return build_send(p, ret, reterr);
}

int mx_prompt_count(const struct mx_prompt_tokenizer *tk, enum mx_tokenize_form f, const char *text, bool add_special,
                    mx_prompt_count_cb done, void *userdata, struct mx_prompt_build **ret, char **reterr)
{
        struct mx_prompt_build *p = build_new(tk, f, add_special, userdata);

        p->count_done = done;
        p->text = xstrdup(text);
        return build_send(p, ret, reterr);
}
