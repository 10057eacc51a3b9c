/* SPDX-License-Identifier: MIT */
/*
 * Plans on the shipped matrix for each seed feature (P1-P6): the exact runs,
 * their reasons and known-incompatible marks, the skipped runs; L5 with
 * completed features; feature resolution (aliases, ambiguity, unknown names);
 * pins; covering-array and full strategies.
 */
#include "cover-verify.h"
#include "matrix-helpers.h"
#include "plan.h"

/* The axes where config differs from the baseline, "(baseline)" when none. */
static char *diff(const struct mx_matrix *m, const int *c)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b, "");
        for (size_t a = 0; a < m->n_axes; a++)
                if (c[a] != m->baseline[a])
                        mx_buf_printf(&b, "%s%s=%s", b.len ? "," : "", m->axes[a].name,
                                      c[a] >= 0 ? m->axes[a].values[c[a]].name : "-");
        if (b.len == 0)
                mx_buf_puts(&b, "(baseline)");
        return mx_buf_steal(&b);
}

/* One line per run ("run DIFF: REASONS [ki N]") and per skipped run ("skip DIFF: REASONS"), then the notes.
 */
static char *render(const struct mx_plan *p)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b, "");
        for (size_t i = 0; i < p->n_runs; i++) {
                _cleanup_free_ char *d = diff(p->m, p->runs[i].config);

                mx_buf_printf(&b, "run %s:", d);
                for (size_t k = 0; p->runs[i].reasons[k]; k++)
                        mx_buf_printf(&b, " %s", p->runs[i].reasons[k]);
                for (size_t k = 0; k < p->runs[i].n_known_incompatible; k++)
                        mx_buf_printf(&b, " [ki %zu]", p->runs[i].known_incompatible[k] + 1);
                mx_buf_putc(&b, '\n');
        }
        for (size_t i = 0; i < p->n_skipped; i++) {
                _cleanup_free_ char *d = diff(p->m, p->skipped[i].config);

                mx_buf_printf(&b, "skip %s:", d);
                for (size_t k = 0; p->skipped[i].reasons[k]; k++)
                        mx_buf_printf(&b, " %s", p->skipped[i].reasons[k]);
                mx_buf_putc(&b, '\n');
        }
        for (size_t i = 0; p->notes && p->notes[i]; i++)
                mx_buf_printf(&b, "note %s\n", p->notes[i]);
        return mx_buf_steal(&b);
}

static struct mx_plan *plan(const struct mx_matrix *m, const char *feature, char **pins,
                            enum mx_plan_strategy strategy)
{
        struct mx_plan_request req = { .feature = feature, .pins = pins, .strategy = strategy };
        _cleanup_free_ char *why = NULL;
        struct mx_plan *p = NULL;

        if (mx_plan_build(m, &req, &p, &why) < 0)
                test_fail(__FILE__, __LINE__, "plan %s: %s", feature, strna(why));
        return p;
}

static void check_plan(const char *file, int line, const struct mx_matrix *m, const char *feature,
                       const char *expected)
{
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, feature, NULL, MX_PLAN_DEFAULT);
        _cleanup_free_ char *got = render(p);

        if (!streq(got, expected))
                test_fail(file, line, "plan for %s:\n--- got\n%s--- expected\n%s", feature, got, expected);
}
#define CHECK_PLAN(m, f, e) check_plan(__FILE__, __LINE__, m, f, e)

TEST(p1_cutlass_gemm)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        const char *expected =
                "run (baseline): baseline feature-off\n"
                "run kernel=cutlass: feature-on\n"
                "run kernel=cutlass,activation=mxfp8: vary:activation=mxfp8\n"
                "run kernel=cutlass,activation=mxfp4: vary:activation=mxfp4\n"
                "run kernel=cutlass,activation=fp8: vary:activation=fp8\n"
                "run kernel=cutlass,tile=128x128: vary:tile=128x128\n"
                "run kernel=cutlass,tile=64x128: vary:tile=64x128 [ki 3]\n"
                "run kernel=cutlass,sinks=on: vary:sinks=on [ki 2]\n"
                "run kernel=cutlass,spec=eagle3-short: vary:spec=eagle3-short [ki 1]\n"
                "run kernel=cutlass,spec=eagle3-long: vary:spec=eagle3-long [ki 1]\n"
                "run kernel=cutlass,spec=eagle3-throughput: vary:spec=eagle3-throughput [ki 1]\n"
                "run kernel=cutlass,graphs=off: vary:graphs=off\n"
                "note no feature is completed, so L5 has no combinations\n";

        /* By feature name, by value name, by alias, by axis=value: the same plan. */
        CHECK_PLAN(m, "cutlass-gemm", expected);
        CHECK_PLAN(m, "cutlass", expected);
        CHECK_PLAN(m, "gemm", expected);
        CHECK_PLAN(m, "kernel=gemm", expected);
}

