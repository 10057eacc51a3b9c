/* SPDX-License-Identifier: MIT */
/*
 * The order a job's runs take (issue 19 item 3). fifo: each run makes all
 * its levels on one server start, in plan order. fail-fast: every run's
 * cheap levels (L1, L1.5) first, each on a start of its own, and only then,
 * for the runs whose cheap pass passed, every level of the job on a second
 * start, so a sweep whose 12th configuration does not boot says so in its
 * first pass instead of at 4 am. fail-fast is the default for jobs of more
 * than 3 runs whose levels hold both kinds. Either way, runs that share a
 * compile-cache key (the values of the matrix's cache_key_axes, e.g.
 * FlashInfer's JIT inputs) are placed back to back, in the order their key
 * first appears in the plan. Pure functions.
 */
#pragma once

#include "plan.h"

enum mx_order {
        MX_ORDER_FIFO,
        MX_ORDER_FAIL_FAST,
        _MX_ORDER_MAX,
        _MX_ORDER_INVALID = -EINVAL,
};
const char *mx_order_to_string(enum mx_order o); /* "fifo", "fail-fast" */
enum mx_order mx_order_from_string(const char *s);

/* Jobs of at least this many runs are fail-fast unless the submission or the matrix says otherwise. */
#define MX_ORDER_FAIL_FAST_MIN_RUNS 4

/* Is level (a name of the catalogue) one of the cheap pass's: L1, L1.5? */
bool mx_order_level_is_cheap(const char *level);

/*
 * The order of a job: requested (submit --order; NULL: none), else the
 * matrix's settings.order, else by the number of runs. *ret_two_passes: the
 * job's levels (an array of names) hold cheap and expensive ones, so
 * fail-fast makes two passes; *ret_why says where the order came from.
 */
int mx_order_resolve(const struct mx_matrix *m, const char *requested, size_t n_runs, json_t *levels,
                     enum mx_order *ret, bool *ret_two_passes, char **ret_why);

/* The order for plan and submit: {"order", "why", "passes": [{"levels", "runs"}]}. */
json_t *mx_order_to_json(enum mx_order o, bool two_passes, const char *why, json_t *levels);

/* Place the plan's runs that share a compile-cache key back to back (stable); no-op without cache_key_axes. */
void mx_order_group_runs(struct mx_plan *p);
