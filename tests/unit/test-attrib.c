/* SPDX-License-Identifier: MIT */
/*
 * Failure attribution (matrix/analysis/attrib.h) on synthetic sweeps with known
 * causes: every test states the cause, runs the sweep through it, and
 * asserts the exact sets found; a brute-force search over every subset
 * checks the sets and their minimality on random sweeps.
 */
#include "attrib.h"
#include "confirm.h"
#include "cover.h"
#include "matrix.h"
#include "test.h"

#include <limits.h>

#define MAX_AXES 12

struct sweep {
        unsigned n_axes;
        unsigned n_values[MAX_AXES];
        const char *axis_names[MAX_AXES];
        const char *const *value_names[MAX_AXES];
};

/* A result for one configuration (values per axis): "pass", or "kind:class". */
typedef const char *(*truth_fn)(const struct sweep *s, const int *row);

static json_t *config_json(const struct sweep *s, const int *row)
{
        json_t *c = json_object();

        for (unsigned a = 0; a < s->n_axes; a++)
                if (row[a] >= 0)
                        json_object_set_new(c, s->axis_names[a], json_string(s->value_names[a][row[a]]));
        return c;
}

static json_t *result_json(const char *r)
{
        const char *colon = strchr(r, ':');
        _cleanup_free_ char *kind = NULL;

        if (streq(r, "pass"))
                return json_string("pass");
        ASSERT_TRUE(colon);
        kind = xstrndup(r, (size_t)(colon - r));
        return json_pack("{s:s,s:s}", "kind", kind, "class", colon + 1);
}

static void add(struct mx_attrib *a, int64_t id, const struct sweep *s, const int *row,
                const char *const *results)
{
        _cleanup_json_ json_t *config = config_json(s, row), *res = json_array();
        _cleanup_free_ char *err = NULL;

        for (size_t i = 0; results[i]; i++)
                json_array_append_new(res, result_json(results[i]));
        if (mx_attrib_add_run(a, id, config, res, &err) < 0)
                test_fail(__FILE__, __LINE__, "add_run: %s", strna(err));
}

/* Every configuration of the product, through truth. */
static size_t add_product(struct mx_attrib *a, const struct sweep *s, truth_fn truth)
{
        int row[MAX_AXES] = {};
        size_t n = 0;

        for (;;) {
                const char *r[2] = {truth(s, row), NULL};
                unsigned k;

                add(a, (int64_t)++n, s, row, r);
                for (k = s->n_axes; k-- > 0;) {
                        if (++row[k] < (int)s->n_values[k])
                                break;
                        row[k] = 0;
                }
                if (k == UINT_MAX)
                        return n;
        }
}

static int vi(const struct sweep *s, unsigned axis, const char *name)
{
        for (unsigned v = 0; v < s->n_values[axis]; v++)
                if (streq(s->value_names[axis][v], name))
                        return (int)v;
        test_fail(__FILE__, __LINE__, "no value %s", name);
}

static bool has(const struct sweep *s, const int *row, const char *axis, const char *value)
{
        for (unsigned a = 0; a < s->n_axes; a++)
                if (streq(s->axis_names[a], axis))
                        return row[a] == vi(s, a, value);
        test_fail(__FILE__, __LINE__, "no axis %s", axis);
}

static const struct mx_attrib_class *find_class(const struct mx_attrib_result *r, const char *name)
{
        for (size_t k = 0; k < r->n_classes; k++)
                if (streq(r->classes[k].name, name))
                        return &r->classes[k];
        test_fail(__FILE__, __LINE__, "no class %s", name);
}

/* The class's sets as "text (support)" lines, in rank order. */
static char *sets_text(const struct mx_attrib_result *r, const struct mx_attrib_class *c)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        for (size_t i = 0; i < c->n_sets; i++) {
                _cleanup_free_ char *t = mx_attrib_set_describe(r, &c->sets[i]);
                _cleanup_free_ char *line = xasprintf("%s (%zu)\n", t, c->sets[i].support);

                mx_buf_puts(&b, line);
        }
        mx_buf_putc(&b, '\0');
        return mx_buf_steal(&b);
}

