/* SPDX-License-Identifier: MIT */
/*
 * Covering arrays: the verifier's negative cases, generation on random
 * constrained models (proved by the verifier and by brute force), determinism,
 * required rows, errors, the solver and the tuple count against brute force,
 * and the row counts against PICT's (tests/fixtures/cover/pict-sizes.tsv).
 */
#include "cover-spec.h"
#include "cover-verify.h"
#include "cover.h"
#include "test.h"

/* A model built in place: up to 8 parameters and 8 patterns of 3 terms. */
struct small_model {
        struct mx_cover_model m;
        unsigned nv[8];
        struct mx_cover_forbid f[8];
        struct mx_cover_term terms[8][3];
};

static uint64_t rng_state = 0x1234567;

static uint64_t rnd(uint64_t n)
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state % n;
}

static void random_model(struct small_model *s, size_t max_params, unsigned max_values, size_t max_forbids)
{
        memset(s, 0, sizeof(*s));
        s->m.n_params = 2 + rnd(max_params - 1);
        for (size_t p = 0; p < s->m.n_params; p++)
                s->nv[p] = 2 + (unsigned)rnd(max_values - 1);
        s->m.n_values = s->nv;
        s->m.n_forbidden = rnd(max_forbids + 1);
        for (size_t f = 0; f < s->m.n_forbidden; f++) {
                s->f[f].n_terms = 1 + rnd(MX_MIN(s->m.n_params, 3u));
                s->f[f].terms = s->terms[f];
                for (size_t j = 0; j < s->f[f].n_terms; j++) {
                        unsigned p = (unsigned)rnd(s->m.n_params);
                        uint64_t full = (UINT64_C(1) << s->nv[p]) - 1;
                        uint64_t set = 0;
                        while (set == 0 || set == full)
                                set = rnd(full + 1);
                        s->terms[f][j] = (struct mx_cover_term){ p, set };
                }
        }
        s->m.forbidden = s->f;
}

/* Step row through every assignment (mixed radix); false after the last. */
static bool next_row(const struct mx_cover_model *m, int *row)
{
        for (size_t p = m->n_params; p-- > 0;) {
                if (++row[p] < (int)m->n_values[p])
                        return true;
                row[p] = 0;
        }
        return false;
}

static bool brute_row_ok(const struct mx_cover_model *m, const int *row)
{
        for (size_t f = 0; f < m->n_forbidden; f++) {
                size_t j;
                for (j = 0; j < m->forbidden[f].n_terms; j++) {
                        const struct mx_cover_term *tm = &m->forbidden[f].terms[j];
                        if (!((tm->set >> row[tm->param]) & 1))
                                break;
                }
                if (j == m->forbidden[f].n_terms)
                        return false;
        }
        return true;
}

/* Does some valid full row agree with partial (-1 = any)? */
static bool brute_extendable(const struct mx_cover_model *m, const int *partial)
{
        int row[8] = { 0 };
        do {
                size_t p;
                for (p = 0; p < m->n_params; p++)
                        if (partial[p] >= 0 && partial[p] != row[p])
                                break;
                if (p == m->n_params && brute_row_ok(m, row))
                        return true;
        } while (next_row(m, row));
        return false;
}

/* Step the values of the parameters in mask (mixed radix); false after the last. */
static bool next_masked(const struct mx_cover_model *m, unsigned mask, int *vals)
{
        for (size_t p = m->n_params; p-- > 0;) {
                if (!((mask >> p) & 1))
                        continue;
                if (++vals[p] < (int)m->n_values[p])
                        return true;
                vals[p] = 0;
        }
        return false;
}

/* Valid t-tuples by brute force; with rows given, fails the test on any valid tuple they miss. */
static uint64_t brute_tuples(const struct mx_cover_model *m, unsigned t, const int *rows, size_t n_rows)
{
        uint64_t count = 0;
        for (unsigned mask = 0; mask < (1u << m->n_params); mask++) {
                if ((unsigned)__builtin_popcount(mask) != t)
                        continue;
                int partial[8], vals[8] = { 0 };
                do {
                        for (size_t p = 0; p < m->n_params; p++)
                                partial[p] = (mask >> p) & 1 ? vals[p] : -1;
                        if (!brute_extendable(m, partial))
                                continue;
                        count++;
                        if (!rows)
                                continue;
                        bool found = false;
                        for (size_t r = 0; r < n_rows && !found; r++) {
                                found = true;
                                for (size_t p = 0; p < m->n_params; p++)
                                        if (partial[p] >= 0 && rows[r * m->n_params + p] != partial[p])
                                                found = false;
                        }
                        ASSERT_TRUE(found);
                } while (next_masked(m, mask, vals));
        }
        return count;
}

