/* SPDX-License-Identifier: MIT */
/*
 * The machine formats of a report document: the document itself (json), one
 * CSV row per run, level and metric (csv), and JUnit XML with one testcase
 * per run and level (junit), for CI servers.
 */
#include "report-internal.h"
#include "matrix.h"

#include <math.h>

int report_json(json_t *doc, FILE *f, char **reterr)
{
        _cleanup_free_ char *s = report_doc_dump(doc);

        (void)reterr;
        fputs(s, f);
        return 0;
}

/* ---- CSV (RFC 4180) ---- */

static void csv_field(FILE *f, const char *s, bool last)
{
        s = s ?: "";
        if (strpbrk(s, ",\"\r\n")) {
                fputc('"', f);
                for (const char *p = s; *p; p++) {
                        if (*p == '"')
                                fputc('"', f);
                        fputc(*p, f);
                }
                fputc('"', f);
        } else
                fputs(s, f);
        fputs(last ? "\r\n" : ",", f);
}

struct csv_ctx {
        FILE *f;
        json_t *run;
        const char *level, *verdict;
        char *prefix[6]; /* job, run, seq, config_key, result, attempt */
        unsigned rows;
};

/* The vocabulary metric a flattened L4/L1 path stands for, for its definition and sample count. */
static const char *vocabulary_metric(const char *level, const char *path)
{
        if (startswith(path, "results.throughput.") || startswith(path, "results.latency."))
                return strrchr(path, '.') + 1;
        if (streq(path, "ready_s") && (streq(level, "L1") || streq(level, "L4")))
                return "startup_s";
        return NULL;
}

static void csv_row(struct csv_ctx *c, const char *metric, const char *value)
{
        const char *vm = metric ? vocabulary_metric(c->level, metric) : NULL;
        _cleanup_free_ char *n = NULL;
        struct rep_num num = {};

        if (vm && mx_metric_lookup(vm)) {
                rep_metric(c->run, vm, &num);
                if (num.have && num.n >= 0)
                        n = xasprintf("%" PRId64, num.n);
        }
        for (size_t i = 0; i < ELEMENTSOF(c->prefix); i++)
                csv_field(c->f, c->prefix[i], false);
        csv_field(c->f, c->level, false);
        csv_field(c->f, c->verdict, false);
        csv_field(c->f, metric, false);
        csv_field(c->f, value, false);
        csv_field(c->f, n, false);
        csv_field(c->f, num.have ? num.def : NULL, true);
        c->rows++;
}

/* Numbers and booleans of a metrics object, by dotted path in key order; arrays and texts are left out. */
static void csv_flatten(struct csv_ctx *c, json_t *o, const char *path)
{
        const char **keys;
        const char *k;
        json_t *v;
        size_t n = 0;

        keys = xcalloc(json_object_size(o) + 1, sizeof(*keys));
        json_object_foreach (o, k, v)
                keys[n++] = k;
        for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen keys */
                for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
                        const char *t = keys[j];
                        keys[j] = keys[j - 1];
                        keys[j - 1] = t;
                }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = path ? xasprintf("%s.%s", path, keys[i]) : xstrdup(keys[i]);
                _cleanup_free_ char *val = NULL;

                v = json_object_get(o, keys[i]);
                if (json_is_object(v))
                        csv_flatten(c, v, p);
                else if (json_is_integer(v))
                        val = xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
                else if (json_is_real(v)) {
                        /* the shortest text that reads back as the same double */
                        val = xasprintf("%.15g", json_real_value(v));
                        if (strtod(val, NULL) != json_real_value(v)) {
                                free(val);
                                val = xasprintf("%.17g", json_real_value(v));
                        }
                } else if (json_is_boolean(v))
                        val = xstrdup(json_is_true(v) ? "true" : "false");
                if (val)
                        csv_row(c, p, val);
        }
        free(keys);
}

/*
 * A run's decode profile (the document's "analysis") as rows of level "decode-profile": per category
 * category.NAME.{time_pct, avg_us, calls, calls_per_token, us_per_token, total_us}, the totals, and the
 * change against the baseline as diff.NAME.{d_us_per_token, d_calls_per_token, d_time_pct}.
 */
static void csv_analysis(struct csv_ctx *c, json_t *e)
{
        json_t *t = json_object_get(e, "table"), *o, *v;
        _cleanup_json_ json_t *flat = NULL;
        size_t i;

        if (!t)
                return;
        flat = json_pack("{s:O,s:O,s:O,s:O}", "total_us", json_object_get(t, "total_us"), "tokens",
                         json_object_get(t, "tokens"), "launches", json_object_get(t, "launches"), "kernels",
                         json_object_get(t, "kernels"));
        o = json_object();
        json_array_foreach (json_object_get(t, "categories"), i, v) {
                json_t *row = json_deep_copy(v);

                json_object_del(row, "name");
                json_object_set_new(o, json_string_value(json_object_get(v, "name")), row);
        }
        json_object_set_new(flat, "category", o);
        if (json_object_get(e, "diff")) {
                o = json_object();
                json_array_foreach (json_object_get(json_object_get(e, "diff"), "categories"), i, v) {
                        json_t *row = json_deep_copy(v);

                        json_object_del(row, "name");
                        json_object_del(row, "us_per_token");
                        json_object_del(row, "baseline_us_per_token");
                        json_object_set_new(o, json_string_value(json_object_get(v, "name")), row);
                }
                json_object_set_new(flat, "diff", o);
        }
        c->level = "decode-profile";
        c->verdict = NULL;
        csv_flatten(c, flat, NULL);
}

