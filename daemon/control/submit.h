/* SPDX-License-Identifier: MIT */
/*
 * The submit method: expand a submission with the matrix into planned runs,
 * check the per-user limits, snapshot each run's env/argv/expectations, store
 * the job in one transaction and only then acknowledge it.
 */
#pragma once

#include "control.h"

#include <jansson.h>

struct mx_matrix;

void submit_handle(struct mx_request *req);
/* The snapshot part every run of a submission shares: profile, target, model, levels and their settings. */
json_t *submit_job_spec(const struct mx_matrix *m, json_t *levels, json_t *level_settings);
/* The login name of uid (what a job records as its user), or NULL when it has none. */
char *submit_user_name(uid_t uid);
