/* SPDX-License-Identifier: MIT */
/*
 * Success criteria and gates between phases from stored runs (criteria.h).
 */
#include "criteria.h"

#include <inttypes.h>
#include <math.h>

/* memory in GB (10^9 bytes), the seeds' unit, as L5 and the reports count it */
#define GB 1e9

enum row_state { ROW_PASS, ROW_FAIL, ROW_INVALID, ROW_MISSING };
static const char *const row_state_names[] = {
        [ROW_PASS] = "pass",
        [ROW_FAIL] = "fail",
        [ROW_INVALID] = "invalid",
        [ROW_MISSING] = "missing",
};
/* A job's overall verdict from its worst row: anything short of pass or fail leaves it incomplete. */
static const char *const overall_names[] = {
        [ROW_PASS] = "pass",
        [ROW_FAIL] = "fail",
        [ROW_INVALID] = "incomplete",
        [ROW_MISSING] = "incomplete",
};

static json_t *level_of(json_t *run, const char *level)
{
        return json_object_get(json_object_get(run, "levels"), level);
}

static const char *verdict_of(json_t *run, const char *level)
{
        return json_string_value(json_object_get(level_of(run, level), "verdict"));
}

static int64_t run_id(json_t *run)
{
        return json_integer_value(json_object_get(run, "run"));
}

static bool has_reason(json_t *run, const char *prefix, bool exact)
{
        json_t *v;
        size_t i;

        json_array_foreach (json_object_get(run, "reasons"), i, v) {
                const char *s = json_string_value(v);

                if (s && (exact ? streq(s, prefix) : startswith(s, prefix)))
                        return true;
        }
        return false;
}

/* Does the run have the feature on? Every reason but the baseline, the feature off and L5's prior features.
 */
static bool feature_on(json_t *run)
{
        json_t *v;
        size_t i;

        json_array_foreach (json_object_get(run, "reasons"), i, v) {
                const char *s = json_string_value(v);

                if (s && !streq(s, "baseline") && !startswith(s, "feature-off") && !startswith(s, "prior:"))
                        return true;
        }
        return false;
}

/* Why a run's numbers may not count, or NULL. */
static char *run_invalid(json_t *run)
{
        json_t *l4 = level_of(run, "L4");
        const char *v15 = verdict_of(run, "L1.5");

        if (v15 && (streq(v15, "fail") || streq(v15, "invalid")))
                return xasprintf(
                        "r%" PRId64 "'s numbers are invalid: L1.5 %s (%s)", run_id(run), v15,
                        strna(json_string_value(json_object_get(level_of(run, "L1.5"), "message"))));
        if (json_is_false(json_object_get(l4, "valid")))
                return xasprintf("r%" PRId64 "'s L4 is marked invalid%s%s", run_id(run),
                                 json_is_string(json_object_get(l4, "message")) ? ": " : "",
                                 strempty(json_string_value(json_object_get(l4, "message"))));
        return NULL;
}

/* A number from L4's results: throughput, latency or resource. */
static json_t *result_number(json_t *l4, const char *metric)
{
        static const char *const groups[] = {"throughput", "latency", "resource"};
        json_t *results = json_object_get(l4, "results");

        for (size_t i = 0; i < ELEMENTSOF(groups); i++) {
                json_t *v = json_object_get(json_object_get(results, groups[i]), metric);

                if (json_is_number(v))
                        return v;
        }
        return NULL;
}

/* Why the run has no L4 numbers at all. */
static char *no_l4(json_t *run)
{
        json_t *l4 = level_of(run, "L4");
        const char *state = json_string_value(json_object_get(run, "state"));

        if (!l4) {
                if (state && !streq(state, "done"))
                        return xasprintf("r%" PRId64 " is %s", run_id(run), state);
                return xasprintf("r%" PRId64 " has no L4 (benchmark) level%s%s", run_id(run),
                                 json_is_string(json_object_get(run, "outcome")) ? "; it ended " : "",
                                 strempty(json_string_value(json_object_get(run, "outcome"))));
        }
        return xasprintf("r%" PRId64 "'s L4 %s%s%s", run_id(run),
                         strna(json_string_value(json_object_get(l4, "verdict"))),
                         json_is_string(json_object_get(l4, "message")) ? ": " : "",
                         strempty(json_string_value(json_object_get(l4, "message"))));
}

