/* SPDX-License-Identifier: MIT */
/* mxmatrix logs rRUN [-f]: the server log of a run's attempt, as it grows. */
#include "output.h"
#include "remote.h"

static int stream(json_t *item, void *ud)
{
        (void)ud;
        if (arg_json) {
                _cleanup_free_ char *s = json_dumps(item, JSON_COMPACT);
                puts(s);
        } else {
                const char *d = json_string_value(json_object_get(item, "data"));
                fputs(strempty(d), stdout);
        }
        fflush(stdout);
        return 0;
}

static int render(json_t *params, json_t *res)
{
        (void)params;
        if (arg_json)
                output_json(res);
        else if (json_integer_value(json_object_get(res, "bytes")) == 0)
                fprintf(stderr, "mxmatrix: r%" JSON_INTEGER_FORMAT " has no log output%s\n",
                        json_integer_value(json_object_get(res, "run")),
                        json_is_string(json_object_get(res, "outcome")) ? "" : " yet");
        return MX_EXIT_OK;
}

const struct remote_verb remote_logs = { "logs", render, stream };
