/* SPDX-License-Identifier: MIT */
/*
 * The daemon's one collector of exit statuses. Every child is reaped here, with
 * waitpid(-1, WNOHANG) on each SIGCHLD (delivered as a libevent signal event), so
 * orphans of our servers that the subreaper inherits never linger as zombies.
 * Whoever started a child watches it to get its status; unwatched children
 * (adopted orphans) are reaped silently and counted.
 */
#pragma once

#include "util.h"

#include <sys/types.h>

struct event_base;
struct proc_reaper;

/* A watched child ended; status is as from waitpid(). */
typedef void (*proc_exit_cb)(pid_t pid, int status, void *userdata);

/*
 * Install the SIGCHLD event on base and reap every child from then on. Only one
 * base per process can own signal events (a libevent rule), so one reaper per
 * process: -EBUSY otherwise.
 */
int proc_reaper_new(struct event_base *base, struct proc_reaper **ret);
/* Remove the events. Stops (proc-stop.h) using the reaper must be finished or cancelled first. */
struct proc_reaper *proc_reaper_free(struct proc_reaper *r);
DEFINE_POINTER_CLEANUP(struct proc_reaper, proc_reaper_free)

struct event_base *proc_reaper_get_base(const struct proc_reaper *r);

/*
 * Deliver pid's exit status to cb once, from the loop. pid must be our child and
 * not yet reaped: register right after proc_spawn(), before control returns to
 * the loop. -EEXIST if it is already watched. A child that ended before the
 * SIGCHLD event existed is delivered on the next loop iteration.
 */
int proc_reaper_watch(struct proc_reaper *r, pid_t pid, proc_exit_cb cb, void *userdata);
/* Forget a watch (the child will still be reaped, silently); -ENOENT if none. */
int proc_reaper_unwatch(struct proc_reaper *r, pid_t pid);
/*
 * Reap now what has ended, delivering watched statuses before returning.
 * Callbacks may watch, unwatch and start or cancel stops, but not free the reaper.
 */
void proc_reaper_reap(struct proc_reaper *r);
/* Children reaped that nobody watched: adopted orphans of our servers. */
uint64_t proc_reaper_adopted(const struct proc_reaper *r);
