/* SPDX-License-Identifier: MIT */
/*
 * The server's own counters and the GPU's energy around a window of known
 * work: L4 reads them before and after each test, the profiling pass of L1.5
 * around its declared workload. /metrics is fetched as text (kept as
 * evidence) and read with promtext.h; figures are computed from the
 * counters' increases, never from what the harness expected.
 *
 *   speculative decoding  vLLM's vllm:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total
 *                         (llama-server's llamacpp:spec_decode_* alike): acceptance rate =
 *                         accepted / draft tokens, mean acceptance length = 1 + accepted / drafts
 *                         (vllm/v1/spec_decode/metrics.py, target-surfaces.md §A5)
 *   generated tokens      vllm:generation_tokens_total, llamacpp:tokens_predicted_total
 *   energy                NVML's total energy counter (mJ), joules per generated token
 */
#pragma once

#include "http.h"
#include "levels.h"

#include <jansson.h>

/* /metrics bodies kept: vLLM's is ~30 KB with a few models' histograms. */
#define MX_COUNTERS_BODY_MAX (4 << 20)

/* GET /metrics of the level's server; cb runs with the response (mx_http_cancel() stops it). */
int mx_counters_get(const struct mx_level_ctx *ctx, int64_t timeout_ms, mx_http_done_cb cb, void *ud,
                    struct mx_http_call **ret_call, char **reterr);
/* The /metrics text of a response (the caller frees it), or NULL with why ("HTTP 404", the transport error). */
char *mx_counters_text(struct mx_http_response *resp, char **ret_why);

/*
 * The speculative-decoding figures of a window from /metrics before and after (either NULL: not read, why_not
 * says why): {"source", "drafts", "draft_tokens", "accepted_tokens", "acceptance_rate",
 * "mean_acceptance_length", "reset"} or {"not_reported": reason}.
 */
json_t *mx_counters_spec_json(const char *before, const char *after, const char *why_not);

/*
 * The figures from llama-server's per-request timings (the engine's "draft_timings": draft_n,
 * draft_n_accepted summed over a test's requests), for a server whose /metrics has no draft counters:
 * {"source": "llama-server timings", "draft_tokens", "accepted_tokens", "acceptance_rate",
 * "mean_acceptance_length": null, "not_reported": why the length is not}; NULL without timings.
 */
json_t *mx_counters_spec_from_timings(json_t *draft_timings);

/*
 * Tokens the server says it generated in the window (its generation counter's increase): 0 and the count and
 * the counter's name; on a reset (the counter went down) *ret_reset and *reterr (when given) says from what to
 * what. -ENOENT (no such counter in both texts), -EBADMSG (malformed /metrics: which read, which line), both
 * with a reason in *reterr.
 */
int mx_counters_generated(const char *before, const char *after, int64_t *ret_tokens, const char **ret_name,
                          bool *ret_reset, char **reterr);
/* The generation counter's value in one /metrics text (from 0 at the server's start); errors as above. */
int mx_counters_generated_total(const char *text, int64_t *ret_tokens, const char **ret_name, char **reterr);

/*
 * The energy figures of a window: {"joules", "tokens", "joules_per_token", "source"} or {"not_measured":
 * why} (why_not set, or no tokens).
 */
json_t *mx_counters_energy_json(int64_t mj_before, int64_t mj_after, int64_t tokens, const char *why_not);
