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

/* Check a document's version and shape (job, matrix, runs); -EINVAL with a reason naming what is wrong. */
int report_doc_check(json_t *doc, char **reterr);
/* Read and check a document from a file ("-": stdin). */
int report_doc_load(const char *path, json_t **ret, char **reterr);
/* The document's canonical text: sorted keys, 2-space indent, a final newline (export, report json). */
char *report_doc_dump(json_t *doc);
/*
 * A copy with every object's keys in sorted order, as the canonical text reads back: renderers walk
 * objects in their order, so the daemon's document and an exported one must agree on it.
 */
json_t *report_doc_normalise(json_t *doc);

/* ---- renderers (each returns 0, or -errno with *reterr) ---- */

int report_benchmark_results(json_t *doc, FILE *f, char **reterr);
/* feature: a feature of the matrix, or NULL for the job's own (its feature= word resolved). */
int report_test_log(json_t *doc, const char *feature, FILE *f, char **reterr);
/* Seed 000's docs/porting/FEATURE_<name>.md for feature (NULL: the job's own); report-porting.c. */
int report_porting(json_t *doc, const char *feature, FILE *f, char **reterr);
/* "porting/FEATURE_<NAME>.md": the name in upper case with '_' for '-', as seed 000 names it. */
int report_porting_name(json_t *doc, const char *feature, char **ret, char **reterr);
int report_feature_matrix(json_t *doc, FILE *f, char **reterr);
/* Seed 001 Phase 0's VLLM_BASELINE_ANALYSIS.md from the document's "analysis" section (report-analysis.c).
 */
int report_analysis(json_t *doc, FILE *f, char **reterr);
int report_json(json_t *doc, FILE *f, char **reterr);
int report_csv(json_t *doc, FILE *f, char **reterr);
int report_junit(json_t *doc, FILE *f, char **reterr);

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
const struct report_kind *report_kind_find(const char *name);

/*
 * The test log's file name under -o DIR, as seed 001 names it:
 * "TEST_LOGS/FEATURE_<NAME>_<YYYY-MM-DD>.md", NAME the feature's name in
 * upper case with '-' as '_', the date the job's last finished attempt's (UTC).
 */
int report_test_log_name(json_t *doc, const char *feature, char **ret, char **reterr);
