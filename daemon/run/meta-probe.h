/* SPDX-License-Identifier: MIT */
/* One metadata probe: a child with a time limit and an output cap on the loop (meta-probe.c explains). */
#pragma once

#include "util.h"

#include <event2/event.h>

struct proc_reaper;

/* stderr kept per probe, for the error message. */
#define META_STDERR_MAX 4096

struct meta_probe;

struct meta_probe_result {
        const char *spawn_error; /* it could not start (command not found, ...); NULL when it ran */
        bool timed_out;          /* killed at the time limit */
        bool truncated;          /* stdout passed the cap: killed, the first output_max bytes kept */
        int status;              /* waitpid() status, when it ran and was reaped */
        const char *out;         /* stdout, NUL-terminated */
        size_t out_len;
        const char *err; /* stderr, at most META_STDERR_MAX bytes */
        size_t err_len;
        int64_t duration_us;
        int64_t timeout_ms; /* the limit it ran under */
};

typedef void (*meta_probe_cb)(const struct meta_probe_result *res, void *ud);

struct meta_probe_opts {
        struct event_base *base;
        struct proc_reaper *reaper;
        const char *tag;  /* run tag every probe carries, so the run's sweep finds what one leaves */
        char *const *env; /* complete environment; NULL: the daemon's own */
        const char *cwd;  /* NULL: the daemon's */
        int64_t timeout_ms;
        size_t output_max;
};

/*
 * Start argv. cb comes exactly once, from the loop (never from inside this
 * call, even when the command cannot start), unless the probe is freed first.
 */
struct meta_probe *meta_probe_start(const struct meta_probe_opts *o, char *const *argv, meta_probe_cb cb,
                                    void *ud);
/* Kill what still runs (SIGKILL to its process group; the reaper reaps it) and free. */
struct meta_probe *meta_probe_free(struct meta_probe *p);
DEFINE_POINTER_CLEANUP(struct meta_probe, meta_probe_free)
/* Why a finished probe failed ("command not found: ...", "exited with status 2: ..."), or NULL if it did
 * not. */
char *meta_probe_failure(const struct meta_probe_result *res);
