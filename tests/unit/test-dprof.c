/* SPDX-License-Identifier: MIT */
/* Kernel categories and the decode-profile table (kcat.h, dprof.h) on real profiler reports. */
#include "test.h"

#include "dprof.h"
#include "kcat.h"
#include "matrix.h"
#include "profreport.h"

#include <math.h>

static struct mx_profreport *parse_fixture(const char *name)
{
        _cleanup_free_ char *path = test_source_path(name);
        struct mx_profreport *r = NULL;
        _cleanup_free_ char *err = NULL;

        if (mx_profreport_parse_file(path, MX_PROFREPORT_TOOL_ANY, &r, &err) < 0)
                test_fail(__FILE__, __LINE__, "%s", err);
        return r;
}

static struct mx_kcat *builtin(void)
{
        size_t n;
        const struct mx_kcat_def *d = mx_kcat_builtin(&n);
        struct mx_kcat *c = NULL;

        ASSERT_OK(mx_kcat_new(d, n, &c, NULL));
        return c;
}

static json_t *category(json_t *table, const char *name)
{
        json_t *v;
        size_t i;

        json_array_foreach (json_object_get(table, "categories"), i, v)
                if (streq(json_string_value(json_object_get(v, "name")), name))
                        return v;
        return NULL;
}

/* Categories add up to the report: time exactly, calls to the launches, Time % to 100; each kernel once. */
static void check_sums(const struct mx_kcat *c, const struct mx_profreport *r, json_t *t)
{
        _cleanup_free_ uint64_t *calls = xcalloc(mx_kcat_count(c) + 1, sizeof(uint64_t));
        double pct = 0, total_us = 0;
        uint64_t n = 0, kernels = 0;
        json_t *v;
        size_t i;

        ASSERT_TRUE(json_number_value(json_object_get(t, "total_us")) > 0);
        ASSERT_TRUE(json_number_value(json_object_get(t, "categories_total_us")) ==
                    json_number_value(json_object_get(t, "total_us")));
        for (size_t k = 0; k < r->n_kernels; k++)
                calls[mx_kcat_classify(c, r->kernels[k].name)] += r->kernels[k].instances;
        json_array_foreach (json_object_get(t, "categories"), i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                size_t ci;

                for (ci = 0; ci <= mx_kcat_count(c) && !streq(mx_kcat_name(c, ci), name); ci++)
                        ;
                ASSERT_LE(ci, mx_kcat_count(c));
                ASSERT_EQ((uint64_t)json_integer_value(json_object_get(v, "calls")), calls[ci]);
                n += (uint64_t)json_integer_value(json_object_get(v, "calls"));
                kernels += (uint64_t)json_integer_value(json_object_get(v, "kernels"));
                pct += json_number_value(json_object_get(v, "time_pct"));
                total_us += json_number_value(json_object_get(v, "total_us"));
        }
        ASSERT_EQ(n, r->n_launches);
        ASSERT_EQ(kernels, (uint64_t)r->n_kernels);
        ASSERT_TRUE(fabs(pct - 100.0) < 1e-9);
        ASSERT_TRUE(fabs(total_us - json_number_value(json_object_get(t, "total_us"))) < 1e-6);
        /* "other" is always the last row */
        ASSERT_STREQ(json_string_value(json_object_get(
                             json_array_get(json_object_get(t, "categories"),
                                            json_array_size(json_object_get(t, "categories")) - 1),
                             "name")),
                     "other");
}

static uint64_t instances_matching(const struct mx_profreport *r, const char *const *subs)
{
        uint64_t n = 0;

        for (size_t k = 0; k < r->n_kernels; k++)
                for (size_t i = 0; subs[i]; i++)
                        if (strstr(r->kernels[k].name, subs[i])) {
                                n += r->kernels[k].instances;
                                break;
                        }
        return n;
}

/*
 * The CUDA llama-server on an H100 under ncu (issue 14's device run): a 4-layer gpt-oss, L1's one
 * completion of 16 tokens, 15 decode steps after the prompt (the server's log: "eval time = ... / 16
 * tokens"); the report holds the whole server life (warm-up and prefills too).
 */
