/* SPDX-License-Identifier: MIT */
/*
 * Loading a matrix file: jansson parses the text (rejecting duplicate keys),
 * then every key is checked here against docs/mxmatrix.json.5. The first
 * error rejects the whole file; it names FILE:LINE:COL and the key's path.
 */
#include "levelcat.h"
#include "matrix.h"
#include "metadata.h"
#include "profile.h"
#include "expand.h"
#include "placeholder.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sys/stat.h>

#define MX_MATRIX_MAX_ENV_NAME 128

struct loader {
        struct mx_matrix *m;
        char **reterr;
};

_printf_(4, 5) static int err(struct loader *l, json_t *node, const char *key, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = mx_matrix_verror_at(l->m, node, key, SIZE_MAX, l->reterr, fmt, ap);
        va_end(ap);
        return r;
}

_printf_(4, 5) static int err_index(struct loader *l, json_t *array, size_t index, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = mx_matrix_verror_at(l->m, array, NULL, index, l->reterr, fmt, ap);
        va_end(ap);
        return r;
}

/* ---- generic checks ---- */

/* Reject members of obj that are not in allowed (NULL-terminated); what names the object for the message. */
static int check_keys(struct loader *l, json_t *obj, const char *const *allowed, const char *what)
{
        return mx_matrix_check_keys(l->m, obj, allowed, what, l->reterr);
}

enum kind { KIND_OBJECT, KIND_ARRAY, KIND_STRING, KIND_INTEGER, KIND_NUMBER, KIND_BOOL };

static bool kind_matches(json_t *v, enum kind k)
{
        switch (k) {
        case KIND_OBJECT:
                return json_is_object(v);
        case KIND_ARRAY:
                return json_is_array(v);
        case KIND_STRING:
                return json_is_string(v);
        case KIND_INTEGER:
                return json_is_integer(v);
        case KIND_NUMBER:
                return json_is_number(v);
        case KIND_BOOL:
                return json_is_boolean(v);
        }
        return false;
}

static const char *const kind_names[] = {
        [KIND_OBJECT] = "an object",   [KIND_ARRAY] = "an array",  [KIND_STRING] = "a string",
        [KIND_INTEGER] = "an integer", [KIND_NUMBER] = "a number", [KIND_BOOL] = "a boolean",
};

/* Fetch obj[key] of the given kind; *ret = NULL when absent and not required. */
static int member(struct loader *l, json_t *obj, const char *key, enum kind k, bool required, json_t **ret)
{
        json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v) {
                if (required)
                        return err(l, obj, NULL, "missing required key '%s'", key);
                *ret = NULL;
                return 0;
        }
        if (!kind_matches(v, k))
                return err(l, obj, key, "expected %s, got %s", kind_names[k], mx_json_kind(v));
        *ret = v;
        return 0;
}

/* A string member no longer than max bytes; *ret is a copy, or NULL when absent and optional. */
static int member_string(struct loader *l, json_t *obj, const char *key, bool required, size_t max,
                         char **ret)
{
        json_t *v;
        int r;

        r = member(l, obj, key, KIND_STRING, required, &v);
        if (r < 0)
                return r;
        if (!v) {
                *ret = NULL;
                return 0;
        }
        if (json_string_length(v) > max)
                return err(l, obj, key, "string of %zu bytes is longer than the limit of %zu",
                           json_string_length(v), max);
        *ret = xstrdup(json_string_value(v));
        return 0;
}

_Static_assert(MX_MATRIX_MAX_NAME == 64, "NAME_RULE states the limit");
#define NAME_RULE "a name is 1 to 64 characters of [A-Za-z0-9._+-] starting with a letter or digit"

/* Report an invalid name at obj[key] or at element index of array node. */
static int name_error(struct loader *l, json_t *node, const char *key, size_t index, const char *name)
{
        _cleanup_free_ char *e = mx_escape(name, MX_MATRIX_MAX_NAME);

        if (key || index == SIZE_MAX)
                return err(l, node, key, "invalid name '%s': " NAME_RULE, e);
        return err_index(l, node, index, "invalid name '%s': " NAME_RULE, e);
}

/* A name member (see mx_matrix_name_valid()). */
static int member_name(struct loader *l, json_t *obj, const char *key, bool required, char **ret)
{
        _cleanup_free_ char *s = NULL;
        int r;

        r = member_string(l, obj, key, required, MX_MATRIX_MAX_STRING, &s);
        if (r < 0)
                return r;
        if (s && !mx_matrix_name_valid(s))
                return name_error(l, obj, key, SIZE_MAX, s);
        *ret = TAKE_PTR(s);
        return 0;
}

static bool env_name_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > MX_MATRIX_MAX_ENV_NAME || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
                        return false;
        return true;
}

/* An array of at most max strings (each at most MX_MATRIX_MAX_STRING bytes); placeholders checked if asked.
 */
static int member_strings(struct loader *l, json_t *obj, const char *key, size_t max, bool placeholders,
                          char ***ret)
{
        _cleanup_strv_free_ char **list = NULL;
        json_t *a, *v;
        size_t i;
        int r;

        r = member(l, obj, key, KIND_ARRAY, false, &a);
        if (r < 0 || !a) {
                if (r >= 0)
                        *ret = NULL;
                return r;
        }
        if (json_array_size(a) > max)
                return err(l, obj, key, "%zu entries, more than the limit of %zu", json_array_size(a), max);
        list = xcalloc(1, sizeof(char *));
        json_array_foreach (a, i, v) {
                _cleanup_free_ char *why = NULL;

                if (!json_is_string(v))
                        return err_index(l, a, i, "expected a string, got %s", mx_json_kind(v));
                if (json_string_length(v) > MX_MATRIX_MAX_STRING)
                        return err_index(l, a, i, "string of %zu bytes is longer than the limit of %d",
                                         json_string_length(v), MX_MATRIX_MAX_STRING);
                if (placeholders && mx_placeholder_check(json_string_value(v), &why) < 0)
                        return err_index(l, a, i, "%s", why);
                strv_push(&list, json_string_value(v));
        }
        *ret = TAKE_PTR(list);
        return 0;
}

/* An object of environment variables: NAME -> string; result as "NAME=value" in file order. */
static int member_env(struct loader *l, json_t *obj, const char *key, char ***ret)
{
        _cleanup_strv_free_ char **env = NULL;
        const char *k;
        json_t *o, *v;
        int r;

        r = member(l, obj, key, KIND_OBJECT, false, &o);
        if (r < 0 || !o) {
                if (r >= 0)
                        *ret = NULL;
                return r;
        }
        if (json_object_size(o) > MX_MATRIX_MAX_ENV)
                return err(l, obj, key, "%zu variables, more than the limit of %d", json_object_size(o),
                           MX_MATRIX_MAX_ENV);
        env = xcalloc(1, sizeof(char *));
        json_object_foreach (o, k, v) {
                _cleanup_free_ char *why = NULL;

                if (!env_name_valid(k)) {
                        _cleanup_free_ char *e = mx_escape(k, MX_MATRIX_MAX_NAME);

                        return err(l, o, k,
                                   "invalid environment variable name '%s' (want [A-Za-z_][A-Za-z0-9_]*)",
                                   e);
                }
                if (!json_is_string(v))
                        return err(l, o, k, "expected a string, got %s (write numbers as strings: \"1\")",
                                   mx_json_kind(v));
                if (json_string_length(v) > MX_MATRIX_MAX_STRING)
                        return err(l, o, k, "string of %zu bytes is longer than the limit of %d",
                                   json_string_length(v), MX_MATRIX_MAX_STRING);
                if (mx_placeholder_check(json_string_value(v), &why) < 0)
                        return err(l, o, k, "%s", why);
                strv_consume(&env, xasprintf("%s=%s", k, json_string_value(v)));
        }
        *ret = TAKE_PTR(env);
        return 0;
}

/* ---- target ---- */

static int parse_target(struct loader *l, json_t *root)
{
        struct mx_matrix *m = l->m;
        json_t *t;
        int r;

        r = member(l, root, "target", KIND_OBJECT, true, &t);
        if (r < 0)
                return r;
        m->target = t;
        /* Other keys of target belong to the runner's profile, which checks them. */
        r = member_name(l, t, "profile", false, &m->profile);
        if (r < 0)
                return r;
        if (!m->profile)
                m->profile = xstrdup("vllm");
        r = member_strings(l, t, "command", MX_MATRIX_MAX_COMMAND, true, &m->command);
        if (r < 0)
                return r;
        if (!m->command)
                return err(l, t, NULL, "missing required key 'command'");
        if (!m->command[0])
                return err(l, t, "command", "the command must have at least one word");
        r = member_env(l, t, "env", &m->target_env);
        if (r < 0)
                return r;
        r = member_string(l, t, "model", false, MX_MATRIX_MAX_STRING, &m->model);
        if (r < 0)
                return r;
        return member_string(l, t, "served_model_name", false, MX_MATRIX_MAX_STRING, &m->served_model_name);
}

/* ---- axes ---- */

static int parse_patterns_list(struct loader *l, json_t *obj, const char *key, bool alternatives,
                               struct mx_kgate_rules *rules)
{
        json_t *a, *v;
        size_t i;
        int r;

