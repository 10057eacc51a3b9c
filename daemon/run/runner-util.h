/* SPDX-License-Identifier: MIT */
/* What the runners share: turning a run's snapshot into argv and environment. */
#pragma once

#include "placeholder.h"
#include "runner.h"

/*
 * Expand the snapshot's argv template and env with the placeholder values
 * (values may be NULL: then only {run_dir}, {model} and {served_model_name}
 * are known). The environment is the daemon's own, then the snapshot's
 * variables. -EINVAL/-ENXIO with *reterr for a bad or unavailable placeholder.
 */
int runner_build_command(const struct mx_run_ctx *ctx, const char *const *values, char ***ret_argv,
                         char ***ret_env, char **reterr);

/*
 * What show rN and repro print of a started attempt: {"argv": [...], "env":
 * ["VAR=value", ...], "cwd": "..."} with argv as spawned and only the
 * snapshot's variables (expanded like runner_build_command()), not the
 * daemon's whole environment. NULL when the env cannot be expanded.
 */
json_t *runner_command_record(const struct mx_run_ctx *ctx, const char *const *values, char *const *argv);

/* The runner for a spec: "command" profile → runner_command_ops, else the target runner. */
const struct mx_runner_ops *runner_for_spec(json_t *spec);
