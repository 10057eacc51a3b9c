/* SPDX-License-Identifier: MIT */
/*
 * The kernel report an nsys capture of this configuration would give:
 * "nsys stats --report cuda_gpu_kern_sum --format csv" output
 * (target-surfaces.md §D1), with nsys's noise lines before the header, rows
 * sorted by total time, names quoted when they hold commas. The kernels are
 * the ones the L1.5 gate looks for (seed 001 Phase 6): marlin_* for Marlin,
 * cutlass_*_grouped_gemm and cutlass_fused_moe for the CUTLASS path,
 * mxfp8_quantize for MXFP8 activations, gemv_fp4_* for GEMV, plus dense,
 * attention and sampling kernels every configuration runs. Instance counts
 * follow the decode steps and prefills the run actually did (plus start-up
 * warm-up), so an idle run and a busy one differ.
 */
#include "sim.h"

#include <inttypes.h>
#include <math.h>

/* Warm-up the profile run and CUDA graph capture add to every report. */
#define WARMUP_STEPS 102
#define WARMUP_PREFILLS 1
#define LAYERS 36

struct krow {
        const char *name;
        double per_step;    /* launches per decode step */
        double per_prefill; /* launches per prefill */
        double avg_ns;
};

static const struct krow dense_rows[] = {
        {"nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 2 * LAYERS, 2 * LAYERS, 9100},
        {"nvjet_tst_128x64_64x8_2x1_v_bz_TNN", 1, 1, 402000},
        {"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, "
         "c10::BFloat16 const*, float, int, int)",
         2 * LAYERS, 2 * LAYERS, 2100},
        {"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
         "c10::BFloat16*, "
         "c10::BFloat16 const*, int, long, long, long, int, int, int)",
         LAYERS, LAYERS, 1500},
        {"void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, float, (vllm::moe::ScoringFunc)0>(float "
         "const*, bool const*, float*, int, int*, int*, int, int, int, bool)",
         LAYERS, LAYERS, 1800},
        {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
         "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
         1, 1, 31000},
};

/* Attention by backend (sim_attention_backend()). */
static const struct {
        const char *backend;
        struct krow row;
} attention_rows[] = {
        {"TRITON_ATTN", {"kernel_unified_attention_2d", LAYERS, LAYERS, 6200}},
        {"FLASHINFER",
         {"void "
          "flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, "
          "16u, 1u, 4u, 4u, 4u, 1u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, "
          "__nv_bfloat16, "
          "float, int, flashinfer::DefaultAttention<false, true, false, false> >, flashinfer::PagedParams>",
          LAYERS, LAYERS, 5900}},
        {"FLASH_ATTN",
         {"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<64, 64, 128, 4, false, false, "
          "cutlass::bfloat16_t, Flash_kernel_traits<64, 64, 128, 4, cutlass::bfloat16_t> >, true, false, "
          "false, "
          "false, true, true, false, false>(flash::Flash_fwd_params)",
          LAYERS, LAYERS, 6400}},
};

/* MoE kernels by backend family; "%T" in a name is replaced by the tile, "%A" by the activation type. */
static const struct {
        const char *family;
        struct krow row;
} moe_rows[] = {
        {"marlin",
         {"void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)5, (vllm::ScalarTypeId)17, 256, 1, 8, 8, true, "
          "4, 2, "
          "false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int4 const*, int const*, int const*, "
          "int "
          "const*, float const*, int, bool, bool, int, int, int, int, int*, bool, bool, bool, int)",
          2 * LAYERS, 2 * LAYERS, 48000}},
        {"marlin",
         {"void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, "
          "int, "
          "unsigned long, int*)",
          LAYERS, LAYERS, 2600}},
        {"marlin",
         {"void vllm::swigluoai_and_mul_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, int, "
          "float, "
          "float)",
          LAYERS, LAYERS, 1900}},
        {"cutlass",
         {"void "
          "cutlass::device_kernel<tensorrt_llm::kernels::cutlass_kernels::cutlass_sm120_mxf4_grouped_gemm<"
          "cute::tuple<cute::C<%T>, cute::C<128>>, %A, cutlass::float_e2m1_t, __nv_bfloat16> >(...)",
          2 * LAYERS, 2 * LAYERS, 39000}},
        {"cutlass",
         {"void flashinfer::cutlass_fused_moe::expandInputRowsKernel<__nv_bfloat16, %A>(__nv_bfloat16 "
          "const*, "
          "%A*, float const*, float*, int const*, int*, long, long, long, int, int)",
          LAYERS, LAYERS, 2300}},
        {"cutlass",
         {"void flashinfer::cutlass_fused_moe::finalizeMoeRoutingKernel<__nv_bfloat16, __nv_bfloat16>("
          "__nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16 const*, float const*, int const*, int "
          "const*, "
          "long, long, long)",
          LAYERS, LAYERS, 2100}},
        {"gemv",
         {"void flashinfer::gemv::gemv_fp4_blockscaled_kernel<__nv_bfloat16, 2880, 5760, 32>(__nv_bfloat16 "
          "const*, unsigned char const*, unsigned char const*, __nv_bfloat16*, int const*, int)",
          2 * LAYERS, 0, 56000}},
        {"gemv",
         {"void "
          "cutlass::device_kernel<tensorrt_llm::kernels::cutlass_kernels::cutlass_sm120_mxf4_grouped_gemm<"
          "cute::tuple<cute::C<%T>, cute::C<128>>, %A, cutlass::float_e2m1_t, __nv_bfloat16> >(...)",
          0, 2 * LAYERS, 39000}},
        {"b12x",
         {"void b12x::moe::b12x_mxf4_grouped_gemm_kernel<%A, 128, 128>(b12x::moe::Params)", 2 * LAYERS,
          2 * LAYERS, 33000}},
        {"triton", {"_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu", 2 * LAYERS, 2 * LAYERS, 44000}},
        {"trtllm",
         {"bmm_MxE4m3_MxE2m1E2m1_Fp32_t128x8x256u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut",
          2 * LAYERS, 2 * LAYERS, 30000}},
};

/* Activation quantization kernels (the mxfp8_quantize evidence). */
static const struct {
        const char *activation;
        struct krow row;
} act_rows[] = {
        {"mxfp8",
         {"void flashinfer::mxfp8_quantize_kernel<__nv_bfloat16, 32, true>(__nv_bfloat16 const*, "
          "unsigned char*, unsigned char*, int, int)",
          LAYERS, LAYERS, 1700}},
        {"mxfp4",
         {"void flashinfer::mxfp4_quantize_kernel<__nv_bfloat16, 32>(__nv_bfloat16 const*, unsigned "
          "char*, unsigned char*, int, int)",
          LAYERS, LAYERS, 1600}},
        {"fp8",
         {"void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, "
          "c10::BFloat16 const*, float const*, long)",
          LAYERS, LAYERS, 1400}},
};

struct out_row {
        char *name;
        uint64_t instances;
        double avg;
        double total;
};

static char *expand_name(const char *tmpl, const struct sim_moe *m)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;
        const char *act = streq(m->activation, "mxfp8")   ? "cutlass::float_e4m3_t"
                          : streq(m->activation, "mxfp4") ? "cutlass::float_e2m1_t"
                          : streq(m->activation, "fp8")   ? "cutlass::float_e4m3_t"
                                                          : "__nv_bfloat16";
        const char *tile = streq(m->tile, "64x128") ? "64" : "128";

        for (const char *p = tmpl; *p; p++) {
                if (p[0] == '%' && p[1] == 'T') {
                        mx_buf_puts(&b, tile);
                        p++;
                } else if (p[0] == '%' && p[1] == 'A') {
                        mx_buf_puts(&b, act);
                        p++;
                } else
                        mx_buf_putc(&b, *p);
        }
        return mx_buf_steal(&b);
}

