/* SPDX-License-Identifier: MIT */
/*
 * The decode profile: a profiler report's kernels by category per token, its diff against the
 * baseline, the decision rules judged.
 */
#include "dprof.h"

#include "jobruns.h"

#include <math.h>

struct kagg {
        const struct mx_profreport_kernel *k;
        size_t cat;
        int64_t ps;
};

struct cagg {
        int64_t ps;
        uint64_t calls, timed;
        size_t kernels;
};

/* The parser refuses a report whose times add up past MX_PROFREPORT_TIME_MAX_NS (1e18 ps), so neither this
 * llround() nor the int64_t sums of a report's kernels overflow. */
static int64_t kernel_ps(const struct mx_profreport_kernel *k)
{
        return k->n_timed > 0 && isfinite(k->total_ns) && k->total_ns > 0 &&
                               k->total_ns <= MX_PROFREPORT_TIME_MAX_NS
                       ? llround(k->total_ns * 1000.0)
                       : 0;
}

static double us(int64_t ps)
{
        return (double)ps / 1e6;
}

int mx_dprof_workload_check(json_t *w, char **reterr)
{
        json_t *t = json_object_get(w, "tokens");
        static const char *const ints[] = {"requests", "prompt_tokens", "output_tokens"};

        if (!json_is_object(w))
                return mx_reterr(reterr, -EINVAL, "the workload is not a JSON object");
        /* a token count: at least 1 (a fraction of a token would make every per-token figure infinite) */
        if (!json_is_number(t) || !(json_number_value(t) >= 1) || !isfinite(json_number_value(t)))
                return mx_reterr(reterr, -EINVAL, "the workload's \"tokens\" is not a count of at least 1");
        for (size_t i = 0; i < ELEMENTSOF(ints); i++) {
                json_t *v = json_object_get(w, ints[i]);

                if (v && !(json_is_integer(v) && json_integer_value(v) >= 0))
                        return mx_reterr(reterr, -EINVAL, "the workload's \"%s\" is not a count", ints[i]);
        }
        if (json_object_get(w, "which") && !json_is_string(json_object_get(w, "which")))
                return mx_reterr(reterr, -EINVAL, "the workload's \"which\" is not a string");
        return 0;
}

/* "decode tokens of 4 requests of prompt 2048, output 64" when the capture did not say which. */
static char *workload_which(json_t *w)
{
        const char *which = json_string_value(json_object_get(w, "which"));

        if (which)
                return xstrdup(which);
        return xasprintf("decode tokens of %" JSON_INTEGER_FORMAT
                         " request%s of prompt %" JSON_INTEGER_FORMAT ", output %" JSON_INTEGER_FORMAT,
                         json_integer_value(json_object_get(w, "requests")),
                         json_integer_value(json_object_get(w, "requests")) == 1 ? "" : "s",
                         json_integer_value(json_object_get(w, "prompt_tokens")),
                         json_integer_value(json_object_get(w, "output_tokens")));
}

static int by_ps_desc(const void *a, const void *b)
{
        const struct kagg *x = a, *y = b;

        if (x->ps != y->ps)
                return x->ps < y->ps ? 1 : -1;
        return strcmp(x->k->name, y->k->name);
}

static json_t *per_token(double v, double tokens)
{
        return tokens > 0 ? json_real(v / tokens) : json_null();
}

static json_t *kernel_json(const struct kagg *a, const struct mx_kcat *c, int64_t total, double tokens)
{
        return json_pack(
                "{s:s,s:s,s:I,s:f,s:o,s:f,s:o,s:o}", "name", a->k->name, "category", mx_kcat_name(c, a->cat),
                "calls", (json_int_t)a->k->instances, "total_us", us(a->ps), "avg_us",
                a->k->n_timed ? json_real(us(a->ps) / (double)a->k->n_timed) : json_null(), "time_pct",
                total > 0 ? 100.0 * (double)a->ps / (double)total : 0.0, "calls_per_token",
                per_token((double)a->k->instances, tokens), "us_per_token", per_token(us(a->ps), tokens));
}

