/* SPDX-License-Identifier: MIT */
/* report-util.c's functions (the types are mxreport.h's). */
#pragma once

#include "mxreport.h"

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

/*
 * The confirmation starts an L5 level (a level object of a document or of
 * show rRUN) was decided with, as one line: "4 extra server starts in 2
 * confirmation rounds (of at most 2): r12 (this run) 2, r7 (the reference,
 * job 3) 2"; NULL when L5 had none. The caller frees.
 */
char *report_l5_confirmation_text(json_t *l5);
