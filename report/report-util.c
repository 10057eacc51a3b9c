/* SPDX-License-Identifier: MIT */
/* The report document and what the renderers share (mxreport.h, report-internal.h). */
#include "report-internal.h"

#include "protocol.h"
#include "matrix-report.h"
#include "matrix.h"
#include "kgate.h"

#include <math.h>
#include <time.h>

/* ---- the document ---- */

int report_doc_check(json_t *doc, char **reterr)
{
        json_t *v = json_object_get(doc, "report"), *runs = json_object_get(doc, "runs"), *run;
        size_t i;

        if (!json_is_object(doc)) {
                *reterr = xstrdup("a report document is a JSON object");
                return -EINVAL;
        }
        if (!json_is_integer(v) || json_integer_value(v) != MX_REPORT_VERSION) {
                *reterr = xasprintf("key 'report': expected format version %d (mxmatrix-report.json(5))",
                                    MX_REPORT_VERSION);
                return -EINVAL;
        }
        if (!json_is_object(json_object_get(doc, "job")) ||
            !json_is_integer(json_object_get(json_object_get(doc, "job"), "id"))) {
                *reterr = xstrdup("key 'job': expected the job object with its id");
                return -EINVAL;
        }
        if (!json_is_object(json_object_get(doc, "matrix"))) {
                *reterr = xstrdup("key 'matrix': expected an object");
                return -EINVAL;
        }
        v = json_object_get(doc, "attribution");
        if (v && !json_is_object(v)) {
                *reterr = xstrdup("key 'attribution': expected an object (mxmatrix-report.json(5))");
                return -EINVAL;
        }
        v = json_object_get(doc, "analysis");
        if (v && !json_is_object(v)) {
                *reterr = xstrdup("key 'analysis': expected an object (mxmatrix-report.json(5))");
                return -EINVAL;
        }
        if (!json_is_array(runs)) {
                *reterr = xstrdup("key 'runs': expected an array");
                return -EINVAL;
        }
        json_array_foreach (runs, i, run)
                if (!json_is_object(run) || !json_is_integer(json_object_get(run, "id")) ||
                    !json_is_string(json_object_get(run, "config_key")) ||
                    !json_is_object(json_object_get(run, "config"))) {
                        *reterr = xasprintf("runs[%zu]: expected a run with id, config_key and config", i);
                        return -EINVAL;
                }
        return 0;
}

int report_doc_load(const char *path, json_t **ret, char **reterr)
{
        _cleanup_json_ json_t *doc = NULL;
        json_error_t e;
        FILE *f = streq(path, "-") ? stdin : fopen(path, "re");
        _cleanup_free_ char *why = NULL;
        struct mx_buf b = MX_BUF_INIT;
        char chunk[65536];
        size_t n;
        int r;

        if (!f) {
                r = -errno;
                *reterr = xasprintf("%s: %s", path, strerror(errno));
                return r;
        }
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
                if (b.len + n > REPORT_FILE_MAX) {
                        if (f != stdin)
                                fclose(f);
                        mx_buf_free(&b);
                        *reterr = xasprintf("%s: larger than the limit of %u bytes", path, REPORT_FILE_MAX);
                        return -EFBIG;
                }
                mx_buf_add(&b, chunk, n);
        }
        if (f != stdin)
                fclose(f);
        doc = json_loadb(b.data ? b.data : "", b.len, JSON_REJECT_DUPLICATES, &e);
        mx_buf_free(&b);
        if (!doc) {
                *reterr = xasprintf("%s:%d:%d: %s", path, e.line, e.column, e.text);
                return -EINVAL;
        }
        r = report_doc_check(doc, &why);
        if (r < 0) {
                *reterr = xasprintf("%s: %s", path, why);
                return r;
        }
        *ret = report_doc_normalise(doc);
        return 0;
}

json_t *report_doc_normalise(json_t *doc)
{
        _cleanup_free_ char *text = report_doc_dump(doc);
        json_t *copy = json_loads(text, 0, NULL);

        if (!copy)
                mx_die("a report document does not read back");
        return copy;
}

