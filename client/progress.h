/* SPDX-License-Identifier: MIT */
/*
 * A job's progress for people: runs done of the total, their results in the
 * one result vocabulary (mx_result_counts_text: an expected failure is
 * "xfail", never a pass), elapsed time and an ETA from the durations of the runs done so far. Pure
 * functions of the job summary (with the daemon's "progress" timing) and the
 * time now, shared by follow's progress line and status.
 */
#pragma once

#include "util.h"

#include <jansson.h>

struct progress {
        int64_t total, done;
        json_t *counts;     /* borrowed from the job: its results, in protocol.json's result vocabulary */
        int64_t elapsed_us; /* since the job's first attempt started; -1: none started */
        int64_t eta_us;     /* -1: unknown (no run has finished yet); 0 when nothing is left */
        bool paused;        /* the queue is paused: no ETA */
        bool eta_stored;    /* the ETA is the stored attempts' mean, not this job's */
};

/* Fill *ret from a job summary (counts, progress) at now_us (µs, the real clock); *ret borrows job's counts. */
void progress_from_job(json_t *job, int64_t now_us, struct progress *ret);
/* "7/12 runs: 5 pass, 1 fail, 1 xfail, 12m30s elapsed, ETA 10m40s" (parts without data left out). */
char *progress_format(const struct progress *p);
