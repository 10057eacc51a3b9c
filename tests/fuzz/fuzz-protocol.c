/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what the daemon does with one request line from a client
 * before dispatch — JSON parsing with duplicate keys refused, then the
 * parameter checks of schema/protocol.json for the named method (and, when the
 * method is unknown, for every method). Also the client's command-line parser
 * on the same bytes split into words. Nothing may crash or leak, and every
 * rejection must say why.
 */
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_all(const struct mx_proto *p, json_t *params)
{
        for (size_t i = 0; i < p->n_methods; i++) {
                char *err = NULL;

                if (mx_proto_check_params(p, &p->methods[i], params, &err) < 0 && !err)
                        abort();
                free(err);
        }
}

static void cli(const struct mx_proto *p, const uint8_t *data, size_t size)
{
        char *copy = xmalloc(size + 1), *save = NULL; /* not strndup(): the input has no NUL to stop at */
        char *argv[64];
        int argc = 1;

        memcpy(copy, data, size);
        copy[size] = '\0';
        argv[0] = "verb";
        for (char *w = strtok_r(copy, " \n", &save); w && argc < 63; w = strtok_r(NULL, " \n", &save))
                argv[argc++] = w;
        argv[argc] = NULL;
        for (size_t i = 0; i < p->n_methods; i++) {
                json_t *params = NULL;
                char *err = NULL;

                if (!p->methods[i].cli)
                        continue;
                if (mx_proto_cli_parse(p, &p->methods[i], argc, argv, &params, &err) < 0 && !err)
                        abort();
                json_decref(params);
                free(err);
        }
        free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const struct mx_proto *p = mx_proto_get();
        json_t *msg = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
        const struct mx_proto_method *m;

        if (json_is_object(msg)) {
                json_t *params = json_object_get(msg, "params");
                m = mx_proto_find(p, json_string_value(json_object_get(msg, "method")) ?: "");
                if (m) {
                        char *err = NULL;
                        if (mx_proto_check_params(p, m, params, &err) < 0 && !err)
                                abort();
                        free(err);
                } else
                        check_all(p, params);
        }
        json_decref(msg);
        cli(p, data, size);
        return 0;
}
