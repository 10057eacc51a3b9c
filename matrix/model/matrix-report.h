/* SPDX-License-Identifier: MIT */
/* The matrix's part of a report document (docs/mxmatrix-report.json.5, "matrix"). */
#pragma once

#include "matrix.h"

/* Report format version: the document's "report" key (the daemon's report method and export write it). */
#define MX_REPORT_VERSION 1

/*
 * {"path", "digest" (FNV-1a 64 of the file, as jobs record it), "name", "description", "axes" (values with
 * name, description, product, aliases, env, argv), "baseline" {axis: value}, "features" (as written, with
 * "status" and "criteria_text"), "known_incompatible" [{"when", "text", "expect", "reason"}], "reference"
 * (as written, or null)}.
 */
json_t *mx_matrix_report_json(const struct mx_matrix *m);
