/* SPDX-License-Identifier: MIT */
/*
 * Bisections (issue 19, `mxmatrix bisect`): the first bad commit of a source
 * tree between a good and a bad one. Each step checks a commit out into a
 * work tree of its own under the state directory (git worktree add --detach
 * from the user's repository; the user's checkout is never touched), runs the
 * matrix's bisect.build command there (its log kept; a failed build marks the
 * commit skip, as git bisect skip does), then queues the configuration as an
 * ordinary job with {source_dir} and the metadata source pointing at the work
 * tree, and decides when the job's run is done: with a level, its verdict;
 * with a metric, L5's comparison (matrix/analysis/regress.h) against the good
 * commit's starts, with confirmation starts of both sides while undecided.
 * Driven by job changes (bisect_poke()); every state is in the database
 * (store/bisect-store.h), so a restarted daemon resumes: a step whose build was
 * cut off is built again, a step whose run was requeued waits for it.
 */
#pragma once

#include "daemon.h"

struct mx_bisect;

struct mx_bisect *bisect_new(struct mx_daemon *d);
/* Kills the builds in flight (a restart builds them again). */
struct mx_bisect *bisect_free(struct mx_bisect *b);
/* Something changed (a job, a new bisection, start-up): look at every active bisection from the loop. */
void bisect_poke(struct mx_bisect *b);
/* Cancel a bisection: its build is killed, its queued runs cancelled; returns the running run to stop, or 0. */
int bisect_cancel(struct mx_bisect *b, int64_t id, uid_t by, int64_t *ret_running);
