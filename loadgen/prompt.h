/* SPDX-License-Identifier: MIT */
/*
 * Prompts of an exact token count, counted by the server's own tokenizer
 * (POST /tokenize), for the benchmark engine (L4, `mxmatrix bench`) and L3's
 * long-context prompt.
 *
 * A prompt is  PREFIX w1 w2 ... wn U U ... U : an optional prefix (a string
 * unique to the request, so that no server's prefix cache can reuse anything
 * of the text), n words of a sequence fixed by a seed, and k copies of a
 * filler unit (" a", " I", ...). Because the words are a fixed sequence and
 * tokenizers split on spaces, the count grows with n (never by a new random
 * draw), so the search below converges on any tokenizer, including one that
 * cuts every word into several tokens:
 *
 *   words   proportional first guess, then secant steps between the longest
 *           text known to be at or under the target and the shortest known to
 *           be over it, bisection when secant stalls, until those are one
 *           word apart;
 *   fill    the rest (less than one word's tokens) with filler units, the
 *           first unit that reaches the target exactly; if none does, the
 *           build fails with the closest count and the reason.
 *
 * The search (mx_prompt_search_*) and the texts are pure and unit-tested
 * with fake tokenizers; mx_prompt_build() drives it against a server.
 */
#pragma once

#include "util.h"

#include <jansson.h>

struct mx_http;
struct mx_http_response;

/* The two /tokenize forms (target-surfaces.md §A1, §A5, §B). */
enum mx_tokenize_form {
        MX_TOKENIZE_NONE,
        MX_TOKENIZE_VLLM,  /* {model, prompt, add_special_tokens} -> {count, tokens} (vLLM, SGLang) */
        MX_TOKENIZE_LLAMA, /* {content, add_special} -> {tokens} (llama-server) */
};

/* "POST /tokenize {content} (llama-server)" and the like; "none". */
const char *mx_tokenize_form_describe(enum mx_tokenize_form f);
/* The request body of one /tokenize call. */
json_t *mx_tokenize_body(enum mx_tokenize_form f, const char *model, const char *text, bool add_special);
/* The token count of a /tokenize reply ("count", else the length of "tokens"); -EPROTO with a reason. */
int mx_tokenize_parse(const struct mx_http_response *resp, int64_t *ret_count, char **reterr);

/* ---- the pure search ---- */

enum mx_prompt_phase {
        MX_PROMPT_WORDS,
        MX_PROMPT_FILL,
        MX_PROMPT_DONE,
        MX_PROMPT_FAILED,
};

#define MX_PROMPT_TRIES_MAX 64

struct mx_prompt_search {
        int64_t target;
        enum mx_prompt_phase phase;
        int64_t n;            /* words in the text to measure next */
        unsigned unit;        /* filler unit (index) in the text to measure next */
        int64_t fill;         /* filler units in the text to measure next */
        int64_t lo_n, lo_c;   /* most words known to count <= target (lo_c -1: none known) */
        int64_t hi_n, hi_c;   /* fewest words known to count > target (hi_n -1: none known) */
        int64_t best_c;       /* the closest count seen */
        unsigned tries;       /* counts fed */
        bool last_bisect;
};

/* Start a search for target tokens; tokens_per_word is a first guess (<= 0: 1). */
void mx_prompt_search_init(struct mx_prompt_search *s, int64_t target, double tokens_per_word);
/*
 * Feed the count of the text the search asked for (mx_prompt_search_text).
 * Returns 1 when that text is exactly the target, 0 when another text must be
 * measured, -ERANGE when the target cannot be reached (reason in *reterr:
 * shorter than the prefix, no filler unit fits, too many tries).
 */
int mx_prompt_search_feed(struct mx_prompt_search *s, int64_t count, char **reterr);
/* The number of filler units there are. */
unsigned mx_prompt_units(void);
/*
 * The text: prefix (may be NULL) + n_words words of seed's sequence (the
 * first capitalised when there is no prefix) + n_fill copies of unit.
 */
char *mx_prompt_text(const char *prefix, uint64_t seed, int64_t n_words, unsigned unit, int64_t n_fill);
/* A string unique to (seed, serial) fit to start a prompt: a capital letter, then letters and digits. */
void mx_prompt_unique_prefix(uint64_t seed, uint64_t serial, char buf[static 16]);

/* ---- against a server ---- */

struct mx_prompt_tokenizer {
        struct mx_http *http;
        const char *url;         /* base, no trailing slash or /v1 */
        const char *model;       /* vLLM form: the model id */
        const char *auth_header; /* "Authorization: Bearer ..." or NULL */
        enum mx_tokenize_form form;
        int64_t timeout_ms;      /* 0: 60 s */
};

struct mx_prompt_build;

/* What a build produced; valid during the done callback only. */
struct mx_prompt_result {
        int error;          /* 0, or a negative errno (reason says why) */
        char *text;         /* exactly `tokens` tokens; the callback may steal it (TAKE_PTR) */
        int64_t tokens;     /* the server's count of text (error 0) */
        int64_t words;      /* words of the sequence in text */
        unsigned tries;     /* /tokenize calls made */
        const char *reason; /* error != 0 */
};

/* A build ended; it frees itself after this call. */
typedef void (*mx_prompt_done_cb)(void *userdata, struct mx_prompt_result *res);
/* Count one text (n or -errno, reason); the call frees itself after it. */
typedef void (*mx_prompt_count_cb)(void *userdata, int64_t n, const char *reason);

struct mx_prompt_spec {
        int64_t target;
        const char *prefix; /* NULL: none */
        uint64_t seed;
        bool add_special;      /* count BOS and the like as the server adds them to a raw prompt */
        double tokens_per_word; /* first guess; 0: 1 */
};

/* Build a text of spec->target tokens as tk counts them; done runs later from the loop. */
int mx_prompt_build(const struct mx_prompt_tokenizer *tk, const struct mx_prompt_spec *spec, mx_prompt_done_cb done,
                    void *userdata, struct mx_prompt_build **ret, char **reterr);
/* Count one text with form f (tk->form ignored). */
int mx_prompt_count(const struct mx_prompt_tokenizer *tk, enum mx_tokenize_form f, const char *text, bool add_special,
                    mx_prompt_count_cb done, void *userdata, struct mx_prompt_build **ret, char **reterr);
/* Cancel a build or count in flight (no callback runs) and free it; NULL is fine. */
void mx_prompt_build_cancel(struct mx_prompt_build *p);
