/* SPDX-License-Identifier: MIT */
/*
 * The HTTP client (see http.h): libcurl's multi-socket interface on libevent.
 *
 * curl tells us which sockets to watch (socket_cb) and when to wake it
 * (timer_cb); libevent tells curl when a socket is ready or the timer fired
 * (curl_multi_socket_action). Finished transfers are taken off the multi handle
 * at once, but their done callbacks run later, one per pass of the loop, from
 * a separate event (deliver_cb): so a callback never runs inside curl or inside
 * mx_http_start(), and it may free the whole client.
 *
 * A call is in one of four states: active (in the multi handle), done
 * (finished, waiting for delivery), delivering (its callback is running) or
 * reaping (cancelled from inside an on_data callback, when curl forbids
 * removing a handle; deliver_cb removes it).
 */
#include "http.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <curl/curl.h>
#include <event2/event.h>

enum call_state {
        CALL_ACTIVE,
        CALL_DONE,
        CALL_DELIVERING,
        CALL_REAPING,
};

struct call_list {
        struct mx_http_call *head, *tail;
};

struct mx_http_call {
        struct mx_http *http;
        enum call_state state;
        struct mx_http_call *prev, *next; /* in the list of its state */
        CURL *easy;
        struct curl_slist *headers;
        mx_http_done_cb cb;
        mx_http_data_cb on_data;
        void *userdata;
        struct mx_buf body;
        size_t max_body;
        int data_error; /* what on_data returned to abort, or 0 */
        bool cancelled;
        struct mx_http_response resp;
        char errbuf[CURL_ERROR_SIZE];
};

/* One socket curl asked us to watch. */
struct http_sock {
        struct mx_http *http;
        curl_socket_t fd;
        struct event *ev;
        struct http_sock *prev, *next;
};

struct mx_http {
        struct event_base *base;
        CURLM *multi;
        struct event *timer;   /* curl's single timeout */
        struct event *deliver; /* runs done callbacks and reaps, outside curl */
        struct call_list active, done, reaping;
        struct http_sock *socks;
        unsigned n_calls;
        bool in_data_cb; /* inside an on_data callback, i.e. inside curl */
        bool async_dns;  /* curl resolves names without blocking */
};

static bool curl_initialised;


/* The list a call in state c->state lives on; NULL while its callback runs. */
static struct call_list *call_list_of(struct mx_http_call *c)
{
        switch (c->state) {
        case CALL_ACTIVE:
                return &c->http->active;
        case CALL_DONE:
                return &c->http->done;
        case CALL_REAPING:
                return &c->http->reaping;
        default:
                return NULL;
        }
}

/* Put a call into state, at the end of that state's list (done calls are delivered in order). */
static void call_link(struct mx_http_call *c, enum call_state state)
{
        struct call_list *l;

        c->state = state;
        l = call_list_of(c);
        c->prev = l->tail;
        c->next = NULL;
        if (l->tail)
                l->tail->next = c;
        else
                l->head = c;
        l->tail = c;
}

static void call_unlink(struct mx_http_call *c)
{
        struct call_list *l = call_list_of(c);

        if (!l)
                return;
        if (c->prev)
                c->prev->next = c->next;
        else
                l->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                l->tail = c->prev;
        c->prev = c->next = NULL;
}

/* Free a call that is in no list and no longer in the multi handle. */
static void call_free(struct mx_http_call *c)
{
        if (c->easy)
                curl_easy_cleanup(c->easy);
        curl_slist_free_all(c->headers);
        mx_buf_free(&c->body);
        free(c->resp.body);
        free(c->resp.content_type);
        free(c);
}

/* Drop a call that has not been delivered, taking it out of curl if still there; no callback runs. */
static void call_discard(struct mx_http_call *c)
{
        struct mx_http *h = c->http;

        call_unlink(c);
        if (c->state == CALL_ACTIVE || c->state == CALL_REAPING)
                curl_multi_remove_handle(h->multi, c->easy);
        h->n_calls--;
        call_free(c);
}

