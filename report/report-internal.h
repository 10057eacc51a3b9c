/* SPDX-License-Identifier: MIT */
/* What the report renderers share (report-util.c); see mxreport.h. */
#pragma once

#include "matrix.h"
#include "mxreport.h"

#include <inttypes.h>

/* A figure with where it comes from: every number a report prints names its definition and sample count. */
struct rep_num {
        bool have;
        double v;
        int64_t n;       /* samples behind it; -1: not counted */
        double sd;       /* the samples' standard deviation (sample form), NAN when not given */
        const char *def; /* the definition (borrowed from the document, or static) */
        const char *why; /* !have: why not, e.g. "not measured (no L4 level ran)" */
};

json_t *rep_job(json_t *doc);
json_t *rep_matrix(json_t *doc);
json_t *rep_runs(json_t *doc);
/* The attempt a run's result comes from (its result_attempt, else the latest), or NULL. */
json_t *rep_attempt(json_t *run);
/* A level of an attempt by name, or NULL. */
json_t *rep_level(json_t *attempt, const char *name);
/* pass, fail, xfail, ... or the run's state while it has no result. */
const char *rep_result(json_t *run);
/* A level's verdict as the seeds' logs write it: "PASS" ... "SKIPPED" (also one not known); NULL: "NOT RUN". */
const char *rep_verdict_word(const char *verdict);
/* The feature status a document's string names, as the matrix reads it ("merged" is completed), else not
 * started. */
enum mx_feature_status rep_feature_status(const char *status);
/*
 * The document's runs counted in the one result vocabulary, as show JOB's
 * "runs:" line writes them (mx_result_counts_text: "4 pass, 3 fail, 5 xfail";
 * queued and running first). Caller frees.
 */
char *rep_result_counts(json_t *doc);
/* The line saying the matrix file changed after the job was planned, when the document says so. */
void rep_matrix_changed_note(FILE *f, json_t *doc);
/* A metric of the vocabulary (matrix.h mx_metrics) for a run, from its levels and samples. */
void rep_metric(json_t *run, const char *metric, struct rep_num *ret);
/* "52.10" / "not measured"; the cell form adds the spread and sample count: "52.10 ± 0.31 (n=10)". */
char *rep_num_text(const struct rep_num *n);
char *rep_num_cell(const struct rep_num *n);
/* Markdown table cell: '|' and newlines escaped, "-" for NULL or "". */
char *rep_md(const char *s);
/* UTC "2026-01-10" and "2026-01-10 10:03:05" of a µs timestamp; "-" when absent. */
char *rep_date(json_t *us);
char *rep_datetime(json_t *us);
/* "1m05s", "715ms" between two µs timestamps; "-" when either is absent. */
char *rep_duration(json_t *start, json_t *end);
/* The latest finished_at of any attempt of the document, else the job's submitted_at. */
json_t *rep_last_finished(json_t *doc);

/* Is the run's configuration the matrix's baseline? */
bool rep_is_baseline(json_t *doc, json_t *run);
/* The baseline's run: the first that passed, else the first; NULL when the job has none. */
json_t *rep_baseline_run(json_t *doc);
/* The axis=value pairs where the run differs from the baseline ("" for the baseline itself). */
char *rep_config_diff(json_t *doc, json_t *run);
/* A name for people: "Baseline (kernel=marlin)", a feature's title when it sets exactly the difference,
 * else "+ axis=value, ...". */
char *rep_config_name(json_t *doc, json_t *run);
/* A matrix feature by name, or (name NULL) the job's feature word resolved: a feature's name, or an axis
 * value, alias or axis=value that exactly one feature sets. NULL when none. */
json_t *rep_feature(json_t *doc, const char *name);

/*
 * Definitions, once per document, as footnotes: each table or block that used figures calls rep_defs_refs()
 * for a line naming the footnotes of its metrics; rep_defs_print() writes them all at the end (metrics with
 * the same definition share one).
 */
struct rep_defs {
        json_t *seen;    /* metric -> definition */
        json_t *notes;   /* definitions in order of first use: the footnote numbers */
        json_t *section; /* footnote numbers used since the last rep_defs_refs() */
};
void rep_defs_add(struct rep_defs *d, const char *label, const struct rep_num *n);
void rep_defs_refs(struct rep_defs *d, FILE *f);
void rep_defs_print(struct rep_defs *d, FILE *f);
void rep_defs_done(struct rep_defs *d);

/* The metrics of the seed tables, in their order, with their column names. */
struct rep_col {
        const char *metric;
        const char *label;
};
extern const struct rep_col rep_bench_cols[]; /* tg32, tg128, pp2048, TTFT p50, TTFT p99, Memory */
extern const size_t rep_n_bench_cols;

/* An observed failure of a run: its class (crash class, else "timeout", "level L2 failed", ...) and
 * evidence. */
struct rep_failure {
        const char *klass; /* borrowed */
        char *text;        /* owned: one line, the first piece of evidence */
};
/* false when the run did not fail (pass, xpass, queued, running, cancelled). */
bool rep_run_failure(json_t *run, struct rep_failure *ret);
/* Seed 000's Success Criteria Evaluation table (report-testlog.c); 0 pass, 1 not measured, 2 fail. */
int report_testlog_criteria(FILE *f, json_t *doc, json_t *feature, json_t *base, json_t *run,
                            struct rep_defs *defs);
void rep_failure_done(struct rep_failure *f);

/* The document's decode-profile entry of a run ("analysis"."runs"), or NULL (report-analysis.c). */
json_t *rep_analysis_run(json_t *doc, json_t *run_id);
