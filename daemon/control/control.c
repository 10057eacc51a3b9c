/* SPDX-License-Identifier: MIT */
/*
 * The control socket: connections, framing, handshake, limits, credentials, dispatch through the
 * method table main.c hands over.
 */
#include "control.h"
#include "log.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define MX_CONN_GROUPS_MAX 256

struct mx_conn {
        struct mx_control *control;
        struct bufferevent *bev;
        struct event *deadline; /* hello or a partial frame must complete before it fires */
        struct event *idle;     /* after hello: no request and no stream open for limits.idle_timeout_ms */
        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool admin;
        bool hello;
        bool closing; /* flush what is queued, then close */
        bool eof;     /* the client shut down its sending side: answer what it sent, then close */
        struct mx_request **requests; /* streaming requests kept open */
        size_t n_requests, cap_requests;
        struct mx_conn *next;
};

struct kept {
        void (*on_close)(struct mx_request *, void *);
        void (*on_drain)(struct mx_request *, void *);
        void *ud, *drain_ud;
};

/* Per-request bookkeeping that methods do not see. */
struct request_priv {
        struct mx_request pub;
        struct kept kept;
        bool is_kept;
};

struct mx_control {
        struct mx_daemon *d;
        const struct mx_method *methods; /* terminated by a NULL name */
        const struct mx_control_hooks *hooks;
        struct evconnlistener *listener;
        struct mx_conn *conns;
        unsigned n_conns;
};

static void conn_free(struct mx_conn *c);
static void conn_arm_deadline(struct mx_conn *c);
static void conn_idle_update(struct mx_conn *c);

unsigned control_n_connections(struct mx_control *c)
{
        return c->n_conns;
}

static mx_method_fn methods_lookup(const struct mx_method *methods, const char *name)
{
        for (const struct mx_method *m = methods; m->name; m++)
                if (streq(m->name, name))
                        return m->fn;
        return NULL;
}

/* Every protocol method has a handler and vice versa; -EINVAL with *reterr otherwise. */
static int methods_check_table(const struct mx_method *methods, const struct mx_proto *p, char **reterr)
{
        for (size_t i = 0; i < p->n_methods; i++)
                if (!methods_lookup(methods, p->methods[i].name)) {
                        *reterr = xasprintf("protocol method '%s' has no handler", p->methods[i].name);
                        return -EINVAL;
                }
        for (const struct mx_method *m = methods; m->name; m++)
                if (!mx_proto_find(p, m->name)) {
                        *reterr = xasprintf("handler '%s' is not in the protocol description", m->name);
                        return -EINVAL;
                }
        return 0;
}

static unsigned conns_of_uid(struct mx_control *ctl, uid_t uid)
{
        unsigned n = 0;

        for (struct mx_conn *c = ctl->conns; c; c = c->next)
                n += c->uid == uid;
        return n;
}

/*
 * Read nothing more; close once what is queued is written (the write
 * callback), or after the frame timeout if the client does not read it.
 */
static void conn_close_soon(struct mx_conn *c)
{
        c->closing = true;
        bufferevent_disable(c->bev, EV_READ);
        conn_arm_deadline(c);
}

/* Send one message; a client that does not read its replies is dropped. */
static void conn_send(struct mx_conn *c, json_t *msg)
{
        struct evbuffer *out = bufferevent_get_output(c->bev);
        _cleanup_free_ char *text = NULL;

        if (c->closing)
                return; /* its last message is queued; streams may still try */
        text = json_dumps(msg, JSON_COMPACT);
        if (!text)
                mx_die("cannot encode a reply");
        if (evbuffer_get_length(out) > c->control->d->cfg.limits.output_bytes) {
                log_warning("dropping client uid %u pid %d: %zu bytes of replies unread", (unsigned)c->uid,
                            (int)c->pid, evbuffer_get_length(out));
                evbuffer_drain(out, evbuffer_get_length(out));
                /* Something to write, so the write callback runs and closes the connection. */
                evbuffer_add_printf(out, "{\"id\":null,\"error\":{\"code\":\"limit-exceeded\","
                                         "\"message\":\"too many unread replies\"}}\n");
                conn_close_soon(c);
                return;
        }
        evbuffer_add(out, text, strlen(text));
        evbuffer_add(out, "\n", 1);
}

