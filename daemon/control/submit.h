/* SPDX-License-Identifier: MIT */
/*
 * The submit method: expand a submission with the matrix into planned runs,
 * check the per-user limits, snapshot each run's env/argv/expectations, store
 * the job in one transaction and only then acknowledge it.
 */
#pragma once

#include "control.h"

void submit_handle(struct mx_request *req);