/* Map a finished transfer's CURLcode (and the socket errno curl saw) to http.h's error classes. */
static int http_error_from_curl(CURLcode rc, long os_errno)
{
        switch (rc) {
        case CURLE_OK:
                return 0;
        case CURLE_COULDNT_CONNECT:
                if (os_errno == EHOSTUNREACH || os_errno == ENETUNREACH)
                        return -EHOSTUNREACH;
                /* a listener that accepted and reset at once is a dying server, not a loading one */
                if (os_errno == ETIMEDOUT || os_errno == ECONNRESET)
                        return -os_errno;
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
                return -EHOSTUNREACH;
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_SEND_ERROR:
                return os_errno == ECONNRESET ? -ECONNRESET : -EPIPE;
        case CURLE_RECV_ERROR:
                /* curl records the socket's errno on a failed read; without one it was bad chunking */
                return os_errno != 0 ? -ECONNRESET : -EPROTO;
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
                return -ECONNRESET;
        case CURLE_WEIRD_SERVER_REPLY:
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_BAD_CONTENT_ENCODING:
                return -EPROTO;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

/* Record how a transfer ended, take it out of curl and queue its delivery. */
static void call_complete(struct mx_http_call *c, CURLcode rc)
{
        struct mx_http *h = c->http;
        struct mx_http_response *r = &c->resp;
        const char *ct = NULL;
        long os_errno = 0;

        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &r->status);
        curl_easy_getinfo(c->easy, CURLINFO_OS_ERRNO, &os_errno);
        curl_easy_getinfo(c->easy, CURLINFO_CONNECT_TIME, &r->connect_s);
        curl_easy_getinfo(c->easy, CURLINFO_STARTTRANSFER_TIME, &r->starttransfer_s);
        curl_easy_getinfo(c->easy, CURLINFO_TOTAL_TIME, &r->total_s);
        if (curl_easy_getinfo(c->easy, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
                r->content_type = xstrdup(ct);

        if (c->data_error < 0)
                r->error = c->data_error;
        else if (rc == CURLE_WRITE_ERROR && c->resp.truncated && !c->on_data)
                r->error = 0; /* we stopped reading at max_body (http.h) */
        else
                r->error = http_error_from_curl(rc, os_errno);
        if (r->error != 0)
                r->error_text = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
        r->body_len = c->body.len;
        r->body = mx_buf_steal(&c->body);

        call_unlink(c);
        curl_multi_remove_handle(h->multi, c->easy);
        call_link(c, CALL_DONE);
}

/* Collect the transfers curl has finished; called after every curl_multi_socket_action(). */
static void http_check_done(struct mx_http *h)
{
        CURLMsg *msg;
        int left;

        while ((msg = curl_multi_info_read(h->multi, &left))) {
                struct mx_http_call *c;
                CURLcode rc = msg->data.result;
                char *priv = NULL;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
                c = (struct mx_http_call *)(void *)priv;
                /* a reaping call was cancelled: deliver_cb removes it without a callback */
                if (c && c->state == CALL_ACTIVE)
                        call_complete(c, rc);
        }
        if (h->done.head)
                event_active(h->deliver, EV_TIMEOUT, 0);
}

/*
 * Remove cancelled calls, then run one done callback; more than one would make
 * a callback that frees the client pull the list from under this loop.
 */
static void deliver_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct mx_http *h = userdata;
        struct mx_http_call *c;

        while (h->reaping.head)
                call_discard(h->reaping.head);

        c = h->done.head;
        if (!c)
                return;
        call_unlink(c);
        h->n_calls--;
        c->state = CALL_DELIVERING;
        if (h->done.head)
                event_active(h->deliver, EV_TIMEOUT, 0);
        c->cb(c, &c->resp, c->userdata);
        call_free(c);
}

/* libevent says a socket is ready: tell curl. */
static void sock_event_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct http_sock *s = userdata;
        struct mx_http *h = s->http;
        int flags = 0, running;

        if (what & EV_READ)
                flags |= CURL_CSELECT_IN;
        if (what & EV_WRITE)
                flags |= CURL_CSELECT_OUT;
        curl_multi_socket_action(h->multi, fd, flags, &running);
        /* s may be gone now: curl may have closed the socket */
        http_check_done(h);
}

static void sock_free(struct http_sock *s)
{
        struct mx_http *h = s->http;

        if (s->prev)
                s->prev->next = s->next;
        else
                h->socks = s->next;
        if (s->next)
                s->next->prev = s->prev;
        event_free(s->ev);
        free(s);
}

/* CURLMOPT_SOCKETFUNCTION: curl wants a socket watched for what, or forgotten. */
static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
        struct mx_http *h = userp;
        struct http_sock *s = socketp;
        short kind = EV_PERSIST;

        if (what == CURL_POLL_REMOVE) {
                if (s)
                        sock_free(s);
                curl_multi_assign(h->multi, fd, NULL);
                return 0;
        }
        if (!s) {
                s = xcalloc(1, sizeof(*s));
                s->http = h;
                s->fd = fd;
                s->next = h->socks;
                if (h->socks)
                        h->socks->prev = s;
                h->socks = s;
                s->ev = event_new(h->base, fd, 0, sock_event_cb, s);
                if (!s->ev)
                        mx_die("event_new() failed for an HTTP socket");
                curl_multi_assign(h->multi, fd, s);
        }
        if (what & CURL_POLL_IN)
                kind |= EV_READ;
        if (what & CURL_POLL_OUT)
                kind |= EV_WRITE;
        event_del(s->ev);
        event_assign(s->ev, h->base, fd, kind, sock_event_cb, s);
        if (kind & (EV_READ | EV_WRITE))
                event_add(s->ev, NULL);
        return 0;
}

