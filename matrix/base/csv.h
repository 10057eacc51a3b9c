/* SPDX-License-Identifier: MIT */
/*
 * An RFC 4180 CSV reader fed one physical line at a time.
 *
 * Profiler output mixes CSV with other text (ncu's "==PROF==" lines and the
 * profiled program's own output, nsys's "Processing [...]" lines), so the
 * reader does not split the input itself: the caller reads lines (lines.h),
 * decides which are data, and feeds those. A quoted field may hold commas,
 * doubled quotes ("" for ") and line breaks; while one is open
 * (mx_csv_pending()) the next line continues the record and must be fed
 * whatever it looks like. A line break inside a quoted field reads as "\n".
 *
 * A quote inside an unquoted field is kept as a literal character (nsys does
 * not quote names without commas); text after a closing quote other than a
 * comma is an error.
 *
 * Everything is bounded (struct mx_csv_limits): fields per record, bytes per
 * field, bytes per record.
 */
#pragma once

#include "util.h"

#define MX_CSV_FIELDS_MAX 4096          /* ncu --page raw prints one column per metric */
#define MX_CSV_FIELD_MAX (64 * 1024)    /* templated C++ kernel names reach several KiB */
#define MX_CSV_RECORD_MAX (1024 * 1024) /* all fields of one record together */

struct mx_csv_limits {
        size_t max_fields;
        size_t max_field;
        size_t max_record;
};

/* The record last completed; valid until the next mx_csv_feed_line(). */
struct mx_csv_record {
        size_t n_fields;
        const char *const *fields; /* NUL-terminated (a field holding NUL bytes reads short: see lens) */
        const size_t *lens;
        unsigned line; /* line number the record started on */
};

struct mx_csv;

/* limits may be NULL (the MX_CSV_* defaults); a zero member takes its default. */
struct mx_csv *mx_csv_new(const struct mx_csv_limits *limits);
struct mx_csv *mx_csv_free(struct mx_csv *c);
DEFINE_POINTER_CLEANUP(struct mx_csv, mx_csv_free)

/*
 * Feed one line (without its terminator) numbered line_no. Returns 1 when the
 * line completed a record (see mx_csv_record()), 0 when the record continues
 * on the next line (an open quoted field), -EBADMSG for malformed CSV or
 * -E2BIG for a record over the limits, with *reterr naming the line and the
 * field. After an error the partial record is dropped.
 */
int mx_csv_feed_line(struct mx_csv *c, unsigned line_no, const char *line, size_t len, char **reterr);
/* A quoted field is open: the next line belongs to the current record. */
bool mx_csv_pending(const struct mx_csv *c);
/* Drop a partial record (e.g. a probed line that turned out not to be CSV). */
void mx_csv_reset(struct mx_csv *c);
/* At the end of the input: -EBADMSG naming the line if a quoted field was never closed. */
int mx_csv_finish(struct mx_csv *c, char **reterr);
const struct mx_csv_record *mx_csv_record(const struct mx_csv *c);
