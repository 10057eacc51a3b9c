/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix bisect: start a bisection, show one (--status) or cancel one; with
 * --wait, ask every second until it ends, printing each step once decided.
 */
#include "output.h"
#include "remote.h"

#include <inttypes.h>
#include <unistd.h>

static bool active(json_t *bs)
{
        const char *s = json_string_value(json_object_get(bs, "state"));

        return streq_ptr(s, "resolving") || streq_ptr(s, "running");
}

/* "  3  1a2b3c4d5e6f  bad   r14  tg32 180.2 against 257.0 ..." */
static void step_line(json_t *st)
{
        json_t *runs = json_object_get(st, "runs");
        json_t *last = json_array_get(runs, json_array_size(runs) ? json_array_size(runs) - 1 : 0);
        char run[32] = "-";

        if (last)
                snprintf(run, sizeof(run), "r%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(last, "run")));

        printf("  %3" JSON_INTEGER_FORMAT "  %.12s  %-8s  %-6s  %s\n", json_integer_value(json_object_get(st, "idx")),
               strna(json_string_value(json_object_get(st, "sha"))), strna(json_string_value(json_object_get(st, "state"))),
               run,
               strempty(json_string_value(json_object_get(st, "message"))));
}

static void print_bisection(json_t *bs)
{
        json_t *st;
        size_t i;

        printf("bisection %" JSON_INTEGER_FORMAT ": %s, %s in %s, %s..%s, %zu commits, decided by %s\n",
               json_integer_value(json_object_get(bs, "id")), strna(json_string_value(json_object_get(bs, "state"))),
               strna(json_string_value(json_object_get(bs, "config_key"))),
               strna(json_string_value(json_object_get(bs, "repo"))),
               strna(json_string_value(json_object_get(bs, "good_arg"))),
               strna(json_string_value(json_object_get(bs, "bad_arg"))),
               json_array_size(json_object_get(bs, "commits")) ? json_array_size(json_object_get(bs, "commits")) - 1 : 0,
               json_is_string(json_object_get(bs, "level")) ? json_string_value(json_object_get(bs, "level"))
                                                            : strna(json_string_value(json_object_get(bs, "metric"))));
        if (json_array_size(json_object_get(bs, "steps")))
                printf("  IDX  COMMIT        STATE     RUN     WHY\n");
        json_array_foreach (json_object_get(bs, "steps"), i, st)
                step_line(st);
        if (json_is_string(json_object_get(bs, "message")))
                printf("%s\n", json_string_value(json_object_get(bs, "message")));
}

static int bisect_call(struct client_conn *c, json_t *params, json_t **ret_result)
{
        _cleanup_json_ json_t *res = NULL;
        int64_t id;
        size_t shown = 0;
        int r = client_call(c, "bisect", params, NULL, NULL, &res, NULL);

        if (r != MX_EXIT_OK || !json_is_true(json_object_get(params, "wait")) ||
            json_object_get(params, "cancel"))
                goto out;
        id = json_is_integer(json_object_get(res, "bisection"))
                     ? json_integer_value(json_object_get(res, "bisection"))
                     : json_integer_value(json_object_get(json_object_get(res, "bisection"), "id"));
        if (!arg_json)
                printf("bisection %" PRId64 " started\n", id);
        for (;;) {
                _cleanup_json_ json_t *q = json_pack("{s:I}", "status", (json_int_t)id);
                json_t *bs, *steps;

                json_decref(res);
                res = NULL;
                r = client_call(c, "bisect", q, NULL, NULL, &res, NULL);
                if (r != MX_EXIT_OK)
                        return r;
                bs = json_object_get(res, "bisection");
                steps = json_object_get(bs, "steps");
                /* each step once it is decided (its finished_at is set), in the order they ran */
                while (!arg_json && shown < json_array_size(steps) &&
                       json_is_integer(json_object_get(json_array_get(steps, shown), "finished_at")))
                        step_line(json_array_get(steps, shown++));
                fflush(stdout);
                if (!active(bs))
                        break;
                sleep(1);
        }
out:
        *ret_result = TAKE_PTR(res);
        return r;
}

static int bisect_render(json_t *params, json_t *result)
{
        json_t *bs = json_object_get(result, "bisection");

        if (arg_json) {
                output_json(result);
        } else if (json_is_integer(bs)) {
                printf("bisection %" JSON_INTEGER_FORMAT " started for %s; mxmatrix bisect --status %" JSON_INTEGER_FORMAT
                       " [--wait] shows it\n",
                       json_integer_value(bs), strna(json_string_value(json_object_get(result, "config_key"))),
                       json_integer_value(bs));
                return MX_EXIT_OK;
        } else
                print_bisection(bs);
        /* --status and --wait: 1 when it ended without an answer; a cancel that was done is a success */
        if (json_is_object(bs) && !json_object_get(params, "cancel") && !active(bs) &&
            !streq_ptr(json_string_value(json_object_get(bs, "state")), "done"))
                return MX_EXIT_FAILURE;
        return MX_EXIT_OK;
}

const struct remote_verb remote_bisect = {
        .name = "bisect",
        .render = bisect_render,
        .call = bisect_call,
};
