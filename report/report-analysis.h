/* SPDX-License-Identifier: MIT */
/* report-analysis.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

/* Seed 001 Phase 0's VLLM_BASELINE_ANALYSIS.md from the document's "analysis" section (report-analysis.c).
 */
int report_analysis(json_t *doc, FILE *f, char **reterr);