static void conn_send_error(struct mx_conn *c, json_t *id, const char *code, const char *message)
{
        _cleanup_json_ json_t *m = json_pack("{s:O?,s:{s:s,s:s}}", "id", id, "error", "code", code, "message",
                                             message);
        conn_send(c, m);
}

/* Reply with an error and close the connection once the reply is out. */
static void conn_fatal(struct mx_conn *c, json_t *id, const char *code, const char *fmt, ...) _printf_(4, 5);
static void conn_fatal(struct mx_conn *c, json_t *id, const char *code, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL, *esc = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        esc = mx_escape(msg, 512);
        log_info("closing client uid %u pid %d: %s", (unsigned)c->uid, (int)c->pid, esc);
        conn_send_error(c, id, code, msg);
        conn_close_soon(c);
}

static struct request_priv *priv_of(struct mx_request *r)
{
        return (struct request_priv *)r;
}

static void request_free(struct mx_request *req)
{
        json_decref(req->id);
        json_decref(req->params);
        free(priv_of(req));
}

static void conn_forget_request(struct mx_conn *c, struct mx_request *req)
{
        for (size_t i = 0; i < c->n_requests; i++)
                if (c->requests[i] == req) {
                        c->requests[i] = c->requests[--c->n_requests];
                        return;
                }
}

static void request_done(struct mx_request *req)
{
        struct mx_conn *c = req->conn;
        bool kept = priv_of(req)->is_kept;

        if (kept)
                conn_forget_request(c, req);
        request_free(req);
        if (kept)
                conn_idle_update(c); /* the last stream ended: the connection may now be idle */
}

void request_reply(struct mx_request *req, json_t *result)
{
        _cleanup_json_ json_t *m = json_pack("{s:O,s:o}", "id", req->id, "result", result ? result : json_object());

        conn_send(req->conn, m);
        request_done(req);
}

void request_error(struct mx_request *req, const char *code, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        msg = xvasprintf(fmt, ap);
        va_end(ap);
        conn_send_error(req->conn, req->id, code, msg);
        request_done(req);
}

void request_error_errno(struct mx_request *req, int r, const char *what)
{
        switch (-r) {
        case ENOENT:
                request_error(req, "not-found", "%s: no such job or run", what);
                break;
        case EBUSY:
        case ESTALE:
                request_error(req, "invalid-state", "%s: not possible in its current state", what);
                break;
        case EPERM:
        case EACCES:
                request_error(req, "permission-denied", "%s: permission denied", what);
                break;
        case ENOSPC:
        case EIO:
                log_error_errno(r, "%s failed", what);
                request_error(req, "internal", "%s failed: the daemon cannot write its database (%s); see its log",
                              what, strerror(-r));
                break;
        default:
                log_error_errno(r, "%s failed", what);
                request_error(req, "internal", "%s failed: %s", what, strerror(-r));
        }
}

bool request_may_modify(const struct mx_request *req, uid_t owner)
{
        return req->admin || req->uid == owner;
}

/* May uid with these groups do want (4 read, 1 search) on st, by its mode bits? */
static bool mode_allows(const struct stat *st, uid_t uid, const gid_t *groups, size_t n_groups, mode_t want)
{
        if (st->st_uid == uid)
                return (st->st_mode >> 6) & want;
        for (size_t i = 0; i < n_groups; i++)
                if (groups[i] == st->st_gid)
                        return (st->st_mode >> 3) & want;
        return st->st_mode & want;
}

