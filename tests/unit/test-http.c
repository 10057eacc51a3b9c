/* SPDX-License-Identifier: MIT */
/*
 * The HTTP client against real servers on loopback, in the same event loop:
 * an evhttp server with handlers that answer, fail, stall, stream and die the
 * way inference servers do, and a raw TCP server for answers that are not HTTP
 * at all. Every loop runs under a deadline, so a bug fails a test instead of
 * hanging it.
 */
#include "test.h"

#include "http.h"
#include "sse.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

/* No test needs the loop for longer; a hang fails after this. */
#define LOOP_TIMEOUT_MS 10000
/* Gap between the pieces of /stream. */
#define STREAM_GAP_MS 40
#define STREAM_EVENTS 5

/* ---- the evhttp server ---- */

enum job_kind {
        JOB_DELAYED, /* reply after a delay */
        JOB_STREAM,  /* chunked SSE, one piece per tick */
        JOB_ENDLESS, /* chunked, 16 KiB per tick, forever */
        JOB_DIE,     /* one chunk, then the socket is shut down */
};

struct srv;

/* A reply still being produced from timers. */
struct job {
        struct srv *srv;
        enum job_kind kind;
        struct evhttp_request *req;
        struct event *timer;
        unsigned tick;
        bool finished; /* the reply was completed (or the request handed back to evhttp) */
        struct job *next;
};

struct srv {
        struct event_base *base;
        struct evhttp *http;
        int port;
        unsigned hits;
        /* what the last request to /json carried */
        char *last_method;
        char *last_body;
        char *last_ctype;
        char *last_xtest;
        char *last_expect;
        struct job *jobs;
};

static void job_tick_cb(evutil_socket_t fd, short what, void *userdata);

static void send_text(struct evhttp_request *req, int code, const char *reason, const char *ctype,
                      const char *text)
{
        struct evbuffer *b = evbuffer_new();

        evbuffer_add(b, text, strlen(text));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
        evhttp_send_reply(req, code, reason, b);
        evbuffer_free(b);
}

static struct job *job_new(struct srv *s, struct evhttp_request *req, enum job_kind kind, int first_ms)
{
        struct job *j = xcalloc(1, sizeof(*j));
        struct timeval tv = { .tv_sec = first_ms / 1000, .tv_usec = (first_ms % 1000) * 1000 };

        j->srv = s;
        j->kind = kind;
        j->req = req;
        j->timer = evtimer_new(s->base, job_tick_cb, j);
        evtimer_add(j->timer, &tv);
        j->next = s->jobs;
        s->jobs = j;
        return j;
}

static void job_chunk(struct job *j, const char *text)
{
        struct evbuffer *b = evbuffer_new();

        evbuffer_add(b, text, strlen(text));
        evhttp_send_reply_chunk(j->req, b);
        evbuffer_free(b);
}

/* One step of a timed reply. */
static void job_tick_cb(evutil_socket_t fd, short what, void *userdata)
{
        static const char *const stream[] = {
                "data: {\"i\":0}\n\n",
                "data: {\"i\":1}\n\n",
                "data: {\"i\"",
                ":2}\n\n",
                ": keep-alive\n\ndata: {\"i\":3}\r\n\r\n",
                "data: {\"i\":4}\n\n",
                "data: [DONE]\n\n",
        };
        struct job *j = userdata;
        struct timeval gap = { .tv_sec = 0, .tv_usec = STREAM_GAP_MS * 1000 };
        char big[16384];

        switch (j->kind) {
        case JOB_DELAYED:
                send_text(j->req, 200, "OK", "text/plain", "late");
                j->finished = true;
                return;
        case JOB_STREAM:
                if (j->tick < ELEMENTSOF(stream)) {
                        job_chunk(j, stream[j->tick++]);
                        evtimer_add(j->timer, &gap);
                } else {
                        evhttp_send_reply_end(j->req);
                        j->finished = true;
                }
                return;
        case JOB_ENDLESS:
                memset(big, 'e', sizeof(big));
                big[sizeof(big) - 1] = '\0';
                job_chunk(j, big);
                evtimer_add(j->timer, &(struct timeval){ .tv_usec = 5000 });
                return;
        case JOB_DIE:
                /* the server process dies: the peer sees EOF in the middle of the chunked body */
                shutdown(bufferevent_getfd(
                                 evhttp_connection_get_bufferevent(evhttp_request_get_connection(j->req))),
                         SHUT_RDWR);
                return;
        }
}

static char *header_dup(struct evhttp_request *req, const char *name)
{
        const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), name);

        return v ? xstrdup(v) : NULL;
}

/* POST or GET /json: 200 with a JSON body; the request's parts are kept for the test. */
static void handle_json(struct srv *s, struct evhttp_request *req)
{
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);
        _cleanup_free_ char *reply = NULL;

        free(s->last_method);
        free(s->last_body);
        free(s->last_ctype);
        free(s->last_xtest);
        free(s->last_expect);
        s->last_method = xstrdup(evhttp_request_get_command(req) == EVHTTP_REQ_POST ? "POST" : "GET");
        s->last_body = xcalloc(1, n + 1);
        evbuffer_copyout(in, s->last_body, n);
        s->last_ctype = header_dup(req, "Content-Type");
        s->last_xtest = header_dup(req, "X-Test");
        s->last_expect = header_dup(req, "Expect");
        reply = xasprintf("{\"ok\":true,\"received\":%zu}", n);
        send_text(req, 200, "OK", "application/json", reply);
}

