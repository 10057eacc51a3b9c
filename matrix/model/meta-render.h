/* SPDX-License-Identifier: MIT */
/* meta-render.c's functions (the types are metadata.h's). */
#pragma once

#include "metadata.h"

/* The seed 002 "### Environment" YAML block (without the fence) of a metadata record; caller frees. */
char *mx_meta_env_yaml(json_t *record);

/* A few human lines about a record, each starting with indent; caller frees ("" for a NULL record). */
char *mx_meta_summary(json_t *record, const char *indent);

/* A YAML scalar for s: plain when that reads back as the same string, else double-quoted. */
char *mx_meta_yaml_scalar(const char *s);
