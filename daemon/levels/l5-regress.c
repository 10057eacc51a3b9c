/* SPDX-License-Identifier: MIT */
/*
 * L5 regression (seed 001 Level 5: "performance within 5 % of previous
 * measurements"; seed 000's hard constraints: TTFT <= +3 %, memory <= +2 GB):
 * this run's L4 numbers against
 *
 *   baseline  the job's baseline run (planned first: plan.c) and earlier runs
 *             of the baseline configuration at the same source SHAs
 *             (attempt_sources), pooled, newest baseline_runs of them;
 *             for the baseline run itself, its earlier runs at the same SHAs
 *   history   earlier runs of this configuration at other source SHAs: the
 *             newest history_shas distinct source states, each pooled
 *
 * through the level context's read-only history hook (runner.h), and only
 * runs on the same GPU model (the metadata's gpu_name) whose L4 passed with
 * valid numbers. The comparison is matrix/regress.h's: a regression must be
 * significant (Welch or non-overlapping 95 % intervals) AND beyond its
 * threshold; the rule that decided is in the metrics.
 *
 * L5 needs L4's final numbers, and L4 decides after the stop (once the
 * kernel gate has), so L5 goes pending and decides in after_stop, which the
 * driver calls in the seed's order: L4's verdict is known by then. Verdicts:
 * fail with the regressions named; pass; skipped "no baseline measured" when
 * there is nothing to compare with (a job whose baseline has no L4 yet is not
 * a failure); invalid when L4's numbers are.
 */
#include "levels.h"
#include "regress.h"

/* Stored L4 results read per question: enough for a few source states of a few runs each. */
#define MX_HISTORY_LOOKBACK 100

struct l5 {
        struct mx_level base;
};

static int l5_new(const struct mx_level_ctx *ctx, struct mx_level **ret, char **reterr)
{
        struct l5 *s = xcalloc(1, sizeof(*s));

        (void)ctx, (void)reterr;
        *ret = &s->base;
        return 0;
}

static void l5_run(struct mx_level *l)
{
        mx_level_pending(l);
}

static double setting_num(struct mx_level *l, const char *name)
{
        return json_number_value(json_object_get(l->ctx->settings, name));
}

static bool wants(struct mx_level *l, const char *group)
{
        json_t *v;
        size_t i;

        json_array_foreach (json_object_get(l->ctx->settings, "against"), i, v)
                if (streq_ptr(json_string_value(v), group))
                        return true;
        return false;
}

/* Counts of stored results left out, and why: the metrics say so. */
struct left_out {
        unsigned other_gpu, not_pass, invalid;
};

/* A stored L4 result fit to compare with: passed, valid numbers, the same GPU model. */
static bool usable(json_t *res, json_t *gpu, struct left_out *lo)
{
        json_t *m = json_object_get(res, "metrics");

        if (!streq_ptr(json_string_value(json_object_get(res, "verdict")), "pass")) {
                lo->not_pass++;
                return false;
        }
        if (json_is_false(json_object_get(m, "valid"))) {
                lo->invalid++;
                return false;
        }
        if (!json_equal(json_object_get(res, "gpu_name") ?: json_null(), gpu ?: json_null())) {
                lo->other_gpu++;
                return false;
        }
        return true;
}

static json_t *run_ref(json_t *res)
{
        return json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?}", "job", json_object_get(res, "job"), "run",
                         json_object_get(res, "run"), "attempt", json_object_get(res, "attempt"),
                         "finished_at", json_object_get(res, "finished_at"), "sources",
                         json_object_get(res, "sources"));
}

/* One group of references compared: its description and the comparison, appended to groups. */
static bool compare_group(json_t *groups, const char *against, const char *key, json_t *sources,
                          json_t *refs, json_t *cur, const struct mx_regress_opts *o)
{
        _cleanup_json_ json_t *docs = json_array(), *runs = json_array(), *curs = json_pack("[O]", cur);
        json_t *res, *cmp;
        size_t i;
        bool reg;

        json_array_foreach (refs, i, res) {
                json_array_append(docs, json_object_get(res, "metrics"));
                json_array_append_new(runs, run_ref(res));
        }
        cmp = mx_regress_compare(curs, docs, o);
        reg = json_is_true(json_object_get(cmp, "regression"));
        json_array_append_new(groups, json_pack("{s:s,s:s,s:O?,s:O,s:o}", "against", against, "config_key",
                                                key, "sources", sources, "runs", runs, "comparison", cmp));
        return reg;
}

