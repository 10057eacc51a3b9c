/* SPDX-License-Identifier: MIT */
/* Start-up recovery of runs a dead daemon left "running" (recover.c explains). */
#pragma once

#include "daemon.h"

/* Returns the number of attempts recovered, or a negative errno. */
int recover_interrupted(struct mx_daemon *d);

/*
 * May run's interrupted attempt go back to the queue once more? No once its
 * bound (queue_attempt_interruptions(): the run's own attempts, or the
 * confirmation starts for one decision) was interrupted max_requeues times
 * already (a run that kills the daemon would otherwise loop forever); then
 * *ret_why says so (caller frees).
 */
bool recover_requeue_allowed(struct mx_daemon *d, int64_t run, int64_t attempt, char **ret_why);
