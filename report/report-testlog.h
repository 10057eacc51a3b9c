/* SPDX-License-Identifier: MIT */
/* report-testlog.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

/* feature: a feature of the matrix, or NULL for the job's own (its feature= word resolved). */
int report_test_log(json_t *doc, const char *feature, FILE *f, char **reterr);

/*
 * The test log's file name under -o DIR, as seed 001 names it:
 * "TEST_LOGS/FEATURE_<NAME>_<YYYY-MM-DD>.md", NAME the feature's name in
 * upper case with '-' as '_', the date the job's last finished attempt's (UTC).
 */
int report_test_log_name(json_t *doc, const char *feature, char **ret, char **reterr);
