/* SPDX-License-Identifier: MIT */
/*
 * How long a submission will take, for plan, submit and status: from the
 * durations the daemon stored (each level's, each attempt's overhead of boot
 * and stop, crashed attempts'), else an upper bound from the settings (the
 * ready timeout, each level's timeout, capped by the run timeout). Pure: the
 * stored figures come in as JSON (queue_duration_stats()).
 *
 * And what a level selection cannot measure: the levels a feature's success
 * criteria need (tg32 needs L4, crashes L3).
 */
#pragma once

#include "matrix.h"

/* The daemon's defaults for what a matrix leaves unset (mxmatrixd(8): --run-timeout, --level-timeout). */
#define MX_DEFAULT_RUN_TIMEOUT_MS (4 * 3600 * 1000LL)
#define MX_DEFAULT_LEVEL_TIMEOUT_MS (30 * 60 * 1000LL)

struct mx_estimate_input {
        const struct mx_matrix *m;
        const struct mx_matrix_settings *settings; /* the plan's (matrix, then feature) */
        json_t *levels;                            /* ["L1", "L1.5", ...] */
        json_t *level_settings;                    /* {"L1": {"timeout": ms, ...}, ...} */
        size_t n_runs, n_expect_fail;              /* runs, and those of them known to fail or crash */
        bool two_passes; /* fail-fast (order.h): each run starts twice, its L1 and L1.5 a pass of their own */
        /*
         * Stored durations (µs) or NULL: {"levels": {"L1": {"n", "mean_us"}}, "outcomes":
         * {"completed": {"n", "mean_us", "overhead_us"}, "crashed": {...}}}.
         */
        json_t *stored;
};

/*
 * {"total_us", "per_run_us", "bound_us" (the settings' upper bound for all
 * runs), "basis": "stored" | "partly-stored" | "bound", "guessed": [levels
 * never stored, counted at their timeout], "attempts": stored attempts used,
 * "text": one line for people}.
 */
json_t *mx_estimate(const struct mx_estimate_input *in);

/* The level that measures a criterion's metric (crashes: L3, startup_s: L1, else L4); NULL: any level. */
const char *mx_metric_level(const char *metric);

/*
 * One line per criterion of feature (an index, -1: none) that the selected
 * levels cannot measure ("tg32_tps needs L4, which levels=L1-L3 leaves
 * out"); NULL when every criterion can be judged.
 */
char **mx_criteria_unmeasured(const struct mx_matrix *m, int feature, json_t *levels);
