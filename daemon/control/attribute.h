/* SPDX-License-Identifier: MIT */
/*
 * Failure attribution of a job from the queue (matrix/analysis/attrib.h does the
 * analysis): the attribute method, and the plan of submit --confirm JOB
 * (matrix/plan/confirm.h).
 */
#pragma once

#include "attrib.h"
#include "control.h"
#include "db.h"
#include "plan.h"

/*
 * Read every run of a job with each attempt's result into a (every attempt
 * of a run: one that passed and one that failed make it flaky), the runs'
 * configurations into *ret_configs (an array of {"config", "pass": every
 * attempt passed}, caller frees). A job made by
 * submit --confirm N brings job N's runs too (and N's confirmed job ...). -ENOENT: no
 * such job; -E2BIG / -EINVAL with *reterr when the job exceeds attrib.h's
 * limits.
 */
int attribute_load(struct mx_db *db, int64_t job, struct mx_attrib *a, json_t **ret_configs, char **reterr);

/* The size of the sets to search for a job: max_size when > 0, else its covering strength, else 3. */
int attribute_strength(struct mx_db *db, int64_t job, int64_t max_size, unsigned *ret);

/*
 * A job's attribution, what the attribute method replies and the report
 * document carries (daemon/control/report.c): {"attribution": mx_attrib_result_to_json(),
 * "known_incompatible": [the groups as matrix-file entries]} in *ret. The
 * daemon's matrix names each axis's values (for globs). max_size 0: the
 * job's covering strength. Negative errno on failure, with *ret_code (a
 * protocol error code) and *reterr where there is more to say than the errno.
 */
int attribute_job(struct mx_daemon *d, int64_t job, int64_t max_size, json_t **ret, const char **ret_code,
                  char **reterr);

/* The attribute method: attribute_job()'s object with "job". */
void attribute_handle(struct mx_request *req);

/* submit --confirm JOB: the follow-up plan for the job's candidates, or an error already sent. */
int attribute_confirm_plan(struct mx_request *req, const struct mx_matrix *m, int64_t job, size_t max_runs,
                           struct mx_plan **ret);
