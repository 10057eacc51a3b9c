/* SPDX-License-Identifier: MIT */
/* report-machine.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

int report_json(json_t *doc, FILE *f, char **reterr);

int report_csv(json_t *doc, FILE *f, char **reterr);

int report_junit(json_t *doc, FILE *f, char **reterr);
