/* SPDX-License-Identifier: MIT */
/* The client end of the control socket: connect, handshake, one request and its reply or stream. */
#include "conn.h"
#include "protocol.h"

#include <inttypes.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#define MX_DEFAULT_SOCKET "/run/mxmatrix/control.sock"
#define CLIENT_LINE_MAX (64 * 1024 * 1024) /* a reply line; log chunks are far smaller */
#define CLIENT_TIMEOUT_DEFAULT_S 60
#define CLIENT_TIMEOUT_MAX_S (24 * 3600)

struct client_conn {
        int fd;
        struct mx_buf in; /* bytes read but not yet consumed */
        int64_t next_id;
        int64_t timeout_ms; /* for each answer; 0: wait forever */
        int64_t deadline;   /* monotonic µs; 0: none (a stream is flowing) */
        void (*idle)(void *ud); /* called every idle_ms while a stream is quiet */
        void *idle_ud;
        int idle_ms;
};

void client_on_idle(struct client_conn *c, void (*fn)(void *ud), void *ud, int interval_ms)
{
        c->idle = fn;
        c->idle_ud = ud;
        c->idle_ms = interval_ms;
}

int client_timeout_ms(int64_t *ret)
{
        const char *v = arg_timeout ? arg_timeout : getenv("MXMATRIX_TIMEOUT");
        int64_t s;

        if (!v || !*v) {
                *ret = CLIENT_TIMEOUT_DEFAULT_S * 1000;
                return 0;
        }
        if (mx_parse_int64(v, 0, CLIENT_TIMEOUT_MAX_S, &s) < 0) {
                fprintf(stderr, "mxmatrix: %s '%s': expected whole seconds from 0 (no limit) to %d\n",
                        arg_timeout ? "--timeout" : "MXMATRIX_TIMEOUT", v, CLIENT_TIMEOUT_MAX_S);
                return -EINVAL;
        }
        *ret = s * 1000;
        return 0;
}

static int timed_out(const struct client_conn *c)
{
        fprintf(stderr,
                "mxmatrix: mxmatrixd did not answer within %" PRId64 " s (stopped or overloaded?); "
                "--timeout or MXMATRIX_TIMEOUT sets the limit\n",
                c->timeout_ms / 1000);
        return MX_EXIT_UNAVAILABLE;
}

const char *client_socket_path(void)
{
        const char *e = getenv("MXMATRIX_SOCKET");

        if (arg_socket)
                return arg_socket;
        return e && *e ? e : MX_DEFAULT_SOCKET;
}

struct client_conn *client_disconnect(struct client_conn *c)
{
        if (!c)
                return NULL;
        if (c->fd >= 0)
                close(c->fd);
        mx_buf_free(&c->in);
        free(c);
        return NULL;
}