TEST(llama_cuda_ncu_raw)
{
        _cleanup_(mx_profreport_freep) struct mx_profreport *r =
                parse_fixture("tests/fixtures/device/real/ncu/kernels-r1-raw.csv");
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = builtin();
        _cleanup_json_ json_t *w =
                json_pack("{s:i,s:i,s:i,s:i,s:s}", "tokens", 15, "requests", 1, "prompt_tokens", 13,
                          "output_tokens", 16, "which", "decode steps of L1's completion");
        _cleanup_json_ json_t *t = mx_dprof_analyse(c, r, w, NULL);
        static const char *const attn[] = {"flash_attn", "soft_max", NULL};
        static const char *const routing[] = {"topk_moe", "argsort", "mm_ids_helper", "add_id_kernel", NULL};
        json_t *a;

        ASSERT_EQ(r->format, MX_PROFREPORT_NCU_RAW);
        check_sums(c, r, t);
        ASSERT_STREQ(json_string_value(json_object_get(t, "format")), "ncu-raw");
        /* every kernel of this report has a category: the built-in list covers ggml-cuda's decode path */
        ASSERT_EQ(json_array_size(json_object_get(t, "top_other")), 0u);
        a = category(t, "Attention");
        ASSERT_NOT_NULL(a);
        ASSERT_EQ((uint64_t)json_integer_value(json_object_get(a, "calls")), instances_matching(r, attn));
        ASSERT_TRUE(fabs(json_number_value(json_object_get(a, "calls_per_token")) -
                         (double)instances_matching(r, attn) / 15.0) < 1e-9);
        /* the decode kernel: one launch per layer (4) and decode step (15) */
        for (size_t k = 0; k < r->n_kernels; k++)
                if (startswith(r->kernels[k].name, "void flash_attn_ext_vec<"))
                        ASSERT_EQ(r->kernels[k].instances, 4u * 15u);
        a = category(t, "MoE routing");
        ASSERT_NOT_NULL(a);
        ASSERT_EQ((uint64_t)json_integer_value(json_object_get(a, "calls")), instances_matching(r, routing));
        ASSERT_TRUE(json_number_value(json_object_get(a, "us_per_token")) > 0);
        ASSERT_STREQ(json_string_value(json_object_get(t, "which")), "decode steps of L1's completion");
        /* the model's graph: attention and expert selection run once per layer (4) in every pass */
        ASSERT_EQ(json_integer_value(json_object_get(category(t, "Attention"), "calls")) % 4, 0);
        ASSERT_EQ(json_integer_value(json_object_get(category(t, "MoE routing"), "calls")) % 4, 0);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(category(t, "MoE routing"), "calls_per_token")) -
                         8.0) < 1e-9);
}

/* A real ncu details page and per-kernel summary (H200, PyTorch): sums hold; the softmax is "Sampling". */
TEST(h200_ncu_details_and_summary)
{
        const char *files[] = {"tests/fixtures/gpu-h200/ncu-details.csv",
                               "tests/fixtures/gpu-h200/ncu-summary.csv"};
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = builtin();

        for (size_t f = 0; f < ELEMENTSOF(files); f++) {
                _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_fixture(files[f]);
                _cleanup_json_ json_t *t = mx_dprof_analyse(c, r, NULL, "no workload in this test");

                check_sums(c, r, t);
                ASSERT_NOT_NULL(category(t, "Activation"));
                ASSERT_NOT_NULL(category(t, "Sampling"));
                ASSERT_TRUE(json_is_null(json_object_get(t, "tokens")));
                ASSERT_TRUE(json_is_null(json_object_get(category(t, "Activation"), "us_per_token")));
                ASSERT_STREQ(json_string_value(json_object_get(t, "per_token_why")),
                             "no workload in this test");
        }
}

/* Seed 004's nsys table: MoE 2 GEMMs a layer (60 layers), GEMV calls a token, the triton kernel
 * uncategorised. */
