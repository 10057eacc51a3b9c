/* SPDX-License-Identifier: MIT */
/*
 * The job queue on top of db.h: jobs, runs, attempts, level verdicts and
 * events. Every mutating function is one transaction, committed before it
 * returns, so the caller may acknowledge as soon as it returns 0. Read
 * functions return JSON objects shaped as schema/protocol.json declares.
 * Non-logging.
 */
#pragma once

#include "db.h"

#include <sys/types.h>

enum mx_outcome {
        MX_OUTCOME_COMPLETED,   /* the runner did everything it was asked (verdicts say how it went) */
        MX_OUTCOME_INFRA_ERROR, /* the runner could not do its job (spawn failed, disk full, ...) */
        MX_OUTCOME_TIMEOUT,     /* not ready in time, or a level or the whole run overran */
        MX_OUTCOME_CRASHED,     /* the server died or its engine did (see crash_class) */
        MX_OUTCOME_CANCELLED,   /* a user cancelled it */
        MX_OUTCOME_INTERRUPTED, /* the daemon stopped or died under it */
        _MX_OUTCOME_MAX,
        _MX_OUTCOME_INVALID = -EINVAL,
};
const char *mx_outcome_to_string(enum mx_outcome o);
enum mx_outcome mx_outcome_from_string(const char *s);

struct queue_job_new {
        uid_t uid;
        gid_t gid;
        const char *user_name;
        const char *matrix_path;
        const char *matrix_digest;
        const char *feature;
        const char *strategy;
        json_t *levels;  /* array of strings */
        int priority;
        json_t *request;   /* the submit params as received */
        json_t *spec_base; /* optional: the snapshot part every run shares (runs[].spec goes on top) */
};

struct queue_run_new {
        const char *config_key;
        const char *config_hash;
        json_t *config;  /* object axis -> value */
        json_t *reasons; /* array of strings */
        const char *expect_fail;
        json_t *spec;    /* snapshot for the runner (its own part, over the job's spec_base) */
        bool fail_fast;  /* two passes: its cheap levels first, the rest once they passed (migration 011) */
};

/* Store a job and its runs; returns the job id. */
int queue_submit(struct mx_db *db, const struct queue_job_new *job, const struct queue_run_new *runs,
                 size_t n_runs, int64_t *ret_job);
/* Queued runs of a user (for the per-uid limit). */
int queue_count_queued(struct mx_db *db, uid_t uid, int64_t *ret);

/*
 * The next run to start: highest job priority, then oldest job, then (fail-fast
 * jobs) first passes before second passes, then plan order.
 */
struct queue_next {
        int64_t job;
        int64_t run;
        char *config_key;
        json_t *spec;
        json_t *levels;
        /*
         * L5 confirmation (migration 008): confirm_row > 0: this is that planned
         * start, serving the L5 of attempt confirm_of (levels L1, L1.5, L4 only);
         * decide > 0: every start of the round of that attempt's L5 is in and it
         * is to be decided again (l5confirm.h) before anything starts.
         */
        int64_t confirm_row, confirm_of, decide;
        /* A fail-fast job's first pass of the run (migration 011): levels holds only the cheap ones. */
        bool cheap_pass;
};
void queue_next_done(struct queue_next *n);
int queue_pick_next(struct mx_db *db, struct queue_next *ret); /* -ENOENT when nothing is queued */

/* Start an attempt of a queued run: the run becomes running. Returns the attempt id and number. */
int queue_attempt_start(struct mx_db *db, int64_t run, const char *tag, const char *boot_id,
                        int64_t *ret_attempt, int *ret_n);
/* Start the planned confirmation start row (queue_next.confirm_row); the run's result stays. */
int queue_confirm_attempt_start(struct mx_db *db, int64_t row, const char *tag, const char *boot_id,
                                int64_t *ret_attempt, int *ret_n);
