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
 * valid numbers. The comparison is matrix/analysis/regress.h's: a regression must be
 * significant (Welch or non-overlapping 95 % intervals) AND beyond its
 * threshold; the rule that decided is in the metrics.
 *
 * L5 needs L4's final numbers, and L4 decides after the stop (once the
 * kernel gate has), so L5 goes pending and decides in after_stop, which the
 * driver calls in the seed's order: L4's verdict is known by then. Verdicts:
 * fail with the regressions named; pass; skipped "no baseline measured" when
 * there is nothing to compare with (a job whose baseline has no L4 yet is not
 * a failure); invalid when L4's numbers are.
 *
 * Confirmation (issue 15): a baseline comparison L5 cannot decide from the
 * starts there are (unknown) asks for confirmation starts: metrics.confirm
 * names the reference run, the daemon (l5confirm.c) starts the run and it again,
 * A/B, up to confirm_starts a side, and decides again with mx_l5_decide() once
 * each round is in; the verdict stays skipped "confirming" until then. The
 * current side is this attempt and its confirmation starts, the reference
 * side the baseline's stored starts and its confirmation starts for this
 * attempt. History groups (other source SHAs) cannot be started again: they
 * decide on what is stored.
 */
#include "l5-regress.h"
#include "regress.h"

#include <inttypes.h>

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


static double setting_num(const struct mx_l5_input *in, const char *name)
{
        return json_number_value(json_object_get(in->settings, name));
}

static bool wants(const struct mx_l5_input *in, const char *group)
{
        json_t *v;
        size_t i;

        json_array_foreach (json_object_get(in->settings, "against"), i, v)
                if (streq_ptr(json_string_value(v), group))
                        return true;
        return false;
}

/* Counts of stored results left out, and why: the metrics say so. */
struct left_out {
        unsigned other_gpu, not_pass, invalid;
        unsigned traced; /* measured while a profiler traced the server, and this run not (or the reverse) */
        bool cur_traced;
};

/*
 * A stored L4 result fit to compare with: passed, valid numbers, the same GPU model, and traced by a profiler
 * exactly when this run's L4 was (issue 18: a tracer's launch overhead is not a feature's effect).
 */
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
        if (json_is_true(json_object_get(m, "traced")) != lo->cur_traced) {
                lo->traced++;
                return false;
        }
        return true;
}

static json_t *run_ref(json_t *res)
{
        return json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?,s:O?}", "job", json_object_get(res, "job"), "run",
                         json_object_get(res, "run"), "attempt", json_object_get(res, "attempt"),
                         "finished_at", json_object_get(res, "finished_at"), "sources",
                         json_object_get(res, "sources"), "confirm_of", json_object_get(res, "confirm_of"));
}

/* A confirmation start of the attempt decided. */
static bool confirms(json_t *res, json_t *self)
{
        return json_integer_value(json_object_get(res, "confirm_of")) ==
                       json_integer_value(json_object_get(self, "attempt")) &&
               json_integer_value(json_object_get(self, "attempt")) > 0;
}

/* One group of references compared: its description and the comparison, appended to groups. */
static json_t *compare_group(json_t *groups, const char *against, const char *key, json_t *sources,
                             json_t *refs, json_t *curs, const struct mx_regress_opts *o)
{
        _cleanup_json_ json_t *docs = json_array(), *runs = json_array();
        json_t *res, *cmp;
        size_t i;

        json_array_foreach (refs, i, res) {
                json_array_append(docs, json_object_get(res, "metrics"));
                json_array_append_new(runs, run_ref(res));
        }
        cmp = mx_regress_compare(curs, docs, o);
        json_array_append_new(groups, json_pack("{s:s,s:s,s:O?,s:O,s:o}", "against", against, "config_key",
                                                key, "sources", sources, "runs", runs, "comparison", cmp));
        return cmp;
}

