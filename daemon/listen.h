/* SPDX-License-Identifier: MIT */
/*
 * The control socket: the one systemd passed us (socket activation, preferring
 * the descriptor named "control"), or one we bind ourselves. Non-logging.
 */
#pragma once

#include "util.h"

#include <sys/types.h>

struct listen_socket {
        int fd;
        bool activated; /* passed by systemd: never unlink or chmod it */
        char *path;     /* the path we bound (NULL when activated) */
};

/*
 * Obtain the listening socket. mode and gid (-1: keep ours) apply only to a
 * socket we bind. -EADDRINUSE when another daemon answers on path; -E2BIG when
 * more than one unexpected descriptor was passed; -ENAMETOOLONG for a path that
 * does not fit sockaddr_un.
 */
int listen_open(const char *path, mode_t mode, gid_t gid, struct listen_socket *ret, char **reterr);
/* Close, and unlink the node if we bound it. */
void listen_close(struct listen_socket *s);
