/* SPDX-License-Identifier: MIT */
/*
 * Seed 002's "Results" YAML block from an L4 result (the L4 level's metrics:
 * the benchmark engine's document plus ready_s, memory and valid; see
 * daemon/run/levels/l4-bench.c). The L4 level writes it as l4-results.yaml; the
 * reports reuse it. Pure: no I/O.
 *
 *   startup_time_s, throughput (pp<N>_tps, tg<M>_tps: the depth-0 rows'
 *   means), latency (ttft/tpot/itl/e2e p50 and p99 in ms, over the depth-0
 *   requests), resource (gpu_memory_peak_gb: the memory summary's peak in
 *   GiB; cpu_usage_percent: not measured, null)
 *
 * Unknown figures are null. Comments say what the figures are, how many
 * samples the percentiles have, and when the numbers are invalid (the kernel
 * gate did not confirm the kernel path).
 */
#pragma once

#include "util.h"

#include <jansson.h>

/* The block as YAML text (caller frees), each line ending in a newline; never NULL. */
char *mx_bench_results_yaml(json_t *l4);
