/* SPDX-License-Identifier: MIT */
/*
 * L5 confirmation starts (issue 15): when L5 cannot decide a comparison from
 * the server starts there are, the run's attempt ends with L5 asking for
 * confirmation (metrics.confirm) and its run waits, queued (queue.c plans
 * the round: the run, then its reference, each a fresh server start, and the
 * scheduler runs them as attempts of L1, L1.5 and L4 only). Once every start
 * of a round is in, L5 is decided again here with every start's L4 in its
 * groups: regression, no regression, another round while the budget
 * (L5.confirm_starts a side) lasts, else unknown with the starts it needs.
 * All state is in the database: after a restart the scheduler's pick finds
 * a round that is in and decides it.
 */
#pragma once

#include "db.h"

/*
 * Decide for_attempt's L5 again if its run waits for it and every start of
 * the round is in: 1 when it decided or planned the next round, 0 when there
 * is nothing to do yet, a negative errno when the database failed.
 */
int l5confirm_decide(struct mx_db *db, int64_t for_attempt);
/* An attempt ended: when it was a confirmation start, l5confirm_decide() its attempt. */
int l5confirm_after_finish(struct mx_db *db, int64_t attempt);
