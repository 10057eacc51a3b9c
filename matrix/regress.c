/* SPDX-License-Identifier: MIT */
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
                .memory_max_rise_gib = 2,
                .alpha = 0.05,
                .rule = MX_REGRESS_WELCH,
        };
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

/* The p-th percentile by linear interpolation (NumPy's default), as L4 computes its own. */
static double percentile(const double *v, size_t n, double p)
{
        _cleanup_free_ double *s = NULL;
        double rank, lo;
        size_t i;

        if (n == 0)
                return NAN;
        s = xreallocarray(NULL, n, sizeof(double));
        memcpy(s, v, n * sizeof(double));
        qsort(s, n, sizeof(double), cmp_double);
        rank = p / 100 * (double)(n - 1);
        lo = floor(rank);
        i = (size_t)lo;
        if (i + 1 >= n)
                return s[n - 1];
        return s[i] + (rank - lo) * (s[i + 1] - s[i]);
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
 * Is "a is below b" significant under the rule? *ret_p is the p-value
 * (welch) or NAN; *why says how it was decided. false with fewer than 2 values on a side.
 */
static bool significant_less(const struct mx_regress_opts *o, const struct sample *a, const struct sample *b,
                             double *ret_p, char **why)
{
        double alo, ahi, blo, bhi;

        *ret_p = NAN;
        if (a->n < 2 || b->n < 2) {
                *why = xasprintf("fewer than 2 runs on a side (%zu, %zu): no test, not called a regression",
                                 a->n, b->n);
                return false;
        }
        if (o->rule == MX_REGRESS_WELCH) {
                *ret_p = mx_welch_p_less(a->v, a->n, b->v, b->n);
                *why = xasprintf("welch p=%.3g %s %g", *ret_p, *ret_p < o->alpha ? "<" : ">=", o->alpha);
                return *ret_p < o->alpha;
        }
        interval(a->v, a->n, &alo, &ahi);
        interval(b->v, b->n, &blo, &bhi);
        *why = xasprintf("95 %% intervals [%.4g, %.4g] and [%.4g, %.4g] %s", alo, ahi, blo, bhi,
                         ahi < blo ? "do not overlap" : "overlap");
        return ahi < blo;
}

struct report {
        json_t *checks, *regressions;
        char *rule; /* of the first regression */
        unsigned compared;
};

static void add_check(struct report *r, json_t *check, bool regression, const char *rule,
                      const char *summary)
{
        json_object_set_new(check, "regression", json_boolean(regression));
        json_object_set_new(check, "rule", json_string(rule));
        json_array_append_new(r->checks, check);
        r->compared++;
        if (!regression)
                return;
        json_array_append_new(r->regressions, json_string(summary));
        if (!r->rule)
                r->rule = xstrdup(rule);
}

static json_t *num(double v)
{
        return isfinite(v) ? json_real(v) : json_null();
}

static json_t *find_row(json_t *doc, const char *test)
{
        json_t *row;
        size_t i;

        json_array_foreach (json_object_get(doc, "tests"), i, row)
                if (streq_ptr(json_string_value(json_object_get(row, "test")), test))
                        return row;
        return NULL;
}

/* One llama-benchy row: slower by more than the threshold, and significantly so. */
static void check_row(struct report *r, json_t *row, json_t *refs, const struct mx_regress_opts *o)
{
        const char *test = json_string_value(json_object_get(row, "test"));
        struct sample cur = {}, ref = {};
        _cleanup_free_ char *why = NULL, *rule = NULL, *summary = NULL;
        double mc, mr, delta, p;
        bool sig, beyond;
        json_t *doc;
        size_t i;

        sample_add_json(&cur, json_object_get(json_object_get(row, "tps"), "values"));
        json_array_foreach (refs, i, doc) {
                json_t *rr = find_row(doc, test);

                if (rr)
                        sample_add_json(&ref, json_object_get(json_object_get(rr, "tps"), "values"));
        }
        if (cur.n == 0 || ref.n == 0)
                goto done;
        mc = mean_of(cur.v, cur.n);
        mr = mean_of(ref.v, ref.n);
        delta = mr > 0 ? (mc - mr) / mr * 100 : NAN;
        beyond = delta < -o->perf_max_drop_pct;
        sig = significant_less(o, &cur, &ref, &p, &why);
        rule = xasprintf("%s and %+.1f %% %s -%g %%", why, delta, beyond ? "<" : ">=", o->perf_max_drop_pct);
        summary = xasprintf("%s %.4g t/s vs %.4g t/s (%+.1f %%; %s)", test, mc, mr, delta, why);
        add_check(r,
                  json_pack("{s:s,s:o,s:o,s:o,s:[I,I],s:o,s:b,s:b}", "metric", test, "current", num(mc),
                            "reference", num(mr), "delta_pct", num(delta), "n", (json_int_t)cur.n,
                            (json_int_t)ref.n, "p", num(p), "significant", sig, "beyond", beyond),
                  sig && beyond, rule, summary);
done:
        sample_done(&cur);
        sample_done(&ref);
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

/* TTFT p99 higher by more than the threshold, and the TTFT significantly higher. */
static void check_ttft(struct report *r, json_t *cur_doc, json_t *refs, const struct mx_regress_opts *o)
{
        struct sample cur = {}, ref = {};
        _cleanup_free_ char *why = NULL, *rule = NULL, *summary = NULL;
        double pc, pr, delta, p;
        bool sig, beyond;
        json_t *doc;
        size_t i;

        ttft_values(cur_doc, &cur);
        json_array_foreach (refs, i, doc)
                ttft_values(doc, &ref);
        if (cur.n == 0 || ref.n == 0)
                goto done;
        pc = percentile(cur.v, cur.n, 99);
        pr = percentile(ref.v, ref.n, 99);
        delta = pr > 0 ? (pc - pr) / pr * 100 : NAN;
        beyond = delta > o->ttft_p99_max_rise_pct;
        /* the reference below the current one: the current TTFT is higher */
        sig = significant_less(o, &ref, &cur, &p, &why);
        rule = xasprintf("%s on the TTFT samples and p99 %+.1f %% %s +%g %%", why, delta,
                         beyond ? ">" : "<=", o->ttft_p99_max_rise_pct);
        summary = xasprintf("TTFT p99 %.4g ms vs %.4g ms (%+.1f %%; %s)", pc, pr, delta, why);
        add_check(r,
                  json_pack("{s:s,s:o,s:o,s:o,s:[I,I],s:o,s:b,s:b}", "metric", "ttft_p99_ms", "current",
                            num(pc), "reference", num(pr), "delta_pct", num(delta), "n", (json_int_t)cur.n,
                            (json_int_t)ref.n, "p", num(p), "significant", sig, "beyond", beyond),
                  sig && beyond, rule, summary);
done:
        sample_done(&cur);
        sample_done(&ref);
}

/* A memory summary's figure kind: gpu, system or pss (L4 before memory kinds named host PSS "server"). */
static const char *mem_figure(json_t *mem)
{
        const char *f = json_string_value(json_object_get(mem, "figure"));

        return streq_ptr(f, "server") ? "pss" : f;
}

/* The memory peak higher than the largest reference peak by more than the threshold. */
static void check_memory(struct report *r, json_t *cur_doc, json_t *refs, const struct mx_regress_opts *o)
{
        json_t *mem = json_object_get(cur_doc, "memory"), *doc;
        const char *figure = mem_figure(mem);
        json_int_t cur = json_integer_value(json_object_get(mem, "peak")), ref = -1;
        _cleanup_free_ char *rule = NULL, *summary = NULL;
        double delta;
        bool beyond;
        size_t i, n = 0;

        if (!figure || !json_is_integer(json_object_get(mem, "peak")))
                return;
        json_array_foreach (refs, i, doc) {
                json_t *m = json_object_get(doc, "memory");

                if (!streq_ptr(mem_figure(m), figure) ||
                    !json_is_integer(json_object_get(m, "peak")))
                        continue;
                ref = MX_MAX(ref, json_integer_value(json_object_get(m, "peak")));
                n++;
        }
        if (ref < 0)
                return;
        delta = (double)(cur - ref) / (double)(1 << 30);
        beyond = delta > o->memory_max_rise_gib;
        rule = xasprintf("peak %+.2f GiB %s +%g GiB over the largest reference peak (one peak per run: the "
                         "threshold decides)",
                         delta, beyond ? ">" : "<=", o->memory_max_rise_gib);
        summary = xasprintf("memory peak %+.2f GiB (%s)", delta, figure);
        add_check(r,
                  json_pack("{s:s,s:I,s:I,s:o,s:[i,I],s:n,s:b,s:b,s:s}", "metric", "memory_peak", "current",
                            cur, "reference", ref, "delta_gib", num(delta), "n", 1, (json_int_t)n, "p",
                            "significant", beyond, "beyond", beyond, "figure", figure),
                  beyond, rule, summary);
}

json_t *mx_regress_compare(json_t *cur, json_t *refs, const struct mx_regress_opts *o)
{
        struct report r = {.checks = json_array(), .regressions = json_array()};
        json_t *row, *out;
        size_t i;

        json_array_foreach (json_object_get(cur, "tests"), i, row)
                check_row(&r, row, refs, o);
        check_ttft(&r, cur, refs, o);
        check_memory(&r, cur, refs, o);
        out = json_pack("{s:b,s:o,s:o,s:I,s:s,s:s}", "regression", r.rule != NULL, "checks", r.checks,
                        "regressions", r.regressions, "compared", (json_int_t)r.compared, "test",
                        mx_regress_rule_to_string(o->rule), "rule",
                        r.rule            ? r.rule
                        : r.compared == 0 ? "nothing to compare: no row, TTFT or memory figure in common"
                                          : "no check is both significant and beyond its threshold");
        free(r.rule);
        return out;
}
