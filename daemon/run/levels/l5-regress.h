/* SPDX-License-Identifier: MIT */
/*
 * L5's decision (l5-regress.c), shared by the level and by the daemon's
 * confirmation starts (l5confirm.c), which decide it again once a round of
 * starts is in.
 */
#pragma once

#include "levels.h"

struct mx_l5_input {
        json_t *settings;                 /* L5's settings, every one present */
        json_t *spec;                     /* the run's snapshot (its baseline_key), may be NULL */
        const struct mx_history *history; /* answers for the attempt decided */
        json_t *cur;                      /* that attempt's L4 metrics */
        int rounds;                       /* confirmation rounds in (starts a side) */
};

struct mx_l5_output {
        enum mx_verdict verdict;
        json_t *metrics; /* owned */
        char *message;   /* owned */
        int64_t confirm_run; /* > 0: undecided; start the run and this reference run again (metrics.confirm) */
};

/* Decide L5 for in->history's attempt: the verdict, its metrics and message (see l5-regress.c). */
void mx_l5_decide(const struct mx_l5_input *in, struct mx_l5_output *ret);
void mx_l5_output_done(struct mx_l5_output *o);
