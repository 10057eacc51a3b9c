/* SPDX-License-Identifier: MIT */
/*
 * Expansion: GitHub's documented include/exclude examples, rules, known-
 * incompatible marks, pins, streaming counts on a 2^24-cell product, and the
 * identity of configurations.
 */
#include "matrix-helpers.h"

static void check_counts(const struct mx_matrix *m, uint64_t product, uint64_t excluded, uint64_t invalid,
                         uint64_t appended, uint64_t valid)
{
        struct mx_expand_counts c;

        ASSERT_OK(mx_expand_count(m, NULL, UINT64_MAX, &c));
        ASSERT_EQ(c.product, product);
        ASSERT_EQ(c.excluded, excluded);
        ASSERT_EQ(c.invalid, invalid);
        ASSERT_EQ(c.appended, appended);
        ASSERT_EQ(c.valid, valid);
}

TEST(github_include_example)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("github-include.json");
        _cleanup_free_ char *all = expand_all(m, NULL);

        /* The six combinations of GitHub's documentation, in its order. */
        ASSERT_STREQ(all, "fruit=apple,animal=cat,color=pink,shape=circle\n"
                          "fruit=apple,animal=dog,color=green,shape=circle\n"
                          "fruit=pear,animal=cat,color=pink\n"
                          "fruit=pear,animal=dog,color=green\n"
                          "fruit=banana\n"
                          "fruit=banana,animal=cat\n");
        check_counts(m, 4, 0, 0, 2, 6);
}

TEST(github_exclude_example)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("github-exclude.json");
        _cleanup_free_ char *all = expand_all(m, NULL);

        ASSERT_STREQ(all, "os=macos-latest,version=12,environment=staging\n"
                          "os=macos-latest,version=14,environment=staging\n"
                          "os=macos-latest,version=14,environment=production\n"
                          "os=macos-latest,version=16,environment=staging\n"
                          "os=macos-latest,version=16,environment=production\n"
                          "os=windows-latest,version=12,environment=staging\n"
                          "os=windows-latest,version=12,environment=production\n"
                          "os=windows-latest,version=14,environment=staging\n"
                          "os=windows-latest,version=14,environment=production\n");
        check_counts(m, 12, 3, 0, 0, 9);
}

TEST(github_add_combination)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("github-add.json");
        _cleanup_free_ char *all = expand_all(m, NULL);

        check_counts(m, 9, 0, 0, 1, 10);
        ASSERT_TRUE(endswith(all, "os=ubuntu-latest,version=16\nos=windows-latest,version=17\n"));
}

TEST(github_include_only)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("github-include-only.json");
        _cleanup_free_ char *all = expand_all(m, NULL);

        ASSERT_STREQ(all, "site=production,datacenter=site-a\nsite=staging,datacenter=site-b\n");
        check_counts(m, 0, 0, 0, 2, 2);
}

TEST(github_expand_configuration)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("github-expand.json");
        _cleanup_free_ char *all = expand_all(m, NULL);
        _cleanup_free_ int *c = config_from(m, "os=windows-latest,node=16,npm=6");
        _cleanup_strv_free_ char **env = mx_config_env(m, c);

        ASSERT_STREQ(all, "os=windows-latest,node=12\n"
                          "os=windows-latest,node=14\n"
                          "os=windows-latest,node=16,npm=6\n"
                          "os=ubuntu-latest,node=12\n"
                          "os=ubuntu-latest,node=14\n"
                          "os=ubuntu-latest,node=16\n");
        ASSERT_STREQ(env[0], "NPM_VERSION=6");
        ASSERT_NULL(env[1]);
}

TEST(github_perl_example)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("github-perl.json");
        _cleanup_free_ char *all = expand_all(m, NULL);

        ASSERT_STREQ(all, "os=ubuntu-latest,perl=5.16\n"
                          "os=ubuntu-latest,perl=5.20\n"
                          "os=ubuntu-latest,perl=5.26\n"
                          "os=ubuntu-latest,perl=5.30\n"
                          "os=ubuntu-latest,perl=latest\n"
                          "os=macos-latest,perl=5.26\n"
                          "os=macos-latest,perl=latest\n");
}

TEST(include_after_exclude)
{
        /* Exclude runs first; an include entry that matches no remaining cell is appended. */
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("github-readd.json");
        _cleanup_free_ char *all = expand_all(m, NULL);

        ASSERT_STREQ(all, "os=linux,node=14\nos=linux,node=16\nos=windows,node=16\n");
        check_counts(m, 4, 2, 0, 1, 3);
}

