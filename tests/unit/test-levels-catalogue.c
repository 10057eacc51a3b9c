/* SPDX-License-Identifier: MIT */
/*
 * The level catalogue (matrix/base/levelcat.h) is the one list of levels: the
 * daemon's implementations (daemon/run/levels/levels.c), the protocol's level
 * type, the man pages and every level setting's documentation agree with it;
 * selections expand ranges in the seed's order; settings are typed and
 * bounded.
 */
#include "levelcat.h"
#include "matrix.h"
#include "levels/levels.h"
#include "protocol.h"
#include "test.h"

TEST(every_catalogue_level_has_an_implementation_in_order)
{
        size_t n = 0;

        for (size_t i = 0; mx_level_table[i]; i++, n++) {
                ASSERT_TRUE(i < mx_level_defs_count);
                ASSERT_STREQ(mx_level_table[i]->name, mx_level_defs[i].name);
                ASSERT_NOT_NULL(mx_level_table[i]->new);
                ASSERT_NOT_NULL(mx_level_table[i]->run);
                ASSERT_NOT_NULL(mx_level_table[i]->free);
        }
        ASSERT_EQ(n, mx_level_defs_count);
}

TEST(protocol_level_names_are_the_catalogue)
{
        const struct mx_proto *p = mx_proto_get();
        json_t *en = json_object_get(json_object_get(p->types, "level_name"), "enum");

        ASSERT_EQ(json_array_size(en), mx_level_defs_count);
        for (size_t i = 0; i < mx_level_defs_count; i++)
                ASSERT_STREQ(json_string_value(json_array_get(en, i)), mx_level_defs[i].name);
}

/* The roff text mentions s (with roff's escaped hyphens and dots accepted). */
static bool roff_mentions(const char *text, const char *s)
{
        _cleanup_free_ char *esc = NULL;
        struct mx_buf b = MX_BUF_INIT;

        if (strstr(text, s))
                return true;
        for (const char *c = s; *c; c++)
                mx_buf_printf(&b, "%s", *c == '-' ? "\\-" : *c == '.' ? "\\&." : (char[2]){ *c, 0 });
        esc = mx_buf_steal(&b);
        return strstr(text, esc) != NULL;
}

TEST(man_pages_document_every_level_and_setting)
{
        _cleanup_free_ char *p5 = test_source_path("docs/mxmatrix.json.5");
        _cleanup_free_ char *p8 = test_source_path("docs/mxmatrixd.8");
        _cleanup_free_ char *t5 = test_read_file(p5, NULL), *t8 = test_read_file(p8, NULL);

        for (size_t i = 0; i < mx_level_defs_count; i++) {
                const struct mx_level_def *d = &mx_level_defs[i];

                if (!roff_mentions(t8, d->name))
                        test_fail(__FILE__, __LINE__, "mxmatrixd(8) does not mention %s", d->name);
                for (const struct mx_level_setting *s = d->settings; s->name; s++) {
                        _cleanup_free_ char *key = xasprintf("%s.%s", d->name, s->name);

                        if (!roff_mentions(t5, key))
                                test_fail(__FILE__, __LINE__, "mxmatrix.json(5) does not document %s", key);
                }
        }
        for (const struct mx_level_setting *s = mx_level_common_settings; s->name; s++)
                if (!roff_mentions(t5, s->name))
                        test_fail(__FILE__, __LINE__, "mxmatrix.json(5) does not document %s", s->name);
}

static char *selection(const char *s)
{
        _cleanup_json_ json_t *a = NULL;
        _cleanup_free_ char *err = NULL;
        struct mx_buf b = MX_BUF_INIT;
        size_t i;
        json_t *w;

        if (mx_levels_select_string(s, &a, &err) < 0)
                return xasprintf("error: %s", strna(err));
        json_array_foreach (a, i, w)
                mx_buf_printf(&b, "%s%s", i ? "," : "", json_string_value(w));
        return b.data ? mx_buf_steal(&b) : xstrdup("");
}