static void handle_big(struct evhttp_request *req, size_t n)
{
        struct evbuffer *b = evbuffer_new();
        char *p = xmalloc(n);

        /* a recognisable pattern, so a test can check which bytes were kept */
        for (size_t i = 0; i < n; i++)
                p[i] = (char)('a' + i % 26);
        evbuffer_add(b, p, n);
        free(p);
        evhttp_send_reply(req, 200, "OK", b);
        evbuffer_free(b);
}

static void srv_cb(struct evhttp_request *req, void *userdata)
{
        struct srv *s = userdata;
        const char *uri = evhttp_request_get_uri(req);
        unsigned long n;

        s->hits++;
        if (streq(uri, "/json"))
                handle_json(s, req);
        else if (streq(uri, "/health503"))
                /* llama-server while it loads the model (target-surfaces.md §B) */
                send_text(req, 503, "Service Unavailable", "application/json",
                          "{\"error\": {\"code\": 503, \"message\": \"Loading model\", "
                          "\"type\": \"unavailable_error\"}}");
        else if (sscanf(uri, "/slow/%lu", &n) == 1)
                job_new(s, req, JOB_DELAYED, (int)n);
        else if (sscanf(uri, "/big/%lu", &n) == 1)
                handle_big(req, n);
        else if (streq(uri, "/stream") || streq(uri, "/endless") || streq(uri, "/die")) {
                evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                                  "text/event-stream");
                evhttp_send_reply_start(req, 200, "OK");
                if (streq(uri, "/die"))
                        job_chunk(job_new(s, req, JOB_DIE, 30), "data: partial\n\n");
                else
                        job_new(s, req, streq(uri, "/stream") ? JOB_STREAM : JOB_ENDLESS, 0);
        } else
                send_text(req, 404, "Not Found", "text/plain", "no such path");
}

static void srv_start(struct srv *s, struct event_base *base)
{
        struct evhttp_bound_socket *bound;
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);

        *s = (struct srv){ .base = base };
        s->http = evhttp_new(base);
        ASSERT_NOT_NULL(s->http);
        evhttp_set_gencb(s->http, srv_cb, s);
        evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
        bound = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
        ASSERT_NOT_NULL(bound);
        ASSERT_OK(getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&sa, &len));
        s->port = ntohs(sa.sin_port);
}

/* Complete every reply still pending (evhttp frees requests only once they were answered), then free. */
static void srv_stop(struct srv *s)
{
        while (s->jobs) {
                struct job *j = s->jobs;

                s->jobs = j->next;
                event_free(j->timer);
                if (!j->finished) {
                        if (j->kind == JOB_DELAYED)
                                send_text(j->req, 200, "OK", "text/plain", "late");
                        else
                                evhttp_send_reply_end(j->req);
                }
                free(j);
        }
        evhttp_free(s->http);
        free(s->last_method);
        free(s->last_body);
        free(s->last_ctype);
        free(s->last_xtest);
        free(s->last_expect);
}

/* ---- a raw TCP server, for peers that do not speak HTTP ---- */

enum raw_mode {
        RAW_GARBAGE,     /* read the request, answer with a line that is not HTTP, close */
        RAW_RESET_NOW,   /* accept and reset the connection at once */
        RAW_RESET_LATER, /* read the request, then reset the connection */
};

#define RAW_CONNS_MAX 8

struct raw {
        struct evconnlistener *listener;
        enum raw_mode mode;
        int port;
        struct bufferevent *conns[RAW_CONNS_MAX];
};

static void raw_conn_free(struct raw *r, struct bufferevent *bev)
{
        for (size_t i = 0; i < RAW_CONNS_MAX; i++)
                if (r->conns[i] == bev)
                        r->conns[i] = NULL;
        bufferevent_free(bev);
}

static void raw_written_cb(struct bufferevent *bev, void *userdata)
{
        raw_conn_free(userdata, bev);
}

/* Close fd so that the peer gets a reset (RST), not an orderly end of stream. */
static void reset_fd(int fd)
{
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };

        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void raw_read_cb(struct bufferevent *bev, void *userdata)
{
        static const char garbage[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\nProtocol mismatch.\r\n";
        struct raw *r = userdata;

        if (r->mode == RAW_RESET_LATER) {
                reset_fd(bufferevent_getfd(bev));
                raw_conn_free(r, bev);
                return;
        }
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
        bufferevent_setcb(bev, NULL, raw_written_cb, NULL, userdata);
        bufferevent_write(bev, garbage, strlen(garbage));
}

static void raw_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                          void *userdata)
{
        struct raw *r = userdata;
        struct bufferevent *bev;

        if (r->mode == RAW_RESET_NOW) {
                reset_fd(fd);
                close(fd);
                return;
        }
        bev = bufferevent_socket_new(evconnlistener_get_base(l), fd, BEV_OPT_CLOSE_ON_FREE);
        for (size_t i = 0; i < RAW_CONNS_MAX; i++)
                if (!r->conns[i]) {
                        r->conns[i] = bev;
                        break;
                }
        bufferevent_setcb(bev, raw_read_cb, NULL, NULL, r);
        bufferevent_enable(bev, EV_READ);
}

