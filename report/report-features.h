/* SPDX-License-Identifier: MIT */
/* report-features.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

int report_feature_matrix(json_t *doc, FILE *f, char **reterr);
