/* SPDX-License-Identifier: MIT */
/*
 * Talking to the service manager: READY=1, STATUS=, RELOADING=1, STOPPING=1
 * and watchdog pings from a libevent timer on the main loop (so a wedged loop
 * stops the pings). Everything is a no-op without $NOTIFY_SOCKET.
 */
#pragma once

#include "util.h"

#include <event2/event.h>

struct mx_notify;

struct mx_notify *notify_new(struct event_base *base);
struct mx_notify *notify_free(struct mx_notify *n);
void notify_ready(struct mx_notify *n, const char *status);
void notify_reloading(struct mx_notify *n);
void notify_stopping(struct mx_notify *n, const char *status);
/* STATUS=, sent only when it changed, at most once a second (a timer sends the last one). */
void notify_status(struct mx_notify *n, const char *status);
/* A start-up failure: STATUS= and ERRNO=. */
void notify_failure(struct mx_notify *n, int error, const char *status);