char *report_doc_dump(json_t *doc)
{
        char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
        char *out = xasprintf("%s\n", s ? s : "null");

        free(s);
        return out;
}

json_t *rep_job(json_t *doc)
{
        return json_object_get(doc, "job");
}

json_t *rep_matrix(json_t *doc)
{
        return json_object_get(doc, "matrix");
}

json_t *rep_runs(json_t *doc)
{
        return json_object_get(doc, "runs");
}

json_t *rep_attempt(json_t *run)
{
        json_t *h = json_object_get(run, "attempt_history"), *a;
        json_t *want = json_object_get(run, "result_attempt");
        size_t i;

        if (json_is_integer(want))
                json_array_foreach (h, i, a)
                        if (json_integer_value(json_object_get(a, "n")) == json_integer_value(want))
                                return a;
        return json_array_size(h) > 0 ? json_array_get(h, json_array_size(h) - 1) : NULL;
}

json_t *rep_level(json_t *attempt, const char *name)
{
        json_t *l;
        size_t i;

        json_array_foreach (json_object_get(attempt, "levels"), i, l)
                if (streq_ptr(json_string_value(json_object_get(l, "level")), name))
                        return l;
        return NULL;
}

const char *rep_result(json_t *run)
{
        const char *r = json_string_value(json_object_get(run, "result"));

        return r ?: json_string_value(json_object_get(run, "state")) ?: "unknown";
}

static const char *const verdict_words[_MX_VERDICT_MAX] = {
        [MX_VERDICT_PASS] = "PASS",
        [MX_VERDICT_FAIL] = "FAIL",
        [MX_VERDICT_INVALID] = "INVALID",
        [MX_VERDICT_SKIPPED] = "SKIPPED",
};

const char *rep_verdict_word(const char *verdict)
{
        enum mx_verdict v;

        if (!verdict)
                return "NOT RUN";
        v = mx_verdict_from_string(verdict);
        return v >= 0 ? verdict_words[v] : verdict_words[MX_VERDICT_SKIPPED];
}

enum mx_feature_status rep_feature_status(const char *status)
{
        /* the model's reading: "merged" is completed (seed 003), anything unknown not started */
        enum mx_feature_status s = mx_feature_status_from_string(status);

        return s >= 0 ? s : MX_FEATURE_NOT_STARTED;
}

char *rep_result_counts(json_t *doc)
{
        _cleanup_json_ json_t *counts = json_object();
        json_t *run;
        size_t i;

        json_array_foreach (rep_runs(doc), i, run) {
                const char *r = rep_result(run);

                json_object_set_new(counts, r, json_integer(json_integer_value(json_object_get(counts, r)) + 1));
        }
        return mx_result_counts_text(counts, true);
}

void rep_matrix_changed_note(FILE *f, json_t *doc)
{
        if (json_is_false(json_object_get(rep_matrix(doc), "current")))
                fputs("The matrix file changed after the job was planned: its declarations below are today's.\n", f);
}

/* ---- metrics ---- */

static json_t *l4_metrics(json_t *run)
{
        return json_object_get(rep_level(rep_attempt(run), "L4"), "metrics");
}

/* Sum of stat.n over the bench document's array entries that match kind/size at depth 0. */
static int64_t bench_n(json_t *arr, const char *kind, const char *size_key, int64_t size, const char *stat)
{
        json_t *e;
        size_t i;
        int64_t n = 0;
        bool any = false;

        json_array_foreach (arr, i, e) {
                json_t *st = json_object_get(e, stat);

                if (json_integer_value(json_object_get(e, "depth")) != 0)
                        continue;
                if (kind && !streq_ptr(json_string_value(json_object_get(e, "kind")), kind))
                        continue;
                if (size_key && json_integer_value(json_object_get(e, size_key)) != size)
                        continue;
                if (json_is_integer(json_object_get(st, "n"))) {
                        n += json_integer_value(json_object_get(st, "n"));
                        any = true;
                }
        }
        return any ? n : -1;
}

