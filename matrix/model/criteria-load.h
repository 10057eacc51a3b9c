/* SPDX-License-Identifier: MIT */
/* criteria-load.c's functions (the types are matrix.h's). */
#pragma once

#include "matrix.h"

/* The Target column of seed 000's table: ">= 52", ">= +10 %", "<= +3 %", "<= +2" (caller frees). */
char *mx_criterion_target(const struct mx_matrix_criterion *c);

/*
 * Parse such a target for metric into op and value: a signed number is a
 * change against the baseline (with %: percent; without: units), an unsigned
 * one an absolute bound. -EINVAL with a reason (caller frees) otherwise.
 */
int mx_criterion_parse_target(const char *metric, const char *s, enum mx_criterion_op *ret_op,
                              double *ret_value, char **reterr);

/* The hard constraints that apply to feature f (its own, else the matrix's). */
const struct mx_matrix_criterion *mx_feature_hard(const struct mx_matrix *m,
                                                  const struct mx_matrix_feature *f, size_t *ret_n);

/* "P3": a feature's id, as plans and matrix show print it (caller frees). */
char *mx_feature_id(const struct mx_matrix_feature *f);

/*
 * criteria-load.c: one criterion object (criteria and hard_constraints
 * entries), and, once every feature is parsed, the matrix's and features'
 * hard_constraints and the features' gates. Errors as mx_matrix_load_file().
 */
int mx_criterion_load(const struct mx_matrix *m, json_t *node, struct mx_matrix_criterion *c, char **reterr);

int mx_criteria_load(struct mx_matrix *m, char **reterr);

/* "tg32_tps >= 40", "L2 passed", ...: a gate condition for people (without its subject). */
char *mx_gate_describe(const struct mx_matrix *m, const struct mx_matrix_gate *g);
