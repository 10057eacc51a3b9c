/* SPDX-License-Identifier: MIT */
/*
 * Reproducibility metadata for every attempt (seed 001 Phase 9, seed 002
 * "Environment"): git SHA and dirty state of the configured source trees,
 * docker image digest, pip freeze, CUDA / driver / cuDNN versions, GPU clocks
 * and power settings, hostname, kernel, and the run's command, env and
 * workload from its snapshot.
 *
 * Each item comes from a probe: a child process (a file is read by cat(1) in
 * a child too) started with proc_spawn() under the attempt's run tag, read
 * through pipes on the event loop, with a time limit and an output cap. A
 * probe that cannot start, exits non-zero, is killed or times out is recorded
 * as {"error": "..."} and never fails the run.
 *
 * When: before the server starts. The scheduler starts a run only after the
 * previous server is verified gone, so the GPU is idle then and nothing a
 * probe does (nvidia-smi, pip, git status on a large tree) competes with the
 * server it would describe — on the GB10 the CPU cores that run probes also
 * run vLLM's scheduler. What is read are settings (application clocks, power
 * limit, persistence mode), not load figures, so an idle GPU reports them as
 * well as a busy one; the sampler records the clocks under load. And a run
 * whose server crashes at start still has its metadata.
 *
 * runner_meta_ops wraps the runner the spec asks for: it collects, reports
 * the record through mx_run_events.metadata, then starts the real runner; a
 * cancel during collection kills the probes and ends the run. meta-store.c
 * keeps the records (one per attempt) and large outputs (pip freeze) once per
 * distinct content.
 */
#pragma once

#include "db.h"
#include "meta-probe.h"
#include "meta-store.h" /* storing and reading records: for the users of both halves */
#include "runner.h"

#include <event2/event.h>
#include <jansson.h>

struct proc_reaper;

/* Defaults (docs/mxmatrix.json.5): a probe's time limit and output cap. */
#define META_TIMEOUT_MS_DEFAULT 15000
#define META_OUTPUT_MAX_DEFAULT (1024 * 1024)
/* Output up to this size is kept inline in the record; larger output goes to the blob table. */
#define META_INLINE_MAX 4096

/* ---- parsing probe output (pure; tested on real tool output) ---- */

/* CUDA toolkit version from version.json, version.txt or `nvcc --version`; NULL if none is found. */
char *meta_parse_cuda(const char *out);
/* cuDNN version "MAJOR.MINOR.PATCH" from cudnn_version.h; NULL if none is found. */
char *meta_parse_cudnn(const char *out);
/* nvidia-smi --query-gpu ... --format=csv: one object per GPU, keys without units, "[N/A]" as null. */
int meta_parse_gpu_csv(const char *out, json_t **ret, char **reterr);
/* Settings from the GPU objects: driver version, "default" or the clocks set, power mode; NULL if unknown.
 */
void meta_gpu_settings(json_t *gpus, char **ret_driver, char **ret_clocks, char **ret_power);
/* `docker image inspect IMAGE`: {"id", "repo_digests", "created"}, or NULL. */
json_t *meta_parse_docker(const char *out);
/* The "name==version" line of pip freeze output whose name starts with prefix (case-insensitive), or NULL.
 */
char *meta_pip_find(const char *freeze, const char *prefix);

/* ---- collecting a record ---- */

struct meta_collect;

/* The record and its blobs ({"<hash>": "text"}) are borrowed for the call. */
typedef void (*meta_collect_cb)(json_t *record, json_t *blobs, void *ud);

struct meta_collect_opts {
        struct event_base *base;
        struct proc_reaper *reaper;
        const char *tag;
        const char *cwd;
        json_t *spec; /* the run's snapshot: its "metadata" says what to collect */
};

/* Start every probe; cb once all have ended, from the loop. */
struct meta_collect *meta_collect_start(const struct meta_collect_opts *o, meta_collect_cb cb, void *ud);
/* Kill what still runs and free; cb does not come. */
struct meta_collect *meta_collect_free(struct meta_collect *c);
DEFINE_POINTER_CLEANUP(struct meta_collect, meta_collect_free)

/* "1f2e3d4c5b6a7980": the FNV-1a 64 of a blob, its name in records. */
char *meta_blob_hash(const char *text, size_t len);

/* The runner that collects metadata, then runs runner_for_spec(spec). */
extern const struct mx_runner_ops runner_meta_ops;
