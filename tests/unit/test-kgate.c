/* SPDX-License-Identifier: MIT */
#include "test.h"

#include "kgate.h"
#include "profreport.h"

#include <math.h>

/* jansson's own cleanup helper */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* Does pattern match subject? (through the gate: one log must-see, one line) */
static bool matches(const char *pattern, const char *subject)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {};
        _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
        _cleanup_free_ char *err = NULL;
        enum mx_verdict v;

        mx_kgate_rules_add_must_see(&e.log, pattern);
        if (mx_kgate_new(&e, &g, &err) < 0)
                test_fail(__FILE__, __LINE__, "pattern '%s': %s", pattern, err);
        mx_kgate_feed_log_line(g, subject, strlen(subject));
        v = mx_kgate_verdict(g, NULL);
        ASSERT_TRUE(v == MX_VERDICT_PASS || v == MX_VERDICT_FAIL);
        return v == MX_VERDICT_PASS;
}

TEST(glob)
{
        /* unanchored, case-sensitive */
        ASSERT_TRUE(matches("cutlass_*_grouped_gemm",
                            "void cutlass_sm120_grouped_gemm<cutlass::float_e2m1_t, 128>()"));
        ASSERT_TRUE(matches("marlin", "void marlin::Marlin<256, 1, 8>(int4 const*)"));
        ASSERT_FALSE(matches("Marlin_", "void marlin_moe<>()"));
        ASSERT_TRUE(matches("gemv_fp4_*", "gemv_fp4_"));
        ASSERT_FALSE(matches("gemv_fp4_*", "gemv_fp"));
        /* '?' is exactly one character, also a multi-byte one */
        ASSERT_TRUE(matches("a?c", "xxabcxx"));
        ASSERT_FALSE(matches("a?c", "ac"));
        ASSERT_TRUE(matches("shape=(32, 4096) ? MXFP8",
                            "activation shape=(32, 4096) \xe2\x86\x92 MXFP8 quantized"));
        ASSERT_FALSE(matches("shape=(32, 4096) ?? MXFP8",
                             "activation shape=(32, 4096) \xe2\x86\x92 MXFP8 quantized"));
        /* escapes make * ? \ literal */
        ASSERT_TRUE(matches("int4 \\*", "Marlin(int4 *, int)"));
        ASSERT_FALSE(matches("int4 \\*", "Marlin(int4 const*)"));
        ASSERT_TRUE(matches("what\\?", "so what?"));
        ASSERT_FALSE(matches("what\\?", "so whatX"));
        ASSERT_TRUE(matches("C:\\\\dir", "path C:\\dir"));
        /* backtracking over several stars */
        ASSERT_TRUE(matches("a*b*c", "xa--b--b--cx"));
        ASSERT_TRUE(matches("ab*ab*c", "ab ab ab ab c"));
        ASSERT_FALSE(matches("a*b*c", "xa--c--b"));
        ASSERT_TRUE(matches("*", ""));
        ASSERT_TRUE(matches("**x**", "x"));
        ASSERT_TRUE(matches("[MoE] backend=", "INFO [MoE] backend=flashinfer format=MXFP4_NATIVE"));
}

TEST(regex)
{
        ASSERT_TRUE(matches("re:gemv_fp4_(sm90|sm120)", "kernel gemv_fp4_sm120_decode"));
        ASSERT_FALSE(matches("re:gemv_fp4_(sm90|sm120)", "kernel gemv_fp4_sm100_decode"));
        ASSERT_TRUE(matches("re:^void marlin", "void marlin::Marlin<>"));
        ASSERT_FALSE(matches("re:^marlin", "void marlin::Marlin<>"));
        ASSERT_TRUE(matches("re:format=MXFP4_(NATIVE|BF16)$", "[MoE] backend=flashinfer format=MXFP4_BF16"));
        ASSERT_TRUE(matches("re:[0-9]+ tokens/s", "throughput 1234 tokens/s"));
}

