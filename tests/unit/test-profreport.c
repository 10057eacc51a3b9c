/* SPDX-License-Identifier: MIT */
#include "test.h"

#include "profreport.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

#define FIXTURE "tests/fixtures/gpu-h200/"

/* Full kernel names from the real H200 reports (templates, commas, lambdas). */
#define K_NVJET "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
#define K_SOFTMAX                                                                                           \
        "void at::<unnamed>::cunn_SoftMaxForwardReg<float, float, float, "                                  \
        "at::<unnamed>::SoftMaxForwardEpilogue, "                                                           \
        "long, 4>(T3 *, const T1 *, T5)"
#define K_MUL                                                                                               \
        "void at::vectorized_elementwise_kernel<8, at::BinaryFunctor<c10::BFloat16, c10::BFloat16, "        \
        "c10::BFloat16, binary_internal::MulFunctor<float>>, std::array<char *, 3>>(int, T2, T3)"
#define K_REDUCE                                                                                            \
        "void at::reduce_kernel<512, 1, at::ReduceOp<float, at::func_wrapper_t<float, "                     \
        "at::sum_functor<float, "                                                                           \
        "float, float>::operator ()(at::TensorIterator &)::[lambda(float, float) (instance 1)]>, unsigned " \
        "int, "                                                                                             \
        "float, 4, 4>>(T3)"
#define K_DIST_PREFIX                                                                                       \
        "void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4, void templates::"
#define K_DIST_SUFFIX "::[lambda(int, float) (instance 1)]>(long, at::PhiloxCudaState, T3, T4)"

#define ASSERT_NEAR(a, b, eps)                                                                              \
        do {                                                                                                \
                double _a = (a), _b = (b);                                                                  \
                if (!(fabs(_a - _b) <= (eps)))                                                              \
                        test_fail(__FILE__, __LINE__, "%s ~ %s: %.6f != %.6f", #a, #b, _a, _b);             \
        } while (0)

static struct mx_profreport *parse_ok(const char *text, enum mx_profreport_tool tool)
{
        struct mx_profreport *r = NULL;
        _cleanup_free_ char *err = NULL;
        int k = mx_profreport_parse_buffer(text, strlen(text), tool, &r, &err);

        if (k < 0)
                test_fail(__FILE__, __LINE__, "parse failed: %d: %s", k, strna(err));
        return r;
}

/* Parse text that must fail with err; returns the reason. */
static char *parse_err(const char *text, enum mx_profreport_tool tool, int err)
{
        struct mx_profreport *r = NULL;
        char *why = NULL;

        ASSERT_ERR(mx_profreport_parse_buffer(text, strlen(text), tool, &r, &why), err);
        ASSERT_NULL(r);
        ASSERT_NOT_NULL(why);
        return why;
}

static struct mx_profreport *parse_fixture(const char *name)
{
        _cleanup_free_ char *path = test_source_path(name);
        struct mx_profreport *r = NULL;
        _cleanup_free_ char *err = NULL;

        if (mx_profreport_parse_file(path, MX_PROFREPORT_TOOL_ANY, &r, &err) < 0)
                test_fail(__FILE__, __LINE__, "%s", err);
        return r;
}

static const struct mx_profreport_kernel *find_prefix(const struct mx_profreport *r, const char *prefix,
                                                      const char *suffix)
{
        for (size_t i = 0; i < r->n_kernels; i++)
                if (startswith(r->kernels[i].name, prefix) && endswith(r->kernels[i].name, suffix))
                        return &r->kernels[i];
        return NULL;
}

TEST(ncu_details_real)
{
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_fixture(FIXTURE "ncu-details.csv");
        const struct mx_profreport_kernel *k;
        const struct mx_profreport_metric *m;

        ASSERT_EQ(r->format, MX_PROFREPORT_NCU_DETAILS);
        ASSERT_EQ(r->n_kernels, 7);
        ASSERT_EQ(r->n_launches, 18); /* IDs 0..17 */
        ASSERT_EQ(r->n_rows, 943);
        ASSERT_EQ(r->n_noise, 3); /* two ==PROF== lines and the program's "ok 4096.0" */
        ASSERT_EQ(r->decimal_sep, '.');
        ASSERT_EQ(r->group_sep, ',');

        /* durations "219,776" + "218,272" + "223,424" ns */
        k = mx_profreport_find(r, K_NVJET);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 3);
        ASSERT_EQ(k->n_timed, 3);
        ASSERT_NEAR(k->total_ns, 661472, 1e-6);
        ASSERT_NEAR(k->min_ns, 218272, 1e-6);
        ASSERT_NEAR(k->max_ns, 223424, 1e-6);
        ASSERT_EQ(k->n_metrics, 47);
        m = mx_profreport_kernel_metric(k, "DRAM Frequency");
        ASSERT_NOT_NULL(m);
        ASSERT_STREQ(m->unit, "hz");
        ASSERT_STREQ(m->section, "GPU Speed Of Light Throughput");
        ASSERT_EQ(m->n, 3);
        ASSERT_NEAR(m->sum / (double)m->n, (3199233158.61 + 3199078825.20 + 3198987873.58) / 3, 1e-3);
        ASSERT_NEAR(m->min, 3198987873.58, 1e-3);

        k = mx_profreport_find(r, K_SOFTMAX);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 3);
        ASSERT_NEAR(k->total_ns, 97760 + 98144 + 97792, 1e-6);
        k = mx_profreport_find(r, K_MUL);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 3);
        k = mx_profreport_find(r, K_REDUCE);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 1);
        ASSERT_NEAR(mx_profreport_kernel_avg_ns(k), 25024, 1e-6);

        /* the 1299-byte name with eight commas inside the quotes, first in the file */
        k = find_prefix(r, K_DIST_PREFIX, K_DIST_SUFFIX);
        ASSERT_NOT_NULL(k);
        ASSERT_TRUE(k == &r->kernels[0]);
        ASSERT_EQ(strlen(k->name), 1299);
        ASSERT_EQ(k->instances, 2);
        ASSERT_NEAR(k->total_ns, 56288 + 56352, 1e-6);
        ASSERT_TRUE(mx_profreport_find(r, k->name) == k);
        ASSERT_NULL(mx_profreport_find(r, "nvjet"));
}

