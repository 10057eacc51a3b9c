/* SPDX-License-Identifier: MIT */
/* report-bench.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

int report_benchmark_results(json_t *doc, FILE *f, char **reterr);
