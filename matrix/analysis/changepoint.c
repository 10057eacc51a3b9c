/* SPDX-License-Identifier: MIT */
/* E-divisive means over a series ordered by commit: where it shifted, with a seeded permutation test. */
#include "changepoint.h"
#include "regress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mx_cp_opts_defaults(struct mx_cp_opts *o)
{
        *o = (struct mx_cp_opts){
                .alpha = 0.05,
                .min_size = 3,
                .permutations = 199,
                .permutations_min = 99,
                .work_max = MX_CP_WORK_MAX,
                .seed = 0x9e3779b97f4a7c15ULL,
        };
}

/* xorshift64*, the permutation test's generator: fixed seeds make the answer reproducible. */
static uint64_t rng_next(uint64_t *s)
{
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        return *s * 0x2545F4914F6CDD1DULL;
}

static bool split_allowed(const size_t *group, size_t at)
{
        return !group || group[at] != group[at - 1];
}

/*
 * The best split of x[0..m) (the segment's values, in order) by the
 * energy statistic q = ab/(a+b) * (2/(ab) sum|x_i - y_j| - sum|x_i - x_k|/C(a,2)
 * - sum|y_j - y_k|/C(b,2)), over the splits with min_size points each side
 * that group allows. Distances row by row: O(m^2) time, O(1) extra memory.
 * Returns false when no split is allowed.
 */
static bool best_split(const double *x, const size_t *group, size_t m, size_t min_size, size_t *ret_at,
                       double *ret_q)
{
        double cross = 0, left = 0, right = 0, best = -INFINITY;
        size_t best_at = 0;

        for (size_t i = 0; i < m; i++)
                for (size_t k = i + 1; k < m; k++)
                        right += fabs(x[i] - x[k]);
        /* tau = number of points on the left; move point tau-1 from right to left */
        for (size_t tau = 1; tau + 1 <= m; tau++) {
                size_t e = tau - 1;
                double to_left = 0, to_right = 0;

                for (size_t i = 0; i < e; i++)
                        to_left += fabs(x[i] - x[e]);
                for (size_t j = e + 1; j < m; j++)
                        to_right += fabs(x[j] - x[e]);
                cross += to_right - to_left;
                left += to_left;
                right -= to_right;
                if (tau < min_size || m - tau < min_size || !split_allowed(group, tau))
                        continue;
                {
                        double a = (double)tau, b = (double)(m - tau);
                        double e_stat = 2 * cross / (a * b) - (tau > 1 ? left / (a * (a - 1) / 2) : 0) -
                                        (m - tau > 1 ? right / (b * (b - 1) / 2) : 0);
                        double q = a * b / (a + b) * e_stat;

                        if (q > best) {
                                best = q;
                                best_at = tau;
                        }
                }
        }
        if (best_at == 0)
                return false;
        *ret_at = best_at;
        *ret_q = best;
        return true;
}

/* What best_split on m points costs, in distances |x_i - x_k| computed: m(m-1)/2 and then m-1 per move. */
static uint64_t split_work(size_t m)
{
        return (uint64_t)m * (m - 1) / 2 + (uint64_t)m * (m - 1);
}

/*
 * The permutation p of the segment's best split: its q against the best q of
 * R shuffled copies (p's resolution 1/(R+1)). Stops as soon as p can no
 * longer fall below alpha (then the p returned is where it stopped, at least
 * alpha). *work grows by the distances computed.
 */
static double permutation_p(const double *x, const size_t *group, size_t m, const struct mx_cp_opts *o,
                            unsigned R, double q, uint64_t seed, uint64_t *work)
{
        _cleanup_free_ double *y = xmalloc(m * sizeof(double));
        unsigned at_least = 0;
        uint64_t s = seed ? seed : 1;

        memcpy(y, x, m * sizeof(double));
        for (unsigned r = 0; r < R; r++) {
                size_t at;
                double qq;

                for (size_t i = m - 1; i > 0; i--) {
                        size_t j = (size_t)(rng_next(&s) % (i + 1));
                        double t = y[i];

                        y[i] = y[j];
                        y[j] = t;
                }
                *work += split_work(m);
                if (best_split(y, group, m, o->min_size, &at, &qq) && qq >= q)
                        at_least++;
                /* already not significant, whatever the rest give: only significant p are reported */
                if ((1.0 + at_least) / (1.0 + R) >= o->alpha)
                        break;
        }
        return (1.0 + at_least) / (1.0 + R);
}