TEST(pattern_check)
{
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
        _cleanup_free_ char *big = xmalloc(MX_KGATE_PATTERN_MAX + 2);

        memset(big, 'x', MX_KGATE_PATTERN_MAX + 1);
        big[MX_KGATE_PATTERN_MAX + 1] = '\0';
        ASSERT_OK(mx_kgate_pattern_check("cutlass_*_moe", NULL));
        ASSERT_OK(mx_kgate_pattern_check("re:a|b", NULL));
        ASSERT_ERR(mx_kgate_pattern_check("trailing\\", &a), EINVAL);
        ASSERT_CONTAINS(a, "pattern 'trailing\\': '\\' at the end escapes nothing");
        ASSERT_ERR(mx_kgate_pattern_check("re:(unclosed", &b), EINVAL);
        ASSERT_CONTAINS(b, "pattern 're:(unclosed': ");
        ASSERT_ERR(mx_kgate_pattern_check("", &c), EINVAL);
        ASSERT_CONTAINS(c, "empty pattern");
        ASSERT_ERR(mx_kgate_pattern_check("re:", &d), EINVAL);
        ASSERT_ERR(mx_kgate_pattern_check(big, &e), EINVAL);
        ASSERT_CONTAINS(e, "longer than 4096 bytes");
}

TEST(verdict_names)
{
        for (int v = 0; v < _MX_VERDICT_MAX; v++)
                ASSERT_EQ(mx_verdict_from_string(mx_verdict_to_string(v)), v);
        ASSERT_STREQ(mx_verdict_to_string(MX_VERDICT_INVALID), "invalid");
        ASSERT_EQ(mx_verdict_from_string("PASS"), -EINVAL);
        ASSERT_NULL(mx_verdict_to_string(_MX_VERDICT_MAX));
}

/* A report with these kernel names (an nsys cuda_gpu_kern_sum), or an empty one for names == NULL. */
static struct mx_profreport *report_of(const char *const *names)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        struct mx_profreport *r = NULL;

        mx_buf_puts(
                &b,
                "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n");
        for (size_t i = 0; names && names[i]; i++)
                mx_buf_printf(&b, "10.0,1000,10,100,100,90,110,1,\"%s\"\n", names[i]);
        ASSERT_OK(mx_profreport_parse_buffer(b.data, b.len, MX_PROFREPORT_TOOL_ANY, &r, NULL));
        return r;
}

static enum mx_verdict gate_kernels(const struct mx_kgate_expect *e, const char *const *names,
                                    json_t **detail)
{
        _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = report_of(names);

        ASSERT_OK(mx_kgate_new(e, &g, NULL));
        mx_kgate_feed_report(g, r);
        return mx_kgate_verdict(g, detail);
}

/* Seed 001's table of kernel checks, as the matrix file will hold it, one axis value each. */
static void expect_marlin(struct mx_kgate_expect *e)
{
        mx_kgate_rules_add_must_see(&e->kernels, "marlin_*");
        mx_kgate_rules_add_must_not_see(&e->kernels, "cutlass_*_moe");
}

static void expect_gemm(struct mx_kgate_expect *e)
{
        mx_kgate_rules_add_must_see(&e->kernels, "cutlass_*_grouped_gemm");
        mx_kgate_rules_add_must_not_see(&e->kernels, "marlin_*");
}

static void expect_mxfp8(struct mx_kgate_expect *e)
{
        mx_kgate_rules_add_must_see(&e->kernels, "mxfp8_quantize");
}

