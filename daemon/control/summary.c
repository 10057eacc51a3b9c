/* SPDX-License-Identifier: MIT */
/*
 * show JOB's and follow's per-configuration summary (summary.h).
 */
#include "summary.h"

#include "criteria.h"
#include "jobruns.h"
#include "levelcat.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct metric {
        const char *name;
        bool criterion;
};

static bool metric_add(struct metric *ms, size_t *n, const char *name, bool criterion)
{
        for (size_t i = 0; i < *n; i++)
                if (streq(ms[i].name, name))
                        return false;
        if (*n >= SUMMARY_METRICS_MAX)
                return false;
        ms[(*n)++] = (struct metric){name, criterion};
        return true;
}

/* tg before pp, then by size: the order a reader scans ("tg32, tg128, pp512, pp2048"). */
static int throughput_cmp(const void *a, const void *b)
{
        const char *x = *(const char *const *)a, *y = *(const char *const *)b;

        if (x[0] != y[0])
                return x[0] == 't' ? -1 : 1;
        return strtol(x + 2, NULL, 10) < strtol(y + 2, NULL, 10) ? -1 : 1;
}

static int metric_class(const char *metric)
{
        return endswith(metric, "_tps") ? 0 : endswith(metric, "_ms") ? 1 : 2;
}

/* The criteria's metrics (crashes is a job's count, not a run's), the L4 rows' throughput, TTFT. */
static size_t metrics_pick(const struct mx_matrix *m, int feature, json_t *runs, struct metric *ms)
{
        const char *thr[SUMMARY_METRICS_MAX];
        size_t n = 0, n_thr = 0, n_hard = 0;
        bool any_l4 = false;
        json_t *run;
        size_t i;

        if (m && feature >= 0) {
                const struct mx_matrix_feature *f = &m->features[feature];
                const struct mx_matrix_criterion *hard = mx_feature_hard(m, f, &n_hard);

                for (size_t k = 0; k < f->n_criteria; k++)
                        if (!streq(f->criteria[k].metric, "crashes"))
                                metric_add(ms, &n, f->criteria[k].metric, true);
                for (size_t k = 0; k < n_hard; k++)
                        if (!streq(hard[k].metric, "crashes"))
                                metric_add(ms, &n, hard[k].metric, true);
        }
        json_array_foreach (runs, i, run) {
                json_t *res =
                        json_object_get(json_object_get(json_object_get(run, "levels"), "L4"), "results");
                const char *k;
                json_t *v;

                if (!json_is_object(res))
                        continue;
                any_l4 = true;
                json_object_foreach (json_object_get(res, "throughput"), k, v) {
                        bool seen = false;

                        for (size_t t = 0; t < n_thr; t++)
                                seen |= streq(thr[t], k);
                        if (!seen && n_thr < ELEMENTSOF(thr) && (startswith(k, "tg") || startswith(k, "pp")))
                                thr[n_thr++] = k;
                }
        }
        qsort(thr, n_thr, sizeof(thr[0]), throughput_cmp);
        for (size_t t = 0; t < n_thr; t++)
                metric_add(ms, &n, thr[t], false);
        if (any_l4) {
                metric_add(ms, &n, "ttft_p50_ms", false);
                metric_add(ms, &n, "ttft_p99_ms", false);
        }
        /* columns by kind: throughput, then latency, then the rest (memory, startup), each in the order
         * found */
        {
                struct metric sorted[SUMMARY_METRICS_MAX];
                size_t k = 0;

                for (int cls = 0; cls < 3; cls++)
                        for (size_t t = 0; t < n; t++)
                                if (metric_class(ms[t].name) == cls)
                                        sorted[k++] = ms[t];
                memcpy(ms, sorted, k * sizeof(*ms));
        }
        return n;
}

static const char *metric_unit(const char *metric)
{
        const struct mx_metric_info *mi = mx_metric_lookup(metric);

        /* criteria.c counts memory in GB (10^9 bytes), the seeds' unit, as L5 and the reports do */
        if (streq(metric, "memory_gb"))
                return "GB";
        if (mi)
                return mi->unit;
        return endswith(metric, "_tps") ? "tok/s" : endswith(metric, "_ms") ? "ms" : "";
}