/* curl's timeout expired. */
static void timer_event_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct mx_http *h = userdata;
        int running;

        curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        http_check_done(h);
}

/* CURLMOPT_TIMERFUNCTION: curl wants to be woken after timeout_ms (-1: never). */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
        struct mx_http *h = userp;
        struct timeval tv;

        if (timeout_ms < 0) {
                evtimer_del(h->timer);
                return 0;
        }
        tv = (struct timeval){ .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
        evtimer_add(h->timer, &tv);
        return 0;
}

/* CURLOPT_WRITEFUNCTION: keep up to max_body bytes and hand every byte to on_data. */
static size_t write_cb(char *p, size_t size, size_t nmemb, void *userdata)
{
        struct mx_http_call *c = userdata;
        size_t n = size * nmemb, keep;
        int r;

        if (c->cancelled)
                return 0;
        keep = MX_MIN(n, c->max_body - c->body.len);
        mx_buf_add(&c->body, p, keep);
        if (keep < n)
                c->resp.truncated = true;
        if (!c->on_data)
                return keep < n ? 0 : n;

        c->http->in_data_cb = true;
        r = c->on_data(c->userdata, p, n, mx_now_mono_us());
        c->http->in_data_cb = false;
        if (c->cancelled)
                return 0;
        if (r < 0) {
                c->data_error = r;
                return 0;
        }
        return n;
}

/* A header line must be "Name: value" on one line, so that no request can smuggle another. */
static int check_header(const char *line, char **reterr)
{
        const char *colon = strchr(line, ':');

        if (strlen(line) > MX_HTTP_HEADER_MAX)
                return mx_reterr(reterr, -E2BIG, "HTTP header longer than %d bytes", MX_HTTP_HEADER_MAX);
        if (strpbrk(line, "\r\n"))
                return mx_reterr(reterr, -EINVAL, "HTTP header '%.64s' contains a line break", line);
        if (!colon || colon == line)
                return mx_reterr(reterr, -EINVAL, "HTTP header '%.64s' is not 'Name: value'", line);
        return 0;
}

/* True when host (as CURLU returns it: IPv6 in brackets) is a numeric address. */
static bool host_is_numeric(const char *host)
{
        unsigned char buf[sizeof(struct in6_addr)];
        size_t n = strlen(host);

        if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
                _cleanup_free_ char *inner = xstrndup(host + 1, n - 2);
                char *zone = strchr(inner, '%');

                if (zone)
                        *zone = '\0';
                return inet_pton(AF_INET6, inner, buf) == 1;
        }
        return inet_pton(AF_INET, host, buf) == 1;
}

/* The URL must parse, be plain http, and name a host we can reach without blocking. */
static int check_url(const struct mx_http *h, const char *url, char **reterr)
{
        CURLU *u;
        char *scheme = NULL, *host = NULL;
        int r = 0;

        if (strlen(url) > MX_HTTP_URL_MAX)
                return mx_reterr(reterr, -E2BIG, "URL longer than %d bytes", MX_HTTP_URL_MAX);
        u = curl_url();
        if (!u)
                mx_die("curl_url() failed");
        if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK)
                r = mx_reterr(reterr, -EINVAL, "'%.128s' is not a valid URL", url);
        else if (!streq(scheme, "http"))
                r = mx_reterr(reterr, -EINVAL, "URL '%.128s': only http:// is supported", url);
        else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
                r = mx_reterr(reterr, -EINVAL, "URL '%.128s' names no host", url);
        else if (!h->async_dns && !host_is_numeric(host))
                r = mx_reterr(reterr, -EINVAL,
                         "URL '%.128s': this libcurl resolves names by blocking; use a numeric address",
                         url);
        curl_free(scheme);
        curl_free(host);
        curl_url_cleanup(u);
        return r;
}

