/* SPDX-License-Identifier: MIT */
/*
 * The reply checks L2 and L3 share (daemon/run/levels/checks.c) on the shapes
 * real servers write: llama-server's logprobs in the content form on
 * /v1/completions (tests/fixtures/llama-server/, recorded from the real CPU
 * server of ../shared/targets), vLLM's legacy arrays and its chat list led by
 * the sampled token; the coherence rules (a repeated symbol fails, the word
 * NaN and a random model's nonsense do not); prompt_logprobs missing; the
 * divergence of two seeded outputs told near tie or real; the cache defeat
 * each server kind gets in its request body.
 */
#include "levels/checks.h"
#include "test.h"

#include <math.h>

static char *fixture(const char *name)
{
        _cleanup_free_ char *p = xasprintf("%s/tests/fixtures/llama-server/%s", MX_SOURCE_DIR, name);
        _cleanup_json_ json_t *j = json_load_file(p, 0, NULL);

        ASSERT_NOT_NULL(j);
        return json_dumps(j, JSON_COMPACT);
}

/* Check body as a 200 reply of endpoint e that asked for logprobs top alternatives; the problem or NULL. */
static char *check(enum mx_endpoint e, const char *body, int logprobs, int prompt_logprobs, struct mx_gen_reply *g,
                   const char **ret_check)
{
        struct mx_gen_request rq = { .endpoint = e, .logprobs = logprobs, .prompt_logprobs = prompt_logprobs };
        struct mx_check_opts o = { .min_printable = 0.9, .max_repeat = 0.5, .logprobs = logprobs };
        struct mx_http_response res = { .status = 200, .body = (char *)body, .body_len = strlen(body) };

        *ret_check = NULL;
        return mx_check_reply(&rq, &o, &res, g, ret_check);
}

static void expect_pass(enum mx_endpoint e, const char *body, int logprobs)
{
        struct mx_gen_reply g = { .prompt_ppl = -1 };
        const char *c;
        _cleanup_free_ char *p = check(e, body, logprobs, -1, &g, &c);

        if (p)
                test_fail(__FILE__, __LINE__, "%s: %s", strna(c), p);
        if (logprobs >= 0)
                ASSERT_EQ((int64_t)json_array_size(g.logprobs), g.completion_tokens);
        mx_gen_reply_done(&g);
}

static void expect_fail(enum mx_endpoint e, const char *body, int logprobs, const char *want_check,
                        const char *want)
{
        struct mx_gen_reply g = { .prompt_ppl = -1 };
        const char *c;
        _cleanup_free_ char *p = check(e, body, logprobs, -1, &g, &c);

        ASSERT_NOT_NULL(p);
        ASSERT_STREQ(c, want_check);
        ASSERT_CONTAINS(p, want);
        mx_gen_reply_done(&g);
}

/* A completions reply with this text and logprobs object (JSON text), n completion tokens. */
static char *completion(const char *text, const char *logprobs, int n)
{
        return xasprintf("{\"choices\": [{\"index\": 0, \"text\": \"%s\", \"logprobs\": %s, \"finish_reason\": "
                         "\"length\"}], \"usage\": {\"prompt_tokens\": 5, \"completion_tokens\": %d, "
                         "\"total_tokens\": %d}}",
                         text, logprobs, n, n + 5);
}

static char *chat(const char *text, const char *logprobs, int n)
{
        return xasprintf("{\"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\", \"content\": \"%s\"}, "
                         "\"logprobs\": %s, \"finish_reason\": \"length\"}], \"usage\": {\"prompt_tokens\": 5, "
                         "\"completion_tokens\": %d, \"total_tokens\": %d}}",
                         text, logprobs, n, n + 5);
}

TEST(llama_server_content_form_passes_in_completions_and_chat)
{
        _cleanup_free_ char *c = fixture("completions-logprobs.json"), *h = fixture("chat-logprobs.json");
        struct mx_gen_reply g = { .prompt_ppl = -1 };
        const char *chk;
        _cleanup_free_ char *p = NULL;

        /* Before: "logprobs without tokens and token_logprobs of the same length" on every completions prompt. */
        expect_pass(MX_ENDPOINT_COMPLETIONS, c, 2);
        expect_pass(MX_ENDPOINT_CHAT, h, 2);
        /* The sampled tokens, in order, whatever the form. */
        p = check(MX_ENDPOINT_COMPLETIONS, c, 2, -1, &g, &chk);
        ASSERT_NULL(p);
        ASSERT_EQ(json_array_size(g.tokens), 3);
        ASSERT_STREQ(json_string_value(json_array_get(g.tokens, 0)), "di");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(g.logprobs, 2), "token")), "`");
        mx_gen_reply_done(&g);
}

