/* SPDX-License-Identifier: MIT */
/*
 * The HTML report: one self-contained page (inline SVG from svg.h and inline
 * CSS; no script, nothing fetched) from a report document: tg32, pp2048 and
 * TTFT per configuration against the baseline and the targets, tokens/s/user
 * against tokens/s/GPU with the Pareto frontier, memory over time per run, the
 * pass/fail grid of the sweep (axis × axis), and the table of every number.
 *
 * It reads the report document (docs/mxmatrix-report.json.5, mxreport.h) as
 * the other reports do; members it does not know are ignored, and what is
 * missing is left out of the page and said so. Each run's figures come from
 * the attempt its result comes from (rep_attempt): L4's metrics are the bench
 * result document (loadgen/bench.h: results.throughput.tg32_tps / pp2048_tps,
 * results.latency.ttft_p50_ms, tests[] rows for the Pareto chart), the memory
 * line the sampler's "run" scope (series.t / series.mem). The baseline is the
 * run whose configuration is the matrix's baseline (or planned as
 * "baseline"); the targets are the document's "targets" [{metric, label,
 * value}] if any, else matrix.reference.targets [{metric, name, value}], else
 * seed 001's Minimum 52, Target 58, Stretch 61 tok/s for tg32. The page is a
 * pure function of the document (no clock): `mxmatrix report html`.
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