json_t *mx_dprof_analyse(const struct mx_kcat *c, const struct mx_profreport *r, json_t *workload,
                         const char *no_workload_why)
{
        size_t nc = mx_kcat_count(c) + 1;
        _cleanup_free_ struct kagg *ks = xcalloc(MX_MAX(r->n_kernels, 1), sizeof(*ks));
        _cleanup_free_ struct cagg *cs = xcalloc(nc, sizeof(*cs));
        _cleanup_free_ char *which = NULL, *why = NULL;
        json_t *cats = json_array(), *other = json_array(), *top = json_array(), *o;
        int64_t total = 0, cat_total = 0;
        uint64_t timed = 0;
        double tokens = 0;

        if (workload && mx_dprof_workload_check(workload, &why) >= 0) {
                tokens = json_number_value(json_object_get(workload, "tokens"));
                which = workload_which(workload);
        } else if (!why)
                why = xstrdup(no_workload_why ?: "the capture declared no decode workload");
        for (size_t i = 0; i < r->n_kernels; i++) {
                const struct mx_profreport_kernel *k = &r->kernels[i];
                struct cagg *ca;

                ks[i] = (struct kagg){.k = k, .cat = mx_kcat_classify(c, k->name), .ps = kernel_ps(k)};
                ca = &cs[ks[i].cat];
                ca->ps += ks[i].ps;
                ca->calls += k->instances;
                ca->timed += k->n_timed;
                ca->kernels++;
                total += ks[i].ps;
                timed += k->n_timed;
        }
        for (size_t i = 0; i < nc; i++) {
                const struct cagg *ca = &cs[i];

                cat_total += ca->ps;
                if (ca->calls == 0 && i + 1 < nc)
                        continue;
                json_array_append_new(
                        cats, json_pack("{s:s,s:f,s:f,s:o,s:I,s:o,s:o,s:I}", "name", mx_kcat_name(c, i),
                                        "time_pct", total > 0 ? 100.0 * (double)ca->ps / (double)total : 0.0,
                                        "total_us", us(ca->ps), "avg_us",
                                        ca->timed ? json_real(us(ca->ps) / (double)ca->timed) : json_null(),
                                        "calls", (json_int_t)ca->calls, "calls_per_token",
                                        per_token((double)ca->calls, tokens), "us_per_token",
                                        per_token(us(ca->ps), tokens), "kernels", (json_int_t)ca->kernels));
        }
        qsort(ks, r->n_kernels, sizeof(*ks), by_ps_desc);
        for (size_t i = 0; i < r->n_kernels; i++) {
                if (json_array_size(top) < MX_DPROF_TOP_KERNELS)
                        json_array_append_new(top, kernel_json(&ks[i], c, total, tokens));
                if (ks[i].cat + 1 == nc && json_array_size(other) < MX_DPROF_TOP_OTHER)
                        json_array_append_new(other, kernel_json(&ks[i], c, total, tokens));
        }
        o = json_pack("{s:s,s:I,s:I,s:I,s:f,s:f,s:o,s:s?,s:O?,s:s?,s:o,s:o,s:o}", "format",
                      mx_profreport_format_to_string(r->format), "kernels", (json_int_t)r->n_kernels,
                      "launches", (json_int_t)r->n_launches, "timed_launches", (json_int_t)timed, "total_us",
                      us(total), "categories_total_us", us(cat_total), "tokens",
                      tokens > 0 ? json_real(tokens) : json_null(), "which", which, "workload",
                      tokens > 0 ? workload : NULL, "per_token_why", tokens > 0 ? NULL : why, "categories",
                      cats, "top_other", other, "top_kernels", top);
        return o;
}

/* ---- the diff ---- */

static json_t *find_named(json_t *arr, const char *name)
{
        json_t *v;
        size_t i;

        json_array_foreach (arr, i, v)
                if (streq_ptr(json_string_value(json_object_get(v, "name")), name))
                        return v;
        return NULL;
}

static double num(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* One row of a diff: the same name in the feature's and the baseline's list (either may be missing). */
static json_t *diff_row(json_t *f, json_t *b, const char *name, bool per_tok)
{
        json_t *o = json_pack("{s:s}", "name", name);

        if (per_tok) {
                json_object_set_new(o, "d_us_per_token",
                                    json_real(num(f, "us_per_token") - num(b, "us_per_token")));
                json_object_set_new(o, "d_calls_per_token",
                                    json_real(num(f, "calls_per_token") - num(b, "calls_per_token")));
                json_object_set_new(o, "us_per_token", json_real(num(f, "us_per_token")));
                json_object_set_new(o, "baseline_us_per_token", json_real(num(b, "us_per_token")));
        }
        json_object_set_new(o, "d_time_pct", json_real(num(f, "time_pct") - num(b, "time_pct")));
        return o;
}

static const char *diff_key(bool per_tok)
{
        return per_tok ? "d_us_per_token" : "d_time_pct";
}

static int by_abs_desc_us(const void *a, const void *b)
{
        double x = fabs(num(*(json_t *const *)a, "d_us_per_token")),
               y = fabs(num(*(json_t *const *)b, "d_us_per_token"));

        return x < y ? 1 : x > y ? -1 : 0;
}

static int by_abs_desc_pct(const void *a, const void *b)
{
        double x = fabs(num(*(json_t *const *)a, "d_time_pct")),
               y = fabs(num(*(json_t *const *)b, "d_time_pct"));

        return x < y ? 1 : x > y ? -1 : 0;
}

/* Rows sorted by the size of their change, largest first; changed_only: the unchanged left out. */
static json_t *sorted(json_t *rows, bool per_tok, size_t max, bool changed_only)
{
        size_t n = json_array_size(rows);
        _cleanup_free_ json_t **v = xcalloc(MX_MAX(n, 1), sizeof(*v));
        json_t *out = json_array();

        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(rows, i);
        qsort(v, n, sizeof(*v), per_tok ? by_abs_desc_us : by_abs_desc_pct);
        for (size_t i = 0; i < n && json_array_size(out) < max; i++)
                if (!changed_only || num(v[i], diff_key(per_tok)) != 0 ||
                    (per_tok && num(v[i], "d_calls_per_token") != 0))
                        json_array_append(out, v[i]);
        json_decref(rows);
        return out;
}

/* "MoE GEMM −38 µs/token, GEMV +2": the changes that round to something, largest first. */
static char *diff_text(json_t *cats, bool per_tok)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        json_t *row;
        size_t i, n = 0;

        json_array_foreach (cats, i, row) {
                double d = num(row, diff_key(per_tok));
                char v[64];

                if (fabs(d) < (per_tok ? 0.5 : 0.05))
                        continue;
                snprintf(v, sizeof(v), per_tok ? "%.0f" : "%.1f", fabs(d));
                mx_buf_printf(&b, "%s%s %s%s%s", n ? ", " : "",
                              json_string_value(json_object_get(row, "name")), d < 0 ? "\u2212" : "+", v,
                              n         ? ""
                              : per_tok ? " \u03bcs/token"
                                        : " points of decode time");
                n++;
        }
        return n ? mx_buf_steal(&b) : xstrdup("no category changed");
}