struct found {
        struct mx_cp *v;
        size_t n, cap;
        struct mx_cp_stats st;
};

/*
 * The shuffles a segment of m points gets from what is left of o->work_max:
 * all of o->permutations while they fit, else as many as fit (divide made
 * sure that is at least o->permutations_min).
 */
static unsigned permutations_left(const struct mx_cp_opts *o, const struct found *f, size_t m)
{
        uint64_t fit = (o->work_max - f->st.work) / split_work(m);

        return fit >= o->permutations ? o->permutations : (unsigned)fit;
}

/* Bisect segment [from, to): keep its best split if significant, then look at both sides. */
static void divide(const double *v, const size_t *group, size_t from, size_t to, const struct mx_cp_opts *o,
                   struct found *f)
{
        size_t at;
        double q, p;
        unsigned R;

        if (to - from < 2 * o->min_size)
                return;
        /* the split and at least permutations_min shuffles of it, or the segment is left untested (said so) */
        if (f->st.work + split_work(to - from) * (1 + (uint64_t)o->permutations_min) > o->work_max) {
                f->st.untested++;
                return;
        }
        f->st.work += split_work(to - from);
        if (!best_split(v + from, group ? group + from : NULL, to - from, o->min_size, &at, &q))
                return;
        R = permutations_left(o, f, to - from);
        f->st.min_permutations = f->st.min_permutations ? MX_MIN(f->st.min_permutations, R) : R;
        p = permutation_p(v + from, group ? group + from : NULL, to - from, o, R, q,
                          o->seed ^ ((uint64_t)from * 0x100000001b3ULL + to), &f->st.work);
        if (!(p < o->alpha))
                return;
        divide(v, group, from, from + at, o, f);
        MX_GROW(f->v, f->cap, f->n + 1);
        f->v[f->n++] = (struct mx_cp){.at = from + at, .q = q, .p = p};
        divide(v, group, from + at, to, o, f);
}

int mx_changepoints(const double *v, const size_t *group, size_t n, const struct mx_cp_opts *o,
                    struct mx_cp **ret, size_t *ret_n, struct mx_cp_stats *ret_stats)
{
        struct found f = {};

        if (!o || o->min_size < 1 || !(o->alpha > 0 && o->alpha <= 1) || o->permutations < 1 ||
            o->permutations_min < 1 || o->permutations_min > o->permutations || (n && !v))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!isfinite(v[i]) || (group && i > 0 && group[i] < group[i - 1]))
                        return -EINVAL;
        divide(v, group, 0, n, o, &f);
        *ret = f.v;
        *ret_n = f.n;
        if (ret_stats)
                *ret_stats = f.st;
        return 0;
}

int mx_cp_metric(json_t *l4, const char *metric, double *ret_value, double *ret_sd)
{
        json_t *row;
        size_t i;

        json_array_foreach (json_object_get(l4, "tests"), i, row) {
                json_t *vals = json_object_get(json_object_get(row, "tps"), "values"), *x;
                double sum = 0, sq = 0, mean;
                size_t j, k = 0;

                if (!mx_regress_row_is(row, metric))
                        continue;
                json_array_foreach (vals, j, x)
                        if (json_is_number(x) && isfinite(json_number_value(x))) {
                                sum += json_number_value(x);
                                k++;
                        }
                if (k == 0)
                        continue;
                mean = sum / (double)k;
                json_array_foreach (vals, j, x)
                        if (json_is_number(x) && isfinite(json_number_value(x)))
                                sq += (json_number_value(x) - mean) * (json_number_value(x) - mean);
                *ret_value = mean;
                *ret_sd = k > 1 ? sqrt(sq / (double)(k - 1)) : NAN;
                return 0;
        }
        return -ENOENT;
}

