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

/* Has kind k a request field that defeats its prompt cache (mx_server_defeat_cache)? */
bool mx_server_can_defeat_cache(enum mx_server_kind k);