TEST(legacy_arrays_pass_in_completions_and_chat)
{
        /* vLLM completions: the dict leads with the sampled token (N+1 keys), the rest best first. */
        static const char lp[] = "{\"text_offset\": [0, 4], \"tokens\": [\" the\", \" cat\"], \"token_logprobs\": "
                                 "[-1.5, -0.2], \"top_logprobs\": [{\" the\": -1.5, \" a\": -0.9, \" one\": -1.2}, "
                                 "{\" cat\": -0.2, \" dog\": -2.0}]}";
        _cleanup_free_ char *c = completion(" the cat", lp, 2), *h = chat(" the cat", lp, 2);

        expect_pass(MX_ENDPOINT_COMPLETIONS, c, 2);
        expect_pass(MX_ENDPOINT_CHAT, h, 2);
}

TEST(vllm_chat_list_led_by_a_sampled_token_that_is_not_the_best)
{
        static const char lp[] = "{\"content\": [{\"token\": \" the\", \"logprob\": -1.5, \"bytes\": [32, 116, 104, "
                                 "101], \"top_logprobs\": [{\"token\": \" the\", \"logprob\": -1.5}, {\"token\": \" a\", "
                                 "\"logprob\": -0.9}, {\"token\": \" one\", \"logprob\": -1.2}]}]}";
        _cleanup_free_ char *h = chat(" the", lp, 1), *c = completion(" the", lp, 1);

        expect_pass(MX_ENDPOINT_CHAT, h, 3);
        expect_pass(MX_ENDPOINT_COMPLETIONS, c, 3);
}