TEST(selections_expand_ranges_in_the_seed_order)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "L1", "L1" },
                { "L1.5,L1", "L1,L1.5" },
                { "l1.5", "L1.5" },
                { "L1-L1.5", "L1,L1.5" },
                { "L1,L1,L1.5", "L1,L1.5" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = selection(cases[i].in);
                ASSERT_STREQ(got, cases[i].out);
        }
}

TEST(selections_refuse_unknown_levels_and_backward_ranges)
{
        static const char *const bad[] = { "L7", "L1.5-L1", "L1-", "-L1", "L1-L9", "x" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *got = selection(bad[i]);

                ASSERT_TRUE(startswith(got, "error: "));
                ASSERT_CONTAINS(got, "not a level");
        }
}

TEST(common_settings_are_typed_and_bounded)
{
        const struct mx_level_def *d = mx_level_def_find("L1");
        _cleanup_json_ json_t *s = mx_level_defaults(d);
        _cleanup_json_ json_t *good = json_pack("{s:s,s:s}", "timeout", "90s", "continue_on_fail", "yes");
        _cleanup_json_ json_t *unknown = json_pack("{s:i}", "concurrency", 4);
        _cleanup_json_ json_t *bad = json_pack("{s:s}", "timeout", "soon");
        _cleanup_free_ char *e1 = NULL, *e2 = NULL;

        ASSERT_EQ(json_integer_value(json_object_get(s, "timeout")), 0);
        ASSERT_OK(mx_level_settings_apply(d, s, good, "levels.L1", NULL));
        ASSERT_EQ(json_integer_value(json_object_get(s, "timeout")), 90000);
        ASSERT_TRUE(json_is_true(json_object_get(s, "continue_on_fail")));
        ASSERT_ERR(mx_level_settings_apply(d, s, unknown, "levels.L1", &e1), EINVAL);
        ASSERT_CONTAINS(e1, "no setting 'concurrency'");
        ASSERT_ERR(mx_level_settings_apply(d, s, bad, "levels.L1", &e2), EINVAL);
        ASSERT_CONTAINS(e2, "levels.L1.timeout");
}

/* The demo matrix with a levels section at the top and in its first feature. */
static int load_with_levels(const char *top, const char *feature, struct mx_matrix **ret, char **reterr)
{
        _cleanup_free_ char *path = test_source_path("matrix/demo-sim.json"), *text = NULL;
        _cleanup_json_ json_t *j = NULL;

        j = json_load_file(path, 0, NULL);
        ASSERT_NOT_NULL(j);
        if (top)
                json_object_set_new(j, "levels", json_loads(top, 0, NULL));
        if (feature)
                json_object_set_new(json_array_get(json_object_get(j, "features"), 0), "levels",
                                    json_loads(feature, 0, NULL));
        text = json_dumps(j, JSON_INDENT(2));
        return mx_matrix_load_string("t.json", text, strlen(text), ret, reterr);
}

TEST(matrix_levels_sections_resolve_in_order)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_json_ json_t *run = NULL, *set = NULL, *over = json_pack("{s:s}", "L2.logprobs", "3");
        _cleanup_free_ char *err = NULL;
        json_t *l2;

        ASSERT_OK(load_with_levels("{\"run\": \"L1-L2\", \"continue_on_fail\": true, \"L2\": {\"max_tokens\": 8}}",
                                   "{\"L2\": {\"seed\": 7}}", &m, &err));
        ASSERT_OK(mx_levels_resolve(m, 0, NULL, over, &run, &set, &err));
        ASSERT_EQ(json_array_size(run), 3);
        ASSERT_STREQ(json_string_value(json_array_get(run, 1)), "L1.5");
        l2 = json_object_get(set, "L2");
        ASSERT_EQ(json_integer_value(json_object_get(l2, "max_tokens")), 8);
        ASSERT_EQ(json_integer_value(json_object_get(l2, "seed")), 7);
        ASSERT_EQ(json_integer_value(json_object_get(l2, "logprobs")), 3);
        ASSERT_TRUE(json_is_true(json_object_get(l2, "continue_on_fail")));
        ASSERT_TRUE(json_is_true(json_object_get(json_object_get(set, "L1"), "continue_on_fail")));
        /* Not the feature's: its settings do not apply. */
        json_decref(run);
        json_decref(set);
        ASSERT_OK(mx_levels_resolve(m, -1, NULL, NULL, &run, &set, &err));
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(set, "L2"), "seed")), 42);
}

