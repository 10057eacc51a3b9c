/* SPDX-License-Identifier: MIT */
/*
 * The serial scheduler: at most one run uses the GPU at a time. Driven only by
 * events: a kick after anything that changes the queue (submit, cancel, pause,
 * resume, retry, a run finishing), the runner's callbacks, and per-run timers
 * (the run's time limit, the STATUS= refresh).
 * Picks by job priority, then job age, then plan order (queue_pick_next).
 */
#pragma once

#include "daemon.h"
#include "executor.h"
#include "runner.h"

/*
 * Who hears what the scheduler and the executors do: main.c wires it to the
 * followers of jobs and logs (stream.h) and to the service manager's STATUS=
 * (notify.h). Every function is set; each gets ud back.
 */
struct mx_sched_watch {
        void (*job_changed)(void *ud, int64_t job);  /* a job's runs or counts changed */
        void (*log_appended)(void *ud, int64_t run); /* a running attempt's log grew */
        void (*run_finished)(void *ud, int64_t run); /* a run's attempt ended */
        void (*status)(void *ud, const char *line);  /* the STATUS= line changed (sched_status_line()) */
        void *ud;
};

/* watch is copied. */
struct mx_sched *sched_new(struct mx_daemon *d, const struct mx_sched_watch *watch);
struct mx_sched *sched_free(struct mx_sched *s);

/* The queue changed: start the next run if one may start, else refresh STATUS=. From the event loop. */
void sched_kick(struct mx_sched *s);
/* Stop the running run if it is run (cancelled by a user). Returns true when it was running. */
bool sched_cancel_run(struct mx_sched *s, int64_t run);
/* The running run as JSON ({job, run, attempt, config_key, level, started_at, elapsed_ms}), or NULL. */
json_t *sched_current_json(struct mx_sched *s);
bool sched_busy(struct mx_sched *s);
/*
 * Shut down: start nothing new, stop the running run (its attempt ends as
 * interrupted and the recovery policy applies), then call done. done runs at
 * once when idle.
 */
void sched_shutdown(struct mx_sched *s, void (*done)(void *ud), void *ud);
/*
 * A check of the machine that the health gate runs before each run, after its
 * process check (no process of an earlier run alive): the GPU is readable and
 * its memory is back to the idle level within a tolerance (the sampler's).
 * Returns 0 when healthy; -EINPROGRESS while its sample is on its way and
 * -EAGAIN when not yet healthy (the gate looks again, quietly for the first, until
 * the matrix's health.settle_ms is up, then pauses the queue); another
 * negative errno when broken (the queue is paused at once). *reason says what.
 */
typedef int (*sched_health_fn)(void *ud, char **reason);
void sched_set_health_check(struct mx_sched *s, sched_health_fn fn, void *ud);
/* Hand the scheduler's entry points to another executor (executor.h; before the first kick). */
void sched_set_executor(struct mx_sched *s, const struct mx_executor_ops *ops, void *x);
/* The line for STATUS= and the log: "idle, 3 queued" / "running r12 (L1.5, 2m03s), 3 queued". */
char *sched_status_line(struct mx_sched *s);

