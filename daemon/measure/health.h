/* SPDX-License-Identifier: MIT */
/*
 * The machine's part of the health gate between runs (scheduler.c runs the
 * gate; LAVA's device health check): the GPU can be read, and its memory is
 * back to the idle level within the matrix's health.memory_tolerance_mb. On a
 * unified-memory GPU (the GB10) the memory is the system's (sampler.h), which
 * is exactly what a leftover EngineCore would still hold there.
 *
 * The idle level is the lowest memory figure any gate sample has seen since
 * the daemon started: gate samples are taken only while no run is active, so a
 * figure above it is memory something of an earlier run (or someone else)
 * still holds. A fresh sample is taken for every gate (the sampler's request:
 * NVML at once, nvidia-smi as a child read on the loop); until it arrives the
 * check says -EAGAIN, and the scheduler looks again until its settle time.
 * Without a GPU source (the /proc fallback, a machine without NVIDIA) only the
 * process checks of the gate apply.
 */
#pragma once

#include "daemon.h"

struct mx_health;

/* The gate's sampler on the daemon's loop, with the daemon's gpu_source and nvml_library settings. */
int mx_health_new(struct mx_daemon *d, struct mx_health **ret);
struct mx_health *mx_health_free(struct mx_health *h);

/*
 * A sched_health_fn (scheduler.h): 0 healthy; -EINPROGRESS while the sample
 * taken for this gate has not come; -EAGAIN not yet (the GPU unreadable,
 * memory above the idle level), with the reason.
 */
int mx_health_check(void *ud, char **reason);
