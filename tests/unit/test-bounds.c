/* SPDX-License-Identifier: MIT */
/*
 * Bounds of the control socket against a real mxmatrixd (issue 7, item 7):
 * an idle connection after hello is closed after limits.idle_timeout_ms while
 * one that keeps asking, and a follow subscriber, stay; request ids are
 * checked as schema/protocol.json's types.request_id says.
 */
#include "protocol.h"
#include "testd.h"

#include <inttypes.h>
#include <signal.h>

static const char *reply_error_code(json_t *reply)
{
        return json_string_value(json_object_get(json_object_get(reply, "error"), "code"));
}

static const char *config_file(const char *name, const char *body)
{
        char *path = xasprintf("%s/%s.json", test_tmpdir(), name);

        test_write_file(path, body);
        return path;
}

TEST(idle_connection_times_out_but_busy_ones_and_subscribers_stay)
{
        const char *cfg = config_file("idle", "{\"limits\": {\"idle_timeout_ms\": 1000}}");
        _cleanup_free_ char *m = test_source_path("tests/fixtures/daemon/command.json");
        _cleanup_free_ char *marg = xasprintf("--matrix=%s", m), *line = NULL, *follow_req = NULL;
        const char *const args[] = { "--config", cfg, marg, NULL };
        const char *const env[] = { "SLEEP=1000", NULL };
        _cleanup_json_ json_t *p = json_pack("{s:s,s:{s:s}}", "feature", "fast", "pins", "mode", "sleep");
        _cleanup_json_ json_t *r = NULL;
        int64_t start = mx_now_mono_us(), job;
        struct testd t;
        int idle, busy, sub;

        testd_start(&t, "idle", args, env);
        idle = testd_session(&t);
        busy = testd_session(&t);
        sub = testd_session(&t);
        r = testd_request(busy, "submit", p);
        job = json_integer_value(json_object_get(json_object_get(r, "result"), "job"));
        ASSERT_TRUE(job > 0);
        follow_req = xasprintf("{\"id\":9,\"method\":\"follow\",\"params\":{\"job\":%" PRId64 "}}\n", job);
        testd_send(sub, follow_req);
        /* 3 s: three times the limit. The busy client asks every 300 ms; the subscriber only listens. */
        while (mx_now_mono_us() - start < 3 * 1000 * 1000) {
                _cleanup_json_ json_t *s = testd_request(busy, "status", NULL);

                ASSERT_NOT_NULL(json_object_get(s, "result"));
                usleep(300000);
        }
        line = testd_recv_line(idle, 5000);
        ASSERT_NOT_NULL(line);
        ASSERT_CONTAINS(line, "limit-exceeded");
        ASSERT_CONTAINS(line, "idle_timeout_ms");
        ASSERT_TRUE(testd_closed(idle, 2000));
        /* The subscriber is still there: cancelling the job reaches it and ends its follow. */
        {
                _cleanup_json_ json_t *c = json_pack("{s:I}", "job", (json_int_t)job);
                _cleanup_json_ json_t *cr = testd_request(busy, "cancel", c);
                bool ended = false;

                ASSERT_NOT_NULL(json_object_get(cr, "result"));
                for (int i = 0; i < 200 && !ended; i++) {
                        _cleanup_free_ char *l = testd_recv_line(sub, 30000);

                        ASSERT_NOT_NULL(l);
                        ended = strstr(l, "\"result\"") != NULL;
                }
                ASSERT_TRUE(ended);
        }
        close(idle);
        close(busy);
        close(sub);
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
        free((char *)cfg);
}

TEST(request_ids_as_protocol_json_says)
{
        static const char *const bad[] = {
                "{\"id\":\"abc\",\"method\":\"hello\",\"params\":{\"protocol\":1}}\n",
                "{\"id\":0,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n",
                "{\"id\":-3,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n",
                "{\"id\":1.5,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n",
                "{\"id\":9007199254740992,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n",
                "{\"id\":null,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n",
                "{\"method\":\"hello\",\"params\":{\"protocol\":1}}\n",
        };
        const struct mx_proto *p = mx_proto_get();
        struct testd t;

        /* The rule is data in protocol.json, and it is what the about text says: "id": N. */
        ASSERT_NOT_NULL(json_object_get(p->types, "request_id"));
        testd_start(&t, "ids", NULL, NULL);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int fd = testd_connect(&t);
                _cleanup_free_ char *line = NULL;
                _cleanup_json_ json_t *j = NULL;

                testd_send(fd, bad[i]);
                line = testd_recv_line(fd, 5000);
                ASSERT_NOT_NULL(line);
                j = json_loads(line, 0, NULL);
                ASSERT_NOT_NULL(j);
                ASSERT_STREQ(reply_error_code(j), "bad-request");
                ASSERT_CONTAINS(line, "request_id");
                /* An invalid id is not echoed back. */
                ASSERT_TRUE(json_is_null(json_object_get(j, "id")));
                ASSERT_TRUE(testd_closed(fd, 2000));
                close(fd);
        }
        /* The largest valid id is echoed exactly. */
        {
                int fd = testd_connect(&t);
                _cleanup_free_ char *line = NULL;
                _cleanup_json_ json_t *j = NULL;

                testd_send(fd, "{\"id\":9007199254740991,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n");
                line = testd_recv_line(fd, 5000);
                ASSERT_NOT_NULL(line);
                j = json_loads(line, 0, NULL);
                ASSERT_NOT_NULL(json_object_get(j, "result"));
                ASSERT_EQ(json_integer_value(json_object_get(j, "id")), 9007199254740991LL);
                close(fd);
        }
        ASSERT_EQ(testd_stop(&t, SIGTERM), 0);
        testd_done(&t);
}