TEST(nsys_kern_sum_seed004)
{
        _cleanup_(mx_profreport_freep) struct mx_profreport *r =
                parse_fixture("tests/fixtures/nsys/seed004-kern-sum.csv");
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = builtin();
        _cleanup_json_ json_t *w = json_pack("{s:i,s:i,s:i,s:i}", "tokens", 105, "requests", 1,
                                             "prompt_tokens", 2048, "output_tokens", 106);
        _cleanup_json_ json_t *t = mx_dprof_analyse(c, r, w, NULL);
        json_t *moe = category(t, "MoE GEMM"), *gemv = category(t, "GEMV"), *other;

        ASSERT_EQ(r->format, MX_PROFREPORT_NSYS_KERN_SUM);
        check_sums(c, r, t);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(moe, "calls_per_token")) - 120.0) < 1e-9);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(moe, "avg_us")) - (266.0 + 115.0) / 2) < 1e-9);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(gemv, "calls_per_token")) -
                         (12312.0 + 6331) / 105) < 1e-9);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(moe, "us_per_token")) -
                         6300.0 * (266 + 115) / 105) < 1e-6);
        ASSERT_STREQ(json_string_value(json_object_get(t, "which")),
                     "decode tokens of 1 request of prompt 2048, output 106");
        other = json_array_get(json_object_get(t, "top_other"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(other, "name")), "triton_poi_fused_add_mul_0");
        ASSERT_NOT_NULL(category(t, "Quantization"));
        ASSERT_NOT_NULL(category(t, "MoE routing"));
        ASSERT_NOT_NULL(category(t, "Attention"));
        ASSERT_NOT_NULL(category(t, "Norm"));
        ASSERT_NOT_NULL(category(t, "Sampling"));
        ASSERT_NOT_NULL(category(t, "Memory copy"));
}

/* nsys cuda_gpu_trace: launches one by one, memory operations skipped. */
TEST(nsys_gpu_trace)
{
        static const char csv[] =
                "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem "
                "(MB),"
                "Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n"
                "100,1000,1,1,1,1,1,1,1,32,0,0,,,,,0,1,,7,gemv_fp4_blockscaled_kernel\n"
                "2000,3000,2,1,1,1,1,1,1,32,0,0,,,,,0,1,,7,cutlass_sm120_mxf4_grouped_gemm\n"
                "6000,500,3,,,,,,,,,,1.0,2000,Device,Device,0,1,,7,[CUDA memcpy Device-to-Device]\n"
                "7000,1000,4,1,1,1,1,1,1,32,0,0,,,,,0,1,,7,gemv_fp4_blockscaled_kernel\n";
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = NULL;
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = builtin();
        _cleanup_json_ json_t *w = json_pack("{s:i}", "tokens", 2), *t = NULL;

        ASSERT_OK(mx_profreport_parse_buffer(csv, sizeof(csv) - 1, MX_PROFREPORT_TOOL_ANY, &r, NULL));
        ASSERT_EQ(r->format, MX_PROFREPORT_NSYS_GPU_TRACE);
        t = mx_dprof_analyse(c, r, w, NULL);
        check_sums(c, r, t);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(t, "total_us")) - 5.0) < 1e-12);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(category(t, "GEMV"), "calls_per_token")) - 1.0) <
                    1e-12);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(category(t, "MoE GEMM"), "time_pct")) - 60.0) <
                    1e-9);
}

