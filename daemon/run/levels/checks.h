/* SPDX-License-Identifier: MIT */
/*
 * Generation requests and the checks of their replies that L2 (correctness)
 * and L3 (stress, on every reply) share: the request bodies for vLLM's
 * /v1/completions and /v1/chat/completions (target-surfaces.md §A1), and a
 * reply's sanity — HTTP 200, valid UTF-8, no NaN/Infinity, JSON, text (gpt-oss
 * reasoning, `reasoning` or `reasoning_content`, counts as output), usage,
 * exact token counts, coherent text, logprobs in the endpoint's shape.
 */
#pragma once

#include "http.h"
#include "server-kind.h"
#include "util.h"

#include <jansson.h>

enum mx_endpoint {
        MX_ENDPOINT_COMPLETIONS,
        MX_ENDPOINT_CHAT,
};

const char *mx_endpoint_name(enum mx_endpoint e); /* "completions", "chat" */
const char *mx_endpoint_path(enum mx_endpoint e); /* "/v1/completions", ... */
int mx_endpoint_from_string(const char *s);

struct mx_gen_request {
        enum mx_endpoint endpoint;
        const char *model;  /* may be NULL */
        const char *prompt; /* the user message for chat */
        int64_t max_tokens;
        bool ignore_eos;
        double temperature;
        bool has_seed;
        int64_t seed;
        int logprobs;        /* top alternatives per token; -1: none */
        int prompt_logprobs; /* -1: none */
        /*
         * Make the server evaluate the whole prompt again (server-kind.h):
         * llama-server "cache_prompt": false, vLLM this cache_salt. Unset or a
         * kind without such a field: nothing is added.
         */
        enum mx_server_kind server;
        const char *cache_salt; /* unique to the request (vLLM), or NULL: no cache defeat */
        bool defeat_cache;
};

/* The JSON body of a request. */
char *mx_gen_body(const struct mx_gen_request *r);

/* What the checks ask of a reply. */
struct mx_check_opts {
        int64_t expect_tokens; /* completion_tokens must equal it and finish_reason be "length"; 0: no check */
        double min_printable;  /* share of printable characters in the text; 0: no check */
        double max_repeat;     /* most frequent word's share of the words (8 or more); 0: no check */
        json_t *expect;        /* substrings the text must contain, or NULL */
        int logprobs;          /* the logprobs the request asked for; -1: none */
        bool key_sent;         /* the request carried the profile's bearer token (for a 401's reason) */
};

/* What a reply said, as far as it could be read. */
struct mx_gen_reply {
        json_t *json;
        char *text;   /* content, after the reasoning text (chat) */
        json_t *tokens; /* the sampled tokens from the logprobs, or NULL */
        json_t *logprobs; /* [{"token", "logprob", "top": [{"token", "logprob"}]}] whatever the form, or NULL */
        int64_t completion_tokens, prompt_tokens;
        char *finish_reason;
        double prompt_ppl; /* perplexity from prompt_logprobs; < 0: none */
        bool no_prompt_logprobs; /* they were asked for and the reply has none (llama-server) */
};

void mx_gen_reply_done(struct mx_gen_reply *r);

/*
 * What a 401 or 403 means for the run, to follow the server's own words: the profile's API key was
 * refused (key_sent), or the server wants one (mxmatrix.json(5): api_key, api_key_env); "" otherwise.
 */
const char *mx_check_auth_hint(long status, bool key_sent);

/*
 * Check a reply. NULL when it passes; else what is wrong in one sentence,
 * and *ret_check names the check ("http", "utf8", "nan", "json", "text",
 * "usage", "tokens", "coherence", "expect", "logprobs", "auth": a 401/403, "known-issue": a known bug of
 * the server, server-kind.h). ret is filled as far
 * as the reply could be read.
 */
char *mx_check_reply(const struct mx_gen_request *rq, const struct mx_check_opts *o,
                     const struct mx_http_response *res, struct mx_gen_reply *ret, const char **ret_check);

/*
 * A reply's logprobs in one shape whatever form the server used — the legacy
 * arrays (tokens, token_logprobs, top_logprobs dicts: vLLM completions) or
 * the content form (content: [{id?, token, bytes, logprob, top_logprobs}]:
 * every chat, llama-server's completions) — as [{"token", "logprob", "top":
 * [{"token", "logprob"}]}] in *ret. NULL, or what is wrong; *ret_legacy says
 * which form it was.
 */
char *mx_logprobs_normalise(json_t *lp, json_t **ret, bool *ret_legacy);

/*
 * Where two outputs of the same seeded request first differ, from their
 * normalised logprobs: NULL when they are the same. Else {"token" (1-based),
 * "first"/"second": {"token", "logprob"}, "gap" (|difference| of the two
 * sampled tokens' logprobs), "first_in_second_top"/"second_in_first_top" (the
 * other token's logprob where the run listed it), "drift" (the largest change
 * of a logprob over the common prefix), "near_tie", "epsilon"} and a sentence
 * in *ret_text. A near tie: the gap is at most epsilon, or the other token is
 * listed at most epsilon from the sampled one — a rounding difference can
 * flip such a token; a real difference cannot be explained so.
 */
json_t *mx_divergence(json_t *a, json_t *b, double epsilon, char **ret_text);

/*
 * Keep a request and its reply as evidence in run_dir/dir/name.json; returns
 * the artifact object {"name", "path", "what"} (path relative to run_dir),
 * or NULL when the file could not be written.
 */
json_t *mx_evidence_write(const char *run_dir, const char *dir, const char *name, const char *what,
                          const char *request_body, const struct mx_http_response *res);

/* A name safe in a file name: [A-Za-z0-9._-], other bytes as '_', at most 64. */
char *mx_file_safe(const char *s);