        r = member(l, obj, key, KIND_ARRAY, false, &a);
        if (r < 0 || !a)
                return r;
        if (json_array_size(a) > MX_MATRIX_MAX_PATTERNS)
                return err(l, obj, key, "%zu entries, more than the limit of %d", json_array_size(a),
                           MX_MATRIX_MAX_PATTERNS);
        json_array_foreach (a, i, v) {
                _cleanup_strv_free_ char **alts = NULL;
                json_t *e;
                size_t j;

                if (json_is_string(v))
                        strv_push(&alts, json_string_value(v));
                else if (alternatives && json_is_array(v)) {
                        if (json_array_size(v) == 0 || json_array_size(v) > MX_MATRIX_MAX_PATTERNS)
                                return err_index(l, a, i, "a list of alternatives needs 1 to %d patterns",
                                                 MX_MATRIX_MAX_PATTERNS);
                        json_array_foreach (v, j, e) {
                                if (!json_is_string(e))
                                        return err_index(l, v, j, "expected a pattern string, got %s",
                                                         mx_json_kind(e));
                                strv_push(&alts, json_string_value(e));
                        }
                } else
                        return err_index(l, a, i, "expected a pattern string%s, got %s",
                                         alternatives ? " or an array of alternative patterns" : "",
                                         mx_json_kind(v));
                for (j = 0; alts[j]; j++) {
                        _cleanup_free_ char *why = NULL;

                        if (*alts[j] == '\0' || strlen(alts[j]) > MX_MATRIX_MAX_STRING)
                                return err_index(l, json_is_array(v) ? v : a, json_is_array(v) ? j : i,
                                                 "a pattern must be 1 to %d bytes", MX_MATRIX_MAX_STRING);
                        if (mx_kgate_pattern_check(alts[j], &why) < 0)
                                return err_index(l, json_is_array(v) ? v : a, json_is_array(v) ? j : i,
                                                 "bad pattern: %s", strna(why));
                }
                if (alternatives) {
                        rules->must_see = xreallocarray(rules->must_see, rules->n_must_see + 1,
                                                        sizeof(struct mx_kgate_alt));
                        rules->must_see[rules->n_must_see++].patterns = TAKE_PTR(alts);
                } else
                        strv_push(&rules->must_not_see, alts[0]);
        }
        return 0;
}

/* expect.log or expect.kernels: must_see (with alternatives) and must_not_see. */
static int parse_expect_source(struct loader *l, json_t *expect, const char *key,
                               struct mx_kgate_rules *rules)
{
        static const char *const keys[] = { "must_see", "must_not_see", NULL };
        json_t *o;
        int r;

        r = member(l, expect, key, KIND_OBJECT, false, &o);
        if (r < 0 || !o)
                return r;
        r = check_keys(l, o, keys, "expectations");
        if (r < 0)
                return r;
        r = parse_patterns_list(l, o, "must_see", true, rules);
        if (r < 0)
                return r;
        return parse_patterns_list(l, o, "must_not_see", false, rules);
}

/* A value's kernel-gate expectations, into the struct kgate.c consumes. */
static int parse_expect(struct loader *l, json_t *value, struct mx_kgate_expect *e)
{
        static const char *const keys[] = { "log", "kernels", NULL };
        json_t *o;
        int r;

        r = member(l, value, "expect", KIND_OBJECT, false, &o);
        if (r < 0 || !o)
                return r;
        r = check_keys(l, o, keys, "expect");
        if (r < 0)
                return r;
        r = parse_expect_source(l, o, "log", &e->log);
        if (r < 0)
                return r;
        return parse_expect_source(l, o, "kernels", &e->kernels);
}

/* A boolean member with a default. */
static int member_bool(struct loader *l, json_t *obj, const char *key, bool def, bool *ret)
{
        json_t *v;
        int r;

        r = member(l, obj, key, KIND_BOOL, false, &v);
        if (r < 0)
                return r;
        *ret = v ? json_is_true(v) : def;
        return 0;
}

/* One axis value: name, aliases, env, argv, expectations, product flag. */
static int parse_value(struct loader *l, json_t *node, struct mx_matrix_value *v)
{
        static const char *const keys[] = { "name", "aliases", "description", "env",
                                            "argv", "expect",  "product",     NULL };
        int r;

        v->node = node;
        r = check_keys(l, node, keys, "an axis value");
        if (r < 0)
                return r;
        r = member_name(l, node, "name", true, &v->name);
        if (r < 0)
                return r;
        r = member_strings(l, node, "aliases", MX_MATRIX_MAX_ALIASES, false, &v->aliases);
        if (r < 0)
                return r;
        for (size_t i = 0; v->aliases && v->aliases[i]; i++)
                if (!mx_matrix_name_valid(v->aliases[i]))
                        return name_error(l, json_object_get(node, "aliases"), NULL, i, v->aliases[i]);
        r = member_string(l, node, "description", false, MX_MATRIX_MAX_STRING, &v->description);
        if (r < 0)
                return r;
        r = member_env(l, node, "env", &v->env);
        if (r < 0)
                return r;
        r = member_strings(l, node, "argv", MX_MATRIX_MAX_ARGV, true, &v->argv);
        if (r < 0)
                return r;
        r = parse_expect(l, node, &v->expect);
        if (r < 0)
                return r;
        return member_bool(l, node, "product", true, &v->product);
}

/* Names and aliases are unique within an axis; find the first clash of value vi. */
static int check_value_names(struct loader *l, struct mx_matrix_axis *a, size_t vi)
{
        struct mx_matrix_value *v = &a->values[vi];
        json_t *aliases = json_object_get(v->node, "aliases");

        for (size_t j = 0; j < vi; j++) {
                struct mx_matrix_value *w = &a->values[j];
                _cleanup_free_ char *loc = NULL;

                if (streq(w->name, v->name)) {
                        loc = mx_matrix_location(l->m, w->node);
                        return err(l, v->node, "name",
                                   "duplicate value name '%s' in axis '%s' (first at %s)", v->name, a->name,
                                   loc);
                }
                if (strv_contains(w->aliases, v->name)) {
                        loc = mx_matrix_location(l->m, w->node);
                        return err(l, v->node, "name",
                                   "value name '%s' is already an alias of value '%s' (at %s)", v->name,
                                   w->name, loc);
                }
                for (size_t k = 0; v->aliases && v->aliases[k]; k++)
                        if (streq(w->name, v->aliases[k]) || strv_contains(w->aliases, v->aliases[k])) {
                                loc = mx_matrix_location(l->m, w->node);
                                return err_index(
                                        l, aliases, k,
                                        "alias '%s' is already a name or alias of value '%s' (at %s)",
                                        v->aliases[k], w->name, loc);
                        }
        }
        for (size_t k = 0; v->aliases && v->aliases[k]; k++) {
                if (streq(v->aliases[k], v->name))
                        return err_index(l, aliases, k, "alias '%s' repeats the value's own name",
                                         v->aliases[k]);
                for (size_t j = 0; j < k; j++)
                        if (streq(v->aliases[j], v->aliases[k]))
                                return err_index(l, aliases, k, "duplicate alias '%s'", v->aliases[k]);
        }
        return 0;
}

/* One axis and its values; names and aliases must be unique within it. */
static int parse_axis(struct loader *l, json_t *node, struct mx_matrix_axis *a)
{
        static const char *const keys[] = { "name", "description", "product", "values", NULL };
        json_t *values, *v;
        size_t i;
        int r;

        a->node = node;
        r = check_keys(l, node, keys, "an axis");
        if (r < 0)
                return r;
        r = member_name(l, node, "name", true, &a->name);
        if (r < 0)
                return r;
        r = member_string(l, node, "description", false, MX_MATRIX_MAX_STRING, &a->description);
        if (r < 0)
                return r;
        r = member_bool(l, node, "product", true, &a->product);
        if (r < 0)
                return r;
        r = member(l, node, "values", KIND_ARRAY, true, &values);
        if (r < 0)
                return r;
        if (json_array_size(values) == 0 || json_array_size(values) > MX_MATRIX_MAX_VALUES)
                return err(l, node, "values", "an axis needs 1 to %d values, got %zu", MX_MATRIX_MAX_VALUES,
                           json_array_size(values));
        a->values = xcalloc(json_array_size(values), sizeof(struct mx_matrix_value));
        json_array_foreach (values, i, v) {
                if (!json_is_object(v))
                        return err_index(l, values, i, "expected an object, got %s", mx_json_kind(v));
                a->n_values = i + 1;
                r = parse_value(l, v, &a->values[i]);
                if (r < 0)
                        return r;
                r = check_value_names(l, a, i);
                if (r < 0)
                        return r;
                if (a->product && a->values[i].product)
                        a->product_set |= UINT64_C(1) << i;
        }
        if (a->product && a->product_set == 0)
                return err(l, node, "values",
                           "every value of axis '%s' has \"product\": false; mark the axis itself "
                           "\"product\": false instead",
                           a->name);
        return 0;
}

static const char target_env_owner[] = "target.env";

