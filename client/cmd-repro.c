/* SPDX-License-Identifier: MIT */
/*
 * mxmatrix repro rRUN: a shell script that starts the run's server as its
 * attempt did: the directory, the matrix's environment variables and the
 * command, placeholders expanded ({port}, {run_dir}, ...), every word
 * shell-quoted. The daemon's own environment is not in it: the script runs in
 * the caller's.
 */
#include "output.h"
#include "remote.h"

static void print_word(const char *w)
{
        _cleanup_free_ char *q = output_shell_quote(w);

        printf(" %s", q);
}

static int render(json_t *params, json_t *res)
{
        json_t *cmd = json_object_get(res, "command"), *v;
        const char *cwd = json_string_value(json_object_get(cmd, "cwd"));
        size_t i;

        (void)params;
        if (arg_json) {
                output_json(res);
                return MX_EXIT_OK;
        }
        if (!json_is_object(cmd)) {
                fprintf(stderr, "mxmatrix: r%" JSON_INTEGER_FORMAT ": %s\n",
                        json_integer_value(json_object_get(res, "run")),
                        strna(json_string_value(json_object_get(res, "why"))));
                return MX_EXIT_FAILURE;
        }
        printf("#!/bin/sh\n# r%" JSON_INTEGER_FORMAT " attempt %" JSON_INTEGER_FORMAT ": %s\n"
               "# The server start of that attempt, as mxmatrixd ran it (mxmatrix repro).\nset -eu\n",
               json_integer_value(json_object_get(res, "run")),
               json_integer_value(json_object_get(res, "attempt")),
               strna(json_string_value(json_object_get(res, "config_key"))));
        if (cwd) {
                /* The attempt's directory may be gone or another user's: make it if need be. */
                _cleanup_free_ char *q = output_shell_quote(cwd);

                printf("mkdir -p %s\ncd %s\n", q, q);
        }
        json_array_foreach (json_object_get(cmd, "env"), i, v) {
                const char *kv = strempty(json_string_value(v)), *eq = strchr(kv, '=');
                _cleanup_free_ char *val = NULL;

                if (!eq)
                        continue;
                val = output_shell_quote(eq + 1);
                printf("export %.*s=%s\n", (int)(eq - kv), kv, val);
        }
        printf("exec");
        json_array_foreach (json_object_get(cmd, "argv"), i, v)
                print_word(strempty(json_string_value(v)));
        putchar('\n');
        return MX_EXIT_OK;
}

const struct remote_verb remote_repro = {"repro", render, NULL, NULL};
