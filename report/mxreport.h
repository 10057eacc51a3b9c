/* SPDX-License-Identifier: MIT */
/*
 * The report document (docs/mxmatrix-report.json.5) on the client side and
 * the reports rendered from it, one file each: report-bench.c (seed 002's
 * BENCHMARK_RESULTS.md), report-testlog.c (seed 001's test log with seed
 * 000's Success Criteria Evaluation), report-features.c (seed 003's
 * FEATURE_MATRIX.md parts), report-machine.c (JSON, CSV, JUnit XML),
 * report-html.c (the HTML page, charts drawn by svg.c). The
 * renderers are pure: the same document gives the same bytes (no clock, no
 * locale, no environment; times are the data's, in UTC). report-util.c has
 * what they share: the attempt a run's result comes from, metrics with
 * their definition and sample count, configuration names, Markdown cells.
 * Built as the static library mxreport, linked by mxmatrix and test-report.
 */
#pragma once

#include "util.h"

#include <jansson.h>
#include <stdio.h>

#define REPORT_FILE_MAX (512u * 1024 * 1024) /* a document read with --from */

/* ---- the document (report-util.c) ---- */


/* ---- renderers (each returns 0, or -errno with *reterr) ---- */


/* The kinds `mxmatrix report KIND` takes, and the file each writes under -o DIR. */
struct report_kind {
        const char *name;
        const char *file; /* NULL: named from the data (test-log) */
        const char *summary;
        int (*render)(json_t *doc, FILE *f, char **reterr); /* NULL: render_feature */
        /* Kinds about one feature (test-log, porting): the FEATURE word, and the file named from the data. */
        int (*render_feature)(json_t *doc, const char *feature, FILE *f, char **reterr);
        int (*file_name)(json_t *doc, const char *feature, char **ret, char **reterr);
};
extern const struct report_kind report_kinds[];
extern const size_t report_n_kinds;

/* The functions of the files beside this one, which take these types. */
#include "report-analysis.h"
#include "report-bench.h"
#include "report-features.h"
#include "report-kinds.h"
#include "report-machine.h"
#include "report-porting.h"
#include "report-testlog.h"
#include "report-util.h"