/* A feature that halves the MoE GEMMs against its baseline: the diff's text and rows. */
TEST(diff_text)
{
        _cleanup_(mx_profreport_freep) struct mx_profreport *r =
                parse_fixture("tests/fixtures/nsys/seed004-kern-sum.csv");
        _cleanup_(mx_profreport_freep) struct mx_profreport *f =
                parse_fixture("tests/fixtures/nsys/seed004-kern-sum.csv");
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = builtin();
        _cleanup_json_ json_t *w = json_pack("{s:i}", "tokens", 105), *tb = NULL, *tf = NULL, *d = NULL,
                              *nd = NULL;
        json_t *row;

        for (size_t k = 0; k < f->n_kernels; k++)
                if (strstr(f->kernels[k].name, "grouped_gemm"))
                        f->kernels[k].total_ns /= 2;
        tb = mx_dprof_analyse(c, r, w, NULL);
        tf = mx_dprof_analyse(c, f, w, NULL);
        d = mx_dprof_diff(tf, tb);
        ASSERT_TRUE(json_is_true(json_object_get(d, "per_token")));
        row = json_array_get(json_object_get(d, "categories"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(row, "name")), "MoE GEMM");
        ASSERT_TRUE(fabs(json_number_value(json_object_get(row, "d_us_per_token")) +
                         6300.0 * (266 + 115) / 2 / 105) < 1e-6);
        ASSERT_TRUE(fabs(json_number_value(json_object_get(row, "d_calls_per_token"))) < 1e-12);
        ASSERT_STREQ(json_string_value(json_object_get(d, "text")), "MoE GEMM \u221211430 \u03bcs/token");
        /* only the kernels that changed: FC1 and FC2 */
        ASSERT_EQ(json_array_size(json_object_get(d, "kernels")), 2u);
        ASSERT_CONTAINS(
                json_string_value(json_object_get(json_array_get(json_object_get(d, "kernels"), 0), "name")),
                "fc1_swiglu");
        ASSERT_CONTAINS(
                json_string_value(json_object_get(json_array_get(json_object_get(d, "kernels"), 1), "name")),
                "grouped_gemm");
        /* without per-token figures on one side: points of Time % */
        json_object_set_new(tb, "tokens", json_null());
        nd = mx_dprof_diff(tf, tb);
        ASSERT_TRUE(json_is_false(json_object_get(nd, "per_token")));
        ASSERT_CONTAINS(json_string_value(json_object_get(nd, "text")), "MoE GEMM \u2212");
        ASSERT_CONTAINS(json_string_value(json_object_get(nd, "text")), "points of decode time");
}

static const char matrix_head[] = "{\"matrix\": 1, \"name\": \"m\", \"target\": {\"profile\": \"command\", "
                                  "\"command\": [\"true\"]},\n\"axes\": [{\"name\": \"a\", \"values\": "
                                  "[{\"name\": \"x\"}]}], \"baseline\": {\"a\": \"x\"},\n";

static int load(const char *tail, struct mx_matrix **ret, char **err)
{
        _cleanup_free_ char *text = xasprintf("%s%s}", matrix_head, tail);

        return mx_matrix_load_string("m.json", text, strlen(text), ret, err);
}

TEST(matrix_categories_and_rules)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *r =
                parse_fixture("tests/fixtures/nsys/seed004-kern-sum.csv");
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = NULL;
        _cleanup_json_ json_t *t = NULL, *rules = NULL;
        const struct mx_kcat_def *defs;
        size_t n;

        ASSERT_OK(load("\"kernel_categories\": [{\"name\": \"MoE\", \"patterns\": [\"*grouped_gemm*\", "
                       "\"re:expandInputRows\"]},\n {\"name\": \"GEMV\", \"patterns\": [\"*gemv*\"]}],\n"
                       "\"decision_rules\": [{\"when\": \"MoE > 50%\", \"then\": \"MoE kernel\"},\n"
                       " {\"when\": \"MoE + GEMV >= 80%\", \"then\": \"both\", \"note\": \"n\"},\n"
                       " {\"when\": \"other < 1%\", \"then\": \"names are complete\"}]\n",
                       &m, NULL));
        defs = mx_matrix_kcats(m, &n);
        ASSERT_EQ(n, 2u);
        ASSERT_OK(mx_kcat_new(defs, n, &c, NULL));
        t = mx_dprof_analyse(c, r, NULL, "none");
        rules = mx_dprof_rules(m, t);
        ASSERT_EQ(json_array_size(rules), 3u);
        /* MoE = FC1 + FC2 + expand = 29.0 + 12.5 + 2.0 % of this table: not over 50 */
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rules, 0), "verdict")),
                     "does-not-hold");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rules, 1), "verdict")), "holds");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rules, 2), "verdict")),
                     "does-not-hold");
        ASSERT_TRUE(fabs(json_number_value(json_object_get(json_array_get(rules, 0), "share_pct")) +
                         json_number_value(json_object_get(category(t, "GEMV"), "time_pct")) -
                         json_number_value(json_object_get(json_array_get(rules, 1), "share_pct"))) < 1e-9);
}

