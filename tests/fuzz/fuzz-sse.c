/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the server-sent events splitter (loadgen/sse.c), as the
 * daemon feeds it: a completion's stream arriving in pieces cut anywhere.
 * The same bytes are split into events three times: in one piece, one byte at
 * a time, and in pieces of pseudo-random sizes; the events (type and data),
 * the error and the end-of-stream answer must be the same every time. Each
 * event's data is NUL-terminated at data_len and within the limit.
 *
 * Input: byte 0 picks the limit on lines and event data (0: the default, else
 * small, so the E2BIG paths are reached), byte 1 seeds the piece sizes, the rest
 * is the stream.
 */
#include "sse.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                            \
        do {                                                                                                \
                if (!(x)) {                                                                                 \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #x);               \
                        abort();                                                                            \
                }                                                                                           \
        } while (0)

/* What one split produced: every event as "type\0data" records, then the result codes. */
struct record {
        struct mx_buf events;
        size_t n_events;
        size_t max_event;
        int error;
        int finish;
};

static int record_cb(const struct mx_sse_event *ev, void *userdata)
{
        struct record *r = userdata;
        size_t tlen;

        CHECK(ev->type && ev->data);
        CHECK(ev->data[ev->data_len] == '\0');
        CHECK(ev->data_len < r->max_event);
        tlen = strlen(ev->type);
        CHECK(tlen < r->max_event);
        mx_buf_add(&r->events, &tlen, sizeof(tlen));
        mx_buf_add(&r->events, ev->type, tlen);
        mx_buf_add(&r->events, &ev->data_len, sizeof(ev->data_len));
        mx_buf_add(&r->events, ev->data, ev->data_len);
        r->n_events++;
        (void)mx_sse_is_done(ev);
        return 0;
}

/* Split text with pieces from next_piece (0: the rest at once). */
static void split(const uint8_t *text, size_t len, size_t max_event, unsigned seed, int mode, struct record *r)
{
        struct mx_sse s;
        size_t at = 0;

        *r = (struct record){ .max_event = max_event ? MX_MIN(max_event, (size_t)MX_SSE_EVENT_MAX)
                                                     : MX_SSE_EVENT_DEFAULT };
        mx_sse_init(&s, max_event);
        while (at < len) {
                size_t piece = mode == 0 ? len - at : mode == 1 ? 1 : 1 + (seed = seed * 1103515245u + 12345u) % 17;
                int k;

                piece = MX_MIN(piece, len - at);
                k = mx_sse_feed(&s, text + at, piece, record_cb, r);
                at += piece;
                if (k < 0) {
                        CHECK(k == -E2BIG);
                        r->error = k;
                        /* the error is sticky */
                        CHECK(mx_sse_feed(&s, "data: x\n\n", 9, record_cb, r) == k);
                        break;
                }
        }
        r->finish = r->error ? 0 : mx_sse_finish(&s);
        CHECK(r->finish == 0 || r->finish == 1);
        mx_sse_done(&s);
}

static void same(const struct record *a, const struct record *b)
{
        CHECK(a->n_events == b->n_events);
        CHECK(a->events.len == b->events.len);
        CHECK(a->events.len == 0 || memcmp(a->events.data, b->events.data, a->events.len) == 0);
        CHECK(a->error == b->error);
        CHECK(a->finish == b->finish);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct record whole, bytes, pieces;
        size_t max_event;

        if (size < 2 || size > 1 << 18)
                return 0;
        max_event = data[0] == 0 ? 0 : 8 + (size_t)data[0] * 4;
        split(data + 2, size - 2, max_event, data[1], 0, &whole);
        split(data + 2, size - 2, max_event, data[1], 1, &bytes);
        split(data + 2, size - 2, max_event, data[1], 2, &pieces);
        same(&whole, &bytes);
        same(&whole, &pieces);
        mx_buf_free(&whole.events);
        mx_buf_free(&bytes.events);
        mx_buf_free(&pieces.events);
        return 0;
}
