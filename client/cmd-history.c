/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix history CONFIG: a configuration's stored L4 results in commit
 * order, one row per server start, the change points marked in the series
 * and listed under it in words, each with the bisect command line that
 * narrows it to one commit (issue 19 items 1 and 2).
 */
#include "output.h"
#include "remote.h"

#include <math.h>

static char *fixed(json_t *v, int digits)
{
        return json_is_number(v) && isfinite(json_number_value(v)) ? xasprintf("%.*f", digits, json_number_value(v))
                                                                    : xstrdup("-");
}

/* The change point that starts at index i, or NULL. */
static json_t *change_at(json_t *cps, size_t i)
{
        json_t *cp;
        size_t k;

        json_array_foreach (cps, k, cp)
                if ((size_t)json_integer_value(json_object_get(cp, "index")) == i)
                        return cp;
        return NULL;
}

static int render(json_t *params, json_t *res)
{
        static const char *const headers[] = {"COMMIT", "MEASURED", "RUN", "VALUE", "±", "CHANGE", NULL};
        _cleanup_(table_freep) struct table *t = table_new(headers);
        json_t *series = json_object_get(res, "series"), *cps = json_object_get(res, "change_points"), *p, *cp;
        const char *metric = json_string_value(json_object_get(res, "metric"));
        size_t i;

        (void)params;
        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        printf("%s, %s t/s by commit of %s (one row per server start)\n",
               strna(json_string_value(json_object_get(res, "config_key"))), strna(metric),
               json_string_value(json_object_get(res, "source")) ?: "(no source tree recorded)");
        json_array_foreach (series, i, p) {
                _cleanup_free_ char *commit = xstrndup(strempty(json_string_value(json_object_get(p, "commit"))), 12);
                _cleanup_free_ char *when = output_time(json_object_get(p, "started_at"));
                _cleanup_free_ char *run = xasprintf("r%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
                                                     json_integer_value(json_object_get(p, "run")),
                                                     json_integer_value(json_object_get(p, "attempt")));
                _cleanup_free_ char *value = fixed(json_object_get(p, "value"), 2);
                _cleanup_free_ char *sd = fixed(json_object_get(p, "sd"), 2);
                _cleanup_free_ char *mark = NULL;

                if ((cp = change_at(cps, i)))
                        mark = xasprintf("<- %+.1f %%", json_number_value(json_object_get(cp, "change_pct")));
                table_add(t, (const char *const[]){commit, when, run, value, sd, mark ? mark : ""});
        }
        if (json_array_size(series) == 0)
                printf("No stored L4 result with %s and a recorded commit.\n", strna(metric));
        else
                table_print(t, stdout);
        if (json_array_size(series) > 0 && json_array_size(cps) == 0)
                printf("\nNo change point (E-divisive means, p < %.2g, at least %" JSON_INTEGER_FORMAT
                       " starts a segment).\n",
                       json_number_value(json_object_get(res, "alpha")),
                       json_integer_value(json_object_get(res, "min_size")));
        json_array_foreach (cps, i, cp)
                printf("\n%s\n  bisect: %s\n", strna(json_string_value(json_object_get(cp, "summary"))),
                       strna(json_string_value(json_object_get(cp, "bisect"))));
        if (json_integer_value(json_object_get(res, "untested_segments")) > 0)
                printf("\n%" JSON_INTEGER_FORMAT " segment(s) not searched for change points: the search's work "
                       "bound (%" JSON_INTEGER_FORMAT " distances) ran out; fewer points (--points N) search "
                       "them all.\n",
                       json_integer_value(json_object_get(res, "untested_segments")),
                       json_integer_value(json_object_get(res, "work_max")));
        return MX_EXIT_OK;
}

const struct remote_verb remote_history = {"history", render, NULL, NULL};
