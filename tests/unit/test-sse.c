/* SPDX-License-Identifier: MIT */
/* Server-sent event splitting: whole streams, streams cut at every byte, limits and errors. */
#include "test.h"

#include "sse.h"

#define EVENTS_MAX 32

struct rec {
        unsigned n;
        char *type[EVENTS_MAX];
        char *data[EVENTS_MAX];
        size_t len[EVENTS_MAX];
        bool done[EVENTS_MAX];
        int stop_at; /* return -ECANCELED for this event (1-based); 0: never */
};

static int rec_cb(const struct mx_sse_event *ev, void *userdata)
{
        struct rec *r = userdata;

        ASSERT_LT(r->n, EVENTS_MAX);
        ASSERT_EQ(strlen(ev->data), ev->data_len);
        r->type[r->n] = xstrdup(ev->type);
        r->data[r->n] = xstrndup(ev->data, ev->data_len);
        r->len[r->n] = ev->data_len;
        r->done[r->n] = mx_sse_is_done(ev);
        r->n++;
        return (int)r->n == r->stop_at ? -ECANCELED : 0;
}

static void rec_free(struct rec *r)
{
        for (unsigned i = 0; i < r->n; i++) {
                free(r->type[i]);
                free(r->data[i]);
        }
        *r = (struct rec){};
}

/* Parse text fed in pieces of at most piece bytes (0: all at once); returns mx_sse_finish(). */
static int parse(const char *text, size_t len, size_t piece, struct rec *r)
{
        struct mx_sse s;
        int fin;

        mx_sse_init(&s, 0);
        for (size_t i = 0; i < len;) {
                size_t n = piece ? MX_MIN(piece, len - i) : len;

                ASSERT_OK(mx_sse_feed(&s, text + i, n, rec_cb, r));
                i += n;
        }
        fin = mx_sse_finish(&s);
        mx_sse_done(&s);
        return fin;
}

static void assert_same(const struct rec *a, const struct rec *b)
{
        ASSERT_EQ(a->n, b->n);
        for (unsigned i = 0; i < a->n; i++) {
                ASSERT_STREQ(a->type[i], b->type[i]);
                ASSERT_EQ(a->len[i], b->len[i]);
                ASSERT_TRUE(memcmp(a->data[i], b->data[i], a->len[i]) == 0);
        }
}

/* A stream with every feature the parser handles, in the order vLLM and llama-server use them. */
static const char mixed[] = "\xEF\xBB\xBF"
                            ": ping\n"
                            "data: {\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"Hello\"}]}\n"
                            "\n"
                            "data:no-space\r\n"
                            "data:  two spaces\r\n"
                            "\r\n"
                            "event: error\n"
                            "id: 7\n"
                            "retry: 1000\n"
                            "unknown: x\n"
                            "data: {\"error\":{\"code\":500}}\n"
                            "\n"
                            "data\n"
                            "\n"
                            "event: lonely\n"
                            "\n"
                            "data: line1\rdata: line2\r\r"
                            "data: [DONE]\n"
                            "\n";

TEST(mixed_stream)
{
        struct rec r = {};

        ASSERT_EQ(parse(mixed, sizeof(mixed) - 1, 0, &r), 0);
        ASSERT_EQ(r.n, 6);
        ASSERT_STREQ(r.type[0], "message");
        ASSERT_STREQ(r.data[0], "{\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"Hello\"}]}");
        /* no space after the colon is fine; of two spaces only the first is dropped; lines join with LF */
        ASSERT_STREQ(r.data[1], "no-space\n two spaces");
        ASSERT_STREQ(r.type[2], "error");
        ASSERT_STREQ(r.data[2], "{\"error\":{\"code\":500}}");
        /* the type applies to one event only */
        ASSERT_STREQ(r.type[3], "message");
        ASSERT_STREQ(r.data[3], "");
        ASSERT_EQ(r.len[3], 0);
        /* an event: without data is not dispatched (and its type does not leak into the next) */
        ASSERT_STREQ(r.type[4], "message");
        ASSERT_STREQ(r.data[4], "line1\nline2");
        ASSERT_TRUE(r.done[5]);
        ASSERT_FALSE(r.done[4]);
        rec_free(&r);
}

