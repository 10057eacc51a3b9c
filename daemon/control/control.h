/* SPDX-License-Identifier: MIT */
/*
 * Client connections on the control socket: newline-delimited JSON framing,
 * the version handshake, peer credentials (SO_PEERCRED, SO_PEERGROUPS),
 * per-uid and total connection limits, frame-size and stall limits, request
 * validation against schema/protocol.json, and dispatch through the method
 * table that main.c hands to control_new() (methods.h).
 *
 * A client that sends a malformed or oversized frame, or stalls half-way
 * through one, gets an error and loses its connection; the daemon goes on.
 * One that shuts down its sending side still gets its replies and streams.
 */
#pragma once

#include "daemon.h"
#include "protocol.h"

#include <jansson.h>
#include <sys/types.h>

struct mx_conn;
struct mx_request;

/* One protocol method's handler, and the table of them (methods.h holds the daemon's). */
typedef void (*mx_method_fn)(struct mx_request *req);
struct mx_method {
        const char *name;
        mx_method_fn fn;
};

/* What handlers need from above the control folder, handed down by main.c. */
struct mx_control_hooks {
        /* Re-read the matrix file; 0, or -errno with *reterr (the reload method). */
        int (*reload_matrix)(struct mx_daemon *d, char **reterr);
};

/* One request being answered. Owned by its connection; valid until the reply is sent. */
struct mx_request {
        struct mx_daemon *d;
        struct mx_conn *conn;
        const struct mx_control_hooks *hooks; /* as handed to control_new() */
        const struct mx_proto_method *method;
        json_t *id;     /* the client's id, echoed */
        json_t *params; /* validated against the schema, never NULL */
        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool admin;
};

/*
 * Serve listen_fd with the handlers of methods (terminated by a NULL name):
 * every protocol method must have one and every one must be a protocol method
 * (NULL with *reterr otherwise). hooks must outlive the control.
 */
struct mx_control *control_new(struct mx_daemon *d, int listen_fd, const struct mx_method *methods,
                               const struct mx_control_hooks *hooks, char **reterr);
struct mx_control *control_free(struct mx_control *c);
unsigned control_n_connections(struct mx_control *c);

/* Answer a request; result is stolen. The request is freed unless it is streaming (see below). */
void request_reply(struct mx_request *req, json_t *result);
void request_error(struct mx_request *req, const char *code, const char *fmt, ...) _printf_(3, 4);
/* Map a negative errno from the queue to the protocol's error codes. */
void request_error_errno(struct mx_request *req, int r, const char *what);
/* May the caller change a job owned by owner? (owner, root, admin group) */
bool request_may_modify(const struct mx_request *req, uid_t owner);
/*
 * Could the client, with its own uid and groups, read path (every directory on
 * the way searchable, the file readable, by mode bits)? The daemon may have
 * more privilege: what it reads for a client that could not must not come back.
 */
bool request_may_read(const struct mx_request *req, const char *path);

/*
 * Streaming: a handler that keeps the request open calls request_keep(); the
 * request then lives until request_reply()/request_error() or until the
 * client disconnects, in which case on_close(req) runs (the stream module
 * drops its subscription) and the request is freed.
 */
void request_keep(struct mx_request *req, void (*on_close)(struct mx_request *req, void *ud), void *ud);
void request_stream(struct mx_request *req, json_t *item);
/* Bytes waiting to be written to this request's client (for flow control); SIZE_MAX once it is closing. */
size_t request_output_pending(const struct mx_request *req);
/* Call cb when the client's output buffer drains below half the limit. */
void request_on_drain(struct mx_request *req, void (*cb)(struct mx_request *req, void *ud), void *ud);

/* hello answered: ok lets the connection use every method; !ok closes it after the reply. */
void control_hello_done(struct mx_conn *c, bool ok);
