/* SPDX-License-Identifier: MIT */
/* How long a submission will take, and what its level selection cannot measure (estimate.h). */
#include "estimate.h"
#include "levelcat.h"
#include "order.h"

#include <inttypes.h>

static int64_t stored_int(json_t *stored, const char *section, const char *key, const char *field)
{
        return json_integer_value(
                json_object_get(json_object_get(json_object_get(stored, section), key), field));
}

/* A level's upper bound: its own timeout setting, else the plan's level timeout, else the daemon's default.
 */
static int64_t level_bound_us(const struct mx_estimate_input *in, const char *level)
{
        int64_t ms =
                json_integer_value(json_object_get(json_object_get(in->level_settings, level), "timeout"));

        if (ms <= 0)
                ms = in->settings && in->settings->level_timeout_ms > 0 ? in->settings->level_timeout_ms
                                                                        : MX_DEFAULT_LEVEL_TIMEOUT_MS;
        return ms * 1000;
}

static int64_t ready_bound_us(const struct mx_estimate_input *in)
{
        int64_t ms = in->settings ? in->settings->ready_timeout_ms : 0;

        if (ms <= 0 && in->m)
                ms = json_integer_value(
                        json_object_get(json_object_get(in->m->profile_resolved, "ready"), "timeout_ms"));
        return MX_MAX(ms, 0) * 1000;
}

static int64_t run_bound_us(const struct mx_estimate_input *in)
{
        int64_t ms = in->settings && in->settings->run_timeout_ms > 0 ? in->settings->run_timeout_ms
                                                                      : MX_DEFAULT_RUN_TIMEOUT_MS;
        return ms * 1000;
}

/*
 * Fail-fast's first pass (order.h): one more server start (its boot and stop) and the cheap levels again,
 * added to a run's estimate and bound; a run that fails there ends there, which this upper side ignores.
 */
static void first_pass(const struct mx_estimate_input *in, int64_t *est, int64_t *bound)
{
        int64_t completed = stored_int(in->stored, "outcomes", "completed", "n");
        json_t *w;
        size_t i;

        *est += completed > 0 ? stored_int(in->stored, "outcomes", "completed", "overhead_us") : ready_bound_us(in);
        *bound += ready_bound_us(in);
        json_array_foreach (in->levels, i, w) {
                const char *l = json_string_value(w);

                if (!mx_order_level_is_cheap(l))
                        continue;
                *bound += level_bound_us(in, l);
                *est += stored_int(in->stored, "levels", l, "n") > 0 ? stored_int(in->stored, "levels", l, "mean_us")
                                                                      : level_bound_us(in, l);
        }
}

