/* SPDX-License-Identifier: MIT */
/* Human output: aligned tables, times and durations; and the --json document. */
#pragma once

#include "client.h"

#include <jansson.h>

struct table;

/* A table with the given column headers (NULL-terminated). */
struct table *table_new(const char *const *headers);
/* Add a row: one string per column (copied; NULL prints "-"). */
void table_add(struct table *t, const char *const *cells);
/* Print with columns padded to their widest cell; the last column is not padded. */
void table_print(struct table *t, FILE *f);
struct table *table_free(struct table *t);
DEFINE_POINTER_CLEANUP(struct table, table_free)

/* One "  SYNOPSIS   SUMMARY" line of mxmatrix --help; a long synopsis gets a line of its own. */
void output_help_line(FILE *f, const char *synopsis, const char *summary);
/* Print a JSON value as the single --json document (indented). */
void output_json(json_t *v);
/* s as one POSIX shell word: unchanged when it has only safe characters, else in single quotes. */
char *output_shell_quote(const char *s);
/* "2026-11-22 10:03:05" for a µs timestamp (JSON integer), "-" for null. */
char *output_time(json_t *us);
/* "3m05s" between two µs timestamps (end null: until now). */
char *output_elapsed(json_t *start_us, json_t *end_us);
/* A JSON scalar as text for a cell ("-" for null/missing). */
char *output_scalar(json_t *v);
/* The verdicts of a run's levels as "L1=pass L1.5=fail". */
char *output_levels(json_t *levels);
/* A table of job summaries (status, list). */
void output_jobs(json_t *jobs);
/* A table of run summaries (show JOB, follow). */
void output_runs(json_t *runs);