TEST(any_split_gives_the_same_events)
{
        struct rec whole = {};

        parse(mixed, sizeof(mixed) - 1, 0, &whole);
        for (size_t piece = 1; piece <= 7; piece++) {
                struct rec r = {};

                ASSERT_EQ(parse(mixed, sizeof(mixed) - 1, piece, &r), 0);
                assert_same(&whole, &r);
                rec_free(&r);
        }
        /* every two-piece cut, including between CR and LF and inside the BOM */
        for (size_t cut = 0; cut <= sizeof(mixed) - 1; cut++) {
                struct rec r = {};
                struct mx_sse s;

                mx_sse_init(&s, 0);
                ASSERT_OK(mx_sse_feed(&s, mixed, cut, rec_cb, &r));
                ASSERT_OK(mx_sse_feed(&s, mixed + cut, sizeof(mixed) - 1 - cut, rec_cb, &r));
                ASSERT_EQ(mx_sse_finish(&s), 0);
                mx_sse_done(&s);
                assert_same(&whole, &r);
                rec_free(&r);
        }
        rec_free(&whole);
}

TEST(crlf_split_is_one_line_end)
{
        struct rec r = {};
        struct mx_sse s;

        /* CR ends one piece and LF starts the next: one line end, so the two data lines form one event */
        mx_sse_init(&s, 0);
        ASSERT_OK(mx_sse_feed(&s, "data: a\r", 8, rec_cb, &r));
        ASSERT_EQ(r.n, 0);
        ASSERT_OK(mx_sse_feed(&s, "\ndata: b\r\n\r\n", 12, rec_cb, &r));
        ASSERT_EQ(r.n, 1);
        ASSERT_STREQ(r.data[0], "a\nb");
        mx_sse_done(&s);
        rec_free(&r);
}

TEST(bom_only_at_start)
{
        static const char late_bom[] = "data: x\n\n\xEF\xBB\xBF"
                                       "data: y\n\n";
        static const char partial_bom[] = "\xEF\xBB"
                                          "data: z\n\n";
        struct rec r = {};

        /* later, the same bytes are part of a line: a field name nobody knows, so ignored */
        ASSERT_EQ(parse(late_bom, sizeof(late_bom) - 1, 0, &r), 0);
        ASSERT_EQ(r.n, 1);
        ASSERT_STREQ(r.data[0], "x");
        rec_free(&r);
        /* two bytes of a BOM are not a BOM: they stay in the line */
        ASSERT_EQ(parse(partial_bom, sizeof(partial_bom) - 1, 1, &r), 0);
        ASSERT_EQ(r.n, 0);
        rec_free(&r);
}

TEST(done_marker_exact)
{
        static const char s[] = "data: [DONE] \n\ndata:[DONE]\n\ndata: [done]\n\n";
        struct rec r = {};

        parse(s, sizeof(s) - 1, 0, &r);
        ASSERT_EQ(r.n, 3);
        ASSERT_FALSE(r.done[0]);
        ASSERT_TRUE(r.done[1]);
        ASSERT_FALSE(r.done[2]);
        rec_free(&r);
}

TEST(unfinished_event_is_dropped)
{
        static const char s[] = "data: complete\n\ndata: half";
        struct rec r = {};

        ASSERT_EQ(parse(s, sizeof(s) - 1, 0, &r), 1);
        ASSERT_EQ(r.n, 1);
        rec_free(&r);
        /* a data line without the blank line that ends the event is dropped too */
        ASSERT_EQ(parse("data: x\n", 8, 0, &r), 1);
        ASSERT_EQ(r.n, 0);
        ASSERT_EQ(parse("", 0, 0, &r), 0);
        ASSERT_EQ(parse(": only a comment\n", 17, 0, &r), 0);
        rec_free(&r);
}

