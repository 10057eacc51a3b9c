/* SPDX-License-Identifier: MIT */
/*
 * Helpers for tests that drive a real, private mxmatrixd: its own temporary
 * state directory, socket and sd_notify socket (a datagram socket the test
 * owns, as systemd would), started from the build tree.
 */
#pragma once

#include "test.h"

#include <jansson.h>
#include <sys/types.h>

struct testd {
        pid_t pid;
        char *dir;         /* everything lives below it */
        char *socket;      /* the control socket */
        char *state;       /* --state-dir */
        char *notify_path; /* our NOTIFY_SOCKET */
        int notify_fd;
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

/* Read notify datagrams until one holds line (e.g. "READY=1"); the whole datagram (caller frees), or NULL. */
char *testd_notify_wait(struct testd *t, const char *line, int timeout_ms);
/* The next notify datagram, whole (caller frees); NULL after timeout_ms. */
char *testd_notify_next(struct testd *t, int timeout_ms);
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
/* Send a request and return the reply message (the whole {"id":..} object). */
json_t *testd_request(int fd, const char *method, json_t *params);
/* Connect and say hello; asserts success. */
int testd_session(struct testd *t);
/* Run the mxmatrix client against the daemon; returns its exit status; *ret_out gets stdout (may be NULL). */
int testd_client(struct testd *t, char **ret_out, const char *const *args);
