/* SPDX-License-Identifier: MIT */
/* Server kinds and their cache-defeat field (see server-kind.h). */
#include "server-kind.h"

#include "util.h"

static const char *const kind_names[] = {
        [MX_SERVER_OTHER] = "unknown",
        [MX_SERVER_VLLM] = "vllm",
        [MX_SERVER_LLAMA] = "llama-server",
        [MX_SERVER_SGLANG] = "sglang",
};

const char *mx_server_kind_name(enum mx_server_kind k)
{
        return (unsigned)k < ELEMENTSOF(kind_names) ? kind_names[k] : "unknown";
}

enum mx_server_kind mx_server_kind_from_owner(const char *owned_by)
{
        if (!owned_by)
                return MX_SERVER_OTHER;
        if (streq(owned_by, "vllm"))
                return MX_SERVER_VLLM;
        if (streq(owned_by, "llamacpp"))
                return MX_SERVER_LLAMA;
        if (streq(owned_by, "sglang"))
                return MX_SERVER_SGLANG;
        return MX_SERVER_OTHER;
}

enum mx_server_kind mx_server_kind_from_profile(const char *base)
{
        if (!base)
                return MX_SERVER_OTHER;
        if (streq(base, "vllm"))
                return MX_SERVER_VLLM;
        if (streq(base, "llama-server"))
                return MX_SERVER_LLAMA;
        if (streq(base, "sglang"))
                return MX_SERVER_SGLANG;
        return MX_SERVER_OTHER;
}

bool mx_server_defeat_cache(enum mx_server_kind k, json_t *body, const char *salt)
{
        switch (k) {
        case MX_SERVER_VLLM:
                json_object_set_new(body, "cache_salt", json_string(salt));
                return true;
        case MX_SERVER_LLAMA:
                json_object_set_new(body, "cache_prompt", json_false());
                return true;
        default:
                return false;
        }
}

void mx_server_exact_tokens(json_t *body, int64_t n)
{
        json_object_set_new(body, "ignore_eos", json_true());
        json_object_set_new(body, "min_tokens", json_integer(n));
}

const char *mx_server_known_issue(const char *message)
{
        /*
         * vLLM's Harmony parser (openai_harmony's StreamableParser) after a gpt-oss turn ended:
         * "Unexpected token 200002 while expecting start token 200006" (target-surfaces.md §A5).
         */
        if (message && strstr(message, "Unexpected token") && strstr(message, "while expecting start token"))
                return "vllm#50690 (gpt-oss with ignore_eos: the Harmony parser met a token after the model "
                       "ended its turn before the token limit)";
        return NULL;
}

bool mx_server_has_cache_field(enum mx_server_kind k)
{
        return k == MX_SERVER_VLLM || k == MX_SERVER_LLAMA;
}