/* "r3" or "r3, r7 (2 runs)": the runs of a group, for messages. */
static char *runs_text(json_t *refs)
{
        struct mx_buf b = MX_BUF_INIT;
        json_t *res;
        size_t i;

        json_array_foreach (refs, i, res) {
                if (i == 3) {
                        mx_buf_printf(&b, ", ...");
                        break;
                }
                mx_buf_printf(&b, "%sr%" JSON_INTEGER_FORMAT, i ? ", " : "",
                              json_integer_value(json_object_get(res, "run")));
        }
        if (json_array_size(refs) > 1)
                mx_buf_printf(&b, " (%zu runs)", json_array_size(refs));
        return mx_buf_steal(&b);
}

struct decision {
        json_t *groups;
        struct mx_buf msg;  /* what was compared, for the message */
        struct mx_buf regs; /* the regressions */
        struct mx_buf unknown; /* the undecided checks */
        unsigned more;      /* starts per side likely to decide them */
        char *rule;         /* of the first regression */
        unsigned compared;
        bool no_baseline;
};

static void note_group(struct decision *d, const char *what, json_t *refs, bool regression)
{
        json_t *g = json_array_get(d->groups, json_array_size(d->groups) - 1);
        json_t *cmp = json_object_get(g, "comparison"), *r;
        _cleanup_free_ char *runs = runs_text(refs);
        size_t i;

        json_t *starts = json_object_get(cmp, "starts");

        d->compared++;
        mx_buf_printf(&d->msg, "%s%s %s (%" JSON_INTEGER_FORMAT " vs %" JSON_INTEGER_FORMAT " server starts)",
                      d->msg.len ? "; " : "", what, runs, json_integer_value(json_array_get(starts, 0)),
                      json_integer_value(json_array_get(starts, 1)));
        json_array_foreach (json_object_get(cmp, "unknown"), i, r)
                mx_buf_printf(&d->unknown, "%s%s against %s %s", d->unknown.len ? "; " : "",
                              json_string_value(r), what, runs);
        d->more = MX_MAX(d->more, (unsigned)json_integer_value(json_object_get(cmp, "more_starts")));
        if (!regression)
                return;
        if (!d->rule)
                d->rule = xstrdup(json_string_value(json_object_get(cmp, "rule")));
        json_array_foreach (json_object_get(cmp, "regressions"), i, r)
                mx_buf_printf(&d->regs, "%s%s against %s %s", d->regs.len ? "; " : "", json_string_value(r),
                              what, runs);
}

/* The baseline configuration: the job's run planned as baseline, else the snapshot's (--skip-measured left
 * it out). */
static const char *baseline_key(struct mx_level *l, json_t *self)
{
        const char *k = json_string_value(json_object_get(self, "baseline_key"));

        return k ? k : json_string_value(json_object_get(l->ctx->spec, "baseline_key"));
}

/* The baseline group: the job's baseline run and earlier baseline runs at this attempt's source SHAs. */
static int baseline_group(struct mx_level *l, json_t *self, json_t *cur, const struct mx_regress_opts *o,
                          struct left_out *lo, struct decision *d, char **reterr)
{
        const struct mx_history *h = l->ctx->history;
        const char *key = baseline_key(l, self);
        bool is_baseline = streq_ptr(key, json_string_value(json_object_get(self, "config_key")));
        json_t *sources = json_object_get(self, "sources"), *gpu = json_object_get(self, "gpu_name"), *res;
        _cleanup_json_ json_t *all = NULL, *refs = json_array();
        size_t i, max = (size_t)json_integer_value(json_object_get(l->ctx->settings, "baseline_runs"));
        bool reg;
        int q;

        if (!key) {
                d->no_baseline = true;
                return 0;
        }
        q = h->results(h->ud, "L4", key, MX_HISTORY_LOOKBACK, &all, reterr);
        if (q < 0)
                return q;
        json_array_foreach (all, i, res) {
                bool same_job_baseline = json_integer_value(json_object_get(res, "run")) ==
                                                 json_integer_value(json_object_get(self, "baseline_run")) &&
                                         !is_baseline;

                if (json_array_size(refs) >= max)
                        break;
                if (!same_job_baseline && !json_equal(json_object_get(res, "sources"), sources))
                        continue;
                if (usable(res, gpu, lo))
                        json_array_append(refs, res);
        }
        if (json_array_size(refs) == 0) {
                d->no_baseline = true;
                return 0;
        }
        reg = compare_group(d->groups, "baseline", key, sources, refs, cur, o);
        note_group(d, is_baseline ? "the baseline's earlier runs" : "the baseline", refs, reg);
        return 0;
}