TEST(seed_table_marlin)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {};
        const char *good[] = { "void marlin_moe_wna16::Marlin<256, 1, 8, 4, 8, true>(const int4 *, int4 *)",
                               "void at::vectorized_elementwise_kernel<4>(int)", NULL };
        const char *wrong[] = { "void marlin_moe_wna16::Marlin<256, 1, 8>(const int4 *)",
                                "void cutlass::Kernel<cutlass_sm90_fused_moe>(Params)", NULL };
        const char *missing[] = { "void at::vectorized_elementwise_kernel<4>(int)", NULL };
        _cleanup_json_ json_t *d1 = NULL, *d2 = NULL, *d3 = NULL;
        json_t *j;

        expect_marlin(&e);
        ASSERT_EQ(gate_kernels(&e, good, &d1), MX_VERDICT_PASS);
        ASSERT_STREQ(json_string_value(json_object_get(d1, "verdict")), "pass");
        j = json_array_get(json_object_get(json_object_get(d1, "kernels"), "must_see"), 0);
        ASSERT_STREQ(json_string_value(json_object_get(j, "subject")), good[0]);
        ASSERT_STREQ(json_string_value(json_object_get(j, "pattern")), "marlin_*");

        ASSERT_EQ(gate_kernels(&e, wrong, &d2), MX_VERDICT_FAIL);
        ASSERT_STREQ(json_string_value(json_object_get(d2, "summary")),
                     "kernels: must-not-see 'cutlass_*_moe' matched");
        j = json_array_get(json_object_get(json_object_get(d2, "kernels"), "must_not_see"), 0);
        ASSERT_TRUE(json_is_true(json_object_get(j, "matched")));
        ASSERT_STREQ(json_string_value(json_object_get(j, "subject")), wrong[1]);
        ASSERT_NULL(json_object_get(j, "line")); /* kernels have no line numbers */

        ASSERT_EQ(gate_kernels(&e, missing, &d3), MX_VERDICT_FAIL);
        ASSERT_STREQ(json_string_value(json_object_get(d3, "summary")),
                     "kernels: must-see 'marlin_*' not seen in 1 kernels");
        ASSERT_NULL(json_object_get(d3, "log")); /* no log expectations, no log section */
}

TEST(seed_table_gemm_and_mxfp8)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect gemm = {}, mxfp8 = {}, both = {};
        const char *cutlass[] = { "void cutlass_sm120_grouped_gemm<cutlass::float_e2m1_t, 128, 64>(Params)",
                                  NULL };
        const char *cutlass_mx[] = {
                "void cutlass_sm120_grouped_gemm<cutlass::float_e2m1_t, 128, 64>(Params)",
                "void flashinfer::mxfp8_quantize_kernel<__nv_bfloat16, 32>(int)", NULL
        };
        const char *marlin[] = { "void cutlass_sm120_grouped_gemm<128>(Params)", "marlin_gemm(int)", NULL };

        expect_gemm(&gemm);
        expect_mxfp8(&mxfp8);
        ASSERT_EQ(gate_kernels(&gemm, cutlass, NULL), MX_VERDICT_PASS);
        ASSERT_EQ(gate_kernels(&gemm, marlin, NULL), MX_VERDICT_FAIL);
        ASSERT_EQ(gate_kernels(&mxfp8, cutlass, NULL), MX_VERDICT_FAIL);
        ASSERT_EQ(gate_kernels(&mxfp8, cutlass_mx, NULL), MX_VERDICT_PASS);

        /* a configuration kernel=gemm,activation=mxfp8 merges both axis values' expectations */
        ASSERT_TRUE(mx_kgate_expect_empty(&both));
        mx_kgate_expect_merge(&both, &gemm);
        mx_kgate_expect_merge(&both, &mxfp8);
        ASSERT_FALSE(mx_kgate_expect_empty(&both));
        ASSERT_EQ(both.kernels.n_must_see, 2);
        ASSERT_EQ(strv_length(both.kernels.must_not_see), 1);
        ASSERT_EQ(gate_kernels(&both, cutlass, NULL), MX_VERDICT_FAIL);
        ASSERT_EQ(gate_kernels(&both, cutlass_mx, NULL), MX_VERDICT_PASS);
}

