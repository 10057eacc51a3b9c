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