static void free_rows(int **p)
{
        free(*p);
}

TEST(verify_catches_missing_tuple)
{
        unsigned nv[3] = { 2, 2, 2 };
        struct mx_cover_model m = { .n_params = 3, .n_values = nv };
        int rows[] = { 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0 };
        ASSERT_OK(mx_cover_verify(&m, 2, rows, 4, NULL));
        _cleanup_free_ char *err = NULL;
        ASSERT_ERR(mx_cover_verify(&m, 2, rows, 3, &err), EDOM);
        ASSERT_CONTAINS(err, "p0=1 p1=1");
        ASSERT_CONTAINS(err, "appears in no row");
        /* t = 3 needs all eight rows */
        ASSERT_ERR(mx_cover_verify(&m, 3, rows, 4, NULL), EDOM);
}

TEST(verify_catches_forbidden_and_out_of_range_rows)
{
        unsigned nv[2] = { 2, 2 };
        struct mx_cover_term terms[2] = { { 0, 2 }, { 1, 2 } };
        struct mx_cover_forbid f = { 2, terms };
        struct mx_cover_model m = { .n_params = 2, .n_values = nv, .n_forbidden = 1, .forbidden = &f };
        int ok[] = { 0, 0, 0, 1, 1, 0 };
        ASSERT_OK(mx_cover_verify(&m, 2, ok, 3, NULL));
        /* (1,1) is invalid, so it need not appear; without (1,0) a valid tuple is missing */
        _cleanup_free_ char *missing = NULL;
        ASSERT_ERR(mx_cover_verify(&m, 2, ok, 2, &missing), EDOM);
        ASSERT_CONTAINS(missing, "p0=1 p1=0");

        int bad[] = { 0, 0, 0, 1, 1, 0, 1, 1 };
        _cleanup_free_ char *err = NULL;
        ASSERT_ERR(mx_cover_verify(&m, 2, bad, 4, &err), EDOM);
        ASSERT_STREQ(err, "row 3 matches forbidden pattern 0");
        ASSERT_FALSE(mx_cover_row_valid(&m, bad + 6));
        ASSERT_TRUE(mx_cover_row_valid(&m, bad + 4));

        int range[] = { 0, 0, 0, 2 };
        _cleanup_free_ char *err2 = NULL;
        ASSERT_ERR(mx_cover_verify(&m, 2, range, 2, &err2), EDOM);
        ASSERT_CONTAINS(err2, "row 1: parameter 1 has value 2");
        ASSERT_FALSE(mx_cover_row_valid(&m, range + 2));
}

