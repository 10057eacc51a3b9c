/* SPDX-License-Identifier: MIT */
/*
 * Helpers for tests that drive a real, private mxmatrixd: its own temporary
 * state directory, socket and sd_notify socket (a datagram socket the test
 * owns, as systemd would), started from the build tree.
 */
#pragma once

#include "test.h"

#include <jansson.h>
#include <pthread.h>
#include <sys/types.h>

/*
 * Notifications the daemon sent, read as they arrive by a thread, as PID 1
 * would: an unread NOTIFY_SOCKET fills up (net.unix.max_dgram_qlen is 10 by
 * default) and sd_notify() then blocks the daemon.
 */
struct testd_notify {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        char **lines;   /* every line received, in order */
        size_t n, cap;
        size_t next;    /* the first line testd_notify_wait() has not consumed */
        char **dgrams;  /* every datagram received, whole, in order */
        int64_t *dgram_at; /* when each arrived (CLOCK_MONOTONIC, µs) */
        size_t n_dgrams, cap_dgrams, cap_dgram_at;
        size_t next_dgram; /* the first datagram testd_notify_next() has not consumed */
        bool running;
};

struct testd {
        pid_t pid;
        char *dir;         /* everything lives below it */
        char *socket;      /* the control socket */
        char *state;       /* --state-dir */
        char *notify_path; /* our NOTIFY_SOCKET */
        int notify_fd;
        struct testd_notify *notify;
        char *log;         /* the daemon's stderr */
};

/* The path of a binary in the build tree, e.g. "daemon/mxmatrixd" (caller frees). */
char *testd_build_path(const char *rel);

/*
 * Start mxmatrixd with --socket/--state-dir/--foreground and extra args
 * (NULL-terminated, may be NULL), extra environment ("K=V", may be NULL), and
 * wait for READY=1. Dir: a fresh directory under test_tmpdir() named name.
 */
void testd_start(struct testd *t, const char *name, const char *const *args, const char *const *env);
/*
 * Like testd_start() but without waiting for READY=1: for tests that read every
 * notification, or a start that fails.
 */
void testd_launch(struct testd *t, const char *name, const char *const *args, const char *const *env);
/* Start again on the same directories (after a stop or a kill). */
void testd_restart(struct testd *t, const char *const *args, const char *const *env);
/* Send sig and wait for the exit; returns the wait status. */
int testd_stop(struct testd *t, int sig);
void testd_done(struct testd *t);

/*
 * Consume received notification lines, in order, until one equals line (or,
 * when line ends in '=', starts with it); returns that line (caller frees), or
 * NULL after timeout_ms.
 */
char *testd_notify_wait(struct testd *t, const char *line, int timeout_ms);
/*
 * The next datagram, whole (several lines), that this function has not returned
 * yet, independently of testd_notify_wait(); *ret_at_us (may be NULL) gets when
 * it arrived (CLOCK_MONOTONIC). NULL after timeout_ms.
 */
char *testd_notify_next(struct testd *t, int timeout_ms, int64_t *ret_at_us);
/* Wait up to timeout_ms for the daemon to exit by itself; its wait status, or -1 if it is still running. */
int testd_wait_exit(struct testd *t, int timeout_ms);

/*
 * How many processes (other than the caller) carry this exact environment entry,
 * e.g. "MXMATRIX_RUN_TAG=mxr-..." or an entry the test put in a daemon's env.
 * Every daemon gets MX_TESTD_TAG=<test pid>; at exit, whatever carries it is killed.
 */
unsigned testd_count_env(const char *entry);

/* A raw connection to the daemon; -errno on failure. */
int testd_connect(struct testd *t);
void testd_send(int fd, const char *text);
/* One line from fd without the newline (caller frees); NULL on EOF or after timeout_ms. */
char *testd_recv_line(int fd, int timeout_ms);
/* True when the daemon closed fd (EOF within timeout_ms). */
bool testd_closed(int fd, int timeout_ms);
/*
 * Send a request and return the reply message (the whole {"id":..} object).
 * Stream items are skipped, but show JOB's batches of runs are gathered into
 * result.runs, as the client does.
 */
json_t *testd_request(int fd, const char *method, json_t *params);
/* Connect and say hello; asserts success. */
int testd_session(struct testd *t);
/* Run the mxmatrix client against the daemon; returns its exit status; *ret_out gets stdout (may be NULL). */
int testd_client(struct testd *t, char **ret_out, const char *const *args);