/* The history groups: this configuration at other source SHAs, newest source states first. */
static int history_groups(struct mx_level *l, json_t *self, json_t *cur, const struct mx_regress_opts *o,
                          struct left_out *lo, struct decision *d, char **reterr)
{
        const struct mx_history *h = l->ctx->history;
        const char *key = json_string_value(json_object_get(self, "config_key"));
        json_t *sources = json_object_get(self, "sources"), *gpu = json_object_get(self, "gpu_name"), *res;
        _cleanup_json_ json_t *all = NULL, *states = json_array();
        size_t i, j,
                max_states = (size_t)json_integer_value(json_object_get(l->ctx->settings, "history_shas"));
        size_t max_runs = (size_t)json_integer_value(json_object_get(l->ctx->settings, "baseline_runs"));
        json_t *st;
        int q;

        if (max_states == 0)
                return 0;
        q = h->results(h->ud, "L4", key, MX_HISTORY_LOOKBACK, &all, reterr);
        if (q < 0)
                return q;
        /* group by source state, in the order the newest result of each appears */
        json_array_foreach (all, i, res) {
                json_t *src = json_object_get(res, "sources"), *group = NULL;

                if (json_equal(src, sources) || !usable(res, gpu, lo))
                        continue;
                json_array_foreach (states, j, st)
                        if (json_equal(json_object_get(st, "sources"), src))
                                group = st;
                if (!group) {
                        if (json_array_size(states) >= max_states)
                                continue;
                        group = json_pack("{s:O?,s:[]}", "sources", src, "refs");
                        json_array_append_new(states, group);
                }
                if (json_array_size(json_object_get(group, "refs")) < max_runs)
                        json_array_append(json_object_get(group, "refs"), res);
        }
        json_array_foreach (states, i, st) {
                json_t *refs = json_object_get(st, "refs");
                bool reg = compare_group(d->groups, "history", key, json_object_get(st, "sources"), refs,
                                         cur, o);

                note_group(d, "this configuration at other source SHAs", refs, reg);
        }
        return 0;
}

