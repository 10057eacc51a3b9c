/* SPDX-License-Identifier: MIT */
/*
 * Follow-up runs that confirm or refute the candidates of a failure
 * attribution (attrib.h): `mxmatrix submit --confirm JOB`.
 *
 * For a candidate set S (best ranked first, MX_CONFIRM_MAX_SETS at most):
 *   - runs holding S with the other axes moved to product values no
 *     configuration holding S has tried yet (each run moves every axis it
 *     can, so a few runs cover every untried value; MX_CONFIRM_MAX_ROWS at
 *     most): if S is the cause they all fail the same way;
 *   - one run per element e of S holding S minus e (e's axis moved to the
 *     baseline's value, else another value): if each element is needed,
 *     these pass.
 * Every configuration stays within the matrix's constraints (exclude and
 * rules are checked on each step; include then applies as for any plan).
 * Reasons say which candidate a run tests: "confirm: graphs=on ∧
 * spec=eagle3-short", "confirm: graphs=on ∧ spec=eagle3-short (without
 * graphs=on: graphs=off)".
 */
#pragma once

#include "attrib.h"
#include "plan.h"

#define MX_CONFIRM_MAX_SETS 16 /* candidate sets one confirmation tests */
#define MX_CONFIRM_MAX_ROWS 16 /* runs holding one set */

/*
 * tried: an array of configurations (objects axis -> value name) already run
 * (the job's). Names the matrix does not know are skipped with a note.
 * -ENOENT with *reterr when no candidate gives a run.
 */
int mx_confirm_plan(const struct mx_matrix *m, const struct mx_attrib_result *res, json_t *tried,
                    const char *input, size_t max_runs, struct mx_plan **ret, char **reterr);