TEST(matrix_errors_have_positions)
{
        static const struct {
                const char *tail, *want;
        } cases[] = {
                {"\"decision_rules\": [{\"when\": \"MoE > 50%\", \"then\": \"x\"}]\n",
                 "m.json:3:21: key 'decision_rules[0].when': 'MoE > 50%': 'MoE' is not a kernel category"},
                {"\"decision_rules\": [{\"when\": \"GEMV 50%\", \"then\": \"x\"}]\n", "has no comparison"},
                {"\"decision_rules\": [{\"when\": \"GEMV > 150%\", \"then\": \"x\"}]\n", "from 0% to 100%"},
                {"\"decision_rules\": [{\"when\": \"GEMV > 5\", \"then\": \"x\"}]\n", "is not a share"},
                {"\"decision_rules\": [{\"when\": \"GEMV > 5%\"}]\n", "missing required key 'then'"},
                {"\"kernel_categories\": [{\"name\": \"A\", \"patterns\": [\"re:(\"]}]\n",
                 "m.json:3:50: key 'kernel_categories[0].patterns[0]'"},
                {"\"kernel_categories\": [{\"name\": \"other\", \"patterns\": [\"x\"]}]\n",
                 "cannot name a category"},
                {"\"kernel_categories\": [{\"name\": \"A\", \"patterns\": [\"x\"]}, {\"name\": \"A\", "
                 "\"patterns\": "
                 "[\"y\"]}]\n",
                 "declared twice"},
                {"\"kernel_categories\": [{\"name\": \"A\"}]\n", "needs 'patterns'"},
                {"\"kernel_categories\": [{\"name\": \"A\", \"patterns\": [\"x\"], \"colour\": 1}]\n",
                 "unknown key 'colour'"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
                _cleanup_free_ char *err = NULL;

                ASSERT_ERR(load(cases[i].tail, &m, &err), EINVAL);
                ASSERT_CONTAINS(err, cases[i].want);
                ASSERT_CONTAINS(err, "m.json:3:");
        }
}

/* The shipped matrices load, and their decision rules name categories of the list that applies. */
TEST(shipped_gb10_rules)
{
        _cleanup_(mx_matrix_freep) struct mx_matrix *m = NULL;
        _cleanup_free_ char *path = test_source_path("matrix/mxfp4-gb10.json"), *err = NULL;

        if (mx_matrix_load_file(path, &m, &err) < 0)
                test_fail(__FILE__, __LINE__, "%s", err);
        ASSERT_LE(3u, m->n_drules);
}

/* The capture's workload file: tokens required and positive, counts are counts; a bad one is not divided by.
 */
TEST(workload_check)
{
        static const char *const bad[] = {"[]",
                                          "{}",
                                          "{\"tokens\": 0}",
                                          "{\"tokens\": -3}",
                                          "{\"tokens\": \"64\"}",
                                          "{\"tokens\": 64, \"requests\": -1}",
                                          "{\"tokens\": 64, \"which\": 5}"};
        _cleanup_(mx_profreport_freep) struct mx_profreport *r =
                parse_fixture("tests/fixtures/nsys/seed004-kern-sum.csv");
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = builtin();

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_json_ json_t *w = json_loads(bad[i], 0, NULL), *t = NULL;
                _cleanup_free_ char *err = NULL;

                ASSERT_ERR(mx_dprof_workload_check(w, &err), EINVAL);
                ASSERT_NOT_NULL(err);
                t = mx_dprof_analyse(c, r, w, NULL);
                ASSERT_TRUE(json_is_null(json_object_get(t, "tokens")));
                ASSERT_CONTAINS(json_string_value(json_object_get(t, "per_token_why")), "workload");
        }
        {
                _cleanup_json_ json_t *w = json_loads("{\"tokens\": 63.5, \"requests\": 2}", 0, NULL);

                ASSERT_OK(mx_dprof_workload_check(w, NULL));
        }
}

/* tests/fixtures/device/profile/gptoss-NL/kernels.csv.xz, unpacked into the test's folder and parsed. */
static struct mx_profreport *parse_capture(int layers)
{
        _cleanup_free_ char *xz = NULL, *csv = NULL, *cmd = NULL, *err = NULL;
        struct mx_profreport *r = NULL;