/* Who else sets the variable of entry ev ("NAME=value"): target_env_owner, an earlier axis's name, or NULL. */
static const char *env_owner(const struct mx_matrix *m, size_t axis, const char *ev)
{
        size_t n = strcspn(ev, "=") + 1; /* compare "NAME=" */

        for (size_t t = 0; m->target_env && m->target_env[t]; t++)
                if (strncmp(m->target_env[t], ev, n) == 0)
                        return target_env_owner;
        for (size_t b = 0; b < axis; b++)
                for (size_t w = 0; w < m->axes[b].n_values; w++)
                        for (char **e = m->axes[b].values[w].env; e && *e; e++)
                                if (strncmp(*e, ev, n) == 0)
                                        return m->axes[b].name;
        return NULL;
}

/* An environment variable may be set by one axis (or target.env) only, so no order decides between them. */
static int check_env_owners(struct loader *l)
{
        struct mx_matrix *m = l->m;

        for (size_t a = 0; a < m->n_axes; a++)
                for (size_t v = 0; v < m->axes[a].n_values; v++)
                        for (char **e = m->axes[a].values[v].env; e && *e; e++) {
                                const char *owner = env_owner(m, a, *e);
                                _cleanup_free_ char *name = NULL;

                                if (!owner)
                                        continue;
                                name = xstrndup(*e, strcspn(*e, "="));
                                if (owner == target_env_owner)
                                        return err(l, json_object_get(m->axes[a].values[v].node, "env"), name,
                                                   "variable '%s' is also set by target.env; set it in one place",
                                                   name);
                                return err(l, json_object_get(m->axes[a].values[v].node, "env"), name,
                                           "variable '%s' is also set by axis '%s'; an environment variable "
                                           "belongs to one axis",
                                           name, owner);
                        }
        return 0;
}

/* Bytewise order of axis names: the order of identity keys. */
static int cmp_axis_name(const void *a, const void *b, void *userdata)
{
        const struct mx_matrix *m = userdata;

        return strcmp(m->axes[*(const unsigned *)a].name, m->axes[*(const unsigned *)b].name);
}

/* All axes: unique names, the identity order, one owner per environment variable. */
static int parse_axes(struct loader *l, json_t *root)
{
        struct mx_matrix *m = l->m;
        json_t *axes, *a;
        size_t i;
        int r;

        r = member(l, root, "axes", KIND_ARRAY, true, &axes);
        if (r < 0)
                return r;
        if (json_array_size(axes) == 0 || json_array_size(axes) > MX_MATRIX_MAX_AXES)
                return err(l, root, "axes", "a matrix needs 1 to %d axes, got %zu", MX_MATRIX_MAX_AXES,
                           json_array_size(axes));
        m->axes = xcalloc(json_array_size(axes), sizeof(struct mx_matrix_axis));
        json_array_foreach (axes, i, a) {
                if (!json_is_object(a))
                        return err_index(l, axes, i, "expected an object, got %s", mx_json_kind(a));
                m->n_axes = i + 1;
                r = parse_axis(l, a, &m->axes[i]);
                if (r < 0)
                        return r;
                /* "feature=X" on a command line is the feature; an axis of that name would shadow it. */
                if (streq(m->axes[i].name, "feature"))
                        return err(l, a, "name",
                                   "'feature' is reserved (feature=X names the feature to plan)");
                /* Conditions read "any" and "not" as operators, not as axes. */
                if (streq(m->axes[i].name, "any") || streq(m->axes[i].name, "not"))
                        return err(l, a, "name", "'%s' is reserved (an operator in conditions)",
                                   m->axes[i].name);
                for (size_t j = 0; j < i; j++)
                        if (streq(m->axes[j].name, m->axes[i].name)) {
                                _cleanup_free_ char *loc = mx_matrix_location(m, m->axes[j].node);

                                return err(l, a, "name", "duplicate axis name '%s' (first at %s)",
                                           m->axes[i].name, loc);
                        }
        }
        m->axes_by_name = xreallocarray(NULL, m->n_axes, sizeof(unsigned));
        for (i = 0; i < m->n_axes; i++)
                m->axes_by_name[i] = (unsigned)i;
        qsort_r(m->axes_by_name, m->n_axes, sizeof(unsigned), cmp_axis_name, m);
        return check_env_owners(l);
}

/* ---- axis references ---- */

static char *list_axes(const struct mx_matrix *m)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < m->n_axes; i++)
                mx_buf_printf(&b, "%s%s", i > 0 ? ", " : "", m->axes[i].name);
        return mx_buf_steal(&b);
}

/* "x, y (alias yy)": the values of an axis, for error messages. */
static char *list_values(const struct mx_matrix_axis *a)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < a->n_values; i++) {
                mx_buf_printf(&b, "%s%s", i > 0 ? ", " : "", a->values[i].name);
                for (size_t k = 0; a->values[i].aliases && a->values[i].aliases[k]; k++)
                        mx_buf_printf(&b, "%s%s", k == 0 ? " (alias " : ", ", a->values[i].aliases[k]);
                if (a->values[i].aliases && a->values[i].aliases[0])
                        mx_buf_putc(&b, ')');
        }
        return mx_buf_steal(&b);
}

/* obj's member key names an axis; *ret its index. */
static int resolve_axis(struct loader *l, json_t *obj, const char *key, int *ret)
{
        int a = mx_matrix_axis_index(l->m, key);

        if (a < 0) {
                _cleanup_free_ char *axes = list_axes(l->m), *e = mx_escape(key, MX_MATRIX_MAX_NAME);

                return err(l, obj, key, "unknown axis '%s' (axes: %s)", e, axes);
        }
        *ret = a;
        return 0;
}

/* v (obj[key], or element index of array obj when key is NULL) names a value of axis a. */
static int resolve_value(struct loader *l, json_t *obj, const char *key, size_t index, int a, json_t *v,
                         int *ret)
{
        const struct mx_matrix_axis *ax = &l->m->axes[a];
        int i;

        if (!json_is_string(v)) {
                if (key)
                        return err(l, obj, key, "expected a value name of axis '%s', got %s", ax->name,
                                   mx_json_kind(v));
                return err_index(l, obj, index, "expected a value name of axis '%s', got %s", ax->name,
                                 mx_json_kind(v));
        }
        i = mx_matrix_value_index(ax, json_string_value(v));
        if (i < 0) {
                _cleanup_free_ char *vals = list_values(ax),
                                    *e = mx_escape(json_string_value(v), MX_MATRIX_MAX_NAME);

                if (key)
                        return err(l, obj, key, "axis '%s' has no value '%s' (values: %s)", ax->name, e,
                                   vals);
                return err_index(l, obj, index, "axis '%s' has no value '%s' (values: %s)", ax->name, e,
                                 vals);
        }
        *ret = i;
        return 0;
}

