/* SPDX-License-Identifier: MIT */
/*
 * The bisect method: start a bisection (the configuration's snapshot taken
 * from the daemon's matrix now, as submit does), show one, or cancel one.
 * run/bisect.h drives it.
 */
#pragma once

#include "control.h"

void bisect_method(struct mx_request *req);