TEST(seed_table_gemv_alternatives)
{
        /* "gemv_fp4_* or GEMM fallback logged": one must-see entry with two alternatives in the log */
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {};
        const char *lines_a[] = { "INFO model loaded", "[MoE] fn=gemv_fp4_sm120_dp4a selected", NULL };
        const char *lines_b[] = { "INFO model loaded", "WARNING gemv unsupported here, GEMM fallback used",
                                  NULL };
        const char *lines_c[] = { "INFO model loaded", "[MoE] fn=cutlass_fused_moe", NULL };
        const char *const *cases[] = { lines_a, lines_b, lines_c };
        const enum mx_verdict want[] = { MX_VERDICT_PASS, MX_VERDICT_PASS, MX_VERDICT_FAIL };

        mx_kgate_rules_add_must_see(&e.log, "gemv_fp4_*");
        ASSERT_OK(mx_kgate_rules_add_alternative(&e.log, "re:GEMM fallback (used|logged)"));
        ASSERT_ERR(mx_kgate_rules_add_alternative(&e.kernels, "x"), ENOENT);
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
                _cleanup_json_ json_t *d = NULL;
                json_t *entry;

                ASSERT_OK(mx_kgate_new(&e, &g, NULL));
                for (size_t i = 0; cases[c][i]; i++)
                        mx_kgate_feed_log_line(g, cases[c][i], strlen(cases[c][i]));
                ASSERT_EQ(mx_kgate_verdict(g, &d), want[c]);
                entry = json_array_get(json_object_get(json_object_get(d, "log"), "must_see"), 0);
                ASSERT_EQ(json_array_size(json_object_get(entry, "any_of")), 2);
                if (want[c] == MX_VERDICT_PASS) {
                        ASSERT_EQ(json_integer_value(json_object_get(entry, "line")), 2);
                        ASSERT_STREQ(json_string_value(json_object_get(entry, "pattern")),
                                     c == 0 ? "gemv_fp4_*" : "re:GEMM fallback (used|logged)");
                } else
                        ASSERT_CONTAINS(
                                json_string_value(json_object_get(d, "summary")),
                                "log: must-see 'gemv_fp4_*' (or its alternatives) not seen in 2 lines");
        }
}

TEST(callsite_logging)
{
        /* seed 004 "Callsite Logging": the expected lines and the red flags */
        static const char *const good[] = {
                "[MoE] backend=flashinfer format=MXFP4_NATIVE fn=flashinfer.fused_moe.cutlass_fused_moe",
                "[MoE] w13_weight dtype=torch.uint8 shape=(256, 8192, 2048)",
                "[MoE] activation input dtype=torch.bfloat16 shape=(32, 4096) \xe2\x86\x92 MXFP8 quantized",
        };
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {};
        _cleanup_(mx_kgate_freep) struct mx_kgate *ok = NULL, *bad = NULL;
        _cleanup_json_ json_t *d = NULL;
        const char *flag = "[MoE] WARNING: Using NVFP4 path";
        json_t *nots;

        mx_kgate_rules_add_must_see(&e.log, "backend=flashinfer format=MXFP4_NATIVE");
        mx_kgate_rules_add_must_see(&e.log, "re:MXFP8 quantized$");
        mx_kgate_rules_add_must_not_see(&e.log, "Using NVFP4 path");
        mx_kgate_rules_add_must_not_see(&e.log, "format=MXFP4_BF16");
        mx_kgate_rules_add_must_not_see(&e.log, "quant_dtype=nvfp4");
        ASSERT_OK(mx_kgate_new(&e, &ok, NULL));
        ASSERT_OK(mx_kgate_new(&e, &bad, NULL));
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                mx_kgate_feed_log_line(ok, good[i], strlen(good[i]));
                mx_kgate_feed_log_line(bad, good[i], strlen(good[i]));
        }
        mx_kgate_feed_log_line(bad, flag, strlen(flag));
        ASSERT_EQ(mx_kgate_verdict(ok, NULL), MX_VERDICT_PASS);
        ASSERT_EQ(mx_kgate_verdict(bad, &d), MX_VERDICT_FAIL);
        nots = json_object_get(json_object_get(d, "log"), "must_not_see");
        ASSERT_EQ(json_array_size(nots), 3);
        ASSERT_TRUE(json_is_true(json_object_get(json_array_get(nots, 0), "matched")));
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(nots, 0), "line")), 4);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(nots, 0), "subject")), flag);
        ASSERT_FALSE(json_is_true(json_object_get(json_array_get(nots, 1), "matched")));
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(d, "log"), "lines")), 4);
}

