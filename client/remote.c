/* SPDX-License-Identifier: MIT */
/*
 * The verbs that are one request to the daemon: their table, parameters from the command line, the
 * reply printed.
 */
#include "remote.h"
#include "output.h"

static const struct remote_verb *const verbs[] = {
        &remote_submit, &remote_status, &remote_list,  &remote_show,  &remote_logs,   &remote_follow,
        &remote_cancel, &remote_pause,  &remote_resume, &remote_retry, &remote_reload, &remote_gates,
        &remote_attribute, &remote_repro, &remote_history, &remote_bisect,
};

static const struct remote_verb *find_verb(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i]->name, name))
                        return verbs[i];
        return NULL;
}

void remote_list_verbs(FILE *f)
{
        const struct mx_proto *p = mx_proto_get();

        for (size_t i = 0; i < p->n_methods; i++) {
                const struct mx_proto_method *m = &p->methods[i];
                const char *syn = json_string_value(json_object_get(m->cli, "synopsis"));

                if (syn)
                        output_help_line(f, syn, m->summary);
        }
}

static bool wants_help(int argc, char **argv)
{
        for (int i = 1; i < argc; i++)
                if (streq(argv[i], "--help") || streq(argv[i], "-h"))
                        return true;
        return false;
}

/* The verb's words without --json, which every verb takes after its name as the file verbs do. */
static char **strip_json(int argc, char **argv)
{
        char **out = NULL;

        for (int i = 0; i < argc; i++)
                if (i > 0 && streq(argv[i], "--json"))
                        arg_json = true;
                else
                        strv_push(&out, argv[i]);
        return out;
}

int remote_run(const struct mx_proto_method *m, int argc, char **argv)
{
        const struct remote_verb *v = find_verb(m->name);
        _cleanup_(client_disconnectp) struct client_conn *c = NULL;
        _cleanup_json_ json_t *params = NULL, *result = NULL;
        _cleanup_strv_free_ char **words = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        if (!v)
                mx_die("protocol method '%s' has a command line but no renderer", m->name);
        if (wants_help(argc, argv)) {
                mx_proto_cli_help(mx_proto_get(), m, stdout);
                return MX_EXIT_OK;
        }
        words = strip_json(argc, argv);
        if (mx_proto_cli_parse(mx_proto_get(), m, (int)strv_length(words), words, &params, &err) < 0) {
                fprintf(stderr, "mxmatrix: %s\nUsage: mxmatrix %s\n", err,
                        json_string_value(json_object_get(m->cli, "synopsis")));
                return MX_EXIT_USAGE;
        }
        r = client_connect(&c);
        if (r != MX_EXIT_OK)
                return r;
        if (v->idle)
                client_on_idle(c, v->idle, NULL, 1000);
        r = v->call ? v->call(c, params, &result)
                    : client_call(c, m->name, params, v->stream, NULL, &result, NULL);
        if (r != MX_EXIT_OK)
                return r;
        /* Renderers print JSON themselves under --json, so exit codes stay meaningful. */
        return v->render(params, result);
}
