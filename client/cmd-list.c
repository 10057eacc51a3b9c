/* SPDX-License-Identifier: MIT */
/* mxmatrix list: jobs, newest first. */
#include "output.h"
#include "remote.h"

static int render(json_t *params, json_t *res)
{
        json_t *jobs = json_object_get(res, "jobs");

        (void)params;
        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        if (json_array_size(jobs) == 0) {
                puts("no jobs");
                return MX_EXIT_OK;
        }
        output_jobs(jobs);
        if (json_is_true(json_object_get(res, "more")))
                printf("(more: mxmatrix list --before %" JSON_INTEGER_FORMAT ")\n",
                       json_integer_value(json_object_get(json_array_get(jobs, json_array_size(jobs) - 1), "id")));
        return MX_EXIT_OK;
}

const struct remote_verb remote_list = { "list", render, NULL };