TEST(ncu_summary_real)
{
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_fixture(FIXTURE "ncu-summary.csv");
        const struct mx_profreport_kernel *k;
        const struct mx_profreport_metric *m;

        ASSERT_EQ(r->format, MX_PROFREPORT_NCU_SUMMARY);
        ASSERT_EQ(r->n_kernels, 7);
        ASSERT_EQ(r->n_launches, 18);
        ASSERT_EQ(r->n_noise, 3);
        k = mx_profreport_find(r, K_NVJET);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 3);
        ASSERT_NEAR(mx_profreport_kernel_avg_ns(k), 221493.33, 1e-6);
        ASSERT_NEAR(k->min_ns, 219968, 1e-6);
        ASSERT_NEAR(k->max_ns, 222944, 1e-6);
        m = mx_profreport_kernel_metric(k, "SM Frequency");
        ASSERT_NOT_NULL(m);
        ASSERT_EQ(m->n, 3);
        ASSERT_NEAR(m->sum / 3, 1269577578.96, 1e-3);
        ASSERT_NEAR(m->max, 1279701479.31, 1e-3);
        k = mx_profreport_find(r, K_REDUCE);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 1);
        ASSERT_NEAR(k->total_ns, 24352, 1e-6);
        k = find_prefix(r, K_DIST_PREFIX, K_DIST_SUFFIX);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 2);
        ASSERT_NEAR(k->total_ns, 2 * 56368, 1e-6);
}

/*
 * Rewrite the numbers inside quoted fields of an en-locale report ("1,269,577,578.96") with
 * another locale's separators, leaving every other field (kernel names, "(384, 1, 1)") alone.
 */
static char *relocalise(const char *text, const char *group, char decimal)
{
        struct mx_buf b = MX_BUF_INIT;

        for (const char *p = text; *p;) {
                const char *end;
                bool number = true;

                if (*p != '"') {
                        mx_buf_putc(&b, *p++);
                        continue;
                }
                end = strchr(p + 1, '"');
                ASSERT_NOT_NULL(end);
                for (const char *q = p + 1; q < end; q++)
                        number &= (*q >= '0' && *q <= '9') || *q == ',' || *q == '.';
                mx_buf_putc(&b, '"');
                for (const char *q = p + 1; q < end; q++) {
                        if (number && *q == ',')
                                mx_buf_puts(&b, group);
                        else if (number && *q == '.')
                                mx_buf_putc(&b, decimal);
                        else
                                mx_buf_putc(&b, *q);
                }
                mx_buf_putc(&b, '"');
                p = end + 1;
        }
        return mx_buf_steal(&b);
}

TEST(ncu_locales_real)
{
        static const struct {
                const char *group;
                char decimal;
                char want_group;
        } locales[] = {
                { ".", ',', '.' },            /* de_DE: 1.269.577.578,96 */
                { " ", ',', ' ' },            /* fr_FR with plain spaces */
                { "\xe2\x80\xaf", ',', ' ' }, /* fr_FR with U+202F */
                { "\xc2\xa0", '.', ' ' },     /* U+00A0 and a decimal point */
                { "'", '.', ' ' },            /* de_CH: 1'269'577'578.96 */
        };
        const char *files[] = { FIXTURE "ncu-summary.csv", FIXTURE "ncu-details.csv" };

        for (size_t f = 0; f < ELEMENTSOF(files); f++) {
                _cleanup_(mx_profreport_freep) struct mx_profreport *en = parse_fixture(files[f]);
                _cleanup_free_ char *path = test_source_path(files[f]);
                _cleanup_free_ char *text = test_read_file(path, NULL);

                for (size_t i = 0; i < ELEMENTSOF(locales); i++) {
                        _cleanup_free_ char *loc = relocalise(text, locales[i].group, locales[i].decimal);
                        _cleanup_(mx_profreport_freep) struct mx_profreport *r =
                                parse_ok(loc, MX_PROFREPORT_TOOL_NCU);

                        ASSERT_EQ(r->decimal_sep, locales[i].decimal);
                        ASSERT_EQ(r->group_sep, locales[i].want_group);
                        ASSERT_EQ(r->n_kernels, en->n_kernels);
                        for (size_t k = 0; k < r->n_kernels; k++) {
                                ASSERT_STREQ(r->kernels[k].name, en->kernels[k].name);
                                ASSERT_EQ(r->kernels[k].instances, en->kernels[k].instances);
                                ASSERT_NEAR(r->kernels[k].total_ns, en->kernels[k].total_ns, 1e-6);
                                ASSERT_EQ(r->kernels[k].n_metrics, en->kernels[k].n_metrics);
                        }
                }
        }
}