/*
 * Memory like with like: a run's memory peaks, each of one kind ("gpu": the
 * device memory of the server's processes, "system": the unified-memory
 * system figure, "pss": host PSS of the server's processes, "gpu-device":
 * the whole GPU's used memory the attempt's sampler saw), the figure L4
 * judged first. Two runs are compared only in a kind both have.
 */
#define MEMFIG_MAX 6
struct memfig {
        const char *kind;
        double gb;
        const char *from;
};

static const char *memory_kind_name(const char *figure)
{
        /* L4 before memory kinds called host PSS "server" */
        return streq_ptr(figure, "server") ? "pss" : figure;
}

static size_t memory_figures(json_t *run, struct memfig f[MEMFIG_MAX])
{
        json_t *l4 = level_of(run, "L4"), *v, *kinds = json_object_get(l4, "memory_kinds");
        const char *primary = memory_kind_name(json_string_value(json_object_get(l4, "memory_figure")));
        const char *k;
        size_t n = 0;

        if ((v = result_number(l4, "gpu_memory_peak_gb")))
                f[n++] = (struct memfig){ "gpu", json_number_value(v), "L4 gpu_memory_peak_gb" };
        if (!primary)
                primary = "unnamed"; /* a stored figure without its kind compares only with its like */
        if (json_is_integer(v = json_object_get(l4, "memory_peak_bytes")))
                f[n++] = (struct memfig){ primary, (double)json_integer_value(v) / GB, "L4 memory peak" };
        json_object_foreach (kinds, k, v)
                if (n < MEMFIG_MAX - 1 && !streq_ptr(k, primary) && json_is_true(json_object_get(v, "complete")) &&
                    json_is_integer(json_object_get(v, "peak")))
                        f[n++] = (struct memfig){ k, (double)json_integer_value(json_object_get(v, "peak")) / GB,
                                                  "L4 memory peak" };
        if (json_is_integer(v = json_object_get(run, "sample_peak_bytes")))
                f[n++] = (struct memfig){ json_is_true(json_object_get(run, "sample_unified")) ? "system"
                                                                                                : "gpu-device",
                                          (double)json_integer_value(v) / GB, "sampler peak" };
        return n;
}

/* The first kind of a's figures that b has too: 0 with both; -EXDEV with why when they share none. */
static int memory_pair(json_t *a, json_t *b, struct memfig *ret_a, struct memfig *ret_b, char **ret_why)
{
        struct memfig fa[MEMFIG_MAX], fb[MEMFIG_MAX];
        size_t na = memory_figures(a, fa), nb = memory_figures(b, fb);

        for (size_t i = 0; i < na; i++)
                for (size_t j = 0; j < nb; j++)
                        if (streq(fa[i].kind, fb[j].kind)) {
                                *ret_a = fa[i];
                                *ret_b = fb[j];
                                return 0;
                        }
        *ret_why = xasprintf("r%" PRId64 "'s memory is %s, r%" PRId64 "'s %s: figures of different kinds "
                             "(device, unified-memory system, host PSS) are not compared",
                             run_id(a), na ? fa[0].kind : "not measured", run_id(b),
                             nb ? fb[0].kind : "not measured");
        return -EXDEV;
}

int criteria_run_metric(json_t *run, const char *metric, double *ret, char **ret_source, char **ret_why)
{
        json_t *l4 = level_of(run, "L4"), *v;
        _cleanup_free_ char *invalid = run_invalid(run);
        _cleanup_free_ char *source = NULL;
        double x = NAN;

        if (streq(metric, "startup_s")) {
                v = json_object_get(l4, "ready_s");
                if (json_is_number(v))
                        source = xasprintf("r%" PRId64 " L4 ready_s", run_id(run));
                else {
                        v = json_object_get(level_of(run, "L1"), "ready_s");
                        if (json_is_number(v))
                                source = xasprintf("r%" PRId64 " L1 ready_s", run_id(run));
                }
                if (source)
                        x = json_number_value(v);
        } else if (streq(metric, "memory_gb")) {
                struct memfig f[MEMFIG_MAX];
                size_t n = memory_figures(run, f);

                if (n > 0) {
                        x = f[0].gb;
                        source = xasprintf("r%" PRId64 " %s (%s)", run_id(run), f[0].from, f[0].kind);
                }
        } else if ((v = result_number(l4, metric))) {
                x = json_number_value(v);
                source = xasprintf("r%" PRId64 " L4", run_id(run));
        }
        if (!source) {
                if (ret_why)
                        *ret_why = streq(metric, "startup_s") || streq(metric, "memory_gb") || !l4 ||
                                                   !json_object_get(l4, "results")
                                           ? no_l4(run)
                                           : xasprintf("r%" PRId64 "'s L4 has no %s", run_id(run), metric);
                return -ENODATA;
        }
        *ret = x;
        if (ret_source)
                *ret_source = TAKE_PTR(source);
        if (invalid) {
                if (ret_why)
                        *ret_why = TAKE_PTR(invalid);
                return -EINVAL;
        }
        return 0;
}