/* A socket bound to 127.0.0.1 on a port the kernel picks; listening or not. */
static int bind_loopback(bool do_listen, int *ret_port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        ASSERT_OK(fd);
        ASSERT_OK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
        if (do_listen)
                ASSERT_OK(listen(fd, 16));
        ASSERT_OK(getsockname(fd, (struct sockaddr *)&sa, &len));
        *ret_port = ntohs(sa.sin_port);
        return fd;
}

static void raw_start(struct raw *r, struct event_base *base, enum raw_mode mode)
{
        int fd;

        *r = (struct raw){ .mode = mode };
        fd = bind_loopback(true, &r->port);
        r->listener = evconnlistener_new(base, raw_accept_cb, r, LEV_OPT_CLOSE_ON_FREE, 0, fd);
        ASSERT_NOT_NULL(r->listener);
}

static void raw_stop(struct raw *r)
{
        for (size_t i = 0; i < RAW_CONNS_MAX; i++)
                if (r->conns[i])
                        bufferevent_free(r->conns[i]);
        evconnlistener_free(r->listener);
}

/* ---- the client side ---- */

struct ctx {
        struct event_base *base;
        struct srv srv;
        struct mx_http *http;
};

/* What one call's done callback saw. */
struct result {
        unsigned calls;
        struct mx_http_call *call;
        int error;
        char *error_text;
        long status;
        char *content_type;
        char *body;
        size_t body_len;
        bool truncated;
        double connect_s, starttransfer_s, total_s;
        int64_t t_start_mono_us;
};

static void ctx_init(struct ctx *t)
{
        _cleanup_free_ char *err = NULL;

        signal(SIGPIPE, SIG_IGN); /* as in the daemon; evhttp writes to sockets the client closed */
        t->base = event_base_new();
        ASSERT_NOT_NULL(t->base);
        srv_start(&t->srv, t->base);
        ASSERT_OK(mx_http_new(t->base, &t->http, &err));
}

static void ctx_done(struct ctx *t)
{
        t->http = mx_http_free(t->http);
        srv_stop(&t->srv);
        event_base_free(t->base);
}

static void result_done(struct result *r)
{
        free(r->error_text);
        free(r->content_type);
        free(r->body);
}

static char *url_for(int port, const char *path)
{
        return xasprintf("http://127.0.0.1:%d%s", port, path);
}

static void record_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct result *r = userdata;

        r->calls++;
        ASSERT_TRUE(call == r->call);
        r->error = resp->error;
        r->error_text = resp->error_text ? xstrdup(resp->error_text) : NULL;
        r->status = resp->status;
        r->content_type = TAKE_PTR(resp->content_type);
        r->body = TAKE_PTR(resp->body);
        r->body_len = resp->body_len;
        r->truncated = resp->truncated;
        r->connect_s = resp->connect_s;
        r->starttransfer_s = resp->starttransfer_s;
        r->total_s = resp->total_s;
        r->t_start_mono_us = resp->t_start_mono_us;
        ASSERT_NOT_NULL(r->body);
        ASSERT_EQ(strlen(r->body), r->body_len);
}

static void deadline_cb(evutil_socket_t fd, short what, void *userdata)
{
        *(bool *)userdata = true;
}

/* Run the loop until *counter reaches target or ms pass; whether it did. */
static bool run_until(struct event_base *base, const unsigned *counter, unsigned target, int ms)
{
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
        bool expired = false;
        struct event *t = evtimer_new(base, deadline_cb, &expired);

        evtimer_add(t, &tv);
        while (*counter < target && !expired)
                event_base_loop(base, EVLOOP_ONCE);
        event_free(t);
        return *counter >= target;
}
#define RUN_UNTIL(base, counter, target)                                                                    \
        do {                                                                                                \
                if (!run_until(base, counter, target, LOOP_TIMEOUT_MS))                                     \
                        test_fail(__FILE__, __LINE__, "event loop timed out waiting for %s >= %s",          \
                                  #counter, #target);                                                       \
        } while (0)

/* Run the loop for ms, whatever happens (to show that something does not). */
static void run_for(struct event_base *base, int ms)
{
        unsigned never = 0;

        run_until(base, &never, 1, ms);
}

/*
 * Start req and wait for its one callback (cb with userdata, which records into
 * r), which must not have come from inside mx_http_start().
 */
static void fetch_cb(struct ctx *t, const struct mx_http_request *req, mx_http_done_cb cb, void *userdata,
                     struct result *r)
{
        _cleanup_free_ char *err = NULL;

        ASSERT_OK(mx_http_start(t->http, req, cb, userdata, &r->call, &err));
        ASSERT_EQ(r->calls, 0);
        ASSERT_EQ(mx_http_n_calls(t->http), 1);
        RUN_UNTIL(t->base, &r->calls, 1);
        ASSERT_EQ(mx_http_n_calls(t->http), 0);
        /* exactly once */
        run_for(t->base, 20);
        ASSERT_EQ(r->calls, 1);
}

static void fetch(struct ctx *t, const struct mx_http_request *req, struct result *r)
{
        fetch_cb(t, req, record_cb, r, r);
}

TEST(get_json)
{
        struct ctx t = {};
        struct result r = {};
        _cleanup_free_ char *url = NULL;
        int64_t before = mx_now_mono_us();

        ctx_init(&t);
        url = url_for(t.srv.port, "/json");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url }, &r);
        ASSERT_EQ(r.error, 0);
        ASSERT_NULL(r.error_text);
        ASSERT_EQ(r.status, 200);
        ASSERT_STREQ(r.content_type, "application/json");
        ASSERT_STREQ(r.body, "{\"ok\":true,\"received\":0}");
        ASSERT_FALSE(r.truncated);
        ASSERT_STREQ(t.srv.last_method, "GET");
        /* curl's timings are in order and the start was taken when the call was accepted */
        ASSERT_TRUE(r.connect_s > 0 && r.connect_s <= r.starttransfer_s && r.starttransfer_s <= r.total_s);
        ASSERT_LE(before, r.t_start_mono_us);
        ASSERT_LE(r.t_start_mono_us, mx_now_mono_us());
        result_done(&r);
        ctx_done(&t);
}

