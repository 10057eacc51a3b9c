/* SPDX-License-Identifier: MIT */
/*
 * Where a value sits in a JSON text.
 *
 * jansson parses into values that do not remember their line and column, but
 * a matrix file error must say "FILE:LINE:COL". This module is a small
 * read-only scanner over the original text that follows a path (keys and
 * array indices) to the value it names. It runs only on the error path, so it
 * favours being simple and exact over being fast.
 *
 * Lines and columns are 1-based; columns count characters (UTF-8 code points),
 * as jansson's own error positions do.
 */
#pragma once

#include "util.h"

/* One step of a path: a member of an object (key != NULL) or an element of an array (index). */
struct mx_jsonpos_step {
        const char *key;
        size_t index;
};

/*
 * Find the value at path (n steps from the root) in text. With want_key and a
 * last step that is an object member, the position of the member's key is
 * returned instead of its value. Returns 0, -ENOENT if the path does not exist
 * in the text, or -EBADMSG if the text is not well-formed JSON on the way there.
 */
int mx_jsonpos_find(const char *text, size_t len, const struct mx_jsonpos_step *path, size_t n,
                    bool want_key, unsigned *ret_line, unsigned *ret_col);
