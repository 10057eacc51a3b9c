/* SPDX-License-Identifier: MIT */
/*
 * Target profiles: how to start a server, know it is ready, talk to it, stop
 * it, and read its logs and crashes. Built in: "vllm" (default), "sglang",
 * "llama-server" (target-surfaces.md §A–C) and "command" (run a command to
 * completion; no server). A matrix may define its own under "profiles", each
 * based on a built-in one ("base"), and override any field in "target".
 *
 * mx_profile_resolve() merges built-in defaults, the named profile and the
 * target's keys, checks every key and type (errors carry FILE:LINE:COL), and
 * returns the profile as one normalised JSON object that is stored in each
 * run's snapshot, so a run always uses the profile it was submitted with:
 *
 *   {"name", "base", "identifier", "host", "port" (0 = a free port per run),
 *    "api_key" | "api_key_env" (optional: the bearer token, or the variable holding it),
 *    "ready":  {"path", "status", "timeout_ms", "interval_ms"},
 *    "health": {"path", "dead_status": [..]} | null,
 *    "completion": {"path", "prompt", "max_tokens"} | null,
 *    "stop":   {"steps": [{"signal", "grace_ms"}..], "command": [..] | null, "timeout_ms"},
 *    "logs":   {"command": [..]} | null,
 *    "crash_signatures": [{"class", "pattern"}..],   (POSIX extended regexes, matrix first)
 *    "profiler": {"format", "report", "after_stop": [..] | null, "timeout_ms"} | null}
 */
#pragma once

#include "matrix.h"

#include <jansson.h>

#define MX_PROFILE_MAX_SIGNATURES 128
#define MX_PROFILE_MAX_STOP_STEPS 8
/* The profiling pass's declared workload (profiler.workload): seed 001's Phase 0 profile by default. */
#define MX_PROFILE_WORKLOAD_PROMPT_DEFAULT 2048
#define MX_PROFILE_WORKLOAD_OUTPUT_DEFAULT 64
#define MX_PROFILE_WORKLOAD_REQUESTS_DEFAULT 3
#define MX_PROFILE_WORKLOAD_TOKENS_MAX 1048576
#define MX_PROFILE_WORKLOAD_REQUESTS_MAX 100

/* The built-in profile names, NULL-terminated. */
extern const char *const mx_profile_builtins[];

/* Resolve and check the profile of m's target. -EINVAL with *reterr ("FILE:LINE:COL: key ...: ..."). */
int mx_profile_resolve(const struct mx_matrix *m, json_t **ret, char **reterr);

/* The crash signatures every server profile starts from (class, POSIX ERE), for docs and tests. */
struct mx_crash_signature {
        const char *cls;
        const char *pattern;
};
extern const struct mx_crash_signature mx_crash_signatures_builtin[];
extern const size_t mx_n_crash_signatures_builtin;