static void add_row(struct out_row **rows, size_t *n, const struct krow *k, const struct sim_moe *m,
                    uint64_t steps, uint64_t prefills)
{
        uint64_t inst = (uint64_t)llround(k->per_step * (double)steps + k->per_prefill * (double)prefills);

        if (inst == 0)
                return;
        *rows = xreallocarray(*rows, *n + 1, sizeof(**rows));
        (*rows)[*n] = (struct out_row){
                .name = expand_name(k->name, m),
                .instances = inst,
                .avg = k->avg_ns,
                .total = k->avg_ns * (double)inst,
        };
        (*n)++;
}

static int by_total_desc(const void *a, const void *b)
{
        const struct out_row *x = a, *y = b;

        return x->total < y->total ? 1 : x->total > y->total ? -1 : strcmp(x->name, y->name);
}

static void put_csv_name(FILE *f, const char *name)
{
        if (!strpbrk(name, ",\"\n")) {
                fputs(name, f);
                return;
        }
        fputc('"', f);
        for (const char *p = name; *p; p++) {
                if (*p == '"')
                        fputc('"', f);
                fputc(*p, f);
        }
        fputc('"', f);
}

int sim_kreport_write(const char *path, const struct sim_config *c, const struct sim_moe *m,
                      const struct sim_sched_stats *st)
{
        _cleanup_free_ struct out_row *rows = NULL;
        _cleanup_free_ char *tmp = xasprintf("%s.tmp", path), *base = xstrdup(path);
        _cleanup_fclose_ FILE *f = NULL;
        uint64_t steps = st->steps + WARMUP_STEPS, prefills = st->prefills + WARMUP_PREFILLS;
        const char *attn = sim_attention_backend();
        double sum = 0;
        size_t n = 0;
        int r = 0;

        if (!m->family)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(dense_rows); i++)
                add_row(&rows, &n, &dense_rows[i], m, steps, prefills);
        for (size_t i = 0; i < ELEMENTSOF(attention_rows); i++)
                if (streq(attention_rows[i].backend, attn))
                        add_row(&rows, &n, &attention_rows[i].row, m, steps, prefills);
        for (size_t i = 0; i < ELEMENTSOF(moe_rows); i++)
                if (streq(moe_rows[i].family, m->family))
                        add_row(&rows, &n, &moe_rows[i].row, m, steps, prefills);
        for (size_t i = 0; i < ELEMENTSOF(act_rows); i++)
                if (streq(act_rows[i].activation, m->activation))
                        add_row(&rows, &n, &act_rows[i].row, m, steps, prefills);
        qsort(rows, n, sizeof(*rows), by_total_desc);
        for (size_t i = 0; i < n; i++)
                sum += rows[i].total;

        if (endswith(base, ".csv"))
                base[strlen(base) - 4] = '\0';
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        fprintf(f, "Generating SQLite file %s.sqlite from %s.nsys-rep\n", base, base);
        fprintf(f,
                "Processing [%s.sqlite] with [/opt/nvidia/nsight-systems/2025.3.1/host-linux-x64/reports/"
                "cuda_gpu_kern_sum.py]... \n\n",
                base);
        fputs("Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n",
              f);
        for (size_t i = 0; i < n; i++) {
                const struct out_row *o = &rows[i];
                fprintf(f, "%.1f,%.0f,%" PRIu64 ",%.1f,%.1f,%.0f,%.0f,%.1f,", o->total * 100.0 / sum,
                        o->total, o->instances, o->avg, o->avg * 0.985, floor(o->avg * 0.71),
                        ceil(o->avg * 2.3), o->avg * 0.12);
                put_csv_name(f, o->name);
                fputc('\n', f);
        }
        if (fflush(f) != 0 || ferror(f))
                r = -EIO;
        for (size_t i = 0; i < n; i++)
                free(rows[i].name);
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                unlink(tmp);
        }
        return r;
}