TEST(parse_number)
{
        static const struct {
                const char *s;
                double want;
                char dec, grp; /* what the format learns from a fresh start */
        } ok[] = {
                { "1,215,000,000.00", 1215000000, '.', ',' },
                { "1.215.000.000,00", 1215000000, ',', '.' },
                { "1 215 000 000,00", 1215000000, ',', ' ' },
                { "1\xc2\xa0"
                  "215\xc2\xa0"
                  "000,5",
                  1215000.5, ',', ' ' },
                { "1\xe2\x80\xaf"
                  "215",
                  1215, 0, ' ' },
                { "1'215'000.25", 1215000.25, '.', ' ' },
                { "56,288", 56288, 0, 0 }, /* ambiguous: read as grouped, teaches nothing */
                { "0,125", 0.125, ',', 0 },
                { "1234,5", 1234.5, ',', 0 },
                { "69.82", 69.82, '.', 0 },
                { "1,234,567", 1234567, '.', ',' },
                { "  42  ", 42, 0, 0 },
                { "-2.5", -2.5, '.', 0 },
                { "+7", 7, 0, 0 },
                { "1.5e3", 1500, '.', 0 },
                { "2E-2", 0.02, 0, 0 },
        };
        static const char *const bad[] = {
                "",   "n/a",    "-",    "1,",      ",5",  "1..2", "1,2.3,4", "12,34,567", "1234,567,890",
                "1e", "1.5e3x", "0x10", "1,234e5", "inf", "nan",  "12 ab",
        };

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                struct mx_numfmt fmt = {};
                double v = -1;

                if (mx_profreport_parse_number(ok[i].s, &fmt, &v) < 0)
                        test_fail(__FILE__, __LINE__, "'%s' did not parse", ok[i].s);
                ASSERT_NEAR(v, ok[i].want, 1e-9 * fabs(ok[i].want));
                ASSERT_EQ(fmt.decimal, ok[i].dec);
                ASSERT_EQ(fmt.group, ok[i].grp);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct mx_numfmt fmt = {};
                double v = 99;

                if (mx_profreport_parse_number(bad[i], &fmt, &v) != -EINVAL)
                        test_fail(__FILE__, __LINE__, "'%s' parsed", bad[i]);
                ASSERT_NEAR(v, 99, 0); /* untouched */
        }
}

TEST(parse_number_file_format)
{
        struct mx_numfmt en = {}, de = {}, fr = {};
        double v;

        /* the first unambiguous number fixes the format; ambiguous ones follow it */
        ASSERT_OK(mx_profreport_parse_number("3,196,513,170.36", &en, &v));
        ASSERT_OK(mx_profreport_parse_number("56.288", &en, &v));
        ASSERT_NEAR(v, 56.288, 1e-12);
        ASSERT_OK(mx_profreport_parse_number("56,288", &en, &v));
        ASSERT_NEAR(v, 56288, 0);
        ASSERT_ERR(mx_profreport_parse_number("1.234,5", &en, &v), EDOM);
        ASSERT_ERR(mx_profreport_parse_number("12,5", &en, &v), EDOM);

        ASSERT_OK(mx_profreport_parse_number("3.196.513.170,36", &de, &v));
        ASSERT_OK(mx_profreport_parse_number("56.288", &de, &v));
        ASSERT_NEAR(v, 56288, 0);
        ASSERT_OK(mx_profreport_parse_number("56,288", &de, &v));
        ASSERT_NEAR(v, 56.288, 1e-12);
        ASSERT_ERR(mx_profreport_parse_number("1,234.5", &de, &v), EDOM);

        ASSERT_OK(mx_profreport_parse_number("3 196 513 170,36", &fr, &v));
        ASSERT_OK(mx_profreport_parse_number("56,288", &fr, &v));
        ASSERT_NEAR(v, 56.288, 1e-12);
        ASSERT_ERR(mx_profreport_parse_number("1.5", &fr, &v), EDOM);
}

#define NSYS_NOISE                                                                                          \
        "Generating SQLite file report.sqlite from report.nsys-rep\n"                                       \
        "NOTICE: Existing SQLite export found: report.sqlite\n"                                             \
        "Processing [report.sqlite] with [/opt/nvidia/nsight-systems/2025.3.1/host-linux-x64/reports/"      \
        "cuda_gpu_kern_sum.py]... \n"                                                                       \
        "\n"                                                                                                \
        " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n"                                                \
        "\n"

#define K_MARLIN                                                                                            \
        "void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)5, 256, 1, 8, 4, 8, true, 4, 1>(const int4 *, "  \
        "int4 *)"

