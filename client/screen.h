/* SPDX-License-Identifier: MIT */
/*
 * The answer on one screen: the daemon's per-configuration summary of a job
 * (protocol.json's type "summary", daemon/control/summary.c) as one compact table,
 * printed by show JOB and at the end of follow.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* Does the summary hold every run of the job (a job of more runs than it holds gets the full table)? */
bool screen_complete(json_t *summary);
/* Print the table and the line that says what its figures are; nothing for a null summary. */
void screen_print(json_t *summary);