TEST(limits)
{
        struct rec r = {};
        struct mx_sse s;
        char line[200];

        /* one line longer than the limit, even in pieces */
        mx_sse_init(&s, 100);
        memset(line, 'x', sizeof(line));
        ASSERT_OK(mx_sse_feed(&s, "data: ", 6, rec_cb, &r));
        ASSERT_OK(mx_sse_feed(&s, line, 90, rec_cb, &r));
        ASSERT_ERR(mx_sse_feed(&s, line, 10, rec_cb, &r), E2BIG);
        /* sticky */
        ASSERT_ERR(mx_sse_feed(&s, "\n\n", 2, rec_cb, &r), E2BIG);
        ASSERT_EQ(r.n, 0);
        mx_sse_done(&s);

        /* many short data lines adding up to more than the limit (each adds 9 bytes and a LF) */
        mx_sse_init(&s, 100);
        for (int i = 0; i < 10; i++)
                ASSERT_OK(mx_sse_feed(&s, "data: 123456789\n", 16, rec_cb, &r));
        ASSERT_ERR(mx_sse_feed(&s, "data: 123456789\n", 16, rec_cb, &r), E2BIG);
        mx_sse_done(&s);

        /* a line of exactly the limit is fine */
        mx_sse_init(&s, 100);
        memset(line, 'y', 95);
        ASSERT_OK(mx_sse_feed(&s, "data:", 5, rec_cb, &r));
        ASSERT_OK(mx_sse_feed(&s, line, 95, rec_cb, &r));
        ASSERT_OK(mx_sse_feed(&s, "\n\n", 2, rec_cb, &r));
        ASSERT_EQ(r.n, 1);
        ASSERT_EQ(r.len[0], 95);
        mx_sse_done(&s);
        rec_free(&r);
}

TEST(callback_stops_parsing)
{
        static const char s3[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
        struct rec r = { .stop_at = 2 };
        struct mx_sse s;

        mx_sse_init(&s, 0);
        ASSERT_ERR(mx_sse_feed(&s, s3, sizeof(s3) - 1, rec_cb, &r), ECANCELED);
        ASSERT_EQ(r.n, 2);
        ASSERT_ERR(mx_sse_feed(&s, s3, sizeof(s3) - 1, rec_cb, &r), ECANCELED);
        ASSERT_EQ(r.n, 2);
        mx_sse_done(&s);
        rec_free(&r);
}

TEST(vllm_completion_stream)
{
        /* the shape vLLM streams for /v1/completions with stream_options.include_usage */
        static const char s[] =
                "data: "
                "{\"id\":\"cmpl-a\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" "
                "Paris\","
                "\"finish_reason\":null}],\"usage\":null}\n\n"
                "data: "
                "{\"id\":\"cmpl-a\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\".\","
                "\"finish_reason\":\"length\"}],\"usage\":null}\n\n"
                "data: {\"id\":\"cmpl-a\",\"object\":\"text_completion\",\"choices\":[],"
                "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n"
                "data: [DONE]\n\n";
        struct rec r = {};
        struct mx_buf text = MX_BUF_INIT;
        json_int_t completion_tokens = -1;

        ASSERT_EQ(parse(s, sizeof(s) - 1, 13, &r), 0);
        ASSERT_EQ(r.n, 4);
        for (unsigned i = 0; i < r.n && !r.done[i]; i++) {
                json_error_t err;
                json_t *j = json_loadb(r.data[i], r.len[i], 0, &err);
                json_t *choices;

                ASSERT_NOT_NULL(j);
                choices = json_object_get(j, "choices");
                if (json_array_size(choices) > 0)
                        mx_buf_puts(&text,
                                    json_string_value(json_object_get(json_array_get(choices, 0), "text")));
                if (json_is_object(json_object_get(j, "usage")))
                        completion_tokens = json_integer_value(
                                json_object_get(json_object_get(j, "usage"), "completion_tokens"));
                json_decref(j);
        }
        ASSERT_STREQ(text.data, " Paris.");
        ASSERT_EQ(completion_tokens, 2);
        ASSERT_TRUE(r.done[3]);
        mx_buf_free(&text);
        rec_free(&r);
}
