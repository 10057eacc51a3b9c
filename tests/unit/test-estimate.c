/* SPDX-License-Identifier: MIT */
/* Estimates (matrix/plan/estimate.c) on the shipped GB10 matrix: the settings' bound, stored durations, and the
 * criteria a level selection cannot measure. */
#include "estimate.h"
#include "levelcat.h"
#include "plan.h"
#include "test.h"

#define S 1000000LL /* µs */

struct fixture {
        struct mx_matrix *m;
        struct mx_plan *p;
        json_t *levels, *settings;
};

static void load(struct fixture *f, const char *levels)
{
        _cleanup_free_ char *path = test_source_path("matrix/mxfp4-gb10.json"), *err = NULL;
        _cleanup_json_ json_t *sel = levels ? json_pack("[s]", levels) : NULL;
        struct mx_plan_request req = {.feature = "cutlass", .strategy = MX_PLAN_DEFAULT};

        ASSERT_OK(mx_matrix_load_file(path, &f->m, &err));
        ASSERT_OK(mx_plan_build(f->m, &req, &f->p, &err));
        ASSERT_OK(mx_levels_resolve(f->m, f->p->feature, sel, NULL, &f->levels, &f->settings, &err));
}

static void unload(struct fixture *f)
{
        json_decref(f->levels);
        json_decref(f->settings);
        mx_plan_free(f->p);
        mx_matrix_free(f->m);
}

static struct mx_estimate_input input(struct fixture *f, json_t *stored)
{
        struct mx_estimate_input in = {.m = f->m,
                                       .settings = &f->p->settings,
                                       .levels = f->levels,
                                       .level_settings = f->settings,
                                       .n_runs = f->p->n_runs,
                                       .stored = stored};

        for (size_t i = 0; i < f->p->n_runs; i++)
                in.n_expect_fail += f->p->runs[i].n_known_incompatible > 0;
        return in;
}

TEST(bound_from_the_settings_when_nothing_is_stored)
{
        struct fixture f = {};
        _cleanup_json_ json_t *e = NULL;
        struct mx_estimate_input in;

        load(&f, NULL);
        /* The protocol by default: six levels, 12 runs, 5 of them known to fail or crash. */
        ASSERT_EQ(json_array_size(f.levels), 6);
        ASSERT_EQ(f.p->n_runs, 12);
        in = input(&f, NULL);
        ASSERT_EQ(in.n_expect_fail, 5);
        e = mx_estimate(&in);
        /* ready 10 m + 6 levels x 30 m = 3 h 10 m, capped by the GB10's run timeout of 2 h */
        ASSERT_STREQ(json_string_value(json_object_get(e, "basis")), "bound");
        ASSERT_EQ(json_integer_value(json_object_get(e, "bound_us")), 12 * 2 * 3600 * S);
        ASSERT_CONTAINS(json_string_value(json_object_get(e, "text")), "at most 24h00m (12 runs x 2h00m");
        ASSERT_CONTAINS(json_string_value(json_object_get(e, "text")), "no stored durations");
        unload(&f);
}

TEST(stored_durations_with_levels_never_stored)
{
        struct fixture f = {};
        _cleanup_json_ json_t *e = NULL, *stored = NULL;
        struct mx_estimate_input in;
        json_error_t je;

        load(&f, "L1-L3");
        /* 40 completed attempts: 60 s outside the levels; L1 10 s, L1.5 5 s, L2 never; 10 crashes at 90 s.
         */
        stored = json_loads(
                "{\"levels\": {\"L1\": {\"n\": 40, \"mean_us\": 10000000},"
                "\"L1.5\": {\"n\": 40, \"mean_us\": 5000000}, \"L3\": {\"n\": 3, \"mean_us\": 25000000}},"
                "\"outcomes\": {\"completed\": {\"n\": 40, \"mean_us\": 75000000, \"overhead_us\": "
                "60000000},"
                "\"crashed\": {\"n\": 10, \"mean_us\": 90000000}}}",
                0, &je);
        ASSERT_NOT_NULL(stored);
        in = input(&f, stored);
        e = mx_estimate(&in);
        ASSERT_STREQ(json_string_value(json_object_get(e, "basis")), "partly-stored");
        /* per run: 60 + 10 + 5 + L2's timeout (30 m) + 25 = 1900 s */
        ASSERT_EQ(json_integer_value(json_object_get(e, "per_run_us")), 1900 * S);
        /* 7 runs at 1900 s, 5 expected to crash at 90 s */
        ASSERT_EQ(json_integer_value(json_object_get(e, "total_us")), (7 * 1900 + 5 * 90) * S);
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(e, "guessed"), 0)), "L2");
        ASSERT_CONTAINS(json_string_value(json_object_get(e, "text")), "from 50 stored attempts");
        ASSERT_CONTAINS(json_string_value(json_object_get(e, "text")), "counted at their timeout: L2");
        /* fail-fast: a first server start of 60 s with L1 and L1.5 (15 s) before each run's full pass */
        in.two_passes = true;
        {
                _cleanup_json_ json_t *ff = mx_estimate(&in);

                ASSERT_EQ(json_integer_value(json_object_get(ff, "per_run_us")), (1900 + 75) * S);
                ASSERT_TRUE(json_integer_value(json_object_get(ff, "bound_us")) >
                            json_integer_value(json_object_get(e, "bound_us")));
                ASSERT_CONTAINS(json_string_value(json_object_get(ff, "text")), "fail-fast: each run starts twice");
        }
        unload(&f);
}

TEST(criteria_the_levels_cannot_measure)
{
        struct fixture f = {};
        _cleanup_strv_free_ char **w = NULL, **none = NULL;

        load(&f, "L1-L3");
        w = mx_criteria_unmeasured(f.m, f.p->feature, f.levels);
        ASSERT_NOT_NULL(w);
        ASSERT_CONTAINS(w[0], "criterion tg32_tps needs L4");
        unload(&f);
        load(&f, NULL); /* the protocol measures them all */
        none = mx_criteria_unmeasured(f.m, f.p->feature, f.levels);
        ASSERT_NULL(none);
        ASSERT_STREQ(mx_metric_level("crashes"), "L3");
        ASSERT_NULL(mx_metric_level("memory_gb"));
        unload(&f);
}
