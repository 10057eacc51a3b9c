/* SPDX-License-Identifier: MIT */
/* Streaming methods (follow, logs, show JOB); the wake-up hooks are declared in sched.h. */
#pragma once

#include "control.h"

void stream_follow_start(struct mx_request *req, int64_t job);
void stream_logs_start(struct mx_request *req, int64_t run, int attempt, bool follow, int64_t tail);
/* show JOB: at most limit (<= 0: the default page) of the runs after run after_run (0: from the first). */
void stream_show_job_start(struct mx_request *req, int64_t job, int64_t after_run, int64_t limit);
void stream_free_all(struct mx_daemon *d);
