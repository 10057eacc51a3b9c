/* SPDX-License-Identifier: MIT */
/* The daemon's protocol methods, one handler each (methods.c); main.c hands the table to control_new(). */
#pragma once

#include "control.h"

/* One entry per method of schema/protocol.json, terminated by a NULL name. */
extern const struct mx_method methods_table[];