        xz = xasprintf("tests/fixtures/device/profile/gptoss-%dl/kernels.csv.xz", layers);
        {
                _cleanup_free_ char *path = test_source_path(xz);

                csv = xasprintf("%s/kernels-%dl.csv", test_tmpdir(), layers);
                cmd = xasprintf("xz -dc '%s' >'%s'", path, csv);
        }
        ASSERT_EQ(system(cmd), 0);
        if (mx_profreport_parse_file(csv, MX_PROFREPORT_TOOL_ANY, &r, &err) < 0)
                test_fail(__FILE__, __LINE__, "%s", err);
        return r;
}

/*
 * Issue 18's device capture (tests/fixtures/device/profile/README.md): the CUDA llama-server on an H100
 * under ncu, two gpt-oss models that differ only in --layers (2, 4), each serving 3 requests of 2049
 * prompt tokens and 64 generated ones; the server's counters say 192 generated tokens
 * (llamacpp:tokens_predicted_total, metrics-after.txt), 189 of them decode steps. Every per-layer
 * category launches exactly twice as often per token with 4 layers, the categories add up to each
 * capture's total, and the diff of the two says so.
 */
TEST(h100_capture_two_and_four_layers)
{
        _cleanup_(mx_profreport_freep) struct mx_profreport *r2 = parse_capture(2), *r4 = parse_capture(4);
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = builtin();
        _cleanup_json_ json_t *w = json_pack("{s:i,s:i,s:i,s:i,s:s}", "tokens", 192, "requests", 3,
                                             "prompt_tokens", 2049, "output_tokens", 64, "which",
                                             "generated tokens of 3 requests (server counters), the whole life");
        _cleanup_json_ json_t *t2 = mx_dprof_analyse(c, r2, w, NULL), *t4 = mx_dprof_analyse(c, r4, w, NULL);
        _cleanup_json_ json_t *d = mx_dprof_diff(t4, t2);
        static const char *const per_layer[] = {"Attention", "MoE routing"};

        ASSERT_EQ(r2->n_launches, 10351u); /* the file's 10 355 lines less ncu's two, the header and the units */
        check_sums(c, r2, t2);
        check_sums(c, r4, t4);
        ASSERT_EQ(json_array_size(json_object_get(t4, "top_other")), 0u);
        for (size_t i = 0; i < ELEMENTSOF(per_layer); i++) {
                double a = json_number_value(json_object_get(category(t2, per_layer[i]), "calls_per_token"));
                double b = json_number_value(json_object_get(category(t4, per_layer[i]), "calls_per_token"));

                ASSERT_TRUE(a > 0);
                ASSERT_TRUE(fabs(b / a - 2.0) < 1e-9);
        }
        /* the decode kernels: one launch per layer and decode step (189 = 3 x 63) */
        for (size_t k = 0; k < r4->n_kernels; k++)
                if (startswith(r4->kernels[k].name, "void flash_attn_ext_vec<") ||
                    startswith(r4->kernels[k].name, "void topk_moe_cuda<"))
                        ASSERT_EQ(r4->kernels[k].instances, 4u * 189u);
        for (size_t k = 0; k < r2->n_kernels; k++)
                if (startswith(r2->kernels[k].name, "void flash_attn_ext_vec<"))
                        ASSERT_EQ(r2->kernels[k].instances, 2u * 189u);
        /* twice the layers costs time in the per-layer categories, and the diff names them */
        ASSERT_TRUE(json_is_true(json_object_get(d, "per_token")));
        ASSERT_TRUE(json_number_value(json_object_get(t4, "total_us")) >
                    1.5 * json_number_value(json_object_get(t2, "total_us")));
        ASSERT_CONTAINS(json_string_value(json_object_get(d, "text")), "\u03bcs/token");
        /* the kept analysis (analysis.json beside the capture) is what the code computes today */
        {
                _cleanup_free_ char *path = test_source_path("tests/fixtures/device/profile/analysis.json");
                _cleanup_json_ json_t *kept = json_load_file(path, 0, NULL);

                ASSERT_NOT_NULL(kept);
                ASSERT_STREQ(json_string_value(json_object_get(json_object_get(kept, "diff_4l_vs_2l"), "text")),
                             json_string_value(json_object_get(d, "text")));
                ASSERT_TRUE(json_equal(json_object_get(json_object_get(kept, "gptoss-4l"), "categories"),
                                       json_object_get(t4, "categories")));
        }
}
