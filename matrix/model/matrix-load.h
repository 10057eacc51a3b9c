/* SPDX-License-Identifier: MIT */
/* matrix-load.c's functions (the types are matrix.h's). */
#pragma once

#include "matrix.h"

/*
 * Load and validate a matrix file. On any error the whole file is rejected:
 * -EINVAL (or -EFBIG, -ENOENT, ... for the file itself) with *reterr set to
 * "FILE:LINE:COL: key 'PATH': message".
 */
int mx_matrix_load_file(const char *path, struct mx_matrix **ret, char **reterr);

/* The same from a buffer; name is what errors call the file. */
int mx_matrix_load_string(const char *name, const char *text, size_t len, struct mx_matrix **ret,
                          char **reterr);
