/* SPDX-License-Identifier: MIT */
/* mxmatrix status: the queue, the current run with its level and elapsed time, counts. */
#include "output.h"
#include "progress.h"
#include "remote.h"

#include <inttypes.h>

static void print_counts(json_t *counts)
{
        bool done = json_integer_value(json_object_get(counts, "done")) > 0;
        _cleanup_free_ char *results = mx_result_counts_text(counts, false);

        /* The results in the words of list and show: protocol.json's result vocabulary. */
        printf("runs:    %" JSON_INTEGER_FORMAT " queued, %" JSON_INTEGER_FORMAT
               " running, %" JSON_INTEGER_FORMAT " done%s%s%s in %" JSON_INTEGER_FORMAT " jobs\n",
               json_integer_value(json_object_get(counts, "queued")),
               json_integer_value(json_object_get(counts, "running")),
               json_integer_value(json_object_get(counts, "done")), done ? " (" : "", done ? results : "",
               done ? ")" : "", json_integer_value(json_object_get(counts, "jobs")));
}

static void print_current(json_t *cur)
{
        _cleanup_free_ char *el = NULL;

        if (!json_is_object(cur)) {
                printf("current: none\n");
                return;
        }
        el = mx_format_duration(json_integer_value(json_object_get(cur, "elapsed_ms")) * 1000);
        printf("current: r%" JSON_INTEGER_FORMAT " of job %" JSON_INTEGER_FORMAT ", attempt %" JSON_INTEGER_FORMAT
               ", %s for %s%s\n         %s\n",
               json_integer_value(json_object_get(cur, "run")), json_integer_value(json_object_get(cur, "job")),
               json_integer_value(json_object_get(cur, "attempt")),
               json_string_value(json_object_get(cur, "level")) ?: "starting", el,
               json_is_true(json_object_get(cur, "stopping")) ? " (stopping)" : "",
               strna(json_string_value(json_object_get(cur, "config_key"))));
}

/* The same summary as follow's progress line, for each job under way. */
static void print_progress(json_t *jobs)
{
        size_t i;
        json_t *j;

        json_array_foreach (jobs, i, j) {
                struct progress p;
                _cleanup_free_ char *s = NULL;

                if (!json_object_get(j, "progress"))
                        continue;
                progress_from_job(j, mx_now_real_us(), &p);
                s = progress_format(&p);
                printf("job %" JSON_INTEGER_FORMAT ":  %s\n", json_integer_value(json_object_get(j, "id")),
                       s);
        }
}

static int render(json_t *params, json_t *res)
{
        json_t *d = json_object_get(res, "daemon");
        _cleanup_free_ char *up = output_elapsed(json_object_get(d, "started_at"), NULL);

        (void)params;
        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        printf("daemon:  mxmatrixd %s, pid %" JSON_INTEGER_FORMAT ", up %s, %" JSON_INTEGER_FORMAT " clients\n",
               strna(json_string_value(json_object_get(d, "version"))), json_integer_value(json_object_get(d, "pid")),
               up, json_integer_value(json_object_get(d, "clients")));
        {
                const char *err = json_string_value(json_object_get(d, "matrix_error"));
                bool loaded = json_is_true(json_object_get(d, "matrix_loaded"));

                /* A failed reload keeps the previous version in use: say which case this is. */
                printf("matrix:  %s%s%s\n", json_string_value(json_object_get(d, "matrix")) ?: "(none)",
                       !err          ? ""
                       : loaded ? ": the last reload failed; the previous version is in use: "
                                : ": NOT LOADED: ",
                       strempty(err));
        }
        {
                const char *why = json_string_value(json_object_get(res, "pause_reason"));

                printf("queue:   %s%s%s\n",
                       json_is_true(json_object_get(res, "paused")) ? "PAUSED (mxmatrix resume)" : "running",
                       why ? ": " : "", strempty(why));
        }
        print_current(json_object_get(res, "current"));
        print_counts(json_object_get(res, "counts"));
        print_progress(json_object_get(res, "queue"));
        if (json_array_size(json_object_get(res, "queue")) > 0) {
                putchar('\n');
                output_jobs(json_object_get(res, "queue"));
        }
        return MX_EXIT_OK;
}

const struct remote_verb remote_status = { "status", render, NULL };