TEST(rules_and_known_incompatible)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_free_ int *bad =
                config_from(m, "kernel=marlin,activation=bf16,tile=64x128,sinks=off,spec=off,graphs=on");
        _cleanup_free_ int *ok =
                config_from(m, "kernel=gemm,activation=bf16,tile=64x128,sinks=off,spec=off,graphs=on");
        _cleanup_free_ int *both = config_from(
                m, "kernel=cutlass,activation=bf16,tile=64x128,sinks=on,spec=eagle3-long,graphs=on");
        size_t ki[8];
        struct mx_expand_counts c;

        /* 4 kernels x 4 product activations (fp6 is not in the product) x 3 tiles x 2 x 4 x 2. */
        ASSERT_OK(mx_expand_count(m, NULL, UINT64_MAX, &c));
        ASSERT_EQ(c.product, 768);
        /* kernel != cutlass -> tile = auto removes the other kernels' non-auto tiles: 3 x 2 x 64. */
        ASSERT_EQ(c.invalid, 384);
        ASSERT_EQ(c.valid, 384);
        /* Not marked: sinks off, no graphs+eagle3, tile not 64x128: (4 x 2 + 3 x 4 x 1) x 5 = 100. */
        ASSERT_EQ(c.known_incompatible, 284);

        ASSERT_EQ(mx_matrix_broken_rule(m, bad), 0);
        ASSERT_EQ(mx_matrix_broken_rule(m, ok), -1);
        ASSERT_EQ(mx_matrix_known_incompatible(m, ok, ki), 1);
        ASSERT_EQ(ki[0], 2);
        ASSERT_EQ(mx_matrix_known_incompatible(m, both, ki), 3);
        ASSERT_EQ(ki[0], 0);
        ASSERT_EQ(ki[1], 1);
        ASSERT_EQ(ki[2], 2);
        ASSERT_EQ(mx_matrix_known_incompatible(m, m->baseline, ki), 0);
}

TEST(pins)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("permuted-a.json");
        _cleanup_free_ int *pins = config_from(m, "kernel=cutlass");
        _cleanup_free_ int *fp = config_from(m, "activation=mxfp8");
        _cleanup_free_ char *all = expand_all(m, pins), *all2 = expand_all(m, fp);
        struct mx_expand_counts c;

        /* Every cutlass cell is extended with color=green by the include entry. */
        ASSERT_STREQ(all, "kernel=cutlass,activation=bf16,graphs=on,color=green\n"
                          "kernel=cutlass,activation=bf16,graphs=off,color=green\n"
                          "kernel=cutlass,activation=mxfp8,graphs=on,color=green\n"
                          "kernel=cutlass,activation=mxfp8,graphs=off,color=green\n");
        /* The rule removes marlin with mxfp8; exclude removes triton with graphs off. */
        ASSERT_STREQ(all2, "kernel=cutlass,activation=mxfp8,graphs=on,color=green\n"
                           "kernel=cutlass,activation=mxfp8,graphs=off,color=green\n"
                           "kernel=triton,activation=mxfp8,graphs=on\n");
        ASSERT_OK(mx_expand_count(m, fp, UINT64_MAX, &c));
        ASSERT_EQ(c.product, 6);
        ASSERT_EQ(c.excluded, 1);
        ASSERT_EQ(c.invalid, 2);
        ASSERT_EQ(c.valid, 3);
        ASSERT_ERR(mx_expand_count(m, NULL, 11, &c), E2BIG);
}

/* 24 two-valued axes: a 2^24-cell product, with one exclude entry and one rule. */
static char *big_matrix(void)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        mx_buf_puts(&b,
                    "{\"matrix\": 1, \"name\": \"big\", \"target\": {\"command\": [\"true\"]}, \"axes\": [");
        for (int i = 0; i < 24; i++)
                mx_buf_printf(&b,
                              "%s{\"name\": \"a%d\", \"values\": [{\"name\": \"0\"}, {\"name\": \"1\"}]}",
                              i ? ", " : "", i);
        mx_buf_puts(&b, "], \"baseline\": {");
        for (int i = 0; i < 24; i++)
                mx_buf_printf(&b, "%s\"a%d\": \"0\"", i ? ", " : "", i);
        mx_buf_puts(
                &b,
                "}, \"constraints\": {\"exclude\": [{\"a0\": \"1\"}], \"rules\": [{\"if\": {\"a1\": \"1\"}, "
                "\"then\": {\"a2\": \"0\"}, \"reason\": \"r\"}]}}");
        return mx_buf_steal(&b);
}