/* Check a request against http.h's limits before anything is allocated for it. */
static int check_request(const struct mx_http *h, const struct mx_http_request *req, char **reterr)
{
        size_t n_headers = 0;
        int r;

        if (!req->method || (!streq(req->method, "GET") && !streq(req->method, "POST")))
                return mx_reterr(reterr, -EINVAL, "HTTP method '%s' not supported (GET or POST)",
                            strna(req->method));
        if (!req->url)
                return mx_reterr(reterr, -EINVAL, "HTTP request without a URL");
        r = check_url(h, req->url, reterr);
        if (r < 0)
                return r;
        if (req->body && streq(req->method, "GET"))
                return mx_reterr(reterr, -EINVAL, "GET %.128s: a GET request carries no body", req->url);
        if (req->body && (req->body_len ? req->body_len : strlen(req->body)) > MX_HTTP_REQUEST_BODY_MAX)
                return mx_reterr(reterr, -E2BIG, "request body larger than %d bytes", MX_HTTP_REQUEST_BODY_MAX);
        if (req->content_type && strpbrk(req->content_type, "\r\n"))
                return mx_reterr(reterr, -EINVAL, "Content-Type contains a line break");
        for (const char *const *l = req->headers; l && *l; l++) {
                if (++n_headers > MX_HTTP_HEADERS_MAX)
                        return mx_reterr(reterr, -E2BIG, "more than %d HTTP headers", MX_HTTP_HEADERS_MAX);
                r = check_header(*l, reterr);
                if (r < 0)
                        return r;
        }
        if (req->timeout_ms < 0 || req->timeout_ms > MX_HTTP_TIMEOUT_MAX_MS)
                return mx_reterr(reterr, -EINVAL, "HTTP timeout %" PRId64 " ms out of range (0..%lld)",
                            req->timeout_ms, MX_HTTP_TIMEOUT_MAX_MS);
        if (req->connect_timeout_ms < 0 || req->connect_timeout_ms > MX_HTTP_TIMEOUT_MAX_MS)
                return mx_reterr(reterr, -EINVAL, "HTTP connect timeout %" PRId64 " ms out of range (0..%lld)",
                            req->connect_timeout_ms, MX_HTTP_TIMEOUT_MAX_MS);
        if (req->max_body > MX_HTTP_BODY_MAX)
                return mx_reterr(reterr, -E2BIG, "max_body %zu larger than %d bytes", req->max_body,
                            MX_HTTP_BODY_MAX);
        return 0;
}

static void easy_setopt_or_die(CURLcode rc, const char *what)
{
        if (rc != CURLE_OK)
                mx_die("curl_easy_setopt(%s): %s", what, curl_easy_strerror(rc));
}
#define SETOPT(easy, opt, val) easy_setopt_or_die(curl_easy_setopt(easy, opt, val), #opt)

