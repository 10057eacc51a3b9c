/* SPDX-License-Identifier: MIT */
/*
 * The HTML report: one self-contained page (inline SVG from svg.h and inline
 * CSS; no script, nothing fetched) from a report document: tg32, pp2048 and
 * TTFT per configuration against the baseline and the targets, tokens/s/user
 * against tokens/s/GPU with the Pareto frontier, memory over time per run, the
 * pass/fail grid of the sweep (axis × axis), and the table of every number.
 *
 * The document it reads (members it does not know are ignored; what is
 * missing is left out of the page and said so):
 *   title, generated_at (µs), job {id, feature, strategy},
 *   targets [{metric: "tg32_tps", label, value}] (default: seed 001's
 *     Minimum 52, Target 58, Stretch 61 tok/s for tg32),
 *   runs [{id, config_key, config {axis: value}, result, reasons [...],
 *          baseline (bool; else "baseline" among reasons),
 *          levels [{level, verdict, metrics}] (L4's metrics: the bench result
 *            document, daemon/bench.h: results.throughput.tg32_tps /
 *            pp2048_tps, results.latency.ttft_p50_ms, tests[] rows),
 *          samples {scope: sampler summary} (or attempt_history[-1].samples)}]
 * That is "mxmatrix show JOB --json"'s runs with their latest attempt's
 * levels and samples, as the report document carries them.
 */
#pragma once

#include "util.h"

#include <jansson.h>
#include <stdio.h>

/* The seed's tg32 targets (seed 001, Success Criteria): used when the document names none. */
#define REPORT_TG32_MINIMUM 52.0
#define REPORT_TG32_TARGET 58.0
#define REPORT_TG32_STRETCH 61.0

/* Write the page for doc to f. -EINVAL with *reterr when doc is not a report document (no runs array). */
int report_html_write(json_t *doc, FILE *f, char **reterr);
