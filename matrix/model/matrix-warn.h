/* SPDX-License-Identifier: MIT */
/* matrix-warn.c's functions (the types are matrix.h's). */
#pragma once

#include "matrix.h"

/*
 * Warnings on a valid file (matrix-warn.c): expectations no evidence source
 * can ever satisfy, each "FILE:LINE:COL: key 'PATH': message"; NULL when none.
 */
char **mx_matrix_warnings(const struct mx_matrix *m);

/* Does the target's profile run the L1.5 gate (every profile but command)? Does it have a profiler? */
bool mx_matrix_has_gate(const struct mx_matrix *m);

bool mx_matrix_has_profiler(const struct mx_matrix *m);

/* Where log and kernel expectations are checked, as a sentence for plans (caller frees). */
char *mx_matrix_evidence_log(const struct mx_matrix *m);

char *mx_matrix_evidence_kernels(const struct mx_matrix *m);
