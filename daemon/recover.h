/* SPDX-License-Identifier: MIT */
/* Start-up recovery of runs a dead daemon left "running" (recover.c explains). */
#pragma once

#include "daemon.h"

/* Returns the number of attempts recovered, or a negative errno. */
int recover_interrupted(struct mx_daemon *d);