TEST(p1_resolution_names_the_feature)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_(mx_plan_freep) struct mx_plan *a = plan(m, "gemm", NULL, MX_PLAN_DEFAULT);
        _cleanup_(mx_plan_freep) struct mx_plan *b = plan(m, "cutlass-gemm", NULL, MX_PLAN_DEFAULT);

        ASSERT_STREQ(a->resolved, "kernel=cutlass (feature 'cutlass-gemm')");
        ASSERT_EQ(a->feature, 0);
        ASSERT_STREQ(b->resolved, "feature 'cutlass-gemm'");
        /* Runs carry what the daemon stores. */
        ASSERT_STREQ(b->runs[1].key,
                     "activation=bf16,graphs=on,kernel=cutlass,sinks=off,spec=off,tile=auto");
        ASSERT_TRUE(strv_contains(b->runs[1].env, "VLLM_MXFP4_MOE_KERNEL=gemm"));
        ASSERT_EQ(strv_length(b->runs[1].flags), 0);
        ASSERT_EQ(strv_length(b->runs[1].argv), strv_length(m->command));
        ASSERT_EQ(b->runs[1].expect.kernels.n_must_see, 1);
        ASSERT_EQ(b->runs[1].hash, mx_ident_hash(b->runs[1].key));
        ASSERT_EQ(mx_plan_n_known_incompatible(b), 5);
}

TEST(p2_runner_caching)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");

        /* No assignment: the feature-on run is the baseline; tiles other than auto need cutlass. */
        CHECK_PLAN(m, "runner-caching",
                   "run (baseline): baseline feature-off feature-on\n"
                   "run kernel=cutlass: vary:kernel=cutlass\n"
                   "run kernel=gemv: vary:kernel=gemv\n"
                   "run kernel=triton: vary:kernel=triton\n"
                   "run activation=mxfp8: vary:activation=mxfp8\n"
                   "run activation=mxfp4: vary:activation=mxfp4\n"
                   "run activation=fp8: vary:activation=fp8\n"
                   "run sinks=on: vary:sinks=on [ki 2]\n"
                   "run spec=eagle3-short: vary:spec=eagle3-short [ki 1]\n"
                   "run spec=eagle3-long: vary:spec=eagle3-long [ki 1]\n"
                   "run spec=eagle3-throughput: vary:spec=eagle3-throughput [ki 1]\n"
                   "run graphs=off: vary:graphs=off\n"
                   "skip tile=128x128: vary:tile=128x128\n"
                   "skip tile=64x128: vary:tile=64x128\n"
                   "note depends on 'cutlass-gemm', which is in-progress\n"
                   "note no feature is completed, so L5 has no combinations\n");
}

TEST(p3_activation_mxfp8)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");

        CHECK_PLAN(m, "activation-mxfp8",
                   "run (baseline): baseline feature-off\n"
                   "run activation=mxfp8: feature-on\n"
                   "run kernel=cutlass,activation=mxfp8: vary:kernel=cutlass\n"
                   "run kernel=gemv,activation=mxfp8: vary:kernel=gemv\n"
                   "run kernel=triton,activation=mxfp8: vary:kernel=triton\n"
                   "run activation=mxfp8,sinks=on: vary:sinks=on [ki 2]\n"
                   "run activation=mxfp8,spec=eagle3-short: vary:spec=eagle3-short [ki 1]\n"
                   "run activation=mxfp8,spec=eagle3-long: vary:spec=eagle3-long [ki 1]\n"
                   "run activation=mxfp8,spec=eagle3-throughput: vary:spec=eagle3-throughput [ki 1]\n"
                   "run activation=mxfp8,graphs=off: vary:graphs=off\n"
                   "skip activation=mxfp8,tile=128x128: vary:tile=128x128\n"
                   "skip activation=mxfp8,tile=64x128: vary:tile=64x128\n"
                   "note depends on 'runner-caching', which is not-started\n"
                   "note no feature is completed, so L5 has no combinations\n");
}

TEST(p4_tile_64x128)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");

        /* Every run carries the 64x128 known issue; kernel is the feature's, so L6 does not vary it. */
        CHECK_PLAN(m, "tile-64x128",
                   "run (baseline): baseline feature-off\n"
                   "run kernel=cutlass,tile=64x128: feature-on [ki 3]\n"
                   "run kernel=cutlass,activation=mxfp8,tile=64x128: vary:activation=mxfp8 [ki 3]\n"
                   "run kernel=cutlass,activation=mxfp4,tile=64x128: vary:activation=mxfp4 [ki 3]\n"
                   "run kernel=cutlass,activation=fp8,tile=64x128: vary:activation=fp8 [ki 3]\n"
                   "run kernel=cutlass,tile=64x128,sinks=on: vary:sinks=on [ki 2] [ki 3]\n"
                   "run kernel=cutlass,tile=64x128,spec=eagle3-short: vary:spec=eagle3-short [ki 1] [ki 3]\n"
                   "run kernel=cutlass,tile=64x128,spec=eagle3-long: vary:spec=eagle3-long [ki 1] [ki 3]\n"
                   "run kernel=cutlass,tile=64x128,spec=eagle3-throughput: vary:spec=eagle3-throughput [ki 1] "
                   "[ki 3]\n"
                   "run kernel=cutlass,tile=64x128,graphs=off: vary:graphs=off [ki 3]\n"
                   "note depends on 'activation-mxfp8', which is not-started\n"
                   "note no feature is completed, so L5 has no combinations\n");
}