TEST(post_body_and_headers)
{
        static const char body[] =
                "{\"model\":\"m\",\"prompt\":\"The capital of France is\",\"max_tokens\":8}";
        const char *const headers[] = { "X-Test: probe 1", NULL };
        struct ctx t = {};
        struct result r = {}, r2 = {};
        _cleanup_free_ char *url = NULL, *big = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/json");
        fetch(&t,
              &(struct mx_http_request){ .method = "POST", .url = url, .body = body, .headers = headers },
              &r);
        ASSERT_EQ(r.error, 0);
        ASSERT_EQ(r.status, 200);
        ASSERT_STREQ(t.srv.last_method, "POST");
        ASSERT_STREQ(t.srv.last_body, body);
        ASSERT_STREQ(t.srv.last_ctype, "application/json");
        ASSERT_STREQ(t.srv.last_xtest, "probe 1");

        /* a large body with its own type and explicit length, sent without waiting for 100-continue */
        big = xmalloc(200001);
        memset(big, 'p', 200000);
        big[200000] = '\0';
        fetch(&t,
              &(struct mx_http_request){ .method = "POST",
                                         .url = url,
                                         .body = big,
                                         .body_len = 150000,
                                         .content_type = "text/plain" },
              &r2);
        ASSERT_EQ(r2.error, 0);
        ASSERT_STREQ(r2.body, "{\"ok\":true,\"received\":150000}");
        ASSERT_STREQ(t.srv.last_ctype, "text/plain");
        ASSERT_NULL(t.srv.last_expect);
        result_done(&r);
        result_done(&r2);
        ctx_done(&t);
}

TEST(status_503_is_not_an_error)
{
        struct ctx t = {};
        struct result r = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/health503");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url }, &r);
        ASSERT_EQ(r.error, 0);
        ASSERT_EQ(r.status, 503);
        ASSERT_CONTAINS(r.body, "\"Loading model\"");
        result_done(&r);
        ctx_done(&t);
}

TEST(connection_refused_while_loading)
{
        struct ctx t = {};
        struct result r = {};
        _cleanup_free_ char *url = NULL;
        _cleanup_close_ int fd = -1;
        int port;

        ctx_init(&t);
        /* vLLM binds its port before loading the model and listens only after (target-surfaces.md §A1) */
        fd = bind_loopback(false, &port);
        url = url_for(port, "/health");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url }, &r);
        ASSERT_EQ(r.error, -ECONNREFUSED);
        ASSERT_EQ(r.status, 0);
        ASSERT_NOT_NULL(r.error_text);
        ASSERT_EQ(r.body_len, 0);

        /* once it listens (here: our server takes the socket over), the same URL answers */
        result_done(&r);
        r = (struct result){};
        ASSERT_OK(listen(fd, 16));
        ASSERT_OK(evhttp_accept_socket(t.srv.http, TAKE_FD(fd)));
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url }, &r);
        ASSERT_EQ(r.error, 0);
        ASSERT_EQ(r.status, 404);
        result_done(&r);
        ctx_done(&t);
}

TEST(timeout)
{
        struct ctx t = {};
        struct result r = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/slow/5000");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url, .timeout_ms = 200 }, &r);
        ASSERT_EQ(r.error, -ETIMEDOUT);
        ASSERT_NOT_NULL(r.error_text);
        ASSERT_EQ(t.srv.hits, 1);
        /* it did wait (curl's clock), so the error is the timeout and not something earlier */
        ASSERT_TRUE(r.total_s >= 0.15);
        result_done(&r);
        ctx_done(&t);
}

TEST(body_truncated_and_aborted)
{
        struct ctx t = {};
        struct result r = {}, r2 = {}, r3 = {};
        _cleanup_free_ char *big = NULL, *exact = NULL, *endless = NULL;

        ctx_init(&t);
        big = url_for(t.srv.port, "/big/100000");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = big, .max_body = 1000 }, &r);
        ASSERT_EQ(r.error, 0);
        ASSERT_EQ(r.status, 200);
        ASSERT_TRUE(r.truncated);
        ASSERT_EQ(r.body_len, 1000);
        ASSERT_EQ(r.body[0], 'a');
        ASSERT_EQ(r.body[999], 'a' + 999 % 26);

        /* exactly max_body bytes is not truncated */
        exact = url_for(t.srv.port, "/big/1000");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = exact, .max_body = 1000 }, &r2);
        ASSERT_EQ(r2.error, 0);
        ASSERT_FALSE(r2.truncated);
        ASSERT_EQ(r2.body_len, 1000);

        /* a body that never ends is cut at max_body, long before the request's timeout */
        endless = url_for(t.srv.port, "/endless");
        fetch(&t,
              &(struct mx_http_request){
                      .method = "GET", .url = endless, .max_body = 50000, .timeout_ms = 600000 },
              &r3);
        ASSERT_EQ(r3.error, 0);
        ASSERT_EQ(r3.status, 200);
        ASSERT_TRUE(r3.truncated);
        ASSERT_EQ(r3.body_len, 50000);
        result_done(&r);
        result_done(&r2);
        result_done(&r3);
        ctx_done(&t);
}