#define ASSERT_SETS(r, cls, expected)                                                                       \
        do {                                                                                                \
                _cleanup_free_ char *_t = sets_text((r), find_class((r), (cls)));                           \
                if (!streq(_t, (expected)))                                                                 \
                        test_fail(__FILE__, __LINE__, "class %s: sets\n%s\nexpected\n%s", (cls), _t,        \
                                  (expected));                                                              \
        } while (0)

static const char *const kernels[] = {"marlin", "cutlass", "gemv", NULL};
static const char *const tiles[] = {"auto", "128x128", "64x128", NULL};
static const char *const specs[] = {"off", "eagle3-short", "eagle3-long", NULL};
static const char *const onoff[] = {"on", "off", NULL};

static const struct sweep demo = {
        .n_axes = 4,
        .n_values = {3, 3, 3, 2},
        .axis_names = {"kernel", "tile", "spec", "graphs"},
        .value_names = {kernels, tiles, specs, onoff},
};

static struct mx_attrib_result *analyse(struct mx_attrib *a, unsigned t)
{
        _cleanup_free_ char *err = NULL;
        struct mx_attrib_result *r = NULL;

        if (mx_attrib_analyse(a, t, &r, &err) < 0)
                test_fail(__FILE__, __LINE__, "analyse: %s", strna(err));
        return r;
}

static const char *single_cause(const struct sweep *s, const int *row)
{
        return has(s, row, "tile", "64x128") ? "crash:tma-layout" : "pass";
}

TEST(single_value_cause)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
        const struct mx_attrib_class *c;

        ASSERT_EQ(add_product(a, &demo, single_cause), 54);
        r = analyse(a, 3);
        ASSERT_EQ(r->n_classes, 1);
        ASSERT_EQ(r->passing, 36);
        c = find_class(r, "tma-layout");
        ASSERT_EQ(c->kind, MX_ATTRIB_CRASH);
        ASSERT_EQ(c->failing, 18);
        ASSERT_SETS(r, "tma-layout", "tile=64x128 (18)\n");
        ASSERT_TRUE(c->sets[0].complete);
        ASSERT_EQ(c->unexplained, 0);
}

static const char *interaction(const struct sweep *s, const int *row)
{
        return has(s, row, "graphs", "on") && has(s, row, "spec", "eagle3-short")
                       ? "crash:illegal-instruction"
                       : "pass";
}

TEST(two_value_interaction)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;

        add_product(a, &demo, interaction);
        r = analyse(a, 3);
        ASSERT_SETS(r, "illegal-instruction", "graphs=on ∧ spec=eagle3-short (9)\n");
        /* t = 1 cannot see it: nothing explains, every failure is unexplained. */
        mx_attrib_result_free(r);
        r = analyse(a, 1);
        ASSERT_SETS(r, "illegal-instruction", "");
        ASSERT_EQ(find_class(r, "illegal-instruction")->unexplained, 9);
}

static const char *two_causes(const struct sweep *s, const int *row)
{
        if (has(s, row, "tile", "64x128") || (has(s, row, "kernel", "gemv") && has(s, row, "graphs", "off")))
                return "fail:L1-fail";
        return "pass";
}

TEST(two_independent_causes_same_class)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
        const struct mx_attrib_class *c;

        add_product(a, &demo, two_causes);
        r = analyse(a, 3);
        c = find_class(r, "L1-fail");
        ASSERT_EQ(c->kind, MX_ATTRIB_FAIL);
        ASSERT_EQ(c->failing, 18 + 6);
        ASSERT_SETS(r, "L1-fail", "tile=64x128 (18)\ngraphs=off ∧ kernel=gemv (9)\n");
        ASSERT_FALSE(c->sets[0].complete);
        ASSERT_FALSE(c->sets[1].complete);
        ASSERT_EQ(c->unexplained, 0);
}

static const char *two_classes(const struct sweep *s, const int *row)
{
        /* The crash comes first: a run with both causes crashes before its level fails. */
        if (has(s, row, "graphs", "on") && !has(s, row, "spec", "off"))
                return "crash:illegal-instruction";
        if (has(s, row, "kernel", "cutlass") && has(s, row, "tile", "64x128"))
                return "fail:L1.5-invalid";
        return "pass";
}