TEST(p5_spec_decode)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");

        CHECK_PLAN(m, "spec-decode",
                   "run (baseline): baseline feature-off\n"
                   "run spec=eagle3-short,graphs=off: feature-on\n"
                   "run kernel=cutlass,spec=eagle3-short,graphs=off: vary:kernel=cutlass\n"
                   "run kernel=gemv,spec=eagle3-short,graphs=off: vary:kernel=gemv\n"
                   "run kernel=triton,spec=eagle3-short,graphs=off: vary:kernel=triton\n"
                   "run activation=mxfp8,spec=eagle3-short,graphs=off: vary:activation=mxfp8\n"
                   "run activation=mxfp4,spec=eagle3-short,graphs=off: vary:activation=mxfp4\n"
                   "run activation=fp8,spec=eagle3-short,graphs=off: vary:activation=fp8\n"
                   "run sinks=on,spec=eagle3-short,graphs=off: vary:sinks=on [ki 2]\n"
                   "skip tile=128x128,spec=eagle3-short,graphs=off: vary:tile=128x128\n"
                   "skip tile=64x128,spec=eagle3-short,graphs=off: vary:tile=64x128\n"
                   "note depends on 'tile-64x128', which is not-started\n"
                   "note depends on 'runner-caching', which is not-started\n"
                   "note no feature is completed, so L5 has no combinations\n");
}

TEST(p6_attention_sinks)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");

        CHECK_PLAN(m, "attention-sinks",
                   "run (baseline): baseline feature-off\n"
                   "run sinks=on: feature-on [ki 2]\n"
                   "run kernel=cutlass,sinks=on: vary:kernel=cutlass [ki 2]\n"
                   "run kernel=gemv,sinks=on: vary:kernel=gemv [ki 2]\n"
                   "run kernel=triton,sinks=on: vary:kernel=triton [ki 2]\n"
                   "run activation=mxfp8,sinks=on: vary:activation=mxfp8 [ki 2]\n"
                   "run activation=mxfp4,sinks=on: vary:activation=mxfp4 [ki 2]\n"
                   "run activation=fp8,sinks=on: vary:activation=fp8 [ki 2]\n"
                   "run sinks=on,spec=eagle3-short: vary:spec=eagle3-short [ki 1] [ki 2]\n"
                   "run sinks=on,spec=eagle3-long: vary:spec=eagle3-long [ki 1] [ki 2]\n"
                   "run sinks=on,spec=eagle3-throughput: vary:spec=eagle3-throughput [ki 1] [ki 2]\n"
                   "run sinks=on,graphs=off: vary:graphs=off [ki 2]\n"
                   "skip tile=128x128,sinks=on: vary:tile=128x128\n"
                   "skip tile=64x128,sinks=on: vary:tile=64x128\n"
                   "note depends on 'spec-decode', which is not-started\n"
                   "note no feature is completed, so L5 has no combinations\n");
}

/* The shipped matrix with some features marked completed (text substitution on the file). */
static struct mx_matrix *shipped_with_completed(const char *const *names)
{
        _cleanup_free_ char *path = test_source_path("matrix/mxfp4-gb10.json");
        _cleanup_free_ char *text = test_read_file(path, NULL);

        for (size_t i = 0; names[i]; i++) {
                _cleanup_free_ char *needle = xasprintf("\"name\": \"%s\"", names[i]);
                char *f = strstr(text, needle), *s;

                ASSERT_NOT_NULL(f);
                s = strstr(f, "\"status\": \"");
                ASSERT_NOT_NULL(s);
                s += strlen("\"status\": \"");
                /* Overwrite the status in place, padding inside the string is not allowed: rebuild. */
                {
                        char *end = strchr(s, '"');
                        _cleanup_free_ char *rebuilt =
                                xasprintf("%.*scompleted%s", (int)(s - text), text, end);

                        free(text);
                        text = TAKE_PTR(rebuilt);
                }
        }
        return load_text(text);
}

TEST(l5_with_completed_features)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m =
                shipped_with_completed((const char *const[]){ "cutlass-gemm", "runner-caching", NULL });
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, "activation-mxfp8", NULL, MX_PLAN_DEFAULT);
        _cleanup_free_ char *got = render(p);

        /*
         * Each completed feature alone (prior) and with the new one (L5); runner-caching sets nothing.
         * The merged stack P1+P2 is kernel=cutlass: the feature runs on it (seed 003's C2) and alone on
         * the baseline, and L6 varies the stacked configuration.
         */
        ASSERT_STREQ(got,
                     "run (baseline): baseline feature-off prior:runner-caching\n"
                     "run activation=mxfp8: feature-on with:runner-caching vary:kernel=marlin\n"
                     "run kernel=cutlass: feature-off:stack(P1,P2) prior:cutlass-gemm\n"
                     "run kernel=cutlass,activation=mxfp8: feature-on:stack(P1,P2) with:cutlass-gemm\n"
                     "run kernel=gemv,activation=mxfp8: vary:kernel=gemv\n"
                     "run kernel=triton,activation=mxfp8: vary:kernel=triton\n"
                     "run kernel=cutlass,activation=mxfp8,tile=128x128: vary:tile=128x128\n"
                     "run kernel=cutlass,activation=mxfp8,tile=64x128: vary:tile=64x128 [ki 3]\n"
                     "run kernel=cutlass,activation=mxfp8,sinks=on: vary:sinks=on [ki 2]\n"
                     "run kernel=cutlass,activation=mxfp8,spec=eagle3-short: vary:spec=eagle3-short [ki 1]\n"
                     "run kernel=cutlass,activation=mxfp8,spec=eagle3-long: vary:spec=eagle3-long [ki 1]\n"
                     "run kernel=cutlass,activation=mxfp8,spec=eagle3-throughput: "
                     "vary:spec=eagle3-throughput [ki 1]\n"
                     "run kernel=cutlass,activation=mxfp8,graphs=off: vary:graphs=off\n");
        ASSERT_STREQ(p->stack_ids, "P1,P2");
}

