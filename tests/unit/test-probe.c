/* SPDX-License-Identifier: MIT */
/*
 * The probe's parsing on replies recorded from the real llama-server
 * (../shared/targets, CPU, a generated llama model; tests/fixtures/probe/llama-*)
 * and from mxsim's vLLM flavour (mxsim-vllm-*), and the engine against a port
 * where nothing listens.
 */
#include "test.h"

#include "probe.h"

#include <event2/event.h>

static json_t *fixture_json(const char *name)
{
        _cleanup_free_ char *rel = xasprintf("tests/fixtures/probe/%s", name);
        _cleanup_free_ char *path = test_source_path(rel);
        json_t *j = json_load_file(path, 0, NULL);

        ASSERT_NOT_NULL(j);
        return j;
}

static char *fixture_text(const char *name, size_t *ret_len)
{
        _cleanup_free_ char *rel = xasprintf("tests/fixtures/probe/%s", name);
        _cleanup_free_ char *path = test_source_path(rel);

        return test_read_file(path, ret_len);
}

TEST(logprobs_forms_of_llama_server_and_vllm)
{
        json_auto_t *lc = fixture_json("llama-completions-logprobs.json");
        json_auto_t *lchat = fixture_json("llama-chat-logprobs.json");
        json_auto_t *vc = fixture_json("mxsim-vllm-completions-logprobs.json");
        json_auto_t *none = fixture_json("llama-completions-cached.json");
        _cleanup_free_ char *why = NULL;
        size_t n;

        /* the real llama-server answers /v1/completions in the content form, not the legacy arrays */
        ASSERT_STREQ(mx_probe_logprobs_form(lc, &n, &why), "content");
        ASSERT_EQ(n, 3u);
        ASSERT_STREQ(mx_probe_logprobs_form(lchat, &n, &why), "content");
        ASSERT_EQ(n, 2u);
        ASSERT_STREQ(mx_probe_logprobs_form(vc, &n, &why), "legacy");
        ASSERT_EQ(n, 2u);
        ASSERT_NULL(mx_probe_logprobs_form(none, &n, &why));
        ASSERT_CONTAINS(why, "null");
        free(why);
        why = NULL;
        /* legacy arrays of different lengths are no form at all */
        json_array_append_new(json_object_get(json_object_get(json_array_get(json_object_get(vc, "choices"), 0),
                                                              "logprobs"),
                                              "tokens"),
                              json_string("x"));
        ASSERT_NULL(mx_probe_logprobs_form(vc, &n, &why));
        ASSERT_CONTAINS(why, "different lengths");
}

TEST(context_from_props_models_meta_and_max_model_len)
{
        json_auto_t *lm = fixture_json("llama-models.json"), *lp = fixture_json("llama-props.json");
        json_auto_t *vm = fixture_json("mxsim-vllm-models.json");
        json_auto_t *empty = json_object();
        const char *src;
        int64_t n = 0;

        ASSERT_OK(mx_probe_context(lm, lp, &n, &src));
        ASSERT_EQ(n, 4096);
        ASSERT_CONTAINS(src, "/props");
        /* without /props: the n_ctx of /v1/models' meta (the real server has it; n_ctx_train is not it) */
        ASSERT_OK(mx_probe_context(lm, NULL, &n, &src));
        ASSERT_EQ(n, 4096);
        ASSERT_CONTAINS(src, "meta.n_ctx");
        ASSERT_OK(mx_probe_context(vm, NULL, &n, &src));
        ASSERT_EQ(n, 131072);
        ASSERT_CONTAINS(src, "max_model_len");
        ASSERT_ERR(mx_probe_context(empty, NULL, &n, &src), ENOENT);
}

TEST(prompt_reuse_of_a_cached_llama_reply)
{
        json_auto_t *cached = fixture_json("llama-completions-cached.json");
        json_auto_t *fresh = fixture_json("llama-completions-logprobs.json"); /* sent with cache_prompt: false */
        json_auto_t *vllm = fixture_json("mxsim-vllm-completions-logprobs.json");
        struct mx_probe_reuse r;

        mx_probe_reuse_of(cached, &r);
        ASSERT_EQ(r.prompt_tokens, 21);
        ASSERT_EQ(r.prompt_n, 1); /* llama-server evaluates the last prompt token again */
        ASSERT_EQ(r.cache_n, 20);
        ASSERT_EQ(r.cached_tokens, 20);
        mx_probe_reuse_of(fresh, &r);
        ASSERT_EQ(r.prompt_n, 21);
        ASSERT_EQ(r.cache_n, 0);
        ASSERT_EQ(r.cached_tokens, 0);
        /* vLLM without --enable-prompt-tokens-details says nothing: -1, not 0 */
        mx_probe_reuse_of(vllm, &r);
        ASSERT_EQ(r.prompt_n, -1);
        ASSERT_EQ(r.cached_tokens, -1);
}