/* ---- streaming ---- */

#define PIECES_MAX 64

struct stream_rec {
        struct mx_sse sse;
        unsigned pieces;
        int64_t piece_ts[PIECES_MAX];
        size_t bytes;
        unsigned events;
        int64_t event_ts[PIECES_MAX];
        int event_i[PIECES_MAX];
        bool done_seen;
        int64_t cur_ts;
        int return_value;                    /* what on_data returns */
        struct mx_http_call *cancel_on_data; /* cancelled from on_data */
        struct mx_http *http;                /* tried mx_http_start() from on_data */
        int start_r;
        struct result res;
};

static int sse_event_cb(const struct mx_sse_event *ev, void *userdata)
{
        struct stream_rec *s = userdata;
        json_error_t jerr;
        json_t *j;

        if (mx_sse_is_done(ev)) {
                s->done_seen = true;
                return 0;
        }
        ASSERT_LT(s->events, PIECES_MAX);
        j = json_loadb(ev->data, ev->data_len, 0, &jerr);
        ASSERT_NOT_NULL(j);
        s->event_i[s->events] = (int)json_integer_value(json_object_get(j, "i"));
        s->event_ts[s->events++] = s->cur_ts;
        json_decref(j);
        return 0;
}

/* on_data and the done callback share userdata: here the stream_rec */
static void stream_done_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct stream_rec *s = userdata;

        record_cb(call, resp, &s->res);
}

static int stream_data_cb(void *userdata, const char *p, size_t n, int64_t t_mono_us)
{
        struct stream_rec *s = userdata;
        static const char dummy_url[] = "http://127.0.0.1:1/";

        ASSERT_LT(s->pieces, PIECES_MAX);
        ASSERT_TRUE(n > 0);
        s->piece_ts[s->pieces++] = t_mono_us;
        s->bytes += n;
        s->cur_ts = t_mono_us;
        ASSERT_OK(mx_sse_feed(&s->sse, p, n, sse_event_cb, s));
        if (s->http)
                s->start_r = mx_http_start(s->http,
                                           &(struct mx_http_request){ .method = "GET", .url = dummy_url },
                                           record_cb, &s->res, NULL, NULL);
        if (s->cancel_on_data) {
                mx_http_cancel(s->cancel_on_data);
                s->cancel_on_data = NULL;
        }
        return s->return_value;
}

TEST(stream_chunks_with_timestamps)
{
        struct ctx t = {};
        struct stream_rec s = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        mx_sse_init(&s.sse, 0);
        url = url_for(t.srv.port, "/stream");
        fetch_cb(&t,
                 &(struct mx_http_request){
                         .method = "GET", .url = url, .on_data = stream_data_cb, .max_body = 10 },
                 stream_done_cb, &s, &s.res);
        ASSERT_EQ(s.res.error, 0);
        ASSERT_EQ(s.res.status, 200);
        ASSERT_STREQ(s.res.content_type, "text/event-stream");
        /* the kept body is cut at max_body, but on_data saw everything and the transfer completed */
        ASSERT_TRUE(s.res.truncated);
        ASSERT_EQ(s.res.body_len, 10);
        ASSERT_STREQ(s.res.body, "data: {\"i\"");
        ASSERT_EQ(mx_sse_finish(&s.sse), 0);
        ASSERT_TRUE(s.done_seen);
        ASSERT_EQ(s.events, STREAM_EVENTS);
        /* the server sent 7 pieces 40 ms apart: each arrived on its own (or cut further), in order */
        ASSERT_LE(7, s.pieces);
        ASSERT_LE(s.res.t_start_mono_us, s.piece_ts[0]);
        for (unsigned i = 1; i < s.pieces; i++)
                ASSERT_LE(s.piece_ts[i - 1], s.piece_ts[i]);
        /* so every event has its own time; event 2, split over two pieces, has the time of the second */
        for (unsigned i = 0; i < s.events; i++) {
                ASSERT_EQ(s.event_i[i], (int)i);
                if (i > 0)
                        ASSERT_LT(s.event_ts[i - 1], s.event_ts[i]);
        }
        mx_sse_done(&s.sse);
        result_done(&s.res);
        ctx_done(&t);
}

TEST(on_data_aborts)
{
        struct ctx t = {};
        struct stream_rec s = { .return_value = -ECANCELED };
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        mx_sse_init(&s.sse, 0);
        url = url_for(t.srv.port, "/endless");
        fetch_cb(&t, &(struct mx_http_request){ .method = "GET", .url = url, .on_data = stream_data_cb },
                 stream_done_cb, &s, &s.res);
        ASSERT_EQ(s.res.error, -ECANCELED);
        ASSERT_EQ(s.pieces, 1);
        ASSERT_EQ(s.res.status, 200);
        mx_sse_done(&s.sse);
        result_done(&s.res);
        ctx_done(&t);
}

