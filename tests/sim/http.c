/* SPDX-License-Identifier: MIT */
/*
 * evhttp plumbing shared by the personalities: binding a socket that does not
 * listen yet (vLLM binds before loading and listens after, so clients get
 * "connection refused" meanwhile), routing, JSON replies in the targets'
 * shapes (OpenAI-style {"error": {...}} and FastAPI's {"detail": ...}), and
 * Python's NaN in JSON output.
 */
#include "sim.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <event2/bufferevent.h>
#include <sys/socket.h>

int sim_http_bind(const char *host, int port, int *ret_fd, char **reterr)
{
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
        struct addrinfo *ai = NULL;
        char portstr[16];
        int r, one = 1;

        snprintf(portstr, sizeof(portstr), "%d", port);
        r = getaddrinfo(streq(host, "") ? NULL : host, portstr, &hints, &ai);
        if (r != 0) {
                *reterr = xasprintf("cannot resolve host '%s': %s", host, gai_strerror(r));
                return -EADDRNOTAVAIL;
        }
        _cleanup_close_ int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
                r = -errno;
                freeaddrinfo(ai);
                *reterr = xasprintf("socket: %s", strerror(-r));
                return r;
        }
        /* as vllm/entrypoints/openai/api_server.py :: create_server_socket */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                r = -errno;
                freeaddrinfo(ai);
                *reterr = xasprintf("[Errno %d] error while attempting to bind on address ('%s', %d): %s",
                                    -r, host, port, strerror(-r));
                return r;
        }
        freeaddrinfo(ai);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The port a bound socket got (for --port 0). */
int sim_http_bound_port(int fd)
{
        struct sockaddr_storage ss;
        socklen_t l = sizeof(ss);

        if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
                return -1;
        if (ss.ss_family == AF_INET)
                return ntohs(((struct sockaddr_in *)&ss)->sin_port);
        if (ss.ss_family == AF_INET6)
                return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        return -1;
}

int sim_http_listen(struct sim_server *s, int fd, char **reterr)
{
        if (listen(fd, 128) < 0) {
                *reterr = xasprintf("listen: %s", strerror(errno));
                return -errno;
        }
        evutil_make_socket_nonblocking(fd);
        if (!evhttp_accept_socket_with_handle(s->http, fd)) {
                *reterr = xstrdup("evhttp_accept_socket failed");
                return -EIO;
        }
        s->listening = true;
        return 0;
}

const char *sim_http_reason(int status)
{
        switch (status) {
        case 200:
                return "OK";
        case 400:
                return "Bad Request";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 413:
                return "Request Entity Too Large";
        case 500:
                return "Internal Server Error";
        case 501:
                return "Not Implemented";
        case 503:
                return "Service Unavailable";
        default:
                return "Unknown";
        }
}

const char *sim_http_method(struct evhttp_request *req)
{
        switch (evhttp_request_get_command(req)) {
        case EVHTTP_REQ_GET:
                return "GET";
        case EVHTTP_REQ_POST:
                return "POST";
        case EVHTTP_REQ_HEAD:
                return "HEAD";
        case EVHTTP_REQ_PUT:
                return "PUT";
        case EVHTTP_REQ_DELETE:
                return "DELETE";
        case EVHTTP_REQ_OPTIONS:
                return "OPTIONS";
        default:
                return "OTHER";
        }
}

char *sim_http_peer(struct evhttp_request *req)
{
        struct evhttp_connection *evcon = evhttp_request_get_connection(req);
        const char *addr = NULL;
        uint16_t port = 0;

        if (!evcon)
                return xstrdup("-");
        evhttp_connection_get_peer(evcon, (char **)&addr, &port);
        return xasprintf("%s:%u", strna(addr), port);
}

double sim_nan_sentinel(void)
{
        return -1.2345678901234567e300;
}

/* Replace every occurrence of what in s by with. */
static char *replace_all(const char *s, const char *what, const char *with)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        size_t wl = strlen(what);

        for (const char *p = s;;) {
                const char *hit = strstr(p, what);
                if (!hit) {
                        mx_buf_puts(&b, p);
                        break;
                }
                mx_buf_add(&b, p, hit - p);
                mx_buf_puts(&b, with);
                p = hit + wl;
        }
        return mx_buf_steal(&b);
}

#define SIM_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))

char *sim_json_dump(const json_t *v)
{
        _cleanup_free_ char *s = json_dumps(v, SIM_JSON_FLAGS), *nan = NULL;
        json_auto_t *probe = json_real(sim_nan_sentinel());

        if (!s)
                mx_die("json_dumps failed");
        nan = json_dumps(probe, SIM_JSON_FLAGS | JSON_ENCODE_ANY);
        if (strstr(s, SIM_INVALID_UTF8_MARK)) {
                char *t = replace_all(s, SIM_INVALID_UTF8_MARK, "\xff\xfe");

                free(s);
                s = t;
        }
        if (!nan || !strstr(s, nan))
                return TAKE_PTR(s);
        return replace_all(s, nan, "NaN");
}

static void send_body(struct sim_server *s, struct evhttp_request *req, int status, const char *ctype,
                      const char *body, size_t len)
{
        struct evbuffer *out = evbuffer_new();

        if (!out)
                mx_die("evbuffer_new failed");
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
        evbuffer_add(out, body, len);
        evhttp_send_reply(req, status, sim_http_reason(status), out);
        evbuffer_free(out);
}

void sim_reply_text(struct sim_server *s, struct evhttp_request *req, int status, const char *ctype,
                    const char *body)
{
        if (s->access_log)
                s->access_log(s, req, status);
        send_body(s, req, status, ctype, body, strlen(body));
}