TEST(streaming_2_24)
{
        _cleanup_free_ char *text = big_matrix();
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_text(text);
        _cleanup_(mx_expand_freep) struct mx_expand *it = mx_expand_new(m, NULL);
        struct mx_expand_counts c;
        const int *config, *first = NULL;
        uint64_t n = 0;

        ASSERT_OK(mx_expand_count(m, NULL, UINT64_MAX, &c));
        ASSERT_EQ(c.product, UINT64_C(1) << 24);
        ASSERT_EQ(c.excluded, UINT64_C(1) << 23);
        /* Of the remaining 2^23, a quarter have a1=1 and a2=1. */
        ASSERT_EQ(c.invalid, UINT64_C(1) << 21);
        ASSERT_EQ(c.valid, 3 * (UINT64_C(1) << 21));

        /* The iterator hands out one configuration buffer, reused: nothing accumulates. */
        while (mx_expand_next(it, &config) > 0) {
                if (!first)
                        first = config;
                ASSERT_TRUE(config == first);
                n++;
        }
        ASSERT_EQ(n, c.valid);
}

TEST(product_overflow)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        bool overflow;

        /* 64 axes of 64 values: 2^384 cells, counted as overflow and never streamed. */
        mx_buf_puts(
                &b,
                "{\"matrix\": 1, \"name\": \"huge\", \"target\": {\"command\": [\"true\"]}, \"axes\": [");
        for (int i = 0; i < 64; i++) {
                mx_buf_printf(&b, "%s{\"name\": \"a%d\", \"values\": [", i ? ", " : "", i);
                for (int v = 0; v < 64; v++)
                        mx_buf_printf(&b, "%s{\"name\": \"v%d\"}", v ? ", " : "", v);
                mx_buf_puts(&b, "]}");
        }
        mx_buf_puts(&b, "], \"baseline\": {");
        for (int i = 0; i < 64; i++)
                mx_buf_printf(&b, "%s\"a%d\": \"v0\"", i ? ", " : "", i);
        mx_buf_puts(&b, "}}");
        m = load_text(b.data);
        ASSERT_EQ(mx_expand_product_size(m, NULL, &overflow), UINT64_MAX);
        ASSERT_TRUE(overflow);
        {
                struct mx_expand_counts c;

                ASSERT_ERR(mx_expand_count(m, NULL, UINT64_MAX, &c), E2BIG);
        }
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted identity keys of a matrix's whole expansion. */
static char *identity_list(const struct mx_matrix *m)
{
        _cleanup_(mx_expand_freep) struct mx_expand *it = mx_expand_new(m, NULL);
        _cleanup_strv_free_ char **keys = NULL;
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        const int *config;

        while (mx_expand_next(it, &config) > 0) {
                char *key = mx_ident_key(m, config);
                char hash[MX_IDENT_HASH_LEN + 1];

                strv_consume(&keys, xasprintf("%s %s", mx_ident_hash_format(mx_ident_hash(key), hash), key));
                free(key);
        }
        qsort(keys, strv_length(keys), sizeof(char *), cmp_str);
        for (size_t i = 0; keys && keys[i]; i++)
                mx_buf_printf(&b, "%s\n", keys[i]);
        return mx_buf_steal(&b);
}

