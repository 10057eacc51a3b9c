/* SPDX-License-Identifier: MIT */
/*
 * Splitting a text/event-stream (server-sent events, as the OpenAI-compatible
 * servers stream completions) into events, incrementally: bytes are fed as
 * they arrive, in pieces cut anywhere, and each complete event is handed to a
 * callback during the feed that completed it. The caller stamps events with
 * the time of that piece (mx_http's on_data gives one), which is how TTFT and
 * ITL are taken per event (bench-methods.md: one "chunk" is one data: event).
 *
 * Parsing follows the WHATWG "event stream interpretation": lines end in LF,
 * CRLF or CR; a blank line ends an event; "data:" lines are joined with LF;
 * ":" starts a comment (llama-server's keep-alive pings); "event:" sets the
 * type; "id:" and "retry:" are ignored (we never reconnect); one space after
 * the colon is dropped; a leading UTF-8 BOM is skipped; an event without data
 * is not dispatched; an unfinished event at the end of the stream is dropped.
 * No I/O, no logging.
 */
#pragma once

#include "util.h"

/* The longest line or event data accepted by default, and the most a caller may set. */
#define MX_SSE_EVENT_DEFAULT (1024 * 1024)
#define MX_SSE_EVENT_MAX (64 * 1024 * 1024)

struct mx_sse_event {
        const char *type; /* "message" unless an event: field said otherwise */
        const char *data; /* the data: lines joined with LF, NUL-terminated */
        size_t data_len;
};

/* Called for each complete event; valid only during the call. Return 0, or a negative errno to stop. */
typedef int (*mx_sse_event_cb)(const struct mx_sse_event *ev, void *userdata);

struct mx_sse {
        struct mx_buf line; /* the line being read */
        struct mx_buf data; /* data of the event being read */
        struct mx_buf type; /* its event: field */
        size_t max_event;   /* limit on line and data */
        size_t bom_matched; /* bytes of a leading BOM seen; 3 once past the start */
        bool cr_pending;    /* the last piece ended in CR: an LF next belongs to it */
        bool has_data;      /* a data: field was seen (even an empty one) */
        int error;          /* sticky: the first error */
};

/* Start a parser; max_event 0 means MX_SSE_EVENT_DEFAULT (larger values are capped at MX_SSE_EVENT_MAX). */
void mx_sse_init(struct mx_sse *s, size_t max_event);
/* Release a parser's buffers (it may be initialised again). */
void mx_sse_done(struct mx_sse *s);

/*
 * Feed n bytes. Returns 0, the callback's negative return (parsing stops at
 * that event), or -E2BIG when a line or an event's data exceeds max_event.
 * After an error every further feed returns the same error.
 */
int mx_sse_feed(struct mx_sse *s, const void *p, size_t n, mx_sse_event_cb cb, void *userdata);

/* End of stream: 1 if an unfinished event (or line) was dropped, 0 if the stream ended cleanly. */
int mx_sse_finish(struct mx_sse *s);

/* The OpenAI end-of-stream marker: data is exactly "[DONE]". */
bool mx_sse_is_done(const struct mx_sse_event *ev);
