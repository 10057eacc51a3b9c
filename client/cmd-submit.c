/* SPDX-License-Identifier: MIT */
/* mxmatrix submit feature=X [axis=value...]: queue a feature's test plan and show it. */
#include "output.h"
#include "remote.h"

static void print_skipped(json_t *skipped)
{
        size_t i;
        json_t *s;

        if (json_array_size(skipped) == 0)
                return;
        printf("\nnot planned (%zu):\n", json_array_size(skipped));
        json_array_foreach (skipped, i, s)
                printf("  %s: %s\n", strna(json_string_value(json_object_get(s, "config_key"))),
                       strna(json_string_value(json_object_get(s, "reason"))));
}

/* The levels, the estimate and what the user must know before leaving it overnight (warnings on stderr). */
static void print_about(json_t *res)
{
        json_t *levels = json_object_get(res, "levels"), *w;
        size_t i;

        if (json_array_size(levels) > 0) {
                printf("levels:");
                json_array_foreach (levels, i, w)
                        printf(" %s", json_string_value(w));
                putchar('\n');
        }
        if (json_is_string(json_object_get(json_object_get(res, "order"), "order"))) {
                json_t *o = json_object_get(res, "order");

                printf("order: %s (%s)%s\n", json_string_value(json_object_get(o, "order")),
                       strna(json_string_value(json_object_get(o, "why"))),
                       json_array_size(json_object_get(o, "passes")) > 1
                               ? ": every run's L1/L1.5 first, the other levels then for those that passed"
                               : "");
        }
        if (json_is_string(json_object_get(json_object_get(res, "estimate"), "text")))
                printf("estimate: %s\n", json_string_value(json_object_get(json_object_get(res, "estimate"), "text")));
        json_array_foreach (json_object_get(res, "warnings"), i, w)
                fprintf(stderr, "mxmatrix: warning: %s\n", json_string_value(w));
}

static int render(json_t *params, json_t *res)
{
        json_t *job = json_object_get(res, "job"), *runs = json_object_get(res, "runs");

        (void)params;
        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        if (json_is_integer(job))
                printf("job %" JSON_INTEGER_FORMAT " queued: %" JSON_INTEGER_FORMAT " runs\n",
                       json_integer_value(job),
                       json_is_integer(json_object_get(res, "total"))
                               ? json_integer_value(json_object_get(res, "total"))
                               : (json_int_t)json_array_size(runs));
        else
                printf("dry run: %zu runs would be queued\n", json_array_size(runs));
        print_about(res);
        putchar('\n');
        output_runs(runs);
        /* The reply holds the first page of a large job's runs. */
        if (json_is_true(json_object_get(res, "more")))
                printf("(%zu shown: mxmatrix show %" JSON_INTEGER_FORMAT " lists them all)\n",
                       json_array_size(runs), json_integer_value(job));
        print_skipped(json_object_get(res, "skipped"));
        return MX_EXIT_OK;
}

const struct remote_verb remote_submit = { "submit", render, NULL };