TEST(nsys_kern_sum)
{
        const char *text = NSYS_NOISE
                "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
                "62.5,1250000,100,12500.0,12400.0,12000,14000,300.5,\"" K_MARLIN "\"\n"
                "30.0,600000,50,12000.0,12000.0,11000,13000,100.0,mxfp8_quantize_kernel\n"
                "NOTICE: a line among the rows\n"
                "7.5,150000,1,150000.0,150000.0,150000,150000,0.0,\"void k<\"\"q\"\", 2>(int, int)\"\n"
                "\n";
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_ok(text, MX_PROFREPORT_TOOL_ANY);
        const struct mx_profreport_kernel *k;

        ASSERT_EQ(r->format, MX_PROFREPORT_NSYS_KERN_SUM);
        ASSERT_EQ(r->n_kernels, 3);
        ASSERT_EQ(r->n_launches, 151);
        ASSERT_EQ(r->n_noise, 8);
        k = mx_profreport_find(r, K_MARLIN);
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 100);
        ASSERT_NEAR(k->total_ns, 1250000, 0);
        ASSERT_NEAR(k->min_ns, 12000, 0);
        ASSERT_NEAR(k->max_ns, 14000, 0);
        ASSERT_NEAR(mx_profreport_kernel_avg_ns(k), 12500, 0);
        ASSERT_NOT_NULL(mx_profreport_find(r, "mxfp8_quantize_kernel"));
        k = mx_profreport_find(r, "void k<\"q\", 2>(int, int)");
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->n_metrics, 0);
}

TEST(nsys_kern_sum_timeunit_and_old_headers)
{
        /* --timeunit us */
        const char *us =
                "Time (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Name\n"
                "100.0,1250.5,100,12.505,12.4,12.0,14.25,0.3,gemv_fp4_sm120_kernel\n";
        /* nsys 2022.4 gpukernsum: rows per (name, grid), aggregated by name */
        const char *grid =
                "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),"
                "GridXYZ,BlockXYZ,Name\n"
                "60.0,600000,40,15000.0,15000.0,14000,16000,10.0,  128    1    1,  256    1    1,"
                "cutlass_sm90_grouped_gemm_kernel\n"
                "30.0,300000,20,15000.0,15000.0,13000,17000,10.0,   64    1    1,  256    1    1,"
                "cutlass_sm90_grouped_gemm_kernel\n"
                "10.0,100000,5,20000.0,20000.0,20000,20000,0.0,    1    1    1,   32    1    1,other\n";
        /* older still: unit-less statistics columns */
        const char *old = "Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n"
                          "100.0,3000,3,1000.0,900,1100,\"fused_moe_kernel<float, 8>\"\n";
        _cleanup_(mx_profreport_freep) struct mx_profreport *a = parse_ok(us, MX_PROFREPORT_TOOL_NSYS);
        _cleanup_(mx_profreport_freep) struct mx_profreport *b = parse_ok(grid, MX_PROFREPORT_TOOL_ANY);
        _cleanup_(mx_profreport_freep) struct mx_profreport *c = parse_ok(old, MX_PROFREPORT_TOOL_ANY);
        const struct mx_profreport_kernel *k;

        ASSERT_NEAR(a->kernels[0].total_ns, 1250500, 1e-6);
        ASSERT_NEAR(a->kernels[0].min_ns, 12000, 1e-6);
        ASSERT_NEAR(a->kernels[0].max_ns, 14250, 1e-6);

        ASSERT_EQ(b->format, MX_PROFREPORT_NSYS_KERN_SUM);
        ASSERT_EQ(b->n_kernels, 2);
        k = mx_profreport_find(b, "cutlass_sm90_grouped_gemm_kernel");
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 60);
        ASSERT_NEAR(k->total_ns, 900000, 0);
        ASSERT_NEAR(k->min_ns, 13000, 0);
        ASSERT_NEAR(k->max_ns, 17000, 0);

        ASSERT_EQ(c->format, MX_PROFREPORT_NSYS_KERN_SUM);
        ASSERT_EQ(c->kernels[0].instances, 3);
        ASSERT_NEAR(c->kernels[0].min_ns, 900, 0);
        ASSERT_STREQ(c->kernels[0].name, "fused_moe_kernel<float, 8>");
}

TEST(nsys_gpu_trace)
{
        const char *text =
                "Processing [report.sqlite] with [cuda_gpu_trace.py]...\n"
                "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem "
                "(MB),"
                "Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n"
                "1000,5000,1,,,,,,,,,,4.194,838.8,Pageable,Device,NVIDIA H200 (0),1,,7,[CUDA memcpy "
                "Host-to-Device]\n"
                "7000,1200,2,128,1,1,256,1,1,64,0.000,0.049,,,,,NVIDIA H200 (0),1,,7,"
                "\"void gemv_fp4_kernel<float, 4>(const float *, int)\"\n"
                "9000,1300,3,128,1,1,256,1,1,64,0.000,0.049,,,,,NVIDIA H200 (0),1,,7,"
                "\"void gemv_fp4_kernel<float, 4>(const float *, int)\"\n"
                "11000,800,4,,,,,,,,,,0.5,625.0,Device,,NVIDIA H200 (0),1,,7,[CUDA memset]\n"
                "12000,700,5,1,1,1,32,1,1,16,0.000,0.000,,,,,NVIDIA H200 (0),1,,7,mxfp8_quantize\n";
        /* older: Throughput (MBps), no GreenCtx, microseconds */
        const char *old =
                "Start (us),Duration (us),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),"
                "DymSMem (MB),Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name\n"
                "1.0,2.5,1,1,1,1,32,1,1,16,0.0,0.0,,,,,GPU 0,1,7,marlin_gemm\n"
                "4.0,3.5,2,1,1,1,32,1,1,16,0.0,0.0,,,,,GPU 0,1,7,marlin_gemm\n";
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_ok(text, MX_PROFREPORT_TOOL_ANY);
        _cleanup_(mx_profreport_freep) struct mx_profreport *o = parse_ok(old, MX_PROFREPORT_TOOL_NSYS);
        const struct mx_profreport_kernel *k;

        ASSERT_EQ(r->format, MX_PROFREPORT_NSYS_GPU_TRACE);
        ASSERT_EQ(r->n_kernels, 2);
        ASSERT_EQ(r->n_skipped, 2);
        ASSERT_EQ(r->n_rows, 5);
        ASSERT_NULL(mx_profreport_find(r, "[CUDA memset]"));
        k = mx_profreport_find(r, "void gemv_fp4_kernel<float, 4>(const float *, int)");
        ASSERT_NOT_NULL(k);
        ASSERT_EQ(k->instances, 2);
        ASSERT_NEAR(k->total_ns, 2500, 0);
        ASSERT_NEAR(k->min_ns, 1200, 0);
        ASSERT_NEAR(k->max_ns, 1300, 0);

        ASSERT_EQ(o->format, MX_PROFREPORT_NSYS_GPU_TRACE);
        ASSERT_EQ(o->kernels[0].instances, 2);
        ASSERT_NEAR(o->kernels[0].total_ns, 6000, 1e-9);
}