/* The run of p with reason, as "axis=value,..." of its whole configuration; NULL when none. */
static char *run_with(const struct mx_plan *p, const char *reason)
{
        for (size_t i = 0; i < p->n_runs; i++)
                if (strv_contains(p->runs[i].reasons, reason))
                        return mx_config_describe(p->m, p->runs[i].config);
        return NULL;
}

TEST(stacking_follows_seed_configuration_combinations)
{
        /* Seed 003: C1 = P1; C2 = P3 on C1; C3 = P5 on C2; C4 = P6 on C3 (each time the rest merged). */
        _cleanup_(mx_matrix_freep) struct mx_matrix *p1 =
                shipped_with_completed((const char *const[]){"cutlass-gemm", NULL});
        _cleanup_(mx_matrix_freep) struct mx_matrix *p3 = shipped_with_completed(
                (const char *const[]){"cutlass-gemm", "runner-caching", "activation-mxfp8", NULL});
        _cleanup_(mx_matrix_freep) struct mx_matrix *p5 = shipped_with_completed((const char *const[]){
                "cutlass-gemm", "runner-caching", "activation-mxfp8", "spec-decode", NULL});
        _cleanup_(mx_plan_freep) struct mx_plan *a = plan(p1, "activation-mxfp8", NULL, MX_PLAN_DEFAULT);
        _cleanup_(mx_plan_freep) struct mx_plan *b = plan(p3, "spec-decode", NULL, MX_PLAN_DEFAULT);
        _cleanup_(mx_plan_freep) struct mx_plan *c = plan(p5, "attention-sinks", NULL, MX_PLAN_DEFAULT);
        _cleanup_free_ char *c1 = run_with(a, "feature-off:stack(P1)"), *c2 = run_with(a, "feature-on:stack(P1)"),
                            *alone = run_with(a, "feature-on"), *off = run_with(a, "feature-off"),
                            *c3 = run_with(b, "feature-on:stack(P1,P2,P3)"),
                            *c4 = run_with(c, "feature-on:stack(P1,P2,P3,P5)"),
                            *c4_off = run_with(c, "feature-off:stack(P1,P2,P3,P5)");

        ASSERT_STREQ(c1, "kernel=cutlass,activation=bf16,tile=auto,sinks=off,spec=off,graphs=on");
        ASSERT_STREQ(c2, "kernel=cutlass,activation=mxfp8,tile=auto,sinks=off,spec=off,graphs=on");
        ASSERT_STREQ(alone, "kernel=marlin,activation=mxfp8,tile=auto,sinks=off,spec=off,graphs=on");
        ASSERT_STREQ(off, "kernel=marlin,activation=bf16,tile=auto,sinks=off,spec=off,graphs=on");
        ASSERT_STREQ(c3, "kernel=cutlass,activation=mxfp8,tile=auto,sinks=off,spec=eagle3-short,graphs=off");
        ASSERT_STREQ(c4, "kernel=cutlass,activation=mxfp8,tile=auto,sinks=on,spec=eagle3-short,graphs=off");
        ASSERT_STREQ(c4_off,
                     "kernel=cutlass,activation=mxfp8,tile=auto,sinks=off,spec=eagle3-short,graphs=off");
        /* The plan says which stack it used. */
        {
                _cleanup_(json_decrefp) json_t *j = mx_plan_to_json(c);
                json_t *st = json_object_get(j, "stack");

                ASSERT_STREQ(json_string_value(json_object_get(st, "ids")), "P1,P2,P3,P5");
                ASSERT_EQ(json_array_size(json_object_get(st, "features")), 4);
                ASSERT_STREQ(json_string_value(json_object_get(json_object_get(st, "set"), "spec")),
                             "eagle3-short");
        }
}

TEST(pinning_the_features_own_axis_keeps_the_feature_off_run)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        char *pins[] = {(char *)"kernel=cutlass", NULL};
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, "cutlass", pins, MX_PLAN_DEFAULT);
        _cleanup_(mx_plan_freep) struct mx_plan *q = plan(m, "cutlass", NULL, MX_PLAN_DEFAULT);
        _cleanup_free_ char *off = run_with(p, "feature-off"), *got = render(p), *want = render(q);

        ASSERT_STREQ(off, "kernel=marlin,activation=bf16,tile=auto,sinks=off,spec=off,graphs=on");
        ASSERT_EQ(p->pins[0], -1);
        ASSERT_STREQ(p->notes[0],
                     "pin kernel=cutlass repeats what the feature sets, so it applies to the "
                     "feature-on runs only; the feature-off runs keep the baseline's kernel=marlin");
        /* Otherwise the same runs as without the pin. */
        *strstr(want, "note ") = '\0';
        ASSERT_TRUE(startswith(got, want));
}