/* Record the process the runner started (for recovery after a crash). */
int queue_attempt_process(struct mx_db *db, int64_t attempt, pid_t pid, pid_t pgid, uint64_t proc_start);
int queue_attempt_log(struct mx_db *db, int64_t attempt, const char *path);
/* The command the attempt started, placeholders expanded (runner_command_record()); show rN and repro. */
int queue_attempt_command(struct mx_db *db, int64_t attempt, json_t *command);
/* The attempt's cgroup (cgroup.h), recorded before its first process starts, for start-up recovery. */
int queue_attempt_cgroup(struct mx_db *db, int64_t attempt, const char *path);

struct queue_level {
        const char *level;
        const char *verdict; /* pass, fail, invalid, skipped */
        int64_t started_at, finished_at;
        json_t *metrics;   /* optional object */
        json_t *artifacts; /* optional array */
        const char *message;
};
int queue_level_record(struct mx_db *db, int64_t attempt, const struct queue_level *l);

struct queue_finish {
        enum mx_outcome outcome;
        const char *crash_class;
        const char *message;
        int exit_status; /* -1: none */
        int exit_signal; /* 0: none */
        bool requeue;    /* put the run back in the queue (interrupted runs), unless it was cancelled */
};
/* End an attempt: the run becomes done (or queued again). Returns the run's result summary. */
int queue_attempt_finish(struct mx_db *db, int64_t attempt, const struct queue_finish *f, char **ret_result);

/*
 * L5 confirmation of attempt for (l5confirm.c). queue_confirm_facts: the run
 * and job, whether the run still waits for it (confirming), planned starts
 * not yet started or not yet ended, the last round planned, and L4's and L5's
 * metrics of that attempt (new references).
 */
struct queue_confirm_facts {
        int64_t run, job;
        bool confirming;
        int pending, open, rounds;
        json_t *l4, *l5;
};
int queue_confirm_facts(struct mx_db *db, int64_t for_attempt, struct queue_confirm_facts *ret);
/* The attempt a confirmation start serves (0: it is none). */
int queue_confirm_of(struct mx_db *db, int64_t attempt, int64_t *ret_for);
/* Plan one more round (the run, then ref_run) and record L5's progress l. */
int queue_confirm_round(struct mx_db *db, int64_t for_attempt, int64_t ref_run, int round,
                        const struct queue_level *l);
/* L5 decided: its verdict l replaces the undecided one, and the run is done with its result. */
int queue_confirm_decided(struct mx_db *db, int64_t for_attempt, const struct queue_level *l,
                          char **ret_result);

/* Attempts that never finished (the daemon died): for recovery. */
struct queue_open_attempt {
        int64_t attempt, run, job;
        int n;
        char *tag, *boot_id, *config_key;
        pid_t pid, pgid;
        uint64_t proc_start;
        bool has_process;
        char *cgroup; /* NULL: none recorded */
};
int queue_open_attempts(struct mx_db *db, struct queue_open_attempt **ret, size_t *ret_n);
void queue_open_attempts_free(struct queue_open_attempt *a, size_t n);

/* Ownership, for permission checks. -ENOENT when the job or run does not exist. */
int queue_job_owner(struct mx_db *db, int64_t job, uid_t *ret_uid);
int queue_run_owner(struct mx_db *db, int64_t run, uid_t *ret_uid, int64_t *ret_job);

/*
 * Cancel: queued runs of the job (or the one run) become done/cancelled. If a
 * run of it is running, *ret_running is its id (the caller stops it), else 0;
 * that run is marked cancelled, so an attempt end that would requeue it
 * (recovery after kill -9) ends it as cancelled instead. -ESTALE when nothing
 * is queued or running (the job or run has ended): nothing changes.
 */
int queue_cancel(struct mx_db *db, int64_t job, int64_t run, uid_t by, int64_t *ret_cancelled,
                 int64_t *ret_running);
/*
 * Requeue failed (or, with all, every finished) runs of a job, or one finished
 * run. max_queued > 0: the job owner's queued runs may not exceed it afterwards
 * (-EDQUOT, nothing changed), as for a submit. -ESTALE: the job has no run to
 * requeue; -EBUSY: the run is queued or running (nothing changed).
 */
int queue_retry(struct mx_db *db, int64_t job, int64_t run, bool all, uid_t by, int64_t max_queued,
                int64_t *ret_requeued);