#define NCU_HDR                                                                                             \
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel "                                    \
        "Name\",\"Context\",\"Stream\",\"Block Size\","                                                     \
        "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric "        \
        "Value\"\n"
#define NCU_ROW(id, kernel, metric, unit, value)                                                            \
        "\"" id "\",\"77\",\"app\",\"127.0.0.1\",\"" kernel                                                 \
        "\",\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\","                                              \
        "\"9.0\",\"GPU Speed Of Light Throughput\",\"" metric "\",\"" unit "\",\"" value "\"\n"

TEST(ncu_details_synthetic)
{
        /* Duration units vary per launch; n/a values are skipped; IDs group rows into launches */
        const char *text =
                "==PROF== Connected to process 77 (/tmp/app)\n"
                "==PROF== Profiling \"moe_gemm\" - 0: 0%....50%....100% - 9 passes\n"
                "==WARNING== Found outstanding GPU clock reset, trying to revert...Success.\n" NCU_HDR
                        NCU_ROW("0", "void moe_gemm<float, 128, 64>(const float *, float *, int)",
                                "DRAM Frequency", "hz", "1,215,000,000.00")
                                NCU_ROW("0", "void moe_gemm<float, 128, 64>(const float *, float *, int)",
                                        "Duration", "usecond", "12.50")
                                        NCU_ROW("0",
                                                "void moe_gemm<float, 128, 64>(const float *, float *, int)",
                                                "L2 Hit Rate", "%",
                                                "n/a") NCU_ROW("1",
                                                               "void moe_gemm<float, 128, 64>(const float "
                                                               "*, float *, int)",
                                                               "Duration", "ns", "13,500")
                                                NCU_ROW("2", "plain_kernel", "Duration", "msecond", "1.5");
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_ok(text, MX_PROFREPORT_TOOL_NCU);
        const struct mx_profreport_kernel *k;

        ASSERT_EQ(r->format, MX_PROFREPORT_NCU_DETAILS);
        ASSERT_EQ(r->n_noise, 3);
        ASSERT_EQ(r->n_kernels, 2);
        k = &r->kernels[0];
        ASSERT_STREQ(k->name, "void moe_gemm<float, 128, 64>(const float *, float *, int)");
        ASSERT_EQ(k->instances, 2);
        ASSERT_NEAR(k->total_ns, 12500 + 13500, 1e-6);
        ASSERT_NULL(mx_profreport_kernel_metric(k, "L2 Hit Rate"));
        ASSERT_EQ(r->kernels[1].instances, 1);
        ASSERT_NEAR(r->kernels[1].total_ns, 1.5e6, 1e-6);
}

TEST(ncu_details_old_columns)
{
        /* an older ncu: "Kernel Time" column, --metrics gpu__time_duration.sum in nsecond */
        const char *text =
                "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel "
                "Time\",\"Context\","
                "\"Stream\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                "\"0\",\"20798\",\"gemm\",\"127.0.0.1\",\"ampere_h16816gemm_256x128_ldg8_stages_32x3_tn\","
                "\"2024-Nov-13 18:14:36\",\"1\",\"7\",\"Command line profiler "
                "metrics\",\"gpu__time_duration.sum\","
                "\"nsecond\",\"152,192\"\n"
                "\"1\",\"20798\",\"gemm\",\"127.0.0.1\",\"ampere_h16816gemm_256x128_ldg8_stages_32x3_tn\","
                "\"2024-Nov-13 18:14:37\",\"1\",\"7\",\"Command line profiler "
                "metrics\",\"gpu__time_duration.sum\","
                "\"usecond\",\"150.50\"\n";
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_ok(text, MX_PROFREPORT_TOOL_ANY);

        ASSERT_EQ(r->format, MX_PROFREPORT_NCU_DETAILS);
        ASSERT_EQ(r->n_kernels, 1);
        ASSERT_EQ(r->kernels[0].instances, 2);
        ASSERT_NEAR(r->kernels[0].total_ns, 152192 + 150500, 1e-6);
}

