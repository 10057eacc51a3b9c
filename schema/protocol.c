/* SPDX-License-Identifier: MIT */
/*
 * The protocol description: loads the embedded protocol.json, checks requests and replies against it,
 * renders client help.
 */
#include "protocol.h"
#include "embedded.h"

#include <inttypes.h>

extern const struct mx_embedded mx_protocol_data[];

static const char *const privilege_names[] = {
        [MX_PRIV_ANY] = "any",
        [MX_PRIV_OWNER] = "owner",
        [MX_PRIV_ADMIN] = "admin",
};

const char *mx_privilege_to_string(enum mx_privilege p)
{
        return privilege_names[p];
}

static int privilege_from_string(const char *s, enum mx_privilege *ret)
{
        for (size_t i = 0; i < ELEMENTSOF(privilege_names); i++)
                if (streq(s, privilege_names[i])) {
                        *ret = (enum mx_privilege)i;
                        return 0;
                }
        return -EINVAL;
}

static void load_method(struct mx_proto_method *m, json_t *j)
{
        const char *priv = json_string_value(json_object_get(j, "privilege"));

        m->name = json_string_value(json_object_get(j, "name"));
        m->summary = json_string_value(json_object_get(j, "summary"));
        if (!m->name || !m->summary || !priv || privilege_from_string(priv, &m->privilege) < 0)
                mx_die("protocol.json: method without name, summary or valid privilege");
        m->mutating = json_is_true(json_object_get(j, "mutating"));
        m->stream = json_is_true(json_object_get(j, "stream"));
        m->params = json_object_get(j, "params");
        m->one_of = json_object_get(j, "one_of");
        m->reply = json_object_get(j, "reply");
        m->stream_item = json_object_get(j, "stream_item");
        m->cli = json_object_get(j, "cli");
        if (!json_is_object(m->params) || !json_is_object(m->reply) || (m->stream && !m->stream_item))
                mx_die("protocol.json: method '%s' lacks params, reply or stream_item", m->name);
}

const struct mx_proto *mx_proto_get(void)
{
        static struct mx_proto proto;
        json_error_t err;
        json_t *methods;

        if (proto.doc)
                return &proto;
        proto.doc = json_loadb(mx_protocol_data[0].data, mx_protocol_data[0].len, JSON_REJECT_DUPLICATES, &err);
        if (!proto.doc)
                mx_die("protocol.json:%d:%d: %s", err.line, err.column, err.text);
        proto.version = (int)json_integer_value(json_object_get(proto.doc, "protocol"));
        proto.types = json_object_get(proto.doc, "types");
        proto.errors = json_object_get(proto.doc, "errors");
        methods = json_object_get(proto.doc, "methods");
        if (proto.version < 1 || !json_is_object(proto.types) || !json_is_array(methods))
                mx_die("protocol.json: missing protocol, types or methods");
        proto.n_methods = json_array_size(methods);
        proto.methods = xcalloc(proto.n_methods, sizeof(*proto.methods));
        for (size_t i = 0; i < proto.n_methods; i++)
                load_method(&proto.methods[i], json_array_get(methods, i));
        return &proto;
}

const struct mx_proto_method *mx_proto_find(const struct mx_proto *p, const char *name)
{
        for (size_t i = 0; i < p->n_methods; i++)
                if (streq(p->methods[i].name, name))
                        return &p->methods[i];
        return NULL;
}

bool mx_proto_error_known(const struct mx_proto *p, const char *code)
{
        return code && json_object_get(p->errors, code) != NULL;
}

static int fail(char **reterr, const char *path, const char *fmt, ...) _printf_(3, 4);
static int fail(char **reterr, const char *path, const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        m = xvasprintf(fmt, ap);
        va_end(ap);
        if (reterr)
                *reterr = xasprintf("%s: %s", path, m);
        return -EINVAL;
}

