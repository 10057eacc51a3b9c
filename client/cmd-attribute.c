/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix attribute JOB [--as-matrix]: the smallest sets of axis values that
 * explain each way a job's runs failed (the daemon analyses, matrix/analysis/attrib.h),
 * for people, or as known_incompatible entries to paste into the matrix file.
 */
#include "output.h"
#include "remote.h"

static size_t jsize(json_t *o, const char *k)
{
        return (size_t)json_integer_value(json_object_get(o, k));
}

/* "graphs=on ∧ spec=eagle3-* → illegal-instruction (3 of 3 failing runs, 0 passing hold it)" */
static void print_group(json_t *cls, json_t *g)
{
        printf("  %s → %s (%zu of %zu failing runs, 0 passing hold it",
               json_string_value(json_object_get(g, "text")),
               json_string_value(json_object_get(cls, "class")), jsize(g, "support"), jsize(cls, "failing"));
        if (jsize(g, "other") > 0)
                printf("; %zu failing another way", jsize(g, "other"));
        if (jsize(g, "flaky") > 0)
                printf("; %zu flaky", jsize(g, "flaky"));
        printf(")\n");
}

int attribute_render(json_t *params, json_t *res)
{
        json_t *at = json_object_get(res, "attribution"), *classes = json_object_get(at, "classes");
        json_t *flaky = json_object_get(at, "flaky"), *c, *g;
        size_t i, j;

        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        if (json_is_true(json_object_get(params, "as_matrix"))) {
                _cleanup_free_ char *s =
                        json_dumps(json_object_get(res, "known_incompatible"), JSON_INDENT(2));

                /* The member as it goes into "constraints", ready to paste. */
                printf("\"known_incompatible\": %s\n", s);
                return MX_EXIT_OK;
        }
        printf("job %" JSON_INTEGER_FORMAT
               ": %zu runs with a result, %zu passed, %zu flaky; sets of up to %zu axis "
               "values\n",
               json_integer_value(json_object_get(res, "job")), jsize(at, "runs"), jsize(at, "passing"),
               json_array_size(flaky), jsize(at, "t"));
        if (jsize(at, "t") < jsize(at, "t_asked"))
                printf("(sets of %zu values would take too long with this many axes and failures)\n",
                       jsize(at, "t_asked"));
        if (json_array_size(flaky) > 0) {
                printf("flaky (results disagree; evidence for nothing):");
                json_array_foreach (flaky, i, c)
                        printf(" r%" JSON_INTEGER_FORMAT, json_integer_value(c));
                printf("\n");
        }
        if (json_array_size(classes) == 0)
                printf("no failures to explain\n");
        json_array_foreach (classes, i, c) {
                json_t *groups = json_object_get(c, "groups");

                printf("\n%s (%s, %zu failing runs):\n", json_string_value(json_object_get(c, "class")),
                       json_string_value(json_object_get(c, "kind")), jsize(c, "failing"));
                json_array_foreach (groups, j, g)
                        print_group(c, g);
                if (json_array_size(groups) == 0)
                        printf("  no set of up to %zu axis values explains it\n", jsize(at, "t"));
                else if (jsize(c, "unexplained") > 0)
                        printf("  %zu failing runs hold none of these sets\n", jsize(c, "unexplained"));
                if (json_is_true(json_object_get(c, "truncated")))
                        printf("  (more sets exist; the best ranked are shown)\n");
        }
        return MX_EXIT_OK;
}

const struct remote_verb remote_attribute = {"attribute", attribute_render, NULL};