static int send_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Read one line (without the newline) into *ret; -EPIPE when the daemon closed the connection. */
static int read_line(struct client_conn *c, char **ret)
{
        for (;;) {
                char *nl = c->in.len ? memchr(c->in.data, '\n', c->in.len) : NULL;
                char chunk[65536];
                ssize_t n;

                if (nl) {
                        size_t len = (size_t)(nl - c->in.data);

                        *ret = xstrndup(c->in.data, len);
                        memmove(c->in.data, nl + 1, c->in.len - len - 1);
                        c->in.len -= len + 1;
                        c->in.data[c->in.len] = '\0';
                        return 0;
                }
                if (c->in.len > CLIENT_LINE_MAX)
                        return -EMSGSIZE;
                if (c->deadline > 0) {
                        struct pollfd p = { .fd = c->fd, .events = POLLIN };
                        int64_t left = c->deadline - mx_now_mono_us();
                        int k;

                        if (left <= 0)
                                return -ETIMEDOUT;
                        k = poll(&p, 1, (int)MX_MIN((left + 999) / 1000, INT32_MAX));
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return -errno;
                        if (k == 0)
                                return -ETIMEDOUT;
                } else if (c->idle) {
                        /* A quiet stream: wake now and then for the caller (follow's progress line). */
                        struct pollfd p = { .fd = c->fd, .events = POLLIN };
                        int k = poll(&p, 1, c->idle_ms);

                        if (k < 0 && errno != EINTR)
                                return -errno;
                        if (k <= 0) {
                                c->idle(c->idle_ud);
                                continue;
                        }
                }
                n = recv(c->fd, chunk, sizeof(chunk), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EPIPE;
                mx_buf_add(&c->in, chunk, (size_t)n);
        }
}

int client_exit_code_for(const char *code)
{
        static const struct {
                const char *code;
                int exit;
        } map[] = {
                { "bad-request", MX_EXIT_USAGE },         { "protocol-mismatch", MX_EXIT_UNAVAILABLE },
                { "unknown-method", MX_EXIT_UNAVAILABLE }, { "permission-denied", MX_EXIT_DENIED },
                { "not-found", MX_EXIT_NOTFOUND },        { "matrix-error", MX_EXIT_INPUT },
                { "limit-exceeded", MX_EXIT_FAILURE },    { "invalid-state", MX_EXIT_FAILURE },
                { "internal", MX_EXIT_FAILURE },
        };

        for (size_t i = 0; code && i < ELEMENTSOF(map); i++)
                if (streq(code, map[i].code))
                        return map[i].exit;
        return MX_EXIT_FAILURE;
}

/* Send {"id","method","params"} and read until the reply with that id arrives. */
int client_call(struct client_conn *c, const char *method, json_t *params, client_stream_fn stream, void *ud,
                json_t **ret_result, char **ret_error_code)
{
        _cleanup_json_ json_t *req = NULL;
        _cleanup_free_ char *text = NULL;
        int64_t id = ++c->next_id;
        int r;

        req = json_pack("{s:I,s:s,s:O?}", "id", (json_int_t)id, "method", method, "params", params);
        text = json_dumps(req, JSON_COMPACT);
        c->deadline = c->timeout_ms > 0 ? mx_now_mono_us() + c->timeout_ms * 1000 : 0;
        r = send_all(c->fd, text, strlen(text));
        if (r >= 0)
                r = send_all(c->fd, "\n", 1);
        /* Refused at once (too many clients): the daemon's reason may already be waiting to be read. */
        if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
                if (r == -EAGAIN || r == -EWOULDBLOCK)
                        return timed_out(c);
                fprintf(stderr, "mxmatrix: cannot send to mxmatrixd: %s\n", strerror(-r));
                return MX_EXIT_UNAVAILABLE;
        }
        for (;;) {
                _cleanup_free_ char *line = NULL;
                _cleanup_json_ json_t *msg = NULL;
                json_t *v;
                json_error_t err;

                r = read_line(c, &line);
                if (r == -ETIMEDOUT)
                        return timed_out(c);
                if (r < 0) {
                        fprintf(stderr, "mxmatrix: lost the connection to mxmatrixd: %s\n",
                                r == -EPIPE ? "closed by the daemon" : strerror(-r));
                        return MX_EXIT_UNAVAILABLE;
                }
                msg = json_loads(line, 0, &err);
                if (!msg) {
                        fprintf(stderr, "mxmatrix: malformed reply from mxmatrixd: %s\n", err.text);
                        return MX_EXIT_UNAVAILABLE;
                }
                if ((v = json_object_get(msg, "stream"))) {
                        /* The daemon answered; a stream (follow, logs -f) may then be quiet for hours. */
                        c->deadline = 0;
                        if (stream && stream(v, ud) != 0)
                                return MX_EXIT_OK;
                        continue;
                }
                if ((v = json_object_get(msg, "error"))) {
                        const char *code = json_string_value(json_object_get(v, "code"));

                        fprintf(stderr, "mxmatrix: %s: %s\n", strna(code),
                                strna(json_string_value(json_object_get(v, "message"))));
                        if (ret_error_code)
                                *ret_error_code = code ? xstrdup(code) : NULL;
                        return client_exit_code_for(code);
                }
                if (json_integer_value(json_object_get(msg, "id")) != id)
                        continue;
                if (ret_result)
                        *ret_result = json_incref(json_object_get(msg, "result"));
                return MX_EXIT_OK;
        }
}

static int connect_path(const char *path, int64_t timeout_ms, int *ret_fd)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
        _cleanup_close_ int fd = -1;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* Bounds connect() on a full backlog (a stopped daemon) and every send. */
        if (timeout_ms > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int client_connect(struct client_conn **ret)
{
        const char *path = client_socket_path();
        _cleanup_(client_disconnectp) struct client_conn *c = xcalloc(1, sizeof(*c));
        _cleanup_json_ json_t *params = NULL, *result = NULL;
        int r;

        c->fd = -1;
        if (client_timeout_ms(&c->timeout_ms) < 0)
                return MX_EXIT_USAGE;
        r = connect_path(path, c->timeout_ms, &c->fd);
        if (r == -EAGAIN || r == -EWOULDBLOCK || r == -EINPROGRESS)
                return timed_out(c);
        if (r == -ENOENT || r == -ECONNREFUSED) {
                fprintf(stderr, "mxmatrix: mxmatrixd is not running (no daemon on %s; is mxmatrixd.socket enabled?)\n",
                        path);
                return MX_EXIT_UNAVAILABLE;
        }
        if (r == -EACCES || r == -EPERM) {
                fprintf(stderr, "mxmatrix: permission denied on %s (are you in the mxmatrix group?)\n", path);
                return MX_EXIT_DENIED;
        }
        if (r < 0) {
                fprintf(stderr, "mxmatrix: cannot connect to %s: %s\n", path, strerror(-r));
                return MX_EXIT_UNAVAILABLE;
        }
        params = json_pack("{s:i,s:s}", "protocol", mx_proto_get()->version, "client", "mxmatrix " MX_VERSION);
        /* Errors keep their own exit status: too many clients (limit-exceeded) is 1, as mxmatrix(1) says. */
        r = client_call(c, "hello", params, NULL, NULL, &result, NULL);
        if (r != MX_EXIT_OK)
                return r;
        *ret = TAKE_PTR(c);
        return MX_EXIT_OK;
}