static bool metric_higher_is_better(const char *metric)
{
        const struct mx_metric_info *mi = mx_metric_lookup(metric);

        return mi ? mi->higher_is_better : endswith(metric, "_tps");
}

/*
 * The std and n of a throughput metric ("tg32_tps", "pp2048_tps") from L4's
 * depth-0 rows of that size, as the results' mean is theirs: several rows
 * (tg32 after each pp) pooled, population std as llama-benchy reports it.
 */
static bool row_spread(json_t *run, const char *metric, double *ret_std, int64_t *ret_n)
{
        json_t *rows = json_object_get(json_object_get(json_object_get(run, "levels"), "L4"), "rows"), *row;
        char kind[3] = {metric[0], metric[1], 0};
        long size = strtol(metric + 2, NULL, 10);
        double sum = 0, sq = 0;
        int64_t n = 0;
        size_t i;

        if (!(streq(kind, "tg") || streq(kind, "pp")) || !endswith(metric, "_tps"))
                return false;
        /* pass 1: the pooled mean; pass 2: within plus between rows */
        for (int pass = 0; pass < 2; pass++)
                json_array_foreach (rows, i, row) {
                        int64_t k = json_integer_value(json_object_get(row, "n"));
                        double mean = json_number_value(json_object_get(row, "mean"));
                        double sd = json_number_value(json_object_get(row, "std"));

                        if (!streq_ptr(json_string_value(json_object_get(row, "kind")), kind) ||
                            json_integer_value(json_object_get(row, "depth")) != 0 ||
                            json_integer_value(json_object_get(row, kind)) != size || k <= 0 ||
                            !json_is_number(json_object_get(row, "mean")))
                                continue;
                        if (pass == 0) {
                                sum += (double)k * mean;
                                n += k;
                        } else {
                                double d = mean - sum / (double)n;

                                sq += (double)k * (sd * sd + d * d);
                        }
                }
        if (n == 0)
                return false;
        *ret_std = sqrt(sq / (double)n);
        *ret_n = n;
        return true;
}

/* The change against the baseline in percent, for throughput and latency; NAN when there is none. */
static double change_pct(json_t *run, json_t *base, const char *metric, double x)
{
        _cleanup_free_ char *why = NULL;
        double b;

        if (!base || base == run || streq(metric, "memory_gb") || streq(metric, "startup_s"))
                return NAN;
        if (criteria_run_metric(base, metric, &b, NULL, &why) < 0 || !(b > 0) || !isfinite(x))
                return NAN;
        return (x - b) / b * 100.0;
}

/* One run's figure for one metric: the number with its spread and change, or why it is not measured. */
static json_t *metric_cell(json_t *run, json_t *base, const char *metric)
{
        _cleanup_free_ char *why = NULL, *source = NULL;
        double x = NAN, sd, pct;
        int64_t n;
        json_t *cell;
        int r = criteria_run_metric(run, metric, &x, &source, &why);

        if (r == -ENODATA || !isfinite(x))
                return json_pack("{s:s}", "not_measured", why ? why : "no level measured it");
        cell = json_pack("{s:f}", "value", x);
        if (row_spread(run, metric, &sd, &n)) {
                json_object_set_new(cell, "std", json_real(sd));
                json_object_set_new(cell, "n", json_integer(n));
        }
        if (r == -EINVAL)
                json_object_set_new(cell, "invalid", json_string(strna(why)));
        else if (isfinite(pct = change_pct(run, base, metric, x)))
                json_object_set_new(cell, "change_pct", json_real(pct));
        if (source) {
                const char *open = strrchr(source, '(');

                json_object_set_new(cell, "from", json_string(source));
                /* memory's figure kind (gpu, system, pss, gpu-device): like is compared with like only */
                if (streq(metric, "memory_gb") && open && endswith(source, ")"))
                        json_object_set_new(cell, "kind", json_stringn(open + 1, strlen(open + 1) - 1));
        }
        return cell;
}

