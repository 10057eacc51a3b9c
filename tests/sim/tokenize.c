/* SPDX-License-Identifier: MIT */
/*
 * The tokenizer endpoints and the model list, in each personality's shape:
 * vLLM /tokenize {prompt | messages} -> {count, max_model_len, tokens,
 * token_strs}, /detokenize {tokens} -> {prompt} (target-surfaces.md §A1);
 * llama-server /tokenize {content} -> {tokens}, /detokenize -> {content}
 * (§B). Counts agree with the prompt_tokens of completions by construction:
 * both go through vocab.c and sim_chat_prompt().
 */
#include "sim.h"

#include <inttypes.h>

#define DETOKENIZE_MAX (1 << 20)

static json_t *ids_json(const int64_t *ids, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, json_integer(ids[i]));
        return a;
}

static json_t *strs_json(const int64_t *ids, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; i < n; i++) {
                _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
                sim_token_append(&b, ids[i], false);
                json_array_append_new(a, json_string(strempty(b.data)));
        }
        return a;
}

static void bad(struct sim_server *s, struct evhttp_request *req, const char *msg)
{
        if (s->cfg->flavor == SIM_FLAVOR_LLAMA)
                sim_reply_json(s, req, 400,
                               json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 400, "message", msg, "type",
                                         "invalid_request_error"));
        else
                sim_reply_error(s, req, 400, "BadRequestError", "%s", msg);
}

static void tokenize_llama(struct sim_server *s, struct evhttp_request *req, json_t *o)
{
        json_t *content = json_object_get(o, "content"), *out;
        _cleanup_free_ int64_t *ids = NULL;
        size_t n;

        if (!json_is_string(content)) {
                bad(s, req, "\"content\" must be a string");
                return;
        }
        n = sim_tokenize(json_string_value(content), json_string_length(content), &ids);
        if (json_is_true(json_object_get(o, "with_pieces"))) {
                out = json_array();
                for (size_t i = 0; i < n; i++) {
                        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
                        sim_token_append(&b, ids[i], false);
                        json_array_append_new(out, json_pack("{s:I,s:s}", "id", (json_int_t)ids[i], "piece",
                                                             strempty(b.data)));
                }
        } else
                out = ids_json(ids, n);
        sim_reply_json(s, req, 200, json_pack("{s:o}", "tokens", out));
}

void sim_handle_tokenize(struct sim_server *s, struct evhttp_request *req)
{
        json_auto_t *o = sim_read_json(s, req, "TokenizeRequest");
        _cleanup_free_ int64_t *ids = NULL;
        _cleanup_free_ char *err = NULL;
        size_t n = 0;
        json_t *messages;

        if (!o)
                return;
        if (s->cfg->flavor == SIM_FLAVOR_LLAMA) {
                tokenize_llama(s, req, o);
                return;
        }
        messages = json_object_get(o, "messages");
        if (messages) {
                json_t *agp = json_object_get(o, "add_generation_prompt");
                if (sim_chat_prompt(messages, !agp || json_is_true(agp), &ids, &n, &err) < 0) {
                        bad(s, req, err);
                        return;
                }
        } else if (json_is_string(json_object_get(o, "prompt"))) {
                json_t *p = json_object_get(o, "prompt");
                n = sim_tokenize(json_string_value(p), json_string_length(p), &ids);
        } else if (sim_prompt_ids(json_object_get(o, "prompt"), &ids, &n, &err) < 0) {
                bad(s, req, err);
                return;
        }
        sim_reply_json(s, req, 200,
                       json_pack("{s:I,s:I,s:o,s:o}", "count", (json_int_t)n, "max_model_len",
                                 (json_int_t)s->cfg->max_model_len, "tokens", ids_json(ids, n), "token_strs",
                                 json_is_true(json_object_get(o, "return_token_strs")) ? strs_json(ids, n)
                                                                                       : json_null()));
}

void sim_handle_detokenize(struct sim_server *s, struct evhttp_request *req)
{
        json_auto_t *o = sim_read_json(s, req, "DetokenizeRequest");
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        json_t *tokens, *v;
        size_t i;

        if (!o)
                return;
        tokens = json_object_get(o, "tokens");
        if (!json_is_array(tokens) || json_array_size(tokens) > DETOKENIZE_MAX) {
                bad(s, req, "'tokens' must be a list of token ids");
                return;
        }
        json_array_foreach(tokens, i, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                    json_integer_value(v) >= SIM_VOCAB_SIZE) {
                        _cleanup_free_ char *msg =
                                xasprintf("Token id at position %zu is out of vocabulary", i);
                        bad(s, req, msg);
                        return;
                }
                sim_token_append(&b, json_integer_value(v), false);
        }
        sim_reply_json(s, req, 200,
                       json_pack("{s:s}", s->cfg->flavor == SIM_FLAVOR_LLAMA ? "content" : "prompt",
                                 strempty(b.data)));
}

void sim_handle_models(struct sim_server *s, struct evhttp_request *req)
{
        const struct sim_config *c = s->cfg;
        static const char *const owners[_SIM_FLAVOR_MAX] = {"vllm", "llamacpp", "sglang"};
        json_t *m = json_pack("{s:s,s:s,s:I,s:s}", "id", c->served_name, "object", "model", "created",
                              (json_int_t)(mx_now_real_us() / 1000000), "owned_by", owners[c->flavor]);

        if (c->flavor == SIM_FLAVOR_LLAMA)
                json_object_set_new(m, "meta",
                                    json_pack("{s:i,s:I,s:i}", "vocab_type", 2, "n_vocab",
                                              (json_int_t)SIM_VOCAB_SIZE, "n_ctx_train", 131072));
        else {
                json_object_set_new(m, "root", json_string(c->model));
                json_object_set_new(m, "parent", json_null());
                json_object_set_new(m, "max_model_len", json_integer(c->max_model_len));
        }
        if (c->flavor == SIM_FLAVOR_VLLM)
                json_object_set_new(
                        m, "permission",
                        json_pack("[{s:s,s:s,s:I,s:b,s:b,s:b,s:b,s:b,s:b,s:s,s:n,s:b}]", "id",
                                  "modelperm-0d6f2d1e8a7c4b1e9f3a5c7d2b4e6f80", "object", "model_permission",
                                  "created", (json_int_t)(mx_now_real_us() / 1000000), "allow_create_engine",
                                  false, "allow_sampling", true, "allow_logprobs", true,
                                  "allow_search_indices", false, "allow_view", true, "allow_fine_tuning",
                                  false, "organization", "*", "group", "is_blocking", false));
        sim_reply_json(s, req, 200, json_pack("{s:s,s:[o]}", "object", "list", "data", m));
}