/*
 * Did L3 lose the server: a request that failed without an answer (the
 * connection refused or cut, checks.c's "the request failed: ..."), not one
 * the server answered with an HTTP error (a 400 is the server refusing a
 * request, alive) and not a timeout (a hang, not a crash).
 */
static bool l3_lost_server(json_t *run)
{
        json_t *f;
        size_t i;

        json_array_foreach (json_object_get(level_of(run, "L3"), "failures"), i, f) {
                const char *detail = json_string_value(json_object_get(f, "detail"));

                if (streq_ptr(json_string_value(json_object_get(f, "check")), "http") && detail &&
                    startswith(detail, "the request failed") && !strcasestr(detail, "timeout") &&
                    !strcasestr(detail, "timed out"))
                        return true;
        }
        return false;
}

/* One crash per attempt at most: its crashed outcome, or L3 losing the server, are the same crash. */
static bool run_crashed(json_t *run)
{
        return streq_ptr(json_string_value(json_object_get(run, "outcome")), "crashed") || l3_lost_server(run);
}

int criteria_crashes(json_t *runs, bool on, int64_t *ret, char **ret_why)
{
        json_t *run;
        size_t i;
        int64_t n = 0;
        bool judged = false;

        json_array_foreach (runs, i, run) {
                const char *v3 = verdict_of(run, "L3");
                bool crashed = streq_ptr(json_string_value(json_object_get(run, "outcome")), "crashed");

                if (feature_on(run) != on || json_is_string(json_object_get(run, "expect_fail")))
                        continue;
                if (crashed || (v3 && !streq(v3, "skipped")))
                        judged = true;
                n += run_crashed(run) ? 1 : 0;
        }
        if (!judged) {
                if (ret_why)
                        *ret_why = xasprintf("no run with the feature %s ran L3 (the stress test)",
                                             on ? "on" : "off");
                return -ENODATA;
        }
        *ret = n;
        return 0;
}

struct pair {
        json_t *on, *off;
        const char *basis;
};

/* The runs compared: feature on and off on the merged stack when planned, else on the baseline. */
static void pick_pair(json_t *runs, struct pair *ret)
{
        json_t *run;
        size_t i;

        *ret = (struct pair){.basis = "baseline"};
        json_array_foreach (runs, i, run)
                if (has_reason(run, "feature-on:stack", false)) {
                        ret->basis = "merged stack";
                        break;
                }
        json_array_foreach (runs, i, run) {
                bool stack = streq(ret->basis, "merged stack");

                if (!ret->on && has_reason(run, stack ? "feature-on:stack" : "feature-on", !stack))
                        ret->on = run;
                if (!ret->off && has_reason(run, stack ? "feature-off:stack" : "feature-off", !stack))
                        ret->off = run;
        }
}

static json_t *num_or_null(double x)
{
        return isfinite(x) ? json_real(x) : json_null();
}

struct row {
        enum row_state state;
        double baseline, actual, bound;
        char *baseline_from, *actual_from, *why;
};

static void row_done(struct row *r)
{
        free(r->baseline_from);
        free(r->actual_from);
        free(r->why);
}

