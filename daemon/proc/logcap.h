/* SPDX-License-Identifier: MIT */
/*
 * Capture of a server's output: read a pipe on the event loop, append to the
 * run's log file up to a size cap, and hand every complete line to a callback
 * (crash signatures, the kernel gate, journald) — lines keep being scanned after
 * the file is full, because the crash that matters comes last. Non-logging.
 */
#pragma once

#include "util.h"

#include <event2/event.h>

#define LOGCAP_LINE_MAX (16 * 1024) /* longer lines are cut for the callback (the file keeps them) */

struct logcap;

struct logcap_ops {
        void (*line)(void *ud, const char *line, size_t len);
        void (*appended)(void *ud); /* after new bytes reached the file */
        void (*eof)(void *ud);      /* every source reached end of file */
};

/* Create (truncate) the log file at path, mode 0640. */
int logcap_new(struct event_base *base, const char *path, size_t max_bytes, const struct logcap_ops *ops, void *ud,
               struct logcap **ret);
/* Read fd (a pipe; taken over, made non-blocking) until end of file. */
int logcap_add_source(struct logcap *lc, int fd);
/* Write a line of our own into the log (e.g. "[mxmatrixd] stopping the server"); also scanned. */
void logcap_note(struct logcap *lc, const char *fmt, ...) _printf_(2, 3);
/* Read what the pipes hold now, at most 1 MiB per source (used before judging a dead server). */
void logcap_drain(struct logcap *lc);
bool logcap_eof(const struct logcap *lc);
uint64_t logcap_bytes(const struct logcap *lc);
const char *logcap_path(const struct logcap *lc);
struct logcap *logcap_free(struct logcap *lc);
DEFINE_POINTER_CLEANUP(struct logcap, logcap_free)