/* The axis=value pairs of key that base does not hold ("kernel=cutlass,tile=64x128"); "" when none. */
static char *config_differs(const char *key, const char *base)
{
        _cleanup_free_ char *mine = xstrdup(strempty(key)), *theirs = xasprintf(",%s,", strempty(base));
        struct mx_buf b = MX_BUF_INIT;
        char *save = NULL;

        /* a key is axis=value pairs joined with ',' (ident.h): compare pair by pair */
        for (char *p = strtok_r(mine, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                _cleanup_free_ char *pair = xasprintf(",%s,", p);

                if (!strstr(theirs, pair))
                        mx_buf_printf(&b, "%s%s", b.len ? "," : "", p);
        }
        mx_buf_puts(&b, "");
        return mx_buf_steal(&b);
}

/* Every level the job selected or a run recorded, in the seed's order. */
static json_t *levels_pick(json_t *job_levels, json_t *runs)
{
        _cleanup_free_ bool *on = xcalloc(mx_level_defs_count, sizeof(bool));
        json_t *out = json_array(), *v, *run;
        const char *k;
        size_t i;
        int x;

        json_array_foreach (job_levels, i, v)
                if ((x = mx_level_index(json_string_value(v))) >= 0)
                        on[x] = true;
        json_array_foreach (runs, i, run)
                json_object_foreach (json_object_get(run, "levels"), k, v)
                        if ((x = mx_level_index(k)) >= 0)
                                on[x] = true;
        for (size_t l = 0; l < mx_level_defs_count; l++)
                if (on[l])
                        json_array_append_new(out, json_string(mx_level_defs[l].name));
        return out;
}

static json_t *run_row(json_t *run, json_t *base, const struct metric *ms, size_t n_ms)
{
        _cleanup_free_ char *differs =
                config_differs(json_string_value(json_object_get(run, "config_key")),
                               json_string_value(json_object_get(base, "config_key")));
        json_t *verdicts = json_object(), *metrics = json_object(), *l;
        const char *k;

        json_object_foreach (json_object_get(run, "levels"), k, l)
                json_object_set(verdicts, k, json_object_get(l, "verdict"));
        for (size_t i = 0; i < n_ms; i++)
                json_object_set_new(metrics, ms[i].name, metric_cell(run, base, ms[i].name));
        return json_pack("{s:O,s:O,s:O,s:s,s:O,s:O,s:O,s:o,s:o}", "run", json_object_get(run, "run"), "seq",
                         json_object_get(run, "seq"), "config_key", json_object_get(run, "config_key"),
                         "differs", differs, "state", json_object_get(run, "state"), "result",
                         json_object_get(run, "result"), "crash_class", json_object_get(run, "crash_class"),
                         "verdicts", verdicts, "metrics", metrics);
}

json_t *summary_job_json(const struct mx_matrix *m, int feature, json_t *job_levels, json_t *runs)
{
        struct metric ms[SUMMARY_METRICS_MAX];
        size_t n_ms = metrics_pick(m, feature, runs, ms), i;
        json_t *base = mx_jobruns_baseline(runs), *metrics = json_array(), *rows = json_array(), *run;

        for (size_t k = 0; k < n_ms; k++)
                json_array_append_new(metrics, json_pack("{s:s,s:s,s:b,s:b}", "metric", ms[k].name, "unit",
                                                         metric_unit(ms[k].name), "higher_is_better",
                                                         metric_higher_is_better(ms[k].name), "criterion",
                                                         ms[k].criterion));
        json_array_foreach (runs, i, run) {
                if (i >= SUMMARY_RUNS_MAX)
                        break;
                json_array_append_new(rows, run_row(run, base, ms, n_ms));
        }
        return json_pack(
                "{s:o,s:s?,s:o,s:o,s:o,s:I,s:I}", "baseline",
                base ? json_pack("{s:O,s:O}", "run", json_object_get(base, "run"), "config_key",
                                 json_object_get(base, "config_key"))
                     : json_null(),
                "baseline_why",
                base ? NULL
                     : "the job has no baseline run (reason baseline or feature-off): no change shown",
                "levels", levels_pick(job_levels, runs), "metrics", metrics, "runs", rows, "total",
                (json_int_t)json_array_size(runs), "shown", (json_int_t)json_array_size(rows));
}