TEST(streamed_usage_where_each_server_puts_it)
{
        struct mx_probe_stream_usage u;
        size_t len;
        _cleanup_free_ char *lcmpl = fixture_text("llama-completions-stream-usage.sse", &len);

        /* llama-server completions: usage on the finish chunk, only there, continuous stats ignored */
        ASSERT_OK(mx_probe_stream_usage_of(lcmpl, len, &u));
        ASSERT_EQ(u.with_usage, 1u);
        ASSERT_TRUE(u.usage_in_choices);
        ASSERT_FALSE(u.usage_chunk);
        ASSERT_EQ(u.completion_tokens, 3);
        ASSERT_TRUE(u.done);
        {
                _cleanup_free_ char *lchat = fixture_text("llama-chat-stream-usage.sse", &len);

                /* llama-server chat: a usage chunk of its own with choices: [] */
                ASSERT_OK(mx_probe_stream_usage_of(lchat, len, &u));
                ASSERT_EQ(u.with_usage, 1u);
                ASSERT_TRUE(u.usage_chunk);
                ASSERT_FALSE(u.usage_in_choices);
                ASSERT_EQ(u.events, 6u);
        }
        {
                _cleanup_free_ char *vchat = fixture_text("mxsim-vllm-chat-stream-usage.sse", &len);

                /* vLLM with continuous_usage_stats: usage on every chunk */
                ASSERT_OK(mx_probe_stream_usage_of(vchat, len, &u));
                ASSERT_EQ(u.with_usage, u.events);
                ASSERT_LT(1u, u.with_usage);
                ASSERT_TRUE(u.usage_chunk);
        }
}

TEST(prometheus_sums_over_labels)
{
        _cleanup_free_ char *vm = fixture_text("mxsim-vllm-metrics.txt", NULL);
        _cleanup_free_ char *lm = fixture_text("llama-metrics.txt", NULL);
        double v = -1;

        ASSERT_OK(mx_probe_prom_sum(vm, "vllm:prefix_cache_hits_total", &v));
        ASSERT_TRUE(v >= 0);
        /* a name that is a prefix of another is not that other */
        ASSERT_ERR(mx_probe_prom_sum(vm, "vllm:prefix_cache_hits", &v), ENOENT);
        ASSERT_OK(mx_probe_prom_sum("a{x=\"1\"} 2\na{x=\"2\"} 3.5\nab 7\n", "a", &v));
        ASSERT_TRUE(v == 5.5);
        ASSERT_OK(mx_probe_prom_sum(lm, "llamacpp:prompt_tokens_total", &v));
        ASSERT_TRUE(v > 0);
        ASSERT_ERR(mx_probe_prom_sum(lm, "vllm:prefix_cache_hits_total", &v), ENOENT);
}

TEST(result_failed_names_only_failed_checks)
{
        json_auto_t *doc = json_pack("{s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}", "checks", "check", "tokenize", "status",
                                     "fail", "line", "neither form", "check", "context", "status", "not measured",
                                     "line", "x");

        ASSERT_STREQ(mx_probe_result_failed(doc, "tokenize"), "neither form");
        ASSERT_NULL(mx_probe_result_failed(doc, "context"));
        ASSERT_NULL(mx_probe_result_failed(doc, "metrics"));
        ASSERT_NULL(mx_probe_result_failed(NULL, "tokenize"));
}

static void done_cb(struct mx_probe *p, void *ud)
{
        (void)p;
        event_base_loopbreak(ud);
}

TEST(a_server_that_does_not_answer_fails_and_measures_nothing)
{
        struct event_base *base = event_base_new();
        struct mx_probe_config cfg = { .url = "http://127.0.0.1:1", .timeout_ms = 5000 };
        _cleanup_(mx_probe_freep) struct mx_probe *p = NULL;
        _cleanup_free_ char *err = NULL;
        json_auto_t *doc = NULL;
        json_t *c;
        size_t i;

        ASSERT_ERR(mx_probe_new(base, &(struct mx_probe_config){ .url = "ftp://x" }, &p, &err), EINVAL);
        free(err);
        err = NULL;
        ASSERT_OK(mx_probe_new(base, &cfg, &p, &err));
        mx_probe_start(p, done_cb, base);
        event_base_dispatch(base);
        doc = mx_probe_result_json(p);
        ASSERT_EQ(mx_probe_failed(p), 1u);
        ASSERT_NOT_NULL(mx_probe_result_failed(doc, "server_kind"));
        json_array_foreach(json_object_get(doc, "checks"), i, c)
                if (!streq(json_string_value(json_object_get(c, "check")), "server_kind"))
                        ASSERT_STREQ(json_string_value(json_object_get(c, "status")), "not measured");
        ASSERT_EQ(json_array_size(json_object_get(doc, "checks")), 10u);
        p = mx_probe_free(p);
        event_base_free(base);
}