/* Judge actual against c with baseline b (NAN when unknown): sets state, bound and why. */
static void judge(const struct mx_matrix_criterion *c, struct row *r)
{
        const struct mx_metric_info *mi = mx_metric_lookup(c->metric);
        bool up = mi && mi->higher_is_better, at_least;
        double a = r->actual, b = r->baseline, x = c->value;

        switch (c->op) {
        case MX_CRITERION_MIN:
        case MX_CRITERION_MAX:
                r->bound = x;
                at_least = c->op == MX_CRITERION_MIN;
                break;
        case MX_CRITERION_MIN_GAIN_PCT:
        case MX_CRITERION_MAX_REGRESSION_PCT: {
                bool gain = c->op == MX_CRITERION_MIN_GAIN_PCT;

                if (!isfinite(b)) {
                        r->state = ROW_MISSING;
                        return;
                }
                if (b <= 0) {
                        r->state = ROW_MISSING;
                        free(r->why);
                        r->why = xasprintf("the baseline %s is %g: a percentage of it means nothing",
                                           c->metric, b);
                        return;
                }
                r->bound = up == gain ? b * (1 + x / 100) : b * (1 - x / 100);
                at_least = up;
                break;
        }
        case MX_CRITERION_MAX_INCREASE:
        case MX_CRITERION_MAX_DECREASE:
                if (!isfinite(b)) {
                        r->state = ROW_MISSING;
                        return;
                }
                r->bound = c->op == MX_CRITERION_MAX_INCREASE ? b + x : b - x;
                at_least = c->op == MX_CRITERION_MAX_DECREASE;
                break;
        default:
                r->state = ROW_MISSING;
                return;
        }
        if (!isfinite(a)) {
                r->state = ROW_MISSING;
                return;
        }
        /* A relative tolerance, so that 29.26 * 1.1 computed two ways is one number. */
        r->state = (at_least ? a >= r->bound - 1e-9 * fabs(r->bound) : a <= r->bound + 1e-9 * fabs(r->bound))
                           ? ROW_PASS
                           : ROW_FAIL;
}

static bool needs_baseline(const struct mx_matrix_criterion *c)
{
        return c->op != MX_CRITERION_MIN && c->op != MX_CRITERION_MAX;
}

/* Both runs' memory in one kind (the first of the feature's that the baseline has too); -EXDEV when none. */
static int memory_align(const struct pair *p, struct row *r, char **ret_why)
{
        struct memfig a, b;
        int q = memory_pair(p->on, p->off, &a, &b, ret_why);

        if (q < 0)
                return q;
        r->actual = a.gb;
        r->baseline = b.gb;
        free(r->actual_from);
        free(r->baseline_from);
        r->actual_from = xasprintf("r%" PRId64 " %s (%s)", run_id(p->on), a.from, a.kind);
        r->baseline_from = xasprintf("r%" PRId64 " %s (%s)", run_id(p->off), b.from, b.kind);
        return 0;
}

/* Fill r's actual and baseline for criterion c from the job's runs. */
static void measure(const struct mx_matrix_criterion *c, json_t *runs, const struct pair *p, struct row *r)
{
        _cleanup_free_ char *why_a = NULL, *why_b = NULL;
        int ra = -ENODATA, rb = -ENODATA;

        r->actual = r->baseline = r->bound = NAN;
        if (streq(c->metric, "crashes")) {
                int64_t n;

                ra = criteria_crashes(runs, true, &n, &why_a);
                if (ra >= 0) {
                        r->actual = (double)n;
                        r->actual_from = xstrdup("feature-on runs");
                }
                if (needs_baseline(c)) {
                        rb = criteria_crashes(runs, false, &n, &why_b);
                        if (rb >= 0) {
                                r->baseline = (double)n;
                                r->baseline_from = xstrdup("feature-off runs");
                        }
                }
        } else {
                if (p->on)
                        ra = criteria_run_metric(p->on, c->metric, &r->actual, &r->actual_from, &why_a);
                else
                        why_a = xstrdup("the job has no run with the feature on (feature-on)");
                if (p->off && p->off != p->on)
                        rb = criteria_run_metric(p->off, c->metric, &r->baseline, &r->baseline_from, &why_b);
                else if (p->off)
                        why_b = xasprintf(
                                "the feature sets no axis: on and off are one run (r%" PRId64
                                "); declare a baseline in the matrix or compare with an earlier job",
                                run_id(p->off));
                else
                        why_b = xstrdup("the job has no run with the feature off (feature-off)");
                if (ra >= 0 && rb >= 0 && streq(c->metric, "memory_gb")) {
                        rb = memory_align(p, r, &why_b);
                        /* no kind in common: neither figure is shown against the other */
                        if (rb == -EXDEV)
                                r->baseline = NAN;
                }
                if (rb < 0 && rb != -EINVAL && rb != -EXDEV && c->has_baseline) {
                        /* Seed 000's Baseline column: the declared number stands in for a missing
                         * measurement. */
                        r->baseline = c->baseline;
                        free(r->baseline_from);
                        r->baseline_from = xstrdup("declared");
                        rb = 0;
                }
        }
        judge(c, r);
        if (ra < 0 || (needs_baseline(c) && rb < 0)) {
                bool actual = ra < 0;

                r->state = (actual ? ra : rb) == -EINVAL ? ROW_INVALID : ROW_MISSING;
                free(r->why);
                r->why = xasprintf("%s: %s", actual ? "actual" : "baseline", strna(actual ? why_a : why_b));
        }
}