bool request_may_read(const struct mx_request *req, const char *path)
{
        gid_t groups[MX_CONN_GROUPS_MAX + 1];
        socklen_t len = sizeof(groups) - sizeof(gid_t);
        _cleanup_free_ char *real = NULL;
        size_t n = 0;
        struct stat st;

        if (req->uid == 0)
                return true;
        real = realpath(path, NULL);
        if (!real)
                return false;
        groups[n++] = req->gid;
        if (getsockopt(bufferevent_getfd(req->conn->bev), SOL_SOCKET, SO_PEERGROUPS, groups + 1, &len) == 0)
                n += len / sizeof(gid_t);
        /* Every directory from / down must be searchable, then the file readable. */
        for (char *p = real + 1;; p++) {
                bool last = *p == '\0';

                if (*p != '/' && !last)
                        continue;
                *p = '\0';
                if (stat(real[0] ? real : "/", &st) < 0 ||
                    !mode_allows(&st, req->uid, groups, n, last && !S_ISDIR(st.st_mode) ? 4 : 1))
                        return false;
                if (last)
                        return true;
                *p = '/';
        }
}

void request_keep(struct mx_request *req, void (*on_close)(struct mx_request *, void *), void *ud)
{
        struct mx_conn *c = req->conn;

        priv_of(req)->is_kept = true;
        priv_of(req)->kept.on_close = on_close;
        priv_of(req)->kept.ud = ud;
        MX_GROW(c->requests, c->cap_requests, c->n_requests + 1);
        c->requests[c->n_requests++] = req;
        conn_idle_update(c); /* a subscriber (follow, logs -f) may wait for hours */
}

void request_stream(struct mx_request *req, json_t *item)
{
        _cleanup_json_ json_t *m = json_pack("{s:O,s:O}", "id", req->id, "stream", item);

        conn_send(req->conn, m);
}

size_t request_output_pending(const struct mx_request *req)
{
        /* A closing connection takes nothing more: streams wait (for its close) instead of producing. */
        if (req->conn->closing)
                return SIZE_MAX;
        return evbuffer_get_length(bufferevent_get_output(req->conn->bev));
}

void request_on_drain(struct mx_request *req, void (*cb)(struct mx_request *, void *), void *ud)
{
        priv_of(req)->kept.on_drain = cb;
        priv_of(req)->kept.drain_ud = ud;
}

/* A request id as protocol.json's types.request_id describes it. */
static bool request_id_valid(json_t *id)
{
        const struct mx_proto *p = mx_proto_get();
        json_t *schema = json_object_get(p->types, "request_id");
        _cleanup_free_ char *err = NULL;

        if (!id)
                return false;
        if (!schema) /* an older description: what its text says, "id": N */
                return json_is_integer(id) && json_integer_value(id) >= 1;
        return mx_proto_check_value(p, schema, id, "id", &err) >= 0;
}

/* Validate the envelope {id, method, params}; NULL with *why on failure (*ret_id: NULL when invalid). */
static const struct mx_proto_method *check_envelope(struct mx_conn *c, json_t *msg, json_t **ret_id,
                                                    const char **why)
{
        json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method");
        json_t *params = json_object_get(msg, "params");
        const struct mx_proto_method *m;
        const char *k;
        json_t *v;

        *ret_id = NULL;
        if (!json_is_object(msg))
                return *why = "a request must be a JSON object", NULL;
        if (!request_id_valid(id))
                return *why = "'id' must be an integer from 1 to 2^53-1 (protocol.json: types.request_id)", NULL;
        *ret_id = id;
        if (!json_is_string(method))
                return *why = "'method' must be a string", NULL;
        if (params && !json_is_object(params) && !json_is_null(params))
                return *why = "'params' must be an object", NULL;
        json_object_foreach (msg, k, v)
                if (!streq(k, "id") && !streq(k, "method") && !streq(k, "params"))
                        return *why = "unknown key in the request envelope", NULL;
        m = mx_proto_find(mx_proto_get(), json_string_value(method));
        if (!m)
                *why = "unknown method";
        (void)c;
        return m;
}

