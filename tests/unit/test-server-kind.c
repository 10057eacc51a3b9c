/* SPDX-License-Identifier: MIT */
/*
 * Server kinds: the exact-length request fields (min_tokens with ignore_eos, so that gpt-oss cannot end
 * its Harmony turn), and vLLM's ignore_eos failure (vllm#50690) named as the server's known issue, in the
 * replies L2 and L3 check.
 */
#include "test.h"

#include "levels/checks.h"
#include "server-kind.h"

#define HARMONY_500                                                                                         \
        "{\"error\": {\"message\": \"Unexpected token 200002 while expecting start token 200006\", \"type\": " \
        "\"InternalServerError\", \"param\": null, \"code\": 500}}"

TEST(exact_tokens_masks_stop_ids)
{
        _cleanup_json_ json_t *b = json_object();

        mx_server_exact_tokens(b, 32);
        ASSERT_TRUE(json_is_true(json_object_get(b, "ignore_eos")));
        ASSERT_EQ(json_integer_value(json_object_get(b, "min_tokens")), 32);
}

TEST(known_issue_recognised)
{
        ASSERT_CONTAINS(mx_server_known_issue(HARMONY_500), "vllm#50690");
        ASSERT_TRUE(mx_server_known_issue("EngineCore encountered an issue") == NULL);
        ASSERT_TRUE(mx_server_known_issue(NULL) == NULL);
}

TEST(check_reply_names_known_issue)
{
        struct mx_gen_request rq = {.endpoint = MX_ENDPOINT_CHAT, .prompt = "hi", .max_tokens = 16,
                                    .ignore_eos = true, .logprobs = -1, .prompt_logprobs = -1};
        struct mx_check_opts o = {.expect_tokens = 16, .logprobs = -1};
        struct mx_http_response res = {.status = 500, .body = (char *)HARMONY_500, .body_len = strlen(HARMONY_500)};
        struct mx_gen_reply g;
        const char *check = NULL;
        _cleanup_free_ char *why = mx_check_reply(&rq, &o, &res, &g, &check), *body = mx_gen_body(&rq);
        _cleanup_json_ json_t *b = json_loads(body, 0, NULL);

        ASSERT_STREQ(check, "known-issue");
        ASSERT_CONTAINS(why, "server known issue vllm#50690");
        ASSERT_CONTAINS(why, "Unexpected token 200002");
        mx_gen_reply_done(&g);
        /* the request that avoids it: min_tokens = max_tokens beside ignore_eos */
        ASSERT_EQ(json_integer_value(json_object_get(b, "min_tokens")), 16);
        ASSERT_TRUE(json_is_true(json_object_get(b, "ignore_eos")));
        /* any other 500 stays an HTTP failure */
        res.body = (char *)"{\"error\": {\"message\": \"boom\"}}";
        res.body_len = strlen(res.body);
        free(why);
        why = mx_check_reply(&rq, &o, &res, &g, &check);
        ASSERT_STREQ(check, "http");
        mx_gen_reply_done(&g);
}
