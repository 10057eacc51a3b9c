/* SPDX-License-Identifier: MIT */
/* Re-reading the matrix file into the daemon's shared state (daemon-reload.c). */
#pragma once

#include "daemon.h"

/* Re-read the matrix file; on failure the old one stays. Returns 0 or -errno with *reterr. */
int daemon_reload_matrix(struct mx_daemon *d, char **reterr);