TEST(invalid_and_skipped)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {}, none = {}, both = {};
        const char *line = "[MoE] backend=flashinfer";

        expect_marlin(&e);
        /* no report at all */
        {
                _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
                _cleanup_json_ json_t *d = NULL;

                ASSERT_OK(mx_kgate_new(&e, &g, NULL));
                ASSERT_EQ(mx_kgate_verdict(g, &d), MX_VERDICT_INVALID);
                ASSERT_STREQ(json_string_value(json_object_get(d, "summary")),
                             "kernels: no evidence: no profiler report was fed");
                ASSERT_FALSE(json_is_true(json_object_get(json_object_get(d, "kernels"), "evidence")));
        }
        /* the report could not be parsed */
        {
                _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
                _cleanup_json_ json_t *d = NULL;

                ASSERT_OK(mx_kgate_new(&e, &g, NULL));
                mx_kgate_report_failed(g, "report.csv: no profiler report header in 3 lines");
                ASSERT_EQ(mx_kgate_verdict(g, &d), MX_VERDICT_INVALID);
                ASSERT_STREQ(json_string_value(json_object_get(json_object_get(d, "kernels"), "missing")),
                             "report.csv: no profiler report header in 3 lines");
        }
        /* a report with a header and no rows: the capture window missed the kernels */
        {
                _cleanup_json_ json_t *d = NULL;

                ASSERT_EQ(gate_kernels(&e, NULL, &d), MX_VERDICT_INVALID);
                ASSERT_CONTAINS(json_string_value(json_object_get(d, "summary")),
                                "the profiler report lists no kernels");
        }
        /* log expectations but no log */
        {
                _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect l = {};
                _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL, *h = NULL;

                mx_kgate_rules_add_must_not_see(&l.log, "Traceback");
                ASSERT_OK(mx_kgate_new(&l, &g, NULL));
                ASSERT_EQ(mx_kgate_verdict(g, NULL), MX_VERDICT_INVALID);
                ASSERT_OK(mx_kgate_new(&l, &h, NULL));
                mx_kgate_feed_log_line(h, line, strlen(line));
                mx_kgate_log_failed(h, "log capture lost");
                ASSERT_EQ(mx_kgate_verdict(h, NULL), MX_VERDICT_INVALID);
        }
        /* evidence of a wrong path outweighs missing evidence elsewhere */
        {
                _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
                const char *flag = "[MoE] WARNING: Using NVFP4 path";

                mx_kgate_expect_merge(&both, &e);
                mx_kgate_rules_add_must_not_see(&both.log, "NVFP4");
                ASSERT_OK(mx_kgate_new(&both, &g, NULL));
                mx_kgate_feed_log_line(g, flag, strlen(flag));
                ASSERT_EQ(mx_kgate_verdict(g, NULL), MX_VERDICT_FAIL);
        }
        /* nothing expected */
        {
                _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
                _cleanup_json_ json_t *d = NULL;

                ASSERT_OK(mx_kgate_new(&none, &g, NULL));
                mx_kgate_feed_log_line(g, line, strlen(line));
                ASSERT_EQ(mx_kgate_verdict(g, &d), MX_VERDICT_SKIPPED);
                ASSERT_STREQ(json_string_value(json_object_get(d, "verdict")), "skipped");
        }
}

