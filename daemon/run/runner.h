/* SPDX-License-Identifier: MIT */
/*
 * The runner interface: how the scheduler executes one attempt of a run.
 *
 * A runner is started with the run's snapshot (the JSON "spec" stored at
 * submit time) and reports back through callbacks on the daemon's event loop:
 * the process it started (persisted at once, for recovery after a crash), the
 * log file, each level's verdict, and finally the outcome. After finished() the
 * runner is inert and the scheduler frees it. cancel() asks it to stop early;
 * finished() still follows, with the outcome the caller gave (cancelled,
 * timeout, interrupted), once everything the runner started is gone.
 *
 * Implementations: runner-command.c (runs the spec's argv to completion; its
 * exit status is the verdict), runner-target.c (starts an inference server,
 * probes it, runs the levels, stops it).
 */
#pragma once

#include "queue.h"
#include "util.h"

#include <event2/event.h>
#include <jansson.h>
#include <sys/types.h>

struct proc_reaper;
struct mx_http;
struct mx_sampler;

/*
 * Read-only access to stored results, for levels that compare a run with
 * earlier ones (L5). The daemon's implementation reads its database
 * (daemon/run/history.c); a test may hand synthetic results. Both return 0 and a
 * new reference, or a negative errno with a reason.
 */
struct mx_history {
        /*
         * This attempt: {"job", "run", "attempt", "config_key", "baseline_key"
         * and "baseline_run" (the job's run planned as "baseline", or null),
         * "sources": {name: sha, "+dirty" appended for a changed tree, null
         * when git could not tell}, "gpu_name" (or null)}.
         */
        int (*self)(void *ud, json_t **ret, char **reterr);
        /*
         * The recorded verdicts of level for config_key, newest first, this
         * attempt left out, at most limit: [{"job", "run", "attempt",
         * "finished_at", "verdict", "metrics", "sources", "gpu_name"}].
         */
        int (*results)(void *ud, const char *level, const char *config_key, size_t limit, json_t **ret,
                       char **reterr);
        void *ud;
};

/* What the scheduler hands a runner. Strings and JSON are borrowed for the runner's lifetime. */
struct mx_run_ctx {
        struct event_base *base;
        struct proc_reaper *reaper;
        struct mx_http *http;
        int64_t job, run, attempt_id;
        int attempt;
        const char *tag;        /* MXMATRIX_RUN_TAG value for every process of this attempt */
        const char *config_key; /* canonical configuration identity */
        const char *run_dir;    /* per-attempt directory for logs and artifacts (exists) */
        json_t *spec;           /* the run's snapshot */
        json_t *levels;         /* levels to run, e.g. ["L1","L1.5"] */
        int64_t level_timeout_ms;
        size_t log_max_bytes;   /* cap for the captured server log */
        struct mx_sampler *sampler; /* the attempt's GPU and memory sampler (sampler.h), or NULL */
        const struct mx_history *history; /* earlier results (L5), or NULL */
};

struct mx_level_result {
        const char *level;
        const char *verdict; /* pass, fail, invalid, skipped */
        int64_t started_at, finished_at;
        json_t *metrics;     /* borrowed, may be NULL */
        json_t *artifacts;   /* borrowed, may be NULL */
        const char *message; /* may be NULL */
};

struct mx_run_result {
        enum mx_outcome outcome;
        const char *crash_class; /* may be NULL */
        const char *message;     /* may be NULL */
        int exit_status;         /* -1: none (signalled or never started) */
        int exit_signal;         /* 0: none */
        /*
         * Processes of the run outlived the stop. The scheduler then pauses the
         * queue: on a GPU with unified memory the next run would start beside
         * them and fail for reasons of their making.
         */
        bool leftovers;
};

struct mx_run_events {
        void (*process)(void *ud, pid_t pid, pid_t pgid, uint64_t proc_start);
        void (*log_opened)(void *ud, const char *path);
        void (*log_appended)(void *ud);
        void (*level_started)(void *ud, const char *level);
        void (*level_finished)(void *ud, const struct mx_level_result *r);
        void (*finished)(void *ud, const struct mx_run_result *r);
        /* The attempt's metadata record and its blobs (meta.h), before the server starts. May be NULL. */
        void (*metadata)(void *ud, json_t *record, json_t *blobs);
        /*
         * The command as started, placeholders expanded (runner_command_record()), right after the spawn.
         * May be NULL. Borrowed.
         */
        void (*command)(void *ud, json_t *command);
};

struct mx_runner;

struct mx_runner_ops {
        const char *name;
        /* Start asynchronously. A negative return means nothing was started and no callback will come. */
        int (*start)(const struct mx_run_ctx *ctx, const struct mx_run_events *ev, void *ud,
                     struct mx_runner **ret, char **reterr);
        /* Stop early; finished() reports why. Idempotent. */
        void (*cancel)(struct mx_runner *r, enum mx_outcome why);
        /* The level being run now, or NULL. */
        const char *(*current_level)(struct mx_runner *r);
        struct mx_runner *(*free)(struct mx_runner *r);
};

extern const struct mx_runner_ops runner_command_ops;
extern const struct mx_runner_ops runner_target_ops;
