/* SPDX-License-Identifier: MIT */
/*
 * A free TCP port for each run's server, so that a run never talks to the server
 * of another (and a server that failed to die does not answer for the next).
 *
 * A free port is not proof that no old server exists: vLLM binds with
 * SO_REUSEPORT (target-surfaces.md §A1), so a second server can share a port
 * with an orphan, and an orphaned engine frees the API port at once while it
 * keeps the GPU. The /proc sweep for the run tag (proc-stop.h) is what proves
 * the previous run is gone; the port only keeps runs apart.
 */
#pragma once

#include "util.h"

/* How many ports to try before giving up, when the kernel's pick turns out to have a listener. */
#define PORT_PICK_TRIES 8
/* The longest a connect probe may take (a local address answers at once; this only bounds oddities). */
#define PORT_PROBE_TIMEOUT_MS 200

/*
 * A TCP port on host (a numeric IPv4 or IPv6 address, such as the one the server
 * is told to bind) that the kernel lets us bind and nothing accepts connections
 * on. It is free when checked; the server binds it moments later, and nothing
 * stops a third party from taking it in between.
 */
int port_pick_free(const char *host, int *ret_port, char **reterr);

/* 1 if something accepts TCP connections on host:port, 0 if refused, <0 on error. */
int port_probe_listener(const char *host, int port);
