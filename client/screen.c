/* SPDX-License-Identifier: MIT */
/*
 * show JOB's and follow's compact table (screen.h): one row per run, the
 * configuration as what differs from the baseline, the result in the one
 * result vocabulary, each level's verdict in the seed's order, then the
 * metrics: throughput as mean ± std (n) with its change against the
 * baseline, TTFT p50/p99, the criteria's other metrics.
 */
#include "screen.h"

#include "output.h"

#include <math.h>

#define SCREEN_COLS_MAX 40

static bool is_throughput(const char *metric)
{
        return endswith(metric, "_tps");
}

/* 305.5, 29.26, 0.521: four significant figures or so, never an exponent. */
static char *num(double x)
{
        double a = fabs(x);

        return xasprintf(a >= 100 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f", x);
}

/* A metric's short name for a header: "tg32", "TTFT p50", "memory", "startup". */
static char *short_name(const char *metric)
{
        const char *u = strrchr(metric, '_');

        if (is_throughput(metric))
                return xstrndup(metric, (size_t)(u - metric));
        if (streq(metric, "memory_gb"))
                return xstrdup("memory");
        if (streq(metric, "startup_s"))
                return xstrdup("startup");
        if (endswith(metric, "_ms") && u && u > metric) {
                /* ttft_p50_ms -> "TTFT p50" */
                const char *p = strchr(metric, '_');
                _cleanup_free_ char *up = xstrndup(metric, (size_t)(p - metric));

                for (char *c = up; *c; c++)
                        *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
                return xasprintf("%s %.*s", up, (int)(u - p - 1), p + 1);
        }
        return xstrdup(metric);
}

/* One cell: "305.5 ± 0.20 (5)", "0.52", "305.5 (invalid)", or "not measured". */
static char *cell_text(json_t *cell)
{
        json_t *v = json_object_get(cell, "value");
        _cleanup_free_ char *x = NULL, *sd = NULL;

        if (!json_is_number(v))
                return xstrdup("not measured");
        x = num(json_number_value(v));
        if (json_is_number(json_object_get(cell, "std"))) {
                _cleanup_free_ char *s = num(json_number_value(json_object_get(cell, "std")));

                sd = xasprintf(" ± %s (%" JSON_INTEGER_FORMAT ")", s,
                               json_integer_value(json_object_get(cell, "n")));
        }
        if (json_is_string(json_object_get(cell, "kind")))
                sd = xasprintf(" (%s)", json_string_value(json_object_get(cell, "kind")));
        return xasprintf("%s%s%s", x, strempty(sd),
                         json_is_string(json_object_get(cell, "invalid")) ? " (invalid)" : "");
}

static char *change_text(json_t *cell, bool is_base)
{
        json_t *c = json_object_get(cell, "change_pct");

        if (is_base && json_is_number(json_object_get(cell, "value")))
                return xstrdup("baseline");
        if (!json_is_number(c))
                return xstrdup("-");
        return xasprintf("%+.1f %%", json_number_value(c));
}

static json_t *cell_of(json_t *run, const char *metric)
{
        return json_object_get(json_object_get(run, "metrics"), metric);
}

bool screen_complete(json_t *summary)
{
        return json_is_object(summary) && json_integer_value(json_object_get(summary, "shown")) ==
                                                  json_integer_value(json_object_get(summary, "total"));
}

/* The headers: RUN, CONFIG, RESULT, the levels, then per metric one column (throughput two, TTFT one). */
static size_t headers(json_t *summary, bool ttft_pair, char **h)
{
        json_t *base = json_object_get(summary, "baseline"), *v;
        size_t n = 0, i;

        h[n++] = xstrdup("RUN");
        h[n++] = json_is_object(base) ? xasprintf("CONFIG (vs baseline r%" JSON_INTEGER_FORMAT ")",
                                                  json_integer_value(json_object_get(base, "run")))
                                      : xstrdup("CONFIG");
        h[n++] = xstrdup("RESULT");
        json_array_foreach (json_object_get(summary, "levels"), i, v)
                if (n < SCREEN_COLS_MAX)
                        h[n++] = xstrdup(json_string_value(v));
        json_array_foreach (json_object_get(summary, "metrics"), i, v) {
                const char *m = json_string_value(json_object_get(v, "metric"));
                const char *unit = json_string_value(json_object_get(v, "unit"));
                _cleanup_free_ char *s = short_name(m);

                if (n + 2 >= SCREEN_COLS_MAX)
                        break;
                if (is_throughput(m)) {
                        h[n++] = xasprintf("%s %s ± std (n)", s, unit);
                        h[n++] = xasprintf("Δ %s", s);
                } else if (ttft_pair && streq(m, "ttft_p50_ms"))
                        h[n++] = xstrdup("TTFT p50/p99 ms");
                else if (!(ttft_pair && streq(m, "ttft_p99_ms")))
                        h[n++] = unit && *unit ? xasprintf("%s %s", s, unit) : xstrdup(s);
        }
        h[n] = NULL;
        return n;
}

static void row(json_t *summary, json_t *run, bool ttft_pair, struct table *t, size_t n_cols)
{
        json_t *base = json_object_get(summary, "baseline"), *v;
        bool is_base = json_is_object(base) && json_integer_value(json_object_get(base, "run")) ==
                                                       json_integer_value(json_object_get(run, "run"));
        const char *result = json_string_value(json_object_get(run, "result"));
        const char *crash = json_string_value(json_object_get(run, "crash_class"));
        const char *differs = json_string_value(json_object_get(run, "differs"));
        char *c[SCREEN_COLS_MAX + 1] = {0};
        size_t n = 0, i;

        c[n++] = xasprintf("r%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(run, "run")));
        c[n++] = is_base ? xstrdup("baseline")
                 : !json_is_object(base)
                         ? xstrdup(strna(json_string_value(json_object_get(run, "config_key"))))
                 : differs && *differs ? xstrdup(differs)
                                       : xstrdup("(as the baseline)");
        /* the result in protocol.json's vocabulary (the state while there is none), as the runs table writes
         * it */
        c[n++] = result && crash
                         ? xasprintf("%s:%s", result, crash)
                         : xstrdup(result ?: strna(json_string_value(json_object_get(run, "state"))));
        json_array_foreach (json_object_get(summary, "levels"), i, v)
                if (n < n_cols)
                        c[n++] = xstrdup(json_string_value(json_object_get(json_object_get(run, "verdicts"),
                                                                           json_string_value(v)))
                                                 ?: "-");
        json_array_foreach (json_object_get(summary, "metrics"), i, v) {
                const char *m = json_string_value(json_object_get(v, "metric"));

                if (n >= n_cols)
                        break;
                if (is_throughput(m)) {
                        c[n++] = cell_text(cell_of(run, m));
                        c[n++] = change_text(cell_of(run, m), is_base);
                } else if (ttft_pair && streq(m, "ttft_p50_ms")) {
                        json_t *p50 = cell_of(run, "ttft_p50_ms"), *p99 = cell_of(run, "ttft_p99_ms");

                        if (json_is_number(json_object_get(p50, "value")) &&
                            json_is_number(json_object_get(p99, "value"))) {
                                _cleanup_free_ char *a =
                                        num(json_number_value(json_object_get(p50, "value")));
                                _cleanup_free_ char *b =
                                        num(json_number_value(json_object_get(p99, "value")));

                                c[n++] = xasprintf("%s / %s%s", a, b,
                                                   json_object_get(p50, "invalid") ? " (invalid)" : "");
                        } else
                                c[n++] = xstrdup("not measured");
                } else if (!(ttft_pair && streq(m, "ttft_p99_ms")))
                        c[n++] = cell_text(cell_of(run, m));
        }
        table_add(t, (const char *const *)c);
        for (i = 0; i < n; i++)
                free(c[i]);
}

static bool has_metric(json_t *summary, const char *metric)
{
        json_t *v;
        size_t i;

        json_array_foreach (json_object_get(summary, "metrics"), i, v)
                if (streq_ptr(json_string_value(json_object_get(v, "metric")), metric))
                        return true;
        return false;
}

void screen_print(json_t *summary)
{
        bool ttft_pair = has_metric(summary, "ttft_p50_ms") && has_metric(summary, "ttft_p99_ms");
        char *h[SCREEN_COLS_MAX + 1];
        _cleanup_(table_freep) struct table *t = NULL;
        json_t *run, *base = json_object_get(summary, "baseline");
        size_t n_cols, i;

        if (!json_is_object(summary))
                return;
        n_cols = headers(summary, ttft_pair, h);
        t = table_new((const char *const *)h);
        json_array_foreach (json_object_get(summary, "runs"), i, run)
                row(summary, run, ttft_pair, t, n_cols);
        table_print(t, stdout);
        for (i = 0; i < n_cols; i++)
                free(h[i]);
        if (json_array_size(json_object_get(summary, "metrics")) > 0) {
                printf("figures: each run's stored L4 level (memory: its peak, else the sampler's; the kind "
                       "in "
                       "brackets);\n         throughput mean ± population std (n requests, depth 0); ");
                if (json_is_object(base))
                        printf("Δ against the baseline r%" JSON_INTEGER_FORMAT ";\n",
                               json_integer_value(json_object_get(base, "run")));
                else
                        printf("no Δ: %s;\n",
                               strna(json_string_value(json_object_get(summary, "baseline_why"))));
                printf("         (invalid): L1.5 or L4 says the number may not count; not measured: no "
                       "level "
                       "measured it (mxmatrix show rN says why)\n");
        }
        if (!screen_complete(summary))
                printf("(the first %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " runs)\n",
                       json_integer_value(json_object_get(summary, "shown")),
                       json_integer_value(json_object_get(summary, "total")));
}
