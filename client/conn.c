/* SPDX-License-Identifier: MIT */
#include "conn.h"
#include "protocol.h"

#include <sys/socket.h>
#include <sys/un.h>

#define MX_DEFAULT_SOCKET "/run/mxmatrix/control.sock"
#define CLIENT_LINE_MAX (64 * 1024 * 1024) /* a reply line; log chunks are far smaller */

struct client_conn {
        int fd;
        struct mx_buf in; /* bytes read but not yet consumed */
        int64_t next_id;
};

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
        r = send_all(c->fd, text, strlen(text));
        if (r >= 0)
                r = send_all(c->fd, "\n", 1);
        if (r < 0) {
                fprintf(stderr, "mxmatrix: cannot send to mxmatrixd: %s\n", strerror(-r));
                return MX_EXIT_UNAVAILABLE;
        }
        for (;;) {
                _cleanup_free_ char *line = NULL;
                _cleanup_json_ json_t *msg = NULL;
                json_t *v;
                json_error_t err;

                r = read_line(c, &line);
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

static int connect_path(const char *path, int *ret_fd)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
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
        r = connect_path(path, &c->fd);
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
        r = client_call(c, "hello", params, NULL, NULL, &result, NULL);
        if (r != MX_EXIT_OK)
                return r == MX_EXIT_FAILURE ? MX_EXIT_UNAVAILABLE : r;
        *ret = TAKE_PTR(c);
        return MX_EXIT_OK;
}