/* Without a selection anywhere a submission runs seed 001's protocol: L1, L1.5, L2, L3, L4, L5. */
TEST(default_selection_is_the_protocol)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_json_ json_t *run = NULL, *set = NULL;
        _cleanup_free_ char *err = NULL, *text = NULL;

        ASSERT_OK(load_with_levels("{}", NULL, &m, &err)); /* a levels section that selects nothing */
        ASSERT_OK(mx_levels_resolve(m, 0, NULL, NULL, &run, &set, &err));
        text = json_dumps(run, JSON_COMPACT);
        ASSERT_STREQ(text, "[\"L1\",\"L1.5\",\"L2\",\"L3\",\"L4\",\"L5\"]");
        ASSERT_EQ(json_object_size(set), 6);
}

TEST(matrix_levels_errors_name_the_place)
{
        static const struct {
                const char *top, *feature, *want;
        } bad[] = {
                { "{\"L2\": {\"max_tokens\": 0}}", NULL, "levels.L2.max_tokens: 0 is outside 1 to 131072" },
                { "{\"L9\": {}}", NULL, "unknown key 'L9'" },
                { "{\"run\": \"L3-L1\"}", NULL, "not a level or a range" },
                { NULL, "{\"L2\": {\"endpoints\": [\"grpc\"]}}", "not one of the choices" },
                { NULL, "{\"L2\": {\"prompts\": [{\"name\": \"x\"}]}}", "prompt 1" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
                _cleanup_free_ char *err = NULL;

                ASSERT_ERR(load_with_levels(bad[i].top, bad[i].feature, &m, &err), EINVAL);
                ASSERT_CONTAINS(err, "t.json:");
                ASSERT_CONTAINS(err, bad[i].want);
        }
}

TEST(submission_settings_for_levels_not_run_are_refused)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_json_ json_t *run = NULL, *set = NULL, *sel = json_pack("[s]", "L1");
        _cleanup_json_ json_t *over = json_pack("{s:i}", "L2.seed", 1), *typo = json_pack("{s:i}", "concurrency", 1);
        _cleanup_free_ char *e1 = NULL, *e2 = NULL;

        ASSERT_OK(load_with_levels(NULL, NULL, &m, NULL));
        ASSERT_ERR(mx_levels_resolve(m, -1, sel, over, &run, &set, &e1), EINVAL);
        ASSERT_CONTAINS(e1, "not among the levels");
        ASSERT_ERR(mx_levels_resolve(m, -1, sel, typo, &run, &set, &e2), EINVAL);
        ASSERT_CONTAINS(e2, "LEVEL.setting");
}

TEST(submit_words_set_levels_and_level_settings)
{
        const struct mx_proto *p = mx_proto_get();
        const struct mx_proto_method *m = mx_proto_find(p, "submit");
        char *argv[] = { "submit", "feature=cutlass", "levels=L1-L3", "L3.concurrency=4", "kernel=gemm", NULL };
        char *argv2[] = { "submit", "cutlass", "L3.concurrency=4", "L3.concurrency=5", NULL };
        _cleanup_json_ json_t *params = NULL, *twice = NULL;
        _cleanup_free_ char *err = NULL;

        ASSERT_OK(mx_proto_cli_parse(p, m, 5, argv, &params, &err));
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(params, "levels"), 0)), "L1-L3");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(params, "level_settings"), "L3.concurrency")),
                     "4");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(params, "pins"), "kernel")), "gemm");
        ASSERT_ERR(mx_proto_cli_parse(p, m, 4, argv2, &twice, &err), EINVAL);
        ASSERT_CONTAINS(err, "given twice");
}