TEST(on_data_may_not_start)
{
        struct ctx t = {};
        struct stream_rec s = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        mx_sse_init(&s.sse, 0);
        s.http = t.http;
        url = url_for(t.srv.port, "/stream");
        fetch_cb(&t, &(struct mx_http_request){ .method = "GET", .url = url, .on_data = stream_data_cb },
                 stream_done_cb, &s, &s.res);
        ASSERT_EQ(s.start_r, -EAGAIN);
        ASSERT_EQ(s.res.error, 0);
        mx_sse_done(&s.sse);
        result_done(&s.res);
        ctx_done(&t);
}

TEST(peer_dies_mid_response)
{
        struct ctx t = {};
        struct result r = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/die");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url }, &r);
        ASSERT_EQ(r.error, -ECONNRESET);
        ASSERT_NOT_NULL(r.error_text);
        /* the status line and the first chunk had arrived */
        ASSERT_EQ(r.status, 200);
        ASSERT_STREQ(r.body, "data: partial\n\n");
        result_done(&r);
        ctx_done(&t);
}

TEST(not_http)
{
        struct ctx t = {};
        struct raw raw;
        struct result r = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        raw_start(&raw, t.base, RAW_GARBAGE);
        url = url_for(raw.port, "/health");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url }, &r);
        ASSERT_EQ(r.error, -EPROTO);
        ASSERT_NOT_NULL(r.error_text);
        ASSERT_EQ(r.status, 0);
        raw_stop(&raw);
        result_done(&r);
        ctx_done(&t);
}

TEST(connection_reset)
{
        static const enum raw_mode modes[] = { RAW_RESET_NOW, RAW_RESET_LATER };

        for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
                struct ctx t = {};
                struct raw raw;
                struct result r = {};
                _cleanup_free_ char *url = NULL;

                ctx_init(&t);
                raw_start(&raw, t.base, modes[i]);
                url = url_for(raw.port, "/v1/completions");
                fetch(&t,
                      &(struct mx_http_request){
                              .method = "POST", .url = url, .body = "{\"prompt\":\"x\"}" },
                      &r);
                /* the server died on the request (at once, or having read it): not "still loading" */
                if (r.error != -ECONNRESET && r.error != -EPIPE)
                        test_fail(__FILE__, __LINE__, "mode %zu: error %d (%s)", i, r.error,
                                  strna(r.error_text));
                ASSERT_EQ(r.status, 0);
                raw_stop(&raw);
                result_done(&r);
                ctx_done(&t);
        }
}

/* ---- cancelling, concurrency, freeing ---- */

TEST(cancel_never_calls_back)
{
        struct ctx t = {};
        struct result a = {}, b = {}, c = {};
        _cleanup_free_ char *slow = NULL;

        ctx_init(&t);
        slow = url_for(t.srv.port, "/slow/300");
        const struct mx_http_request r = { .method = "GET", .url = slow };

        ASSERT_OK(mx_http_start(t.http, &r, record_cb, &a, &a.call, NULL));
        ASSERT_OK(mx_http_start(t.http, &r, record_cb, &b, &b.call, NULL));
        ASSERT_OK(mx_http_start(t.http, &r, record_cb, &c, &c.call, NULL));
        /* c is cancelled before the loop ever ran, a once the server is working on it */
        mx_http_cancel(c.call);
        ASSERT_EQ(mx_http_n_calls(t.http), 2);
        RUN_UNTIL(t.base, &t.srv.hits, 2);
        mx_http_cancel(a.call);
        ASSERT_EQ(mx_http_n_calls(t.http), 1);
        RUN_UNTIL(t.base, &b.calls, 1);
        ASSERT_EQ(b.status, 200);
        run_for(t.base, 50);
        ASSERT_EQ(a.calls, 0);
        ASSERT_EQ(c.calls, 0);
        ASSERT_EQ(mx_http_n_calls(t.http), 0);
        mx_http_cancel(NULL);
        result_done(&b);
        ctx_done(&t);
}

struct pair {
        struct result r[2];
        unsigned calls;
};

/* The first callback of the pair cancels the other call, whatever state it is in. */
static void cancel_other_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct pair *p = userdata;
        unsigned me = call == p->r[0].call ? 0 : 1;

        p->calls++;
        p->r[me].calls++;
        p->r[me].status = resp->status;
        mx_http_cancel(p->r[!me].call);
        /* cancelling itself from its own callback is a no-op */
        mx_http_cancel(call);
}

TEST(cancel_from_callback)
{
        struct ctx t = {};
        struct pair p = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/json");
        for (unsigned round = 0; round < 10; round++) {
                p = (struct pair){};
                for (unsigned i = 0; i < 2; i++)
                        ASSERT_OK(mx_http_start(t.http,
                                                &(struct mx_http_request){ .method = "GET", .url = url },
                                                cancel_other_cb, &p, &p.r[i].call, NULL));
                RUN_UNTIL(t.base, &p.calls, 1);
                run_for(t.base, 30);
                ASSERT_EQ(p.calls, 1);
                ASSERT_EQ(p.r[0].calls + p.r[1].calls, 1);
                ASSERT_EQ(mx_http_n_calls(t.http), 0);
        }
        ctx_done(&t);
}