TEST(identity_independent_of_file_order)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *a = load_fixture("permuted-a.json");
        _cleanup_(mx_matrix_freep) struct mx_matrix *b = load_fixture("permuted-b.json");
        _cleanup_free_ char *la = identity_list(a), *lb = identity_list(b);
        _cleanup_free_ char *ka = mx_ident_key(a, a->baseline), *kb = mx_ident_key(b, b->baseline);
        _cleanup_free_ int *ca = config_from(a, "kernel=gemm,activation=bf16,graphs=on,color=green");
        _cleanup_free_ char *kc = mx_ident_key(a, ca);
        char hash[MX_IDENT_HASH_LEN + 1];

        /* Same configurations, same keys and hashes, whatever the order of axes, values and keys. */
        ASSERT_STREQ(la, lb);
        ASSERT_STREQ(ka, "activation=bf16,graphs=on,kernel=marlin");
        ASSERT_STREQ(ka, kb);
        /* FNV-1a 64 of the key, computed independently. */
        ASSERT_STREQ(mx_ident_hash_format(mx_ident_hash(ka), hash), "3f877d2da7720cb5");
        /* Aliases resolve to the canonical name; unassigned axes are left out. */
        ASSERT_STREQ(kc, "activation=bf16,color=green,graphs=on,kernel=cutlass");
        ASSERT_STREQ(mx_ident_hash_format(mx_ident_hash(kc), hash), "8b688fa1d46e1934");
        /* 3 x 2 x 2 = 12, minus 2 excluded (triton, graphs off) and 2 broken (marlin, mxfp8). */
        ASSERT_EQ(strlen(la) > 0, 1);
        {
                size_t lines = 0;

                for (const char *p = la; *p; p++)
                        lines += *p == '\n';
                ASSERT_EQ(lines, 8);
        }
}

TEST(identity_shipped_baseline)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_free_ char *key = mx_ident_key(m, m->baseline);
        char hash[MX_IDENT_HASH_LEN + 1];

        ASSERT_STREQ(key, "activation=bf16,graphs=on,kernel=marlin,sinks=off,spec=off,tile=auto");
        ASSERT_STREQ(mx_ident_hash_format(mx_ident_hash(key), hash), "6239d52dcd152f7c");
}

TEST(config_env_argv)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = load_fixture("matrix/mxfp4-gb10.json");
        _cleanup_free_ int *c = config_from(
                m, "kernel=gemm,activation=mxfp8,tile=auto,sinks=off,spec=eagle3-short,graphs=off");
        _cleanup_strv_free_ char **env = mx_config_env(m, c), **flags = mx_config_flags(m, c),
                                 **argv = mx_config_argv(m, c);
        struct mx_kgate_expect e;

        ASSERT_STREQ(env[0], "VLLM_ATTENTION_BACKEND=FLASHINFER"); /* target.env first */
        ASSERT_STREQ(env[1], "VLLM_WORKER_MULTIPROC_METHOD=spawn"); /* for nsys (target-surfaces.md D1) */
        ASSERT_STREQ(env[2], "VLLM_MXFP4_MOE_KERNEL=gemm");
        ASSERT_STREQ(env[3], "VLLM_MXFP4_ACTIVATION=mxfp8");
        ASSERT_STREQ(env[4], "FLASHINFER_MOE_TILE=auto");
        ASSERT_STREQ(env[5], "VLLM_USE_ATTENTION_SINKS=0");
        ASSERT_NULL(env[6]);
        ASSERT_EQ(strv_length(flags), 3);
        ASSERT_STREQ(flags[0], "--speculative-config");
        ASSERT_CONTAINS(flags[1], "nvidia/gpt-oss-120b-Eagle3-short-context");
        ASSERT_STREQ(flags[2], "--enforce-eager");
        ASSERT_STREQ(argv[0], "nsys"); /* the server runs under nsys profile */
        /* the profile's command ends with vLLM's profiler (its capture range); the flags follow it */
        ASSERT_STREQ(argv[strv_length(argv) - strv_length(flags) - 3], "fastsafetensors");
        ASSERT_STREQ(argv[strv_length(argv) - strv_length(flags) - 2], "--profiler-config");
        ASSERT_TRUE(strv_contains(argv, "{model}"));
        ASSERT_EQ(strv_length(argv), strv_length(m->command) + 3);

        mx_config_expect(m, c, &e);
        /* cutlass: the callsite line; mxfp8: its callsite line; graphs off: no capture. */
        ASSERT_EQ(e.log.n_must_see, 2);
        ASSERT_CONTAINS(e.log.must_see[0].patterns[0], "cutlass_fused_moe");
        ASSERT_CONTAINS(e.log.must_see[1].patterns[0], "MXFP8 quantized");
        ASSERT_EQ(e.kernels.n_must_see, 2);
        ASSERT_STREQ(e.kernels.must_see[0].patterns[0], "cutlass_*_grouped_gemm");
        ASSERT_STREQ(e.kernels.must_see[1].patterns[0], "mxfp8_quantize");
        ASSERT_TRUE(strv_contains(e.kernels.must_not_see, "marlin_*"));
        ASSERT_TRUE(strv_contains(e.log.must_not_see, "Capturing CUDA graphs"));
        mx_kgate_expect_done(&e);
}
