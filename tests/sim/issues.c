/* SPDX-License-Identifier: MIT */
/*
 * The GB10 behaviour of the seed's known issues, without any fault flag, so a
 * sweep of the seed's axes shows them by itself. One row per issue: the
 * conditions (all must hold; NULL or ANY means "any") and what happens.
 * Sources: seed 003 "Known Issues by Configuration", target-surfaces.md §A2.3
 * (vllm#41477 table for GB10), seed 004 "Known Issues" #1.
 * Everything that matches no row works.
 */
#include "sim.h"

enum graphs {
        GRAPHS_ANY,
        GRAPHS_ON, /* no --enforce-eager */
};

static const struct row {
        struct sim_issue issue;
        enum graphs graphs;
        const char *spec_method;
        const char *env, *env_value;
        const char *moe_family;
} rows[] = {
        /* seed 003: CUDA Graphs + Eagle3 -> cudaErrorIllegalInstruction during replay */
        {{"cuda-graphs+eagle3", SIM_ISSUE_FIRST_COMPLETION, SIM_CRASH_ILLEGAL_INSTRUCTION,
          "CUDA graph replay (eagle3 drafter, FULL decode graph)"},
         GRAPHS_ON,
         "eagle3",
         NULL,
         NULL,
         NULL},
        /* seed 003: Attention Sinks + SM121 -> cudaErrorIllegalInstruction in the sink kernel */
        {{"attention-sinks", SIM_ISSUE_FIRST_COMPLETION, SIM_CRASH_ILLEGAL_INSTRUCTION,
          "attention sink kernel (flashinfer BatchPrefillWithPagedKVCacheKernel<..., AttentionSink>)"},
         GRAPHS_ANY,
         NULL,
         "VLLM_USE_ATTENTION_SINKS",
         "1",
         NULL},
        /* seed 003: M=64 tiles -> TMA layout constraint, the CUTLASS JIT build fails */
        {{"tile-64x128", SIM_ISSUE_AT_STARTUP, SIM_CRASH_TMA_LAYOUT,
          "FLASHINFER_MOE_TILE=64x128 with 128-element scale granularity"},
         GRAPHS_ANY,
         NULL,
         "FLASHINFER_MOE_TILE",
         "64x128",
         "cutlass"},
        {{"tile-64x128-gemv-prefill", SIM_ISSUE_AT_STARTUP, SIM_CRASH_TMA_LAYOUT,
          "FLASHINFER_MOE_TILE=64x128 in the GEMM fallback of the gemv path"},
         GRAPHS_ANY,
         NULL,
         "FLASHINFER_MOE_TILE",
         "64x128",
         "gemv"},
        /* vllm#41477: OAI Triton MoE kernels do not assemble for sm_121a */
        {{"triton-sm121", SIM_ISSUE_AT_STARTUP, SIM_CRASH_PTXAS, "triton matmul_ogs MoE kernel JIT"},
         GRAPHS_ANY,
         NULL,
         NULL,
         NULL,
         "triton"},
        /* vllm#41477, seed 004 #1: TRT-LLM MoE kernels exist for SM100 only */
        {{"trtllm-sm121", SIM_ISSUE_AT_STARTUP, SIM_CRASH_NO_SM100, "trtllm_fp4_block_scale_moe"},
         GRAPHS_ANY,
         NULL,
         NULL,
         NULL,
         "trtllm"},
};

static bool row_matches(const struct row *r, const struct sim_config *c, const struct sim_moe *m)
{
        const char *v;

        if (r->graphs == GRAPHS_ON && c->enforce_eager)
                return false;
        if (r->spec_method && !streq_ptr(c->spec.method, r->spec_method))
                return false;
        if (r->env) {
                v = getenv(r->env);
                if (!v || !streq(v, r->env_value))
                        return false;
        }
        if (r->moe_family && (!m || !streq(m->family, r->moe_family)))
                return false;
        return true;
}

const struct sim_issue *sim_issue_find(const struct sim_config *c, const struct sim_moe *m,
                                       enum sim_issue_when when)
{
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                if (rows[i].issue.when == when && row_matches(&rows[i], c, m))
                        return &rows[i].issue;
        return NULL;
}