TEST(feature_ids_and_merged_status)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_(mx_plan_freep) struct mx_plan *a = plan(m, "P5", NULL, MX_PLAN_DEFAULT);
        _cleanup_(mx_plan_freep) struct mx_plan *b = plan(m, "spec-decode", NULL, MX_PLAN_DEFAULT);
        _cleanup_(mx_plan_freep) struct mx_plan *c = plan(m, "p1", NULL, MX_PLAN_DEFAULT);
        _cleanup_free_ char *ra = render(a), *rb = render(b), *why = NULL;
        _cleanup_free_ int *assignment = NULL;
        int f;

        ASSERT_STREQ(ra, rb);
        ASSERT_STREQ(a->resolved, "feature 'spec-decode' (P5)");
        ASSERT_EQ(c->feature, 0);
        ASSERT_ERR(mx_plan_resolve_feature(m, "P9", &f, &assignment, &why), ENOENT);
        /* "merged" is a spelling of completed (seed 003's status column). */
        {
                _cleanup_free_ char *path = test_source_path("matrix/mxfp4-gb10.json");
                _cleanup_free_ char *text = test_read_file(path, NULL);
                char *s = strstr(text, "\"status\": \"in-progress\"");
                _cleanup_free_ char *edited = NULL;

                ASSERT_NOT_NULL(s);
                edited = xasprintf("%.*s\"status\": \"merged\"%s", (int)(s - text), text,
                                   s + strlen("\"status\": \"in-progress\""));
                _cleanup_(mx_matrix_freep) struct mx_matrix *mm = load_text(edited);
                ASSERT_EQ(mm->features[0].status, MX_FEATURE_COMPLETED);
        }
        /* Two features of the same priority: the id is ambiguous. */
        {
                const char *text =
                        "{\"matrix\": 1, \"name\": \"t\", \"target\": {\"command\": [\"s\"]},\n"
                        " \"axes\": [{\"name\": \"k\", \"values\": [{\"name\": \"a\"}, {\"name\": "
                        "\"b\"}]}],\n"
                        " \"baseline\": {\"k\": \"a\"},\n"
                        " \"features\": [{\"name\": \"x\", \"priority\": 2, \"set\": {}, \"hypothesis\": "
                        "\"h\", "
                        "\"criteria\": [{\"metric\": \"crashes\", \"max\": 0}], \"status\": "
                        "\"not-started\"},"
                        "{\"name\": \"y\", \"priority\": 2, \"set\": {\"k\": \"b\"}, \"hypothesis\": \"h\", "
                        "\"criteria\": [{\"metric\": \"crashes\", \"max\": 0}], \"status\": "
                        "\"not-started\"}]}\n";
                _cleanup_(mx_matrix_freep) struct mx_matrix *d = load_text(text);

                free(why);
                why = NULL;
                ASSERT_ERR(mx_plan_resolve_feature(d, "P2", &f, &assignment, &why), EINVAL);
                ASSERT_STREQ(
                        why,
                        "'P2' is ambiguous: features 'x' and 'y' both have priority 2; name the feature");
        }
}

TEST(l5_conflicting_feature)
{
        /* tile-64x128 (kernel=cutlass) is completed; planning kernel=gemv cannot combine with it. */
        _cleanup_(mx_matrix_freep) struct mx_matrix *m =
                shipped_with_completed((const char *const[]){ "tile-64x128", NULL });
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, "gemv", NULL, MX_PLAN_DEFAULT);

        ASSERT_EQ(strv_length(p->notes), 2);
        ASSERT_STREQ(p->notes[0],
                     "merged stack: the feature's kernel=gemv replaces kernel=cutlass of 'tile-64x128'");
        ASSERT_STREQ(p->notes[1],
                     "with:tile-64x128 not planned: feature 'tile-64x128' sets kernel=cutlass, but this plan "
                     "has kernel=gemv");
        ASSERT_EQ(p->feature, -1);
        ASSERT_STREQ(p->resolved, "kernel=gemv");
}

