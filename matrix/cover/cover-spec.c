/* SPDX-License-Identifier: MIT */
/*
 * Compact text form of a covering-array model, used by the PICT size fixture,
 * the tests and the benchmark:
 *
 *     3^4 2^2 | forbid 0:{1} 2:{0,1} ; forbid 3:{0} | t=2 | pict=9
 *
 * Field one lists value counts ("V^K" is K parameters of V values, "V" one
 * parameter). Field two, optional, holds forbidden patterns separated by ';',
 * each "forbid" followed by terms "param:{values}"; "none" or nothing means no
 * constraint. Later fields are key=value: t (strength), pict (PICT's row
 * count), best (best known row count).
 */
#include "cover-spec.h"
#include "util.h"

#include <ctype.h>

struct parser {
        const char *text, *p;
        char **reterr;
};

static int fail(struct parser *ps, const char *what)
{
        if (ps->reterr)
                *ps->reterr = xasprintf("column %zu: %s", (size_t)(ps->p - ps->text) + 1, what);
        return -EINVAL;
}

static void skip_space(struct parser *ps)
{
        while (*ps->p == ' ' || *ps->p == '\t')
                ps->p++;
}

static int parse_uint(struct parser *ps, unsigned long max, unsigned long *ret)
{
        skip_space(ps);
        if (!isdigit((unsigned char)*ps->p))
                return fail(ps, "expected a number");
        unsigned long v = 0;
        while (isdigit((unsigned char)*ps->p)) {
                v = v * 10 + (unsigned long)(*ps->p++ - '0');
                if (v > max)
                        return fail(ps, "number too large");
        }
        *ret = v;
        return 0;
}

static bool field_end(struct parser *ps)
{
        skip_space(ps);
        return *ps->p == '\0' || *ps->p == '|' || *ps->p == '\n';
}

static int parse_sizes(struct parser *ps, struct mx_cover_spec *s)
{
        size_t cap = 0;
        while (!field_end(ps)) {
                unsigned long v, k = 1;
                int r = parse_uint(ps, MX_COVER_MAX_VALUES, &v);
                if (r < 0)
                        return r;
                if (*ps->p == '^') {
                        ps->p++;
                        r = parse_uint(ps, MX_COVER_MAX_PARAMS, &k);
                        if (r < 0)
                                return r;
                }
                if (v == 0 || k == 0)
                        return fail(ps, "value counts and repeats start at 1");
                if (s->model.n_params + k > MX_COVER_MAX_PARAMS)
                        return fail(ps, "too many parameters");
                MX_GROW(s->n_values, cap, s->model.n_params + k);
                for (unsigned long i = 0; i < k; i++)
                        s->n_values[s->model.n_params++] = (unsigned)v;
        }
        if (s->model.n_params == 0)
                return fail(ps, "expected value counts such as 3^4");
        s->model.n_values = s->n_values;
        return 0;
}

static int parse_term(struct parser *ps, struct mx_cover_spec *s, struct mx_cover_term *term)
{
        unsigned long p, v;
        int r = parse_uint(ps, MX_COVER_MAX_PARAMS, &p);
        if (r < 0)
                return r;
        if (p >= s->model.n_params)
                return fail(ps, "no such parameter");
        if (*ps->p++ != ':' || *ps->p++ != '{')
                return fail(ps, "expected ':{' after the parameter");
        term->param = (unsigned)p;
        term->set = 0;
        for (;;) {
                r = parse_uint(ps, MX_COVER_MAX_VALUES - 1, &v);
                if (r < 0)
                        return r;
                if (v >= s->n_values[p])
                        return fail(ps, "value beyond the parameter's count");
                term->set |= UINT64_C(1) << v;
                skip_space(ps);
                if (*ps->p == '}') {
                        ps->p++;
                        return 0;
                }
                if (*ps->p++ != ',')
                        return fail(ps, "expected ',' or '}'");
        }
}