TEST(two_interacting_causes_of_different_classes)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
        const struct mx_attrib_class *c;
        _cleanup_free_ char *text = NULL;
        _cleanup_json_ json_t *when = NULL;

        add_product(a, &demo, two_classes);
        r = analyse(a, 3);
        ASSERT_EQ(r->n_classes, 2);
        ASSERT_TRUE(streq(r->classes[0].name, "illegal-instruction")); /* most failures first */
        ASSERT_SETS(r, "illegal-instruction",
                    "graphs=on ∧ spec=eagle3-long (9)\ngraphs=on ∧ spec=eagle3-short (9)\n");
        /* The fail class's runs that crashed instead neither veto nor support it: they are "other". */
        ASSERT_SETS(r, "L1.5-invalid", "kernel=cutlass ∧ tile=64x128 (4)\n");
        c = find_class(r, "L1.5-invalid");
        ASSERT_EQ(c->sets[0].other, 2);
        ASSERT_TRUE(c->sets[0].complete);
        /* The crash's two sets are one known_incompatible entry, with a glob for people. */
        c = find_class(r, "illegal-instruction");
        ASSERT_EQ(c->n_groups, 1);
        ASSERT_EQ(c->groups[0].support, 18);
        text = mx_attrib_group_describe(a, r, c, &c->groups[0]);
        ASSERT_STREQ(text, "graphs=on ∧ spec=eagle3-*");
        when = mx_attrib_group_when(r, c, &c->groups[0]);
        {
                _cleanup_free_ char *j = json_dumps(when, JSON_SORT_KEYS | JSON_COMPACT);

                ASSERT_STREQ(j, "{\"graphs\":\"on\",\"spec\":[\"eagle3-short\",\"eagle3-long\"]}");
        }
        /* With a value the runs never tried the glob would claim it: list the values instead. */
        {
                char *universe[] = {"off", "eagle3-short", "eagle3-long", "eagle3-throughput", NULL};
                _cleanup_free_ char *t2 = NULL;

                mx_attrib_axis_values(a, "spec", universe);
                t2 = mx_attrib_group_describe(a, r, c, &c->groups[0]);
                ASSERT_STREQ(t2, "graphs=on ∧ spec=eagle3-short|eagle3-long");
        }
}

TEST(flaky_runs_neither_veto_nor_support)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
        const struct mx_attrib_class *c;
        int row[MAX_AXES] = {};
        int64_t id = 0;
        size_t n_flaky_passing = 0;

        /* Every configuration once; two of them flaky: */
        for (row[0] = 0; row[0] < 3; row[0]++)
                for (row[1] = 0; row[1] < 3; row[1]++)
                        for (row[2] = 0; row[2] < 3; row[2]++)
                                for (row[3] = 0; row[3] < 2; row[3]++) {
                                        const char *res[3] = {single_cause(&demo, row), NULL, NULL};

                                        id++;
                                        /* a failing configuration that passed once (retried) */
                                        if (row[0] == 0 && row[1] == 2 && row[2] == 0 && row[3] == 0) {
                                                res[0] = "pass";
                                                res[1] = "crash:tma-layout";
                                        }
                                        /* a passing configuration that crashed once: not evidence either */
                                        if (row[0] == 1 && row[1] == 0 && row[2] == 1 && row[3] == 1) {
                                                res[1] = "crash:tma-layout";
                                                n_flaky_passing++;
                                        }
                                        add(a, id, &demo, row, res);
                                }
        /* The same configuration as run 1 in a second run with another result: flaky too. */
        {
                int row1[MAX_AXES] = {};
                const char *res[] = {"crash:tma-layout", NULL};

                add(a, 1000, &demo, row1, res);
        }
        ASSERT_EQ(n_flaky_passing, 1);
        r = analyse(a, 3);
        ASSERT_EQ(r->n_flaky, 4); /* two flaky single runs, and runs 1 and 1000 */
        c = find_class(r, "tma-layout");
        ASSERT_EQ(c->failing, 17);
        ASSERT_SETS(r, "tma-layout", "tile=64x128 (17)\n");
        ASSERT_EQ(c->sets[0].flaky, 1);
        ASSERT_TRUE(c->sets[0].complete);
        ASSERT_EQ(r->passing, 54 - 18 - 2);
}

/* ---- brute force: every subset of size <= t of every failing configuration, by the definition ---- */

