/* SPDX-License-Identifier: MIT */
/*
 * Rules with any / not / else (PICT's OR, <> and IF ... ELSE) and matrices
 * with many axes. Random rules are checked against a brute-force evaluator
 * written here from the JSON alone: the expansion, the covering-array model
 * (the rules compiled into forbidden patterns), pinned models and generated
 * covering arrays must all agree with it, cell by cell.
 */
#include "cover-verify.h"
#include "matrix-helpers.h"
#include "plan.h"

#include <inttypes.h>

/* ---- an evaluator of conditions straight from the JSON (docs/mxmatrix.json.5, CONSTRAINTS) ---- */

#define N_AXES 4
static const char *const axis_names[N_AXES] = {"a", "b", "c", "d"};
static const unsigned axis_n_values[N_AXES] = {3, 3, 2, 2};
/* d is "product": false: never assigned in product cells unless pinned */

/* config[i]: value index of axis i, -1 unassigned. */
static bool value_in(json_t *match, int v)
{
        char name[16];
        size_t i;
        json_t *e;

        if (v < 0)
                return false;
        snprintf(name, sizeof(name), "v%d", v);
        if (json_is_string(match))
                return streq(json_string_value(match), name);
        json_array_foreach (match, i, e)
                if (streq(json_string_value(e), name))
                        return true;
        return false;
}

static bool eval_cond(json_t *cond, const int *config)
{
        const char *k;
        json_t *v;

        json_object_foreach (cond, k, v) {
                if (streq(k, "any")) {
                        bool one = false;
                        size_t i;
                        json_t *e;

                        json_array_foreach (v, i, e)
                                one = one || eval_cond(e, config);
                        if (!one)
                                return false;
                } else if (streq(k, "not")) {
                        if (eval_cond(v, config))
                                return false;
                } else {
                        int axis = k[0] - 'a';

                        if (config[axis] < 0)
                                return false; /* unassigned: no pair holds, with or without not */
                        if (json_is_object(v) ? value_in(json_object_get(v, "not"), config[axis])
                                              : !value_in(v, config[axis]))
                                return false;
                }
        }
        return true;
}

static bool eval_rules(json_t *rules, const int *config)
{
        size_t i;
        json_t *r;

        json_array_foreach (rules, i, r) {
                bool cond = eval_cond(json_object_get(r, "if"), config);

                if (cond && !eval_cond(json_object_get(r, "then"), config))
                        return false;
                if (!cond && json_object_get(r, "else") && !eval_cond(json_object_get(r, "else"), config))
                        return false;
        }
        return true;
}

/* ---- random conditions ---- */

static uint64_t rng_state;

static unsigned rnd(unsigned n)
{
        rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (unsigned)((rng_state >> 33) % n);
}

static json_t *random_match(unsigned axis)
{
        unsigned nv = axis_n_values[axis], kind = rnd(4);
        json_t *list = json_array();

        for (unsigned v = 0; v < nv; v++)
                if (rnd(2))
                        json_array_append_new(list, json_sprintf("v%u", v));
        if (json_array_size(list) == 0)
                json_array_append_new(list, json_sprintf("v%u", rnd(nv)));
        if (kind == 0) {
                json_t *one = json_sprintf("v%u", rnd(nv));

                json_decref(list);
                return one;
        }
        if (kind == 1)
                return list;
        return json_pack("{s:o}", "not",
                         kind == 2 ? list : (json_decref(list), json_sprintf("v%u", rnd(nv))));
}

static json_t *random_cond(unsigned depth)
{
        json_t *c = json_object();
        unsigned n_terms = rnd(3);

        for (unsigned i = 0; i < n_terms; i++) {
                unsigned axis = rnd(N_AXES);

                if (!json_object_get(c, axis_names[axis]))
                        json_object_set_new(c, axis_names[axis], random_match(axis));
        }
        if (depth < 3 && rnd(3) == 0) {
                json_t *any = json_array();
                unsigned n = 1 + rnd(3);

                for (unsigned i = 0; i < n; i++)
                        json_array_append_new(any, random_cond(depth + 1));
                json_object_set_new(c, "any", any);
        }
        if (depth < 3 && rnd(3) == 0)
                json_object_set_new(c, "not", random_cond(depth + 1));
        if (json_object_size(c) == 0)
                json_object_set_new(c, axis_names[0], random_match(0));
        return c;
}