TEST(pins)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        char *pins[] = { (char *)"graphs=off", (char *)"activation=fp6", NULL };
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, "cutlass", pins, MX_PLAN_DEFAULT);
        _cleanup_free_ char *got = render(p);
        _cleanup_free_ char *why = NULL;
        struct mx_plan *q = NULL;

        /* Pins apply to every run, the baseline included; pinned axes are not varied; fp6 is reachable. */
        ASSERT_STREQ(got,
                     "run activation=fp6,graphs=off: baseline feature-off\n"
                     "run kernel=cutlass,activation=fp6,graphs=off: feature-on\n"
                     "run kernel=cutlass,activation=fp6,tile=128x128,graphs=off: vary:tile=128x128\n"
                     "run kernel=cutlass,activation=fp6,tile=64x128,graphs=off: vary:tile=64x128 [ki 3]\n"
                     "run kernel=cutlass,activation=fp6,sinks=on,graphs=off: vary:sinks=on [ki 2]\n"
                     "run kernel=cutlass,activation=fp6,spec=eagle3-short,graphs=off: vary:spec=eagle3-short\n"
                     "run kernel=cutlass,activation=fp6,spec=eagle3-long,graphs=off: vary:spec=eagle3-long\n"
                     "run kernel=cutlass,activation=fp6,spec=eagle3-throughput,graphs=off: "
                     "vary:spec=eagle3-throughput\n"
                     "note no feature is completed, so L5 has no combinations\n");

        {
                char *conflict[] = { (char *)"kernel=marlin", NULL };
                struct mx_plan_request req = { .feature = "cutlass", .pins = conflict };

                ASSERT_ERR(mx_plan_build(m, &req, &q, &why), EINVAL);
                ASSERT_STREQ(why, "pin kernel=marlin conflicts with kernel=cutlass (feature "
                                  "'cutlass-gemm'), which sets "
                                  "kernel=cutlass");
        }
        {
                char *twice[] = { (char *)"graphs=off", (char *)"graphs=on", NULL };
                struct mx_plan_request req = { .feature = "cutlass", .pins = twice };

                free(why);
                why = NULL;
                ASSERT_ERR(mx_plan_build(m, &req, &q, &why), EINVAL);
                ASSERT_STREQ(why, "axis 'graphs' is pinned twice");
        }
        {
                char *bad[] = { (char *)"graph=off", NULL };
                struct mx_plan_request req = { .feature = "cutlass", .pins = bad };

                free(why);
                why = NULL;
                ASSERT_ERR(mx_plan_build(m, &req, &q, &why), ENOENT);
                ASSERT_STREQ(
                        why,
                        "'graph=off': no such axis (axes: kernel, activation, tile, sinks, spec, graphs)");
        }
        {
                char *bad[] = { (char *)"graphs=maybe", NULL };
                struct mx_plan_request req = { .feature = "cutlass", .pins = bad };

                free(why);
                why = NULL;
                ASSERT_ERR(mx_plan_build(m, &req, &q, &why), ENOENT);
                ASSERT_STREQ(why, "'graphs=maybe': axis 'graphs' has no such value (values: on, off)");
        }
        ASSERT_NULL(q);
}

TEST(resolution_errors)
{
        const char *text =
                "{\"matrix\": 1, \"name\": \"t\", \"target\": {\"command\": [\"s\"]},\n"
                " \"axes\": [{\"name\": \"kernel\", \"values\": [{\"name\": \"marlin\"}, {\"name\": "
                "\"fast\"}]},\n"
                "          {\"name\": \"spec\", \"values\": [{\"name\": \"off\"}, {\"name\": \"fast\"}]},\n"
                "          {\"name\": \"tile\", \"values\": [{\"name\": \"auto\"}, {\"name\": \"big\"}]}],\n"
                " \"baseline\": {\"kernel\": \"marlin\", \"spec\": \"off\", \"tile\": \"auto\"},\n"
                " \"features\": [{\"name\": \"big\", \"priority\": 1, \"set\": {\"kernel\": \"fast\"}, "
                "\"hypothesis\": \"h\", \"criteria\": [{\"metric\": \"crashes\", \"max\": 0}], "
                "\"status\": \"not-started\"}]}\n";
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(text);
        _cleanup_free_ char *why = NULL;
        _cleanup_free_ int *assignment = NULL;
        int f = 0;

        /* Two values on different axes. */
        ASSERT_ERR(mx_plan_resolve_feature(m, "fast", &f, &assignment, &why), EINVAL);
        ASSERT_STREQ(
                why,
                "'fast' is ambiguous: it names kernel=fast, spec=fast; write axis=value to pick a value");
        /* A feature and a value with different assignments. */
        free(why);
        why = NULL;
        ASSERT_ERR(mx_plan_resolve_feature(m, "big", &f, &assignment, &why), EINVAL);
        ASSERT_STREQ(
                why,
                "'big' is ambiguous: it names feature 'big', tile=big; write axis=value to pick a value");
        /* axis=value settles it. */
        ASSERT_OK(mx_plan_resolve_feature(m, "spec=fast", &f, &assignment, NULL));
        ASSERT_EQ(f, -1);
        ASSERT_EQ(assignment[1], 1);
        free(assignment);
        assignment = NULL;
        ASSERT_OK(mx_plan_resolve_feature(m, "kernel=fast", &f, &assignment, NULL));
        ASSERT_EQ(f, 0); /* the feature whose assignment this is */
        free(assignment);
        assignment = NULL;
        /* Unknown: close names suggested. */
        free(why);
        why = NULL;
        ASSERT_ERR(mx_plan_resolve_feature(m, "marln", &f, &assignment, &why), ENOENT);
        ASSERT_STREQ(why, "no feature or axis value is named 'marln'; did you mean kernel=marlin? (any axis "
                          "value works "
                          "too: see mxmatrix matrix show)");
        free(why);
        why = NULL;
        ASSERT_ERR(mx_plan_resolve_feature(m, "zzzzzzzz", &f, &assignment, &why), ENOENT);
        ASSERT_STREQ(
                why,
                "no feature or axis value is named 'zzzzzzzz'; did you mean feature 'big'? (any axis value "
                "works too: see mxmatrix matrix show)");
        ASSERT_NULL(assignment);
}

TEST(resolution_shipped)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_free_ char *why = NULL;
        _cleanup_free_ int *assignment = NULL;
        int f;

        /* "off" is a value of sinks and of spec. */
        ASSERT_ERR(mx_plan_resolve_feature(m, "off", &f, &assignment, &why), EINVAL);
        ASSERT_STREQ(why, "'off' is ambiguous: it names sinks=off, spec=off, graphs=off; write axis=value "
                          "to pick a value");
        free(why);
        why = NULL;
        ASSERT_ERR(mx_plan_resolve_feature(m, "cutlas", &f, &assignment, &why), ENOENT);
        ASSERT_CONTAINS(why, "did you mean feature 'cutlass-gemm', kernel=cutlass?");
        ASSERT_OK(mx_plan_resolve_feature(m, "mxfp8", &f, &assignment, NULL));
        ASSERT_EQ(f, 2); /* activation-mxfp8 */
}