struct obs {
        int row[MAX_AXES];
        int status; /* -1 pass, else class */
};

static bool holds_set(const int *row, const int *set_axes, const int *set_values, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                if (row[set_axes[i]] != set_values[i])
                        return false;
        return true;
}

static bool explains(const struct obs *o, size_t n, const int *ax, const int *val, unsigned k)
{
        for (size_t i = 0; i < n; i++)
                if (o[i].status == -1 && holds_set(o[i].row, ax, val, k))
                        return false;
        return true;
}

/* Is the set minimal: explains, and no subset one smaller does (enough: explaining is monotone). */
static bool minimal(const struct obs *o, size_t n, const int *ax, const int *val, unsigned k)
{
        if (!explains(o, n, ax, val, k))
                return false;
        for (unsigned drop = 0; drop < k && k > 1; drop++) {
                int a2[MX_ATTRIB_MAX_T], v2[MX_ATTRIB_MAX_T];
                unsigned m = 0;

                for (unsigned i = 0; i < k; i++)
                        if (i != drop) {
                                a2[m] = ax[i];
                                v2[m++] = val[i];
                        }
                if (explains(o, n, a2, v2, m))
                        return false;
        }
        return true;
}

TEST(random_sweeps_match_brute_force)
{
        uint64_t seed = 12345;

        for (unsigned round = 0; round < 60; round++) {
                _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
                _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
                static const char *const vals[] = {"v0", "v1", "v2", NULL};
                static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g"};
                struct sweep s = {.n_axes = 7};
                struct obs o[40];
                size_t n = 20 + round % 20, found = 0, explained = 0, failing = 0;
                bool expl[40] = {};
                unsigned t = 1 + round % 3;

                for (unsigned k = 0; k < s.n_axes; k++) {
                        s.n_values[k] = 3;
                        s.axis_names[k] = names[k];
                        s.value_names[k] = vals;
                }
                for (size_t i = 0; i < n; i++) {
                        const char *res[2] = {};

                        for (unsigned k = 0; k < s.n_axes; k++) {
                                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                                o[i].row[k] = (int)((seed >> 33) % 4) - 1; /* -1: unset */
                        }
                        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                        o[i].status = (seed >> 33) % 3 == 0 ? 0 : -1;
                        res[0] = o[i].status == 0 ? "crash:x" : "pass";
                        add(a, (int64_t)i + 1, &s, o[i].row, res);
                }
                r = analyse(a, t);
                /* Every set the module reports is minimal and held by a failing run ... */
                for (size_t k = 0; k < r->n_classes; k++)
                        for (size_t i = 0; i < r->classes[k].n_sets; i++) {
                                const struct mx_attrib_set *st = &r->classes[k].sets[i];
                                int ax[MX_ATTRIB_MAX_T], val[MX_ATTRIB_MAX_T];

                                for (unsigned q = 0; q < st->n; q++) {
                                        ax[q] = (int)(strchr("abcdefg", r->axes[st->pairs[q].axis][0]) -
                                                      "abcdefg");
                                        val[q] = r->values[st->pairs[q].axis][st->pairs[q].value][1] - '0';
                                }
                                ASSERT_TRUE(minimal(o, n, ax, val, st->n));
                                ASSERT_LE(st->n, t);
                                found++;
                        }
                /* ... and the brute force's minimal sets explain no run the reported ones leave out. */
                for (unsigned mask = 1; mask < (1u << 7); mask++) {
                        unsigned k = (unsigned)__builtin_popcount(mask), combos = 1;
                        int ax[3], val[3];

                        if (k > t)
                                continue;
                        for (unsigned q = 0, b = 0; b < 7; b++)
                                if (mask & (1u << b))
                                        ax[q++] = (int)b;
                        for (unsigned q = 0; q < k; q++)
                                combos *= 3;
                        for (unsigned combo = 0; combo < combos; combo++) {
                                bool held = false;

                                for (unsigned q = 0, x = combo; q < k; q++, x /= 3)
                                        val[q] = (int)(x % 3);
                                for (size_t i = 0; i < n && !held; i++)
                                        held = o[i].status == 0 && holds_set(o[i].row, ax, val, k);
                                if (held && minimal(o, n, ax, val, k))
                                        for (size_t i = 0; i < n; i++)
                                                if (o[i].status == 0 && holds_set(o[i].row, ax, val, k))
                                                        expl[i] = true;
                        }
                }
                /* Reported sets explain exactly the failing runs that some minimal set explains. */
                for (size_t i = 0; i < n; i++) {
                        failing += o[i].status == 0;
                        explained += expl[i];
                }
                if (r->n_classes > 0)
                        ASSERT_EQ(r->classes[0].unexplained, failing - explained);
                else
                        ASSERT_EQ(failing, 0);
                ASSERT_TRUE(found > 0 || explained == 0);
        }
}