static json_t *row_json(const struct mx_matrix_criterion *c, const struct row *r)
{
        const struct mx_metric_info *mi = mx_metric_lookup(c->metric);
        _cleanup_free_ char *target = mx_criterion_target(c);
        json_t *o;
        double change = NAN;

        if (isfinite(r->actual) && isfinite(r->baseline) && r->baseline != 0)
                change = (r->actual - r->baseline) / fabs(r->baseline) * 100;
        o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s?,s:o,s:s?,s:o,s:s,s:s?,s:s?}", "metric", c->metric, "unit",
                      mi ? mi->unit : "", "target", target, "target_value", num_or_null(r->bound),
                      "baseline", num_or_null(r->baseline), "baseline_from", r->baseline_from, "actual",
                      num_or_null(r->actual), "actual_from", r->actual_from, "change_pct",
                      num_or_null(change), "pass", row_state_names[r->state], "why", r->why, "note",
                      c->note);
        return o;
}

/* Rows for a list of criteria; worst state so far in *worst, what is missing appended to missing. */
static json_t *rows_json(const struct mx_matrix_criterion *cs, size_t n, json_t *runs, const struct pair *p,
                         enum row_state *worst, json_t *missing)
{
        json_t *rows = json_array();

        for (size_t i = 0; i < n; i++) {
                struct row r = {};

                measure(&cs[i], runs, p, &r);
                json_array_append_new(rows, row_json(&cs[i], &r));
                if (r.state == ROW_FAIL)
                        *worst = ROW_FAIL;
                else if (r.state != ROW_PASS) {
                        if (*worst != ROW_FAIL)
                                *worst = ROW_MISSING;
                        json_array_append_new(missing, json_sprintf("%s: %s", cs[i].metric, strna(r.why)));
                }
                row_done(&r);
        }
        return rows;
}

json_t *criteria_job_json(const struct mx_matrix *m, size_t fi, json_t *runs)
{
        const struct mx_matrix_feature *f = &m->features[fi];
        const struct mx_matrix_criterion *hard;
        _cleanup_free_ char *id = mx_feature_id(f);
        enum row_state worst = ROW_PASS;
        json_t *missing = json_array(), *rows, *cons;
        struct pair p;
        size_t n_hard;

        pick_pair(runs, &p);
        hard = mx_feature_hard(m, f, &n_hard);
        rows = rows_json(f->criteria, f->n_criteria, runs, &p, &worst, missing);
        cons = rows_json(hard, n_hard, runs, &p, &worst, missing);
        return json_pack("{s:s,s:s,s:s?,s:s,s:{s:s,s:o,s:o},s:o,s:o,s:s,s:o}", "feature", f->name, "id", id,
                         "title", f->title, "hypothesis", f->hypothesis, "compared", "basis", p.basis, "on",
                         p.on ? json_integer(run_id(p.on)) : json_null(), "off",
                         p.off ? json_integer(run_id(p.off)) : json_null(), "rows", rows, "constraints",
                         cons, "overall", overall_names[worst], "missing", missing);
}

/* ---- gates ---- */

enum gate_state { GATE_PASS, GATE_FAIL, GATE_UNKNOWN };
static const char *const gate_state_names[] = {
        [GATE_PASS] = "pass",
        [GATE_FAIL] = "fail",
        [GATE_UNKNOWN] = "unknown",
};
/* A feature's verdict from its worst gate: open, held, or unknown while a gate cannot be judged. */
static const char *const gate_verdict_names[] = {
        [GATE_PASS] = "open",
        [GATE_FAIL] = "held",
        [GATE_UNKNOWN] = "unknown",
};

struct gate_result {
        enum gate_state state;
        double actual;
        int64_t job, run;
        char *why;
};