void sim_reply_json(struct sim_server *s, struct evhttp_request *req, int status, json_t *v)
{
        _cleanup_free_ char *body = sim_json_dump(v);

        json_decref(v);
        sim_reply_text(s, req, status, "application/json", body);
}

void sim_reply_error(struct sim_server *s, struct evhttp_request *req, int status, const char *type,
                     const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        sim_reply_json(s, req, status,
                       json_pack("{s:{s:s,s:s,s:n,s:i}}", "error", "message", msg, "type", type, "param",
                                 "code", status));
}

void sim_reply_detail(struct sim_server *s, struct evhttp_request *req, int status, const char *detail)
{
        sim_reply_json(s, req, status, json_pack("{s:s}", "detail", detail));
}

json_t *sim_read_json(struct sim_server *s, struct evhttp_request *req, const char *schema)
{
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        json_error_t e;
        json_t *v;

        v = json_loadb((const char *)evbuffer_pullup(in, -1), len, JSON_REJECT_DUPLICATES, &e);
        if (!v) {
                sim_reply_error(s, req, 400, "BadRequestError",
                                "1 validation error for %s: JSON decode error at line %d column %d: %s",
                                schema, e.line, e.column, e.text);
                return NULL;
        }
        if (!json_is_object(v)) {
                json_decref(v);
                sim_reply_error(s, req, 400, "BadRequestError",
                                "1 validation error for %s: Input should be a valid dictionary or object",
                                schema);
                return NULL;
        }
        return v;
}

static unsigned method_bit(struct evhttp_request *req)
{
        switch (evhttp_request_get_command(req)) {
        case EVHTTP_REQ_GET:
        case EVHTTP_REQ_HEAD:
                return SIM_GET;
        case EVHTTP_REQ_POST:
                return SIM_POST;
        default:
                return 0;
        }
}

/*
 * uvicorn (asyncio) sets TCP_NODELAY on every connection it accepts, as the
 * targets' servers do (bench-methods.md §4.9); without it Nagle holds each
 * small SSE event until the client's delayed ACK, ~40 ms, and tokens arrive
 * in bursts that no real target produces.
 */
static void set_nodelay(struct evhttp_request *req)
{
        struct evhttp_connection *evcon = evhttp_request_get_connection(req);
        struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
        int one = 1;

        if (bev && bufferevent_getfd(bev) >= 0)
                (void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * --api-key (vLLM also VLLM_API_KEY): vLLM guards /v1, /v2, /inference and /cohere with 401
 * {"error": "Unauthorized"} (serve/middleware/authenticate.py; /health, /tokenize, /metrics stay open);
 * llama-server guards everything but /health and the models list (observed on the real server).
 * True when the request may go on; else the 401 has been sent.
 */
static bool authorized(struct sim_server *s, struct evhttp_request *req, const char *path)
{
        const char *key = sim_config_arg(s->cfg, "api-key"), *got;
        _cleanup_free_ char *want = NULL;
        bool guarded;

        if (!key && s->cfg->flavor == SIM_FLAVOR_VLLM)
                key = getenv("VLLM_API_KEY");
        if (!key || !*key || s->cfg->flavor == SIM_FLAVOR_SGLANG)
                return true;
        if (s->cfg->flavor == SIM_FLAVOR_VLLM)
                guarded = startswith(path, "/v1") || startswith(path, "/v2") || startswith(path, "/inference") ||
                          startswith(path, "/cohere");
        else
                guarded = !streq(path, "/health") && !streq(path, "/v1/health") && !streq(path, "/v1/models") &&
                          !streq(path, "/models");
        want = xasprintf("Bearer %s", key);
        got = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
        if (!guarded || streq_ptr(got, want))
                return true;
        if (s->cfg->flavor == SIM_FLAVOR_VLLM)
                sim_reply_json(s, req, 401, json_pack("{s:s}", "error", "Unauthorized"));
        else
                sim_reply_json(s, req, 401, json_pack("{s:{s:s,s:s,s:i}}", "error", "message", "Invalid API Key",
                                                      "type", "authentication_error", "code", 401));
        return false;
}

static void route_cb(struct evhttp_request *req, void *arg)
{
        struct sim_server *s = arg;
        const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
        const char *path = uri ? evhttp_uri_get_path(uri) : NULL;

        set_nodelay(req);
        if (!path || !*path)
                path = "/";
        if (!authorized(s, req, path))
                return;
        for (size_t i = 0; i < s->n_routes; i++) {
                if (!streq(path, s->routes[i].path))
                        continue;
                if (!(s->routes[i].methods & method_bit(req))) {
                        sim_reply_detail(s, req, 405, "Method Not Allowed");
                        return;
                }
                s->routes[i].handler(s, req);
                return;
        }
        sim_reply_detail(s, req, 404, "Not Found");
}

void sim_http_init(struct sim_server *s)
{
        s->http = evhttp_new(s->base);
        if (!s->http)
                mx_die("evhttp_new failed");
        evhttp_set_max_body_size(s->http, SIM_BODY_MAX);
        /* libevent's 50 s default would cut long generations; the targets' servers do not */
        evhttp_set_timeout(s->http, SIM_HTTP_TIMEOUT_S);
        evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                                    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS);
        evhttp_set_gencb(s->http, route_cb, s);
}

void sim_http_done(struct sim_server *s)
{
        if (s->http)
                evhttp_free(s->http);
        s->http = NULL;
}