TEST(cause_behind_a_pairwise_covering_array)
{
        /* 8 axes of 3 values, a strength-2 covering array; the cause is the pair x3=v2 ∧ x6=v0. */
        static const char *const vals[] = {"v0", "v1", "v2", NULL};
        static const char *const names[] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
        unsigned nv[8] = {3, 3, 3, 3, 3, 3, 3, 3};
        struct mx_cover_model model = {.n_params = 8, .n_values = nv};
        struct mx_cover_options opt = {.t = 2, .seed = 7};
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
        _cleanup_free_ int *rows = NULL;
        _cleanup_free_ char *err = NULL;
        struct sweep s = {.n_axes = 8};
        size_t n_rows = 0, failing = 0;
        const struct mx_attrib_class *c;
        bool found = false;

        for (unsigned k = 0; k < 8; k++) {
                s.n_values[k] = 3;
                s.axis_names[k] = names[k];
                s.value_names[k] = vals;
        }
        ASSERT_EQ(mx_cover_generate(&model, &opt, &rows, &n_rows, &err), 0);
        for (size_t i = 0; i < n_rows; i++) {
                const int *row = rows + i * 8;
                const char *res[2] = {row[3] == 2 && row[6] == 0 ? "crash:illegal-instruction" : "pass",
                                      NULL};

                failing += res[0][0] == 'c';
                add(a, (int64_t)i + 1, &s, row, res);
        }
        ASSERT_TRUE(failing >= 1); /* a covering array holds every pair */
        r = analyse(a, 2);
        c = find_class(r, "illegal-instruction");
        /* The cause is found, complete, and no single value explains. */
        for (size_t i = 0; i < c->n_sets; i++) {
                _cleanup_free_ char *t = mx_attrib_set_describe(r, &c->sets[i]);

                ASSERT_EQ(c->sets[i].n, 2);
                if (streq(t, "x3=v2 ∧ x6=v0")) {
                        found = true;
                        ASSERT_TRUE(c->sets[i].complete);
                        ASSERT_EQ(c->sets[i].support, failing);
                }
        }
        ASSERT_TRUE(found);
        ASSERT_EQ(c->unexplained, 0);
}

TEST(bad_input)
{
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_json_ json_t *config = json_pack("{s:s}", "kernel", "cutlass");
        _cleanup_json_ json_t *bad = json_pack("[{s:s,s:s}]", "kind", "explode", "class", "x");
        _cleanup_json_ json_t *empty = json_array();
        _cleanup_free_ char *err = NULL;
        struct mx_attrib_result *r = NULL;

        ASSERT_EQ(mx_attrib_add_run(a, 1, config, bad, &err), -EINVAL);
        ASSERT_TRUE(strstr(err, "run 1: result 0"));
        /* No result yet: nothing to learn, nothing added. */
        ASSERT_EQ(mx_attrib_add_run(a, 2, config, empty, &err), 0);
        free(TAKE_PTR(err));
        ASSERT_EQ(mx_attrib_analyse(a, 4, &r, &err), -EINVAL);
        ASSERT_TRUE(err && strstr(err, "1 to 3"));
}