int queue_get_paused(struct mx_db *db, bool *ret);
/* Pausing by a user (or resuming) clears the reason a pause by the daemon gave. */
int queue_set_paused(struct mx_db *db, bool paused, uid_t by);
/* Pause (or resume) with a reason that status shows until the next resume; NULL: none. */
int queue_set_paused_reason(struct mx_db *db, bool paused, uid_t by, const char *reason);
/* The reason stored with the pause, or NULL in *ret. */
int queue_get_pause_reason(struct mx_db *db, char **ret);
/*
 * How many earlier attempts in ATTEMPT's requeue bound ended interrupted (the
 * daemon stopped or died under them). The bound is the run's own attempts
 * for one of them, and for a confirmation start the starts of its run for
 * the same waiting attempt (confirm_of): a reference run's confirmation
 * starts for a later job count neither in its own job's bound nor it in
 * theirs.
 */
int queue_attempt_interruptions(struct mx_db *db, int64_t attempt, int *ret);
/* The same, counting the ends because of the machine: interrupted, or infra-error (a full disk, ...). */
int queue_attempt_machine_failures(struct mx_db *db, int64_t attempt, int *ret);

/* Append an event (outside any transaction of the caller). */
int queue_event(struct mx_db *db, int64_t job, int64_t run, const char *kind, int64_t uid, json_t *detail);
/* Events of a job with id > after, oldest first, at most limit. */
int queue_events(struct mx_db *db, int64_t job, int64_t after, int limit, json_t **ret);

/* ---- read side (protocol reply shapes) ---- */
int queue_job_json(struct mx_db *db, int64_t job, json_t **ret);
/* A job's timing for progress lines: {started_at, timed_runs, timed_us, running_since}, times or null. */
int queue_job_progress(struct mx_db *db, int64_t job, json_t **ret);
/*
 * The stored durations estimates start from (matrix/plan/estimate.h), over the last
 * QUEUE_DURATION_ATTEMPTS finished attempts: per level {"n", "mean_us"} (levels
 * that ran, not skipped ones), per outcome {"n", "mean_us", "overhead_us"}
 * (the attempt's time outside its levels: boot, stop, after-stop commands).
 */
#define QUEUE_DURATION_ATTEMPTS 2000
int queue_duration_stats(struct mx_db *db, json_t **ret);
int queue_run_json(struct mx_db *db, int64_t run, bool with_details, json_t **ret);
/*
 * A page of a job's runs in plan order: those with seq > after_seq, at most
 * limit (<= 0: all). *ret_last_seq: the seq of the last one returned (after_seq
 * if none); *ret_more: runs follow the page. Either may be NULL.
 */
int queue_job_runs_json(struct mx_db *db, int64_t job, int64_t after_seq, int limit, json_t **ret,
                        int64_t *ret_last_seq, bool *ret_more);
/* The place in job's plan of run (-ENOENT: not a run of that job). */
int queue_job_run_seq(struct mx_db *db, int64_t job, int64_t run, int64_t *ret_seq);
struct queue_list_filter {
        const char *state; /* active, queued, running, done, cancelled, all (NULL = all) */
        bool has_uid;
        uid_t uid;
        int limit;
        int64_t before; /* 0 = newest */
};
int queue_list_json(struct mx_db *db, const struct queue_list_filter *f, json_t **ret_jobs, bool *ret_more);
/* Counts of runs by state/result over the whole queue. */
int queue_counts_json(struct mx_db *db, json_t **ret);
/*
 * Success criteria and gates (matrix/analysis/criteria.h): each run of a job with its
 * latest attempt's outcome and the level figures criteria.c reads.
 */
int queue_job_evidence_json(struct mx_db *db, int64_t job, json_t **ret);
/* Jobs of matrix_path by the feature they were submitted for: {"feature as given": [ids newest first]}. */
int queue_feature_jobs_json(struct mx_db *db, const char *matrix_path, size_t per_feature, json_t **ret);
/* The log path and the latest attempt number of a run's attempt n (0 = latest). */
int queue_attempt_log_path(struct mx_db *db, int64_t run, int n, char **ret_path, int *ret_n,
                           char **ret_outcome);
