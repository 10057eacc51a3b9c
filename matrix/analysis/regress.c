/* SPDX-License-Identifier: MIT */
/* L5's comparison of L4 results, one value per server start: the tests and their calls (regress.h). */
#include "regress.h"

#include <math.h>
#include <stdlib.h>

static const char *const rule_names[_MX_REGRESS_RULE_MAX] = {
        [MX_REGRESS_WELCH] = "welch",
        [MX_REGRESS_INTERVALS] = "intervals",
};

const char *mx_regress_rule_to_string(enum mx_regress_rule r)
{
        return r >= 0 && r < _MX_REGRESS_RULE_MAX ? rule_names[r] : NULL;
}

enum mx_regress_rule mx_regress_rule_from_string(const char *s)
{
        for (int i = 0; s && i < _MX_REGRESS_RULE_MAX; i++)
                if (streq(s, rule_names[i]))
                        return (enum mx_regress_rule)i;
        return _MX_REGRESS_RULE_INVALID;
}

void mx_regress_opts_defaults(struct mx_regress_opts *o)
{
        *o = (struct mx_regress_opts){
                .perf_max_drop_pct = 5,
                .ttft_p99_max_rise_pct = 3,
                .memory_max_rise_gb = 1,
                .alpha = 0.05,
                .alpha_same = 0.2,
                .rule = MX_REGRESS_WELCH,
                .primary = "tg32",
        };
}

static const char *const call_names[_MX_REGRESS_CALL_MAX] = {
        [MX_REGRESS_SAME] = "no regression",
        [MX_REGRESS_DIFFERENT] = "regression",
        [MX_REGRESS_UNKNOWN] = "unknown",
};

const char *mx_regress_call_to_string(enum mx_regress_call c)
{
        return c < _MX_REGRESS_CALL_MAX ? call_names[c] : NULL;
}

/* ---- Student's t ---- */

/*
 * The continued fraction of the regularised incomplete beta function
 * I_x(a, b), evaluated by the modified Lentz method; it converges fast for
 * x < (a + 1) / (a + b + 2), the caller uses the symmetry otherwise.
 */
static double beta_cf(double a, double b, double x)
{
        const double tiny = 1e-300, eps = 1e-15;
        double c = 1, d = 1 - (a + b) * x / (a + 1), h;

        if (fabs(d) < tiny)
                d = tiny;
        d = 1 / d;
        h = d;
        for (int m = 1; m <= 500; m++) {
                double m2 = 2.0 * m, num, del;

                /* even step */
                num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
                d = 1 + num * d;
                d = fabs(d) < tiny ? tiny : d;
                c = 1 + num / c;
                c = fabs(c) < tiny ? tiny : c;
                d = 1 / d;
                h *= d * c;
                /* odd step */
                num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
                d = 1 + num * d;
                d = fabs(d) < tiny ? tiny : d;
                c = 1 + num / c;
                c = fabs(c) < tiny ? tiny : c;
                d = 1 / d;
                del = d * c;
                h *= del;
                if (fabs(del - 1) < eps)
                        break;
        }
        return h;
}