static void handle_request(struct mx_conn *c, json_t *msg)
{
        const struct mx_proto *p = mx_proto_get();
        const struct mx_proto_method *m;
        struct request_priv *rp;
        _cleanup_free_ char *err = NULL;
        const char *why = NULL;
        json_t *id, *params;
        mx_method_fn fn;

        m = check_envelope(c, msg, &id, &why);
        if (!m && why && streq(why, "unknown method") && c->hello) {
                _cleanup_free_ char *name = mx_escape(json_string_value(json_object_get(msg, "method")), 64);
                _cleanup_free_ char *text = xasprintf("no method named '%s'", name);
                conn_send_error(c, id, "unknown-method", text);
                return;
        }
        if (!m)
                return conn_fatal(c, id, "bad-request", "%s", why);
        if (!c->hello && !streq(m->name, "hello"))
                return conn_fatal(c, id, "protocol-mismatch", "the first request must be hello");
        params = json_object_get(msg, "params");
        if (json_is_null(params))
                params = NULL; /* "params": null means none, as in JSON-RPC */
        if (mx_proto_check_params(p, m, params, &err) < 0) {
                if (!c->hello)
                        return conn_fatal(c, id, "protocol-mismatch", "%s", err);
                conn_send_error(c, id, "bad-request", err);
                return;
        }
        if (m->privilege == MX_PRIV_ADMIN && !c->admin) {
                conn_send_error(c, id, "permission-denied", "only root or the admin group may do this");
                return;
        }
        fn = methods_lookup(c->control->methods, m->name);
        rp = xcalloc(1, sizeof(*rp));
        rp->pub = (struct mx_request){
                .d = c->control->d, .conn = c, .hooks = c->control->hooks, .method = m, .id = json_incref(id),
                .params = params ? json_incref(params) : json_object(),
                .uid = c->uid, .gid = c->gid, .pid = c->pid, .admin = c->admin,
        };
        fn(&rp->pub);
}

void control_hello_done(struct mx_conn *c, bool ok)
{
        if (ok) {
                c->hello = true;
                event_del(c->deadline);
                conn_idle_update(c);
        } else
                conn_close_soon(c);
}

/*
 * After hello a connection may stay open between requests, but not forever:
 * idle (no request, no stream open) for limits.idle_timeout_ms, it is closed.
 * Subscribers (follow, logs -f) are not idle while their stream is open.
 */
static void conn_idle_update(struct mx_conn *c)
{
        int64_t ms = c->control->d->cfg.limits.idle_timeout_ms;
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        if (!c->hello || c->closing || c->n_requests > 0 || ms <= 0) {
                event_del(c->idle);
                return;
        }
        event_add(c->idle, &tv);
}

static void conn_idle_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_conn *c = ud;

        (void)fd, (void)what;
        if (c->closing || c->n_requests > 0)
                return;
        conn_fatal(c, NULL, "limit-exceeded", "idle for more than %" PRId64 " ms (limits.idle_timeout_ms)",
                   c->control->d->cfg.limits.idle_timeout_ms);
}

static void conn_arm_deadline(struct mx_conn *c)
{
        int64_t ms = c->control->d->cfg.limits.frame_timeout_ms;
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        event_add(c->deadline, &tv);
}

static void conn_read_cb(struct bufferevent *bev, void *ud)
{
        struct mx_conn *c = ud;
        struct evbuffer *in = bufferevent_get_input(bev);
        size_t max = c->control->d->cfg.limits.frame_bytes;

        while (!c->closing) {
                struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
                _cleanup_free_ char *line = NULL;
                _cleanup_json_ json_t *msg = NULL;
                json_error_t jerr;

                if (eol.pos < 0) {
                        if (evbuffer_get_length(in) >= max)
                                return conn_fatal(c, NULL, "bad-request", "request longer than %zu bytes", max);
                        /*
                         * Half a line: it must complete in time from its first byte, or the client
                         * is dropped. Not re-armed by later bytes, which a client could trickle.
                         */
                        if (evbuffer_get_length(in) > 0) {
                                if (!evtimer_pending(c->deadline, NULL))
                                        conn_arm_deadline(c);
                        } else if (c->hello)
                                event_del(c->deadline);
                        return;
                }
                if ((size_t)eol.pos + 1 > max)
                        return conn_fatal(c, NULL, "bad-request", "request longer than %zu bytes", max);
                line = xmalloc(eol.pos + 1);
                evbuffer_remove(in, line, eol.pos);
                line[eol.pos] = '\0';
                evbuffer_drain(in, 1);
                /* That line is complete; the next one gets its own time (before hello, hello's runs on). */
                if (c->hello)
                        event_del(c->deadline);
                if (eol.pos == 0)
                        continue; /* blank lines are harmless */
                msg = json_loadb(line, eol.pos, JSON_REJECT_DUPLICATES, &jerr);
                if (!msg)
                        return conn_fatal(c, NULL, "bad-request", "malformed JSON at column %d: %s", jerr.column,
                                          jerr.text);
                handle_request(c, msg);
                if (!c->closing)
                        conn_idle_update(c);
        }
}

