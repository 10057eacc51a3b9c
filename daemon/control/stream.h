/* SPDX-License-Identifier: MIT */
/* Streaming methods (follow, logs, show JOB), woken by the scheduler's watch (main.c wires it). */
#pragma once

#include "control.h"

void stream_follow_start(struct mx_request *req, int64_t job);
void stream_logs_start(struct mx_request *req, int64_t run, int attempt, bool follow, int64_t tail);
/* show JOB: at most limit (<= 0: the default page) of the runs after run after_run (0: from the first). */
void stream_show_job_start(struct mx_request *req, int64_t job, int64_t after_run, int64_t limit);
void stream_free_all(struct mx_daemon *d);

/* Wake-ups: what followers of a job or a run's log must hear. */
void stream_job_changed(struct mx_daemon *d, int64_t job);
void stream_log_appended(struct mx_daemon *d, int64_t run);
void stream_run_finished(struct mx_daemon *d, int64_t run);
