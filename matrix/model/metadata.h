/* SPDX-License-Identifier: MIT */
/*
 * Reproducibility metadata (seed 001 Phase 9, seed 002 "Environment"): what the
 * matrix file says to collect, and how a collected record is shown.
 *
 * The matrix's "metadata" section (docs/mxmatrix.json.5) names source trees
 * (their git SHA and dirty state), a docker image (its digest), the pip freeze
 * command and probes: a command or a file per item. meta-load.c validates it
 * and normalises it into the JSON that submit.c stores in each run's snapshot;
 * the daemon (daemon/run/meta.c) fills in the defaults at run time, runs the
 * probes and stores one record per attempt. meta-render.c turns a record into
 * the lines `mxmatrix show` prints and into the seed 002 Environment YAML
 * block that reports reuse.
 */
#pragma once

#include "matrix.h"

#include <jansson.h>

/* Limits on the metadata section (docs/mxmatrix.json.5, LIMITS). */
#define MX_META_MAX_SOURCES 16
#define MX_META_MAX_PROBES 32 /* entries of "probes" */
#define MX_META_MAX_FILES 16  /* candidate paths of one file probe */
#define MX_META_MAX_TIMEOUT_MS 300000
#define MX_META_MIN_OUTPUT 1024
#define MX_META_MAX_OUTPUT (16u * 1024 * 1024)
#define MX_META_MAX_IMAGE 256 /* a docker image reference */

/* The record format version that daemon/run/meta.c writes and meta-render.c reads. */
#define MX_META_RECORD_VERSION 1

/* The functions of the files beside this one, which take these types. */
#include "meta-load.h"
#include "meta-render.h"