/* Terms are stored in one array; patterns keep offsets until the array stops moving. */
static int parse_forbids(struct parser *ps, struct mx_cover_spec *s, size_t **offsets)
{
        size_t cap_f = 0, cap_t = 0, cap_o = 0;
        skip_space(ps);
        if (strncmp(ps->p, "none", 4) == 0) {
                ps->p += 4;
                return field_end(ps) ? 0 : fail(ps, "expected '|' or the end after 'none'");
        }
        while (!field_end(ps)) {
                if (strncmp(ps->p, "forbid", 6) != 0)
                        return fail(ps, "expected 'forbid'");
                ps->p += 6;
                if (s->model.n_forbidden >= MX_COVER_MAX_FORBIDDEN)
                        return fail(ps, "too many forbidden patterns");
                MX_GROW(s->forbidden, cap_f, s->model.n_forbidden + 1);
                MX_GROW(*offsets, cap_o, s->model.n_forbidden + 1);
                (*offsets)[s->model.n_forbidden] = s->n_terms;
                struct mx_cover_forbid *f = &s->forbidden[s->model.n_forbidden++];
                f->n_terms = 0;
                while (!field_end(ps) && *ps->p != ';') {
                        if (f->n_terms >= MX_COVER_MAX_PARAMS)
                                return fail(ps, "too many terms");
                        MX_GROW(s->terms, cap_t, s->n_terms + 1);
                        int r = parse_term(ps, s, &s->terms[s->n_terms]);
                        if (r < 0)
                                return r;
                        s->n_terms++;
                        f->n_terms++;
                }
                if (f->n_terms == 0)
                        return fail(ps, "a forbidden pattern needs at least one term");
                if (*ps->p == ';')
                        ps->p++;
        }
        return 0;
}

static int parse_key(struct parser *ps, struct mx_cover_spec *s)
{
        static const struct {
                const char *key;
                unsigned long max;
        } keys[] = { { "t", MX_COVER_MAX_T }, { "pict", 1UL << 30 }, { "best", 1UL << 30 } };
        skip_space(ps);
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                size_t len = strlen(keys[i].key);
                if (strncmp(ps->p, keys[i].key, len) != 0 || ps->p[len] != '=')
                        continue;
                ps->p += len + 1;
                unsigned long v;
                int r = parse_uint(ps, keys[i].max, &v);
                if (r < 0)
                        return r;
                if (i == 0)
                        s->t = (unsigned)v;
                else if (i == 1)
                        s->pict = (long)v;
                else
                        s->best = (long)v;
                return field_end(ps) ? 0 : fail(ps, "expected '|' or the end after the number");
        }
        return fail(ps, "expected t=, pict= or best=");
}

struct mx_cover_spec *mx_cover_spec_free(struct mx_cover_spec *s)
{
        if (!s)
                return NULL;
        free(s->n_values);
        free(s->forbidden);
        free(s->terms);
        free(s);
        return NULL;
}

int mx_cover_spec_parse(const char *text, struct mx_cover_spec **ret, char **reterr)
{
        _cleanup_(mx_cover_spec_freep) struct mx_cover_spec *s = xcalloc(1, sizeof(*s));
        _cleanup_free_ size_t *offsets = NULL;
        struct parser ps = { .text = text, .p = text, .reterr = reterr };
        s->pict = s->best = -1;

        int r = parse_sizes(&ps, s);
        if (r < 0)
                return r;
        for (unsigned field = 1; *ps.p == '|'; field++) {
                ps.p++;
                r = field == 1 ? parse_forbids(&ps, s, &offsets) : parse_key(&ps, s);
                if (r < 0)
                        return r;
        }
        if (!field_end(&ps) || (*ps.p != '\0' && *ps.p != '\n'))
                return fail(&ps, "unexpected text");
        for (size_t f = 0; f < s->model.n_forbidden; f++)
                s->forbidden[f].terms = s->terms + offsets[f];
        s->model.forbidden = s->forbidden;
        *ret = TAKE_PTR(s);
        return 0;
}