TEST(cancel_from_on_data)
{
        struct ctx t = {};
        struct stream_rec s = {}, s2 = {};
        struct result other = {};
        _cleanup_free_ char *url = NULL, *slow = NULL;

        ctx_init(&t);
        mx_sse_init(&s.sse, 0);
        mx_sse_init(&s2.sse, 0);
        url = url_for(t.srv.port, "/stream");
        slow = url_for(t.srv.port, "/slow/200");

        /* a stream whose on_data cancels itself, and one whose on_data cancels another call */
        ASSERT_OK(mx_http_start(
                t.http, &(struct mx_http_request){ .method = "GET", .url = url, .on_data = stream_data_cb },
                stream_done_cb, &s, &s.res.call, NULL));
        s.cancel_on_data = s.res.call;
        ASSERT_OK(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = slow }, record_cb,
                                &other, &other.call, NULL));
        ASSERT_OK(mx_http_start(
                t.http, &(struct mx_http_request){ .method = "GET", .url = url, .on_data = stream_data_cb },
                stream_done_cb, &s2, &s2.res.call, NULL));
        s2.cancel_on_data = other.call;

        RUN_UNTIL(t.base, &s2.res.calls, 1);
        ASSERT_EQ(s2.res.error, 0);
        ASSERT_TRUE(s2.done_seen);
        run_for(t.base, 300);
        /* no callback, no more data after the cancel, and nothing left in flight */
        ASSERT_EQ(s.res.calls, 0);
        ASSERT_EQ(s.pieces, 1);
        ASSERT_EQ(other.calls, 0);
        ASSERT_EQ(mx_http_n_calls(t.http), 0);
        mx_sse_done(&s.sse);
        mx_sse_done(&s2.sse);
        result_done(&s2.res);
        ctx_done(&t);
}

TEST(hundred_concurrent)
{
        struct ctx t = {};
        struct result r[100] = {};
        _cleanup_free_ char *url = NULL;
        unsigned done = 0;

        ctx_init(&t);
        url = url_for(t.srv.port, "/json");
        for (size_t i = 0; i < ELEMENTSOF(r); i++)
                ASSERT_OK(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = url },
                                        record_cb, &r[i], &r[i].call, NULL));
        ASSERT_EQ(mx_http_n_calls(t.http), 100);
        for (int64_t deadline = mx_now_mono_us() + LOOP_TIMEOUT_MS * 1000LL; done < ELEMENTSOF(r);) {
                ASSERT_LT(mx_now_mono_us(), deadline);
                event_base_loop(t.base, EVLOOP_ONCE);
                done = 0;
                for (size_t i = 0; i < ELEMENTSOF(r); i++)
                        done += r[i].calls;
        }
        for (size_t i = 0; i < ELEMENTSOF(r); i++) {
                ASSERT_EQ(r[i].calls, 1);
                ASSERT_EQ(r[i].error, 0);
                ASSERT_EQ(r[i].status, 200);
                result_done(&r[i]);
        }
        ASSERT_EQ(t.srv.hits, 100);
        ASSERT_EQ(mx_http_n_calls(t.http), 0);
        ctx_done(&t);
}

static void must_not_run_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        test_fail(__FILE__, __LINE__, "callback of a call that was freed or cancelled");
}

TEST(limit_then_free_in_flight)
{
        struct ctx t = {};
        _cleanup_free_ char *url = NULL, *err = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/slow/5000");
        for (unsigned i = 0; i < MX_HTTP_CALLS_MAX; i++)
                ASSERT_OK(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = url },
                                        must_not_run_cb, NULL, NULL, NULL));
        ASSERT_ERR(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = url },
                                 must_not_run_cb, NULL, NULL, &err),
                   EBUSY);
        ASSERT_CONTAINS(err, "in flight");
        /* let the server receive some, then free the client with all of them open */
        RUN_UNTIL(t.base, &t.srv.hits, 16);
        t.http = mx_http_free(t.http);
        run_for(t.base, 50);
        ctx_done(&t);
}

struct free_ctx {
        struct ctx *t;
        unsigned calls;
};

/* The first callback frees the client; the other finished calls must never be delivered. */
static void free_client_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct free_ctx *f = userdata;

        f->calls++;
        f->t->http = mx_http_free(f->t->http);
}

TEST(free_from_callback)
{
        struct ctx t = {};
        struct free_ctx f = { .t = &t };
        _cleanup_free_ char *url = NULL, *slow = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/json");
        slow = url_for(t.srv.port, "/slow/100");
        for (unsigned i = 0; i < 8; i++)
                ASSERT_OK(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = url },
                                        free_client_cb, &f, NULL, NULL));
        ASSERT_OK(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = slow },
                                must_not_run_cb, NULL, NULL, NULL));
        RUN_UNTIL(t.base, &f.calls, 1);
        run_for(t.base, 200);
        ASSERT_EQ(f.calls, 1);
        ASSERT_NULL(t.http);
        ctx_done(&t);
}

struct chain {
        struct mx_http *http;
        const char *url;
        unsigned calls;
        long statuses[3];
};

/* Each callback starts the next request, until three are done. */
static void chain_cb(struct mx_http_call *call, struct mx_http_response *resp, void *userdata)
{
        struct chain *c = userdata;

        c->statuses[c->calls++] = resp->status;
        if (c->calls < ELEMENTSOF(c->statuses))
                ASSERT_OK(mx_http_start(c->http, &(struct mx_http_request){ .method = "GET", .url = c->url },
                                        chain_cb, c, NULL, NULL));
}

TEST(start_from_callback)
{
        struct ctx t = {};
        struct chain c = {};
        _cleanup_free_ char *url = NULL;

        ctx_init(&t);
        url = url_for(t.srv.port, "/json");
        c = (struct chain){ .http = t.http, .url = url };
        ASSERT_OK(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = url }, chain_cb,
                                &c, NULL, NULL));
        RUN_UNTIL(t.base, &c.calls, 3);
        for (unsigned i = 0; i < 3; i++)
                ASSERT_EQ(c.statuses[i], 200);
        ASSERT_EQ(t.srv.hits, 3);
        ctx_done(&t);
}

