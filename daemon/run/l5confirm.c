/* SPDX-License-Identifier: MIT */
/* L5's confirmation starts: the decision made again once a round of A/B server starts is in. */
#include "l5confirm.h"
#include "history.h"
#include "levels/l5-regress.h"
#include "log.h"
#include "queue.h"

#include <inttypes.h>

/* The settings L5 decided with (recorded in metrics.confirm), else today's defaults. */
static json_t *l5_settings(json_t *confirm)
{
        json_t *s = json_object_get(confirm, "settings");

        return json_is_object(s) ? json_incref(s) : mx_level_defaults(mx_level_def_find("L5"));
}

static int decide(struct mx_db *db, int64_t for_attempt, const struct queue_confirm_facts *fa)
{
        json_t *confirm = json_object_get(fa->l5, "confirm");
        _cleanup_json_ json_t *settings = l5_settings(confirm),
                              *spec = json_pack("{s:O?}", "baseline_key", json_object_get(confirm, "baseline_key"));
        struct mx_history_db h;
        struct mx_l5_output out = {};
        struct queue_level l;
        _cleanup_free_ char *result = NULL;
        int r;

        mx_history_db_init(&h, db, for_attempt);
        mx_l5_decide(&(struct mx_l5_input){.settings = settings, .spec = spec, .history = &h.ops, .cur = fa->l4,
                                           .rounds = fa->rounds},
                     &out);
        l = (struct queue_level){.level = "L5", .verdict = mx_verdict_to_string(out.verdict),
                                 .finished_at = mx_now_real_us(), .metrics = out.metrics, .message = out.message};
        if (out.confirm_run > 0) {
                r = queue_confirm_round(db, for_attempt, out.confirm_run, fa->rounds + 1, &l);
                if (r >= 0)
                        log_info("run %" PRId64 ": L5 %s", fa->run, out.message);
        } else {
                r = queue_confirm_decided(db, for_attempt, &l, &result);
                if (r >= 0)
                        log_info("run %" PRId64 " finished: result %s; L5 %s: %s", fa->run, strna(result),
                                 l.verdict, out.message);
        }
        mx_l5_output_done(&out);
        return r < 0 ? r : 1;
}

/*
 * The round is in but the waiting attempt's L4 is gone (nothing to decide with): end the wait with L5
 * skipped, so that the run gets its result and the queue behind it moves on.
 */
static int give_up(struct mx_db *db, int64_t for_attempt, const struct queue_confirm_facts *fa)
{
        struct queue_level l = {.level = "L5", .verdict = "skipped", .finished_at = mx_now_real_us(),
                                .message = "undecided: the attempt's L4 figures are not stored, so its "
                                                   "confirmation starts cannot be compared"};
        _cleanup_free_ char *result = NULL;
        int r = queue_confirm_decided(db, for_attempt, &l, &result);

        if (r >= 0)
                log_warning("run %" PRId64 " finished: result %s; L5 %s", fa->run, strna(result), l.message);
        return r < 0 ? r : 1;
}

int l5confirm_decide(struct mx_db *db, int64_t for_attempt)
{
        struct queue_confirm_facts fa = {};
        int r = queue_confirm_facts(db, for_attempt, &fa);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (fa.confirming && fa.pending == 0 && fa.open == 0 && json_is_object(fa.l4))
                r = decide(db, for_attempt, &fa);
        else if (fa.confirming && fa.pending == 0 && fa.open == 0)
                r = give_up(db, for_attempt, &fa);
        else
                r = 0;
        json_decref(fa.l4);
        json_decref(fa.l5);
        return r;
}

int l5confirm_after_finish(struct mx_db *db, int64_t attempt)
{
        int64_t for_attempt = 0;
        int r = queue_confirm_of(db, attempt, &for_attempt);

        if (r < 0 || for_attempt == 0)
                return r == -ENOENT ? 0 : r;
        return l5confirm_decide(db, for_attempt);
}
