/* SPDX-License-Identifier: MIT */
/* report-porting.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

/* Seed 000's docs/porting/FEATURE_<name>.md for feature (NULL: the job's own); report-porting.c. */
int report_porting(json_t *doc, const char *feature, FILE *f, char **reterr);

/* "porting/FEATURE_<NAME>.md": the name in upper case with '_' for '-', as seed 000 names it. */
int report_porting_name(json_t *doc, const char *feature, char **ret, char **reterr);
