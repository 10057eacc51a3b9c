/* SPDX-License-Identifier: MIT */
/* report-kinds.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

const struct report_kind *report_kind_find(const char *name);
