/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous HTTP/1.1 client on the daemon's libevent loop, for talking to
 * the inference servers a run starts (readiness and liveness on /health, the
 * L1 smoke completion, later streamed benchmarks): libcurl's multi-socket
 * interface, driven by one libevent event per socket curl uses and one timer.
 * Nothing blocks and nothing polls; no threads are started by this module.
 *
 * Contracts:
 *   - mx_http_start() never calls the done callback itself: every outcome,
 *     even an immediate "connection refused", is delivered later from the
 *     event loop, exactly once per call unless the call was cancelled;
 *   - after mx_http_cancel(call) or mx_http_free() no callback of that call
 *     runs (neither done nor on_data);
 *   - the request is copied: url, body, headers and content_type may be freed
 *     as soon as mx_http_start() returns;
 *   - a proxy from the environment is never used (CURLOPT_NOPROXY "*"), and
 *     redirects are not followed: a probe talks to exactly the URL it names;
 *   - connections are kept alive and reused between calls to the same host
 *     and port (curl's connection cache, closed by mx_http_free()); a server
 *     that closed an idle connection costs a reconnect, not an error;
 *   - host names go through curl's resolver only when that resolver is
 *     asynchronous (curl's AsynchDNS feature); otherwise only numeric hosts
 *     are accepted, so the loop never waits on the name service.
 *
 * Transport failures are classified as negative errnos in mx_http_response.error
 * (an HTTP status such as 503 is not a transport failure: error is 0):
 *   -ECONNREFUSED  nothing listens (vLLM while it loads: bound, not listening)
 *   -ETIMEDOUT     timeout_ms or connect_timeout_ms passed
 *   -ECONNRESET    the peer reset or closed the connection before the response
 *                  was complete (a server that died mid-request)
 *   -EPIPE         the peer went away while the request was being sent
 *   -EHOSTUNREACH  no route to the host, or the name did not resolve
 *   -EPROTO        the peer answered with something that is not HTTP/1.x
 *   -EIO           anything else curl reports (error_text says what)
 *   or the negative errno an on_data callback returned to abort the transfer.
 */
#pragma once

#include "util.h"

struct event_base;
struct mx_http;
struct mx_http_call;

/* Calls in flight at once (each holds a socket); mx_http_start() answers -EBUSY beyond it. */
#define MX_HTTP_CALLS_MAX 256
/* Response bytes kept by default, and the most a request may ask to keep. */
#define MX_HTTP_BODY_DEFAULT (1024 * 1024)
#define MX_HTTP_BODY_MAX (64 * 1024 * 1024)
/* Limits on what a request may carry (URLs and headers come from target profiles). */
#define MX_HTTP_URL_MAX 4096
#define MX_HTTP_HEADERS_MAX 32
#define MX_HTTP_HEADER_MAX 4096
#define MX_HTTP_REQUEST_BODY_MAX (16 * 1024 * 1024)
/* Timeouts used when a request leaves them 0, and the longest whole-request timeout. */
#define MX_HTTP_TIMEOUT_DEFAULT_MS 30000
#define MX_HTTP_CONNECT_TIMEOUT_DEFAULT_MS 5000
#define MX_HTTP_TIMEOUT_MAX_MS (24LL * 3600 * 1000)

/*
 * Streaming hook: called from the loop with each piece of the response body as
 * it arrives (after HTTP chunked decoding), with the CLOCK_MONOTONIC time in µs
 * at which curl handed it over, so that per-chunk timings (TTFT, ITL) can be
 * taken. Every byte is passed, including those beyond max_body. Return 0 to go
 * on, or a negative errno to abort the transfer; the done callback then reports
 * that errno as the error. It may call mx_http_cancel() on any call (its own
 * included), but must not call mx_http_start() (-EAGAIN) or mx_http_free().
 */
typedef int (*mx_http_data_cb)(void *userdata, const char *p, size_t n, int64_t t_mono_us);

struct mx_http_request {
        const char *method;         /* "GET" or "POST" */
        const char *url;            /* http://host:port/path; no other scheme */
        const char *body;           /* POST only; NULL: none */
        size_t body_len;            /* 0 with body set: strlen(body) */
        const char *content_type;   /* of body; NULL: "application/json" */
        const char *const *headers; /* extra "Name: value" lines, NULL-terminated; may be NULL */
        int64_t timeout_ms;         /* the whole request; 0: MX_HTTP_TIMEOUT_DEFAULT_MS */
        int64_t connect_timeout_ms; /* 0: MX_HTTP_CONNECT_TIMEOUT_DEFAULT_MS */
        /*
         * Response body bytes kept in mx_http_response.body; 0: MX_HTTP_BODY_DEFAULT.
         * A longer body sets truncated. Without on_data the transfer is then
         * aborted at once (error stays 0, status is the server's): nobody
         * would read the rest, and an endless body would otherwise run until
         * timeout_ms. With on_data the transfer goes on and on_data sees
         * every byte.
         */
        size_t max_body;
        mx_http_data_cb on_data; /* NULL: none */
};

/* What a call produced. Owned by the call; valid only during the done callback. */
struct mx_http_response {
        int error;              /* 0, or a negative errno classifying a transport failure (see above) */
        const char *error_text; /* curl's message when error != 0, else NULL */
        long status;            /* HTTP status; 0 when no response line arrived */
        char *content_type;     /* the response's Content-Type, or NULL; the callback may steal it */
        char *body;             /* never NULL, NUL-terminated; the callback may steal it (TAKE_PTR) */
        size_t body_len;        /* bytes in body (at most max_body) */
        bool truncated;         /* the body was longer than max_body */
        /* curl's timings in seconds from the transfer's start: connected, first byte, end. */
        double connect_s;
        double starttransfer_s;
        double total_s;
        int64_t t_start_mono_us; /* CLOCK_MONOTONIC when mx_http_start() accepted the call */
};

/*
 * The done callback. call is the handle mx_http_start() returned; it is freed
 * when the callback returns, so forget it (a cancel from inside the callback
 * is a harmless no-op). The callback may start new calls, cancel others and
 * free the whole client.
 */
typedef void (*mx_http_done_cb)(struct mx_http_call *call, struct mx_http_response *resp, void *userdata);

/*
 * A client on base. Initialises libcurl globally on first use; that is not
 * thread-safe, which is fine because the daemon is single-threaded.
 */
int mx_http_new(struct event_base *base, struct mx_http **ret, char **reterr);

/* Cancel every call in flight without calling any callback, and free the client. */
struct mx_http *mx_http_free(struct mx_http *h);
DEFINE_POINTER_CLEANUP(struct mx_http, mx_http_free)

/*
 * Start a request. On success *ret_call (if ret_call is not NULL) identifies
 * the call until its done callback returns or it is cancelled. Errors:
 * -EINVAL (bad method, URL, header or timeout; reason in *reterr), -E2BIG
 * (a limit above), -EBUSY (MX_HTTP_CALLS_MAX calls in flight), -EAGAIN
 * (called from an on_data callback). reterr may be NULL.
 */
int mx_http_start(struct mx_http *h, const struct mx_http_request *req, mx_http_done_cb cb, void *userdata,
                  struct mx_http_call **ret_call, char **reterr);

/* Abort a call: its callbacks never run. NULL is ignored. */
void mx_http_cancel(struct mx_http_call *call);

/* Calls started and not yet delivered or cancelled. */
unsigned mx_http_n_calls(const struct mx_http *h);