static void l5_after_stop(struct mx_level *l, const struct mx_level_stop *st)
{
        const struct mx_history *h = l->ctx->history;
        struct mx_regress_opts o;
        struct left_out lo = {};
        struct decision d = {.groups = json_array(), .msg = MX_BUF_INIT, .regs = MX_BUF_INIT,
                             .unknown = MX_BUF_INIT};
        _cleanup_json_ json_t *self = NULL;
        _cleanup_free_ char *err = NULL, *msg = NULL, *regs = NULL, *gpu_text = NULL, *unk = NULL;
        enum mx_verdict v4 = MX_VERDICT_SKIPPED;
        json_t *cur = NULL, *m;
        int q;

        (void)st;
        q = mx_level_sibling(l, "L4", &v4, &cur);
        if (q == -ENOENT) {
                mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL,
                                "L5 compares L4's numbers: select L4 too (L1-L5)");
                goto out;
        }
        if (q < 0 || v4 == MX_VERDICT_SKIPPED) {
                mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL,
                                "L4 measured nothing: nothing to compare");
                goto out;
        }
        if (v4 == MX_VERDICT_INVALID) {
                mx_level_finish(l, MX_VERDICT_INVALID, NULL, NULL,
                                "L4's numbers are invalid (kernel gate): they are not compared");
                goto out;
        }
        if (v4 != MX_VERDICT_PASS) {
                mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL,
                                "L4 did not pass (%s): nothing to compare", mx_verdict_to_string(v4));
                goto out;
        }
        if (!h) {
                mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL, "no stored results to compare with");
                goto out;
        }
        mx_regress_opts_defaults(&o);
        o.perf_max_drop_pct = setting_num(l, "perf_max_drop_pct");
        o.ttft_p99_max_rise_pct = setting_num(l, "ttft_p99_max_rise_pct");
        o.memory_max_rise_gb = setting_num(l, "memory_max_rise_gb");
        o.alpha = setting_num(l, "alpha");
        o.alpha_same = setting_num(l, "alpha_same");
        o.primary = json_string_value(json_object_get(l->ctx->settings, "primary"));
        if (o.primary && !*o.primary)
                o.primary = NULL;
        /* the daemon does not queue confirmation starts yet: a check decides on the starts there are */
        o.can_confirm = false;
        o.rule = mx_regress_rule_from_string(json_string_value(json_object_get(l->ctx->settings, "rule")));
        if ((q = h->self(h->ud, &self, &err)) < 0 ||
            (wants(l, "baseline") && (q = baseline_group(l, self, cur, &o, &lo, &d, &err)) < 0) ||
            (wants(l, "history") && (q = history_groups(l, self, cur, &o, &lo, &d, &err)) < 0)) {
                mx_level_finish(l, MX_VERDICT_FAIL, NULL, NULL, "cannot read earlier results: %s",
                                err ? err : strerror(-q));
                goto out;
        }
        gpu_text = json_is_string(json_object_get(self, "gpu_name"))
                           ? xasprintf("GPU %s", json_string_value(json_object_get(self, "gpu_name")))
                           : xstrdup("GPU unknown (none reported): compared with runs that reported none");
        m = json_pack("{s:O,s:b,s:s,s:O?,s:s,s:{s:f,s:f,s:f,s:f,s:s},s:{s:i,s:i,s:i},s:b}", "groups",
                      d.groups, "regression", d.rule != NULL, "rule",
                      d.rule           ? d.rule
                      : d.compared > 0 ? "every check within its threshold or undecided"
                                       : "nothing compared",
                      "gpu_name", json_object_get(self, "gpu_name"), "gpu_note",
                      "only runs on the same GPU model are compared", "thresholds", "perf_max_drop_pct",
                      o.perf_max_drop_pct, "ttft_p99_max_rise_pct", o.ttft_p99_max_rise_pct,
                      "memory_max_rise_gb", o.memory_max_rise_gb, "alpha", o.alpha, "test",
                      mx_regress_rule_to_string(o.rule), "left_out", "other_gpu", lo.other_gpu, "not_pass",
                      lo.not_pass, "invalid", lo.invalid, "no_baseline", d.no_baseline);
        json_object_set_new(m, "decision",
                            json_string(d.rule ? "regression" : d.unknown.len ? "unknown" : "no regression"));
        json_object_set_new(m, "unit", json_string("server start: one summary per start and check"));
        msg = mx_buf_steal(&d.msg);
        regs = mx_buf_steal(&d.regs);
        unk = mx_buf_steal(&d.unknown);
        if (d.compared == 0) {
                bool is_baseline = streq_ptr(baseline_key(l, self),
                                             json_string_value(json_object_get(self, "config_key")));
                _cleanup_free_ char *gpus =
                        lo.other_gpu ? xasprintf("; %u stored results on another GPU", lo.other_gpu) : NULL;

                mx_level_finish(l, MX_VERDICT_SKIPPED, m, NULL, "%s%s (%s%s)",
                                is_baseline ? "this run is the baseline and no earlier run of it at these "
                                              "source SHAs was measured"
                                            : "no baseline measured",
                                wants(l, "history") ? ", nor this configuration at other SHAs" : "",
                                gpu_text, strempty(gpus));
        } else if (d.rule)
                mx_level_finish(l, MX_VERDICT_FAIL, m, NULL, "regression: %s (%s)", regs, gpu_text);
        else if (unk && *unk)
                /* undecided is not a failure: more server starts would decide it */
                mx_level_finish(l, MX_VERDICT_SKIPPED, m, NULL, "unknown (needs %u more server starts a side): %s (%s)",
                                d.more, unk, gpu_text);
        else
                mx_level_finish(l, MX_VERDICT_PASS, m, NULL, "%sno regression against %s (%s)",
                                d.no_baseline ? "no baseline measured; " : "", msg, gpu_text);
out:
        json_decref(d.groups);
        free(d.rule);
        free(d.msg.data);
        free(d.regs.data);
        free(d.unknown.data);
}

static void l5_free(struct mx_level *l)
{
        free(l);
}

const struct mx_level_ops mx_level_l5_ops = {
        .name = "L5",
        .new = l5_new,
        .run = l5_run,
        .after_stop = l5_after_stop,
        .free = l5_free,
};
