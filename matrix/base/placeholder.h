/* SPDX-License-Identifier: MIT */
/*
 * Placeholders in a matrix file's command, env values and argv flags:
 * "{model}" is replaced by the runner with the target's model, and so on.
 *
 * Syntax: "{" NAME "}" with NAME matching [A-Za-z_][A-Za-z0-9_]* is a
 * placeholder and must be one of the names below; "{{" is a literal "{".
 * Any other "{" is literal text, so JSON values such as
 * '{"method": "eagle3"}' need no escaping.
 */
#pragma once

#include "util.h"

enum mx_placeholder {
        MX_PLACEHOLDER_MODEL,             /* target.model */
        MX_PLACEHOLDER_SERVED_MODEL_NAME, /* target.served_model_name */
        MX_PLACEHOLDER_HOST,              /* the address the server listens on */
        MX_PLACEHOLDER_PORT,              /* the port the runner picked */
        MX_PLACEHOLDER_RUN_DIR,           /* the run's private directory */
        MX_PLACEHOLDER_SOURCE_DIR,        /* bisect's checkout, else the bisect.source's own tree */
        _MX_PLACEHOLDER_MAX,
        _MX_PLACEHOLDER_INVALID = -EINVAL,
};

/* The one table of placeholder names (without braces) and what they stand for. */
const char *mx_placeholder_to_string(enum mx_placeholder p);
const char *mx_placeholder_description(enum mx_placeholder p);
enum mx_placeholder mx_placeholder_from_string(const char *s);

/* Check that every placeholder in s is known; -EINVAL with *reterr naming the first unknown one. */
int mx_placeholder_check(const char *s, char **reterr);

/*
 * Substitute the placeholders of s with values[p] (indexed by enum
 * mx_placeholder). A placeholder whose value is NULL is an error (-ENXIO), as
 * is an unknown one (-EINVAL); *reterr says which.
 */
int mx_placeholder_expand(const char *s, const char *const values[_MX_PLACEHOLDER_MAX], char **ret,
                          char **reterr);
