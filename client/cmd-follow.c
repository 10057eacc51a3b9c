/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix follow JOB: one line per event until every run of the job is done.
 * Exit status 0 when every run went as expected (pass or xfail, protocol.json's
 * "expected" results), 1 otherwise.
 */
#include "output.h"
#include "remote.h"

static int stream(json_t *e, void *ud)
{
        json_t *detail = json_object_get(e, "detail");
        _cleanup_free_ char *when = output_time(json_object_get(e, "at"));
        _cleanup_free_ char *text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
        _cleanup_free_ char *run = json_is_integer(json_object_get(e, "run"))
                                           ? xasprintf("r%" JSON_INTEGER_FORMAT,
                                                       json_integer_value(json_object_get(e, "run")))
                                           : xstrdup("-");

        (void)ud;
        if (arg_json) {
                _cleanup_free_ char *s = json_dumps(e, JSON_COMPACT);
                puts(s);
        } else
                printf("%s  %-6s %-15s %s\n", when, run, strna(json_string_value(json_object_get(e, "kind"))),
                       strempty(text));
        fflush(stdout);
        return 0;
}

static int render(json_t *params, json_t *job)
{
        json_t *c = json_object_get(job, "counts"), *e;
        json_int_t good = 0, total = json_integer_value(json_object_get(c, "total"));
        _cleanup_free_ char *results = mx_result_counts_text(c, true);
        size_t i;

        (void)params;
        json_array_foreach (mx_proto_results(), i, e)
                if (mx_result_expected(json_string_value(e)))
                        good += json_integer_value(json_object_get(c, json_string_value(e)));
        if (arg_json)
                output_json(job);
        else
                printf("job %" JSON_INTEGER_FORMAT " %s: %s; %" JSON_INTEGER_FORMAT
                       " of %" JSON_INTEGER_FORMAT " runs as expected (pass or xfail)\n",
                       json_integer_value(json_object_get(job, "id")),
                       strna(json_string_value(json_object_get(job, "state"))), results, good, total);
        return good == total ? MX_EXIT_OK : MX_EXIT_FAILURE;
}

const struct remote_verb remote_follow = { "follow", render, stream };
