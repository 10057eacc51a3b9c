/* SPDX-License-Identifier: MIT */
/*
 * L1.5 kernel gate (seed 001 Level 1.5): the kernels the configuration must
 * (not) run, matched against the whole server log and, when the profile
 * names one, the profiler report the server writes when it exits. So the
 * gate feeds on the log from the server's start, takes its turn after L1 by
 * going pending, and decides after the stop (and after the profiler's
 * after_stop command, which the runner starts while this level is pending).
 * FAIL or INVALID makes the benchmark numbers of the run invalid (levels.c
 * holds gated levels' verdicts until this one is known).
 *
 * When the profile's profiler declares a workload or a capture control, the
 * gate first runs the profiling pass (profpass.h): known decode work inside
 * the capture, profile-workload.json beside the report. Its account is the
 * metrics' "profiling".
 */
#include "kgate.h"
#include "levels.h"
#include "logcap.h"
#include "placeholder.h"
#include "plan.h"
#include "profpass.h"
#include "profreport.h"

struct l15 {
        struct mx_level base;
        struct mx_kgate *gate; /* NULL: no expectations */
        struct mx_profpass *pass; /* the profiling pass, or NULL */
};

static int l15_new(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr)
{
        struct mx_kgate_expect e = {};
        struct l15 *s;
        int q = mx_expect_from_json(json_object_get(ctx->spec, "expect"), &e);

        if (q < 0) {
                *reterr = xstrdup("the run's snapshot has malformed kernel expectations");
                return q;
        }
        s = xcalloc(1, sizeof(*s));
        if (!mx_kgate_expect_empty(&e))
                q = mx_kgate_new(&e, &s->gate, reterr);
        mx_kgate_expect_done(&e);
        if (q < 0) {
                free(s);
                return q;
        }
        *ret = &s->base;
        return 0;
}

static void l15_log_line(struct mx_level *l, const char *line, size_t len)
{
        struct l15 *s = (struct l15 *)l;

        if (s->gate)
                mx_kgate_feed_log_line(s->gate, line, len);
}

/* The pass's account, for the metrics; NULL without a pass. */
static json_t *pass_json(struct l15 *s)
{
        return s->pass ? json_pack("{s:o}", "profiling", mx_profpass_json(s->pass)) : NULL;
}

static void l15_turn(struct mx_level *l)
{
        struct l15 *s = (struct l15 *)l;

        if (!s->gate)
                mx_level_finish(l, MX_VERDICT_SKIPPED, pass_json(s), NULL,
                                "no kernel expectations for this configuration");
        else
                mx_level_pending(l);
}

static void pass_done_cb(void *ud)
{
        l15_turn(ud);
}

static void l15_run(struct mx_level *l)
{
        struct l15 *s = (struct l15 *)l;
        json_t *prof = json_object_get(l->ctx->profile, "profiler");
        _cleanup_free_ char *err = NULL;

        if (mx_profpass_wanted(prof) &&
            mx_profpass_start(l->ctx, prof, mx_level_timeout_ms(l), pass_done_cb, l, &s->pass, &err) >= 0)
                return;
        if (err && l->ctx->log)
                logcap_note(l->ctx->log, "L1.5: no profiling pass: %s", err);
        l15_turn(l);
}

/* The profile's report, read once the server is gone (the report is written at exit). */
static void feed_report(struct l15 *s, json_t *prof)
{
        const struct mx_level_ctx *ctx = s->base.ctx;
        _cleanup_free_ char *path = NULL, *err = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *rep = NULL;
        const char *fmt = json_string_value(json_object_get(prof, "format"));
        enum mx_profreport_tool tool = fmt && streq(fmt, "nsys")  ? MX_PROFREPORT_TOOL_NSYS
                                       : fmt && streq(fmt, "ncu") ? MX_PROFREPORT_TOOL_NCU
                                                                  : MX_PROFREPORT_TOOL_ANY;

        if (mx_placeholder_expand(json_string_value(json_object_get(prof, "report")), (const char *const *)ctx->values,
                                  &path, &err) >= 0 &&
            path[0] != '/') {
                /* Relative to the server's working directory, where the server wrote it. */
                char *abs = xasprintf("%s/%s", ctx->run_dir, path);

                free(path);
                path = abs;
        }
        /* the runner's event loop (the daemon's, with the local executor): a FIFO or a huge file is refused */
        if (!path || mx_profreport_parse_regular(path, MX_PROFREPORT_FILE_MAX, tool, &rep, &err) < 0) {
                _cleanup_free_ char *why = path ? xasprintf("profiler report %s", strna(err))
                                                : xasprintf("profiler report: %s", strna(err));
                mx_kgate_report_failed(s->gate, why);
        } else
                mx_kgate_feed_report(s->gate, rep);
}

static void l15_after_stop(struct mx_level *l, const struct mx_level_stop *st)
{
        struct l15 *s = (struct l15 *)l;
        json_t *prof = json_object_get(l->ctx->profile, "profiler");
        json_t *detail = NULL;
        enum mx_verdict v;

        (void)st;
        if (json_is_object(prof))
                feed_report(s, prof);
        v = mx_kgate_verdict(s->gate, &detail);
        if (s->pass) {
                if (!detail)
                        detail = json_object();
                json_object_set_new(detail, "profiling", mx_profpass_json(s->pass));
        }
        mx_level_finish(l, v, detail, NULL, "%s",
                        v == MX_VERDICT_PASS      ? "the expected kernel path ran"
                        : v == MX_VERDICT_FAIL    ? "the wrong kernel path ran: benchmark results of this run are invalid"
                        : v == MX_VERDICT_INVALID ? "the kernel path could not be verified: benchmark results of this "
                                                    "run are invalid"
                                                  : "nothing to check");
}

static void final_done_cb(void *ud)
{
        mx_level_before_stop_done(ud);
}

/* A whole-life capture: the server's counters once more before it stops (profpass.h). */
static void l15_before_stop(struct mx_level *l)
{
        struct l15 *s = (struct l15 *)l;

        if (!mx_profpass_final(s->pass, final_done_cb, l))
                mx_level_before_stop_done(l);
}

static void l15_cancel(struct mx_level *l)
{
        struct l15 *s = (struct l15 *)l;

        s->pass = mx_profpass_free(s->pass);
}

static void l15_free(struct mx_level *l)
{
        struct l15 *s = (struct l15 *)l;

        mx_kgate_free(s->gate);
        mx_profpass_free(s->pass);
        free(s);
}

const struct mx_level_ops mx_level_l15_ops = {
        .name = "L1.5",
        .new = l15_new,
        .log_line = l15_log_line,
        .run = l15_run,
        .cancel = l15_cancel,
        .before_stop = l15_before_stop,
        .after_stop = l15_after_stop,
        .free = l15_free,
};