static int64_t schema_int(json_t *schema, const char *key, int64_t def)
{
        json_t *v = json_object_get(schema, key);

        return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

static int check_string(json_t *schema, json_t *value, const char *path, char **reterr)
{
        json_t *en = json_object_get(schema, "enum");
        const char *s = json_string_value(value);
        size_t len = json_string_length(value);
        size_t i;
        json_t *e;

        if ((int64_t)len > schema_int(schema, "max_length", MX_PROTO_STRING_MAX))
                return fail(reterr, path, "string longer than %" PRId64 " bytes",
                            schema_int(schema, "max_length", MX_PROTO_STRING_MAX));
        if (strlen(s) != len)
                return fail(reterr, path, "string contains a NUL byte");
        if (!en)
                return 0;
        json_array_foreach (en, i, e)
                if (streq(json_string_value(e), s))
                        return 0;
        {
                _cleanup_free_ char *list = json_dumps(en, JSON_COMPACT);
                return fail(reterr, path, "'%s' is not one of %s", s, list);
        }
}

static int check_integer(json_t *schema, json_t *value, const char *path, char **reterr)
{
        int64_t v = (int64_t)json_integer_value(value);

        if (v < schema_int(schema, "min", INT64_MIN))
                return fail(reterr, path, "%" PRId64 " is below the minimum %" PRId64, v,
                            schema_int(schema, "min", 0));
        if (v > schema_int(schema, "max", INT64_MAX))
                return fail(reterr, path, "%" PRId64 " is above the maximum %" PRId64, v,
                            schema_int(schema, "max", 0));
        return 0;
}

static int check_array(const struct mx_proto *p, json_t *schema, json_t *value, const char *path,
                       char **reterr)
{
        json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *e;

        if ((int64_t)json_array_size(value) > schema_int(schema, "max_items", MX_PROTO_ITEMS_MAX))
                return fail(reterr, path, "more than %" PRId64 " items",
                            schema_int(schema, "max_items", MX_PROTO_ITEMS_MAX));
        if (!items)
                return 0;
        json_array_foreach (value, i, e) {
                _cleanup_free_ char *sub = xasprintf("%s[%zu]", path, i);
                int r = mx_proto_check_value(p, items, e, sub, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_object(const struct mx_proto *p, json_t *schema, json_t *value, const char *path,
                        char **reterr)
{
        json_t *props = json_object_get(schema, "properties");
        json_t *additional = json_object_get(schema, "additional");
        json_t *required = json_object_get(schema, "required");
        const char *key;
        json_t *v;
        size_t i;

        if ((int64_t)json_object_size(value) > schema_int(schema, "max_items", MX_PROTO_ITEMS_MAX))
                return fail(reterr, path, "more than %" PRId64 " keys",
                            schema_int(schema, "max_items", MX_PROTO_ITEMS_MAX));
        json_array_foreach (required, i, v)
                if (!json_object_get(value, json_string_value(v)))
                        return fail(reterr, path, "missing '%s'", json_string_value(v));
        json_object_foreach (value, key, v) {
                _cleanup_free_ char *sub = xasprintf("%s.%s", path, key);
                json_t *s = json_object_get(props, key);
                int r;

                if (!s && json_is_object(additional))
                        s = additional;
                if (!s) {
                        if (json_is_true(additional))
                                continue;
                        return fail(reterr, path, "unknown key '%s'", key);
                }
                r = mx_proto_check_value(p, s, v, sub, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int mx_proto_check_value(const struct mx_proto *p, json_t *schema, json_t *value, const char *path,
                         char **reterr)
{
        const char *ref = json_string_value(json_object_get(schema, "ref"));
        const char *type;

        if (ref) {
                json_t *target = json_object_get(p->types, ref);
                if (!target)
                        mx_die("protocol.json: unknown type '%s'", ref);
                return mx_proto_check_value(p, target, value, path, reterr);
        }
        if (json_is_null(value) && json_is_true(json_object_get(schema, "nullable")))
                return 0;
        type = json_string_value(json_object_get(schema, "type"));
        if (!type || streq(type, "any"))
                return 0;
        if (streq(type, "string"))
                return json_is_string(value) ? check_string(schema, value, path, reterr)
                                             : fail(reterr, path, "expected a string");
        if (streq(type, "integer"))
                return json_is_integer(value) ? check_integer(schema, value, path, reterr)
                                              : fail(reterr, path, "expected an integer");
        if (streq(type, "boolean"))
                return json_is_boolean(value) ? 0 : fail(reterr, path, "expected true or false");
        if (streq(type, "array"))
                return json_is_array(value) ? check_array(p, schema, value, path, reterr)
                                            : fail(reterr, path, "expected an array");
        if (streq(type, "object"))
                return json_is_object(value) ? check_object(p, schema, value, path, reterr)
                                             : fail(reterr, path, "expected an object");
        mx_die("protocol.json: unknown schema type '%s'", type);
}

int mx_proto_check_params(const struct mx_proto *p, const struct mx_proto_method *m, json_t *params,
                          char **reterr)
{
        const char *key;
        json_t *v;
        size_t given = 0, i;

        if (params && !json_is_object(params))
                return fail(reterr, "params", "expected an object");
        json_object_foreach (params, key, v) {
                json_t *s = json_object_get(m->params, key);
                _cleanup_free_ char *path = NULL;
                int r;

                if (!s)
                        return fail(reterr, "params", "unknown parameter '%s' for %s", key, m->name);
                path = xasprintf("params.%s", key);
                r = mx_proto_check_value(p, s, v, path, reterr);
                if (r < 0)
                        return r;
        }
        json_object_foreach (m->params, key, v)
                if (json_is_true(json_object_get(v, "required")) && !json_object_get(params, key))
                        return fail(reterr, "params", "missing required parameter '%s'", key);
        json_array_foreach (m->one_of, i, v)
                if (json_object_get(params, json_string_value(v)))
                        given++;
        if (m->one_of && given != 1) {
                _cleanup_free_ char *list = json_dumps(m->one_of, JSON_COMPACT);
                return fail(reterr, "params", "%s needs exactly one of %s", m->name, list);
        }
        return 0;
}

/* ---- command lines ---- */

static json_t *cli_option(const struct mx_proto_method *m, const char *flag, bool is_short)
{
        json_t *opts = json_object_get(m->cli, "options"), *o;
        size_t i;

        json_array_foreach (opts, i, o) {
                const char *name = json_string_value(json_object_get(o, is_short ? "short" : "flag"));
                if (name && streq(name, flag))
                        return o;
        }
        return NULL;
}

/* Convert a command-line word into the JSON type a parameter's schema wants. */
static int cli_value(const struct mx_proto_method *m, const char *param, const char *word, json_t *split,
                     json_t **ret, char **reterr)
{
        json_t *schema = json_object_get(m->params, param);
        const char *type = json_string_value(json_object_get(schema, "type"));
        int64_t v;

        if (type && streq(type, "integer")) {
                bool run = streq_ptr(json_string_value(json_object_get(schema, "format")), "run");

                /* A run is written rN everywhere; a bare number is taken too. */
                if (run && (word[0] == 'r' || word[0] == 'R'))
                        word++;
                if (mx_parse_int64(word, INT64_MIN, INT64_MAX, &v) < 0)
                        return fail(reterr, param,
                                    run ? "'%s' is not a run (r<number>)" : "'%s' is not an integer", word);
                *ret = json_integer(v);
        } else if (type && streq(type, "array") && json_is_string(split)) {
                _cleanup_free_ char *copy = xstrdup(word);
                char *save = NULL;
                json_t *a = json_array();

                for (char *t = strtok_r(copy, json_string_value(split), &save); t;
                     t = strtok_r(NULL, json_string_value(split), &save))
                        json_array_append_new(a, json_string(t));
                *ret = a;
        } else
                *ret = json_string(word);
        return 0;
}

/*
 * The job or run a verb names. Everywhere, N and jN are job N and rN is run N;
 * a verb that takes only one of them refuses the other with a hint, so that
 * "logs 1" never silently means run 1 while "show 1" means job 1.
 */
static int cli_target(const struct mx_proto_method *m, const char *word, json_t *params, char **reterr)
{
        const char *param = "job";
        const char *num = word;
        int64_t id;

        if (word[0] == 'r' || word[0] == 'R') {
                param = "run";
                num = word + 1;
        } else if (word[0] == 'j' || word[0] == 'J')
                num = word + 1;
        if (mx_parse_int64(num, 1, INT64_MAX, &id) < 0)
                return fail(reterr, m->name, "'%s' is neither a job number (N or jN) nor a run (rN)", word);
        if (!json_object_get(m->params, param)) {
                if (streq(param, "job"))
                        return fail(reterr, m->name,
                                    "%s takes a run (r<number>), and '%s' is job %" PRId64 ": use r%" PRId64
                                    " for run %" PRId64 ", or mxmatrix show %" PRId64
                                    " to list the job's runs",
                                    m->name, word, id, id, id, id);
                return fail(reterr, m->name,
                            "%s takes a job (N or jN), and '%s' is a run: mxmatrix show %s names its job",
                            m->name, word, word);
        }
        if (json_object_get(params, "job") || json_object_get(params, "run"))
                return fail(reterr, m->name, "more than one job or run given");
        json_object_set_new(params, param, json_integer(id));
        return 0;
}

static int cli_assignment(const struct mx_proto_method *m, const char *word, json_t *params, char **reterr)
{
        json_t *as = json_object_get(m->cli, "assignments");
        const char *key = json_string_value(json_object_get(as, "key"));
        const char *param = json_string_value(json_object_get(as, "param"));
        const char *rest = json_string_value(json_object_get(as, "rest"));
        const char *eq = strchr(word, '=');
        _cleanup_free_ char *k = NULL;
        json_t *pins;

        if (!eq || eq == word) {
                /* A bare word names the feature: "submit cutlass". */
                if (json_object_get(params, param))
                        return fail(reterr, m->name, "'%s': %s given twice", word, key);
                json_object_set_new(params, param, json_string(word));
                return 0;
        }
        k = xstrndup(word, eq - word);
        if (streq(k, key)) {
                if (json_object_get(params, param))
                        return fail(reterr, m->name, "%s given twice", key);
                json_object_set_new(params, param, json_string(eq + 1));
                return 0;
        }
        /* Words that set another parameter ("levels=L1-L3"), as its option would. */
        if (json_is_string(json_object_get(json_object_get(as, "words"), k))) {
                const char *wp = json_string_value(json_object_get(json_object_get(as, "words"), k));
                json_t *opt = NULL, *o, *val = NULL;
                size_t i;
                int r;

                json_array_foreach (json_object_get(m->cli, "options"), i, o)
                        if (streq_ptr(json_string_value(json_object_get(o, "param")), wp))
                                opt = o;
                if (json_object_get(params, wp))
                        return fail(reterr, m->name, "%s given twice", k);
                r = cli_value(m, wp, eq + 1, json_object_get(opt, "split"), &val, reterr);
                if (r < 0)
                        return r;
                json_object_set_new(params, wp, val);
                return 0;
        }
        /* "L3.concurrency=4": a dotted name goes to its own object, as text for the daemon to type. */
        if (strchr(k, '.') && json_is_string(json_object_get(as, "dotted"))) {
                const char *dp = json_string_value(json_object_get(as, "dotted"));
                json_t *o = json_object_get(params, dp);

                if (!o) {
                        o = json_object();
                        json_object_set_new(params, dp, o);
                }
                if (json_object_get(o, k))
                        return fail(reterr, m->name, "'%s' given twice", k);
                json_object_set_new(o, k, json_string(eq + 1));
                return 0;
        }
        pins = json_object_get(params, rest);
        if (!pins) {
                pins = json_object();
                json_object_set_new(params, rest, pins);
        }
        if (json_object_get(pins, k))
                return fail(reterr, m->name, "axis '%s' given twice", k);
        json_object_set_new(pins, k, json_string(eq + 1));
        return 0;
}

static int cli_word(const struct mx_proto_method *m, int argc, char **argv, int *i, json_t *params,
                    char **reterr)
{
        const char *w = argv[*i];
        bool is_short = w[0] == '-' && w[1] != '-' && w[1] != '\0';
        _cleanup_free_ char *flag = NULL;
        const char *inline_arg = NULL, *param;
        json_t *o, *val = NULL;
        int r;

        if (w[0] != '-' || w[1] == '\0') {
                if (json_is_true(json_object_get(m->cli, "target")))
                        return cli_target(m, w, params, reterr);
                if (json_object_get(m->cli, "assignments"))
                        return cli_assignment(m, w, params, reterr);
                return fail(reterr, m->name, "unexpected argument '%s'", w);
        }
        flag = xstrdup(w + (is_short ? 1 : 2));
        if (!is_short && strchr(flag, '=')) {
                *strchr(flag, '=') = '\0';
                inline_arg = strchr(w, '=') + 1;
        }
        o = cli_option(m, flag, is_short);
        if (!o)
                return fail(reterr, m->name, "unknown option '%s'", w);
        param = json_string_value(json_object_get(o, "param"));
        if (!json_object_get(o, "arg")) {
                if (inline_arg)
                        return fail(reterr, m->name, "option '--%s' takes no value", flag);
                json_object_set_new(params, param, json_true());
                return 0;
        }
        if (!inline_arg) {
                if (*i + 1 >= argc)
                        return fail(reterr, m->name, "option '%s' needs a value", w);
                inline_arg = argv[++*i];
        }
        r = cli_value(m, param, inline_arg, json_object_get(o, "split"), &val, reterr);
        if (r < 0)
                return r;
        json_object_set_new(params, param, val);
        return 0;
}

int mx_proto_cli_parse(const struct mx_proto *p, const struct mx_proto_method *m, int argc, char **argv,
                       json_t **ret_params, char **reterr)
{
        json_t *params = json_object();
        int r;

        for (int i = 1; i < argc; i++) {
                r = cli_word(m, argc, argv, &i, params, reterr);
                if (r < 0) {
                        json_decref(params);
                        return r;
                }
        }
        r = mx_proto_check_params(p, m, params, reterr);
        if (r < 0) {
                json_decref(params);
                return r;
        }
        *ret_params = params;
        return 0;
}

/* An enum's choices as "a, b, c". */
static char *cli_choices(json_t *en)
{
        struct mx_buf b = MX_BUF_INIT;
        size_t i;
        json_t *e;

        json_array_foreach (en, i, e)
                mx_buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(e));
        return mx_buf_steal(&b);
}

#define CLI_HELP_WIDTH 79  /* wrap option descriptions here */
#define CLI_HELP_INDENT 27 /* where they start */

/* An option's description, word-wrapped into the column after its flags. */
static void cli_help_text(FILE *f, const char *text)
{
        size_t col = CLI_HELP_INDENT;

        while (*text) {
                size_t n = strcspn(text, " ");

                if (col > CLI_HELP_INDENT && col + 1 + n > CLI_HELP_WIDTH) {
                        fprintf(f, "\n%*s", CLI_HELP_INDENT, "");
                        col = CLI_HELP_INDENT;
                } else if (col > CLI_HELP_INDENT) {
                        fputc(' ', f);
                        col++;
                }
                fwrite(text, 1, n, f);
                col += n;
                text += n;
                text += strspn(text, " ");
        }
        fputc('\n', f);
}

/* What the positional words of a verb mean, from its "cli" entry. */
static void cli_help_words(const struct mx_proto_method *m, FILE *f)
{
        bool has_job = json_object_get(m->params, "job") != NULL;
        json_t *as = json_object_get(m->cli, "assignments");

        if (json_is_true(json_object_get(m->cli, "target")))
                fprintf(f, "\n%s\n",
                        has_job && json_object_get(m->params, "run")
                                ? "JOB is a job number (12 or j12); rRUN a run number (r34)."
                        : has_job ? "JOB is a job number (12 or j12); a run (r34) is refused."
                                  : "rRUN is a run number (r34); a job number (12 or j12) is refused.");
        if (as && json_is_string(json_object_get(as, "help")))
                fprintf(f, "\n%s\n", json_string_value(json_object_get(as, "help")));
        else if (as)
                fprintf(f,
                        "\n%s=X (or a bare X) names what to test; other axis=value words pin that "
                        "axis.\n",
                        json_string_value(json_object_get(as, "key")));
        if (as && json_object_get(as, "dotted"))
                fputs("levels=LIST is --levels LIST; LEVEL.setting=value (L3.concurrency=4) sets a level "
                      "setting\nfor this submission.\n",
                      f);
}

void mx_proto_cli_help(const struct mx_proto *p, const struct mx_proto_method *m, FILE *f)
{
        json_t *opts = json_object_get(m->cli, "options"), *o;
        size_t i;

        (void)p;
        fprintf(f, "Usage: mxmatrix %s\n\n%c%s.\n", json_string_value(json_object_get(m->cli, "synopsis")),
                m->summary[0] >= 'a' && m->summary[0] <= 'z' ? m->summary[0] - 'a' + 'A' : m->summary[0],
                m->summary + 1);
        fprintf(f, "Privilege: %s.\n", m->privilege == MX_PRIV_ANY     ? "anyone who can open the socket"
                                       : m->privilege == MX_PRIV_OWNER ? "the job's owner, root or the admin group"
                                                                       : "root or the admin group");
        cli_help_words(m, f);
        fputs("\nOptions:\n", f);
        json_array_foreach (opts, i, o) {
                const char *flag = json_string_value(json_object_get(o, "flag"));
                const char *sh = json_string_value(json_object_get(o, "short"));
                const char *arg = json_string_value(json_object_get(o, "arg"));
                json_t *schema = json_object_get(m->params, json_string_value(json_object_get(o, "param")));
                const char *doc = json_string_value(json_object_get(schema, "doc"));
                json_t *en = json_object_get(schema, "enum");
                _cleanup_free_ char *left = xasprintf("%s%s%s--%s%s%s", sh ? "-" : "", sh ? sh : "",
                                                      sh ? ", " : "", flag, arg ? " " : "", arg ? arg : "");
                _cleanup_free_ char *choices = en && !doc ? cli_choices(en) : NULL;
                _cleanup_free_ char *text =
                        choices ? xasprintf("one of %s", choices) : xstrdup(strempty(doc));

                fprintf(f, "  %-24s ", left);
                cli_help_text(f, text);
        }
        fputs("  --json                   print the result as JSON (also before the verb)\n"
              "  -h, --help               this help\n\nSee mxmatrix(1).\n",
              f);
}

/* ---- the result vocabulary ---- */

json_t *mx_proto_results(void)
{
        return json_object_get(json_object_get(mx_proto_get()->types, "result"), "enum");
}

bool mx_result_expected(const char *result)
{
        json_t *ex = json_object_get(json_object_get(mx_proto_get()->types, "result"), "expected"), *e;
        size_t i;

        json_array_foreach (ex, i, e)
                if (streq_ptr(json_string_value(e), result))
                        return true;
        return false;
}

char *mx_result_counts_text(json_t *counts, bool states)
{
        static const char *const state_names[] = { "queued", "running" };
        struct mx_buf b = MX_BUF_INIT;
        json_t *e;
        size_t i;

        for (size_t k = 0; states && k < ELEMENTSOF(state_names); k++) {
                json_int_t n = json_integer_value(json_object_get(counts, state_names[k]));

                if (n > 0)
                        mx_buf_printf(&b, "%s%" JSON_INTEGER_FORMAT " %s", b.len ? ", " : "", n,
                                      state_names[k]);
        }
        json_array_foreach (mx_proto_results(), i, e) {
                json_int_t n = json_integer_value(json_object_get(counts, json_string_value(e)));

                if (n > 0)
                        mx_buf_printf(&b, "%s%" JSON_INTEGER_FORMAT " %s", b.len ? ", " : "", n,
                                      json_string_value(e));
        }
        if (b.len == 0)
                mx_buf_puts(&b, "no runs");
        return mx_buf_steal(&b);
}
