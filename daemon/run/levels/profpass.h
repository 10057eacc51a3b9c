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
 * the server's whole life: L4 records that it was traced, and once every
 * level had its turn (levels.h: before_stop) mx_profpass_final() reads the
 * server's generation counter, which began at 0 when the server started, and
 * profile-workload.json says the tokens are the whole life's (every level's
 * requests, the workload's among them); a server without such a counter
 * (llama-server without --metrics) gets no file, and the pass says why.
 */
#pragma once

#include "levels.h"

struct mx_profpass;

typedef void (*mx_profpass_done_cb)(void *ud);

/* Start the pass for the profile's profiler section; done runs from the loop once it is over, failed or not. */
int mx_profpass_start(const struct mx_level_ctx *ctx, json_t *profiler, int64_t timeout_ms, mx_profpass_done_cb done,
                      void *ud, struct mx_profpass **ret, char **reterr);
/*
 * The server is about to stop: for a whole-life capture (no control), read its counters and write
 * profile-workload.json. false when there is nothing to do (done is not called), else done runs later.
 */
bool mx_profpass_final(struct mx_profpass *p, mx_profpass_done_cb done, void *ud);
/* Cancels what is in flight; no callback runs. */
struct mx_profpass *mx_profpass_free(struct mx_profpass *p);
/* What the pass did, for L1.5's metrics: {"workload", "control", "tokens", "source", "file", "error"}. */
json_t *mx_profpass_json(const struct mx_profpass *p);
/* Does the profiler section ask for a pass (a workload or a control)? */
bool mx_profpass_wanted(json_t *profiler);