TEST(pairwise_and_3way_cover_the_rest)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");

        for (unsigned t = 2; t <= 3; t++) {
                _cleanup_(mx_plan_freep) struct mx_plan *d = plan(m, "cutlass", NULL, MX_PLAN_DEFAULT);
                _cleanup_(mx_plan_freep) struct mx_plan *p =
                        plan(m, "cutlass", NULL, t == 2 ? MX_PLAN_PAIRWISE : MX_PLAN_3WAY);
                _cleanup_free_ int *pinned = config_from(m, "kernel=cutlass");
                _cleanup_free_ int *rows = NULL;
                struct mx_matrix_cover c = {};
                _cleanup_free_ char *why = NULL;
                bool set_aside[3] = {};
                size_t n = 0, n_cover = 0;

                ASSERT_EQ(m->n_known_incompatible, 3);
                /* The default runs come first, unchanged; covering rows follow with reason "cover". */
                ASSERT_EQ(p->cover_t, t);
                ASSERT_TRUE(p->n_runs >= d->n_runs);
                for (size_t i = 0; i < d->n_runs; i++)
                        ASSERT_STREQ(p->runs[i].key, d->runs[i].key);
                for (size_t i = d->n_runs; i < p->n_runs; i++) {
                        ASSERT_STREQ(p->runs[i].reasons[0], "cover");
                        ASSERT_EQ(p->runs[i].config[0], pinned[0]);
                        /* No row the array adds is a known crash or failure (today's GB10: 8 of 9 were). */
                        ASSERT_EQ(p->runs[i].n_known_incompatible, 0);
                        n_cover++;
                }
                /*
                 * Every run with the feature that can pass, taken together, is a verified covering
                 * array of the configurations that can pass; the known-incompatible ones are set aside,
                 * each tested once by its one-factor-at-a-time run, and the plan says so.
                 */
                mx_matrix_cover_build_passable(m, pinned, set_aside, &c);
                ASSERT_TRUE(set_aside[0] && set_aside[1] && set_aside[2]);
                rows = xreallocarray(NULL, p->n_runs * c.n_params + 1, sizeof(int));
                for (size_t i = 0; i < p->n_runs; i++)
                        if (p->runs[i].config[0] == pinned[0] &&
                            mx_matrix_cover_config_to_row(&c, p->runs[i].config, rows + n * c.n_params) >= 0 &&
                            mx_cover_row_valid(&c.model, rows + n * c.n_params))
                                n++;
                ASSERT_EQ(n, p->cover_rows);
                if (mx_cover_verify(&c.model, t, rows, n, &why) < 0)
                        test_fail(__FILE__, __LINE__, "t=%u: %s", t, why);
                mx_matrix_cover_done(&c);
                ASSERT_TRUE(n_cover > 0);
                ASSERT_EQ(p->n_runs - d->n_runs, n_cover); /* nothing added for them: vary: runs hold each */
                {
                        const char *note = NULL;

                        for (size_t i = 0; p->notes && p->notes[i]; i++)
                                if (strstr(p->notes[i], "covering array leaves out"))
                                        note = p->notes[i];
                        ASSERT_NOT_NULL(note);
                        ASSERT_CONTAINS(note, "sinks=on [2] (tested once: ");
                        ASSERT_CONTAINS(note, "tile=64x128 [3]");
                        ASSERT_CONTAINS(note, "graphs=on, spec!=off [1]");
                }
        }
}

/* A known-incompatible combination no one-factor-at-a-time run holds gets a run of its own, once. */
TEST(pairwise_tests_a_set_aside_combination_once)
{
        _cleanup_free_ char *path = test_source_path("matrix/mxfp4-gb10.json"), *text = NULL, *err = NULL;
        _cleanup_json_ json_t *j = json_load_file(path, 0, NULL);
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_(mx_plan_freep) struct mx_plan *p = NULL;
        size_t own = 0;

        ASSERT_NOT_NULL(j);
        json_array_append_new(json_object_get(json_object_get(j, "constraints"), "known_incompatible"),
                              json_pack("{s:{s:s,s:s},s:s,s:s}", "when", "activation", "fp8", "tile", "128x128",
                                        "expect", "fail", "reason", "fp8 with 128x128 tiles (test)"));
        text = json_dumps(j, 0);
        ASSERT_OK(mx_matrix_load_string("t.json", text, strlen(text), &m, &err));
        p = plan(m, "cutlass", NULL, MX_PLAN_PAIRWISE);
        for (size_t i = 0; i < p->n_runs; i++) {
                if (strv_contains(p->runs[i].reasons, "set-aside")) {
                        own++;
                        ASSERT_EQ(p->runs[i].n_known_incompatible, 1);
                        ASSERT_EQ(p->runs[i].known_incompatible[0], 3);
                }
                if (strv_contains(p->runs[i].reasons, "cover"))
                        ASSERT_EQ(p->runs[i].n_known_incompatible, 0);
        }
        ASSERT_EQ(own, 1);
}