/* Product cells in expansion order (first axis slowest); d unassigned. */
static size_t product_cells(int (*cells)[N_AXES])
{
        size_t n = 0;

        for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                        for (int c = 0; c < 2; c++) {
                                cells[n][0] = a, cells[n][1] = b, cells[n][2] = c, cells[n][3] = -1;
                                n++;
                        }
        return n;
}

static json_t *matrix_json(json_t *rules, json_t *ki, const int *baseline)
{
        json_t *axes = json_array(), *base = json_object();

        for (unsigned a = 0; a < N_AXES; a++) {
                json_t *values = json_array();

                for (unsigned v = 0; v < axis_n_values[a]; v++)
                        json_array_append_new(values, json_pack("{s:o}", "name", json_sprintf("v%u", v)));
                json_array_append_new(axes, json_pack("{s:s,s:b,s:o}", "name", axis_names[a], "product",
                                                      a != 3, "values", values));
                if (baseline[a] >= 0)
                        json_object_set_new(base, axis_names[a], json_sprintf("v%d", baseline[a]));
        }
        return json_pack("{s:i,s:s,s:{s:[s]},s:o,s:o,s:{s:O,s:O}}", "matrix", 1, "name", "r", "target",
                         "command", "srv", "axes", axes, "baseline", base, "constraints", "rules", rules,
                         "known_incompatible", ki);
}

/* Row validity of the cover model against the evaluator, for every cell with the pins' values. */
static void check_model(const struct mx_matrix *m, json_t *rules, const int *pins)
{
        struct mx_matrix_cover c = {};
        _cleanup_free_ int *row = xcalloc(N_AXES, sizeof(int)), *config = mx_config_new(m);
        int cells[18][N_AXES];
        size_t n = product_cells(cells);

        mx_matrix_cover_build(m, pins, true, &c);
        for (size_t i = 0; i < n; i++) {
                bool want;

                memcpy(config, cells[i], sizeof(cells[i]));
                for (size_t a = 0; a < N_AXES; a++)
                        if (pins && pins[a] >= 0)
                                config[a] = pins[a];
                if (mx_matrix_cover_config_to_row(&c, config, row) < 0)
                        continue; /* a pin makes this cell another one */
                want = eval_rules(rules, config);
                if (mx_cover_row_valid(&c.model, row) != want) {
                        _cleanup_free_ char *d = mx_config_describe(m, config), *r = json_dumps(rules, 0);

                        mx_matrix_cover_done(&c);
                        test_fail(__FILE__, __LINE__, "cover model says %s is %svalid; rules %s", d,
                                  want ? "in" : "", r);
                }
        }
        mx_matrix_cover_done(&c);
}