json_t *mx_estimate(const struct mx_estimate_input *in)
{
        _cleanup_free_ char *guessed_text = NULL;
        json_t *guessed = json_array(), *w, *o;
        int64_t cap = run_bound_us(in), bound = ready_bound_us(in), est = 0;
        int64_t completed = stored_int(in->stored, "outcomes", "completed", "n");
        int64_t crashed = stored_int(in->stored, "outcomes", "crashed", "n");
        int64_t per_run, per_fail, total, bound_total;
        size_t i;
        const char *basis;
        struct mx_buf b = MX_BUF_INIT;

        /* A run: its boot and stop (stored overhead, else the ready timeout), then each level. */
        est = completed > 0 ? stored_int(in->stored, "outcomes", "completed", "overhead_us") : bound;
        json_array_foreach (in->levels, i, w) {
                const char *l = json_string_value(w);
                int64_t lb = level_bound_us(in, l);

                bound += lb;
                if (stored_int(in->stored, "levels", l, "n") > 0)
                        est += stored_int(in->stored, "levels", l, "mean_us");
                else {
                        est += lb;
                        json_array_append_new(guessed, json_string(l));
                }
        }
        bound = MX_MIN(bound, cap);
        per_run = MX_MIN(est, cap);
        if (in->two_passes) { /* the first pass is a server start of its own, under its own run timeout */
                int64_t fe = 0, fb = 0;

                first_pass(in, &fe, &fb);
                bound += MX_MIN(fb, cap);
                per_run += MX_MIN(fe, cap);
        }
        /* A run known to crash takes what stored crashes took; without any, it may take as long as any run.
         */
        per_fail = crashed > 0 ? MX_MIN(stored_int(in->stored, "outcomes", "crashed", "mean_us"), cap)
                               : per_run;
        total = per_run * (int64_t)(in->n_runs - in->n_expect_fail) + per_fail * (int64_t)in->n_expect_fail;
        bound_total = bound * (int64_t)in->n_runs;
        basis = completed == 0 ? "bound" : json_array_size(guessed) > 0 ? "partly-stored" : "stored";

        _cleanup_free_ char *t = mx_format_duration(total), *bt = mx_format_duration(bound_total),
                            *pr = mx_format_duration(per_run), *rb = mx_format_duration(bound);
        if (streq(basis, "bound"))
                mx_buf_printf(&b,
                              "at most %s (%zu runs x %s: the ready timeout and each level's timeout, "
                              "capped by the run timeout; no stored durations to estimate from)",
                              bt, in->n_runs, rb);
        else {
                mx_buf_printf(&b, "about %s (%zu runs x ~%s, from %" PRId64 " stored attempts", t,
                              in->n_runs, pr, completed + crashed);
                if (in->n_expect_fail > 0 && crashed > 0)
                        mx_buf_printf(&b, "; the %zu expected to fail as long as stored crashes",
                                      in->n_expect_fail);
                if (json_array_size(guessed) > 0) {
                        mx_buf_puts(&b, "; never stored, counted at their timeout:");
                        json_array_foreach (guessed, i, w)
                                mx_buf_printf(&b, " %s", json_string_value(w));
                }
                mx_buf_printf(&b, "); at most %s", bt);
        }
        if (in->two_passes)
                mx_buf_puts(&b, "; fail-fast: each run starts twice, its L1 and L1.5 a pass of their own first");
        o = json_pack("{s:I,s:I,s:I,s:s,s:o,s:I,s:s}", "total_us", (json_int_t)total, "per_run_us",
                      (json_int_t)per_run, "bound_us", (json_int_t)bound_total, "basis", basis, "guessed",
                      guessed, "attempts", (json_int_t)(completed + crashed), "text", b.data ? b.data : "");
        mx_buf_free(&b);
        return o;
}

const char *mx_metric_level(const char *metric)
{
        if (streq(metric, "crashes"))
                return "L3"; /* seed 000: "No crashes in stress test" */
        if (streq(metric, "startup_s"))
                return "L1"; /* the time to ready, which L1 records */
        if (streq(metric, "memory_gb"))
                return NULL; /* the sampler's peak, in every attempt */
        return "L4";         /* throughput and latency: the benchmark */
}

static bool selected(json_t *levels, const char *level)
{
        json_t *w;
        size_t i;

        json_array_foreach (levels, i, w)
                if (streq_ptr(json_string_value(w), level))
                        return true;
        return false;
}

char **mx_criteria_unmeasured(const struct mx_matrix *m, int feature, json_t *levels)
{
        const struct mx_matrix_feature *f;
        const struct mx_matrix_criterion *hard;
        size_t n_hard = 0;
        char **out = NULL;

        if (!m || feature < 0 || (size_t)feature >= m->n_features)
                return NULL;
        f = &m->features[feature];
        hard = mx_feature_hard(m, f, &n_hard);
        for (size_t c = 0; c < f->n_criteria + n_hard; c++) {
                const struct mx_matrix_criterion *cr =
                        c < f->n_criteria ? &f->criteria[c] : &hard[c - f->n_criteria];
                const char *need = mx_metric_level(cr->metric);

                if (need && !selected(levels, need))
                        strv_consume(&out, xasprintf("%s %s needs %s, which these levels leave out: it will "
                                                     "not be judged",
                                                     c < f->n_criteria ? "criterion" : "hard constraint",
                                                     cr->metric, need));
        }
        return out;
}