static void conn_write_cb(struct bufferevent *bev, void *ud)
{
        struct mx_conn *c = ud;
        size_t pending = evbuffer_get_length(bufferevent_get_output(bev));

        if ((c->closing || (c->eof && c->n_requests == 0)) && pending == 0) {
                conn_free(c);
                return;
        }
        /*
         * Let streams that paused for a slow reader continue. A callback may
         * finish its request, so walk a copy of the list.
         */
        if (c->n_requests > 0 && pending < c->control->d->cfg.limits.output_bytes / 2) {
                size_t n = c->n_requests;
                _cleanup_free_ struct mx_request **copy = xreallocarray(NULL, n, sizeof(*copy));

                memcpy(copy, c->requests, n * sizeof(*copy));
                for (size_t i = 0; i < n; i++) {
                        bool alive = false;

                        for (size_t j = 0; j < c->n_requests; j++)
                                alive |= c->requests[j] == copy[i];
                        if (alive && priv_of(copy[i])->kept.on_drain)
                                priv_of(copy[i])->kept.on_drain(copy[i], priv_of(copy[i])->kept.drain_ud);
                }
        }
}

/* Has the client closed its socket entirely (not just shut down its sending side)? */
static bool conn_peer_gone(struct mx_conn *c)
{
        struct pollfd p = { .fd = bufferevent_getfd(c->bev), .events = POLLOUT };

        /* A Unix stream socket reports POLLHUP once both directions are shut down. */
        return poll(&p, 1, 0) != 1 || (p.revents & (POLLHUP | POLLERR));
}

static void conn_event_cb(struct bufferevent *bev, short what, void *ud)
{
        struct mx_conn *c = ud;

        if (what & BEV_EVENT_ERROR) {
                conn_free(c);
                return;
        }
        if (!(what & BEV_EVENT_EOF))
                return;
        /*
         * End of the requests. A client that only shut down its sending side
         * (nc -N, socat) still reads: deliver the replies and streams it asked
         * for, then close (conn_write_cb). One that closed the socket gets
         * nothing more.
         */
        if (conn_peer_gone(c) ||
            (evbuffer_get_length(bufferevent_get_output(bev)) == 0 && c->n_requests == 0)) {
                conn_free(c);
                return;
        }
        c->eof = true;
}

static void conn_deadline_cb(evutil_socket_t fd, short what, void *ud)
{
        struct mx_conn *c = ud;

        (void)fd, (void)what;
        if (c->closing) {
                /* Its last message could not be written in time: the client does not read. */
                conn_free(c);
                return;
        }
        if (!c->hello && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0)
                conn_fatal(c, NULL, "protocol-mismatch", "no hello within the time limit");
        else
                conn_fatal(c, NULL, "bad-request", "incomplete request line not finished in time");
}