/* The spread of the one depth-0 entry matching kind/size (its sample standard deviation), else NAN. */
static double bench_sd(json_t *arr, const char *kind, int64_t size, const char *stat)
{
        json_t *e, *st = NULL;
        size_t i;
        unsigned hits = 0;

        json_array_foreach (arr, i, e) {
                if (json_integer_value(json_object_get(e, "depth")) != 0 ||
                    !streq_ptr(json_string_value(json_object_get(e, "kind")), kind) ||
                    json_integer_value(json_object_get(e, kind)) != size)
                        continue;
                st = json_object_get(e, stat);
                hits++;
        }
        if (hits != 1)
                return NAN;
        if (json_is_number(json_object_get(st, "std_sample")))
                return json_number_value(json_object_get(st, "std_sample"));
        return json_is_number(json_object_get(st, "std")) ? json_number_value(json_object_get(st, "std")) : NAN;
}

static void num_set(struct rep_num *r, json_t *v, int64_t n, const char *def)
{
        if (!json_is_number(v)) {
                r->why = "not measured (no value in the L4 result)";
                return;
        }
        r->have = true;
        r->v = json_number_value(v);
        r->n = n;
        r->def = def;
}

/* Throughput and latency from the L4 level's bench result document (loadgen/bench.h). */
static bool metric_l4(json_t *run, const char *metric, struct rep_num *r)
{
        json_t *m = l4_metrics(run), *defs = json_object_get(m, "definitions");
        json_t *res = json_object_get(m, "results");
        static const struct {
                const char *prefix, *stat, *def;
        } lat[] = {
                {"ttft_", "ttft_ms", "ttft_ms"},
                {"tpot_", "tpot_ms", "tpot_ms"},
                {"itl_", "itl_ms", "itl_ms"},
                {"e2e_", "e2el_ms", "e2el_ms"},
        };
        long long size;
        char kind[3] = {};

        if (!m)
                return false;
        if (sscanf(metric, "%2[a-z]%lld_tps", kind, &size) == 2 &&
            (streq(kind, "pp") || streq(kind, "tg"))) {
                num_set(r, json_object_get(json_object_get(res, "throughput"), metric),
                        bench_n(json_object_get(m, "tests"), kind, kind, size, "tps"),
                        json_string_value(json_object_get(defs, streq(kind, "pp") ? "pp_tps" : "tg_tps")));
                if (r->have)
                        r->sd = bench_sd(json_object_get(m, "tests"), kind, size, "tps");
                return true;
        }
        for (size_t i = 0; i < ELEMENTSOF(lat); i++)
                if (startswith(metric, lat[i].prefix)) {
                        num_set(r, json_object_get(json_object_get(res, "latency"), metric),
                                bench_n(json_object_get(m, "serving"), NULL, NULL, 0, lat[i].stat),
                                json_string_value(json_object_get(defs, lat[i].def)));
                        return true;
                }
        return false;
}