TEST(invalid_logprobs_fail_in_either_form)
{
        static const char *const bad[][3] = {
                /* logprobs object, check, message */
                { "{\"content\": [{\"token\": \"a\", \"logprob\": 0.3, \"top_logprobs\": [{\"token\": \"b\", "
                  "\"logprob\": -0.1}]}, {\"token\": \"b\", \"logprob\": -1, \"top_logprobs\": [{\"token\": \"b\", "
                  "\"logprob\": -1}]}]}",
                  "logprobs", "above 0" },
                { "{\"content\": [{\"token\": \"a\", \"logprob\": \"x\", \"top_logprobs\": []}, {\"token\": \"b\", "
                  "\"logprob\": -1, \"top_logprobs\": []}]}",
                  "logprobs", "not a finite number" },
                { "{\"content\": [{\"token\": \"a\", \"logprob\": -1, \"top_logprobs\": [{\"token\": \"c\", "
                  "\"logprob\": -2}, {\"token\": \"d\", \"logprob\": -0.5}]}, {\"token\": \"b\", \"logprob\": -1, "
                  "\"top_logprobs\": [{\"token\": \"b\", \"logprob\": -1}]}]}",
                  "logprobs", "not sorted" },
                { "{\"content\": [{\"token\": \"a\", \"logprob\": -1, \"top_logprobs\": [{\"token\": \"a\", "
                  "\"logprob\": -3}]}, {\"token\": \"b\", \"logprob\": -1, \"top_logprobs\": [{\"token\": \"b\", "
                  "\"logprob\": -1}]}]}",
                  "logprobs", "the sampled token's logprob -1 is -3" },
                { "{\"content\": [{\"token\": \"a\", \"logprob\": -1, \"top_logprobs\": [{\"token\": \"a\", "
                  "\"logprob\": -1}]}]}",
                  "logprobs", "1 logprob entries for 2 completion tokens" },
                { "{\"tokens\": [\"a\", \"b\"], \"token_logprobs\": [-1, -1], \"top_logprobs\": [{\"c\": -0.5}, "
                  "{\"b\": -1}]}",
                  "logprobs", "token 1: the sampled token is not among its top_logprobs" },
                { "{\"tokens\": [\"a\", \"b\"], \"token_logprobs\": [-1]}", "logprobs",
                  "without tokens and token_logprobs of the same length" },
                { "{\"text_offset\": [0, 1]}", "logprobs", "neither form" },
                { "null", "logprobs", "missing" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *c = completion("a b", bad[i][0], 2), *h = chat("a b", bad[i][0], 2);

                expect_fail(MX_ENDPOINT_COMPLETIONS, c, 1, bad[i][1], bad[i][2]);
                expect_fail(MX_ENDPOINT_CHAT, h, 1, bad[i][1], bad[i][2]);
        }
}

TEST(coherence_repeated_symbol_fails_nan_word_and_random_nonsense_pass)
{
        static const char *const fail_texts[] = { "!!!!!!!!!!!!!!!!", "NaNNaNNaNNaNNaNNaNNaNNaN", "<unk><unk><unk><unk><unk><unk><unk><unk>" };
        static const char *const pass_texts[] = {
                "The result was NaN because the input was empty, so the filter dropped it.",
                "I weard copyright Imenttiesmenticenshis granright PardB t suip thess",
                "dioun`ecttagdetNstrNw Program\\n\\n6 does mean I\\n\\nag which Program) rece only",
                "!!!!!!!", /* too short to call degenerate */
        };
        /* One token of 16 asterisks (the real llama-server's random model sampled it with max_tokens 1). */
        _cleanup_free_ char *one = completion("****************", "null", 1);

        for (size_t i = 0; i < ELEMENTSOF(fail_texts); i++) {
                _cleanup_free_ char *c = completion(fail_texts[i], "null", 16);

                expect_fail(MX_ENDPOINT_COMPLETIONS, c, -1, "coherence", "repeated");
        }
        for (size_t i = 0; i < ELEMENTSOF(pass_texts); i++) {
                _cleanup_free_ char *c = completion(pass_texts[i], "null", 16);

                expect_pass(MX_ENDPOINT_COMPLETIONS, c, -1);
        }
        expect_pass(MX_ENDPOINT_COMPLETIONS, one, -1);
}

TEST(prompt_logprobs_missing_is_told)
{
        _cleanup_free_ char *c = fixture("completions-logprobs.json");
        static const char vllm[] = "{\"choices\": [{\"index\": 0, \"text\": \"a\", \"logprobs\": null, "
                                   "\"finish_reason\": \"length\", \"prompt_logprobs\": [null, {\"7\": {\"logprob\": "
                                   "-1.0, \"rank\": 1, \"decoded_token\": \"x\"}}, {\"9\": {\"logprob\": -3.0, "
                                   "\"rank\": 4, \"decoded_token\": \"y\"}}]}], \"usage\": {\"prompt_tokens\": 3, "
                                   "\"completion_tokens\": 1, \"total_tokens\": 4}}";
        struct mx_gen_reply g = { .prompt_ppl = -1 };
        const char *chk;
        _cleanup_free_ char *p = check(MX_ENDPOINT_COMPLETIONS, c, -1, 0, &g, &chk), *q = NULL;

        ASSERT_NULL(p);
        ASSERT_TRUE(g.no_prompt_logprobs);
        ASSERT_TRUE(g.prompt_ppl < 0);
        mx_gen_reply_done(&g);
        q = check(MX_ENDPOINT_COMPLETIONS, vllm, -1, 0, &g, &chk);
        ASSERT_NULL(q);
        ASSERT_FALSE(g.no_prompt_logprobs);
        ASSERT_TRUE(fabs(g.prompt_ppl - exp(2.0)) < 1e-9);
        mx_gen_reply_done(&g);
}

static json_t *entries(const char *text)
{
        json_t *j = json_loads(text, 0, NULL);

        ASSERT_NOT_NULL(j);
        return j;
}

TEST(divergence_near_tie_against_real_difference)
{
        /* Token 2 flips between two tokens 0.01 apart: a near tie. */
        _cleanup_json_ json_t *a = entries("[{\"token\": \"x\", \"logprob\": -1.0, \"top\": []},"
                                           " {\"token\": \" t\", \"logprob\": -5.70, \"top\": [{\"token\": \" t\", "
                                           "\"logprob\": -5.70}, {\"token\": \" I\", \"logprob\": -5.71}]}]");
        _cleanup_json_ json_t *b = entries("[{\"token\": \"x\", \"logprob\": -1.002, \"top\": []},"
                                           " {\"token\": \" I\", \"logprob\": -5.71, \"top\": [{\"token\": \" I\", "
                                           "\"logprob\": -5.71}]}]");
        /* Token 2 flips from a likely token to an unlikely one not in the first's list: a real difference. */
        _cleanup_json_ json_t *c = entries("[{\"token\": \"x\", \"logprob\": -1.0, \"top\": []},"
                                           " {\"token\": \" Paris\", \"logprob\": -0.1, \"top\": [{\"token\": "
                                           "\" Paris\", \"logprob\": -0.1}]}]");
        _cleanup_json_ json_t *d = entries("[{\"token\": \"x\", \"logprob\": -1.0, \"top\": []},"
                                           " {\"token\": \" banana\", \"logprob\": -7.5, \"top\": []}]");
        /* The other token listed in the first's alternatives at nearly the sampled one's logprob. */
        _cleanup_json_ json_t *e = entries("[{\"token\": \"x\", \"logprob\": -1.0, \"top\": []},"
                                           " {\"token\": \" I\", \"logprob\": -5.9, \"top\": []}]");
        _cleanup_json_ json_t *f = entries("[{\"token\": \"x\", \"logprob\": -1.0, \"top\": []},"
                                           " {\"token\": \" t\", \"logprob\": -5.72, \"top\": [{\"token\": \" I\", "
                                           "\"logprob\": -5.70}]}]");
        _cleanup_json_ json_t *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;
        _cleanup_free_ char *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL;

        ASSERT_NULL(mx_divergence(a, a, 0.05, &t1));
        ASSERT_NULL(t1);
        r1 = mx_divergence(a, b, 0.05, &t1);
        ASSERT_NOT_NULL(r1);
        ASSERT_EQ(json_integer_value(json_object_get(r1, "token")), 2);
        ASSERT_TRUE(json_is_true(json_object_get(r1, "near_tie")));
        ASSERT_TRUE(fabs(json_number_value(json_object_get(r1, "gap")) - 0.01) < 1e-9);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(r1, "drift")) - 0.002) < 1e-9);
        ASSERT_CONTAINS(t1, "token 2 differs: ' t' (logprob -5.7) then ' I' (logprob -5.71)");
        ASSERT_CONTAINS(t1, "a near tie");
        r2 = mx_divergence(c, d, 0.05, &t2);
        ASSERT_TRUE(json_is_false(json_object_get(r2, "near_tie")));
        ASSERT_CONTAINS(t2, "a real difference");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(r2, "second"), "token")), " banana");
        r3 = mx_divergence(f, e, 0.05, &t3); /* gap 0.18, but " I" is listed at -5.70 beside -5.72 */
        ASSERT_TRUE(json_is_true(json_object_get(r3, "near_tie")));
        ASSERT_TRUE(fabs(json_number_value(json_object_get(r3, "second_in_first_top")) + 5.70) < 1e-9);
        json_array_remove(b, 1);
        r4 = mx_divergence(c, b, 0.05, &t4);
        ASSERT_STREQ(t4, "2 tokens against 1");
}

