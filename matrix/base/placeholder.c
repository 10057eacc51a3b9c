/* SPDX-License-Identifier: MIT */
/* Placeholders ({model}, {port}, ...) in a matrix file's command, env and flags (placeholder.h). */
#include "placeholder.h"

static const struct {
        const char *name;
        const char *description;
} placeholder_table[_MX_PLACEHOLDER_MAX] = {
        [MX_PLACEHOLDER_MODEL] = { "model", "the model to serve (target.model)" },
        [MX_PLACEHOLDER_SERVED_MODEL_NAME] = { "served_model_name",
                                               "the name clients request (target.served_model_name)" },
        [MX_PLACEHOLDER_HOST] = { "host", "the address the server must listen on" },
        [MX_PLACEHOLDER_PORT] = { "port", "the TCP port the runner picked for this run" },
        [MX_PLACEHOLDER_RUN_DIR] = { "run_dir", "the run's private directory (logs, profiler reports)" },
        [MX_PLACEHOLDER_SOURCE_DIR] = { "source_dir",
                                        "the source tree: a bisect step's checkout, else bisect.source's "
                                        "tree (metadata.sources)" },
};

const char *mx_placeholder_to_string(enum mx_placeholder p)
{
        return p >= 0 && p < _MX_PLACEHOLDER_MAX ? placeholder_table[p].name : NULL;
}

const char *mx_placeholder_description(enum mx_placeholder p)
{
        return p >= 0 && p < _MX_PLACEHOLDER_MAX ? placeholder_table[p].description : NULL;
}

enum mx_placeholder mx_placeholder_from_string(const char *s)
{
        for (int i = 0; i < _MX_PLACEHOLDER_MAX; i++)
                if (streq(placeholder_table[i].name, s))
                        return i;
        return -EINVAL;
}

static bool is_ident_start(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_ident(char c)
{
        return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* Length of the placeholder reference "{name}" at s, or 0 if s does not start one. */
static size_t reference_length(const char *s)
{
        size_t n = 1;

        if (s[0] != '{' || !is_ident_start(s[1]))
                return 0;
        while (is_ident(s[n]))
                n++;
        return s[n] == '}' ? n + 1 : 0;
}

/* Walk s, appending literal text and substitutions to out (out NULL: only check). */
static int walk(const char *s, const char *const *values, struct mx_buf *out, char **reterr)
{
        for (const char *p = s; *p;) {
                size_t n;

                if (p[0] == '{' && p[1] == '{') {
                        if (out)
                                mx_buf_putc(out, '{');
                        p += 2;
                        continue;
                }
                n = reference_length(p);
                if (n == 0) {
                        if (out)
                                mx_buf_putc(out, *p);
                        p++;
                        continue;
                }
                _cleanup_free_ char *name = xstrndup(p + 1, n - 2);
                enum mx_placeholder ph = mx_placeholder_from_string(name);

                if (ph < 0) {
                        _cleanup_free_ char *e = mx_escape(name, 64);

                        if (reterr) {
                                _cleanup_buf_ struct mx_buf known = MX_BUF_INIT;

                                for (int i = 0; i < _MX_PLACEHOLDER_MAX; i++)
                                        mx_buf_printf(&known, "%s{%s}", i > 0 ? ", " : "",
                                                      placeholder_table[i].name);
                                free(*reterr);
                                *reterr =
                                        xasprintf("unknown placeholder '{%s}' (known: %s; write '{{' for a "
                                                  "literal '{')",
                                                  e, known.data);
                        }
                        return -EINVAL;
                }
                if (out) {
                        if (!values[ph]) {
                                if (reterr) {
                                        free(*reterr);
                                        *reterr = xasprintf("placeholder '{%s}' has no value here", name);
                                }
                                return -ENXIO;
                        }
                        mx_buf_puts(out, values[ph]);
                }
                p += n;
        }
        return 0;
}

int mx_placeholder_check(const char *s, char **reterr)
{
        return walk(s, NULL, NULL, reterr);
}

int mx_placeholder_expand(const char *s, const char *const values[_MX_PLACEHOLDER_MAX], char **ret,
                          char **reterr)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        int r;

        r = walk(s, values, &b, reterr);
        if (r < 0)
                return r;
        *ret = mx_buf_steal(&b);
        return 0;
}
