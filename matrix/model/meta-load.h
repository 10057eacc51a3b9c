/* SPDX-License-Identifier: MIT */
/* meta-load.c's functions (the types are metadata.h's). */
#pragma once

#include "metadata.h"

/*
 * Validate m->root's "metadata" (absent is fine) and return the normalised
 * section for run snapshots in *ret (NULL when absent): the top-level
 * "pip_freeze" moves into "probes", a bare argv becomes {"command": argv}, a
 * single file path becomes {"file": [path]}. Errors as mx_matrix_error_at().
 */
int mx_meta_load(const struct mx_matrix *m, json_t **ret, char **reterr);