int report_csv(json_t *doc, FILE *f, char **reterr)
{
        json_t *run;
        size_t i;

        (void)reterr;
        fputs("job,run,seq,config_key,result,attempt,level,verdict,metric,value,n,definition\r\n", f);
        json_array_foreach (rep_runs(doc), i, run) {
                json_t *a = rep_attempt(run), *l;
                struct csv_ctx c = {.f = f, .run = run};
                size_t k;

                c.prefix[0] = xasprintf("%" JSON_INTEGER_FORMAT,
                                        json_integer_value(json_object_get(rep_job(doc), "id")));
                c.prefix[1] =
                        xasprintf("r%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(run, "id")));
                c.prefix[2] =
                        xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(run, "seq")));
                c.prefix[3] = xstrdup(json_string_value(json_object_get(run, "config_key")));
                c.prefix[4] = xstrdup(rep_result(run));
                c.prefix[5] =
                        a ? xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(a, "n")))
                          : xstrdup("");
                json_array_foreach (json_object_get(a, "levels"), k, l) {
                        unsigned before = c.rows;

                        c.level = json_string_value(json_object_get(l, "level"));
                        c.verdict = json_string_value(json_object_get(l, "verdict"));
                        if (json_is_object(json_object_get(l, "metrics")))
                                csv_flatten(&c, json_object_get(l, "metrics"), NULL);
                        if (c.rows == before) /* every run and level has a row, measured or not */
                                csv_row(&c, NULL, NULL);
                }
                csv_analysis(&c, rep_analysis_run(doc, json_object_get(run, "id")));
                if (c.rows == 0) {
                        c.level = NULL;
                        c.verdict = NULL;
                        csv_row(&c, NULL, NULL);
                }
                for (size_t p = 0; p < ELEMENTSOF(c.prefix); p++)
                        free(c.prefix[p]);
        }
        return 0;
}

/* ---- JUnit XML ---- */

/* Text for XML 1.0: control bytes and bad UTF-8 as \xNN (mx_escape), then the five entities. */
static void xml_text(FILE *f, const char *s)
{
        _cleanup_free_ char *e = mx_escape(s ?: "", 4096);

        for (const char *p = e; *p; p++)
                switch (*p) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                case '\'':
                        fputs("&apos;", f);
                        break;
                default:
                        fputc(*p, f);
                }
}

static double seconds(json_t *start, json_t *end)
{
        if (!json_is_integer(start) || !json_is_integer(end))
                return 0;
        return MX_MAX(0, (double)(json_integer_value(end) - json_integer_value(start)) / 1e6);
}

struct junit_case {
        const char *name;
        double time;
        const char *kind; /* NULL (passed), "failure", "error", "skipped" */
        const char *type;
        const char *message;
        const char *body;
};

static void junit_case(FILE *f, json_t *run, const struct junit_case *c)
{
        fprintf(f,
                "    <testcase classname=\"mxmatrix.job%" JSON_INTEGER_FORMAT ".r%" JSON_INTEGER_FORMAT
                "\" name=\"",
                json_integer_value(json_object_get(run, "job")),
                json_integer_value(json_object_get(run, "id")));
        xml_text(f, c->name);
        fprintf(f, "\" time=\"%.3f\"", c->time);
        if (!c->kind) {
                fputs("/>\n", f);
                return;
        }
        fprintf(f, ">\n      <%s", c->kind);
        if (c->type) {
                fputs(" type=\"", f);
                xml_text(f, c->type);
                fputc('"', f);
        }
        fputs(" message=\"", f);
        xml_text(f, c->message);
        fputc('"', f);
        if (c->body) {
                fputc('>', f);
                xml_text(f, c->body);
                fprintf(f, "</%s>\n", c->kind);
        } else
                fputs("/>\n", f);
        fputs("    </testcase>\n", f);
}

/* The testcases of one run: one per level, a "run" case when it recorded no level, "expectation" for xpass.
 */
