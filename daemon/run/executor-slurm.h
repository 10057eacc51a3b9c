/* SPDX-License-Identifier: MIT */
/* Executor "slurm": each run a Slurm job running mxmatrix-run (executor-slurm.c explains). */
#pragma once

#include "daemon.h"
#include "queue-slurm.h"

struct mx_sched_watch;

/*
 * Take over the scheduler's entry points (executor.h) and reattach the runs a
 * previous daemon left in Slurm. After sched_new(), before the first kick.
 * watch (scheduler.h, copied) hears of job changes, logs and run ends.
 */
int executor_slurm_new(struct mx_daemon *d, const struct mx_sched_watch *watch, struct mx_executor_slurm **ret);
struct mx_executor_slurm *executor_slurm_free(struct mx_executor_slurm *x);
