/* SPDX-License-Identifier: MIT */
/*
 * The matrix file's "kernel_categories" (kcat.h: named lists of kernel-name
 * patterns, first match wins) and "decision_rules" (seed 001 Step 0.4 over
 * the categories' shares of decode time), checked with file positions.
 */
#include "matrix.h"

#include <math.h>

static int string_member(const struct mx_matrix *m, json_t *obj, const char *key, bool required, size_t max,
                         char **ret, char **reterr)
{
        json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v)
                return required ? mx_matrix_error_at(m, obj, NULL, reterr, "missing required key '%s'", key)
                                : 0;
        if (!json_is_string(v) || json_string_length(v) == 0)
                return mx_matrix_error_at(m, obj, key, reterr, "expected a non-empty string, got %s",
                                          mx_json_kind(v));
        if (json_string_length(v) > max)
                return mx_matrix_error_at(m, obj, key, reterr,
                                          "string of %zu bytes is longer than the limit of %zu",
                                          json_string_length(v), max);
        *ret = xstrdup(json_string_value(v));
        return 0;
}

static int load_category(const struct mx_matrix *m, json_t *node, struct mx_kcat_def *d, char **reterr)
{
        static const char *const keys[] = {"name", "patterns", NULL};
        json_t *pats, *p;
        size_t i;
        int r;

        r = mx_matrix_check_keys(m, node, keys, "a kernel category", reterr);
        if (r < 0)
                return r;
        r = string_member(m, node, "name", true, MX_KCAT_NAME_MAX, &d->name, reterr);
        if (r < 0)
                return r;
        if (streq(d->name, MX_KCAT_OTHER) || strchr(d->name, '+') || strpbrk(d->name, "<>%"))
                return mx_matrix_error_at(
                        m, node, "name", reterr,
                        "'%s' cannot name a category ('other' is what no category matches; "
                        "'+', '<', '>' and '%%' belong to decision rules)",
                        d->name);
        pats = json_object_get(node, "patterns");
        if (!json_is_array(pats) || json_array_size(pats) == 0)
                return mx_matrix_error_at(
                        m, node, pats ? "patterns" : NULL, reterr,
                        "a kernel category needs 'patterns', a non-empty array of strings");
        if (json_array_size(pats) > MX_KCAT_PATTERNS_MAX)
                return mx_matrix_error_at(m, node, "patterns", reterr,
                                          "%zu patterns, more than the limit of %d", json_array_size(pats),
                                          MX_KCAT_PATTERNS_MAX);
        json_array_foreach (pats, i, p) {
                _cleanup_free_ char *e = NULL;

                if (!json_is_string(p))
                        return mx_matrix_error_index(m, pats, i, reterr, "a pattern is a string, got %s",
                                         mx_json_kind(p));
                if (mx_kgate_pattern_check(json_string_value(p), &e) < 0)
                        return mx_matrix_error_index(m, pats, i, reterr, "%s", e);
                strv_push(&d->patterns, json_string_value(p));
        }
        return 0;
}

static int load_categories(struct mx_matrix *m, char **reterr)
{
        json_t *list = json_object_get(m->root, "kernel_categories"), *c;
        size_t i;
        int r;

        if (!list)
                return 0;
        if (!json_is_array(list))
                return mx_matrix_error_at(m, m->root, "kernel_categories", reterr,
                                          "expected an array, got %s", mx_json_kind(list));
        if (json_array_size(list) > MX_KCAT_MAX)
                return mx_matrix_error_at(m, m->root, "kernel_categories", reterr,
                                          "%zu categories, more than the limit of %d", json_array_size(list),
                                          MX_KCAT_MAX);
        m->has_kcats = true;
        m->kcats = xcalloc(MX_MAX(json_array_size(list), 1), sizeof(*m->kcats));
        json_array_foreach (list, i, c) {
                if (!json_is_object(c))
                        return mx_matrix_error_index(m, list, i, reterr, "a kernel category is an object, got %s",
                                         mx_json_kind(c));
                m->n_kcats = i + 1;
                r = load_category(m, c, &m->kcats[i], reterr);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < i; k++)
                        if (streq(m->kcats[k].name, m->kcats[i].name))
                                return mx_matrix_error_at(m, c, "name", reterr,
                                                          "category '%s' is declared twice",
                                                          m->kcats[i].name);
        }
        return 0;
}

const struct mx_kcat_def *mx_matrix_kcats(const struct mx_matrix *m, size_t *ret_n)
{
        if (m && m->has_kcats) {
                *ret_n = m->n_kcats;
                return m->kcats;
        }
        return mx_kcat_builtin(ret_n);
}

/* "  MoE GEMM " -> "MoE GEMM" (a copy). */
static char *trimmed(const char *s, size_t n)
{
        while (n > 0 && (*s == ' ' || *s == '\t'))
                s++, n--;
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
        return xstrndup(s, n);
}

