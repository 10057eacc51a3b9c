/* SPDX-License-Identifier: MIT */
/*
 * Output for people and programs: aligned tables (columns padded to the
 * widest cell, counted in characters, not bytes) and one JSON document.
 */
#pragma once

#include "util.h"

#include <jansson.h>

struct output_table;

/* A table with n_columns columns; headers (n_columns strings) may be NULL for none. */
struct output_table *output_table_new(size_t n_columns, const char *const *headers);
struct output_table *output_table_free(struct output_table *t);
DEFINE_POINTER_CLEANUP(struct output_table, output_table_free)

/* Append one cell (copied; NULL prints as "-"); rows fill left to right, then wrap. */
void output_table_add(struct output_table *t, const char *cell);
_printf_(2, 3) void output_table_addf(struct output_table *t, const char *fmt, ...);

/* Print with indent spaces before each row and two spaces between columns; the last column is not padded. */
void output_table_print(const struct output_table *t, FILE *f, unsigned indent);

/* Print j as one indented JSON document and a newline; returns MX_EXIT_OK or MX_EXIT_FAILURE. */
int output_json(json_t *j);