TEST(ncu_raw_page)
{
        const char *text =
                "==PROF== Connected to process 1234 (/tmp/kernels)\n"
                "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel "
                "Name\",\"Context\",\"Stream\","
                "\"Block Size\",\"Grid "
                "Size\",\"Device\",\"CC\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\","
                "\"sm__throughput.avg.pct_of_peak_sustained_elapsed\"\n"
                "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"Mbyte\",\"usecond\",\"%\"\n"
                "\"0\",\"1234\",\"kernels\",\"127.0.0.1\",\"void moe_gemm<float, 128, 64>(const float *, "
                "float *, int)\","
                "\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"1.05\",\"12.50\",\"80.12\"\n"
                "\"1\",\"1234\",\"kernels\",\"127.0.0.1\",\"void moe_gemm<float, 128, 64>(const float *, "
                "float *, int)\","
                "\"1\",\"7\",\"(128, 1, 1)\",\"(64, 1, 1)\",\"0\",\"9.0\",\"1.10\",\"13.50\",\"81.00\"\n"
                "\"2\",\"1234\",\"kernels\",\"127.0.0.1\",\"marlin_fake_kernel(int)\","
                "\"1\",\"7\",\"(32, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"n/a\",\"2.00\",\"5.00\"\n";
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_ok(text, MX_PROFREPORT_TOOL_ANY);
        const struct mx_profreport_metric *m;

        ASSERT_EQ(r->format, MX_PROFREPORT_NCU_RAW);
        ASSERT_EQ(r->n_rows, 3);
        ASSERT_EQ(r->n_kernels, 2);
        ASSERT_EQ(r->kernels[0].instances, 2);
        ASSERT_NEAR(r->kernels[0].total_ns, 26000, 1e-6);
        ASSERT_EQ(r->kernels[0].n_metrics, 3);
        m = mx_profreport_kernel_metric(&r->kernels[0], "dram__bytes_read.sum");
        ASSERT_NOT_NULL(m);
        ASSERT_STREQ(m->unit, "Mbyte");
        ASSERT_NEAR(m->sum, 2.15, 1e-9);
        ASSERT_EQ(r->kernels[1].n_metrics, 2);
        ASSERT_NEAR(r->kernels[1].total_ns, 2000, 1e-6);
}

