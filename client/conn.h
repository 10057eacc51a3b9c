/* SPDX-License-Identifier: MIT */
/*
 * The client side of the control protocol: connect (never start the daemon:
 * that is socket activation's job), say hello, send requests, read replies and
 * stream items. Blocking I/O: the client does one thing at a time.
 */
#pragma once

#include "client.h"

#include <jansson.h>

struct client_conn;

/* The socket path: --socket, else $MXMATRIX_SOCKET, else the compiled-in default. */
const char *client_socket_path(void);

/*
 * Connect and hello. On failure prints a clear message (daemon not running,
 * permission denied, incompatible versions) and returns the exit code to use.
 */
int client_connect(struct client_conn **ret);
struct client_conn *client_disconnect(struct client_conn *c);
DEFINE_POINTER_CLEANUP(struct client_conn, client_disconnect)

/* Called for each stream item; return non-zero to stop waiting (the connection is then closed). */
typedef int (*client_stream_fn)(json_t *item, void *ud);

/*
 * Call a method. On success *ret_result gets the result (caller frees) and 0
 * is returned. A daemon error is printed ("mxmatrix: CODE: message") and
 * mapped to an exit code (client.h); a broken connection prints why.
 * *ret_error_code (optional) gets the error code string.
 */
int client_call(struct client_conn *c, const char *method, json_t *params, client_stream_fn stream, void *ud,
                json_t **ret_result, char **ret_error_code);

/* While a stream is quiet, call fn(ud) every interval_ms (follow redraws its progress line). */
void client_on_idle(struct client_conn *c, void (*fn)(void *ud), void *ud, int interval_ms);

/* How long to wait for each answer (--timeout, else $MXMATRIX_TIMEOUT, else 60 s; 0: no limit). */
int client_timeout_ms(int64_t *ret);

/* Exit code for a protocol error code. */
int client_exit_code_for(const char *code);
