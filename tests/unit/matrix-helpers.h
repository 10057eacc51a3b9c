/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test-matrix*.c unit tests. */
#pragma once

#include "test.h"
#include "expand.h"
#include "ident.h"
#include "matrix.h"

/* Load a file under tests/fixtures/matrix/ (or any source path with a '/'); aborts the test on error. */
static inline struct mx_matrix *load_fixture(const char *name)
{
        _cleanup_free_ char *path = strchr(name, '/')
                                            ? test_source_path(name)
                                            : xasprintf("%s/tests/fixtures/matrix/%s", MX_SOURCE_DIR, name);
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;
        int r = mx_matrix_load_file(path, &m, &why);

        if (r < 0)
                test_fail(__FILE__, __LINE__, "loading %s: %s", path, strna(why));
        return m;
}

static inline struct mx_matrix *load_text(const char *text)
{
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;
        int r = mx_matrix_load_string("t.json", text, strlen(text), &m, &why);

        if (r < 0)
                test_fail(__FILE__, __LINE__, "loading text: %s", strna(why));
        return m;
}

/* The whole expansion (with pins, may be NULL) as "axis=value,..." lines in file order, one per
 * configuration. */
static inline char *expand_all(const struct mx_matrix *m, const int *pins)
{
        _cleanup_(mx_expand_freep) struct mx_expand *it = mx_expand_new(m, pins);
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        const int *config;
        int r;

        mx_buf_puts(&b, "");
        while ((r = mx_expand_next(it, &config)) > 0) {
                _cleanup_free_ char *d = mx_config_describe(m, config);

                mx_buf_printf(&b, "%s\n", d);
        }
        if (r < 0)
                test_fail(__FILE__, __LINE__, "expansion failed: %d", r);
        return mx_buf_steal(&b);
}

/* A configuration from "axis=value,axis=value" (values by name or alias); aborts on an unknown name. */
static inline int *config_from(const struct mx_matrix *m, const char *s)
{
        int *c = mx_config_new(m);
        _cleanup_free_ char *copy = xstrdup(s);
        char *save = NULL;

        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '=');
                int a, v;

                if (!eq)
                        test_fail(__FILE__, __LINE__, "bad pair '%s'", tok);
                *eq = '\0';
                a = mx_matrix_axis_index(m, tok);
                if (a < 0)
                        test_fail(__FILE__, __LINE__, "no axis '%s'", tok);
                v = mx_matrix_value_index(&m->axes[a], eq + 1);
                if (v < 0)
                        test_fail(__FILE__, __LINE__, "no value '%s'", eq + 1);
                c[a] = v;
        }
        return c;
}