TEST(random_rules_match_brute_force)
{
        size_t checked = 0;

        for (uint64_t seed = 1; seed <= 300; seed++) {
                _cleanup_(json_decrefp) json_t *rules = json_array(), *ki = json_array(), *doc = NULL;
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
                _cleanup_free_ char *text = NULL, *why = NULL, *all = NULL;
                _cleanup_buf_ struct mx_buf want = MX_BUF_INIT;
                int cells[18][N_AXES], baseline[N_AXES] = {-1, -1, -1, -1};
                size_t n = product_cells(cells), n_rules;
                json_t *kicond;

                rng_state = seed;
                n_rules = 1 + rnd(3);
                for (size_t i = 0; i < n_rules; i++) {
                        json_t *r = json_pack("{s:o,s:o,s:s}", "if", rnd(4) ? random_cond(0) : json_object(),
                                              "then", random_cond(0), "reason", "random");

                        if (rnd(2))
                                json_object_set_new(r, "else", random_cond(0));
                        json_array_append_new(rules, r);
                }
                kicond = random_cond(0);
                json_array_append_new(ki, json_pack("{s:o,s:s}", "when", kicond, "reason", "known"));

                mx_buf_puts(&want, "");
                for (size_t i = 0; i < n; i++)
                        if (eval_rules(rules, cells[i])) {
                                _cleanup_free_ char *d = NULL;

                                if (baseline[0] < 0)
                                        memcpy(baseline, cells[i], sizeof(baseline));
                                mx_buf_printf(&want, "a=v%d,b=v%d,c=v%d\n", cells[i][0], cells[i][1],
                                              cells[i][2]);
                        }
                if (baseline[0] < 0)
                        continue; /* nothing valid: the loader refuses such files (tested elsewhere) */
                doc = matrix_json(rules, ki, baseline);
                text = json_dumps(doc, JSON_INDENT(1));
                if (mx_matrix_load_string("r.json", text, strlen(text), &m, &why) < 0)
                        test_fail(__FILE__, __LINE__, "seed %" PRIu64 ": %s\n%s", seed, strna(why), text);

                /* The expansion keeps exactly the cells the evaluator accepts, in product order. */
                all = expand_all(m, NULL);
                if (!streq(all, want.data))
                        test_fail(__FILE__, __LINE__, "seed %" PRIu64 ": expansion\n%s\nbrute force\n%s\n%s",
                                  seed, all, want.data, text);
                /* Known-incompatible marks follow the same evaluator. */
                for (size_t i = 0; i < n; i++) {
                        size_t idx[1];

                        ASSERT_EQ(mx_matrix_known_incompatible(m, cells[i], idx) == 1,
                                  eval_cond(kicond, cells[i]));
                }
                /* The covering-array model forbids exactly the invalid cells, unpinned and pinned. */
                check_model(m, rules, NULL);
                check_model(m, rules, (const int[N_AXES]){1, -1, -1, -1});
                check_model(m, rules, (const int[N_AXES]){-1, -1, -1, 0}); /* a non-product axis pinned */
                check_model(m, rules, (const int[N_AXES]){-1, 2, 1, 1});

                /* A pairwise array over the product: verified, and every row valid for the evaluator. */
                {
                        struct mx_matrix_cover c = {};
                        _cleanup_free_ int *rows = NULL, *config = mx_config_new(m);
                        _cleanup_free_ char *err = NULL;
                        size_t n_rows = 0;

                        mx_matrix_cover_build(m, NULL, true, &c);
                        ASSERT_OK(mx_cover_generate(&c.model,
                                                    &(struct mx_cover_options){.t = 2, .seed = seed}, &rows,
                                                    &n_rows, &err));
                        ASSERT_OK(mx_cover_verify(&c.model, 2, rows, n_rows, NULL));
                        for (size_t i = 0; i < n_rows; i++) {
                                mx_matrix_cover_row_to_config(m, &c, NULL, rows + i * c.n_params, config);
                                ASSERT_TRUE(eval_rules(rules, config));
                        }
                        mx_matrix_cover_done(&c);
                }
                checked++;
        }
        /* Most seeds leave something valid: the comparison really ran. */
        ASSERT_LT(200, checked);
}

#define HEAD                                                                                                \
        "{\n  \"matrix\": 1,\n  \"name\": \"t\",\n  \"target\": {\"command\": [\"srv\"]},\n"                \
        "  \"axes\": [\n"                                                                                   \
        "    {\"name\": \"kernel\", \"values\": [{\"name\": \"marlin\"}, {\"name\": \"cutlass\"}, "         \
        "{\"name\": \"gemv\"}]},\n"                                                                         \
        "    {\"name\": \"tile\", \"values\": [{\"name\": \"auto\"}, {\"name\": \"128x128\"}, "             \
        "{\"name\": \"64x128\"}]}\n"                                                                        \
        "  ],\n"                                                                                            \
        "  \"baseline\": {\"kernel\": \"marlin\", \"tile\": \"auto\"},\n"