/* The newest valid number of metric among a feature's jobs (its compared "on" run); -ENODATA with why. */
static int newest_metric(json_t *jobs, const char *metric, double *ret, int64_t *ret_job, int64_t *ret_run,
                         char **ret_why)
{
        _cleanup_free_ char *first_why = NULL;
        json_t *j;
        size_t i;

        json_array_foreach (jobs, i, j) {
                json_t *runs = json_object_get(j, "runs");
                _cleanup_free_ char *why = NULL;
                int r;

                if (streq(metric, "crashes")) {
                        int64_t n;

                        r = criteria_crashes(runs, true, &n, &why);
                        if (r >= 0) {
                                *ret = (double)n;
                                *ret_job = json_integer_value(json_object_get(j, "job"));
                                *ret_run = 0;
                                return 0;
                        }
                } else {
                        struct pair p;

                        pick_pair(runs, &p);
                        if (!p.on)
                                why = xstrdup("no run with the feature on");
                        else {
                                r = criteria_run_metric(p.on, metric, ret, NULL, &why);
                                if (r >= 0) {
                                        *ret_job = json_integer_value(json_object_get(j, "job"));
                                        *ret_run = run_id(p.on);
                                        return 0;
                                }
                        }
                }
                if (!first_why)
                        first_why = xasprintf("job %" JSON_INTEGER_FORMAT ": %s",
                                              json_integer_value(json_object_get(j, "job")), strna(why));
        }
        *ret_why = first_why ? xasprintf("no valid %s measured yet (newest: %s)", metric, first_why)
                             : xstrdup("no run measured yet");
        return -ENODATA;
}

/*
 * Did every run with the feature on that recorded level pass? For kernels, the
 * compared run's L1.5 on a profiler report: the feature's own kernel path, not
 * the other axes' expectations in the L6 runs.
 */
static void level_gate(json_t *jobs, const char *level, bool kernels, struct gate_result *g)
{
        json_t *j, *run;
        size_t i, k;

        json_array_foreach (jobs, i, j) {
                bool seen = false;
                struct pair p;

                pick_pair(json_object_get(j, "runs"), &p);
                json_array_foreach (json_object_get(j, "runs"), k, run) {
                        json_t *l = level_of(run, level);
                        const char *v = json_string_value(json_object_get(l, "verdict"));

                        if (!feature_on(run) || !v || streq(v, "skipped") ||
                            json_is_string(json_object_get(run, "expect_fail")) || (kernels && run != p.on))
                                continue;
                        seen = true;
                        g->job = json_integer_value(json_object_get(j, "job"));
                        g->run = run_id(run);
                        if (!streq(v, "pass")) {
                                g->state = GATE_FAIL;
                                g->why = xasprintf(
                                        "%s %s%s%s", level, v,
                                        json_is_string(json_object_get(l, "message")) ? ": " : "",
                                        strempty(json_string_value(json_object_get(l, "message"))));
                                return;
                        }
                        if (kernels && !json_is_true(json_object_get(l, "kernel_evidence"))) {
                                g->state = GATE_FAIL;
                                g->why = xasprintf(
                                        "L1.5 passed without a profiler report: the kernels were not "
                                        "verified (the matrix's target.profiler)");
                                return;
                        }
                }
                if (seen) {
                        g->state = GATE_PASS;
                        g->run = 0; /* every run of the job, not one */
                        return;
                }
        }
        g->state = GATE_UNKNOWN;
        g->why = json_array_size(jobs) ? xasprintf("no run with the feature on has recorded %s yet", level)
                                       : xstrdup("no run measured yet");
}