/* Generate, then prove the result three ways: verifier, brute force, row validity. */
static size_t generate_checked(const struct mx_cover_model *m, unsigned t, uint64_t seed, unsigned effort)
{
        struct mx_cover_options opt = { .t = t, .seed = seed, .effort = effort };
        _cleanup_(free_rows) int *rows = NULL;
        _cleanup_free_ char *err = NULL;
        size_t n = 0;
        int r = mx_cover_generate(m, &opt, &rows, &n, &err);
        int all_free[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
        if (r == -ENOENT) {
                ASSERT_FALSE(brute_extendable(m, all_free));
                return 0;
        }
        if (r < 0)
                test_fail(__FILE__, __LINE__, "generate: %s", strna(err));
        ASSERT_TRUE(brute_extendable(m, all_free));
        _cleanup_free_ char *verr = NULL;
        if (mx_cover_verify(m, t, rows, n, &verr) < 0)
                test_fail(__FILE__, __LINE__, "verify: %s", verr);
        for (size_t i = 0; i < n; i++)
                ASSERT_TRUE(brute_row_ok(m, rows + i * m->n_params));
        unsigned tc = (unsigned)MX_MIN((size_t)t, m->n_params);
        uint64_t n_tuples = brute_tuples(m, tc, rows, n);
        ASSERT_TRUE(n_tuples > 0);
        return n;
}

TEST(random_constrained_models_are_covered)
{
        struct small_model s;
        size_t generated = 0;
        for (int i = 0; i < 300; i++) {
                random_model(&s, 7, 4, 5);
                unsigned t = 2 + (unsigned)rnd(3);
                if (generate_checked(&s.m, t, (uint64_t)i, 2) > 0)
                        generated++;
        }
        /* most random models have valid rows: the property was exercised */
        ASSERT_TRUE(generated > 200);
}

TEST(small_models_reach_the_optimum)
{
        unsigned nv[4] = { 3, 3, 3, 3 };
        struct mx_cover_model m = { .n_params = 4, .n_values = nv };
        ASSERT_EQ(generate_checked(&m, 2, 1, 0), 9);
        ASSERT_EQ(generate_checked(&m, 4, 1, 0), 81);
        /* t is clamped to the number of parameters */
        ASSERT_EQ(generate_checked(&m, 6, 1, 0), 81);
        unsigned nv2[3] = { 2, 2, 2 };
        struct mx_cover_model m2 = { .n_params = 3, .n_values = nv2 };
        ASSERT_EQ(generate_checked(&m2, 2, 7, 0), 4);
        ASSERT_EQ(generate_checked(&m2, 1, 7, 0), 2);
}

static void generate_rows(const struct mx_cover_model *m, const struct mx_cover_options *opt, int **rows,
                          size_t *n)
{
        _cleanup_free_ char *err = NULL;
        if (mx_cover_generate(m, opt, rows, n, &err) < 0)
                test_fail(__FILE__, __LINE__, "generate: %s", strna(err));
}

TEST(same_seed_same_rows)
{
        struct small_model s;
        rng_state = 99;
        random_model(&s, 8, 5, 3);
        unsigned nv[6] = { 4, 4, 3, 3, 3, 2 };
        struct mx_cover_model plain = { .n_params = 6, .n_values = nv };
        const struct mx_cover_model *models[] = { &s.m, &plain };
        for (size_t k = 0; k < ELEMENTSOF(models); k++) {
                struct mx_cover_options opt = { .t = 2, .seed = 42 };
                _cleanup_(free_rows) int *a = NULL, *b = NULL;
                size_t na, nb;
                generate_rows(models[k], &opt, &a, &na);
                generate_rows(models[k], &opt, &b, &nb);
                ASSERT_EQ(na, nb);
                ASSERT_EQ(memcmp(a, b, na * models[k]->n_params * sizeof(int)), 0);
        }

        /* other seeds are allowed to (and here do) give other rows */
        struct mx_cover_options o1 = { .t = 2, .seed = 1 };
        _cleanup_(free_rows) int *first = NULL;
        size_t n_first;
        generate_rows(&plain, &o1, &first, &n_first);
        bool differs = false;
        for (uint64_t seed = 2; seed < 8 && !differs; seed++) {
                struct mx_cover_options o = { .t = 2, .seed = seed };
                _cleanup_(free_rows) int *other = NULL;
                size_t n_other;
                generate_rows(&plain, &o, &other, &n_other);
                differs = n_other != n_first || memcmp(first, other, n_first * 6 * sizeof(int)) != 0;
        }
        ASSERT_TRUE(differs);
}

TEST(required_rows_come_first)
{
        unsigned nv[5] = { 3, 3, 3, 2, 2 };
        /* p0 = 2 and p1 = 2 together are forbidden; so are p3 = 1 and p4 = 1 */
        struct mx_cover_term t0[2] = { { 0, 4 }, { 1, 4 } }, t1[2] = { { 3, 2 }, { 4, 2 } };
        struct mx_cover_forbid f[2] = { { 2, t0 }, { 2, t1 } };
        struct mx_cover_model m = { .n_params = 5, .n_values = nv, .n_forbidden = 2, .forbidden = f };
        int required[] = {
                0,  0,  0,  0,  0,  /* the baseline, fully given */
                2,  -1, -1, 1,  -1, /* a feature alone: the free cells must avoid both patterns */
                -1, 1,  -1, -1, -1,
        };
        struct mx_cover_options opt = { .t = 2, .seed = 5, .required = required, .n_required = 3 };
        _cleanup_(free_rows) int *rows = NULL;
        size_t n;
        generate_rows(&m, &opt, &rows, &n);
        ASSERT_TRUE(n >= 9);
        for (size_t r = 0; r < 3; r++)
                for (size_t p = 0; p < 5; p++) {
                        int want = required[r * 5 + p], got = rows[r * 5 + p];
                        if (want >= 0)
                                ASSERT_EQ(got, want);
                        else
                                ASSERT_TRUE(got >= 0 && got < (int)nv[p]);
                }
        ASSERT_TRUE(rows[5 + 1] != 2); /* p1 completed around p0 = 2 */
        ASSERT_EQ(rows[5 + 4], 0);     /* p4 completed around p3 = 1 */
        ASSERT_OK(mx_cover_verify(&m, 2, rows, n, NULL));

        /* required rows count toward coverage: a full factorial of required rows needs nothing more */
        unsigned nv2[2] = { 2, 2 };
        struct mx_cover_model m2 = { .n_params = 2, .n_values = nv2 };
        int all[] = { 1, 1, 0, 1, 1, 0, 0, 0 };
        struct mx_cover_options o2 = { .t = 2, .required = all, .n_required = 4 };
        _cleanup_(free_rows) int *rows2 = NULL;
        size_t n2;
        generate_rows(&m2, &o2, &rows2, &n2);
        ASSERT_EQ(n2, 4);
        ASSERT_EQ(memcmp(rows2, all, sizeof(all)), 0);
}

TEST(bad_required_rows_are_refused)
{
        unsigned nv[3] = { 3, 3, 2 };
        struct mx_cover_term t0[2] = { { 0, 1 }, { 1, 1 } }, t1[1] = { { 2, 1 } },
                             t2[2] = { { 0, 2 }, { 2, 2 } };
        struct mx_cover_forbid f[3] = { { 2, t0 }, { 1, t1 }, { 2, t2 } };
        struct mx_cover_model m = { .n_params = 3, .n_values = nv, .n_forbidden = 3, .forbidden = f };
        int forbidden_row[] = { 0, 0, 1 };
        int cannot_complete[] = { 1, -1, -1 }; /* p2 = 0 is forbidden and p2 = 1 is forbidden with p0 = 1 */
        int out_of_range[] = { 0, 3, -1 };
        int below_free[] = { -2, 0, 1 };
        const int *cases[] = { forbidden_row, cannot_complete, out_of_range, below_free };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct mx_cover_options opt = { .t = 2, .required = cases[i], .n_required = 1 };
                int *rows = NULL;
                size_t n = 0;
                _cleanup_free_ char *err = NULL;
                ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, &err), EINVAL);
                ASSERT_CONTAINS(err, "required row 0");
                ASSERT_NULL(rows);
        }
}

