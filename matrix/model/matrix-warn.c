/* SPDX-License-Identifier: MIT */
/*
 * What a valid matrix file cannot do as written: expectations that no
 * evidence source can ever satisfy (kernel names without a profiler, any
 * expectation under the command profile, which runs no gate, a pattern that
 * must and must not be seen). matrix check prints these as warnings; plans
 * say where each kind of expectation is checked.
 */
#include "matrix.h"

/* The profile of the target as resolved at load time. */
static json_t *profile_section(const struct mx_matrix *m, const char *key)
{
        return json_object_get(m->profile_resolved, key);
}

bool mx_matrix_has_gate(const struct mx_matrix *m)
{
        return !streq(strempty(json_string_value(profile_section(m, "base"))), "command");
}

bool mx_matrix_has_profiler(const struct mx_matrix *m)
{
        return json_is_object(profile_section(m, "profiler"));
}

/* "a b c" from a JSON array of strings. */
static char *words(json_t *a)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        size_t i;
        json_t *w;

        mx_buf_puts(&b, "");
        json_array_foreach (a, i, w)
                mx_buf_printf(&b, "%s%s", i ? " " : "", strempty(json_string_value(w)));
        return mx_buf_steal(&b);
}

char *mx_matrix_evidence_log(const struct mx_matrix *m)
{
        json_t *logs = profile_section(m, "logs");
        _cleanup_free_ char *cmd = NULL;

        if (!mx_matrix_has_gate(m))
                return xstrdup("never checked: the command profile runs no kernel gate");
        if (!json_is_object(logs))
                return xstrdup("the server's output (stdout and stderr), whole run");
        cmd = words(json_object_get(logs, "command"));
        return xasprintf("the server's output (stdout and stderr) and the output of '%s', whole run", cmd);
}

char *mx_matrix_evidence_kernels(const struct mx_matrix *m)
{
        json_t *prof = profile_section(m, "profiler");
        const char *fmt;
        _cleanup_free_ char *after = NULL;

        if (!mx_matrix_has_gate(m))
                return xstrdup("never checked: the command profile runs no kernel gate");
        if (!json_is_object(prof))
                return xasprintf("never checked: profile '%s' has no profiler, so kernel expectations make "
                                 "L1.5 INVALID",
                                 m->profile);
        fmt = strempty(json_string_value(json_object_get(prof, "format")));
        if (json_is_array(json_object_get(prof, "after_stop")))
                after = words(json_object_get(prof, "after_stop"));
        return xasprintf("the profiler report %s (%s), read after the server stopped%s%s%s",
                         strempty(json_string_value(json_object_get(prof, "report"))),
                         streq(fmt, "auto") ? "nsys or ncu, from its header" : fmt,
                         after ? ", made by '" : "", strempty(after), after ? "'" : "");
}

static bool rules_empty(const struct mx_kgate_rules *r)
{
        return r->n_must_see == 0 && !(r->must_not_see && r->must_not_see[0]);
}

/* The first must-see entry whose every alternative is also a must-not-see pattern, or NULL. */
static const char *contradiction(const struct mx_kgate_rules *r)
{
        for (size_t i = 0; i < r->n_must_see; i++) {
                bool all = true;

                for (size_t k = 0; r->must_see[i].patterns[k] && all; k++)
                        all = strv_contains(r->must_not_see, r->must_see[i].patterns[k]);
                if (all)
                        return r->must_see[i].patterns[0];
        }
        return NULL;
}

_printf_(5, 6) static void warn(const struct mx_matrix *m, char ***list, json_t *node, const char *key,
                                const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        (void)mx_matrix_verror_at(m, node, key, SIZE_MAX, &msg, fmt, ap);
        va_end(ap);
        strv_consume(list, TAKE_PTR(msg));
}

/* Expectations of one value that its sources can never satisfy. */
static void value_warnings(const struct mx_matrix *m, size_t a, size_t v, char ***list)
{
        const struct mx_matrix_value *val = &m->axes[a].values[v];
        json_t *expect = json_object_get(val->node, "expect");
        const char *c;

        if (mx_kgate_expect_empty(&val->expect))
                return;
        if (!mx_matrix_has_gate(m)) {
                warn(m, list, val->node, "expect",
                     "%s=%s has expectations, but the command profile runs no kernel gate (L1.5): they are "
                     "never checked",
                     m->axes[a].name, val->name);
                return;
        }
        if (!rules_empty(&val->expect.kernels) && !mx_matrix_has_profiler(m))
                warn(m, list, expect, "kernels",
                     "kernel expectations of %s=%s need a profiler report, but profile '%s' has no "
                     "profiler: "
                     "every run with this value ends L1.5 INVALID (set target.profiler, mxmatrix.json(5) "
                     "TARGET PROFILES)",
                     m->axes[a].name, val->name, m->profile);
        if ((c = contradiction(&val->expect.log)))
                warn(m, list, expect, "log",
                     "%s=%s must see and must not see '%s' in the log: L1.5 can never pass", m->axes[a].name,
                     val->name, c);
        if ((c = contradiction(&val->expect.kernels)))
                warn(m, list, expect, "kernels",
                     "%s=%s must see and must not see kernel '%s': L1.5 can never pass", m->axes[a].name,
                     val->name, c);
}

/* A configuration the file names (the baseline, a feature on it) whose values contradict each other. */
static void config_warnings(const struct mx_matrix *m, const int *config, json_t *node, const char *key,
                            const char *what, char ***list)
{
        struct mx_kgate_expect e;
        const char *c;

        if (!mx_matrix_has_gate(m))
                return;
        mx_config_expect(m, config, &e);
        if ((c = contradiction(&e.log)) || (c = contradiction(&e.kernels))) {
                _cleanup_free_ char *desc = mx_config_describe(m, config);

                warn(m, list, node, key,
                     "%s (%s): one value must see '%s' and another must not: L1.5 can never pass", what,
                     desc, c);
        }
        mx_kgate_expect_done(&e);
}

char **mx_matrix_warnings(const struct mx_matrix *m)
{
        char **list = NULL;

        for (size_t a = 0; a < m->n_axes; a++)
                for (size_t v = 0; v < m->axes[a].n_values; v++)
                        value_warnings(m, a, v, &list);
        config_warnings(m, m->baseline, m->root, "baseline", "the baseline", &list);
        /* seed 001 Phase 9: every benchmark run MUST record the git SHAs of the trees it was built from */
        if (mx_matrix_has_gate(m) && json_object_size(json_object_get(m->metadata, "sources")) == 0)
                warn(m, &list, m->metadata ? json_object_get(m->root, "metadata") : m->root,
                     m->metadata ? "sources" : "metadata",
                     "the matrix names no source trees (metadata.sources): its runs record no git SHA or "
                     "branch, and the reports say git_sha_*: <not configured> (seed 001 Phase 9: every "
                     "benchmark run MUST record them; mxmatrix.json(5) METADATA)");
        for (size_t i = 0; i < m->n_features; i++) {
                _cleanup_free_ int *config = mx_config_copy(m, m->baseline);
                _cleanup_free_ char *what = xasprintf("feature '%s' on the baseline", m->features[i].name);

                mx_feature_apply(m, &m->features[i], config);
                config_warnings(m, config, m->features[i].node, "set", what, &list);
        }
        return list;
}