void rep_metric(json_t *run, const char *metric, struct rep_num *r)
{
        json_t *a = rep_attempt(run), *m = l4_metrics(run);

        *r = (struct rep_num){.n = -1, .sd = NAN, .why = "not measured (no L4 level ran)"};
        if (!a) {
                r->why = "not measured (the run never started)";
                return;
        }
        if (streq(metric, "startup_s")) {
                json_t *v = json_object_get(m, "ready_s");

                if (!json_is_number(v))
                        v = json_object_get(json_object_get(rep_level(a, "L1"), "metrics"), "ready_s");
                r->why = "not measured (no level recorded ready_s)";
                if (json_is_number(v))
                        num_set(r, v, 1,
                                "server start until its readiness probe passed (ready_s of L4, else L1)");
                return;
        }
        if (streq(metric, "memory_gb")) {
                /* the figure the criteria judge (matrix/analysis/criteria.c), in GB (10^9 bytes) as L5 and the seeds */
                json_t *lm = json_object_get(m, "memory"), *run_s = json_object_get(json_object_get(a, "samples"), "run");
                json_t *gpu = json_object_get(json_object_get(json_object_get(m, "results"), "resource"),
                                              "gpu_memory_peak_gb");

                r->why = "not measured (no memory samples)";
                if (json_is_number(gpu)) {
                        num_set(r, gpu, json_integer_value(json_object_get(lm, "samples")),
                                "peak GPU memory during L4 (L4 gpu_memory_peak_gb), GB = 10^9 bytes");
                } else if (json_is_integer(json_object_get(lm, "peak")) &&
                           json_integer_value(json_object_get(lm, "peak")) > 0) {
                        _cleanup_json_ json_t *gb =
                                json_real((double)json_integer_value(json_object_get(lm, "peak")) / 1e9);

                        num_set(r, gb, json_integer_value(json_object_get(lm, "samples")),
                                "peak memory during L4 of the level's memory figure (GPU memory; on a "
                                "unified-memory GPU system memory; else the server's host PSS), GB = 10^9 "
                                "bytes");
                } else if (json_is_integer(json_object_get(json_object_get(run_s, "memory"), "peak"))) {
                        _cleanup_json_ json_t *gb = json_real(
                                (double)json_integer_value(json_object_get(json_object_get(run_s, "memory"), "peak")) /
                                1e9);

                        num_set(r, gb,
                                json_is_integer(json_object_get(run_s, "samples"))
                                        ? json_integer_value(json_object_get(run_s, "samples"))
                                        : -1,
                                "peak used memory over the attempt, the sampler's (GPU memory, or system memory "
                                "on unified-memory GPUs; runs without L4), GB = 10^9 bytes");
                }
                return;
        }
        if (streq(metric, "crashes")) {
                json_t *h = json_object_get(run, "attempt_history"), *x;
                size_t i;
                int64_t n = 0;
                _cleanup_json_ json_t *v = NULL;

                json_array_foreach (h, i, x)
                        n += streq_ptr(json_string_value(json_object_get(x, "outcome")), "crashed");
                v = json_integer(n);
                num_set(r, v, (int64_t)json_array_size(h),
                        "attempts whose server or engine died (outcome crashed)");
                return;
        }
        if (metric_l4(run, metric, r))
                return;
        r->why = m ? "not measured (the L4 result has no such figure)" : "not measured (no L4 level ran)";
}

char *rep_num_text(const struct rep_num *n)
{
        if (!n->have)
                return xstrdup("not measured");
        if (n->v == floor(n->v) && fabs(n->v) < 1e15)
                return xasprintf("%.0f", n->v);
        return xasprintf("%.2f", n->v);
}

char *rep_num_cell(const struct rep_num *n)
{
        _cleanup_free_ char *t = rep_num_text(n);

        if (!n->have || n->n < 0)
                return TAKE_PTR(t);
        if (!isnan(n->sd) && n->n > 1)
                return xasprintf("%s ± %.2f (n=%" PRId64 ")", t, n->sd, n->n);
        return xasprintf("%s (n=%" PRId64 ")", t, n->n);
}

char *rep_md(const char *s)
{
        struct mx_buf b = MX_BUF_INIT;

        if (!s || !*s)
                return xstrdup("-");
        for (const char *p = s; *p; p++) {
                if (*p == '|')
                        mx_buf_puts(&b, "\\|");
                else if (*p == '\n' || *p == '\r')
                        mx_buf_putc(&b, ' ');
                else
                        mx_buf_putc(&b, *p);
        }
        return mx_buf_steal(&b);
}

