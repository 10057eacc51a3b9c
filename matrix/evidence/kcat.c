/* SPDX-License-Identifier: MIT */
/*
 * Kernel categories: named kernel-name patterns (the gate's globs and re:), first match wins, else
 * "other".
 */
#include "kcat.h"

#include "kgate.h"

#define P(...) ((char *[]){__VA_ARGS__, NULL})

/*
 * The built-in list. Order matters (the first match wins): MoE kernels before
 * the GEMMs and softmaxes their names also contain, sampling's softmax before
 * attention's, norms before the element-wise kernels they fuse. vLLM names
 * from its kernels and FlashInfer's (seed 004, tests/sim/kreport.c), llama.cpp
 * names from ggml-cuda as an H100 ncu run printed them
 * (tests/fixtures/device/real/ncu).
 */
static const struct mx_kcat_def builtin[] = {
        {"MoE GEMM", P("*grouped_gemm*", "re:[Mm]arlin", "*fused_moe_kernel*", "*_matmul_ogs_*",
                       "re:^bmm_.*E2m1", "*MoeFCGemm*", "*moe_gemm*", "mul_mat_vec_q_moe*")},
        {"MoE routing",
         P("*topkGating*", "*topk_moe*", "*moe_align*", "*expandInputRows*", "*finalizeMoeRouting*",
           "*moe_sum*", "*mm_ids_helper*", "*argsort*", "add_id_kernel*", "*count_and_sort_expert*")},
        {"Sampling", P("*SoftMaxForward*", "*sampling*", "*Sampling*", "*argmax*", "*top_k_top_p*",
                       "*multinomial*", "*gumbel*")},
        {"Attention", P("*flash_attn*", "*flash_fwd*", "*BatchPrefill*", "*BatchDecode*", "*SinglePrefill*",
                        "*SingleDecode*", "*MergeState*", "*unified_attention*", "*paged_attention*",
                        "*fmha*", "*attention_kernel*", "soft_max*")},
        {"Quantization", P("*quantize*", "*quant_kernel*", "*fp8_quant*", "*fp4_quant*", "*dequant*")},
        {"GEMV", P("*gemv*", "mul_mat_vec*")},
        {"GEMM",
         P("*gemm*", "*Gemm*", "nvjet_*", "*xmma*", "mul_mat_q*", "mul_mat_f*", "*cutlass*", "*cublas*")},
        {"Norm", P("*rms_norm*", "*RMSNorm*", "*layer_norm*", "*layernorm*", "*LayerNorm*", "norm_f32*",
                   "*group_norm*", "*l2_norm*")},
        {"RoPE", P("*rotary*", "*rope_*")},
        {"Activation", P("*silu*", "*swiglu*", "*gelu*", "*_and_mul*", "*geglu*")},
        {"Memory copy", P("*get_rows*", "*set_rows*", "cpy_*", "*k_cpy*", "*concat*", "*Copy*", "*copy*",
                          "*reshape_and_cache*", "*memcpy*", "*gather*")},
        {"Elementwise", P("*k_bin_bcast*", "*elementwise*", "*scale_f32*", "*unary*", "*fill*", "*reduce*")},
};

void mx_kcat_def_done(struct mx_kcat_def *d)
{
        free(d->name);
        strv_free(d->patterns);
        *d = (struct mx_kcat_def){};
}

const struct mx_kcat_def *mx_kcat_builtin(size_t *ret_n)
{
        *ret_n = ELEMENTSOF(builtin);
        return builtin;
}

struct category {
        char *name;
        struct mx_kpattern **pats;
        char **texts;
        size_t n_pats;
};

struct mx_kcat {
        struct category *cats;
        size_t n;
};

struct mx_kcat *mx_kcat_free(struct mx_kcat *c)
{
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++) {
                for (size_t k = 0; k < c->cats[i].n_pats; k++)
                        mx_kpattern_free(c->cats[i].pats[k]);
                free(c->cats[i].pats);
                strv_free(c->cats[i].texts);
                free(c->cats[i].name);
        }
        free(c->cats);
        free(c);
        return NULL;
}

int mx_kcat_new(const struct mx_kcat_def *defs, size_t n, struct mx_kcat **ret, char **reterr)
{
        _cleanup_(mx_kcat_freep) struct mx_kcat *c = xcalloc(1, sizeof(*c));

        if (n > MX_KCAT_MAX)
                return mx_reterr(reterr, -E2BIG, "%zu kernel categories, more than the limit of %d", n,
                                 MX_KCAT_MAX);
        c->cats = xcalloc(MX_MAX(n, 1), sizeof(*c->cats));
        for (size_t i = 0; i < n; i++) {
                struct category *k = &c->cats[i];
                size_t np = strv_length(defs[i].patterns);

                c->n = i + 1;
                k->name = xstrdup(defs[i].name);
                if (np > MX_KCAT_PATTERNS_MAX)
                        return mx_reterr(reterr, -E2BIG,
                                         "category '%s': %zu patterns, more than the limit of %d",
                                         defs[i].name, np, MX_KCAT_PATTERNS_MAX);
                k->pats = xcalloc(MX_MAX(np, 1), sizeof(*k->pats));
                k->texts = strv_copy(defs[i].patterns);
                for (size_t j = 0; j < np; j++) {
                        _cleanup_free_ char *e = NULL;
                        int r = mx_kpattern_new(defs[i].patterns[j], &k->pats[j], &e);

                        if (r < 0)
                                return mx_reterr(reterr, r, "category '%s': %s", defs[i].name, strna(e));
                        k->n_pats = j + 1;
                }
        }
        *ret = TAKE_PTR(c);
        return 0;
}

size_t mx_kcat_count(const struct mx_kcat *c)
{
        return c->n;
}

const char *mx_kcat_name(const struct mx_kcat *c, size_t i)
{
        return i < c->n ? c->cats[i].name : MX_KCAT_OTHER;
}

const char *mx_kcat_matched_pattern(const struct mx_kcat *c, size_t i, const char *kernel)
{
        if (i >= c->n)
                return NULL;
        for (size_t k = 0; k < c->cats[i].n_pats; k++)
                if (mx_kpattern_match(c->cats[i].pats[k], kernel))
                        return c->cats[i].texts[k];
        return NULL;
}

size_t mx_kcat_classify(const struct mx_kcat *c, const char *kernel)
{
        for (size_t i = 0; i < c->n; i++)
                if (mx_kcat_matched_pattern(c, i, kernel))
                        return i;
        return c->n;
}