static double incomplete_beta(double a, double b, double x)
{
        double front;

        if (x <= 0)
                return 0;
        if (x >= 1)
                return 1;
        front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
        if (x < (a + 1) / (a + b + 2))
                return front * beta_cf(a, b, x) / a;
        return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double mx_student_t_cdf(double t, double df)
{
        double tail;

        if (isnan(t) || !(df > 0))
                return NAN;
        if (isinf(t))
                return t > 0 ? 1 : 0;
        /* P(|T| > |t|) = I_{df/(df+t^2)}(df/2, 1/2) */
        tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
        return t < 0 ? tail : 1 - tail;
}

double mx_student_t_q975(double df)
{
        double lo = 0, hi = 1000;

        if (!(df > 0))
                return NAN;
        for (int i = 0; i < 200; i++) {
                double mid = (lo + hi) / 2;

                if (mx_student_t_cdf(mid, df) < 0.975)
                        lo = mid;
                else
                        hi = mid;
        }
        return (lo + hi) / 2;
}

/* ---- samples ---- */

struct sample {
        double *v;
        size_t n, cap;
};

static void sample_add(struct sample *s, double v)
{
        if (!isfinite(v))
                return;
        MX_GROW(s->v, s->cap, s->n + 1);
        s->v[s->n++] = v;
}

static void sample_add_json(struct sample *s, json_t *values)
{
        json_t *e;
        size_t i;

        json_array_foreach (values, i, e)
                if (json_is_number(e))
                        sample_add(s, json_number_value(e));
}

static void sample_done(struct sample *s)
{
        free(s->v);
        *s = (struct sample){};
}

static double mean_of(const double *v, size_t n)
{
        double sum = 0;

        for (size_t i = 0; i < n; i++)
                sum += v[i];
        return n ? sum / (double)n : NAN;
}

/* Sample variance (ddof 1); NAN below two values. */
static double var_of(const double *v, size_t n)
{
        double m = mean_of(v, n), ss = 0;

        if (n < 2)
                return NAN;
        for (size_t i = 0; i < n; i++)
                ss += (v[i] - m) * (v[i] - m);
        return ss / (double)(n - 1);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double percentile_sorted(const double *s, size_t n, double p)
{
        double rank, lo;
        size_t i;

        if (n == 0)
                return NAN;
        rank = p / 100 * (double)(n - 1);
        lo = floor(rank);
        i = (size_t)lo;
        if (i + 1 >= n)
                return s[n - 1];
        return s[i] + (rank - lo) * (s[i + 1] - s[i]);
}

double mx_regress_percentile(const double *v, size_t n, double p)
{
        _cleanup_free_ double *s = NULL;

        if (n == 0)
                return NAN;
        s = xreallocarray(NULL, n, sizeof(double));
        memcpy(s, v, n * sizeof(double));
        qsort(s, n, sizeof(double), cmp_double);
        return percentile_sorted(s, n, p);
}

double mx_welch_p_less(const double *a, size_t na, const double *b, size_t nb)
{
        double ma, mb, va, vb, se2, t, df;

        if (na < 2 || nb < 2)
                return NAN;
        ma = mean_of(a, na);
        mb = mean_of(b, nb);
        va = var_of(a, na) / (double)na;
        vb = var_of(b, nb) / (double)nb;
        se2 = va + vb;
        if (se2 <= 0)
                return ma < mb ? 0 : 1;
        t = (ma - mb) / sqrt(se2);
        /* Welch-Satterthwaite degrees of freedom */
        df = se2 * se2 / (va * va / (double)(na - 1) + vb * vb / (double)(nb - 1));
        return mx_student_t_cdf(t, df);
}

/* The 95 % confidence interval of a sample's mean. */
static void interval(const double *v, size_t n, double *lo, double *hi)
{
        double m = mean_of(v, n), half = mx_student_t_q975((double)n - 1) * sqrt(var_of(v, n) / (double)n);

        *lo = m - half;
        *hi = m + half;
}

/*
 * The within-start test of "a is below b" on per-request values: the
 * one-sided p (welch; intervals: 0 when the 95 % intervals do not overlap,
 * else 1), NAN with fewer than 2 values on a side; *why says what it found.
 */
static double within_p_less(const struct mx_regress_opts *o, const struct sample *a, const struct sample *b,
                            char **why)
{
        double alo, ahi, blo, bhi, p;

        if (a->n < 2 || b->n < 2) {
                *why = xasprintf("no within-start test (%zu, %zu values)", a->n, b->n);
                return NAN;
        }
        if (o->rule == MX_REGRESS_WELCH) {
                p = mx_welch_p_less(a->v, a->n, b->v, b->n);
                *why = xasprintf("within-start welch p=%.3g", p);
                return p;
        }
        interval(a->v, a->n, &alo, &ahi);
        interval(b->v, b->n, &blo, &bhi);
        *why = xasprintf("within-start 95 %% intervals [%.4g, %.4g] and [%.4g, %.4g] %s", alo, ahi, blo, bhi,
                         ahi < blo ? "do not overlap" : "overlap");
        return ahi < blo ? 0 : 1;
}

/* ---- quantiles ---- */

/* xorshift64*: a fixed-seed generator, so that a bootstrap gives the same answer for the same data. */
static double rng_uniform(uint64_t *st)
{
        *st ^= *st >> 12;
        *st ^= *st << 25;
        *st ^= *st >> 27;
        return (double)((*st * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static double resample_quantile(const double *v, size_t n, double q, double *scratch, uint64_t *st)
{
        for (size_t i = 0; i < n; i++)
                scratch[i] = v[(size_t)(rng_uniform(st) * (double)n) % n];
        qsort(scratch, n, sizeof(double), cmp_double);
        return percentile_sorted(scratch, n, q);
}

#define BOOTSTRAP_RESAMPLES 2000

double mx_quantile_rise_p(const double *a, size_t na, const double *b, size_t nb, double q, double rise_pct,
                          double *ret_lo)
{
        _cleanup_free_ double *sa = NULL, *sb = NULL, *rel = NULL;
        uint64_t st = 0x9E3779B97F4A7C15ULL ^ (uint64_t)na * 1000003u ^ (uint64_t)nb;
        size_t not_above = 0;

        *ret_lo = NAN;
        if (na == 0 || nb == 0)
                return NAN;
        sa = xreallocarray(NULL, na, sizeof(double));
        sb = xreallocarray(NULL, nb, sizeof(double));
        rel = xreallocarray(NULL, BOOTSTRAP_RESAMPLES, sizeof(double));
        for (size_t i = 0; i < BOOTSTRAP_RESAMPLES; i++) {
                double qa = resample_quantile(a, na, q, sa, &st), qb = resample_quantile(b, nb, q, sb, &st);

                rel[i] = qb > 0 ? (qa - qb) / qb * 100 : NAN;
                if (!(rel[i] > rise_pct))
                        not_above++;
        }
        qsort(rel, BOOTSTRAP_RESAMPLES, sizeof(double), cmp_double);
        *ret_lo = percentile_sorted(rel, BOOTSTRAP_RESAMPLES, 5);
        /* the share of resamples at or below the threshold, never 0: a bootstrap cannot show more */
        return MX_MAX((double)not_above, 1.0) / BOOTSTRAP_RESAMPLES;
}

/* ---- the decision ---- */

/* The worsening of value v against reference mean mr: percent (relative) or units, positive = worse. */
static double worsening(const struct mx_regress_input *in, double v, double mr)
{
        double d = in->worse * (v - mr);

        return in->relative ? d / mr * 100 : d;
}

/* More starts per side likely to bring |delta - threshold| beyond the one-sided t bound. */
static unsigned more_starts(double s, double gap, size_t n)
{
        double need;

        if (!(s > 0) || !(fabs(gap) > 0))
                return 1;
        /* n per side with 1.7 * s * sqrt(2 / n) <= |gap| */
        need = 2 * (1.7 * s / gap) * (1.7 * s / gap);
        if (need > 99)
                return 99;
        return need > (double)n ? (unsigned)ceil(need - (double)n) : 1;
}

void mx_regress_decide(const struct mx_regress_input *in, double alpha_reg, double alpha_same,
                       struct mx_regress_decision *out)
{
        double mr = mean_of(in->ref, in->nref), ss = 0, s, t, mc;
        size_t df;
        bool beyond, within_sig = in->p_within < alpha_reg;

        *out = (struct mx_regress_decision){.call = MX_REGRESS_UNKNOWN, .se = NAN, .df = 0,
                                            .p_beyond = NAN, .p_inside = NAN};
        if (in->ncur == 0 || in->nref == 0 || (in->relative && !(mr > 0))) {
                snprintf(out->rule, sizeof(out->rule), "nothing to compare");
                out->call = MX_REGRESS_SAME;
                return;
        }
        mc = mean_of(in->cur, in->ncur);
        out->delta = worsening(in, mc, mr);
        beyond = out->delta > in->threshold;
        df = in->ncur + in->nref - 2;
        if (df == 0) {
                /* one start each side: no spread between starts is known */
                if (!beyond && !within_sig) {
                        out->call = MX_REGRESS_SAME;
                        snprintf(out->rule, sizeof(out->rule),
                                 "1 start each side: threshold only (%+.2f <= %g, not significant within the "
                                 "start)",
                                 out->delta, in->threshold);
                } else if (in->can_confirm) {
                        out->more = 1;
                        snprintf(out->rule, sizeof(out->rule),
                                 "1 start each side, suspicious (%+.2f %s %g%s): needs confirmation starts",
                                 out->delta, beyond ? ">" : "<=", in->threshold,
                                 within_sig ? ", significant within the start" : "");
                } else {
                        out->call = beyond && within_sig ? MX_REGRESS_DIFFERENT : MX_REGRESS_SAME;
                        snprintf(out->rule, sizeof(out->rule),
                                 "1 start each side: threshold and within-start test only (%+.2f %s %g, "
                                 "within-start p=%.3g %s %g; the spread between starts is unknown)",
                                 out->delta, beyond ? ">" : "<=", in->threshold, in->p_within,
                                 within_sig ? "<" : ">=", alpha_reg);
                }
                return;
        }
        /* the pooled spread between starts, in the delta's units */
        for (size_t i = 0; i < in->ncur; i++) {
                double d = worsening(in, in->cur[i], mr) - out->delta;
                ss += d * d;
        }
        for (size_t i = 0; i < in->nref; i++) {
                double d = worsening(in, in->ref[i], mr);
                ss += d * d;
        }
        s = sqrt(ss / (double)df);
        out->df = (double)df;
        out->se = s * sqrt(1.0 / (double)in->ncur + 1.0 / (double)in->nref);
        if (out->se > 0) {
                t = (out->delta - in->threshold) / out->se;
                out->p_beyond = 1 - mx_student_t_cdf(t, out->df);
                out->p_inside = mx_student_t_cdf(t, out->df);
        } else {
                out->p_beyond = beyond ? 0 : 1;
                out->p_inside = beyond ? 1 : 0;
        }
        if (out->p_beyond < alpha_reg)
                out->call = MX_REGRESS_DIFFERENT;
        else if (out->p_inside < alpha_same)
                out->call = MX_REGRESS_SAME;
        else
                out->more = more_starts(s, out->delta - in->threshold, MX_MIN(in->ncur, in->nref));
        snprintf(out->rule, sizeof(out->rule),
                 "%zu vs %zu starts: %+.2f (se %.2g, df %zu) against %g: p(beyond)=%.3g %s %g, "
                 "p(within)=%.3g %s %g",
                 in->ncur, in->nref, out->delta, out->se, df, in->threshold, out->p_beyond,
                 out->p_beyond < alpha_reg ? "<" : ">=", alpha_reg, out->p_inside,
                 out->p_inside < alpha_same ? "<" : ">=", alpha_same);
}

/* ---- the checks ---- */

struct check {
        json_t *obj;
        struct sample cur, ref; /* per-start summaries */
        struct mx_regress_input in;
        struct mx_regress_decision dec;
        char *what; /* the summary's first words: "tg32 54.1 t/s vs 60.2 t/s" */
        char *within_why;
        double p_sort;  /* for Holm */
        bool primary;
};

struct report {
        struct check *v;
        size_t n, cap;
};

static json_t *num(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

static const char *const row_fields[] = {"kind", "pp", "tg", "depth", "concurrency"};

static json_t *field(json_t *row, const char *k)
{
        return json_object_get(row, k) ?: json_null();
}

/*
 * Rows pair by (kind, pp, tg, depth, concurrency); where a side lacks one of these fields (a document
 * written without them) the test names must agree as well.
 */
static bool row_pairs(json_t *a, json_t *b)
{
        bool complete = true;

        for (size_t i = 0; i < ELEMENTSOF(row_fields); i++) {
                json_t *x = json_object_get(a, row_fields[i]), *y = json_object_get(b, row_fields[i]);

                if (x && y && !json_equal(x, y))
                        return false;
                complete &= x && y;
        }
        return complete || streq_ptr(json_string_value(json_object_get(a, "test")),
                                     json_string_value(json_object_get(b, "test")));
}

static json_t *find_row(json_t *doc, json_t *like)
{
        json_t *row;
        size_t i;

        json_array_foreach (json_object_get(doc, "tests"), i, row)
                if (row_pairs(row, like))
                        return row;
        return NULL;
}

/* Does row match the primary spec "tg32", "pp2048" or "tg32@d4096" (depth 0, concurrency 1 when absent)? */
static bool row_is_primary(json_t *row, const char *spec)
{
        const char *kind = json_string_value(json_object_get(row, "kind"));
        long long n = 0, depth = 0;
        char k[16];
        int used = 0;

        if (!spec || !kind || sscanf(spec, "%15[a-z_]%lld%n", k, &n, &used) < 2)
                return false;
        /* a row without its fields: by name */
        if (!json_object_get(row, "tg") && !json_object_get(row, "pp"))
                return streq_ptr(json_string_value(json_object_get(row, "test")), spec);
        if (spec[used] && sscanf(spec + used, " @ d%lld", &depth) != 1)
                return false;
        return streq(k, kind) && json_integer_value(field(row, streq(k, "tg") ? "tg" : "pp")) == n &&
               json_integer_value(field(row, "depth")) == depth &&
               (!json_object_get(row, "concurrency") || json_integer_value(json_object_get(row, "concurrency")) <= 1);
}

bool mx_regress_row_is(json_t *row, const char *spec)
{
        return row_is_primary(row, spec);
}

static struct check *check_new(struct report *r)
{
        MX_GROW(r->v, r->cap, r->n + 1);
        r->v[r->n] = (struct check){};
        return &r->v[r->n++];
}

/* One side's starts (docs) of a row: each start's mean t/s into starts, every request's t/s into reqs. */
static void side_add(struct sample *starts, struct sample *reqs, json_t *docs, json_t *row)
{
        json_t *doc, *rr;
        size_t i;

        json_array_foreach (docs, i, doc)
                if ((rr = find_row(doc, row))) {
                        struct sample one = {};

                        sample_add_json(&one, json_object_get(json_object_get(rr, "tps"), "values"));
                        sample_add(starts, mean_of(one.v, one.n));
                        sample_add_json(reqs, json_object_get(json_object_get(rr, "tps"), "values"));
                        sample_done(&one);
                }
}

/* One llama-benchy row: one mean t/s per start on each side, the requests for the within-start test. */
static void check_row(struct report *r, json_t *row, json_t *curs, json_t *refs,
                      const struct mx_regress_opts *o)
{
        struct sample cur_req = {}, ref_req = {};
        struct check *c;
        json_t *obj;

        c = check_new(r);
        side_add(&c->cur, &cur_req, curs, row);
        side_add(&c->ref, &ref_req, refs, row);
        if (c->cur.n == 0 || c->ref.n == 0) {
                sample_done(&c->cur);
                sample_done(&c->ref);
                r->n--;
                goto done;
        }
        c->primary = row_is_primary(row, o->primary);
        c->in = (struct mx_regress_input){.threshold = o->perf_max_drop_pct, .relative = true, .worse = -1};
        c->in.p_within = within_p_less(o, &cur_req, &ref_req, &c->within_why);
        c->what = xasprintf("%s %.4g t/s vs %.4g t/s", strna(json_string_value(json_object_get(row, "test"))),
                            mean_of(c->cur.v, c->cur.n), mean_of(c->ref.v, c->ref.n));
        obj = json_pack("{s:O?,s:o,s:o,s:[I,I]}", "metric", json_object_get(row, "test"), "current",
                        num(mean_of(c->cur.v, c->cur.n)), "reference", num(mean_of(c->ref.v, c->ref.n)), "n",
                        (json_int_t)cur_req.n, (json_int_t)ref_req.n);
        for (size_t k = 0; k < ELEMENTSOF(row_fields); k++)
                json_object_set(obj, row_fields[k], field(row, row_fields[k]));
        c->obj = obj;
done:
        sample_done(&cur_req);
        sample_done(&ref_req);
}

/* The TTFT values of a document's depth-0 tests (one per request). */
static void ttft_values(json_t *doc, struct sample *s)
{
        json_t *sv;
        size_t i;

        json_array_foreach (json_object_get(doc, "serving"), i, sv)
                if (json_integer_value(json_object_get(sv, "depth")) == 0)
                        sample_add_json(s, json_object_get(json_object_get(sv, "ttft_ms"), "values"));
}

/* What a p99 of n requests rests on. */
static char *tail_note(size_t n)
{
        if (n < 2)
                return xasprintf("p99 of %zu request%s: the value itself", n, n == 1 ? "" : "s");
        if (n < 101)
                return xasprintf("p99 of %zu requests lies between the two largest (mostly the maximum); a "
                                 "99 %%-confidence p99 needs >= 459 (MLPerf)",
                                 n);
        if (n < 459)
                return xasprintf("p99 of %zu requests; a 99 %%-confidence p99 needs >= 459 (MLPerf)", n);
        return xasprintf("p99 of %zu requests", n);
}

/* TTFT p99: one p99 per start on each side; within the start, a bootstrap interval of the p99 difference. */
static void check_ttft(struct report *r, json_t *curs, json_t *refs, const struct mx_regress_opts *o)
{
        struct sample cur_req = {}, ref_req = {};
        _cleanup_free_ char *tail = NULL;
        struct check *c = check_new(r);
        double lo;
        json_t *doc;
        size_t i;

        json_array_foreach (curs, i, doc) {
                struct sample one = {};

                ttft_values(doc, &one);
                if (one.n)
                        sample_add(&c->cur, mx_regress_percentile(one.v, one.n, 99));
                ttft_values(doc, &cur_req);
                sample_done(&one);
        }
        json_array_foreach (refs, i, doc) {
                struct sample one = {};

                ttft_values(doc, &one);
                if (one.n)
                        sample_add(&c->ref, mx_regress_percentile(one.v, one.n, 99));
                ttft_values(doc, &ref_req);
                sample_done(&one);
        }
        if (c->cur.n == 0 || c->ref.n == 0) {
                sample_done(&c->cur);
                sample_done(&c->ref);
                r->n--;
                goto done;
        }
        c->in = (struct mx_regress_input){.threshold = o->ttft_p99_max_rise_pct, .relative = true, .worse = 1};
        /* within the start: is the p99 higher by more than the threshold, beyond the bootstrap's doubt? */
        c->in.p_within = mx_quantile_rise_p(cur_req.v, cur_req.n, ref_req.v, ref_req.n, 99,
                                            o->ttft_p99_max_rise_pct, &lo);
        c->within_why = xasprintf("within-start bootstrap: p99 rise 95 %% lower bound %+.1f %%, p=%.3g", lo,
                                  c->in.p_within);
        tail = tail_note(MX_MIN(cur_req.n / MX_MAX(c->cur.n, (size_t)1), ref_req.n / MX_MAX(c->ref.n, (size_t)1)));
        c->what = xasprintf("TTFT p99 %.4g ms vs %.4g ms", mean_of(c->cur.v, c->cur.n),
                            mean_of(c->ref.v, c->ref.n));
        c->obj = json_pack("{s:s,s:o,s:o,s:[I,I],s:s}", "metric", "ttft_p99_ms", "current",
                           num(mean_of(c->cur.v, c->cur.n)), "reference", num(mean_of(c->ref.v, c->ref.n)),
                           "n", (json_int_t)cur_req.n, (json_int_t)ref_req.n, "tail", tail);
done:
        sample_done(&cur_req);
        sample_done(&ref_req);
}

/* A memory summary's figure kind: gpu, system or pss (L4 before memory kinds named host PSS "server"). */
static const char *mem_figure(json_t *mem)
{
        const char *f = json_string_value(json_object_get(mem, "figure"));

        return streq_ptr(f, "server") ? "pss" : f;
}

/* The memory peak in GB of each start with the same figure. */
static void memory_peaks(json_t *docs, const char *figure, struct sample *s)
{
        json_t *doc, *m;
        size_t i;

        json_array_foreach (docs, i, doc) {
                m = json_object_get(doc, "memory");
                if (streq_ptr(mem_figure(m), figure) &&
                    json_is_integer(json_object_get(m, "peak")))
                        sample_add(s, (double)json_integer_value(json_object_get(m, "peak")) / 1e9);
        }
}

/* The memory peak: one per start; no within-start test (a start has one peak). */
static void check_memory(struct report *r, json_t *curs, json_t *refs, const struct mx_regress_opts *o)
{
        json_t *mem = json_object_get(json_array_get(curs, 0), "memory");
        const char *figure = mem_figure(mem);
        struct check *c;

        if (!figure)
                return;
        c = check_new(r);
        memory_peaks(curs, figure, &c->cur);
        memory_peaks(refs, figure, &c->ref);
        if (c->cur.n == 0 || c->ref.n == 0) {
                sample_done(&c->cur);
                sample_done(&c->ref);
                r->n--;
                return;
        }
        /* one peak per start: beyond the threshold is all a single start can show */
        c->in = (struct mx_regress_input){.threshold = o->memory_max_rise_gb, .worse = 1};
        c->in.p_within = mean_of(c->cur.v, c->cur.n) - mean_of(c->ref.v, c->ref.n) > o->memory_max_rise_gb ? 0 : 1;
        c->within_why = xstrdup("one peak per start");
        c->what = xasprintf("memory peak %.2f GB vs %.2f GB (%s)", mean_of(c->cur.v, c->cur.n),
                            mean_of(c->ref.v, c->ref.n), figure);
        c->obj = json_pack("{s:s,s:o,s:o,s:s,s:s}", "metric", "memory_peak_gb", "current",
                           num(mean_of(c->cur.v, c->cur.n)), "reference", num(mean_of(c->ref.v, c->ref.n)),
                           "figure", figure, "unit", "GB (10^9 bytes)");
}

static int cmp_check_p(const void *a, const void *b)
{
        const struct check *x = *(struct check *const *)a, *y = *(struct check *const *)b;

        return (x->p_sort > y->p_sort) - (x->p_sort < y->p_sort);
}

/* The p a check is ranked by in Holm's procedure: between starts when known, else within the start. */
static double holm_p(struct check *c, const struct mx_regress_opts *o)
{
        struct mx_regress_decision d;
        struct mx_regress_input in = c->in;

        in.cur = c->cur.v, in.ncur = c->cur.n, in.ref = c->ref.v, in.nref = c->ref.n;
        in.can_confirm = o->can_confirm;
        mx_regress_decide(&in, o->alpha, o->alpha_same, &d);
        if (d.df > 0)
                return d.p_beyond;
        return d.delta > in.threshold && isfinite(in.p_within) ? in.p_within : 1;
}

/* Decide every check: the primary at alpha, the others at Holm's step-down levels. */
static void decide_all(struct report *r, const struct mx_regress_opts *o)
{
        _cleanup_free_ struct check **fam = xreallocarray(NULL, MX_MAX(r->n, (size_t)1), sizeof(*fam));
        size_t m = 0;
        bool stopped = false;

        for (size_t i = 0; i < r->n; i++) {
                struct check *c = &r->v[i];

                c->in.cur = c->cur.v, c->in.ncur = c->cur.n, c->in.ref = c->ref.v, c->in.nref = c->ref.n;
                c->in.can_confirm = o->can_confirm;
                if (c->primary) {
                        mx_regress_decide(&c->in, o->alpha, o->alpha_same, &c->dec);
                        json_object_set_new(c->obj, "alpha", json_real(o->alpha));
                        json_object_set_new(c->obj, "family", json_string("primary"));
                        continue;
                }
                c->p_sort = holm_p(c, o);
                fam[m++] = c;
        }
        qsort(fam, m, sizeof(*fam), cmp_check_p);
        for (size_t k = 0; k < m; k++) {
                double level = o->alpha / (double)(m - k);

                /* Holm: past the first check that is not rejected, none is */
                if (!(fam[k]->p_sort < level))
                        stopped = true;
                mx_regress_decide(&fam[k]->in, stopped ? 0 : level, o->alpha_same, &fam[k]->dec);
                json_object_set_new(fam[k]->obj, "alpha", json_real(level));
                json_object_set_new(fam[k]->obj, "family", json_string("holm"));
        }
}

static void check_finish(struct check *c, double alpha, json_t *checks, json_t *regressions, json_t *unknown)
{
        const struct mx_regress_decision *d = &c->dec;
        _cleanup_free_ char *rule = xasprintf("%s; %s", d->rule, c->within_why);
        _cleanup_free_ char *summary = NULL;

        json_object_set_new(c->obj, c->in.relative ? "delta_pct" : "delta_gb",
                            num(c->in.worse * d->delta));
        json_object_set_new(c->obj, "starts", json_pack("[I,I]", (json_int_t)c->cur.n, (json_int_t)c->ref.n));
        json_object_set_new(c->obj, "se", num(d->se));
        json_object_set_new(c->obj, "df", json_integer((json_int_t)d->df));
        json_object_set_new(c->obj, "p", num(d->p_beyond));
        json_object_set_new(c->obj, "p_within", num(c->in.p_within));
        json_object_set_new(c->obj, "significant", json_boolean(c->in.p_within < alpha));
        json_object_set_new(c->obj, "beyond", json_boolean(d->delta > c->in.threshold));
        json_object_set_new(c->obj, "decision", json_string(mx_regress_call_to_string(d->call)));
        json_object_set_new(c->obj, "regression", json_boolean(d->call == MX_REGRESS_DIFFERENT));
        json_object_set_new(c->obj, "rule", json_string(rule));
        if (d->call == MX_REGRESS_UNKNOWN)
                json_object_set_new(c->obj, "more_starts", json_integer(d->more));
        summary = xasprintf("%s (%+.1f %s; %s)", c->what, c->in.worse * d->delta, c->in.relative ? "%" : "GB",
                            d->rule);
        if (d->call == MX_REGRESS_DIFFERENT)
                json_array_append_new(regressions, json_string(summary));
        else if (d->call == MX_REGRESS_UNKNOWN)
                json_array_append_new(unknown, json_string(summary));
        json_array_append_new(checks, c->obj);
        c->obj = NULL;
}

json_t *mx_regress_compare(json_t *curs, json_t *refs, const struct mx_regress_opts *o)
{
        struct report r = {};
        json_t *checks = json_array(), *regressions = json_array(), *unknown = json_array(), *row;
        _cleanup_free_ char *rule = NULL;
        unsigned more = 0;
        size_t i;

        json_array_foreach (json_object_get(json_array_get(curs, 0), "tests"), i, row)
                check_row(&r, row, curs, refs, o);
        check_ttft(&r, curs, refs, o);
        check_memory(&r, curs, refs, o);
        decide_all(&r, o);
        for (i = 0; i < r.n; i++) {
                if (r.v[i].dec.call == MX_REGRESS_DIFFERENT && !rule)
                        rule = xasprintf("%s: %s", json_string_value(json_object_get(r.v[i].obj, "metric")),
                                         r.v[i].dec.rule);
                if (r.v[i].dec.call == MX_REGRESS_UNKNOWN)
                        more = MX_MAX(more, r.v[i].dec.more);
                check_finish(&r.v[i], o->alpha, checks, regressions, unknown);
                sample_done(&r.v[i].cur);
                sample_done(&r.v[i].ref);
                free(r.v[i].what);
                free(r.v[i].within_why);
        }
        free(r.v);
        return json_pack("{s:s,s:b,s:o,s:o,s:o,s:I,s:[I,I],s:I,s:s,s:s}", "decision",
                         json_array_size(regressions) ? "regression"
                         : json_array_size(unknown)   ? "unknown"
                                                      : "no regression",
                         "regression", json_array_size(regressions) > 0, "checks", checks, "regressions",
                         regressions, "unknown", unknown, "more_starts", (json_int_t)more, "starts",
                         (json_int_t)json_array_size(curs), (json_int_t)json_array_size(refs), "compared",
                         (json_int_t)json_array_size(checks), "test", mx_regress_rule_to_string(o->rule),
                         "rule",
                         rule                         ? rule
                         : json_array_size(unknown)   ? "undecided: more server starts would decide"
                         : json_array_size(checks) == 0 ? "nothing to compare: no row, TTFT or memory figure in common"
                                                        : "every check within its threshold");
}