json_t *mx_dprof_diff(json_t *feature, json_t *baseline)
{
        bool per_tok = json_is_number(json_object_get(feature, "tokens")) &&
                       json_is_number(json_object_get(baseline, "tokens"));
        json_t *cats = json_array(), *kernels = json_array(), *v;
        _cleanup_free_ char *text = NULL;
        const char *lists[] = {"categories", "top_kernels"};
        json_t *out[] = {cats, kernels};
        size_t i;

        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                json_t *fl = json_object_get(feature, lists[l]), *bl = json_object_get(baseline, lists[l]);

                json_array_foreach (fl, i, v) {
                        const char *name = json_string_value(json_object_get(v, "name"));

                        json_array_append_new(out[l], diff_row(v, find_named(bl, name), name, per_tok));
                }
                json_array_foreach (bl, i, v) {
                        const char *name = json_string_value(json_object_get(v, "name"));

                        if (!find_named(fl, name))
                                json_array_append_new(out[l], diff_row(NULL, v, name, per_tok));
                }
        }
        cats = sorted(cats, per_tok, SIZE_MAX, false);
        kernels = sorted(kernels, per_tok, MX_DPROF_TOP_DIFF, true);
        text = diff_text(cats, per_tok);
        return json_pack(
                "{s:b,s:s?,s:o,s:o,s:s}", "per_token", per_tok, "why",
                per_tok ? NULL
                        : "per-token figures are not measured on both runs: the change is in points of "
                          "decode time (Time %)",
                "categories", cats, "kernels", kernels, "text", text);
}

/* ---- decision rules ---- */

json_t *mx_dprof_rules(const struct mx_matrix *m, json_t *table)
{
        size_t n_defs;
        const struct mx_kcat_def *defs = mx_matrix_kcats(m, &n_defs);
        json_t *out = json_array();

        for (size_t i = 0; m && i < m->n_drules; i++) {
                const struct mx_matrix_drule *d = &m->drules[i];
                double share = 0;

                for (size_t k = 0; k < d->n_cats; k++)
                        share += num(find_named(json_object_get(table, "categories"),
                                                d->cats[k] < n_defs ? defs[d->cats[k]].name : MX_KCAT_OTHER),
                                     "time_pct");
                json_array_append_new(
                        out, json_pack("{s:s,s:s,s:s?,s:f,s:s}", "when", d->when, "then", d->then, "note",
                                       d->note, "share_pct", share, "verdict",
                                       mx_gate_op_holds(d->op, share, d->pct) ? "holds" : "does-not-hold"));
        }
        return out;
}

/* ---- a job ---- */

json_t *mx_dprof_job(const struct mx_matrix *m, json_t *runs)
{
        json_t *base = mx_jobruns_baseline(runs), *run;
        size_t i;

        json_array_foreach (runs, i, run) {
                json_t *t = json_object_get(run, "table");

                if (!t)
                        continue;
                json_object_set_new(run, "rules", mx_dprof_rules(m, t));
                if (base && run != base && json_object_get(base, "table"))
                        json_object_set_new(run, "diff", mx_dprof_diff(t, json_object_get(base, "table")));
        }
        return json_pack("{s:O,s:O,s:s}", "baseline_run", base ? json_object_get(base, "run") : json_null(),
                         "runs", runs, "categories_from", m && m->has_kcats ? "matrix" : "builtin");
}