#define RULES(x) HEAD "  \"constraints\": {\"rules\": [" x "]}\n}\n"

TEST(pict_or_not_else)
{
        /* PICT: IF [kernel] = "cutlass" OR [kernel] = "gemv" THEN [tile] <> "64x128"; */
        _cleanup_(mx_matrix_freep) struct mx_matrix * or
                = load_text(RULES("{\"if\": {\"any\": [{\"kernel\": \"cutlass\"}, {\"kernel\": \"gemv\"}]}, "
                                  "\"then\": {\"not\": {\"tile\": \"64x128\"}}, \"reason\": \"r\"}"));
        _cleanup_free_ char *a = expand_all(or, NULL);

        ASSERT_STREQ(a, "kernel=marlin,tile=auto\nkernel=marlin,tile=128x128\nkernel=marlin,tile=64x128\n"
                        "kernel=cutlass,tile=auto\nkernel=cutlass,tile=128x128\n"
                        "kernel=gemv,tile=auto\nkernel=gemv,tile=128x128\n");

        /* PICT: IF [kernel] = "cutlass" THEN [tile] IN {"128x128", "64x128"} ELSE [tile] = "auto"; */
        _cleanup_(mx_matrix_freep) struct mx_matrix *ie = load_text(
                RULES("{\"if\": {\"kernel\": \"cutlass\"}, \"then\": {\"tile\": [\"128x128\", \"64x128\"]}, "
                      "\"else\": {\"tile\": \"auto\"}, \"reason\": \"tiles are CUTLASS's\"}"));
        _cleanup_free_ char *b = expand_all(ie, NULL);
        _cleanup_free_ char *d = mx_matrix_cond_describe(or, & or->rules[0].if_);
        _cleanup_free_ char *e = mx_matrix_cond_describe(or, & or->rules[0].then);

        ASSERT_STREQ(b, "kernel=marlin,tile=auto\nkernel=cutlass,tile=128x128\nkernel=cutlass,tile=64x128\n"
                        "kernel=gemv,tile=auto\n");
        ASSERT_STREQ(d, "any(kernel=cutlass | kernel=gemv)");
        ASSERT_STREQ(e, "not(tile=64x128)");
}