/* "r3" or "r3, r7 (2 runs)": the runs of a group (each once), for messages. */
static char *runs_text(json_t *refs)
{
        struct mx_buf b = MX_BUF_INIT;
        json_t *res;
        size_t i, shown = 0;
        int64_t seen[4] = {0};

        json_array_foreach (refs, i, res) {
                int64_t run = json_integer_value(json_object_get(res, "run"));
                bool dup = false;

                for (size_t k = 0; k < MX_MIN(shown, (size_t)4); k++)
                        dup |= seen[k] == run;
                if (dup)
                        continue;
                if (shown == 3) {
                        mx_buf_printf(&b, ", ...");
                        break;
                }
                seen[shown++] = run;
                mx_buf_printf(&b, "%sr%" PRId64, shown > 1 ? ", " : "", run);
        }
        if (shown > 1)
                mx_buf_printf(&b, " (%zu runs)", shown);
        return mx_buf_steal(&b);
}

struct decision {
        json_t *groups;
        struct mx_buf msg;  /* what was compared, for the message */
        struct mx_buf regs; /* the regressions */
        struct mx_buf unknown; /* the undecided checks */
        bool unknown_primary;  /* one of them is the primary check */
        unsigned more;      /* starts per side likely to decide them */
        char *rule;         /* of the first regression */
        unsigned compared;
        bool no_baseline;
        int64_t confirm_run; /* the baseline comparison is undecided and this reference run may start again */
        json_t *ref_starts;  /* the reference's confirmation attempts */
        json_t *starts;      /* every confirmation start decided with (start_of()), current side first */
};

/* A confirmation start in metrics.confirmation.starts: which side, run, job and attempt (its id). */
static json_t *start_of(const char *side, json_t *res)
{
        return json_pack("{s:s,s:O?,s:O?,s:O?}", "side", side, "run", json_object_get(res, "run"), "job",
                         json_object_get(res, "job"), "attempt", json_object_get(res, "attempt"));
}

static void note_group(struct decision *d, const char *what, json_t *refs, json_t *cmp)
{
        _cleanup_free_ char *runs = runs_text(refs);
        json_t *starts = json_object_get(cmp, "starts"), *r;
        size_t i;

        d->compared++;
        mx_buf_printf(&d->msg, "%s%s %s (%" JSON_INTEGER_FORMAT " vs %" JSON_INTEGER_FORMAT " server starts",
                      d->msg.len ? "; " : "", what, runs, json_integer_value(json_array_get(starts, 0)),
                      json_integer_value(json_array_get(starts, 1)));
        /* the rule that cleared the primary check, so the message says what decided */
        json_array_foreach (json_object_get(cmp, "checks"), i, r)
                if (streq_ptr(json_string_value(json_object_get(r, "family")), "primary"))
                        mx_buf_printf(&d->msg, "; %s: %s", json_string_value(json_object_get(r, "metric")),
                                      json_string_value(json_object_get(r, "rule")));
        mx_buf_printf(&d->msg, ")");
        json_array_foreach (json_object_get(cmp, "unknown"), i, r)
                mx_buf_printf(&d->unknown, "%s%s against %s %s", d->unknown.len ? "; " : "",
                              json_string_value(r), what, runs);
        json_array_foreach (json_object_get(cmp, "checks"), i, r)
                if (streq_ptr(json_string_value(json_object_get(r, "family")), "primary") &&
                    streq_ptr(json_string_value(json_object_get(r, "decision")), "unknown"))
                        d->unknown_primary = true;
        d->more = MX_MAX(d->more, (unsigned)json_integer_value(json_object_get(cmp, "more_starts")));
        if (!json_is_true(json_object_get(cmp, "regression")))
                return;
        if (!d->rule)
                d->rule = xstrdup(json_string_value(json_object_get(cmp, "rule")));
        json_array_foreach (json_object_get(cmp, "regressions"), i, r)
                mx_buf_printf(&d->regs, "%s%s against %s %s", d->regs.len ? "; " : "", json_string_value(r),
                              what, runs);
}

/* The baseline configuration: the job's run planned as baseline, else the snapshot's (--skip-measured left
 * it out). */
static const char *baseline_key(const struct mx_l5_input *in, json_t *self)
{
        const char *k = json_string_value(json_object_get(self, "baseline_key"));

        return k ? k : json_string_value(json_object_get(in->spec, "baseline_key"));
}

static unsigned budget(const struct mx_l5_input *in)
{
        return (unsigned)json_integer_value(json_object_get(in->settings, "confirm_starts"));
}

