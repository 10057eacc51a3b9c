/* SPDX-License-Identifier: MIT */
/* A job's progress for people: runs done, results in the one vocabulary, elapsed time and ETA. */
#include "progress.h"

#include "protocol.h"

#include <inttypes.h>

static int64_t count(json_t *counts, const char *key)
{
        return json_integer_value(json_object_get(counts, key));
}

void progress_from_job(json_t *job, int64_t now_us, struct progress *ret)
{
        json_t *c = json_object_get(job, "counts"), *t = json_object_get(job, "progress");
        json_t *started = json_object_get(t, "started_at"), *since = json_object_get(t, "running_since");
        int64_t timed = json_integer_value(json_object_get(t, "timed_runs"));
        int64_t timed_us = json_integer_value(json_object_get(t, "timed_us"));
        int64_t stored_us = json_integer_value(json_object_get(t, "stored_run_us"));
        struct progress p = {
                .total = count(c, "total"),
                .done = count(c, "done"),
                .counts = c,
                .elapsed_us = -1,
                .eta_us = -1,
                .paused = json_is_true(json_object_get(t, "paused")),
        };
        int64_t left = MX_MAX(p.total - p.done, 0);

        if (json_is_integer(started))
                p.elapsed_us = MX_MAX(now_us - json_integer_value(started), 0);
        if (left == 0)
                p.eta_us = 0;
        else if (timed > 0 || stored_us > 0) {
                /* One GPU, one run at a time: what is left takes the mean run time each. */
                int64_t mean = timed > 0 ? MX_MAX(timed_us, 0) / timed : stored_us;

                p.eta_stored = timed == 0;
                p.eta_us = left * mean;
                /* The run in flight has used part of its share (and no more than all of it). */
                if (json_is_integer(since))
                        p.eta_us -= MX_MIN(MX_MAX(now_us - json_integer_value(since), 0), mean);
        }
        *ret = p;
}

char *progress_format(const struct progress *p)
{
        struct mx_buf b = MX_BUF_INIT;

        mx_buf_printf(&b, "%" PRId64 "/%" PRId64 " runs", p->done, p->total);
        /* the results in the words of show, list and the reports: a pass is a pass, an xfail is not one */
        if (p->done > 0) {
                _cleanup_free_ char *r = mx_result_counts_text(p->counts, false);

                mx_buf_printf(&b, ": %s", r);
        }
        if (p->elapsed_us >= 0) {
                _cleanup_free_ char *e = mx_format_duration(p->elapsed_us);

                mx_buf_printf(&b, ", %s elapsed", e);
        }
        if (p->done < p->total && p->paused)
                mx_buf_puts(&b, ", paused: no ETA (mxmatrix resume)");
        else if (p->done < p->total) {
                _cleanup_free_ char *e = p->eta_us >= 0 ? mx_format_duration(p->eta_us) : NULL;

                mx_buf_printf(&b, ", ETA %s%s", e ? e : "unknown (no run finished yet)",
                              e && p->eta_stored ? " (from stored runs)" : "");
        }
        return mx_buf_steal(&b);
}
