/* SPDX-License-Identifier: MIT */
/*
 * The history method (issue 19 item 2): a configuration's stored L4 series
 * by source commit, its change points (matrix/analysis/changepoint.h) and,
 * for each, the mxmatrix bisect command line that narrows it to one commit.
 */
#pragma once

#include "control.h"

void changes_method(struct mx_request *req);