static json_t *num(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

static double mean_range(const double *v, size_t from, size_t to)
{
        double s = 0;

        for (size_t i = from; i < to; i++)
                s += v[i];
        return to > from ? s / (double)(to - from) : NAN;
}

/* "tg32 fell 6.1 % between commits A and B (n=5 runs before, 4 after, p=0.003)" */
static char *cp_summary(const char *metric, const char *a, const char *b, double pct, size_t nb, size_t na,
                        double p)
{
        return xasprintf("%s %s %.1f %% between commits %.12s and %.12s (n=%zu runs before, %zu after, p=%.3f)",
                         metric, pct < 0 ? "fell" : "rose", fabs(pct), strna(a), strna(b), nb, na, p);
}

static json_t *change_points_json(json_t *series, const double *v, size_t n, const struct mx_cp *cp, size_t ncp,
                                  const char *metric)
{
        json_t *out = json_array();

        for (size_t c = 0; c < ncp; c++) {
                size_t from = c ? cp[c - 1].at : 0, to = c + 1 < ncp ? cp[c + 1].at : n, at = cp[c].at;
                double mb = mean_range(v, from, at), ma = mean_range(v, at, to), pct = (ma - mb) / mb * 100;
                const char *a = json_string_value(json_object_get(json_array_get(series, at - 1), "commit"));
                const char *b = json_string_value(json_object_get(json_array_get(series, at), "commit"));
                _cleanup_free_ char *text = cp_summary(metric, a, b, pct, at - from, to - at, cp[c].p);

                json_array_append_new(out, json_pack("{s:I,s:s?,s:s?,s:o,s:o,s:o,s:I,s:I,s:f,s:f,s:s}", "index",
                                                     (json_int_t)at, "before", a, "after", b, "mean_before",
                                                     num(mb), "mean_after", num(ma), "change_pct", num(pct),
                                                     "n_before", (json_int_t)(at - from), "n_after",
                                                     (json_int_t)(to - at), "p", cp[c].p, "q", cp[c].q,
                                                     "summary", text));
        }
        return out;
}

int mx_cp_history_json(json_t *points, const char *metric, const struct mx_cp_opts *o, json_t **ret)
{
        _cleanup_json_ json_t *series = json_array();
        _cleanup_free_ double *v = NULL;
        _cleanup_free_ size_t *group = NULL;
        _cleanup_free_ struct mx_cp *cp = NULL;
        struct mx_cp_stats st;
        size_t n = 0, ncp = 0, i;
        json_t *pt;
        int r;

        if (!json_is_array(points) || !metric)
                return -EINVAL;
        v = xmalloc((json_array_size(points) + 1) * sizeof(double));
        group = xmalloc((json_array_size(points) + 1) * sizeof(size_t));
        json_array_foreach (points, i, pt) {
                const char *commit = json_string_value(json_object_get(pt, "commit"));
                double value, sd;

                if (mx_cp_metric(json_object_get(pt, "l4"), metric, &value, &sd) < 0)
                        continue;
                group[n] = n == 0 ? 0
                                  : group[n - 1] + !streq_ptr(commit, json_string_value(json_object_get(
                                                                              json_array_get(series, n - 1), "commit")));
                v[n++] = value;
                json_array_append_new(series, json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?,s:o,s:o}", "commit",
                                                        json_object_get(pt, "commit"), "committed_at",
                                                        json_object_get(pt, "committed_at"), "run",
                                                        json_object_get(pt, "run"), "attempt",
                                                        json_object_get(pt, "attempt"), "started_at",
                                                        json_object_get(pt, "started_at"), "value", num(value),
                                                        "sd", num(sd)));
        }
        r = mx_changepoints(v, group, n, o, &cp, &ncp, &st);
        if (r < 0)
                return r;
        *ret = json_pack("{s:s,s:O,s:o,s:I,s:I}", "metric", metric, "series", series, "change_points",
                         change_points_json(series, v, n, cp, ncp, metric), "untested_segments",
                         (json_int_t)st.untested, "work", (json_int_t)st.work);
        return 0;
}