/* An object axis -> single value; result per axis (-1 unset). */
static int parse_assignment(struct loader *l, json_t *obj, int **ret)
{
        _cleanup_free_ int *config = mx_config_new(l->m);
        const char *k;
        json_t *v;
        int r;

        json_object_foreach (obj, k, v) {
                int a = -1;

                r = resolve_axis(l, obj, k, &a);
                if (r < 0)
                        return r;
                if (json_is_array(v))
                        return err(l, obj, k, "expected one value name, got an array");
                r = resolve_value(l, obj, k, 0, a, v, &config[a]);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(config);
        return 0;
}

/* The baseline assigns every product axis. */
static int parse_baseline(struct loader *l, json_t *root)
{
        struct mx_matrix *m = l->m;
        json_t *b;
        int r;

        r = member(l, root, "baseline", KIND_OBJECT, true, &b);
        if (r < 0)
                return r;
        r = parse_assignment(l, b, &m->baseline);
        if (r < 0)
                return r;
        for (size_t a = 0; a < m->n_axes; a++)
                if (m->axes[a].product && m->baseline[a] < 0)
                        return err(l, root, "baseline",
                                   "the baseline sets no value for axis '%s'; it must "
                                   "set every product axis",
                                   m->axes[a].name);
        return 0;
}

/* ---- settings ---- */

/* Longest time limit a matrix may set: like profile durations, under a week. */
#define MX_MATRIX_MAX_SETTING_MS (INT64_C(7) * 86400 * 1000)

/* A duration member: seconds (an integer) or a string such as "30m", "2h"; 0 when absent. */
static int member_duration(struct loader *l, json_t *obj, const char *key, int64_t *ret)
{
        json_t *v = json_object_get(obj, key);
        int64_t ms = 0;

        *ret = 0;
        if (!v)
                return 0;
        if (json_is_integer(v) && json_integer_value(v) > 0 &&
            json_integer_value(v) < MX_MATRIX_MAX_SETTING_MS / 1000)
                ms = json_integer_value(v) * 1000;
        else if (!json_is_string(v) || mx_parse_duration_ms(json_string_value(v), &ms) < 0 || ms <= 0 ||
                 ms >= MX_MATRIX_MAX_SETTING_MS)
                return err(l, obj, key,
                           "expected a duration of less than 7 days: seconds, or a string such as \"30m\", "
                           "\"2h\"");
        *ret = ms;
        return 0;
}

/*
 * "settings" of the matrix or of a feature: the time limits this target
 * needs (the daemon's --run-timeout and --level-timeout otherwise, and the
 * profile's ready.timeout).
 */
static int parse_settings(struct loader *l, json_t *parent, struct mx_matrix_settings *ret)
{
        static const char *const keys[] = {"run_timeout", "level_timeout", "ready_timeout", NULL};
        static const char *const top_keys[] = {"run_timeout", "level_timeout", "ready_timeout", "order",
                                               "cache_key_axes", NULL};
        json_t *o;
        int r;

        r = member(l, parent, "settings", KIND_OBJECT, false, &o);
        if (r < 0 || !o)
                return r;
        r = check_keys(l, o, parent == l->m->root ? top_keys : keys, "settings");
        if (r >= 0)
                r = member_duration(l, o, "run_timeout", &ret->run_timeout_ms);
        if (r >= 0)
                r = member_duration(l, o, "level_timeout", &ret->level_timeout_ms);
        if (r >= 0)
                r = member_duration(l, o, "ready_timeout", &ret->ready_timeout_ms);
        return r;
}

/*
 * The run order settings (issue 19 item 3): "order" (fifo or fail-fast; unset:
 * fail-fast for more than 3 runs, matrix/plan/order.h) and
 * "cache_key_axes" (the axes whose values make a compile-cache key: runs
 * sharing one run back to back). After the axes, whose names they use.
 */
static int parse_order(struct loader *l, json_t *root)
{
        json_t *o = json_object_get(root, "settings"), *a, *v;
        size_t i;
        int r;

        if (!json_is_object(o))
                return 0;
        r = member_string(l, o, "order", false, MX_MATRIX_MAX_STRING, &l->m->order);
        if (r < 0)
                return r;
        if (l->m->order && !streq(l->m->order, "fifo") && !streq(l->m->order, "fail-fast"))
                return err(l, o, "order", "unknown order '%s' (fifo, fail-fast)", l->m->order);
        r = member(l, o, "cache_key_axes", KIND_ARRAY, false, &a);
        if (r < 0 || !a)
                return r;
        l->m->cache_key_axes = xcalloc(json_array_size(a) + 1, sizeof(int));
        json_array_foreach (a, i, v) {
                int ax = json_is_string(v) ? mx_matrix_axis_index(l->m, json_string_value(v)) : -1;

                if (ax < 0)
                        return err(l, v, NULL, "cache_key_axes: %s is not an axis of the matrix",
                                   json_is_string(v) ? json_string_value(v) : "a non-string");
                for (size_t k = 0; k < l->m->n_cache_key_axes; k++)
                        if (l->m->cache_key_axes[k] == ax)
                                return err(l, v, NULL, "cache_key_axes: axis '%s' given twice",
                                           json_string_value(v));
                l->m->cache_key_axes[l->m->n_cache_key_axes++] = ax;
        }
        return 0;
}

/* ---- features ---- */

/* One feature; dependencies are resolved once all names are known. */
static int parse_feature(struct loader *l, json_t *node, struct mx_matrix_feature *f)
{
        static const char *const keys[] = { "name",       "title",      "description", "priority", "set",
                                            "hypothesis", "criteria",   "status",      "depends_on", "gate",
                                            "settings",   "levels",     "hard_constraints", NULL };
        _cleanup_free_ char *status = NULL;
        json_t *prio, *set, *crit, *c;
        size_t i;
        int r;

        f->node = node;
        r = check_keys(l, node, keys, "a feature");
        if (r < 0)
                return r;
        r = member_name(l, node, "name", true, &f->name);
        if (r < 0)
                return r;
        r = member_string(l, node, "title", false, MX_MATRIX_MAX_STRING, &f->title);
        if (r < 0)
                return r;
        r = member_string(l, node, "description", false, MX_MATRIX_MAX_STRING, &f->description);
        if (r < 0)
                return r;
        r = member(l, node, "priority", KIND_INTEGER, true, &prio);
        if (r < 0)
                return r;
        if (json_integer_value(prio) < 1 || json_integer_value(prio) > 1000)
                return err(l, node, "priority",
                           "priority must be 1 (highest) to 1000, got %" JSON_INTEGER_FORMAT,
                           json_integer_value(prio));
        f->priority = (int)json_integer_value(prio);
        r = member(l, node, "set", KIND_OBJECT, true, &set);
        if (r < 0)
                return r;
        r = parse_assignment(l, set, &f->set);
        if (r < 0)
                return r;
        r = member_string(l, node, "hypothesis", true, MX_MATRIX_MAX_STRING, &f->hypothesis);
        if (r < 0)
                return r;
        r = member(l, node, "criteria", KIND_ARRAY, true, &crit);
        if (r < 0)
                return r;
        if (json_array_size(crit) == 0 || json_array_size(crit) > MX_MATRIX_MAX_CRITERIA)
                return err(l, node, "criteria", "a feature needs 1 to %d success criteria",
                           MX_MATRIX_MAX_CRITERIA);
        f->criteria = xcalloc(json_array_size(crit), sizeof(struct mx_matrix_criterion));
        json_array_foreach (crit, i, c) {
                if (!json_is_object(c))
                        return err_index(l, crit, i, "expected an object, got %s", mx_json_kind(c));
                f->n_criteria = i + 1;
                r = mx_criterion_load(l->m, c, &f->criteria[i], l->reterr);
                if (r < 0)
                        return r;
        }
        r = member_string(l, node, "status", true, MX_MATRIX_MAX_NAME, &status);
        if (r < 0)
                return r;
        f->status = mx_feature_status_from_string(status);
        if (f->status < 0) {
                _cleanup_free_ char *e = mx_escape(status, MX_MATRIX_MAX_NAME);

                return err(l, node, "status",
                           "unknown status '%s' (not-started, in-progress, completed or merged, blocked)",
                           e);
        }
        /* gate and hard_constraints: criteria-load.c, once every feature is known */
        return parse_settings(l, node, &f->settings);
}

/* Turn a feature's depends_on names into indices. */
static int resolve_depends(struct loader *l, struct mx_matrix_feature *f)
{
        json_t *deps, *d;
        size_t i;
        int r;

        r = member(l, f->node, "depends_on", KIND_ARRAY, false, &deps);
        if (r < 0 || !deps)
                return r;
        if (json_array_size(deps) > MX_MATRIX_MAX_FEATURES)
                return err(l, f->node, "depends_on", "more than %d dependencies", MX_MATRIX_MAX_FEATURES);
        f->depends_on = xcalloc(MX_MAX(json_array_size(deps), 1), sizeof(size_t));
        json_array_foreach (deps, i, d) {
                int k;

                if (!json_is_string(d))
                        return err_index(l, deps, i, "expected a feature name, got %s", mx_json_kind(d));
                k = mx_matrix_feature_index(l->m, json_string_value(d));
                if (k < 0) {
                        _cleanup_free_ char *e = mx_escape(json_string_value(d), MX_MATRIX_MAX_NAME);

                        return err_index(l, deps, i, "no feature is named '%s'", e);
                }
                if (&l->m->features[k] == f)
                        return err_index(l, deps, i, "a feature cannot depend on itself");
                for (size_t j = 0; j < f->n_depends_on; j++)
                        if (f->depends_on[j] == (size_t)k)
                                return err_index(l, deps, i, "duplicate dependency '%s'",
                                                 json_string_value(d));
                f->depends_on[f->n_depends_on++] = (size_t)k;
        }
        return 0;
}

/* Depth-first search for a dependency cycle through feature i; state 1 = on the stack, 2 = done. */
static int find_cycle(struct loader *l, size_t i, unsigned char *state, size_t *stack, size_t depth)
{
        struct mx_matrix *m = l->m;

        state[i] = 1;
        stack[depth] = i;
        for (size_t d = 0; d < m->features[i].n_depends_on; d++) {
                size_t j = m->features[i].depends_on[d];
                int r;

                if (state[j] == 1) {
                        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
                        size_t from = 0;

                        while (stack[from] != j)
                                from++;
                        for (size_t k = from; k <= depth; k++)
                                mx_buf_printf(&b, "%s -> ", m->features[stack[k]].name);
                        mx_buf_puts(&b, m->features[j].name);
                        return err(l, m->features[i].node, "depends_on", "dependency cycle: %s", b.data);
                }
                if (state[j] == 0) {
                        r = find_cycle(l, j, state, stack, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        state[i] = 2;
        return 0;
}

/* All features: unique names, existing dependencies, no cycles. */
static int parse_features(struct loader *l, json_t *root)
{
        struct mx_matrix *m = l->m;
        json_t *features, *f;
        size_t i;
        int r;

        r = member(l, root, "features", KIND_ARRAY, false, &features);
        if (r < 0 || !features)
                return r;
        if (json_array_size(features) > MX_MATRIX_MAX_FEATURES)
                return err(l, root, "features", "%zu features, more than the limit of %d",
                           json_array_size(features), MX_MATRIX_MAX_FEATURES);
        m->features = xcalloc(MX_MAX(json_array_size(features), 1), sizeof(struct mx_matrix_feature));
        json_array_foreach (features, i, f) {
                if (!json_is_object(f))
                        return err_index(l, features, i, "expected an object, got %s", mx_json_kind(f));
                m->n_features = i + 1;
                r = parse_feature(l, f, &m->features[i]);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++)
                        if (streq(m->features[j].name, m->features[i].name)) {
                                _cleanup_free_ char *loc = mx_matrix_location(m, m->features[j].node);

                                return err(l, f, "name", "duplicate feature name '%s' (first at %s)",
                                           m->features[i].name, loc);
                        }
        }
        for (i = 0; i < m->n_features; i++) {
                r = resolve_depends(l, &m->features[i]);
                if (r < 0)
                        return r;
        }
        _cleanup_free_ unsigned char *state = xcalloc(MX_MAX(m->n_features, 1), 1);
        _cleanup_free_ size_t *stack = xcalloc(MX_MAX(m->n_features, 1), sizeof(size_t));
        for (i = 0; i < m->n_features; i++)
                if (state[i] == 0) {
                        r = find_cycle(l, i, state, stack, 0);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* ---- constraints ---- */

enum cond_mode {
        COND_EXCLUDE, /* product axes and values only; a value or a list */
        COND_RULE,    /* any axis; a value, a list, or {"not": value or list} */
};

/* The value set of obj[key] for axis a: a name, a list of names, or (rules) {"not": ...}. */
static int parse_value_set(struct loader *l, json_t *obj, const char *key, int a, enum cond_mode mode,
                           uint64_t *ret)
{
        const struct mx_matrix_axis *ax = &l->m->axes[a];
        json_t *v = json_object_get(obj, key), *list = NULL, *holder = obj;
        const char *holder_key = key;
        bool negate = false;
        uint64_t set = 0;
        int r, i;

        if (mode == COND_RULE && json_is_object(v)) {
                static const char *const keys[] = { "not", NULL };

                r = check_keys(l, v, keys, "a condition");
                if (r < 0)
                        return r;
                holder = v;
                holder_key = "not";
                v = json_object_get(v, "not");
                if (!v)
                        return err(l, obj, key, "missing required key 'not'");
                negate = true;
        }
        if (json_is_array(v)) {
                size_t j;
                json_t *e;

                list = v;
                if (json_array_size(v) == 0)
                        return err(l, holder, holder_key, "an empty list of values matches nothing");
                json_array_foreach (list, j, e) {
                        r = resolve_value(l, list, NULL, j, a, e, &i);
                        if (r < 0)
                                return r;
                        if (mode == COND_EXCLUDE && !(ax->product_set & (UINT64_C(1) << i)))
                                return err_index(
                                        l, list, j,
                                        "value '%s' of axis '%s' is not in the product, so an exclude "
                                        "entry cannot match it (exclude runs before include)",
                                        ax->values[i].name, ax->name);
                        set |= UINT64_C(1) << i;
                }
        } else {
                r = resolve_value(l, holder, holder_key, 0, a, v, &i);
                if (r < 0)
                        return r;
                if (mode == COND_EXCLUDE && !(ax->product_set & (UINT64_C(1) << i)))
                        return err(l, holder, holder_key,
                                   "value '%s' of axis '%s' is not in the product, so an exclude entry "
                                   "cannot match it (exclude runs before include)",
                                   ax->values[i].name, ax->name);
                set = UINT64_C(1) << i;
        }
        if (negate)
                set = ~set & (ax->n_values >= 64 ? UINT64_MAX : (UINT64_C(1) << ax->n_values) - 1);
        *ret = set;
        return 0;
}

static int parse_cond_depth(struct loader *l, json_t *obj, enum cond_mode mode, bool allow_empty,
                            unsigned depth, struct mx_matrix_cond *ret);

/* cond["any"]: one or more conditions, at least one of which must hold. */
static int parse_cond_any(struct loader *l, json_t *obj, unsigned depth, struct mx_matrix_cond *ret)
{
        json_t *list = json_object_get(obj, "any"), *e;
        size_t i;
        int r;

        if (!json_is_array(list) || json_array_size(list) == 0 ||
            json_array_size(list) > MX_MATRIX_MAX_CONSTRAINTS)
                return err(l, obj, "any",
                           "'any' takes an array of 1 to %d conditions, one of which must hold",
                           MX_MATRIX_MAX_CONSTRAINTS);
        ret->any = xcalloc(json_array_size(list), sizeof(struct mx_matrix_cond));
        json_array_foreach (list, i, e) {
                if (!json_is_object(e))
                        return err_index(l, list, i, "expected a condition object, got %s", mx_json_kind(e));
                ret->n_any = i + 1;
                r = parse_cond_depth(l, e, COND_RULE, false, depth + 1, &ret->any[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* cond["not"]: a condition that must not hold. */
static int parse_cond_not(struct loader *l, json_t *obj, unsigned depth, struct mx_matrix_cond *ret)
{
        json_t *v = json_object_get(obj, "not");

        if (!json_is_object(v))
                return err(l, obj, "not", "'not' takes a condition object, which must not hold");
        ret->not_ = xcalloc(1, sizeof(struct mx_matrix_cond));
        return parse_cond_depth(l, v, COND_RULE, false, depth + 1, ret->not_);
}

/*
 * A condition object: axis -> match pairs that must all hold and, in rules and
 * known_incompatible entries, "any" (one of several conditions) and "not" (a
 * condition that must not hold), nested up to MX_MATRIX_MAX_COND_DEPTH deep.
 */
static int parse_cond_depth(struct loader *l, json_t *obj, enum cond_mode mode, bool allow_empty,
                            unsigned depth, struct mx_matrix_cond *ret)
{
        const char *k;
        json_t *v;
        int r;

        if (!allow_empty && json_object_size(obj) == 0)
                return err(l, obj, NULL, "an empty condition would match every configuration");
        if (depth > MX_MATRIX_MAX_COND_DEPTH)
                return err(l, obj, NULL, "conditions nest 'any' and 'not' at most %d deep",
                           MX_MATRIX_MAX_COND_DEPTH);
        ret->terms = xcalloc(MX_MAX(json_object_size(obj), 1), sizeof(struct mx_matrix_term));
        json_object_foreach (obj, k, v) {
                int a = -1;

                if (streq(k, "any") || streq(k, "not")) {
                        if (mode == COND_EXCLUDE)
                                return err(
                                        l, obj, k,
                                        "an exclude entry takes axis: value pairs only; '%s' is for rules "
                                        "and known_incompatible entries",
                                        k);
                        r = streq(k, "any") ? parse_cond_any(l, obj, depth, ret)
                                            : parse_cond_not(l, obj, depth, ret);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = resolve_axis(l, obj, k, &a);
                if (r < 0)
                        return r;
                if (mode == COND_EXCLUDE && !l->m->axes[a].product)
                        return err(
                                l, obj, k,
                                "axis '%s' is not in the product (\"product\": false), so an exclude entry "
                                "cannot match it (exclude runs before include)",
                                l->m->axes[a].name);
                ret->terms[ret->n_terms].axis = (unsigned)a;
                r = parse_value_set(l, obj, k, a, mode, &ret->terms[ret->n_terms].set);
                if (r < 0)
                        return r;
                ret->n_terms++;
        }
        return 0;
}

static int parse_cond(struct loader *l, json_t *obj, enum cond_mode mode, bool allow_empty,
                      struct mx_matrix_cond *ret)
{
        return parse_cond_depth(l, obj, mode, allow_empty, 0, ret);
}

/* Fetch constraints[key] as an array of objects, bounded. */
static int constraint_list(struct loader *l, json_t *c, const char *key, json_t **ret)
{
        json_t *a, *e;
        size_t i;
        int r;

        r = member(l, c, key, KIND_ARRAY, false, &a);
        if (r < 0 || !a) {
                if (r >= 0)
                        *ret = NULL;
                return r;
        }
        if (json_array_size(a) > MX_MATRIX_MAX_CONSTRAINTS)
                return err(l, c, key, "%zu entries, more than the limit of %d", json_array_size(a),
                           MX_MATRIX_MAX_CONSTRAINTS);
        json_array_foreach (a, i, e)
                if (!json_is_object(e))
                        return err_index(l, a, i, "expected an object, got %s", mx_json_kind(e));
        *ret = a;
        return 0;
}

/* constraints.exclude: partial matches on product axes and values. */
static int parse_excludes(struct loader *l, json_t *c)
{
        struct mx_matrix *m = l->m;
        json_t *list, *e;
        size_t i;
        int r;

        r = constraint_list(l, c, "exclude", &list);
        if (r < 0 || !list)
                return r;
        m->excludes = xcalloc(MX_MAX(json_array_size(list), 1), sizeof(struct mx_matrix_exclude));
        json_array_foreach (list, i, e) {
                m->n_excludes = i + 1;
                m->excludes[i].node = e;
                r = parse_cond(l, e, COND_EXCLUDE, false, &m->excludes[i].cond);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* constraints.include: one value per axis, any axis (GitHub include). */
static int parse_includes(struct loader *l, json_t *c)
{
        struct mx_matrix *m = l->m;
        json_t *list, *e;
        size_t i;
        int r;

        r = constraint_list(l, c, "include", &list);
        if (r < 0 || !list)
                return r;
        m->includes = xcalloc(MX_MAX(json_array_size(list), 1), sizeof(struct mx_matrix_include));
        json_array_foreach (list, i, e) {
                m->n_includes = i + 1;
                m->includes[i].node = e;
                if (json_object_size(e) == 0)
                        return err_index(l, list, i, "an empty include entry adds nothing");
                r = parse_assignment(l, e, &m->includes[i].values);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Covering arrays see rules as forbidden patterns (the disjunctive normal form
 * of "if and not then"); any/not can multiply them, so bound each rule and the
 * total the solver gets.
 */
static int check_rule_patterns(struct loader *l, json_t *list)
{
        struct mx_matrix *m = l->m;
        size_t total = m->n_excludes;

        for (size_t i = 0; i < m->n_rules; i++) {
                size_t n = mx_matrix_rule_patterns(m, i);

                if (n == SIZE_MAX)
                        return err_index(l, list, i,
                                         "this rule compiles into more than %d forbidden combinations (its "
                                         "'any' lists multiply); split it into several rules",
                                         MX_MATRIX_MAX_RULE_PATTERNS);
                total += n;
                if (total > MX_COVER_MAX_FORBIDDEN)
                        return err_index(l, list, i,
                                         "the rules up to this one compile into more than %d forbidden "
                                         "combinations, the covering-array solver's limit",
                                         MX_COVER_MAX_FORBIDDEN);
        }
        return 0;
}

/* constraints.rules: if/then[/else] conditions with a reason; each must compile into few enough patterns. */
static int parse_rules(struct loader *l, json_t *c)
{
        static const char *const keys[] = {"if", "then", "else", "reason", NULL};
        struct mx_matrix *m = l->m;
        json_t *list, *e, *o;
        size_t i;
        int r;

        r = constraint_list(l, c, "rules", &list);
        if (r < 0 || !list)
                return r;
        m->rules = xcalloc(MX_MAX(json_array_size(list), 1), sizeof(struct mx_matrix_rule));
        json_array_foreach (list, i, e) {
                struct mx_matrix_rule *rule = &m->rules[i];

                m->n_rules = i + 1;
                rule->node = e;
                r = check_keys(l, e, keys, "a rule");
                if (r < 0)
                        return r;
                r = member(l, e, "if", KIND_OBJECT, true, &o);
                if (r < 0)
                        return r;
                r = parse_cond(l, o, COND_RULE, true, &rule->if_);
                if (r < 0)
                        return r;
                r = member(l, e, "then", KIND_OBJECT, true, &o);
                if (r < 0)
                        return r;
                r = parse_cond(l, o, COND_RULE, false, &rule->then);
                if (r < 0)
                        return r;
                r = member(l, e, "else", KIND_OBJECT, false, &o);
                if (r < 0)
                        return r;
                if (o) {
                        rule->has_else = true;
                        r = parse_cond(l, o, COND_RULE, false, &rule->else_);
                        if (r < 0)
                                return r;
                }
                r = member_string(l, e, "reason", true, MX_MATRIX_MAX_STRING, &rule->reason);
                if (r < 0)
                        return r;
        }
        return check_rule_patterns(l, list);
}

/* constraints.known_incompatible: conditions whose runs are marked, not dropped. */
static int parse_known_incompatible(struct loader *l, json_t *c)
{
        static const char *const keys[] = { "when", "reason", "expect", "workaround", "status", NULL };
        struct mx_matrix *m = l->m;
        json_t *list, *e, *o;
        size_t i;
        int r;

        r = constraint_list(l, c, "known_incompatible", &list);
        if (r < 0 || !list)
                return r;
        m->known_incompatible =
                xcalloc(MX_MAX(json_array_size(list), 1), sizeof(struct mx_matrix_known_incompatible));
        json_array_foreach (list, i, e) {
                struct mx_matrix_known_incompatible *ki = &m->known_incompatible[i];
                _cleanup_free_ char *expect = NULL;

                m->n_known_incompatible = i + 1;
                ki->node = e;
                r = check_keys(l, e, keys, "a known_incompatible entry");
                if (r < 0)
                        return r;
                r = member(l, e, "when", KIND_OBJECT, true, &o);
                if (r < 0)
                        return r;
                r = parse_cond(l, o, COND_RULE, false, &ki->when);
                if (r < 0)
                        return r;
                r = member_string(l, e, "reason", true, MX_MATRIX_MAX_STRING, &ki->reason);
                if (r < 0)
                        return r;
                r = member_string(l, e, "expect", false, MX_MATRIX_MAX_NAME, &expect);
                if (r < 0)
                        return r;
                /* seed 003's Known Issues: the issue's own workaround and status, for the reports */
                r = member_string(l, e, "workaround", false, MX_MATRIX_MAX_STRING, &ki->workaround);
                if (r < 0)
                        return r;
                r = member_string(l, e, "status", false, MX_MATRIX_MAX_STRING, &ki->status);
                if (r < 0)
                        return r;
                ki->expect = expect ? mx_ki_expect_from_string(expect) : MX_KI_EXPECT_FAIL;
                if (ki->expect < 0) {
                        _cleanup_free_ char *x = mx_escape(expect, MX_MATRIX_MAX_NAME);

                        return err(l, e, "expect", "unknown expectation '%s' (fail, crash)", x);
                }
        }
        return 0;
}

/* The constraints object and its four lists. */
static int parse_constraints(struct loader *l, json_t *root)
{
        static const char *const keys[] = { "exclude", "include", "rules", "known_incompatible", NULL };
        json_t *c;
        int r;

        r = member(l, root, "constraints", KIND_OBJECT, false, &c);
        if (r < 0 || !c)
                return r;
        r = check_keys(l, c, keys, "constraints");
        if (r < 0)
                return r;
        r = parse_excludes(l, c);
        if (r < 0)
                return r;
        r = parse_includes(l, c);
        if (r < 0)
                return r;
        r = parse_rules(l, c);
        if (r < 0)
                return r;
        return parse_known_incompatible(l, c);
}

/* ---- whole-file checks ---- */

/* A configuration the file itself names (baseline, a feature) must survive exclude and rules. */
static int check_config(struct loader *l, const int *config, json_t *node, const char *key, const char *what)
{
        struct mx_matrix *m = l->m;
        _cleanup_free_ char *desc = mx_config_describe(m, config);
        int i;

        i = mx_matrix_excluded(m, config);
        if (i >= 0) {
                _cleanup_free_ char *loc = mx_matrix_location(m, m->excludes[i].node);

                return err(l, node, key, "%s (%s) matches the exclude entry at %s", what, desc, loc);
        }
        i = mx_matrix_broken_rule(m, config);
        if (i >= 0) {
                _cleanup_free_ char *loc = mx_matrix_location(m, m->rules[i].node);

                return err(l, node, key, "%s (%s) breaks the rule at %s: %s", what, desc, loc,
                           m->rules[i].reason);
        }
        return 0;
}

/* The baseline, and each feature applied to it, must be runnable. */
static int check_baseline_and_features(struct loader *l)
{
        struct mx_matrix *m = l->m;
        int r;

        r = check_config(l, m->baseline, m->root, "baseline", "the baseline");
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_features; i++) {
                _cleanup_free_ int *config = mx_config_copy(m, m->baseline);
                _cleanup_free_ char *what = xasprintf("feature '%s' on the baseline", m->features[i].name);

                mx_feature_apply(m, &m->features[i], config);
                r = check_config(l, config, m->features[i].node, "set", what);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Does include entry i extend some original cell (one that survived exclude)?
 * If not, GitHub appends it as a configuration of its own pairs.
 */
static bool include_matches_product(const struct mx_matrix *m, const struct mx_matrix_cover *excl, size_t i)
{
        _cleanup_free_ int *partial = xreallocarray(NULL, MX_MAX(excl->n_params, 1), sizeof(int));

        if (excl->n_params == 0)
                return false; /* include-only matrix: there are no original cells */
        for (size_t p = 0; p < excl->n_params; p++) {
                int v = m->includes[i].values[excl->param_axis[p]];

                partial[p] = -1;
                if (v < 0)
                        continue;
                for (unsigned k = 0; k < excl->n_values[p]; k++)
                        if (excl->param_values[p][k] == v)
                                partial[p] = (int)k;
                if (partial[p] < 0)
                        return false; /* a non-product value never matches an original cell */
        }
        return mx_cover_extendable(&excl->model, partial);
}

/*
 * Check includes against rules and that something is valid. Extended cells
 * only gain non-product axes, so unless a rule mentions a non-product axis
 * that an extending include sets, validity can be decided on the product
 * alone (a covering-array model) and on the appended entries. Otherwise the
 * product is streamed, within MX_MATRIX_MAX_VALIDATE_CELLS.
 */
static int check_constraints(struct loader *l)
{
        struct mx_matrix *m = l->m;
        struct mx_matrix_cover excl = {}, full = {};
        bool something_valid = false, stream = false;
        json_t *constraints = json_object_get(m->root, "constraints");
        int r = 0;

        mx_matrix_cover_build(m, NULL, false, &excl);
        for (size_t i = 0; i < m->n_includes && r >= 0; i++) {
                const int *iv = m->includes[i].values;
                int rule;

                if (include_matches_product(m, &excl, i)) {
                        for (size_t a = 0; a < m->n_axes; a++)
                                if (iv[a] >= 0 && !m->axes[a].product)
                                        for (size_t k = 0; k < m->n_rules; k++)
                                                if (mx_matrix_cond_mentions(&m->rules[k].if_, a) ||
                                                    mx_matrix_cond_mentions(&m->rules[k].then, a) ||
                                                    mx_matrix_cond_mentions(&m->rules[k].else_, a))
                                                        stream = true;
                        continue;
                }
                rule = mx_matrix_broken_rule(m, iv);
                if (rule >= 0) {
                        _cleanup_free_ char *loc = mx_matrix_location(m, m->rules[rule].node);
                        _cleanup_free_ char *desc = mx_config_describe(m, iv);

                        r = err(l, m->includes[i].node, NULL,
                                "this include entry matches no original cell, so it is appended as the "
                                "configuration %s, which breaks the rule at %s: %s",
                                desc, loc, m->rules[rule].reason);
                        break;
                }
                something_valid = true;
        }
        mx_matrix_cover_done(&excl);
        if (r < 0)
                return r;

        if (stream) {
                struct mx_expand_counts counts;

                r = mx_expand_validate(m, MX_MATRIX_MAX_VALIDATE_CELLS, &counts, l->reterr);
                if (r == -E2BIG)
                        return err(
                                l, constraints, NULL,
                                "include entries set axes that rules mention, so validating this file means "
                                "expanding its product, which has more than %" PRIu64 " cells",
                                MX_MATRIX_MAX_VALIDATE_CELLS);
                if (r < 0)
                        return r;
                something_valid = counts.valid > 0;
        } else if (!something_valid) {
                mx_matrix_cover_build(m, NULL, true, &full);
                if (full.n_params > 0) {
                        _cleanup_free_ int *partial = xreallocarray(NULL, full.n_params, sizeof(int));

                        for (size_t p = 0; p < full.n_params; p++)
                                partial[p] = -1;
                        something_valid = mx_cover_extendable(&full.model, partial);
                }
                mx_matrix_cover_done(&full);
        }
        if (!something_valid)
                return err(l, constraints ? constraints : m->root, NULL,
                           "the constraints leave no valid configuration: every cell of the product is "
                           "excluded "
                           "or breaks a rule, and no include entry adds one");
        return 0;
}

/* A duration in milliseconds, 1..MX_MATRIX_MAX_HEALTH_MS; def when absent. */
static int member_ms(struct loader *l, json_t *obj, const char *key, int64_t def, int64_t *ret)
{
        json_t *v;
        int r = member(l, obj, key, KIND_INTEGER, false, &v);

        if (r < 0)
                return r;
        if (!v) {
                *ret = def;
                return 0;
        }
        if (json_integer_value(v) < 1 || json_integer_value(v) > MX_MATRIX_MAX_HEALTH_MS)
                return err(l, obj, key, "%" JSON_INTEGER_FORMAT " ms is outside 1..%lld", json_integer_value(v),
                           (long long)MX_MATRIX_MAX_HEALTH_MS);
        *ret = json_integer_value(v);
        return 0;
}

/* "health": the daemon's check of the machine between runs (mxmatrix.json(5) HEALTH). */
static int parse_health(struct loader *l, json_t *root)
{
        static const char *const keys[] = { "command", "timeout_ms", "settle_ms", "memory_tolerance_mb", NULL };
        struct mx_matrix *m = l->m;
        json_t *h, *tol;
        int r;

        m->health_timeout_ms = MX_MATRIX_HEALTH_TIMEOUT_MS;
        m->health_settle_ms = MX_MATRIX_HEALTH_SETTLE_MS;
        m->health_memory_tolerance_mb = MX_MATRIX_HEALTH_MEMORY_TOLERANCE_MB;
        r = member(l, root, "health", KIND_OBJECT, false, &h);
        if (r < 0 || !h)
                return r;
        r = check_keys(l, h, keys, "the health section");
        if (r < 0)
                return r;
        r = member_strings(l, h, "command", MX_MATRIX_MAX_COMMAND, false, &m->health_command);
        if (r < 0)
                return r;
        if (m->health_command && !m->health_command[0])
                return err(l, h, "command", "the command must have at least one word");
        r = member_ms(l, h, "timeout_ms", MX_MATRIX_HEALTH_TIMEOUT_MS, &m->health_timeout_ms);
        if (r < 0)
                return r;
        r = member_ms(l, h, "settle_ms", MX_MATRIX_HEALTH_SETTLE_MS, &m->health_settle_ms);
        if (r < 0)
                return r;
        r = member(l, h, "memory_tolerance_mb", KIND_INTEGER, false, &tol);
        if (r < 0 || !tol)
                return r;
        if (json_integer_value(tol) < 0 || json_integer_value(tol) > MX_MATRIX_HEALTH_MEMORY_TOLERANCE_MAX_MB)
                return err(l, h, "memory_tolerance_mb", "%" JSON_INTEGER_FORMAT " MiB is outside 0..%d",
                           json_integer_value(tol), MX_MATRIX_HEALTH_MEMORY_TOLERANCE_MAX_MB);
        m->health_memory_tolerance_mb = json_integer_value(tol);
        return 0;
}

/*
 * "bisect": how `mxmatrix bisect` builds a commit of a source tree
 * (mxmatrix.json(5) BISECT): the build command run in each checkout, the
 * metadata source it checks out, the build's time limit and a metric's
 * confirmation starts.
 */
static int parse_bisect(struct loader *l, json_t *root)
{
        static const char *const keys[] = { "build", "source", "build_timeout_ms", "confirm_starts", NULL };
        _cleanup_strv_free_ char **build = NULL;
        json_t *bi, *v;
        int r;

        r = member(l, root, "bisect", KIND_OBJECT, false, &bi);
        if (r < 0 || !bi)
                return r;
        r = check_keys(l, bi, keys, "the bisect section");
        if (r < 0)
                return r;
        r = member_strings(l, bi, "build", MX_MATRIX_MAX_COMMAND, false, &build);
        if (r < 0)
                return r;
        if (!build || !build[0])
                return err(l, bi, "build", "the build command must have at least one word");
        r = member(l, bi, "source", KIND_STRING, false, &v);
        if (r < 0)
                return r;
        r = member(l, bi, "build_timeout_ms", KIND_INTEGER, false, &v);
        if (r < 0)
                return r;
        if (v && (json_integer_value(v) < 1000 || json_integer_value(v) > 7 * 24 * 3600 * 1000LL))
                return err(l, bi, "build_timeout_ms", "%" JSON_INTEGER_FORMAT " ms is outside 1000..604800000",
                           json_integer_value(v));
        r = member(l, bi, "confirm_starts", KIND_INTEGER, false, &v);
        if (r < 0)
                return r;
        if (v && (json_integer_value(v) < 1 || json_integer_value(v) > 10))
                return err(l, bi, "confirm_starts", "%" JSON_INTEGER_FORMAT " is outside 1..10",
                           json_integer_value(v));
        l->m->bisect = bi;
        return 0;
}

/* ---- reference: what the reports compare with (seed 002 "Reference: Competing Engines") ---- */

/* An optional metric of the vocabulary (mx_metrics), so reports can set a figure beside ours. */
static int reference_metric(struct loader *l, json_t *o)
{
        json_t *v;
        int r = member(l, o, "metric", KIND_STRING, false, &v);

        if (r < 0 || !v)
                return r;
        if (!mx_metric_lookup(json_string_value(v))) {
                _cleanup_free_ char *e = mx_escape(json_string_value(v), MX_MATRIX_MAX_NAME);

                return err(l, o, "metric", "unknown metric '%s' (mxmatrix.json(5), Criteria, lists them)",
                           e);
        }
        return 0;
}

static int reference_strings(struct loader *l, json_t *o, const char *const *keys)
{
        for (size_t i = 0; keys[i]; i++) {
                _cleanup_free_ char *s = NULL;
                int r = member_string(l, o, keys[i], false, MX_MATRIX_MAX_STRING, &s);

                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_reference_row(struct loader *l, json_t *row, bool target)
{
        static const char *const row_keys[] = { "name", "value", "error", "unit", "best", "metric", "note", NULL };
        static const char *const target_keys[] = { "name", "value", "metric", "note", NULL };
        static const char *const strings[] = { "unit", "note", NULL };
        _cleanup_free_ char *name = NULL;
        json_t *v;
        int r;

        if (!json_is_object(row))
                return err(l, row, NULL, "a reference row is an object, got %s", mx_json_kind(row));
        r = check_keys(l, row, target ? target_keys : row_keys, target ? "a reference target" : "a reference row");
        if (r < 0)
                return r;
        r = member_string(l, row, "name", true, MX_MATRIX_MAX_STRING, &name);
        if (r < 0)
                return r;
        r = member(l, row, "value", KIND_NUMBER, true, &v);
        if (r < 0)
                return r;
        r = member(l, row, "error", KIND_NUMBER, false, &v);
        if (r < 0)
                return r;
        r = member(l, row, "best", KIND_BOOL, false, &v);
        if (r < 0)
                return r;
        r = reference_strings(l, row, strings);
        if (r < 0)
                return r;
        return reference_metric(l, row);
}

static int parse_reference_rows(struct loader *l, json_t *o, const char *key, bool required, bool target)
{
        json_t *rows, *row;
        size_t i;
        int r = member(l, o, key, KIND_ARRAY, required, &rows);

        if (r < 0 || !rows)
                return r;
        if (json_array_size(rows) > MX_MATRIX_MAX_REF_ROWS)
                return err(l, o, key, "%zu entries, more than the limit of %d", json_array_size(rows),
                           MX_MATRIX_MAX_REF_ROWS);
        json_array_foreach (rows, i, row) {
                r = parse_reference_row(l, row, target);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * "reference": {"engines": [{name, tool, build, columns: [2 headings], rows: [{name, value, error, unit,
 * best, metric, note}]}], "targets": [{name, metric, value, note}]}. Only validated here: the reports
 * read it as it is written.
 */
static int parse_reference(struct loader *l, json_t *root)
{
        static const char *const keys[] = { "engines", "targets", NULL };
        static const char *const engine_keys[] = { "name", "tool", "build", "columns", "rows", "note", NULL };
        static const char *const strings[] = { "tool", "build", "note", NULL };
        json_t *ref, *engines, *e;
        size_t i;
        int r = member(l, root, "reference", KIND_OBJECT, false, &ref);

        if (r < 0 || !ref)
                return r;
        r = check_keys(l, ref, keys, "reference");
        if (r < 0)
                return r;
        r = member(l, ref, "engines", KIND_ARRAY, false, &engines);
        if (r < 0)
                return r;
        if (json_array_size(engines) > MX_MATRIX_MAX_REF_ENGINES)
                return err(l, ref, "engines", "%zu engines, more than the limit of %d", json_array_size(engines),
                           MX_MATRIX_MAX_REF_ENGINES);
        json_array_foreach (engines, i, e) {
                _cleanup_free_ char *name = NULL;
                json_t *cols, *c;
                size_t k;

                if (!json_is_object(e))
                        return err_index(l, engines, i, "an engine is an object, got %s", mx_json_kind(e));
                r = check_keys(l, e, engine_keys, "a reference engine");
                if (r < 0)
                        return r;
                r = member_string(l, e, "name", true, MX_MATRIX_MAX_STRING, &name);
                if (r < 0)
                        return r;
                r = reference_strings(l, e, strings);
                if (r < 0)
                        return r;
                r = member(l, e, "columns", KIND_ARRAY, false, &cols);
                if (r < 0)
                        return r;
                if (cols && json_array_size(cols) != 2)
                        return err(l, e, "columns", "two column headings (the row's name, its value), got %zu",
                                   json_array_size(cols));
                json_array_foreach (cols, k, c)
                        if (!json_is_string(c) || strlen(json_string_value(c)) > MX_MATRIX_MAX_NAME)
                                return err_index(l, cols, k, "a column heading is a string of at most %d bytes",
                                                 MX_MATRIX_MAX_NAME);
                r = parse_reference_rows(l, e, "rows", true, false);
                if (r < 0)
                        return r;
        }
        r = parse_reference_rows(l, ref, "targets", false, true);
        if (r < 0)
                return r;
        l->m->reference = ref;
        return 0;
}

/* ---- entry points ---- */

/* The root object's keys, format version, name and description. */
static int parse_header(struct loader *l, json_t *root)
{
        static const char *const keys[] = { "matrix",      "name",     "description", "target",   "profiles",
                                            "axes",        "baseline", "features",    "health",   "metadata",
                                            "constraints", "settings", "levels",      "hard_constraints",
                                            "reference", "bisect", "kernel_categories", "decision_rules", NULL };
        struct mx_matrix *m = l->m;
        json_t *version;
        int r;

        if (!json_is_object(root))
                return err(l, root, NULL, "a matrix file is a JSON object, got %s", mx_json_kind(root));
        r = check_keys(l, root, keys, "a matrix file");
        if (r < 0)
                return r;
        r = member(l, root, "matrix", KIND_INTEGER, true, &version);
        if (r < 0)
                return r;
        if (json_integer_value(version) != MX_MATRIX_FORMAT_VERSION)
                return err(l, root, "matrix",
                           "unsupported format version %" JSON_INTEGER_FORMAT
                           " (this mxmatrix reads version %d)",
                           json_integer_value(version), MX_MATRIX_FORMAT_VERSION);
        r = member_name(l, root, "name", true, &m->name);
        if (r < 0)
                return r;
        return member_string(l, root, "description", false, MX_MATRIX_MAX_STRING, &m->description);
}

/* The sections, in the order they depend on each other: target to kernel categories. */
static int parse_sections(struct loader *l, json_t *root)
{
        struct mx_matrix *m = l->m;
        int r;

        r = parse_target(l, root);
        if (r < 0)
                return r;
        r = parse_settings(l, root, &m->settings);
        if (r < 0)
                return r;
        r = member(l, root, "profiles", KIND_OBJECT, false, &m->profiles);
        if (r < 0)
                return r;
        r = parse_axes(l, root);
        if (r < 0)
                return r;
        r = parse_baseline(l, root);
        if (r < 0)
                return r;
        r = parse_order(l, root);
        if (r < 0)
                return r;
        r = parse_features(l, root);
        if (r < 0)
                return r;
        r = mx_criteria_load(m, l->reterr);
        if (r < 0)
                return r;
        r = parse_constraints(l, root);
        if (r < 0)
                return r;
        r = parse_health(l, root);
        if (r < 0)
                return r;
        r = parse_reference(l, root);
        if (r < 0)
                return r;
        r = parse_bisect(l, root);
        if (r >= 0)
                r = mx_kcat_load(m, l->reterr);
        return r;
}

/* What holds across sections: baseline and features, constraints, metadata, levels, the target's profile. */
static int check_sections(struct loader *l)
{
        struct mx_matrix *m = l->m;
        int r;

        r = check_baseline_and_features(l);
        if (r < 0)
                return r;
        r = check_constraints(l);
        if (r < 0)
                return r;
        r = mx_meta_load(m, &m->metadata, l->reterr);
        if (r < 0)
                return r;
        r = mx_matrix_levels_check(m, l->reterr);
        if (r < 0)
                return r;
        /* The runner's part of target and profiles, checked here so a bad file is refused as a whole. */
        return mx_profile_resolve(m, &m->profile_resolved, l->reterr);
}

static int parse_root(struct loader *l)
{
        int r;

        r = parse_header(l, l->m->root);
        if (r < 0)
                return r;
        r = parse_sections(l, l->m->root);
        if (r < 0)
                return r;
        return check_sections(l);
}

int mx_matrix_load_string(const char *name, const char *text, size_t len, struct mx_matrix **ret,
                          char **reterr)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = xcalloc(1, sizeof(*m));
        struct loader l = { .m = m, .reterr = reterr };
        json_error_t jerr;
        int r;

        m->path = xstrdup(name);
        if (len > MX_MATRIX_MAX_FILE_SIZE) {
                if (reterr)
                        *reterr = xasprintf("%s: %zu bytes, more than the limit of %u", name, len,
                                            MX_MATRIX_MAX_FILE_SIZE);
                return -EFBIG;
        }
        m->text = xmalloc(len + 1);
        memcpy(m->text, text, len);
        m->text[len] = '\0';
        m->text_len = len;
        m->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!m->root) {
                if (reterr) {
                        _cleanup_free_ char *file = mx_escape(name, 0);

                        *reterr = xasprintf("%s:%d:%d: invalid JSON: %s", file, jerr.line, jerr.column,
                                            jerr.text);
                }
                return -EINVAL;
        }
        r = parse_root(&l);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int mx_matrix_load_file(const char *path, struct mx_matrix **ret, char **reterr)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        struct stat st, pre;
        int r;

        /*
         * Only a regular file: opening a FIFO would block until a writer comes
         * (in the daemon: the whole event loop), a device may act on open. So
         * stat first and refuse without opening; open without blocking; and
         * check that what was opened is what was looked at.
         */
        if (stat(path, &pre) < 0) {
                int e = errno;

                if (reterr)
                        *reterr = xasprintf("%s: %s", path, strerror(e));
                return -e;
        }
        if (!S_ISREG(pre.st_mode)) {
                if (reterr)
                        *reterr = xasprintf("%s: %s", path,
                                            S_ISDIR(pre.st_mode) ? "is a directory" : "not a regular file");
                return S_ISDIR(pre.st_mode) ? -EISDIR : -EINVAL;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0) {
                int e = errno;

                if (reterr)
                        *reterr = xasprintf("%s: %s", path, strerror(e));
                return -e;
        }
        if (!S_ISREG(st.st_mode) || st.st_dev != pre.st_dev || st.st_ino != pre.st_ino) {
                if (reterr)
                        *reterr = xasprintf("%s: not a regular file (it changed while being opened)", path);
                return -EINVAL;
        }
        /* Read up to the limit plus one byte: st_size is not trusted (pipes, /proc). */
        r = mx_read_bounded(fd, MX_MATRIX_MAX_FILE_SIZE, &buf, &len);
        if (r == -EFBIG) {
                if (reterr)
                        *reterr = xasprintf("%s: larger than the limit of %u bytes", path,
                                            MX_MATRIX_MAX_FILE_SIZE);
                return r;
        }
        if (r < 0) {
                if (reterr)
                        *reterr = xasprintf("%s: %s", path, strerror(-r));
                return r;
        }
        return mx_matrix_load_string(path, buf, len, ret, reterr);
}