static void junit_run(FILE *f, json_t *doc, json_t *run, unsigned counts[4])
{
        json_t *a = rep_attempt(run), *l;
        const char *res = rep_result(run);
        bool xfail = streq(res, "xfail");
        struct rep_failure fail = {};
        bool failed = rep_run_failure(run, &fail);
        size_t i;
        _cleanup_free_ char *expect = NULL;

        (void)doc;
        if (xfail)
                expect = xasprintf("expected failure (known incompatible): %s",
                                   strna(json_string_value(json_object_get(run, "expect_fail"))));
        json_array_foreach (json_object_get(a, "levels"), i, l) {
                const char *v = json_string_value(json_object_get(l, "verdict"));
                const char *msg = json_string_value(json_object_get(l, "message"));
                struct junit_case c = {
                        .name = json_string_value(json_object_get(l, "level")),
                        .time = seconds(json_object_get(l, "started_at"), json_object_get(l, "finished_at")),
                };

                counts[0]++;
                if (streq_ptr(v, "skipped") ||
                    (xfail && (streq_ptr(v, "fail") || streq_ptr(v, "invalid")))) {
                        c.kind = "skipped";
                        c.message = xfail && !streq_ptr(v, "skipped") ? expect : msg ?: "skipped";
                        c.body = xfail ? fail.text : NULL;
                        counts[3]++;
                } else if (streq_ptr(v, "fail") || streq_ptr(v, "invalid")) {
                        c.kind = "failure";
                        c.type = failed ? fail.klass : v;
                        c.message = msg ?: v;
                        c.body = failed ? fail.text : NULL;
                        counts[1]++;
                }
                junit_case(f, run, &c);
        }
        if (json_array_size(json_object_get(a, "levels")) == 0) {
                struct junit_case c = {.name = "run"};

                counts[0]++;
                if (!a || streq(res, "cancelled") || streq(res, "queued") || streq(res, "running")) {
                        c.kind = "skipped";
                        c.message = res;
                        counts[3]++;
                } else if (failed) {
                        c.kind = xfail ? "skipped" : "error";
                        c.type = fail.klass;
                        c.message = xfail ? expect : res;
                        c.body = fail.text;
                        counts[xfail ? 3 : 2]++;
                }
                if (a)
                        c.time =
                                seconds(json_object_get(a, "started_at"), json_object_get(a, "finished_at"));
                junit_case(f, run, &c);
        }
        if (streq(res, "xpass")) {
                struct junit_case c = {.name = "expectation",
                                       .kind = "failure",
                                       .type = "xpass",
                                       .message = "marked known-incompatible in the matrix, but it passed",
                                       .body = json_string_value(json_object_get(run, "expect_fail"))};

                counts[0]++;
                counts[1]++;
                junit_case(f, run, &c);
        }
        rep_failure_done(&fail);
}

int report_junit(json_t *doc, FILE *f, char **reterr)
{
        json_t *job = rep_job(doc), *run;
        char *buf = NULL;
        size_t len = 0, i;
        unsigned total[4] = {};
        FILE *body = open_memstream(&buf, &len);
        _cleanup_free_ char *when = rep_datetime(json_object_get(job, "submitted_at"));

        if (!body) {
                *reterr = xstrdup("out of memory");
                return -ENOMEM;
        }
        /* Each run a testsuite (its configuration), each level a testcase. */
        json_array_foreach (rep_runs(doc), i, run) {
                char *rbuf = NULL;
                size_t rlen = 0;
                unsigned c[4] = {};
                FILE *rf = open_memstream(&rbuf, &rlen);
                json_t *a = rep_attempt(run);

                if (!rf) {
                        fclose(body);
                        free(buf);
                        *reterr = xstrdup("out of memory");
                        return -ENOMEM;
                }
                junit_run(rf, doc, run, c);
                fclose(rf);
                fprintf(body, "  <testsuite name=\"r%" JSON_INTEGER_FORMAT " ",
                        json_integer_value(json_object_get(run, "id")));
                xml_text(body, json_string_value(json_object_get(run, "config_key")));
                fprintf(body,
                        "\" tests=\"%u\" failures=\"%u\" errors=\"%u\" skipped=\"%u\" time=\"%.3f\">\n",
                        c[0], c[1], c[2], c[3],
                        a ? seconds(json_object_get(a, "started_at"), json_object_get(a, "finished_at"))
                          : 0.0);
                fputs("    <properties>\n      <property name=\"result\" value=\"", body);
                xml_text(body, rep_result(run));
                fputs("\"/>\n", body);
                if (json_is_string(json_object_get(run, "expect_fail"))) {
                        fputs("      <property name=\"known_incompatible\" value=\"", body);
                        xml_text(body, json_string_value(json_object_get(run, "expect_fail")));
                        fputs("\"/>\n", body);
                }
                fputs("    </properties>\n", body);
                fwrite(rbuf, 1, rlen, body);
                fputs("  </testsuite>\n", body);
                free(rbuf);
                for (int k = 0; k < 4; k++)
                        total[k] += c[k];
        }
        fclose(body);
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
        fprintf(f, "<testsuites name=\"mxmatrix job %" JSON_INTEGER_FORMAT " ",
                json_integer_value(json_object_get(job, "id")));
        xml_text(f, json_string_value(json_object_get(job, "feature")) ?: "(pins only)");
        fprintf(f, " submitted %s UTC\" tests=\"%u\" failures=\"%u\" errors=\"%u\" skipped=\"%u\">\n", when,
                total[0], total[1], total[2], total[3]);
        fwrite(buf, 1, len, f);
        fputs("</testsuites>\n", f);
        free(buf);
        return 0;
}