/* The easy handle for a checked request; options that cannot fail for valid input abort on failure. */
static void call_setup(struct mx_http_call *c, const struct mx_http_request *req)
{
        CURL *e = c->easy;
        int64_t timeout_ms = req->timeout_ms ?: MX_HTTP_TIMEOUT_DEFAULT_MS;
        int64_t connect_ms = req->connect_timeout_ms ?: MX_HTTP_CONNECT_TIMEOUT_DEFAULT_MS;

        SETOPT(e, CURLOPT_URL, req->url);
        SETOPT(e, CURLOPT_PRIVATE, (char *)c);
        SETOPT(e, CURLOPT_ERRORBUFFER, c->errbuf);
        SETOPT(e, CURLOPT_WRITEFUNCTION, write_cb);
        SETOPT(e, CURLOPT_WRITEDATA, c);
        /* no SIGALRM from curl in a daemon with its own signal handling (systemd-practice.md §1) */
        SETOPT(e, CURLOPT_NOSIGNAL, 1L);
        /* a proxy from the environment must never intercept loopback probes */
        SETOPT(e, CURLOPT_NOPROXY, "*");
        SETOPT(e, CURLOPT_FOLLOWLOCATION, 0L);
        SETOPT(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        SETOPT(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        SETOPT(e, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
        SETOPT(e, CURLOPT_USERAGENT, "mxmatrixd/" MX_VERSION);

        if (streq(req->method, "POST")) {
                const char *body = req->body ?: "";
                size_t len = req->body ? (req->body_len ?: strlen(req->body)) : 0;

                SETOPT(e, CURLOPT_POST, 1L);
                SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
                SETOPT(e, CURLOPT_COPYPOSTFIELDS, body);
                c->headers = curl_slist_append(c->headers, "Expect:"); /* no 100-continue round trip */
                if (req->body) {
                        _cleanup_free_ char *ct =
                                xasprintf("Content-Type: %s", req->content_type ?: "application/json");
                        c->headers = curl_slist_append(c->headers, ct);
                }
        } else
                SETOPT(e, CURLOPT_HTTPGET, 1L);
        for (const char *const *l = req->headers; l && *l; l++)
                c->headers = curl_slist_append(c->headers, *l);
        if (req->headers && !c->headers)
                mx_die("curl_slist_append() failed");
        SETOPT(e, CURLOPT_HTTPHEADER, c->headers);
}

int mx_http_start(struct mx_http *h, const struct mx_http_request *req, mx_http_done_cb cb, void *userdata,
                  struct mx_http_call **ret_call, char **reterr)
{
        struct mx_http_call *c;
        CURLMcode mrc;
        int r;

        if (!h || !req || !cb)
                return mx_reterr(reterr, -EINVAL, "mx_http_start() without a client, request or callback");
        if (h->in_data_cb)
                return mx_reterr(reterr, -EAGAIN, "cannot start an HTTP request from an on_data callback");
        if (h->n_calls >= MX_HTTP_CALLS_MAX)
                return mx_reterr(reterr, -EBUSY, "%d HTTP requests already in flight", MX_HTTP_CALLS_MAX);
        r = check_request(h, req, reterr);
        if (r < 0)
                return r;

        c = xcalloc(1, sizeof(*c));
        c->http = h;
        c->cb = cb;
        c->on_data = req->on_data;
        c->userdata = userdata;
        c->max_body = req->max_body ?: MX_HTTP_BODY_DEFAULT;
        c->resp.t_start_mono_us = mx_now_mono_us();
        c->easy = curl_easy_init();
        if (!c->easy)
                mx_die("curl_easy_init() failed");
        call_setup(c, req);

        mrc = curl_multi_add_handle(h->multi, c->easy);
        if (mrc != CURLM_OK) {
                call_free(c);
                return mx_reterr(reterr, mrc == CURLM_OUT_OF_MEMORY ? -ENOMEM : -EIO, "curl_multi_add_handle: %s",
                            curl_multi_strerror(mrc));
        }
        call_link(c, CALL_ACTIVE);
        h->n_calls++;
        if (ret_call)
                *ret_call = c;
        return 0;
}

void mx_http_cancel(struct mx_http_call *c)
{
        if (!c || c->state == CALL_DELIVERING || c->state == CALL_REAPING)
                return;
        c->cancelled = true;
        if (c->state == CALL_ACTIVE && c->http->in_data_cb) {
                /* curl forbids removing a handle from inside its callbacks: deliver_cb does it */
                call_unlink(c);
                call_link(c, CALL_REAPING);
                event_active(c->http->deliver, EV_TIMEOUT, 0);
                return;
        }
        call_discard(c);
}

unsigned mx_http_n_calls(const struct mx_http *h)
{
        return h ? h->n_calls : 0;
}

int mx_http_new(struct event_base *base, struct mx_http **ret, char **reterr)
{
        struct mx_http *h;
        CURLcode rc;

        if (!base)
                return mx_reterr(reterr, -EINVAL, "mx_http_new() without an event base");
        /* curl_global_init() is not thread-safe; the daemon is single-threaded */
        if (!curl_initialised) {
                rc = curl_global_init(CURL_GLOBAL_DEFAULT);
                if (rc != CURLE_OK)
                        return mx_reterr(reterr, -EIO, "curl_global_init: %s", curl_easy_strerror(rc));
                curl_initialised = true;
        }

        h = xcalloc(1, sizeof(*h));
        h->base = base;
        h->async_dns = curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_ASYNCHDNS;
        h->multi = curl_multi_init();
        h->timer = evtimer_new(base, timer_event_cb, h);
        h->deliver = event_new(base, -1, 0, deliver_cb, h);
        if (!h->multi || !h->timer || !h->deliver)
                mx_die("cannot create the HTTP client's curl multi handle or events");
        curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
        curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
        curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
        curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
        *ret = h;
        return 0;
}

struct mx_http *mx_http_free(struct mx_http *h)
{
        if (!h)
                return NULL;
        if (h->in_data_cb)
                mx_die("mx_http_free() called from an on_data callback");
        while (h->active.head)
                call_discard(h->active.head);
        while (h->reaping.head)
                call_discard(h->reaping.head);
        while (h->done.head)
                call_discard(h->done.head);
        /* closes cached connections, which may call socket_cb to forget their sockets */
        curl_multi_cleanup(h->multi);
        while (h->socks)
                sock_free(h->socks);
        event_free(h->timer);
        event_free(h->deliver);
        free(h);
        return NULL;
}