/*
 * The baseline group: the job's baseline run and earlier baseline runs at this attempt's source SHAs, and
 * the baseline's confirmation starts for this attempt (all of them, beyond baseline_runs).
 */
static int baseline_group(const struct mx_l5_input *in, json_t *self, json_t *curs, const struct mx_regress_opts *o,
                          struct left_out *lo, struct decision *d, char **reterr)
{
        const struct mx_history *h = in->history;
        const char *key = baseline_key(in, self);
        bool is_baseline = streq_ptr(key, json_string_value(json_object_get(self, "config_key")));
        json_t *sources = json_object_get(self, "sources"), *gpu = json_object_get(self, "gpu_name"), *res, *cmp;
        _cleanup_json_ json_t *all = NULL, *refs = json_array();
        size_t i, stored = 0, max = (size_t)json_integer_value(json_object_get(in->settings, "baseline_runs"));
        int64_t baseline_run = json_integer_value(json_object_get(self, "baseline_run")), confirm_run = 0;
        struct mx_regress_opts oc = *o;
        int q;

        if (!key) {
                d->no_baseline = true;
                return 0;
        }
        q = h->results(h->ud, "L4", key, MX_HISTORY_LOOKBACK, &all, reterr);
        if (q < 0)
                return q;
        json_array_foreach (all, i, res) {
                bool same_job_baseline = json_integer_value(json_object_get(res, "run")) == baseline_run &&
                                         !is_baseline;
                bool mine = confirms(res, self);

                if (!mine && stored >= max)
                        continue;
                if (!mine && !same_job_baseline && !json_equal(json_object_get(res, "sources"), sources))
                        continue;
                if (!usable(res, gpu, lo))
                        continue;
                json_array_append(refs, res);
                if (mine) {
                        json_array_append_new(d->ref_starts, json_incref(json_object_get(res, "attempt")));
                        json_array_append_new(d->starts, start_of("reference", res));
                } else
                        stored++;
                if (!confirm_run || json_integer_value(json_object_get(res, "run")) == baseline_run)
                        confirm_run = json_integer_value(json_object_get(res, "run"));
        }
        if (json_array_size(refs) == 0) {
                d->no_baseline = true;
                return 0;
        }
        /* only the baseline can start again (at these SHAs); the baseline itself has no other side */
        oc.can_confirm = o->can_confirm && !is_baseline && confirm_run > 0;
        cmp = compare_group(d->groups, "baseline", key, sources, refs, curs, &oc);
        if (oc.can_confirm && streq_ptr(json_string_value(json_object_get(cmp, "decision")), "unknown"))
                d->confirm_run = confirm_run;
        note_group(d, is_baseline ? "the baseline's earlier runs" : "the baseline", refs, cmp);
        return 0;
}

/* The history groups: this configuration at other source SHAs, newest source states first. */
static int history_groups(const struct mx_l5_input *in, json_t *self, json_t *curs, const struct mx_regress_opts *o,
                          struct left_out *lo, struct decision *d, char **reterr)
{
        const struct mx_history *h = in->history;
        const char *key = json_string_value(json_object_get(self, "config_key"));
        json_t *sources = json_object_get(self, "sources"), *gpu = json_object_get(self, "gpu_name"), *res;
        _cleanup_json_ json_t *all = NULL, *states = json_array();
        size_t i, j,
                max_states = (size_t)json_integer_value(json_object_get(in->settings, "history_shas"));
        size_t max_runs = (size_t)json_integer_value(json_object_get(in->settings, "baseline_runs"));
        struct mx_regress_opts oh = *o;
        json_t *st;
        int q;

        if (max_states == 0)
                return 0;
        oh.can_confirm = false; /* other source SHAs are not started again: decided on what is stored */
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
                json_t *cmp = compare_group(d->groups, "history", key, json_object_get(st, "sources"), refs, curs,
                                            &oh);

                note_group(d, "this configuration at other source SHAs", refs, cmp);
        }
        return 0;
}