TEST(full_strategy)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, "cutlass", NULL, MX_PLAN_FULL);
        struct mx_plan_request req = { .feature = "cutlass", .strategy = MX_PLAN_FULL, .max_runs = 100 };
        _cleanup_free_ char *why = NULL;
        struct mx_plan *q = NULL;
        size_t full = 0;

        /* The baseline plus every valid cutlass cell: 4 x 3 x 2 x 4 x 2 = 192. */
        ASSERT_EQ(p->n_runs, 193);
        for (size_t i = 0; i < p->n_runs; i++)
                full += strv_contains(p->runs[i].reasons, "full");
        ASSERT_EQ(full, 192);
        ASSERT_TRUE(strv_contains(p->runs[1].reasons, "feature-on"));
        ASSERT_TRUE(strv_contains(p->runs[1].reasons, "full"));
        ASSERT_ERR(mx_plan_build(m, &req, &q, &why), E2BIG);
        ASSERT_STREQ(
                why,
                "--strategy full would plan more than 100 runs (the product with the feature pinned has 192 "
                "cells); raise --max-runs or use --strategy pairwise or 3way");
        ASSERT_NULL(q);
}

TEST(plan_json)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, "tile-64x128", NULL, MX_PLAN_DEFAULT);
        json_auto_t *j = mx_plan_to_json(p);
        json_t *run, *ki, *see;

        ASSERT_NOT_NULL(j);
        ASSERT_STREQ(json_string_value(json_object_get(j, "strategy")), "default");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(j, "feature"), "name")),
                     "tile-64x128");
        ASSERT_EQ(json_array_size(json_object_get(j, "runs")), p->n_runs);
        run = json_array_get(json_object_get(j, "runs"), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(run, "config"), "tile")), "64x128");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(run, "reasons"), 0)), "feature-on");
        ASSERT_EQ(strlen(json_string_value(json_object_get(run, "hash"))), 16);
        ki = json_array_get(json_object_get(run, "known_incompatible"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(ki, "expect")), "fail");
        ASSERT_CONTAINS(json_string_value(json_object_get(ki, "at")), "mxfp4-gb10.json:");
        see = json_object_get(json_object_get(json_object_get(run, "expect"), "kernels"), "must_see");
        /* must_see entries are lists of alternatives. */
        ASSERT_STREQ(json_string_value(json_array_get(json_array_get(see, 0), 0)), "cutlass_*_grouped_gemm");
}

TEST(nothing_to_cover)
{
        /* gemv with tile=64x128 breaks the tile rule everywhere: every run is skipped, nothing to cover. */
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        char *pins[] = { (char *)"tile=64x128", NULL };
        _cleanup_(mx_plan_freep) struct mx_plan *p = plan(m, "gemv", pins, MX_PLAN_PAIRWISE);

        ASSERT_EQ(p->n_runs, 0);
        ASSERT_TRUE(p->n_skipped >= 2);
        ASSERT_CONTAINS(p->skipped[0].why, "breaks the rule at");
        ASSERT_TRUE(strv_contains(p->notes, "no product configuration carries the feature and the pins without "
                                            "breaking an exclude entry or a rule, so there is nothing to cover"));
}

/* history's and bisect's pins: a key in one word and separate words alike; nothing dropped unread. */
TEST(split_pins)
{
        _cleanup_json_ json_t *in = json_pack("{s:s,s:s}", "a", "1,b=2,c=x=y", "d", "4"), *out = NULL;
        _cleanup_json_ json_t *junk = json_pack("{s:s}", "a", "1,junk"), *twice = json_pack("{s:s}", "a", "1,a=2");
        _cleanup_json_ json_t *same = json_pack("{s:s}", "a", "1,a=1"), *noaxis = json_pack("{s:s}", "a", "1,=2");
        _cleanup_json_ json_t *esc = json_pack("{s:s}", "a", "1,\033[2J"), *o2 = NULL;
        _cleanup_free_ char *err = NULL;

        ASSERT_EQ(mx_plan_split_pins(in, &out, &err), 0);
        ASSERT_EQ(json_object_size(out), 4u);
        ASSERT_STREQ(json_string_value(json_object_get(out, "a")), "1");
        ASSERT_STREQ(json_string_value(json_object_get(out, "b")), "2");
        ASSERT_STREQ(json_string_value(json_object_get(out, "c")), "x=y"); /* the first '=' splits */
        ASSERT_STREQ(json_string_value(json_object_get(out, "d")), "4");
        ASSERT_EQ(mx_plan_split_pins(junk, &o2, &err), -EINVAL);
        ASSERT_STREQ(err, "'junk' is not of the form axis=value");
        free(err);
        err = NULL;
        ASSERT_EQ(mx_plan_split_pins(twice, &o2, &err), -EINVAL);
        ASSERT_TRUE(strstr(err, "axis pinned twice (also to '1')"));
        free(err);
        err = NULL;
        ASSERT_EQ(mx_plan_split_pins(noaxis, &o2, &err), -EINVAL);
        free(err);
        err = NULL;
        ASSERT_EQ(mx_plan_split_pins(esc, &o2, &err), -EINVAL);
        ASSERT_TRUE(!strchr(err, '\033'));
        free(err);
        err = NULL;
        ASSERT_EQ(mx_plan_split_pins(same, &o2, &err), 0);
        ASSERT_EQ(json_object_size(o2), 1u);
}
