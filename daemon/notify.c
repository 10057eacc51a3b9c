/* SPDX-License-Identifier: MIT */
/* sd_notify: READY=1, STOPPING=1, the watchdog and STATUS= lines. */
#include "notify.h"
#include "log.h"

#include <inttypes.h>
#include <systemd/sd-daemon.h>
#include <time.h>

struct mx_notify {
        struct event_base *base;
        struct event *watchdog;
        struct event *status_timer;
        char *status_sent;
        char *status_pending;
        int64_t status_last_us;
};

static void watchdog_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what, (void)ud;
        (void)sd_notify(0, "WATCHDOG=1");
}

static void status_send(struct mx_notify *n)
{
        _cleanup_free_ char *msg = NULL;

        if (!n->status_pending || streq_ptr(n->status_pending, n->status_sent))
                return;
        msg = xasprintf("STATUS=%s", n->status_pending);
        (void)sd_notify(0, msg);
        free(n->status_sent);
        n->status_sent = TAKE_PTR(n->status_pending);
        n->status_last_us = mx_now_mono_us();
}

/*
 * A message that carries its own STATUS= (READY=1, RELOADING=1, STOPPING=1, a
 * failure) supersedes one waiting for the rate limit, which would otherwise go
 * out later and bring back an older state ("Recovering interrupted runs" after
 * READY=1).
 */
static void status_sent_directly(struct mx_notify *n, const char *status)
{
        evtimer_del(n->status_timer);
        free(n->status_pending);
        n->status_pending = NULL;
        free(n->status_sent);
        n->status_sent = xstrdup(status);
        n->status_last_us = mx_now_mono_us();
}

static void status_timer_cb(evutil_socket_t fd, short what, void *ud)
{
        (void)fd, (void)what;
        status_send(ud);
}

struct mx_notify *notify_new(struct event_base *base)
{
        struct mx_notify *n = xcalloc(1, sizeof(*n));
        uint64_t usec = 0;

        n->base = base;
        n->status_timer = evtimer_new(base, status_timer_cb, n);
        /* Ping at half the interval, as sd_watchdog_enabled(3) recommends; 1 keeps it from our children. */
        if (sd_watchdog_enabled(1, &usec) > 0 && usec > 0) {
                struct timeval tv = { .tv_sec = (time_t)(usec / 2 / 1000000),
                                      .tv_usec = (suseconds_t)(usec / 2 % 1000000) };

                n->watchdog = event_new(base, -1, EV_PERSIST, watchdog_cb, n);
                event_add(n->watchdog, &tv);
                log_info("watchdog enabled: pinging every %" PRIu64 " ms", usec / 2000);
        }
        return n;
}

struct mx_notify *notify_free(struct mx_notify *n)
{
        if (!n)
                return NULL;
        if (n->watchdog)
                event_free(n->watchdog);
        event_free(n->status_timer);
        free(n->status_sent);
        free(n->status_pending);
        free(n);
        return NULL;
}

void notify_ready(struct mx_notify *n, const char *status)
{
        _cleanup_free_ char *msg = xasprintf("READY=1\nSTATUS=%s", status);

        (void)sd_notify(0, msg);
        status_sent_directly(n, status);
}

void notify_reloading(struct mx_notify *n)
{
        struct timespec ts;
        _cleanup_free_ char *msg = NULL;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        msg = xasprintf("RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading the matrix",
                        (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
        (void)sd_notify(0, msg);
        status_sent_directly(n, "Reloading the matrix");
}

void notify_stopping(struct mx_notify *n, const char *status)
{
        _cleanup_free_ char *msg = xasprintf("STOPPING=1\nSTATUS=%s", status);

        (void)sd_notify(0, msg);
        status_sent_directly(n, status);
}

void notify_status(struct mx_notify *n, const char *status)
{
        int64_t since = mx_now_mono_us() - n->status_last_us;

        free(n->status_pending);
        n->status_pending = xstrdup(status);
        if (since >= 1000000) {
                status_send(n);
                return;
        }
        if (!evtimer_pending(n->status_timer, NULL)) {
                struct timeval tv = { 0, (suseconds_t)(1000000 - since) };
                evtimer_add(n->status_timer, &tv);
        }
}

void notify_failure(struct mx_notify *n, int error, const char *status)
{
        _cleanup_free_ char *msg = xasprintf("STATUS=%s\nERRNO=%d", status, error < 0 ? -error : error);

        (void)sd_notify(0, msg);
        status_sent_directly(n, status);
}
