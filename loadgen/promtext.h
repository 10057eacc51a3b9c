/* SPDX-License-Identifier: MIT */
/*
 * A server's /metrics (Prometheus text exposition format 0.0.4) read for the
 * counters L4 turns into figures: vLLM's vllm:spec_decode_* and
 * vllm:generation_tokens_total, llama-server's llamacpp:* (target-surfaces.md
 * §A1, §B). Pure functions over the text, no I/O.
 *
 * A metric may have several series (labels model_name and engine on every
 * vLLM metric; one per engine with data parallelism): a figure is the sum of
 * every series of that exact name. Counters are read before and after a
 * window; a counter that went down was reset (the server restarted): the
 * increase is then the value after the window, as Prometheus's increase()
 * takes it, and the caller says so.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A line of a /metrics text longer than this is malformed (vLLM's longest are histogram buckets, < 300). */
#define MX_PROM_LINE_MAX 4096

/*
 * The sum of every series named name (exactly: "vllm:generation_tokens_total"; label sets summed) in
 * text. 0 and the sum, the number of series in *ret_series; -ENOENT when no series has that name;
 * -EBADMSG with a reason (the line number) when a sample line is malformed.
 */
int mx_prom_sum(const char *text, size_t n, const char *name, double *ret_sum, unsigned *ret_series,
                char **reterr);
/*
 * mx_prom_sum() of a counter: also -EBADMSG when the sum is not a count a double holds exactly (NaN, Inf,
 * negative, beyond 2^53), so that no such value reaches a token count or a rate.
 */
int mx_prom_count(const char *text, size_t n, const char *name, double *ret_count, char **reterr);

/* A counter's increase from before to after; *ret_reset is true when it went down (a reset: after itself). */
double mx_prom_increase(double before, double after, bool *ret_reset);
