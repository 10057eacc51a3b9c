/* SPDX-License-Identifier: MIT */
/*
 * Which kind of server a target is, and what follows from it for requests:
 * how its prompt cache is defeated (target-surfaces.md §A5, §B, §C). One
 * place, so the levels, the benchmark engine and `probe` agree.
 *
 *   vllm          a fresh "cache_salt" per request (vLLM ignores nothing it
 *                 does not know: SGLang and llama-server ignore the salt)
 *   llama-server  "cache_prompt": false (its cache is on by default and keyed
 *                 on the token prefix; the salt means nothing to it)
 *   sglang, other a prefix unique to the request (no request field exists)
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

enum mx_server_kind {
        MX_SERVER_OTHER,
        MX_SERVER_VLLM,
        MX_SERVER_LLAMA,
        MX_SERVER_SGLANG,
};

/* "unknown", "vllm", "llama-server", "sglang". */
const char *mx_server_kind_name(enum mx_server_kind k);

/* From /v1/models' owned_by ("vllm", "llamacpp", "sglang"); NULL or anything else: MX_SERVER_OTHER. */
enum mx_server_kind mx_server_kind_from_owner(const char *owned_by);

/* From a profile's built-in base ("vllm", "llama-server", "sglang"); else MX_SERVER_OTHER. */
enum mx_server_kind mx_server_kind_from_profile(const char *base);

/*
 * Set the request field that makes kind k evaluate the whole prompt again
 * (salt: a string unique to the request, 1..128 characters without '@', '/',
 * '\\'). Returns false when k has no such field: the caller must start the
 * prompt with text unique to the request instead.
 */
bool mx_server_defeat_cache(enum mx_server_kind k, json_t *body, const char *salt);

/*
 * Ask for exactly n generated tokens: "ignore_eos": true and "min_tokens": n,
 * as llama-benchy's --exact-tg does. min_tokens masks every stop token id
 * (vLLM: the model's EOS ids and stop_token_ids, which for gpt-oss include
 * <|return|> and <|call|>) until n tokens exist, so gpt-oss cannot end its
 * Harmony turn and vLLM's parser never meets the token after <|return|> that
 * fails an ignore_eos-only request (vllm#50690). llama-server ignores
 * min_tokens and honours ignore_eos; SGLang takes both.
 */
void mx_server_exact_tokens(json_t *body, int64_t n);

/*
 * A failure that is a known issue of the server, recognised by its message:
 * "vllm#50690 (...)" naming the issue and what it is, or NULL. Callers write
 * "server known issue <that>: <message>" so that the failure is not taken for
 * the harness's or a feature's.
 */
const char *mx_server_known_issue(const char *message);

/* Does kind k have a request field that defeats its prompt cache (vLLM's salt, llama-server's cache_prompt)? */
bool mx_server_has_cache_field(enum mx_server_kind k);