TEST(no_valid_row_is_enoent)
{
        unsigned nv[2] = { 2, 3 };
        /* p0 = 0 needs p1 = 2, p0 = 1 forbids p1 = 2, and p1 = 2 is itself forbidden with nothing else */
        struct mx_cover_term a[2] = { { 0, 1 }, { 1, 3 } }, b[1] = { { 1, 4 } }, c[1] = { { 0, 2 } };
        struct mx_cover_forbid f[3] = { { 2, a }, { 1, b }, { 1, c } };
        struct mx_cover_model m = { .n_params = 2, .n_values = nv, .n_forbidden = 3, .forbidden = f };
        struct mx_cover_options opt = { .t = 2 };
        int *rows = NULL;
        size_t n = 0;
        _cleanup_free_ char *err = NULL;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, &err), ENOENT);
        ASSERT_CONTAINS(err, "no row");
        int any[2] = { -1, -1 };
        ASSERT_FALSE(mx_cover_extendable(&m, any));
        uint64_t count = 99;
        ASSERT_OK(mx_cover_count_tuples(&m, 2, &count));
        ASSERT_EQ(count, 0);
}

TEST(bad_models_and_limits)
{
        unsigned nv[3] = { 2, 0, 2 };
        struct mx_cover_model m = { .n_params = 3, .n_values = nv };
        struct mx_cover_options opt = { .t = 2 };
        int *rows = NULL;
        size_t n = 0;
        _cleanup_free_ char *e1 = NULL;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, &e1), EINVAL);
        ASSERT_CONTAINS(e1, "parameter 1 has 0 values");
        nv[1] = 65;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, NULL), E2BIG);
        nv[1] = 2;

        struct mx_cover_term bad_param = { 7, 1 }, bad_set = { 0, 4 };
        struct mx_cover_forbid f = { 1, &bad_param };
        m.n_forbidden = 1;
        m.forbidden = &f;
        _cleanup_free_ char *e2 = NULL;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, &e2), EINVAL);
        ASSERT_CONTAINS(e2, "forbidden pattern 0, term 0: parameter 7 does not exist");
        f.terms = &bad_set;
        _cleanup_free_ char *e3 = NULL;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, &e3), EINVAL);
        ASSERT_CONTAINS(e3, "beyond parameter 0's 2");
        f.n_terms = 0;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, NULL), EINVAL);
        m.n_forbidden = 0;

        opt.t = 0;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, NULL), EINVAL);
        opt.t = MX_COVER_MAX_T + 1;
        ASSERT_ERR(mx_cover_generate(&m, &opt, &rows, &n, NULL), EINVAL);
        ASSERT_NULL(rows);

        /* a tuple table far beyond the memory bound is refused, not attempted */
        static unsigned big[MX_COVER_MAX_PARAMS];
        for (size_t p = 0; p < MX_COVER_MAX_PARAMS; p++)
                big[p] = 64;
        struct mx_cover_model huge = { .n_params = MX_COVER_MAX_PARAMS, .n_values = big };
        struct mx_cover_options o6 = { .t = 6 };
        _cleanup_free_ char *e4 = NULL;
        ASSERT_ERR(mx_cover_generate(&huge, &o6, &rows, &n, &e4), E2BIG);
        ASSERT_CONTAINS(e4, "MiB");
        uint64_t count;
        ASSERT_ERR(mx_cover_count_tuples(&huge, 3, &count), E2BIG);
        struct mx_cover_model too_many = { .n_params = MX_COVER_MAX_PARAMS + 1, .n_values = big };
        ASSERT_ERR(mx_cover_count_tuples(&too_many, 2, &count), E2BIG);
}