/* This attempt's L4 numbers, then those of its confirmation starts: the current side, one per start. */
static int current_starts(const struct mx_l5_input *in, json_t *self, json_t *starts, json_t **ret_curs,
                          json_t **ret_ids, char **reterr)
{
        const struct mx_history *h = in->history;
        _cleanup_json_ json_t *all = NULL, *curs = json_pack("[O]", in->cur), *ids = json_array();
        struct left_out lo = {.cur_traced = json_is_true(json_object_get(in->cur, "traced"))};
        json_t *res;
        size_t i;
        int q;

        if (json_integer_value(json_object_get(self, "attempt")) > 0) {
                q = h->results(h->ud, "L4", json_string_value(json_object_get(self, "config_key")),
                               MX_HISTORY_LOOKBACK, &all, reterr);
                if (q < 0)
                        return q;
                json_array_foreach (all, i, res)
                        if (confirms(res, self) && usable(res, json_object_get(self, "gpu_name"), &lo)) {
                                json_array_append(curs, json_object_get(res, "metrics"));
                                json_array_append(ids, json_object_get(res, "attempt"));
                                json_array_append_new(starts, start_of("current", res));
                        }
        }
        *ret_curs = TAKE_PTR(curs);
        *ret_ids = TAKE_PTR(ids);
        return 0;
}

void mx_l5_output_done(struct mx_l5_output *o)
{
        json_decref(o->metrics);
        free(o->message);
        *o = (struct mx_l5_output){};
}

static void opts_from(const struct mx_l5_input *in, struct mx_regress_opts *o)
{
        mx_regress_opts_defaults(o);
        o->perf_max_drop_pct = setting_num(in, "perf_max_drop_pct");
        o->ttft_p99_max_rise_pct = setting_num(in, "ttft_p99_max_rise_pct");
        o->memory_max_rise_gb = setting_num(in, "memory_max_rise_gb");
        o->alpha = setting_num(in, "alpha");
        o->alpha_same = setting_num(in, "alpha_same");
        o->primary = json_string_value(json_object_get(in->settings, "primary"));
        if (o->primary && !*o->primary)
                o->primary = NULL;
        /* the baseline comparison may ask for confirmation starts while the budget lasts */
        o->can_confirm = in->rounds < (int)budget(in);
        o->rule = mx_regress_rule_from_string(json_string_value(json_object_get(in->settings, "rule")));
}

/* L5's metrics: the groups compared, the decision, the thresholds, what was left out and the confirmation. */
static json_t *l5_metrics(const struct mx_l5_input *in, json_t *self, const struct mx_regress_opts *o,
                          const struct left_out *lo, const struct decision *d, json_t *cur_ids)
{
        json_t *m = json_pack("{s:O,s:b,s:s,s:O?,s:s,s:{s:f,s:f,s:f,s:f,s:s},s:{s:i,s:i,s:i},s:b}", "groups",
                              d->groups, "regression", d->rule != NULL, "rule",
                              d->rule           ? d->rule
                              : d->compared > 0 ? "every check within its threshold or undecided"
                                                : "nothing compared",
                              "gpu_name", json_object_get(self, "gpu_name"), "gpu_note",
                              "only runs on the same GPU model are compared", "thresholds", "perf_max_drop_pct",
                              o->perf_max_drop_pct, "ttft_p99_max_rise_pct", o->ttft_p99_max_rise_pct,
                              "memory_max_rise_gb", o->memory_max_rise_gb, "alpha", o->alpha, "test",
                              mx_regress_rule_to_string(o->rule), "left_out", "other_gpu", lo->other_gpu,
                              "not_pass", lo->not_pass, "invalid", lo->invalid, "no_baseline", d->no_baseline);

        json_object_set_new(m, "decision",
                            json_string(d->rule                                   ? "regression"
                                        : d->unknown.len && d->unknown_primary ? "unknown"
                                                                               : "no regression"));
        json_object_set_new(m, "unit", json_string("server start: one summary per start and check"));
        json_object_set_new(json_object_get(m, "left_out"), "traced", json_integer(lo->traced));
        json_object_set_new(m, "traced", json_boolean(lo->cur_traced));
        if (in->rounds > 0)
                json_object_set_new(m, "confirmation",
                                    json_pack("{s:i,s:i,s:O,s:O,s:O}", "rounds", in->rounds, "budget",
                                              (int)budget(in), "current_attempts", cur_ids, "reference_attempts",
                                              d->ref_starts, "starts", d->starts));
        return m;
}

