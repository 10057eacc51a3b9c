/* SPDX-License-Identifier: MIT */
/*
 * The profiling pass (issue 18): known decode work inside the profiler's
 * capture, so that "per token" is exact and says which tokens. L1.5 runs it
 * before L2-L4 when the profile's profiler declares a workload or a control:
 *
 *   the engine's set-up     /v1/models, /tokenize, the chat template's probe: before the capture
 *   GET /metrics            the server's counters before
 *   POST control.start      (vLLM /start_profile: cudaProfilerStart, nsys --capture-range=cudaProfilerApi)
 *   the workload            requests x (prompt_tokens, output_tokens), one at a time, through the benchmark
 *                           engine (exact prompt lengths, every request checked for its token counts)
 *   POST control.stop       (vLLM /stop_profile): nothing after this is captured, L4 included
 *   GET /metrics            the server's counters after
 *
 * and writes profile-workload.json into the run directory, beside the
 * profiler report: {"tokens", "requests", "prompt_tokens", "output_tokens",
 * "which", "source"}, tokens from the server's own generation counter
 * ("server counters") or, where the server exports none, from the usage of
 * the workload's requests ("declared"). Without a control the capture covers
 * the server's whole life: no workload file is written for it (the tokens of
 * the whole life are not known here) and L4 records that it was traced.
 */
#pragma once

#include "levels.h"

struct mx_profpass;

typedef void (*mx_profpass_done_cb)(void *ud);

/* Start the pass for the profile's profiler section; done runs from the loop once it is over, failed or not. */
int mx_profpass_start(const struct mx_level_ctx *ctx, json_t *profiler, int64_t timeout_ms, mx_profpass_done_cb done,
                      void *ud, struct mx_profpass **ret, char **reterr);
/* Cancels what is in flight; no callback runs. */
struct mx_profpass *mx_profpass_free(struct mx_profpass *p);
/* What the pass did, for L1.5's metrics: {"workload", "control", "tokens", "source", "file", "error"}. */
json_t *mx_profpass_json(const struct mx_profpass *p);
/* Does the profiler section ask for a pass (a workload or a control)? */
bool mx_profpass_wanted(json_t *profiler);