TEST(extendable_agrees_with_brute_force)
{
        struct small_model s;
        unsigned checked = 0, extendable = 0;
        rng_state = 7;
        for (int i = 0; i < 400; i++) {
                random_model(&s, 6, 4, 6);
                for (int k = 0; k < 20; k++) {
                        int partial[8];
                        for (size_t p = 0; p < s.m.n_params; p++)
                                partial[p] = rnd(2) ? -1 : (int)rnd(s.nv[p]);
                        bool want = brute_extendable(&s.m, partial);
                        ASSERT_EQ(mx_cover_extendable(&s.m, partial), want);
                        checked++;
                        extendable += want;
                }
        }
        /* both answers occur often enough to mean something */
        ASSERT_TRUE(extendable > checked / 10 && extendable < checked * 9 / 10);
        /* no constraint: everything extends, at no cost */
        unsigned nv[2] = { 2, 2 };
        struct mx_cover_model plain = { .n_params = 2, .n_values = nv };
        int partial[2] = { 1, -1 };
        ASSERT_TRUE(mx_cover_extendable(&plain, partial));
}

TEST(count_tuples_agrees_with_brute_force)
{
        struct small_model s;
        rng_state = 11;
        for (int i = 0; i < 200; i++) {
                random_model(&s, 6, 4, 5);
                unsigned t = 1 + (unsigned)rnd(3);
                uint64_t count;
                ASSERT_OK(mx_cover_count_tuples(&s.m, t, &count));
                int any[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
                uint64_t want = brute_extendable(&s.m, any)
                                        ? brute_tuples(&s.m, MX_MIN((size_t)t, s.m.n_params), NULL, 0)
                                        : 0;
                ASSERT_EQ(count, want);
        }
        unsigned nv[3] = { 3, 4, 5 };
        struct mx_cover_model m = { .n_params = 3, .n_values = nv };
        uint64_t count;
        ASSERT_OK(mx_cover_count_tuples(&m, 2, &count));
        ASSERT_EQ(count, 3 * 4 + 3 * 5 + 4 * 5);
        ASSERT_ERR(mx_cover_count_tuples(&m, 0, &count), EINVAL);
}

TEST(spec_parse)
{
        _cleanup_(mx_cover_spec_freep) struct mx_cover_spec *s = NULL;
        ASSERT_OK(
                mx_cover_spec_parse("3^2 2 | forbid 0:{1} 2:{0,1} ; forbid 1:{2} | t=3 | pict=9", &s, NULL));
        ASSERT_EQ(s->model.n_params, 3);
        ASSERT_EQ(s->n_values[1], 3);
        ASSERT_EQ(s->n_values[2], 2);
        ASSERT_EQ(s->model.n_forbidden, 2);
        ASSERT_EQ(s->model.forbidden[0].n_terms, 2);
        ASSERT_EQ(s->model.forbidden[0].terms[1].param, 2);
        ASSERT_EQ(s->model.forbidden[0].terms[1].set, 3);
        ASSERT_EQ(s->model.forbidden[1].terms[0].set, 4);
        ASSERT_EQ(s->t, 3);
        ASSERT_EQ(s->pict, 9);
        ASSERT_EQ(s->best, -1);

        _cleanup_(mx_cover_spec_freep) struct mx_cover_spec *plain = NULL;
        ASSERT_OK(mx_cover_spec_parse("10^20 | none | t=2", &plain, NULL));
        ASSERT_EQ(plain->model.n_params, 20);
        ASSERT_EQ(plain->model.n_forbidden, 0);

        static const struct {
                const char *text, *err;
        } bad[] = {
                { "", "column 1: expected value counts" },
                { "3^2 | forbid 2:{0}", "column 15: no such parameter" },
                { "3^2 | forbid 0:{3}", "value beyond" },
                { "3^2 | allow 0:{1}", "expected 'forbid'" },
                { "3^2 | none | x=1", "expected t=, pict= or best=" },
                { "65", "number too large" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct mx_cover_spec *x = NULL;
                _cleanup_free_ char *err = NULL;
                ASSERT_ERR(mx_cover_spec_parse(bad[i].text, &x, &err), EINVAL);
                ASSERT_CONTAINS(err, bad[i].err);
                ASSERT_NULL(x);
        }
}

/* Tuples of the model, so the sanitizer build can skip the large fixture lines. */
static uint64_t tuple_count(const struct mx_cover_spec *s)
{
        uint64_t count = 0;
        if (mx_cover_count_tuples(&s->model, s->t, &count) < 0)
                return UINT64_MAX;
        return count;
}

TEST(never_more_rows_than_pict)
{
        _cleanup_free_ char *path = test_source_path("tests/fixtures/cover/pict-sizes.tsv");
        _cleanup_free_ char *text = test_read_file(path, NULL);
#if defined(__SANITIZE_ADDRESS__)
        /* the sanitizer build, ten times slower, checks every other small model */
        const uint64_t max_tuples = 3000;
        const size_t stride = 2;
#else
        const uint64_t max_tuples = UINT64_MAX;
        const size_t stride = 1;
#endif
        size_t lines = 0, checked = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (line[0] == '#')
                        continue;
                if (lines++ % stride != 0)
                        continue;
                _cleanup_(mx_cover_spec_freep) struct mx_cover_spec *s = NULL;
                _cleanup_free_ char *err = NULL;
                if (mx_cover_spec_parse(line, &s, &err) < 0)
                        test_fail(__FILE__, __LINE__, "%s: %s", line, err);
                ASSERT_TRUE(s->t > 0 && s->pict > 0);
                if (tuple_count(s) > max_tuples)
                        continue;
                struct mx_cover_options opt = { .t = s->t, .seed = 1 };
                _cleanup_(free_rows) int *rows = NULL;
                size_t n;
                generate_rows(&s->model, &opt, &rows, &n);
                _cleanup_free_ char *verr = NULL;
                if (mx_cover_verify(&s->model, s->t, rows, n, &verr) < 0)
                        test_fail(__FILE__, __LINE__, "%s: %s", line, verr);
                if ((long)n > s->pict)
                        test_fail(__FILE__, __LINE__, "%s: %zu rows, more than PICT's %ld", line, n,
                                  s->pict);
                checked++;
        }
        printf("     %zu of %zu models checked\n", checked, lines);
        ASSERT_TRUE(lines >= 300);
        ASSERT_TRUE(checked >= 100);
}
