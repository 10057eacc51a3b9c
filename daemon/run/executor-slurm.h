/* SPDX-License-Identifier: MIT */
/* Executor "slurm": each run a Slurm job running mxmatrix-run (executor-slurm.c explains). */
#pragma once

#include "daemon.h"
#include "queue-slurm.h"

/*
 * Take over the scheduler's entry points (executor.h) and reattach the runs a
 * previous daemon left in Slurm. After sched_new(), before the first kick.
 */
int executor_slurm_new(struct mx_daemon *d, struct mx_executor_slurm **ret);
struct mx_executor_slurm *executor_slurm_free(struct mx_executor_slurm *x);