TEST(rule_errors_have_positions)
{
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;
        const char *cases[][2] = {
                {RULES("{\"if\": {\"any\": {\"kernel\": \"gemv\"}}, \"then\": {\"tile\": \"auto\"}, "
                       "\"reason\": \"r\"}"),
                 "t.json:10:37: key 'constraints.rules[0].if.any': 'any' takes an array of 1 to 1024 "
                 "conditions"},
                {RULES("{\"if\": {\"any\": []}, \"then\": {\"tile\": \"auto\"}, \"reason\": \"r\"}"),
                 "t.json:10:37: key 'constraints.rules[0].if.any': 'any' takes an array"},
                {RULES("{\"if\": {\"not\": \"gemv\"}, \"then\": {\"tile\": \"auto\"}, \"reason\": \"r\"}"),
                 "t.json:10:37: key 'constraints.rules[0].if.not': 'not' takes a condition object"},
                {RULES("{\"if\": {\"kernel\": \"gemv\"}, \"then\": {\"any\": [{}]}, \"reason\": \"r\"}"),
                 "key 'constraints.rules[0].then.any[0]': an empty condition would match every "
                 "configuration"},
                {RULES("{\"if\": {\"kernel\": \"gemv\"}, \"then\": {\"tile\": \"auto\"}, \"else\": 3, "
                       "\"reason\": \"r\"}"),
                 "key 'constraints.rules[0].else': expected an object, got an integer"},
                {RULES("{\"if\": {\"not\": {\"not\": {\"not\": {\"not\": {\"not\": {\"not\": {\"not\": "
                       "{\"not\": {\"not\": {\"kernel\": \"gemv\"}}}}}}}}}}, \"then\": {\"tile\": "
                       "\"auto\"}, "
                       "\"reason\": \"r\"}"),
                 "conditions nest 'any' and 'not' at most 8 deep"},
                {HEAD "  \"constraints\": {\"exclude\": [{\"not\": {\"kernel\": \"gemv\"}}]}\n}\n",
                 "t.json:10:32: key 'constraints.exclude[0].not': an exclude entry takes axis: value pairs "
                 "only"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                free(why);
                why = NULL;
                if (mx_matrix_load_string("t.json", cases[i][0], strlen(cases[i][0]), &m, &why) >= 0)
                        test_fail(__FILE__, __LINE__, "case %zu loaded", i);
                if (!strstr(why, cases[i][1]))
                        test_fail(__FILE__, __LINE__, "case %zu: '%s' lacks '%s'", i, why, cases[i][1]);
        }
        /* "any" and "not" are operators, not axis names. */
        {
                const char *text = "{\"matrix\": 1, \"name\": \"t\", \"target\": {\"command\": [\"s\"]}, "
                                   "\"axes\": [{\"name\": \"any\", \"values\": [{\"name\": \"x\"}]}], "
                                   "\"baseline\": {\"any\": \"x\"}}";

                free(why);
                why = NULL;
                ASSERT_ERR(mx_matrix_load_string("t.json", text, strlen(text), &m, &why), EINVAL);
                ASSERT_CONTAINS(why, "key 'axes[0].name': 'any' is reserved");
        }
}

TEST(rule_pattern_blowup_is_refused)
{
        /* 9 any-lists of 2 in a "then": its negation multiplies out to 2^9 = 512 patterns, fine;
         * in the "if" of a rule with an 8-term then it is 2^9 x 8 ... so build one past 4096. */
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;

        mx_buf_puts(&b, "{\"matrix\": 1, \"name\": \"t\", \"target\": {\"command\": [\"s\"]}, \"axes\": [");
        for (int i = 0; i < 26; i++)
                mx_buf_printf(&b,
                              "%s{\"name\": \"x%d\", \"values\": [{\"name\": \"a\"}, {\"name\": \"b\"}]}",
                              i ? ", " : "", i);
        mx_buf_puts(&b, "], \"baseline\": {");
        for (int i = 0; i < 26; i++)
                mx_buf_printf(&b, "%s\"x%d\": \"a\"", i ? ", " : "", i);
        /* if any(x0=b, x1=b) and any(x2=b, x3=b) and ... (13 lists): 2^13 conjunctions. */
        mx_buf_puts(
                &b,
                "}, \"constraints\": {\"rules\": [{\"if\": {\"any\": [{\"x0\": \"b\"}, {\"x1\": \"b\"}], "
                "\"not\": {\"any\": [");
        for (int i = 2; i < 26; i += 2)
                mx_buf_printf(&b, "%s{\"x%d\": \"a\", \"x%d\": \"a\"}", i > 2 ? ", " : "", i, i + 1);
        mx_buf_puts(&b, "]}}, \"then\": {\"x0\": \"a\"}, \"reason\": \"r\"}]}}");
        ASSERT_ERR(mx_matrix_load_string("t.json", b.data, b.len, &m, &why), EINVAL);
        ASSERT_CONTAINS(why, "key 'constraints.rules[0]': this rule compiles into more than 4096 forbidden "
                             "combinations");
        ASSERT_NULL(m);
}

/* A matrix of n axes with 2 or 3 values each, and one feature on axis n/2. */
static char *many_axes(size_t n)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b,
                    "{\"matrix\": 1, \"name\": \"wide\", \"target\": {\"command\": [\"s\"]}, \"axes\": [");
        for (size_t i = 0; i < n; i++)
                mx_buf_printf(&b,
                              "%s{\"name\": \"p%zu\", \"values\": [{\"name\": \"lo\"}, {\"name\": \"hi\", "
                              "\"env\": {\"P%zu\": \"hi\"}}%s]}",
                              i ? ",\n" : "", i, i, i % 3 == 0 ? ", {\"name\": \"mid\"}" : "");
        mx_buf_puts(&b, "],\n\"baseline\": {");
        for (size_t i = 0; i < n; i++)
                mx_buf_printf(&b, "%s\"p%zu\": \"lo\"", i ? ", " : "", i);
        mx_buf_printf(
                &b,
                "},\n\"features\": [{\"name\": \"f\", \"priority\": 1, \"set\": {\"p%zu\": \"hi\"}, "
                "\"hypothesis\": \"h\", \"criteria\": [{\"metric\": \"crashes\", \"max\": 0}], "
                "\"status\": \"in-progress\"}],\n"
                "\"constraints\": {\"rules\": [{\"if\": {\"any\": [{\"p0\": \"hi\"}, {\"p1\": \"hi\"}]}, "
                "\"then\": {\"not\": {\"p99\": \"hi\"}}, \"reason\": \"r\"}]}}",
                n / 2);
        return mx_buf_steal(&b);
}

