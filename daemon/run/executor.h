/* SPDX-License-Identifier: MIT */
/*
 * The executor seam: where runs execute. "local" is the serial scheduler's own
 * path (scheduler.c: one run on this machine's GPU, the health gate between
 * runs); another executor takes over the scheduler's public entry points
 * through this table, so control.c, methods.c and main.c keep calling
 * sched_*() whichever executes. executor-slurm.c is the other one: every run a
 * Slurm job, up to N in flight.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct mx_executor_ops {
        const char *name;
        /* The queue changed: submit what may start. From the event loop. */
        void (*kick)(void *x);
        /* A user cancelled run: stop it if it is in flight here (true). */
        bool (*cancel_run)(void *x, int64_t run);
        /* The runs in flight as sched_current_json() shows them, or NULL when none. */
        json_t *(*current_json)(void *x);
        bool (*busy)(void *x);
        /* Start nothing new; call done once it is safe to exit (at once is allowed). */
        void (*shutdown)(void *x, void (*done)(void *ud), void *ud);
        /* STATUS= line, as sched_status_line(). */
        char *(*status_line)(void *x);
};