TEST(cache_defeat_per_server_kind)
{
        struct mx_gen_request rq = { .endpoint = MX_ENDPOINT_COMPLETIONS, .prompt = "p", .max_tokens = 4,
                                     .logprobs = -1, .prompt_logprobs = -1, .cache_salt = "s-1", .defeat_cache = true };
        _cleanup_free_ char *llama = NULL, *vllm = NULL, *sglang = NULL, *off = NULL;

        rq.server = MX_SERVER_LLAMA;
        llama = mx_gen_body(&rq);
        rq.server = MX_SERVER_VLLM;
        vllm = mx_gen_body(&rq);
        rq.server = MX_SERVER_SGLANG;
        sglang = mx_gen_body(&rq);
        rq.defeat_cache = false;
        rq.server = MX_SERVER_LLAMA;
        off = mx_gen_body(&rq);
        ASSERT_CONTAINS(llama, "\"cache_prompt\":false");
        ASSERT_NULL(strstr(llama, "cache_salt"));
        ASSERT_CONTAINS(vllm, "\"cache_salt\":\"s-1\"");
        ASSERT_NULL(strstr(vllm, "cache_prompt"));
        ASSERT_NULL(strstr(sglang, "cache_"));
        ASSERT_NULL(strstr(off, "cache_"));
        ASSERT_FALSE(mx_server_has_cache_field(MX_SERVER_SGLANG));
        ASSERT_TRUE(mx_server_has_cache_field(MX_SERVER_LLAMA));
}