TEST(no_header)
{
        _cleanup_free_ char *a = parse_err("hello\nworld, again\n", MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *b = parse_err("", MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *path = test_source_path(FIXTURE "ncu-details.csv");
        _cleanup_free_ char *text = test_read_file(path, NULL);
        _cleanup_free_ char *c = parse_err(text, MX_PROFREPORT_TOOL_NSYS, EBADMSG);
        const char garbage[] = "\x00\xff\x01\"\"\",,,\x7f\n\x00\x00\n";
        struct mx_profreport *r = NULL;
        _cleanup_free_ char *d = NULL;

        ASSERT_CONTAINS(a, "no profiler report header in 2 lines");
        ASSERT_CONTAINS(
                a, "tried: nsys cuda_gpu_kern_sum (gpukernsum); nsys cuda_gpu_trace (gputrace); "
                   "ncu --csv details page; ncu --csv --print-summary per-kernel; ncu --csv --page raw");
        ASSERT_CONTAINS(b, "in 0 lines");
        ASSERT_CONTAINS(c, "(tried: nsys cuda_gpu_kern_sum (gpukernsum); nsys cuda_gpu_trace (gputrace))");
        ASSERT_ERR(mx_profreport_parse_buffer(garbage, sizeof(garbage) - 1, MX_PROFREPORT_TOOL_ANY, &r, &d),
                   EBADMSG);
        ASSERT_CONTAINS(d, "no profiler report header in 2 lines");
}

TEST(malformed_rows)
{
        const char *hdr =
                "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n";
        _cleanup_free_ char *t1 = xasprintf("%s1,2,3,4,5,6,7,8,name,extra\n", hdr);
        _cleanup_free_ char *t2 = xasprintf("noise\n%s1,2\n", hdr);
        _cleanup_free_ char *t3 = xasprintf("%s1,100,abc,4,5,6,7,8,name\n", hdr);
        _cleanup_free_ char *t4 = xasprintf("%s1,100,1.5,4,5,6,7,8,name\n", hdr);
        _cleanup_free_ char *t5 = xasprintf("%s1,100,2,4,5,6,7,8,\n", hdr);
        _cleanup_free_ char *e1 = parse_err(t1, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e2 = parse_err(t2, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e3 = parse_err(t3, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e4 = parse_err(t4, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e5 = parse_err(t5, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e6 = parse_err("Time (%),Total Time (fortnights),Instances,Name\n",
                                            MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e7 = parse_err(NCU_HDR "\"0\",\"77\",\"app\",\"127.0.0.1\",\"void k<float,\n",
                                            MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e8 =
                parse_err(NCU_HDR NCU_ROW("0", "k", "DRAM Frequency", "hz", "1,215,000,000.00")
                                  NCU_ROW("0", "k", "Duration", "ns", "56.288,5"),
                          MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e9 = parse_err(NCU_HDR NCU_ROW("0", "k", "Duration", "ns", "5")
                                                    NCU_ROW("0", "other", "Duration", "ns", "5"),
                                            MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e10 = parse_err(NCU_HDR "\"0\",\"x\"y\n", MX_PROFREPORT_TOOL_ANY, EBADMSG);

        ASSERT_CONTAINS(e1, "line 2: 10 fields, but the header on line 1 has 9");
        ASSERT_CONTAINS(e2, "line 3: 2 fields, too few to reach column 'Instances' (field 3)");
        ASSERT_CONTAINS(e3, "line 2, column 'Instances': 'abc' is not a number");
        ASSERT_CONTAINS(e4, "line 2, column 'Instances': '1.5' is not a count");
        ASSERT_CONTAINS(e5, "line 2, column 'Name': '' is an empty kernel name");
        ASSERT_CONTAINS(e6, "line 1: column 'Total Time (fortnights)': unknown time unit");
        ASSERT_CONTAINS(e7, "line 2: field 5 of the record started on line 2");
        ASSERT_CONTAINS(e7, "not closed");
        ASSERT_CONTAINS(
                e8, "line 3, column 'Metric Value': '56.288,5' does not follow this file's number format "
                    "(',' groups digits, '.' marks decimals)");
        ASSERT_CONTAINS(e9, "line 3: launch ID '0' names a different kernel");
        ASSERT_CONTAINS(e10, "line 2, field 2: 'y' after the closing quote");
}

TEST(kernel_limit)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        _cleanup_free_ char *err = NULL;
        struct mx_profreport *r = NULL;

        mx_buf_puts(&b, "Start (ns),Duration (ns),Name\n");
        for (int i = 0; i <= MX_PROFREPORT_KERNELS_MAX; i++)
                mx_buf_printf(&b, "%d,1,kernel_%d\n", i, i);
        ASSERT_ERR(mx_profreport_parse_buffer(b.data, b.len, MX_PROFREPORT_TOOL_ANY, &r, &err), E2BIG);
        ASSERT_CONTAINS(err, "line 65538: more than 65536 distinct kernels");
}

TEST(files)
{
        _cleanup_free_ char *missing = xasprintf("%s/nope.csv", test_tmpdir());
        _cleanup_free_ char *path = xasprintf("%s/report.csv", test_tmpdir());
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = NULL;
        struct mx_profreport *none = NULL;

        ASSERT_ERR(mx_profreport_parse_file(missing, MX_PROFREPORT_TOOL_ANY, &none, &err), ENOENT);
        ASSERT_CONTAINS(err, "nope.csv: No such file or directory");
        test_write_file(path, "x\r\nStart (ns),Duration (ns),Name\r\n1,5,\"a, b\"\r\n9,row,c\r\n");
        ASSERT_ERR(mx_profreport_parse_file(path, MX_PROFREPORT_TOOL_ANY, &none, &err2), EBADMSG);
        ASSERT_CONTAINS(err2, "report.csv: line 4, column 'Duration (ns)': 'row' is not a number");
        test_write_file(path, "x\r\nStart (ns),Duration (ns),Name\r\n1,5,\"a, b\"\r\n");
        ASSERT_OK(mx_profreport_parse_file(path, MX_PROFREPORT_TOOL_ANY, &r, NULL));
        ASSERT_STREQ(r->kernels[0].name, "a, b");
}

/* A kernel time strtod() reads but no sum holds (1e300), Inf, NaN, negative, or a report whose times add up past
 * MX_PROFREPORT_TIME_MAX_NS: refused with the line and column, never summed (dprof.c adds picoseconds). */
TEST(absurd_times)
{
        const char *hdr =
                "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n";
        _cleanup_free_ char *t1 = xasprintf("%s1,1e300,3,4,5,6,7,8,k\n", hdr);
        _cleanup_free_ char *t2 = xasprintf("%s1,100,3,4,5,6,7,8,a\n1,-5,3,4,5,6,7,8,k\n", hdr);
        _cleanup_free_ char *t3 = xasprintf("%s1,100,3,4,5,6,1e400,8,k\n", hdr);
        /* each row fits, their sum does not: 6e14 + 6e14 ns */
        const char *t4 = "Start (ns),Duration (ns),Name\n1,600000000000000,a\n2,600000000000000,b\n";
        _cleanup_free_ char *e1 = parse_err(t1, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e2 = parse_err(t2, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e3 = parse_err(t3, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e4 = parse_err(t4, MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *e5 = parse_err(NCU_HDR NCU_ROW("0", "k", "Duration", "nsecond", "1e300"),
                                            MX_PROFREPORT_TOOL_ANY, EBADMSG);
        _cleanup_free_ char *path = xasprintf("%s/absurd.csv", test_tmpdir());
        _cleanup_free_ char *e6 = NULL;
        struct mx_profreport *none = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = NULL;

        ASSERT_CONTAINS(e1, "line 2, column 'Total Time (ns)': '1e300' is an absurd kernel time");
        ASSERT_CONTAINS(e1, "more than 1e+15 ns (11.6 days)");
        ASSERT_CONTAINS(e2, "line 3, column 'Total Time (ns)': '-5' is not a kernel time");
        ASSERT_CONTAINS(e3, "line 2, column 'Max (ns)': '1e400' is not a kernel time (not finite, or negative)");
        ASSERT_CONTAINS(e4, "line 3, column 'Duration (ns)': '600000000000000' is an absurd kernel time");
        ASSERT_CONTAINS(e5, "line 2, column 'Metric Value': '1e300' is an absurd kernel time");
        /* in a file: file and line */
        test_write_file(path, t1);
        ASSERT_ERR(mx_profreport_parse_file(path, MX_PROFREPORT_TOOL_ANY, &none, &e6), EBADMSG);
        ASSERT_CONTAINS(e6, "absurd.csv: line 2, column 'Total Time (ns)': '1e300'");
        /* just under the bound still parses */
        r = parse_ok("Start (ns),Duration (ns),Name\n1,900000000000000,a\n", MX_PROFREPORT_TOOL_ANY);
        ASSERT_NEAR(r->kernels[0].total_ns, 9e14, 0);
}

/* The daemon's read (mx_profreport_parse_regular()): a FIFO is refused at once, not waited on; a file past
 * the bound is refused by its size, and one that grows past it while read is cut at the bound; a symbolic
 * link is not followed. */
TEST(regular_files_only)
{
        _cleanup_free_ char *fifo = xasprintf("%s/fifo.csv", test_tmpdir());
        _cleanup_free_ char *big = xasprintf("%s/big.csv", test_tmpdir());
        _cleanup_free_ char *link = xasprintf("%s/link.csv", test_tmpdir());
        _cleanup_free_ char *ok = xasprintf("%s/ok.csv", test_tmpdir());
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL, *e5 = NULL;
        const char *text = "Start (ns),Duration (ns),Name\n1,5,a\n2,6,b\n";
        struct mx_profreport *none = NULL;
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = NULL;
        _cleanup_close_ int fd = -1;

        ASSERT_OK(mkfifo(fifo, 0600));
        ASSERT_ERR(mx_profreport_parse_regular(fifo, MX_PROFREPORT_FILE_MAX, MX_PROFREPORT_TOOL_ANY, &none, &e1),
                   EINVAL);
        ASSERT_CONTAINS(e1, "fifo.csv: is a FIFO, not a regular file");
        test_write_file(big, "x");
        ASSERT_OK(truncate(big, (off_t)MX_PROFREPORT_FILE_MAX + 1));
        ASSERT_ERR(mx_profreport_parse_regular(big, MX_PROFREPORT_FILE_MAX, MX_PROFREPORT_TOOL_ANY, &none, &e2),
                   EFBIG);
        ASSERT_CONTAINS(e2, "big.csv: 67108865 bytes, which exceeds the limit of 67108864 bytes");
        test_write_file(ok, text);
        ASSERT_OK(symlink(ok, link));
        ASSERT_ERR(mx_profreport_parse_regular(link, MX_PROFREPORT_FILE_MAX, MX_PROFREPORT_TOOL_ANY, &none, &e3),
                   ELOOP);
        ASSERT_CONTAINS(e3, "link.csv: is a symbolic link (not followed)");
        /* a bound smaller than the file: by its size, and (read from the fd) by what was read */
        ASSERT_ERR(mx_profreport_parse_regular(ok, 20, MX_PROFREPORT_TOOL_ANY, &none, &e4), EFBIG);
        fd = open(ok, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_ERR(mx_profreport_parse_fd(fd, 36, MX_PROFREPORT_TOOL_ANY, &none, &e5), EFBIG);
        ASSERT_CONTAINS(e5, "larger than the limit of 36 bytes");
        ASSERT_NULL(none);
        ASSERT_OK(mx_profreport_parse_regular(ok, strlen(text), MX_PROFREPORT_TOOL_ANY, &r, NULL));
        ASSERT_EQ(r->n_kernels, 2);
}

TEST(names)
{
        ASSERT_STREQ(mx_profreport_format_to_string(MX_PROFREPORT_NCU_RAW), "ncu-raw");
        ASSERT_NULL(mx_profreport_format_to_string(_MX_PROFREPORT_FORMAT_MAX));
        ASSERT_STREQ(mx_profreport_format_describe(MX_PROFREPORT_NSYS_KERN_SUM),
                     "nsys cuda_gpu_kern_sum (gpukernsum)");
        ASSERT_EQ(mx_profreport_tool_from_string("auto"), MX_PROFREPORT_TOOL_ANY);
        ASSERT_EQ(mx_profreport_tool_from_string("ncu"), MX_PROFREPORT_TOOL_NCU);
        ASSERT_EQ(mx_profreport_tool_from_string("nsight"), -EINVAL);
        ASSERT_EQ(mx_profreport_tool_from_string(NULL), -EINVAL);
}

TEST(ncu_raw_short_units_row)
{
        /* found by fuzz-profreport: a units row shorter than the rows after it */
        const char *text = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"extra.metric\"\n"
                           "\"\",\"\",\"usecond\"\n"
                           "\"0\",\"k\",\"2.5\",\"7\"\n";
        _cleanup_(mx_profreport_freep) struct mx_profreport *r = parse_ok(text, MX_PROFREPORT_TOOL_ANY);
        const struct mx_profreport_metric *m;

        ASSERT_EQ(r->format, MX_PROFREPORT_NCU_RAW);
        ASSERT_NEAR(r->kernels[0].total_ns, 2500, 1e-9);
        m = mx_profreport_kernel_metric(&r->kernels[0], "extra.metric");
        ASSERT_NOT_NULL(m);
        ASSERT_STREQ(m->unit, "");
}

TEST(header_errors_do_not_pile_up)
{
        /* found by fuzz-profreport: two bad units in one header set the reason twice (a leak) */
        _cleanup_free_ char *e =
                parse_err("Start (MB),Duration (parsecs),Name\n", MX_PROFREPORT_TOOL_ANY, EBADMSG);

        ASSERT_CONTAINS(e, "line 1: column 'Start (MB)': unknown time unit");
}