TEST(real_report)
{
        _cleanup_free_ char *path = test_source_path("tests/fixtures/gpu-h200/ncu-details.csv");
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = NULL;
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect pass = {}, fail = {};
        _cleanup_(mx_kgate_freep) struct mx_kgate *gp = NULL, *gf = NULL;
        _cleanup_json_ json_t *d = NULL;
        json_t *j;

        ASSERT_OK(mx_profreport_parse_file(path, MX_PROFREPORT_TOOL_ANY, &r, NULL));
        mx_kgate_rules_add_must_see(&pass.kernels, "nvjet_sm90_*_coopA_");
        mx_kgate_rules_add_must_see(&pass.kernels, "cunn_SoftMaxForwardReg<float, float, float,");
        mx_kgate_rules_add_must_see(&pass.kernels, "re:BinaryFunctor<c10::BFloat16(, c10::BFloat16){2}");
        mx_kgate_rules_add_must_not_see(&pass.kernels, "marlin");
        mx_kgate_rules_add_must_not_see(&pass.kernels, "cutlass_*_moe");
        mx_kgate_rules_add_must_see(&fail.kernels, "marlin_*");
        mx_kgate_rules_add_must_not_see(&fail.kernels, "silu_kernel");
        ASSERT_OK(mx_kgate_new(&pass, &gp, NULL));
        ASSERT_OK(mx_kgate_new(&fail, &gf, NULL));
        mx_kgate_feed_report(gp, r);
        mx_kgate_feed_report(gf, r);
        ASSERT_EQ(mx_kgate_verdict(gp, NULL), MX_VERDICT_PASS);
        ASSERT_EQ(mx_kgate_verdict(gf, &d), MX_VERDICT_FAIL);
        j = json_object_get(d, "kernels");
        ASSERT_EQ(json_integer_value(json_object_get(j, "kernels")), 7);
        ASSERT_EQ(json_integer_value(json_object_get(j, "reports")), 1);
        ASSERT_CONTAINS(json_string_value(json_object_get(
                                json_array_get(json_object_get(j, "must_not_see"), 0), "subject")),
                        "void at::vectorized_elementwise_kernel<8, at::<unnamed>::silu_kernel(");
}

TEST(evidence_is_bounded_and_valid_utf8)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {};
        _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
        _cleanup_free_ char *line = xmalloc(5001);
        _cleanup_json_ json_t *d = NULL;
        _cleanup_free_ char *dump = NULL;
        const char bad_utf8[] = "needle \xff\xfe tail";
        const char *subject;

        memset(line, 'x', 5000);
        memcpy(line + 10, "needle", 6);
        line[5000] = '\0';
        mx_kgate_rules_add_must_see(&e.log, "needle");
        mx_kgate_rules_add_must_not_see(&e.log, "needle \xff");
        ASSERT_OK(mx_kgate_new(&e, &g, NULL));
        mx_kgate_feed_log_line(g, line, 5000);
        mx_kgate_feed_log_line(g, bad_utf8, strlen(bad_utf8));
        ASSERT_EQ(mx_kgate_verdict(g, &d), MX_VERDICT_FAIL);
        subject = json_string_value(json_object_get(
                json_array_get(json_object_get(json_object_get(d, "log"), "must_see"), 0), "subject"));
        ASSERT_NOT_NULL(subject);
        ASSERT_TRUE(endswith(subject, "…"));
        ASSERT_EQ(strlen(subject), MX_KGATE_EVIDENCE_MAX + strlen("…"));
        subject = json_string_value(json_object_get(
                json_array_get(json_object_get(json_object_get(d, "log"), "must_not_see"), 0), "subject"));
        ASSERT_STREQ(subject, "needle \\xff\\xfe tail");
        dump = json_dumps(d, 0);
        ASSERT_NOT_NULL(dump);
}

TEST(pattern_limits)
{
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect e = {};
        _cleanup_(mx_kgate_freep) struct mx_kgate *g = NULL;
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        struct mx_kgate_expect bad = {};

        for (int i = 0; i <= MX_KGATE_PATTERNS_MAX; i++)
                mx_kgate_rules_add_must_not_see(&e.kernels, "k");
        ASSERT_ERR(mx_kgate_new(&e, &g, &err), EINVAL);
        ASSERT_NULL(g);
        ASSERT_CONTAINS(err, "more than 1024 patterns");
        mx_kgate_rules_add_must_see(&bad.log, "ok");
        ASSERT_OK(mx_kgate_rules_add_alternative(&bad.log, "re:(("));
        ASSERT_ERR(mx_kgate_new(&bad, &g, &err2), EINVAL);
        ASSERT_CONTAINS(err2, "log must-see: pattern 're:((': ");
        mx_kgate_expect_done(&bad);
        ASSERT_TRUE(mx_kgate_expect_empty(&bad));
}