int mx_drule_parse_when(const struct mx_kcat_def *defs, size_t n_defs, const char *when, size_t **ret_cats,
                        size_t *ret_n_cats, enum mx_gate_op *ret_op, double *ret_pct, char **reterr)
{
        static const char *const hint =
                "write 'CATEGORY [+ CATEGORY ...] OP PERCENT%', e.g. 'MoE GEMM + MoE "
                "routing > 50%' (OP one of <, <=, >, >=)";
        _cleanup_free_ size_t *cats = NULL;
        _cleanup_free_ char *num = NULL;
        const char *op = strpbrk(when, "<>"), *p, *rest;
        size_t n = 0, oplen;
        char opbuf[3] = "";
        char *end;
        double pct;

        if (!op)
                return mx_reterr(reterr, -EINVAL, "'%s' has no comparison: %s", when, hint);
        oplen = op[1] == '=' ? 2 : 1;
        memcpy(opbuf, op, oplen);
        *ret_op = mx_gate_op_from_string(opbuf);
        rest = op + oplen;
        if (strpbrk(rest, "<>"))
                return mx_reterr(reterr, -EINVAL, "'%s' has more than one comparison: %s", when, hint);
        num = trimmed(rest, strlen(rest));
        errno = 0;
        pct = strtod(num, &end);
        if (end == num || errno != 0 || !isfinite(pct) || strcmp(end, "%") != 0 || pct < 0 || pct > 100)
                return mx_reterr(reterr, -EINVAL,
                                 "'%s': '%s' is not a share of decode time from 0%% to 100%%: %s", when, num,
                                 hint);
        for (p = when; p < op;) {
                const char *plus = memchr(p, '+', (size_t)(op - p));
                const char *stop = plus ? plus : op;
                _cleanup_free_ char *name = trimmed(p, (size_t)(stop - p));
                size_t k;

                for (k = 0; k < n_defs && !streq(defs[k].name, name); k++)
                        ;
                if (k == n_defs && !streq(name, MX_KCAT_OTHER)) {
                        _cleanup_buf_ struct mx_buf known = MX_BUF_INIT;

                        for (size_t j = 0; j < n_defs; j++)
                                mx_buf_printf(&known, "%s%s", j ? ", " : "", defs[j].name);
                        return mx_reterr(reterr, -EINVAL,
                                         "'%s': '%s' is not a kernel category (categories: %s, %s)", when,
                                         name, known.data ?: "", MX_KCAT_OTHER);
                }
                for (size_t j = 0; j < n; j++)
                        if (cats[j] == k)
                                return mx_reterr(reterr, -EINVAL, "'%s': '%s' is added twice", when, name);
                cats = xreallocarray(cats, n + 1, sizeof(*cats));
                cats[n++] = k;
                p = plus ? plus + 1 : op;
        }
        *ret_cats = TAKE_PTR(cats);
        *ret_n_cats = n;
        *ret_pct = pct;
        return 0;
}

static int load_rules(struct mx_matrix *m, char **reterr)
{
        static const char *const keys[] = {"when", "then", "note", NULL};
        json_t *list = json_object_get(m->root, "decision_rules"), *d;
        const struct mx_kcat_def *defs;
        size_t i, n_defs;
        int r;

        if (!list)
                return 0;
        if (!json_is_array(list))
                return mx_matrix_error_at(m, m->root, "decision_rules", reterr, "expected an array, got %s",
                                          mx_json_kind(list));
        if (json_array_size(list) > MX_MATRIX_MAX_DECISION_RULES)
                return mx_matrix_error_at(m, m->root, "decision_rules", reterr,
                                          "%zu rules, more than the limit of %d", json_array_size(list),
                                          MX_MATRIX_MAX_DECISION_RULES);
        defs = mx_matrix_kcats(m, &n_defs);
        m->drules = xcalloc(MX_MAX(json_array_size(list), 1), sizeof(*m->drules));
        json_array_foreach (list, i, d) {
                struct mx_matrix_drule *dr = &m->drules[i];
                _cleanup_free_ char *e = NULL;

                if (!json_is_object(d))
                        return mx_matrix_error_index(m, list, i, reterr, "a decision rule is an object, got %s",
                                         mx_json_kind(d));
                m->n_drules = i + 1;
                dr->node = d;
                r = mx_matrix_check_keys(m, d, keys, "a decision rule", reterr);
                if (r >= 0)
                        r = string_member(m, d, "when", true, MX_MATRIX_MAX_STRING, &dr->when, reterr);
                if (r >= 0)
                        r = string_member(m, d, "then", true, MX_MATRIX_MAX_STRING, &dr->then, reterr);
                if (r >= 0)
                        r = string_member(m, d, "note", false, MX_MATRIX_MAX_STRING, &dr->note, reterr);
                if (r < 0)
                        return r;
                if (mx_drule_parse_when(defs, n_defs, dr->when, &dr->cats, &dr->n_cats, &dr->op, &dr->pct,
                                        &e) < 0)
                        return mx_matrix_error_at(m, d, "when", reterr, "%s", e);
        }
        return 0;
}

/*
 * load_categories() checks all that mx_kcat_new() refuses (the number of
 * categories and of patterns, each pattern through the matcher's own
 * compiler), with the position of the entry at fault; so no table is built
 * here: its readers build their own from mx_matrix_kcats().
 */
int mx_kcat_load(struct mx_matrix *m, char **reterr)
{
        int r = load_categories(m, reterr);

        if (r < 0)
                return r;
        return load_rules(m, reterr);
}