static void conn_free(struct mx_conn *c)
{
        struct mx_control *ctl = c->control;

        for (struct mx_conn **p = &ctl->conns; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        ctl->n_conns--;
        /* Streams first: their on_close may still look at the request. */
        while (c->n_requests > 0) {
                struct mx_request *req = c->requests[--c->n_requests];
                struct kept *k = &priv_of(req)->kept;

                priv_of(req)->is_kept = false;
                if (k->on_close)
                        k->on_close(req, k->ud);
                request_free(req);
        }
        free(c->requests);
        event_free(c->idle);
        event_free(c->deadline);
        bufferevent_free(c->bev);
        free(c);
}

/* Credentials of the peer: uid, gid, pid, and whether it may act as an administrator. */
static void conn_credentials(struct mx_control *ctl, int fd, struct mx_conn *c)
{
        struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
        socklen_t len = sizeof(cred);
        gid_t groups[MX_CONN_GROUPS_MAX];

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                log_warning_errno(errno, "SO_PEERCRED");
        c->uid = cred.uid;
        c->gid = cred.gid;
        c->pid = cred.pid;
        c->admin = cred.uid == 0;
        if (c->admin || !ctl->d->has_admin_gid)
                return;
        if (cred.gid == ctl->d->admin_gid) {
                c->admin = true;
                return;
        }
        len = sizeof(groups);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
                return;
        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                if (groups[i] == ctl->d->admin_gid)
                        c->admin = true;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *ud)
{
        struct mx_control *ctl = ud;
        const struct mx_limits *lim = &ctl->d->cfg.limits;
        struct mx_conn *c = xcalloc(1, sizeof(*c));

        (void)l, (void)sa, (void)salen;
        c->control = ctl;
        conn_credentials(ctl, fd, c);
        c->bev = bufferevent_socket_new(ctl->d->base, fd, BEV_OPT_CLOSE_ON_FREE);
        c->deadline = evtimer_new(ctl->d->base, conn_deadline_cb, c);
        c->idle = evtimer_new(ctl->d->base, conn_idle_cb, c);
        if (!c->bev || !c->deadline || !c->idle)
                mx_die("out of memory setting up a connection");
        c->next = ctl->conns;
        ctl->conns = c;
        ctl->n_conns++;
        bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
        if (ctl->n_conns > lim->connections) {
                conn_fatal(c, NULL, "limit-exceeded", "too many clients (%u)", lim->connections);
                return;
        }
        if (c->uid != 0 && conns_of_uid(ctl, c->uid) > lim->connections_per_uid) {
                conn_fatal(c, NULL, "limit-exceeded", "too many connections from uid %u (limit %u)",
                           (unsigned)c->uid, lim->connections_per_uid);
                return;
        }
        conn_arm_deadline(c);
}

/* Out of descriptors: stop accepting for a second instead of spinning (tmux, OpenSMTPD). */
static void accept_resume_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        evconnlistener_enable(((struct mx_control *)ud)->listener);
}

static void accept_error_cb(struct evconnlistener *l, void *ud)
{
        struct mx_control *ctl = ud;
        int err = EVUTIL_SOCKET_ERROR();
        struct timeval one = { 1, 0 };

        if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                log_warning_errno(err, "accept; pausing for a second");
                evconnlistener_disable(l);
                event_base_once(ctl->d->base, -1, EV_TIMEOUT, accept_resume_cb, ctl, &one);
        }
}

struct mx_control *control_new(struct mx_daemon *d, int listen_fd, const struct mx_method *methods,
                               const struct mx_control_hooks *hooks, char **reterr)
{
        const struct mx_proto *p = mx_proto_get();
        struct mx_control *ctl;
        int r;

        r = methods_check_table(methods, p, reterr);
        if (r < 0)
                return NULL;
        ctl = xcalloc(1, sizeof(*ctl));
        ctl->d = d;
        ctl->methods = methods;
        ctl->hooks = hooks;
        /* Backlog 0: the socket is already listening (bound by us or passed by systemd). */
        ctl->listener = evconnlistener_new(d->base, accept_cb, ctl, LEV_OPT_CLOSE_ON_EXEC, 0, listen_fd);
        if (!ctl->listener) {
                *reterr = xstrdup("cannot listen on the control socket");
                free(ctl);
                return NULL;
        }
        evconnlistener_set_error_cb(ctl->listener, accept_error_cb);
        return ctl;
}

struct mx_control *control_free(struct mx_control *ctl)
{
        if (!ctl)
                return NULL;
        while (ctl->conns)
                conn_free(ctl->conns);
        evconnlistener_free(ctl->listener);
        free(ctl);
        return NULL;
}
