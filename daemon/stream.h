/* SPDX-License-Identifier: MIT */
/* Streaming methods (follow, logs); the wake-up hooks are declared in sched.h. */
#pragma once

#include "control.h"

void stream_follow_start(struct mx_request *req, int64_t job);
void stream_logs_start(struct mx_request *req, int64_t run, int attempt, bool follow, int64_t tail);
void stream_free_all(struct mx_daemon *d);
