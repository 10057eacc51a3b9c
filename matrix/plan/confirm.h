/* SPDX-License-Identifier: MIT */
/*
 * Follow-up runs that confirm or refute the candidates of a failure
 * attribution (attrib.h): `mxmatrix submit --confirm JOB`.
 *
 * For a candidate set S (best ranked first, MX_CONFIRM_MAX_SETS at most):
 *   - runs that add S to a configuration that passed (the only change is
 *     S), MX_CONFIRM_MAX_PASSING at most, preferring those that bring the
 *     most values not yet tried with S;
 *     then, where values are still untried, runs holding S with the other
 *     axes moved to them (each run moves every axis it can);
 *     MX_CONFIRM_MAX_ROWS at most: if S is the cause they all fail the same
 *     way;
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

#define MX_CONFIRM_MAX_SETS 16   /* candidate sets one confirmation tests */
#define MX_CONFIRM_MAX_ROWS 16   /* runs holding one set */
#define MX_CONFIRM_MAX_PASSING 4 /* of those, passing configurations with the set added */

/*
 * tried: the configurations already run (the job's): an array of
 * {"config": {axis: value name}, "pass": true when every attempt passed}. Names the matrix does not know are
 * skipped with a note. -ENOENT with *reterr when no candidate gives a run.
 */
int mx_confirm_plan(const struct mx_matrix *m, const struct mx_attrib_result *res, json_t *tried,
                    const char *input, size_t max_runs, struct mx_plan **ret, char **reterr);
