/* SPDX-License-Identifier: MIT */
/* Verbs that change the queue and print one line: cancel, pause, resume, retry, reload. */
#include "output.h"
#include "remote.h"

static int render_cancel(json_t *params, json_t *res)
{
        json_t *stopping = json_object_get(res, "stopping");

        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        printf("cancelled %" JSON_INTEGER_FORMAT " queued run(s)", json_integer_value(json_object_get(res, "cancelled")));
        if (json_is_integer(stopping))
                printf("; stopping r%" JSON_INTEGER_FORMAT, json_integer_value(stopping));
        putchar('\n');
        (void)params;
        return MX_EXIT_OK;
}

static int render_paused(json_t *params, json_t *res)
{
        (void)params;
        if (arg_json)
                output_json(res);
        else
                puts(json_is_true(json_object_get(res, "paused")) ? "queue paused: no new run starts"
                                                                  : "queue resumed");
        return MX_EXIT_OK;
}

static int render_retry(json_t *params, json_t *res)
{
        (void)params;
        if (arg_json)
                output_json(res);
        else
                printf("requeued %" JSON_INTEGER_FORMAT " run(s)\n", json_integer_value(json_object_get(res, "requeued")));
        return MX_EXIT_OK;
}

static int render_reload(json_t *params, json_t *res)
{
        (void)params;
        if (arg_json)
                output_json(res);
        else
                printf("reloaded %s\n", strna(json_string_value(json_object_get(res, "matrix"))));
        return MX_EXIT_OK;
}

const struct remote_verb remote_cancel = { "cancel", render_cancel, NULL };
const struct remote_verb remote_pause = { "pause", render_paused, NULL };
const struct remote_verb remote_resume = { "resume", render_paused, NULL };
const struct remote_verb remote_retry = { "retry", render_retry, NULL };
const struct remote_verb remote_reload = { "reload", render_reload, NULL };