/* The live reports from the device check (tests/device/ncu-gate.sh on an H200, tests/fixtures/device). */
TEST(live_ncu_reports)
{
        static const struct {
                const char *file;
                enum mx_profreport_format format;
                double moe_ns, marlin_ns, mxfp8_ns; /* total durations */
        } reports[] = {
                { "ncu-live-details.csv", MX_PROFREPORT_NCU_DETAILS, 8256 + 8128 + 8128, 2656 + 2624, 2880 },
                { "ncu-live-summary.csv", MX_PROFREPORT_NCU_SUMMARY, 3 * 8085.33, 2 * 2624.00, 2784 },
                { "ncu-live-raw.csv", MX_PROFREPORT_NCU_RAW, 8128 + 8000 + 8032, 2656 + 2624, 2752 },
        };
        static const char *const moe = "void moe_gemm<float, 128, 64>(const T1 *, T1 *, int)";
        static const char *const marlin = "marlin_moe_dequant(const unsigned int *, float *, int)";
        static const char *const mxfp8 = "mx::mxfp8_quantize(const float *, unsigned char *, int)";
        _cleanup_(mx_kgate_expect_done) struct mx_kgate_expect pass = {}, fail = {};

        /* the expectations ncu-gate.sh used on the device */
        mx_kgate_rules_add_must_see(&pass.kernels, "moe_gemm<float, 128, 64>");
        mx_kgate_rules_add_must_see(&pass.kernels, "marlin_*");
        mx_kgate_rules_add_must_see(&pass.kernels, "re:mx::mxfp8_quantize\\(");
        mx_kgate_rules_add_must_not_see(&pass.kernels, "cutlass_*_moe");
        mx_kgate_rules_add_must_see(&fail.kernels, "cutlass_*_grouped_gemm");
        mx_kgate_rules_add_must_not_see(&fail.kernels, "marlin_*");
        for (size_t i = 0; i < ELEMENTSOF(reports); i++) {
                _cleanup_free_ char *rel = xasprintf("tests/fixtures/device/%s", reports[i].file);
                _cleanup_free_ char *path = test_source_path(rel);
                _cleanup_(mx_profreport_freep) struct mx_profreport *r = NULL;
                _cleanup_(mx_kgate_freep) struct mx_kgate *gp = NULL, *gf = NULL;
                _cleanup_json_ json_t *d = NULL;
                const struct mx_profreport_kernel *k;
                json_t *kernels;

                ASSERT_OK(mx_profreport_parse_file(path, MX_PROFREPORT_TOOL_ANY, &r, NULL));
                ASSERT_EQ(r->format, reports[i].format);
                ASSERT_EQ(r->n_kernels, 3);
                ASSERT_EQ(r->n_launches, 6);
                ASSERT_EQ(r->n_noise, 3);
                ASSERT_NOT_NULL(k = mx_profreport_find(r, moe));
                ASSERT_EQ(k->instances, 3);
                ASSERT_TRUE(fabs(k->total_ns - reports[i].moe_ns) < 0.02);
                ASSERT_NOT_NULL(k = mx_profreport_find(r, marlin));
                ASSERT_EQ(k->instances, 2);
                ASSERT_TRUE(fabs(k->total_ns - reports[i].marlin_ns) < 0.02);
                ASSERT_NOT_NULL(k = mx_profreport_find(r, mxfp8));
                ASSERT_EQ(k->instances, 1);
                ASSERT_TRUE(fabs(k->total_ns - reports[i].mxfp8_ns) < 0.02);

                ASSERT_OK(mx_kgate_new(&pass, &gp, NULL));
                ASSERT_OK(mx_kgate_new(&fail, &gf, NULL));
                mx_kgate_feed_report(gp, r);
                mx_kgate_feed_report(gf, r);
                ASSERT_EQ(mx_kgate_verdict(gp, NULL), MX_VERDICT_PASS);
                ASSERT_EQ(mx_kgate_verdict(gf, &d), MX_VERDICT_FAIL);
                kernels = json_object_get(d, "kernels");
                ASSERT_FALSE(json_is_true(json_object_get(
                        json_array_get(json_object_get(kernels, "must_see"), 0), "matched")));
                ASSERT_STREQ(
                        json_string_value(json_object_get(
                                json_array_get(json_object_get(kernels, "must_not_see"), 0), "subject")),
                        marlin);
        }
}
