/* SPDX-License-Identifier: MIT */
/*
 * The daemon's one logging front end.
 *
 * Two sinks, chosen once at start: native journald entries (structured fields,
 * MESSAGE_ID, CODE_FILE/LINE/FUNC of the call site) when stderr is the journal
 * stream ($JOURNAL_STREAM matches) or when asked for; plain lines on stderr
 * otherwise. errno is preserved across every call. Text that comes from a
 * client or a target server must be passed through mx_escape() first, or logged
 * with mx_log_target_line(), which escapes it.
 *
 * Only top-level code logs (main.c, control.c, sched.c, the runner's event
 * handlers); library modules return errors.
 */
#pragma once

#include "util.h"

#include <syslog.h>

enum mx_log_sink {
        MX_LOG_AUTO,    /* journal if $JOURNAL_STREAM names our stderr, else stderr */
        MX_LOG_JOURNAL, /* native journal protocol */
        MX_LOG_STDERR,  /* plain lines */
};

/* Fixed MESSAGE_IDs, documented in systemd/mxmatrix.catalog. */
#define MX_MSGID_JOB_ACCEPTED "6a1d8e0140214038bbf5ef1f1c0fa15a"
#define MX_MSGID_RUN_STARTED "990921fea23d4b03929409755a3f933a"
#define MX_MSGID_RUN_FINISHED "3406df0e3cc54da79050e6a57cd1212b"
#define MX_MSGID_RUN_CRASHED "f5a9bd408c924b5c8d9e8586e3814b38"
#define MX_MSGID_RUN_INTERRUPTED "e1d2a8eeed484cce8bbfbba38d8323a8"
#define MX_MSGID_DAEMON_STARTED "830ea17a5b5348b6819902ec66337fd1"
#define MX_MSGID_MATRIX_RELOADED "26eb047fcd754642aa3d690ac8bc4d55"
#define MX_MSGID_LEVEL_FINISHED "01f15e875f8642bd83446fc2822f8b6b"
#define MX_MSGID_ORPHAN_KILLED "160cd8ba6dec483ba57b0c53fcdb2bb4"
#define MX_MSGID_QUEUE_WRITE_FAILED "b89d37554dfb42b9913b03ada1a2dbc7"
#define MX_MSGID_HEALTH_GATE "a900779636374c1cb93cf3f7de9b1cfa"
#define MX_MSGID_STATE_LOCKED "8a6eec7b3d0e409baae89fb3789bb57c"

/* Structured context: which job, run, configuration and level an entry is about. */
struct mx_log_ctx {
        int64_t job;         /* 0 = none */
        int64_t run;         /* 0 = none */
        int attempt;         /* 0 = none */
        const char *config;  /* canonical configuration key, or NULL */
        const char *level;   /* "L1", "L1.5", ... or NULL */
};

void mx_log_setup(const char *ident, enum mx_log_sink sink, int max_prio);
enum mx_log_sink mx_log_sink_get(void);
int mx_log_parse_sink(const char *s, enum mx_log_sink *ret);
int mx_log_parse_level(const char *s, int *ret);

/*
 * Log one entry. error, if non-zero, is an errno appended as ": <strerror>" and
 * sent as ERRNO=. Returns -abs(error) (or -EIO when error is 0) so callers can
 * "return mx_log_errno(...)". extra is NULL or a NULL-terminated list of
 * "FIELD=value" strings added to the journal entry.
 */
int mx_log_internal(int prio, int error, const char *message_id, const struct mx_log_ctx *ctx,
                    const char *const *extra, const char *file, int line, const char *func, const char *fmt, ...)
        _printf_(9, 10);

#define mx_log_full(prio, error, msgid, ctx, extra, ...)                                                    \
        mx_log_internal(prio, error, msgid, ctx, extra, __FILE__, __LINE__, __func__, __VA_ARGS__)

#define log_debug(...) mx_log_full(LOG_DEBUG, 0, NULL, NULL, NULL, __VA_ARGS__)
#define log_info(...) mx_log_full(LOG_INFO, 0, NULL, NULL, NULL, __VA_ARGS__)
#define log_notice(...) mx_log_full(LOG_NOTICE, 0, NULL, NULL, NULL, __VA_ARGS__)
#define log_warning(...) mx_log_full(LOG_WARNING, 0, NULL, NULL, NULL, __VA_ARGS__)
#define log_error(...) mx_log_full(LOG_ERR, 0, NULL, NULL, NULL, __VA_ARGS__)
#define log_warning_errno(err, ...) mx_log_full(LOG_WARNING, err, NULL, NULL, NULL, __VA_ARGS__)
#define log_error_errno(err, ...) mx_log_full(LOG_ERR, err, NULL, NULL, NULL, __VA_ARGS__)
/* An entry about a job/run, with an optional MESSAGE_ID. */
#define log_ctx(prio, msgid, ctx, ...) mx_log_full(prio, 0, msgid, ctx, NULL, __VA_ARGS__)

/*
 * One line of a target server's output: to the journal with the run's fields and
 * SYSLOG_IDENTIFIER=ident (the target's name); to stderr only at debug level.
 * The line is escaped here.
 */
void mx_log_target_line(const struct mx_log_ctx *ctx, const char *ident, int prio, const char *line, size_t len);