/* Why nothing was compared: only results traced otherwise, no baseline measured, or this run is the baseline. */
static char *not_compared_message(const struct mx_l5_input *in, json_t *self, const struct left_out *lo,
                                  const char *gpu_text)
{
        _cleanup_free_ char *gpus = NULL;
        bool is_baseline;

        if (lo->traced > 0)
                return xasprintf("not compared: this run's L4 was measured %s a profiler traced the server "
                                 "and the %u stored result%s to compare with %s (%s)",
                                 lo->cur_traced ? "while" : "without", lo->traced, lo->traced == 1 ? "" : "s",
                                 lo->traced == 1 ? (lo->cur_traced ? "was not" : "was")
                                                 : (lo->cur_traced ? "were not" : "were"),
                                 gpu_text);
        is_baseline = streq_ptr(baseline_key(in, self), json_string_value(json_object_get(self, "config_key")));
        gpus = lo->other_gpu ? xasprintf("; %u stored results on another GPU", lo->other_gpu) : NULL;
        return xasprintf("%s%s (%s%s)",
                         is_baseline ? "this run is the baseline and no earlier run of it at these "
                                       "source SHAs was measured"
                                     : "no baseline measured",
                         wants(in, "history") ? ", nor this configuration at other SHAs" : "", gpu_text,
                         strempty(gpus));
}

/* Undecided, and more starts may decide it: the daemon starts both sides again (metrics "confirm"). */
static char *confirm_message(const struct mx_l5_input *in, json_t *self, const struct decision *d,
                             const char *after, const char *unk, const char *gpu_text, struct mx_l5_output *out)
{
        json_t *m = out->metrics;

        out->confirm_run = d->confirm_run;
        json_object_set_new(m, "confirm",
                            json_pack("{s:I,s:i,s:i,s:O}", "reference_run", (json_int_t)d->confirm_run, "round",
                                      in->rounds + 1, "budget", (int)budget(in), "settings", in->settings));
        if (baseline_key(in, self))
                json_object_set_new(json_object_get(m, "confirm"), "baseline_key",
                                    json_string(baseline_key(in, self)));
        return xasprintf("%sundecided: confirming on fresh server starts of r%" JSON_INTEGER_FORMAT " and r%" PRId64
                         " (A/B, round %d of at most %u): %s (%s)",
                         strempty(after), json_integer_value(json_object_get(self, "run")), d->confirm_run,
                         in->rounds + 1, budget(in), unk, gpu_text);
}

/* The verdict and the message from the comparisons d (their texts taken from it). */
static void l5_message(const struct mx_l5_input *in, json_t *self, const struct left_out *lo, struct decision *d,
                       const char *gpu_text, struct mx_l5_output *out)
{
        _cleanup_free_ char *msg = mx_buf_steal(&d->msg), *regs = mx_buf_steal(&d->regs),
                            *unk = mx_buf_steal(&d->unknown), *after = NULL;

        if (in->rounds > 0)
                after = xasprintf("after %d confirmation round%s (A/B, fresh server starts): ", in->rounds,
                                  in->rounds == 1 ? "" : "s");
        if (d->compared == 0)
                out->message = not_compared_message(in, self, lo, gpu_text);
        else if (d->rule) {
                out->verdict = MX_VERDICT_FAIL;
                out->message = xasprintf("%sregression: %s (%s)", strempty(after), regs, gpu_text);
        } else if (unk && *unk && d->confirm_run > 0)
                out->message = confirm_message(in, self, d, after, unk, gpu_text, out);
        else if (unk && *unk && d->unknown_primary)
                /* undecided is not a failure: more server starts would decide it */
                out->message = xasprintf("%sunknown (needs %u more server starts a side): %s (%s)", strempty(after),
                                         d->more, unk, gpu_text);
        else if (unk && *unk) {
                /* the primary check decided; the others are Holm's family: undecided ones are informative */
                out->verdict = MX_VERDICT_PASS;
                out->message = xasprintf("%sno regression against %s; informative, undecided (needs %u more server "
                                         "starts a side): %s (%s)",
                                         strempty(after), msg, d->more, unk, gpu_text);
        } else {
                out->verdict = MX_VERDICT_PASS;
                out->message = xasprintf("%s%sno regression against %s (%s)", strempty(after),
                                         d->no_baseline ? "no baseline measured; " : "", msg, gpu_text);
        }
}

