/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix gates: may each feature start (seed 001's gates between phases),
 * and what holds the others back. Also the success-criteria table that show
 * JOB prints (seed 000's "Success Criteria" and "Success Criteria Evaluation").
 */
#include "output.h"
#include "remote.h"

#include <math.h>

/* "33.1" or "-": a number as the tables print it. */
static char *number(json_t *v)
{
        double x = json_number_value(v);

        char *t, *end;

        if (!json_is_number(v) || !isfinite(x))
                return xstrdup("-");
        /* Two decimals at most, trailing zeros dropped: 29.26, 61.5, 4800. */
        t = xasprintf("%.2f", x);
        end = t + strlen(t);
        while (end > t && end[-1] == '0')
                *--end = '\0';
        if (end > t && end[-1] == '.')
                end[-1] = '\0';
        return t;
}

/* "29.26 (r11)" / "29.26 (declared)": a number with where it came from. */
static char *sourced(json_t *v, json_t *from)
{
        _cleanup_free_ char *n = number(v);
        const char *f = json_string_value(from);

        if (!json_is_number(v))
                return TAKE_PTR(n);
        if (!f)
                return TAKE_PTR(n);
        /* "r12 L4" -> "r12": the run is what a reader looks up; the rest is in --json. */
        if (f[0] == 'r' && f[1] >= '0' && f[1] <= '9')
                return xasprintf("%s (%.*s)", n, (int)strcspn(f, " "), f);
        return xasprintf("%s (%s)", n, f);
}

static void criteria_rows(json_t *rows)
{
        static const char *const headers[] = {"METRIC", "BASELINE", "TARGET", "ACTUAL", "PASS?", NULL};
        _cleanup_(table_freep) struct table *t = table_new(headers);
        json_t *row;
        size_t i;

        json_array_foreach (rows, i, row) {
                const char *unit = json_string_value(json_object_get(row, "unit")), *tgt;
                _cleanup_free_ char *metric = NULL, *base = NULL, *target = NULL, *actual = NULL,
                                    *bound = NULL;

                metric = unit && *unit ? xasprintf("%s (%s)",
                                                   json_string_value(json_object_get(row, "metric")), unit)
                                       : xstrdup(strna(json_string_value(json_object_get(row, "metric"))));
                base = sourced(json_object_get(row, "baseline"), json_object_get(row, "baseline_from"));
                actual = sourced(json_object_get(row, "actual"), json_object_get(row, "actual_from"));
                bound = number(json_object_get(row, "target_value"));
                tgt = strempty(json_string_value(json_object_get(row, "target")));
                /* A relative target shows the bound it came to: ">= +10 % (32.19)". */
                target = json_is_number(json_object_get(row, "target_value")) && strpbrk(tgt, "+-")
                                 ? xasprintf("%s (%s)", tgt, bound)
                                 : xstrdup(tgt);
                table_add(t, (const char *const[]){metric, base, target, actual,
                                                   json_string_value(json_object_get(row, "pass"))});
        }
        table_print(t, stdout);
        json_array_foreach (rows, i, row)
                if (json_is_string(json_object_get(row, "why")))
                        printf("  %s: %s\n", json_string_value(json_object_get(row, "metric")),
                               json_string_value(json_object_get(row, "why")));
}

void output_criteria(json_t *c)
{
        const char *overall = json_string_value(json_object_get(c, "overall"));
        json_t *cmp = json_object_get(c, "compared");

        if (!c)
                return;
        if (streq_ptr(overall, "none")) {
                printf("\nsuccess criteria: none (%s)\n",
                       strna(json_string_value(json_object_get(c, "why"))));
                return;
        }
        printf("\nsuccess criteria of %s (%s)", strna(json_string_value(json_object_get(c, "feature"))),
               strna(json_string_value(json_object_get(c, "id"))));
        printf(", feature on ");
        if (json_is_integer(json_object_get(cmp, "on")))
                printf("r%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(cmp, "on")));
        else
                printf("(no run)");
        printf(" against off ");
        if (json_is_integer(json_object_get(cmp, "off")))
                printf("r%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(cmp, "off")));
        else
                printf("(no run)");
        printf(" on the %s\n", strna(json_string_value(json_object_get(cmp, "basis"))));
        if (json_is_string(json_object_get(c, "hypothesis")))
                printf("hypothesis: %s\n", json_string_value(json_object_get(c, "hypothesis")));
        criteria_rows(json_object_get(c, "rows"));
        if (json_array_size(json_object_get(c, "constraints")) > 0) {
                printf("hard constraints:\n");
                criteria_rows(json_object_get(c, "constraints"));
        }
        printf("overall: %s\n", streq_ptr(overall, "pass")   ? "PASS"
                                : streq_ptr(overall, "fail") ? "FAIL"
                                                             : "incomplete (see above: what is missing)");
}

/* Seed 001 Step 0.4's decision gate: the matrix's rules on the newest decode profile of a baseline run. */
static void decision_rules(json_t *d)
{
        json_t *r;
        size_t i;

        if (json_array_size(json_object_get(d, "rules")) == 0)
                return;
        if (json_is_integer(json_object_get(d, "run")))
                printf("\ndecision rules (seed 001 Step 0.4) on the decode profile of r%" JSON_INTEGER_FORMAT
                       " (job %" JSON_INTEGER_FORMAT "):\n",
                       json_integer_value(json_object_get(d, "run")),
                       json_integer_value(json_object_get(d, "job")));
        else
                printf("\ndecision rules (seed 001 Step 0.4): not measured (%s)\n",
                       strna(json_string_value(json_object_get(d, "why"))));
        json_array_foreach (json_object_get(d, "rules"), i, r) {
                const char *v = json_string_value(json_object_get(r, "verdict"));

                printf("  %-40s ", strna(json_string_value(json_object_get(r, "when"))));
                if (json_is_number(json_object_get(r, "share_pct")))
                        printf("%5.1f %%  ", json_number_value(json_object_get(r, "share_pct")));
                printf("%-14s -> %s\n",
                       streq_ptr(v, "holds")           ? "HOLDS"
                       : streq_ptr(v, "does-not-hold") ? "does not hold"
                                                       : "not measured",
                       strna(json_string_value(json_object_get(r, "then"))));
        }
}

static int render(json_t *params, json_t *res)
{
        json_t *f;
        size_t i;

        (void)params;
        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        printf("gates of %s\n", strna(json_string_value(json_object_get(res, "matrix"))));
        json_array_foreach (json_object_get(res, "features"), i, f) {
                const char *v = json_string_value(json_object_get(f, "verdict"));
                json_t *gates = json_object_get(f, "gates"), *g;
                size_t k;

                printf("%-4s %-24s %-12s %s\n", strna(json_string_value(json_object_get(f, "id"))),
                       strna(json_string_value(json_object_get(f, "feature"))),
                       strna(json_string_value(json_object_get(f, "status"))),
                       streq_ptr(v, "open") ? (json_array_size(gates) ? "may start" : "may start (no gate)")
                       : streq_ptr(v, "held") ? "held back"
                                              : "not yet known");
                if (json_is_string(json_object_get(f, "text")))
                        printf("       gate (for people, not judged): %s\n",
                               json_string_value(json_object_get(f, "text")));
                json_array_foreach (gates, k, g) {
                        printf("       %s %s: %s", strna(json_string_value(json_object_get(g, "of_id"))),
                               strna(json_string_value(json_object_get(g, "condition"))),
                               strna(json_string_value(json_object_get(g, "verdict"))));
                        if (json_is_number(json_object_get(g, "actual"))) {
                                _cleanup_free_ char *n = number(json_object_get(g, "actual"));

                                printf(", %s", n);
                        }
                        if (json_is_integer(json_object_get(g, "run")))
                                printf(" in r%" JSON_INTEGER_FORMAT,
                                       json_integer_value(json_object_get(g, "run")));
                        if (json_is_integer(json_object_get(g, "job")))
                                printf(" (job %" JSON_INTEGER_FORMAT ")",
                                       json_integer_value(json_object_get(g, "job")));
                        if (json_is_string(json_object_get(g, "why")))
                                printf(": %s", json_string_value(json_object_get(g, "why")));
                        putchar('\n');
                        if (json_is_string(json_object_get(g, "note")))
                                printf("         (%s)\n", json_string_value(json_object_get(g, "note")));
                }
        }
        decision_rules(json_object_get(res, "decision_rules"));
        return MX_EXIT_OK;
}

const struct remote_verb remote_gates = {"gates", render, NULL};