TEST(proxy_from_environment_is_ignored)
{
        struct ctx t = {};
        struct result r = {};
        _cleanup_free_ char *url = NULL, *proxy = NULL;
        _cleanup_close_ int fd = -1;
        int port;

        ctx_init(&t);
        /* a proxy that refuses everything: a request that went through it would fail */
        fd = bind_loopback(false, &port);
        proxy = xasprintf("http://127.0.0.1:%d", port);
        setenv("http_proxy", proxy, 1);
        setenv("HTTP_PROXY", proxy, 1);
        setenv("ALL_PROXY", proxy, 1);
        unsetenv("no_proxy");
        unsetenv("NO_PROXY");
        url = url_for(t.srv.port, "/json");
        fetch(&t, &(struct mx_http_request){ .method = "GET", .url = url }, &r);
        unsetenv("http_proxy");
        unsetenv("HTTP_PROXY");
        unsetenv("ALL_PROXY");
        ASSERT_EQ(r.error, 0);
        ASSERT_EQ(r.status, 200);
        ASSERT_EQ(t.srv.hits, 1);
        result_done(&r);
        ctx_done(&t);
}

/* Start a request that must be refused with err, and a reason naming the problem. */
static void expect_refused(struct mx_http *h, const struct mx_http_request *req, int err, const char *reason)
{
        _cleanup_free_ char *msg = NULL;
        struct mx_http_call *call = NULL;

        ASSERT_EQ(mx_http_start(h, req, must_not_run_cb, NULL, &call, &msg), -err);
        ASSERT_NULL(call);
        ASSERT_CONTAINS(msg, reason);
}

TEST(bad_requests)
{
        struct ctx t = {};
        const char *const crlf[] = { "X-A: 1\r\nX-Injected: 2", NULL };
        const char *const nocolon[] = { "NoColon", NULL };
        const char *many[MX_HTTP_HEADERS_MAX + 2];
        _cleanup_free_ char *longurl = NULL, *longhdr = NULL;
        const char *longhdrs[2];
        const char *ok = "http://127.0.0.1:1/";

        ctx_init(&t);
        for (size_t i = 0; i < MX_HTTP_HEADERS_MAX + 1; i++)
                many[i] = "X-Many: 1";
        many[MX_HTTP_HEADERS_MAX + 1] = NULL;
        longurl = xmalloc(MX_HTTP_URL_MAX + 32);
        snprintf(longurl, MX_HTTP_URL_MAX + 32, "http://127.0.0.1:1/%0*d", MX_HTTP_URL_MAX, 0);
        longhdr = xmalloc(MX_HTTP_HEADER_MAX + 16);
        snprintf(longhdr, MX_HTTP_HEADER_MAX + 16, "X-Long: %0*d", MX_HTTP_HEADER_MAX, 0);
        longhdrs[0] = longhdr;
        longhdrs[1] = NULL;

        expect_refused(t.http, &(struct mx_http_request){ .method = "PUT", .url = ok }, EINVAL, "PUT");
        expect_refused(t.http, &(struct mx_http_request){ .url = ok }, EINVAL, "method");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET" }, EINVAL, "without a URL");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = "ftp://127.0.0.1/x" },
                       EINVAL, "only http://");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = "file:///etc/passwd" },
                       EINVAL, "only http://");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = "http://[::1" }, EINVAL,
                       "not a valid URL");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = longurl }, E2BIG,
                       "URL longer");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = ok, .body = "x" }, EINVAL,
                       "carries no body");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = ok, .headers = crlf },
                       EINVAL, "line break");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = ok, .headers = nocolon },
                       EINVAL, "'NoColon' is not 'Name: value'");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = ok, .headers = many },
                       E2BIG, "more than 32 HTTP headers");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = ok, .headers = longhdrs },
                       E2BIG, "header longer");
        expect_refused(t.http,
                       &(struct mx_http_request){
                               .method = "POST", .url = ok, .body = "{}", .content_type = "a/b\r\nX: y" },
                       EINVAL, "Content-Type");
        expect_refused(
                t.http,
                &(struct mx_http_request){
                        .method = "POST", .url = ok, .body = "x", .body_len = MX_HTTP_REQUEST_BODY_MAX + 1 },
                E2BIG, "request body larger");
        expect_refused(t.http, &(struct mx_http_request){ .method = "GET", .url = ok, .timeout_ms = -1 },
                       EINVAL, "timeout -1 ms");
        expect_refused(t.http,
                       &(struct mx_http_request){ .method = "GET", .url = ok, .connect_timeout_ms = -5 },
                       EINVAL, "connect timeout -5 ms");
        expect_refused(
                t.http,
                &(struct mx_http_request){ .method = "GET", .url = ok, .max_body = MX_HTTP_BODY_MAX + 1 },
                E2BIG, "max_body");
        ASSERT_EQ(mx_http_n_calls(t.http), 0);
        ASSERT_ERR(mx_http_start(t.http, &(struct mx_http_request){ .method = "GET", .url = ok }, NULL, NULL,
                                 NULL, NULL),
                   EINVAL);
        run_for(t.base, 20);
        ctx_done(&t);
}
