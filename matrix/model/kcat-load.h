/* SPDX-License-Identifier: MIT */
/* kcat-load.c's functions (the types are matrix.h's). */
#pragma once

#include "matrix.h"

/*
 * kcat-load.c: "kernel_categories" and "decision_rules" (errors as
 * mx_matrix_load_file()); the list that applies (the file's or the built-in
 * one); a parsed "when" ("A + B > 50%") against that list.
 */
int mx_kcat_load(struct mx_matrix *m, char **reterr);

const struct mx_kcat_def *mx_matrix_kcats(const struct mx_matrix *m, size_t *ret_n);

int mx_drule_parse_when(const struct mx_kcat_def *defs, size_t n_defs, const char *when, size_t **ret_cats,
                        size_t *ret_n_cats, enum mx_gate_op *ret_op, double *ret_pct, char **reterr);