TEST(hundred_axes_load_expand_cover_plan)
{
        _cleanup_free_ char *text = many_axes(100), *why = NULL;
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(text);
        _cleanup_(mx_expand_freep) struct mx_expand *it = mx_expand_new(m, NULL);
        _cleanup_(mx_plan_freep) struct mx_plan *p = NULL;
        struct mx_matrix_cover c = {};
        _cleanup_free_ int *rows = NULL, *config = mx_config_new(m);
        struct mx_plan_request req = {.feature = "f", .strategy = MX_PLAN_PAIRWISE};
        const int *cell;
        size_t n_rows = 0, n;
        bool overflow;

        ASSERT_EQ(m->n_axes, 100);
        /* 2^66 x 3^34 cells: counted as an overflow, streamed lazily. */
        (void)mx_expand_product_size(m, NULL, &overflow);
        ASSERT_TRUE(overflow);
        for (n = 0; n < 1000 && mx_expand_next(it, &cell) > 0; n++)
                ASSERT_FALSE(mx_matrix_broken_rule(m, cell) >= 0);
        ASSERT_EQ(n, 1000);

        /* A pairwise covering array over all 100 axes, rule included, proven. */
        mx_matrix_cover_build(m, NULL, true, &c);
        ASSERT_EQ(c.n_params, 100);
        ASSERT_OK(mx_cover_generate(&c.model, &(struct mx_cover_options){.t = 2}, &rows, &n_rows, &why));
        ASSERT_OK(mx_cover_verify(&c.model, 2, rows, n_rows, NULL));
        ASSERT_LT(n_rows, 40); /* 3 x 3 pairs need 9; far fewer rows than cells */
        for (size_t i = 0; i < n_rows; i++) {
                mx_matrix_cover_row_to_config(m, &c, NULL, rows + i * c.n_params, config);
                ASSERT_FALSE(config[99] == 1 && (config[0] == 1 || config[1] == 1));
        }
        mx_matrix_cover_done(&c);

        /* A plan over 100 axes: L6 varies the 99 other axes, the cover adds what pairs still need. */
        ASSERT_OK(mx_plan_build(m, &req, &p, &why));
        ASSERT_LT(100, p->n_runs);
        ASSERT_EQ(p->cover_t, 2);
}

TEST(axis_limit_is_the_engines)
{
        _cleanup_free_ char *ok = many_axes(MX_COVER_MAX_PARAMS), *bad = many_axes(MX_COVER_MAX_PARAMS + 1);
        _cleanup_free_ char *why = NULL;
        struct mx_matrix *m = NULL;

        ASSERT_EQ(MX_MATRIX_MAX_AXES, MX_COVER_MAX_PARAMS);
        ASSERT_OK(mx_matrix_load_string("t.json", ok, strlen(ok), &m, &why));
        ASSERT_EQ(m->n_axes, 1024);
        m = mx_matrix_free(m);
        ASSERT_ERR(mx_matrix_load_string("t.json", bad, strlen(bad), &m, &why), EINVAL);
        ASSERT_CONTAINS(why, "key 'axes': a matrix needs 1 to 1024 axes, got 1025");
}