TEST(attempt_results)
{
        _cleanup_json_ json_t *levels =
                json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "level", "L2", "verdict", "fail", "level", "L1",
                          "verdict", "pass", "level", "L1.5", "verdict", "invalid");
        _cleanup_json_ json_t *passed = json_pack("[{s:s,s:s}]", "level", "L1", "verdict", "pass");
        _cleanup_json_ json_t *r1 = mx_attrib_attempt_result("completed", NULL, levels);
        _cleanup_json_ json_t *r2 = mx_attrib_attempt_result("crashed", "illegal-instruction", NULL);
        _cleanup_json_ json_t *r3 = mx_attrib_attempt_result("completed", NULL, passed);
        _cleanup_json_ json_t *r4 = mx_attrib_attempt_result("timeout", NULL, NULL);

        /* The first failed level in the seed's order names the failure. */
        ASSERT_STREQ(json_string_value(json_object_get(r1, "class")), "L1.5-invalid");
        ASSERT_STREQ(json_string_value(json_object_get(r2, "kind")), "crash");
        ASSERT_STREQ(json_string_value(r3), "pass");
        ASSERT_STREQ(json_string_value(json_object_get(r4, "kind")), "timeout");
        ASSERT_TRUE(mx_attrib_attempt_result("infra-error", NULL, NULL) == NULL);
        ASSERT_TRUE(mx_attrib_attempt_result("interrupted", NULL, NULL) == NULL);
}

/* The demo matrix: confirmation runs stay within its rule (tile only with cutlass) and say what they test.
 */
TEST(confirm_plan_within_constraints)
{
        _cleanup_free_ char *path = test_source_path("matrix/demo-sim.json");
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_(mx_attrib_freep) struct mx_attrib *a = mx_attrib_new();
        _cleanup_(mx_attrib_result_freep) struct mx_attrib_result *r = NULL;
        _cleanup_(mx_plan_freep) struct mx_plan *p = NULL;
        _cleanup_json_ json_t *tried = json_array();
        _cleanup_free_ char *err = NULL;
        static const char *const runs[][3] = {
                /* kernel, tile, result */
                {"cutlass", "auto", "pass"},
                {"cutlass", "64x128", "crash"},
                {"marlin", "auto", "pass"},
                {"cutlass", "128x128", "pass"},
        };
        size_t holding = 0, without = 0;

        ASSERT_EQ(mx_matrix_load_file(path, &m, &err), 0);
        for (size_t i = 0; i < ELEMENTSOF(runs); i++) {
                _cleanup_json_ json_t *config =
                        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "kernel", runs[i][0], "tile", runs[i][1],
                                  "activation", "bf16", "sinks", "off", "spec", "off", "graphs", "on");
                _cleanup_json_ json_t *res =
                        streq(runs[i][2], "pass")
                                ? json_pack("[s]", "pass")
                                : json_pack("[{s:s,s:s}]", "kind", "crash", "class", "tma-layout");

                ASSERT_EQ(mx_attrib_add_run(a, (int64_t)i + 1, config, res, &err), 0);
                json_array_append_new(
                        tried, json_pack("{s:O,s:b}", "config", config, "pass", streq(runs[i][2], "pass")));
        }
        r = analyse(a, 3);
        ASSERT_SETS(r, "tma-layout", "tile=64x128 (1)\n");
        ASSERT_EQ(mx_confirm_plan(m, r, tried, "confirm job 1", 0, &p, &err), 0);
        ASSERT_EQ(p->n_skipped, 0);
        for (size_t i = 0; i < p->n_runs; i++) {
                const struct mx_plan_run *run = &p->runs[i];
                int tile = mx_matrix_axis_index(m, "tile"), kernel = mx_matrix_axis_index(m, "kernel");

                ASSERT_TRUE(mx_matrix_broken_rule(m, run->config) < 0);
                ASSERT_TRUE(mx_matrix_excluded(m, run->config) < 0);
                /* The rule allows tile=64x128 with cutlass only: every run holding it keeps cutlass. */
                if (run->config[tile] == mx_matrix_value_index(&m->axes[tile], "64x128")) {
                        ASSERT_EQ(run->config[kernel], mx_matrix_value_index(&m->axes[kernel], "cutlass"));
                        ASSERT_TRUE(strv_contains(run->reasons, "confirm: tile=64x128"));
                        holding++;
                } else {
                        ASSERT_TRUE(strv_contains(run->reasons,
                                                  "confirm: tile=64x128 (without tile=64x128: tile=auto)"));
                        without++;
                }
        }
        ASSERT_TRUE(holding >= 2); /* the passing configurations with cutlass, and moved ones */
        ASSERT_EQ(without, 1);
}