/* Compared with the others: the stored results left out for a profiler's trace still get their line. */
static void traced_note(const struct left_out *lo, struct mx_l5_output *out)
{
        char *m2 = xasprintf("%s; not compared: %u stored result%s measured %s a profiler traced the server",
                             out->message, lo->traced, lo->traced == 1 ? "" : "s",
                             lo->cur_traced ? "without" : "while");

        free(out->message);
        out->message = m2;
}

void mx_l5_decide(const struct mx_l5_input *in, struct mx_l5_output *out)
{
        const struct mx_history *h = in->history;
        struct mx_regress_opts o;
        struct left_out lo = {.cur_traced = json_is_true(json_object_get(in->cur, "traced"))};
        struct decision d = {.groups = json_array(), .msg = MX_BUF_INIT, .regs = MX_BUF_INIT,
                             .unknown = MX_BUF_INIT, .ref_starts = json_array(), .starts = json_array()};
        _cleanup_json_ json_t *self = NULL, *curs = NULL, *cur_ids = NULL;
        _cleanup_free_ char *err = NULL, *gpu_text = NULL;
        int q;

        *out = (struct mx_l5_output){.verdict = MX_VERDICT_SKIPPED};
        opts_from(in, &o);
        if ((q = h->self(h->ud, &self, &err)) < 0 ||
            (q = current_starts(in, self, d.starts, &curs, &cur_ids, &err)) < 0 ||
            (wants(in, "baseline") && (q = baseline_group(in, self, curs, &o, &lo, &d, &err)) < 0) ||
            (wants(in, "history") && (q = history_groups(in, self, curs, &o, &lo, &d, &err)) < 0)) {
                out->verdict = MX_VERDICT_FAIL;
                out->message = xasprintf("cannot read earlier results: %s", err ? err : strerror(-q));
                goto out;
        }
        gpu_text = json_is_string(json_object_get(self, "gpu_name"))
                           ? xasprintf("GPU %s", json_string_value(json_object_get(self, "gpu_name")))
                           : xstrdup("GPU unknown (none reported): compared with runs that reported none");
        out->metrics = l5_metrics(in, self, &o, &lo, &d, cur_ids);
        l5_message(in, self, &lo, &d, gpu_text, out);
        if (d.compared > 0 && lo.traced > 0 && out->message)
                traced_note(&lo, out);
out:
        json_decref(d.groups);
        json_decref(d.ref_starts);
        json_decref(d.starts);
        free(d.rule);
        free(d.msg.data);
        free(d.regs.data);
        free(d.unknown.data);
}

static void l5_after_stop(struct mx_level *l, const struct mx_level_stop *st)
{
        struct mx_l5_output out = {};
        enum mx_verdict v4 = MX_VERDICT_SKIPPED;
        json_t *cur = NULL;
        int q;

        (void)st;
        q = mx_level_sibling(l, "L4", &v4, &cur);
        if (q == -ENOENT)
                return mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL,
                                       "L5 compares L4's numbers: select L4 too (L1-L5)");
        if (q < 0 || v4 == MX_VERDICT_SKIPPED)
                return mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL, "L4 measured nothing: nothing to compare");
        if (v4 == MX_VERDICT_INVALID)
                return mx_level_finish(l, MX_VERDICT_INVALID, NULL, NULL,
                                       "L4's numbers are invalid (kernel gate): they are not compared");
        if (v4 != MX_VERDICT_PASS)
                return mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL, "L4 did not pass (%s): nothing to compare",
                                       mx_verdict_to_string(v4));
        if (!l->ctx->history)
                return mx_level_finish(l, MX_VERDICT_SKIPPED, NULL, NULL, "no stored results to compare with");
        mx_l5_decide(&(struct mx_l5_input){.settings = l->ctx->settings, .spec = l->ctx->spec,
                                           .history = l->ctx->history, .cur = cur},
                     &out);
        mx_level_finish(l, out.verdict, TAKE_PTR(out.metrics), NULL, "%s", out.message);
        mx_l5_output_done(&out);
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