/* UTC from the data, never the machine's zone: the same document gives the same report anywhere. */
static char *rep_strftime(json_t *us, bool with_time)
{
        struct tm tm;
        time_t t;

        if (!json_is_integer(us))
                return xstrdup("-");
        t = (time_t)(json_integer_value(us) / 1000000);
        if (!gmtime_r(&t, &tm))
                return xstrdup("-");
        if (!with_time)
                return xasprintf("%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
        return xasprintf("%04d-%02d-%02d %02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec);
}

char *rep_date(json_t *us)
{
        return rep_strftime(us, false);
}

char *rep_datetime(json_t *us)
{
        return rep_strftime(us, true);
}

char *rep_duration(json_t *start, json_t *end)
{
        int64_t d;

        if (!json_is_integer(start) || !json_is_integer(end))
                return xstrdup("-");
        d = json_integer_value(end) - json_integer_value(start);
        if (d < 0)
                d = 0;
        if (d < 1000000)
                return xasprintf("%" PRId64 "ms", d / 1000);
        if (d < 60000000)
                return xasprintf("%.1fs", (double)d / 1e6);
        return xasprintf("%" PRId64 "m%02" PRId64 "s", d / 60000000, (d / 1000000) % 60);
}

json_t *rep_last_finished(json_t *doc)
{
        json_t *best = json_object_get(rep_job(doc), "submitted_at"), *run, *a;
        size_t i, k;

        json_array_foreach (rep_runs(doc), i, run)
                json_array_foreach (json_object_get(run, "attempt_history"), k, a) {
                        json_t *f = json_object_get(a, "finished_at");

                        if (json_is_integer(f) &&
                            (!json_is_integer(best) || json_integer_value(f) > json_integer_value(best)))
                                best = f;
                }
        return best;
}

/* ---- configurations ---- */

bool rep_is_baseline(json_t *doc, json_t *run)
{
        json_t *base = json_object_get(rep_matrix(doc), "baseline");

        return json_is_object(base) && json_object_size(base) > 0 &&
               json_equal(base, json_object_get(run, "config"));
}

json_t *rep_baseline_run(json_t *doc)
{
        json_t *run, *first = NULL;
        size_t i;

        json_array_foreach (rep_runs(doc), i, run) {
                if (!rep_is_baseline(doc, run))
                        continue;
                if (streq(rep_result(run), "pass"))
                        return run;
                if (!first)
                        first = run;
        }
        return first;
}

/* The axes in the matrix's order, or the run's config keys sorted when the matrix has none. */
static json_t *axis_names(json_t *doc, json_t *run)
{
        json_t *names = json_array(), *a;
        size_t i;

        json_array_foreach (json_object_get(rep_matrix(doc), "axes"), i, a)
                json_array_append(names, json_object_get(a, "name"));
        if (json_array_size(names) == 0) {
                const char *k;
                json_t *v;

                json_object_foreach (json_object_get(run, "config"), k, v)
                        json_array_append_new(names, json_string(k));
        }
        return names;
}

char *rep_config_diff(json_t *doc, json_t *run)
{
        _cleanup_json_ json_t *names = axis_names(doc, run);
        json_t *base = json_object_get(rep_matrix(doc), "baseline"), *cfg = json_object_get(run, "config"),
               *n;
        struct mx_buf b = MX_BUF_INIT;
        size_t i;

        mx_buf_puts(&b, "");
        json_array_foreach (names, i, n) {
                const char *axis = json_string_value(n);
                const char *v = json_string_value(json_object_get(cfg, axis));
                const char *bv = json_string_value(json_object_get(base, axis));

                if (v && !streq_ptr(v, bv))
                        mx_buf_printf(&b, "%s%s=%s", b.len ? ", " : "", axis, v);
                else if (!v && bv)
                        mx_buf_printf(&b, "%s%s unset", b.len ? ", " : "", axis);
        }
        return mx_buf_steal(&b);
}

/* Does feature f set exactly the run's differences from the baseline? */
static bool feature_is_diff(json_t *doc, json_t *f, json_t *run)
{
        json_t *set = json_object_get(f, "set"), *base = json_object_get(rep_matrix(doc), "baseline");
        json_t *cfg = json_object_get(run, "config"), *v;
        _cleanup_json_ json_t *want = json_deep_copy(base);
        const char *k;

        if (!json_is_object(set) || json_object_size(set) == 0 || !json_is_object(want))
                return false;
        json_object_foreach (set, k, v) {
                json_t *axes = json_object_get(rep_matrix(doc), "axes"), *a, *val;
                size_t i, j;
                const char *canon = json_string_value(v);

                /* the feature may name a value by an alias: the run's config has canonical names */
                json_array_foreach (axes, i, a) {
                        if (!streq_ptr(json_string_value(json_object_get(a, "name")), k))
                                continue;
                        json_array_foreach (json_object_get(a, "values"), j, val) {
                                json_t *al;
                                size_t q;

                                json_array_foreach (json_object_get(val, "aliases"), q, al)
                                        if (streq_ptr(json_string_value(al), json_string_value(v)))
                                                canon = json_string_value(json_object_get(val, "name"));
                        }
                }
                json_object_set_new(want, k, json_string(canon ?: ""));
        }
        return json_equal(want, cfg);
}

char *rep_config_name(json_t *doc, json_t *run)
{
        _cleanup_free_ char *diff = NULL;
        json_t *f;
        size_t i;

        if (rep_is_baseline(doc, run)) {
                json_t *base = json_object_get(rep_matrix(doc), "baseline");
                json_t *axes = json_object_get(rep_matrix(doc), "axes");
                const char *first = json_string_value(json_object_get(json_array_get(axes, 0), "name"));

                if (first && json_is_string(json_object_get(base, first)))
                        return xasprintf("Baseline (%s=%s)", first,
                                         json_string_value(json_object_get(base, first)));
                return xstrdup("Baseline");
        }
        json_array_foreach (json_object_get(rep_matrix(doc), "features"), i, f)
                if (feature_is_diff(doc, f, run))
                        return xstrdup(json_string_value(json_object_get(f, "title"))
                                               ?: json_string_value(json_object_get(f, "name")) ?: "?");
        diff = rep_config_diff(doc, run);
        if (json_object_size(json_object_get(rep_matrix(doc), "baseline")) == 0)
                return xstrdup(json_string_value(json_object_get(run, "config_key")) ?: "?");
        return xasprintf("+ %s", diff);
}

/* Does word (value, alias or axis=value) name exactly what feature f sets? */
static bool feature_named_by(json_t *doc, json_t *f, const char *word)
{
        json_t *set = json_object_get(f, "set"), *a, *val, *al;
        const char *eq = strchr(word, '='), *k;
        _cleanup_free_ char *axis = eq ? xstrndup(word, (size_t)(eq - word)) : NULL;
        const char *value = eq ? eq + 1 : word;
        size_t i, j, q;

        if (json_object_size(set) != 1)
                return false;
        json_object_foreach (set, k, a) {
                const char *fv = json_string_value(a);

                if (axis && !streq(axis, k))
                        return false;
                json_array_foreach (json_object_get(rep_matrix(doc), "axes"), i, a) {
                        if (!streq_ptr(json_string_value(json_object_get(a, "name")), k))
                                continue;
                        json_array_foreach (json_object_get(a, "values"), j, val) {
                                bool names_fv =
                                             streq_ptr(json_string_value(json_object_get(val, "name")), fv),
                                     names_word = streq_ptr(json_string_value(json_object_get(val, "name")),
                                                            value);

                                json_array_foreach (json_object_get(val, "aliases"), q, al) {
                                        names_fv |= streq_ptr(json_string_value(al), fv);
                                        names_word |= streq_ptr(json_string_value(al), value);
                                }
                                if (names_fv && names_word)
                                        return true;
                        }
                }
                return streq_ptr(fv, value);
        }
        return false;
}

json_t *rep_feature(json_t *doc, const char *name)
{
        json_t *features = json_object_get(rep_matrix(doc), "features"), *f, *found = NULL;
        const char *word = name ?: json_string_value(json_object_get(rep_job(doc), "feature"));
        size_t i, n = 0;

        if (!word)
                return NULL;
        json_array_foreach (features, i, f)
                if (streq_ptr(json_string_value(json_object_get(f, "name")), word))
                        return f;
        if (name)
                return NULL;
        json_array_foreach (features, i, f)
                if (feature_named_by(doc, f, word)) {
                        found = f;
                        n++;
                }
        return n == 1 ? found : NULL;
}

/* ---- definitions ---- */

void rep_defs_add(struct rep_defs *d, const char *label, const struct rep_num *n)
{
        json_t *x;
        size_t i, k = SIZE_MAX;

        if (!d->seen) {
                d->seen = json_object();
                d->notes = json_array();
                d->section = json_array();
        }
        if (!n->have || !n->def)
                return;
        if (!json_object_get(d->seen, label))
                json_object_set_new(d->seen, label, json_string(n->def));
        json_array_foreach (d->notes, i, x)
                if (streq(json_string_value(json_object_get(x, "def")), n->def))
                        k = i;
        if (k == SIZE_MAX) {
                k = json_array_size(d->notes);
                json_array_append_new(d->notes, json_pack("{s:s,s:[]}", "def", n->def, "metrics"));
        }
        x = json_object_get(json_array_get(d->notes, k), "metrics");
        {
                bool have = false;
                json_t *m;
                size_t q;

                json_array_foreach (x, q, m)
                        have |= streq(json_string_value(m), label);
                if (!have)
                        json_array_append_new(x, json_string(label));
                have = false;
                json_array_foreach (d->section, q, m)
                        have |= (size_t)json_integer_value(m) == k;
                if (!have)
                        json_array_append_new(d->section, json_integer((json_int_t)k));
        }
}

void rep_defs_refs(struct rep_defs *d, FILE *f)
{
        json_t *k;
        size_t i;

        if (json_array_size(d->section) == 0)
                return;
        fputs("\nFigures: the value ± its samples' standard deviation where there are several, n = the "
              "samples behind it; definitions:",
              f);
        json_array_foreach (d->section, i, k)
                fprintf(f, " [^%" JSON_INTEGER_FORMAT "]", json_integer_value(k) + 1);
        fputc('\n', f);
        json_array_clear(d->section);
}

void rep_defs_print(struct rep_defs *d, FILE *f)
{
        json_t *x, *m;
        size_t i, k;

        if (json_array_size(d->notes) == 0)
                return;
        fputs("\n## Definitions\n\n", f);
        json_array_foreach (d->notes, i, x) {
                fprintf(f, "[^%zu]: ", i + 1);
                json_array_foreach (json_object_get(x, "metrics"), k, m)
                        fprintf(f, "%s`%s`", k ? ", " : "", json_string_value(m));
                fprintf(f, ": %s\n", json_string_value(json_object_get(x, "def")));
        }
}

void rep_defs_done(struct rep_defs *d)
{
        json_decref(d->seen);
        json_decref(d->notes);
        json_decref(d->section);
        d->seen = d->notes = d->section = NULL;
}

const struct rep_col rep_bench_cols[] = {
        {"tg32_tps", "tg32"},        {"tg128_tps", "tg128"},      {"pp2048_tps", "pp2048"},
        {"ttft_p50_ms", "TTFT p50"}, {"ttft_p99_ms", "TTFT p99"}, {"memory_gb", "Memory"},
};
const size_t rep_n_bench_cols = ELEMENTSOF(rep_bench_cols);

/* ---- failures ---- */

bool rep_run_failure(json_t *run, struct rep_failure *ret)
{
        const char *res = rep_result(run);
        json_t *a = rep_attempt(run), *l;
        const char *outcome = json_string_value(json_object_get(a, "outcome"));
        const char *cc = json_string_value(json_object_get(a, "crash_class"));
        const char *evidence = NULL;
        size_t i;

        *ret = (struct rep_failure){};
        if (!a || streq(res, "pass") || streq(res, "xpass") || streq(res, "cancelled") ||
            streq(res, "queued") || streq(res, "running"))
                return false;
        /* The attempt's message is the line the crash class came from; a failed level says what it saw. */
        json_array_foreach (json_object_get(a, "levels"), i, l) {
                const char *v = json_string_value(json_object_get(l, "verdict"));

                if (!streq_ptr(v, "fail") && !streq_ptr(v, "invalid"))
                        continue;
                if (!ret->klass && !cc)
                        ret->klass = json_string_value(json_object_get(l, "level"));
                if (!evidence)
                        evidence = json_string_value(json_object_get(l, "message"));
        }
        if (cc) {
                ret->klass = cc;
                evidence = json_string_value(json_object_get(a, "message")) ?: evidence;
        } else if (outcome && !streq(outcome, "completed")) {
                ret->klass = outcome;
                evidence = json_string_value(json_object_get(a, "message")) ?: evidence;
        } else if (ret->klass) {
                ret->text = NULL; /* a level: "L1.5 failed" reads better than "L1.5" */
        }
        if (!ret->klass)
                ret->klass = res;
        ret->text = evidence ? mx_escape(evidence, 300) : xstrdup("(no evidence recorded)");
        return true;
}

void rep_failure_done(struct rep_failure *f)
{
        free(f->text);
        f->text = NULL;
}

/* One run's share of the confirmation starts: "r7 (the reference, job 3) 2". */
static void confirmation_run_text(struct mx_buf *b, json_t *starts, json_t *first, json_t *cur_job)
{
        const char *side = json_string_value(json_object_get(first, "side"));
        json_t *run = json_object_get(first, "run"), *job = json_object_get(first, "job"), *s;
        size_t i, n = 0;

        json_array_foreach (starts, i, s)
                n += json_equal(json_object_get(s, "run"), run) &&
                     streq_ptr(json_string_value(json_object_get(s, "side")), side);
        mx_buf_printf(b, "%sr%" JSON_INTEGER_FORMAT " (%s", b->len ? ", " : "", json_integer_value(run),
                      streq_ptr(side, "current") ? "this run" : "the reference");
        if (!streq_ptr(side, "current") && json_is_integer(job) && !json_equal(job, cur_job))
                mx_buf_printf(b, ", job %" JSON_INTEGER_FORMAT, json_integer_value(job));
        mx_buf_printf(b, ") %zu", n);
}

char *report_l5_confirmation_text(json_t *l5)
{
        json_t *c = json_object_get(json_object_get(l5, "metrics"), "confirmation"), *starts, *s, *cur_job = NULL;
        _cleanup_buf_ struct mx_buf runs = MX_BUF_INIT;
        size_t i, total;

        if (!json_is_object(c))
                return NULL;
        starts = json_object_get(c, "starts");
        if (json_is_array(starts)) {
                total = json_array_size(starts);
                json_array_foreach (starts, i, s)
                        if (streq_ptr(json_string_value(json_object_get(s, "side")), "current"))
                                cur_job = json_object_get(s, "job");
                json_array_foreach (starts, i, s) {
                        size_t k;

                        /* each (side, run) once, where it first appears */
                        for (k = 0; k < i; k++) {
                                json_t *e = json_array_get(starts, k);

                                if (json_equal(json_object_get(e, "run"), json_object_get(s, "run")) &&
                                    json_equal(json_object_get(e, "side"), json_object_get(s, "side")))
                                        break;
                        }
                        if (k == i)
                                confirmation_run_text(&runs, starts, s, cur_job);
                }
        } else {
                /* a document from before the starts were listed: the counts a side */
                size_t a = json_array_size(json_object_get(c, "current_attempts")),
                       b = json_array_size(json_object_get(c, "reference_attempts"));

                total = a + b;
                mx_buf_printf(&runs, "this run %zu, the reference %zu", a, b);
        }
        return xasprintf("%zu extra server start%s in %" JSON_INTEGER_FORMAT " confirmation round%s (of at most %"
                         JSON_INTEGER_FORMAT "): %s",
                         total, total == 1 ? "" : "s", json_integer_value(json_object_get(c, "rounds")),
                         json_integer_value(json_object_get(c, "rounds")) == 1 ? "" : "s",
                         json_integer_value(json_object_get(c, "budget")), runs.len ? runs.data : "none");
}