static void gate_judge(const struct mx_matrix *m, const struct mx_matrix_gate *gt, json_t *jobs,
                       json_t *const *all, struct gate_result *g)
{
        *g = (struct gate_result){.actual = NAN};
        switch (gt->kind) {
        case MX_GATE_METRIC:
                if (newest_metric(jobs, gt->metric, &g->actual, &g->job, &g->run, &g->why) < 0) {
                        g->state = GATE_UNKNOWN;
                        return;
                }
                g->state = mx_gate_op_holds(gt->op, g->actual, gt->value) ? GATE_PASS : GATE_FAIL;
                if (g->state == GATE_FAIL)
                        g->why = xasprintf("%s is %g, the gate wants %s %g", gt->metric, g->actual,
                                           mx_gate_op_to_string(gt->op), gt->value);
                return;
        case MX_GATE_LEVEL:
                level_gate(jobs, gt->level, false, g);
                return;
        case MX_GATE_KERNELS_VERIFIED:
                level_gate(jobs, "L1.5", true, g);
                return;
        case MX_GATE_SPEEDUP: {
                const struct mx_matrix_feature *vs = &m->features[gt->vs];
                _cleanup_free_ char *why = NULL, *vs_id = mx_feature_id(vs);
                const struct mx_metric_info *mi = mx_metric_lookup(gt->metric);
                double base;
                int64_t job, run;

                if (newest_metric(jobs, gt->metric, &g->actual, &g->job, &g->run, &g->why) < 0) {
                        g->state = GATE_UNKNOWN;
                        return;
                }
                if (newest_metric(all[gt->vs], gt->metric, &base, &job, &run, &why) < 0) {
                        g->state = GATE_UNKNOWN;
                        g->why = xasprintf("%s (%s): %s", vs_id, vs->name, why);
                        return;
                }
                if (base <= 0 || g->actual <= 0) {
                        g->state = GATE_UNKNOWN;
                        g->why = xasprintf("%s of %g against %g: no speedup can be computed", gt->metric,
                                           g->actual, base);
                        return;
                }
                /* Faster: more tokens per second, or less time. */
                g->actual =
                        (mi && !mi->higher_is_better ? base / g->actual - 1 : g->actual / base - 1) * 100;
                g->state = g->actual >= gt->value - 1e-9 ? GATE_PASS : GATE_FAIL;
                g->why =
                        xasprintf("%+.1f %% against %s's r%" PRId64 " (job %" PRId64 ")%s", g->actual, vs_id,
                                  run, job, g->state == GATE_FAIL ? ", below the gate's minimum" : "");
                return;
        }
        default:
                g->state = GATE_UNKNOWN;
                g->why = xstrdup("unknown kind of gate");
        }
}

json_t *criteria_gates_json(const struct mx_matrix *m, json_t *const *jobs)
{
        json_t *features = json_array();

        for (size_t i = 0; i < m->n_features; i++) {
                const struct mx_matrix_feature *f = &m->features[i];
                _cleanup_free_ char *id = mx_feature_id(f);
                enum gate_state worst = GATE_PASS;
                json_t *gates = json_array(), *deps = json_array();

                for (size_t d = 0; d < f->n_depends_on; d++)
                        json_array_append_new(deps, json_string(m->features[f->depends_on[d]].name));
                for (size_t k = 0; k < f->n_gates; k++) {
                        const struct mx_matrix_gate *gt = &f->gates[k];
                        _cleanup_free_ char *cond = mx_gate_describe(m, gt);

                        for (size_t o = 0; o < gt->n_of; o++) {
                                const struct mx_matrix_feature *of = &m->features[gt->of[o]];
                                _cleanup_free_ char *of_id = mx_feature_id(of);
                                struct gate_result g;

                                gate_judge(m, gt, jobs[gt->of[o]], jobs, &g);
                                if (g.state == GATE_FAIL)
                                        worst = GATE_FAIL;
                                else if (g.state == GATE_UNKNOWN && worst == GATE_PASS)
                                        worst = GATE_UNKNOWN;
                                json_array_append_new(
                                        gates,
                                        json_pack("{s:s,s:s,s:s,s:s?,s:s,s:o,s:o,s:o,s:s?}", "of", of->name,
                                                  "of_id", of_id, "condition", cond, "note", gt->note,
                                                  "verdict", gate_state_names[g.state], "actual",
                                                  num_or_null(g.actual), "job",
                                                  g.job ? json_integer(g.job) : json_null(), "run",
                                                  g.run ? json_integer(g.run) : json_null(), "why", g.why));
                                free(g.why);
                        }
                }
                json_array_append_new(features, json_pack("{s:s,s:s,s:s?,s:s,s:o,s:s,s:o,s:s?,s:o}",
                                                          "feature", f->name, "id", id, "title", f->title,
                                                          "status", mx_feature_status_to_string(f->status),
                                                          "depends_on", deps, "verdict",
                                                          gate_verdict_names[worst], "may_start",
                                                          worst == GATE_PASS   ? json_true()
                                                          : worst == GATE_FAIL ? json_false()
                                                                               : json_null(),
                                                          "text", f->gate, "gates", gates));
        }
        return json_pack("{s:o}", "features", features);
}
