/* SPDX-License-Identifier: MIT */
/* The report method: one job's report document (docs/mxmatrix-report.json.5), its runs streamed in batches.
 */
#pragma once

#include "control.h"

/* At most limit (<= 0: the default page) of the job's runs after run after_run (0: from the first). */
void report_start(struct mx_request *req, int64_t job, int64_t after_run, int64_t limit);
