/* SPDX-License-Identifier: MIT */
/*
 * Which MXFP4 MoE backend the simulated vLLM runs on a GB10 (SM121), and what
 * that looks like in the log. Two ways to choose, as in target-surfaces.md
 * §A2.3-A2.4 and seed 001 Phase 7:
 *   - the user's patched vLLM: VLLM_MXFP4_MOE_KERNEL (auto|marlin|gemm|cutlass|
 *     gemv|triton) and VLLM_MXFP4_ACTIVATION (auto|bf16|mxfp8|mxfp4|fp8),
 *     independent axes; auto resolves to MARLIN on GB10;
 *   - upstream --moe-backend (marlin, triton, flashinfer_cutlass,
 *     flashinfer_cutlass_afp8, flashinfer_trtllm[_afp8], b12x, ...), which
 *     wins over the environment.
 * Backends that cannot run on GB10 (triton, trtllm) are selected here and
 * fail in issues.c, where every known failure lives.
 */
#include "sim.h"

/* A backend family: how it is logged and how fast it decodes. */
static const struct family {
        const char *name;
        const char *enum_name; /* ending in '_': the activation suffix follows */
        const char *callsite;  /* the seed's one-time callsite line */
        bool any_activation;   /* false: weight-only, activations stay bf16 */
        double speed;
} families[] = {
        {"marlin", "MARLIN",
         "[MoE] backend=marlin format=MXFP4_MARLIN "
         "fn=vllm.model_executor.layers.fused_moe.fused_marlin_moe.fused_marlin_moe",
         false, 1.00},
        {"cutlass", "FLASHINFER_CUTLASS_MXFP4_",
         "[MoE] backend=flashinfer format=MXFP4_NATIVE fn=flashinfer.fused_moe.cutlass_fused_moe", true,
         1.22},
        {"gemv", "GEMV_FP4",
         "[MoE] backend=gemv format=MXFP4_NATIVE fn=flashinfer.gemv.gemv_fp4_blockscaled (M=1 decode); "
         "M>1 falls back to fn=flashinfer.fused_moe.cutlass_fused_moe",
         true, 0.85},
        {"triton", "TRITON",
         "[MoE] backend=triton format=MXFP4_NATIVE "
         "fn=vllm.model_executor.layers.fused_moe.gpt_oss_triton_kernels_moe.triton_kernel_moe_forward",
         false, 1.10},
        {"b12x", "B12X", "[MoE] backend=b12x format=MXFP4_NATIVE fn=b12x.moe.b12x_fused_moe", true, 1.35},
        {"trtllm", "FLASHINFER_TRTLLM_MXFP4_",
         "[MoE] backend=flashinfer format=MXFP4_NATIVE fn=flashinfer.fused_moe.trtllm_fp4_block_scale_moe",
         true, 1.40},
};

/* Activation formats: enum suffix, quantize function (evidence), speed factor. */
static const struct activation {
        const char *name;
        const char *suffix;
        const char *quant_fn;
        double speed;
} activations[] = {
        {"bf16", "BF16", NULL, 1.00},
        {"mxfp8", "MXFP8", "flashinfer.mxfp8_quantize", 1.08},
        {"mxfp4", "MXFP4", "flashinfer.fp4_quantization.mxfp4_quantize", 1.10},
        {"fp8", "FP8", "vllm._custom_ops.scaled_fp8_quant", 1.05},
};

/* VLLM_MXFP4_MOE_KERNEL values and the family each selects (auto: MARLIN on GB10). */
static const struct {
        const char *value;
        const char *family;
} kernel_env[] = {
        {"auto", "marlin"},     {"marlin", "marlin"}, {"gemm", "cutlass"},
        {"cutlass", "cutlass"}, {"gemv", "gemv"},     {"triton", "triton"},
};

/* --moe-backend choices that apply to MXFP4, with the activation they imply (NULL: from env). */
static const struct {
        const char *value;
        const char *family;
        const char *activation;
} moe_backend_flag[] = {
        {"marlin", "marlin", NULL},
        {"triton", "triton", NULL},
        {"flashinfer_cutlass", "cutlass", NULL},
        {"flashinfer_cutlass_afp8", "cutlass", "mxfp8"},
        {"flashinfer_trtllm", "trtllm", NULL},
        {"flashinfer_trtllm_afp8", "trtllm", "mxfp8"},
        {"b12x", "b12x", NULL},
        {"ck", NULL, NULL},
        {"xpu", NULL, NULL},
};

/* Validate a --moe-backend value as argparse "choices" would. */
int sim_moe_backend_check(const char *value, char **reterr)
{
        _cleanup_buf_ struct mx_buf b = MX_BUF_INIT;

        if (streq(value, "auto"))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(moe_backend_flag); i++)
                if (streq(value, moe_backend_flag[i].value))
                        return 0;
        mx_buf_puts(&b, "'auto'");
        for (size_t i = 0; i < ELEMENTSOF(moe_backend_flag); i++)
                mx_buf_printf(&b, ", '%s'", moe_backend_flag[i].value);
        *reterr = xasprintf("argument --moe-backend: invalid choice: '%s' (choose from %s)", value, b.data);
        return -EINVAL;
}

static const struct family *family_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(families); i++)
                if (streq(families[i].name, name))
                        return &families[i];
        return NULL;
}

static const struct activation *activation_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(activations); i++)
                if (streq(activations[i].name, name))
                        return &activations[i];
        return NULL;
}

/* vLLM's env_with_choices error for a value it does not know. */
static int bad_env(const char *name, const char *value, const char *choices, char **reterr)
{
        *reterr = xasprintf("ValueError: Invalid value '%s' for %s. Valid options: [%s].", value, name,
                            choices);
        return -EINVAL;
}

/* The family requested by the patched env var; NULL family on a bad value. */
static int kernel_from_env(const char **ret_family, char **reterr)
{
        const char *v = getenv("VLLM_MXFP4_MOE_KERNEL");

        if (!v || !*v)
                v = "auto";
        for (size_t i = 0; i < ELEMENTSOF(kernel_env); i++)
                if (strcasecmp(v, kernel_env[i].value) == 0) {
                        *ret_family = kernel_env[i].family;
                        return 0;
                }
        return bad_env("VLLM_MXFP4_MOE_KERNEL", v, "'auto', 'marlin', 'gemm', 'cutlass', 'gemv', 'triton'",
                       reterr);
}

static int activation_from_env(const char **ret, char **reterr)
{
        const char *v = getenv("VLLM_MXFP4_ACTIVATION");

        if (!v || !*v || strcasecmp(v, "auto") == 0) {
                *ret = NULL;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(activations); i++)
                if (strcasecmp(v, activations[i].name) == 0) {
                        *ret = activations[i].name;
                        return 0;
                }
        return bad_env("VLLM_MXFP4_ACTIVATION", v, "'auto', 'bf16', 'mxfp8', 'mxfp4', 'fp8'", reterr);
}

/* Family and activation asked for by --moe-backend; -EINVAL for ck/xpu on CUDA. */
static int from_flag(const char *flag, const char **family, const char **act, char **reterr)
{
        for (size_t i = 0; i < ELEMENTSOF(moe_backend_flag); i++) {
                if (!streq(flag, moe_backend_flag[i].value))
                        continue;
                if (!moe_backend_flag[i].family) {
                        *reterr = xasprintf("ValueError: No MXFP4 MoE backend supports the deployment "
                                            "configuration. (--moe-backend %s needs a %s platform)",
                                            flag, streq(flag, "ck") ? "ROCm" : "XPU");
                        return -EINVAL;
                }
                *family = moe_backend_flag[i].family;
                if (moe_backend_flag[i].activation)
                        *act = moe_backend_flag[i].activation;
                return 0;
        }
        return sim_moe_backend_check(flag, reterr);
}

/* See sim.h: env axes first, --moe-backend over them, then the wrong-kernel fallback. */
int sim_moe_select(const struct sim_config *c, struct sim_moe *ret, char **reterr)
{
        const char *fam_name = NULL, *act_name = NULL;
        const struct family *fam;
        const struct activation *act;
        const char *tile = getenv("FLASHINFER_MOE_TILE");
        int r;

        if ((r = kernel_from_env(&fam_name, reterr)) < 0 || (r = activation_from_env(&act_name, reterr)) < 0)
                return r;
        if (c->moe_backend && (r = from_flag(c->moe_backend, &fam_name, &act_name, reterr)) < 0)
                return r;
        if (!act_name)
                act_name = streq(fam_name, "b12x") && !sim_env_true("VLLM_B12X_MOE_FP4_FORCE_A16") ? "mxfp8"
                                                                                                   : "bf16";
        fam = family_find(fam_name);
        act = activation_find(act_name);
        *ret = (struct sim_moe){
                .requested = c->moe_backend ? c->moe_backend : fam_name,
                .tile = tile && *tile ? tile : "auto",
        };
        if (sim_fault_on(&c->faults, SIM_FAULT_WRONG_KERNEL) && !streq(fam->name, "marlin")) {
                fam = family_find("marlin");
                ret->fell_back = true;
        }
        if (!fam->any_activation)
                act = activation_find("bf16");
        ret->family = fam->name;
        ret->activation = act->name;
        ret->requested_activation = act_name;
        ret->enum_name = endswith(fam->enum_name, "_") ? xasprintf("%s%s", fam->enum_name, act->suffix)
                                                       : xstrdup(fam->enum_name);
        ret->speed = fam->speed * act->speed;
        return 0;
}

void sim_moe_done(struct sim_moe *m)
{
        free(m->enum_name);
        *m = (struct sim_moe){};
}

/* The lines vLLM and the seed's callsite logging print while building the MoE layers. */
void sim_moe_log(const struct sim_moe *m)
{
        const struct family *fam = family_find(m->family);
        const struct activation *act = activation_find(m->activation);

        if (!streq(m->activation, m->requested_activation) && !m->fell_back)
                sim_log(SIM_WARNING, "mxfp4.py:361",
                        "VLLM_MXFP4_ACTIVATION=%s is not supported by the %s backend (weight-only MXFP4); "
                        "activations stay bf16.",
                        m->requested_activation, m->enum_name);
        sim_log(SIM_INFO, "mxfp4.py:389", "Using '%s' Mxfp4 MoE backend.", m->enum_name);
        if (streq(m->family, "gemv"))
                sim_log(SIM_INFO, "mxfp4.py:392",
                        "[MoE] backend=gemv kernel=gemv_fp4_blockscaled decode=M1 "
                        "prefill=cutlass_fused_moe");
        sim_log(SIM_INFO, "mxfp4.py:1007", "%s", fam->callsite);
        sim_log(SIM_INFO, "mxfp4.py:1012", "[MoE] w13_weight dtype=torch.uint8 shape=(128, 5760, 1440)");
        sim_log(SIM_INFO, "mxfp4.py:1012", "[MoE] w2_weight dtype=torch.uint8 shape=(128, 2880, 1440)");
        sim_log(SIM_INFO, "mxfp4.py:1012", "[MoE] w13_weight_scale dtype=torch.uint8 shape=(128, 5760, 90)");
        sim_log(SIM_INFO, "mxfp4.py:1012", "[MoE] w2_weight_scale dtype=torch.uint8 shape=(128, 2880, 90)");
        if (act->quant_fn) {
                sim_log(SIM_INFO, "mxfp4.py:1020",
                        "[MoE] activation input dtype=torch.bfloat16 shape=(32, 2880) "
                        "→ %s quantized",
                        act->suffix);
                sim_log(SIM_INFO, "mxfp4.py:1024", "[MoE] activation quant fn=%s block=32", act->quant_fn);
        } else
                sim_log(SIM_INFO, "mxfp4.py:1020",
                        "[MoE] activation input dtype=torch.bfloat16 shape=(32, 2880) "
                        "→ BF16 (no activation quantization)");
        if (streq(m->family, "cutlass") || streq(m->family, "gemv"))
                sim_log(SIM_INFO, "fused_moe.py:211", "[MoE] FLASHINFER_MOE_TILE=%s", m->tile);
}

const char *sim_attention_backend(void)
{
        const char *v = getenv("VLLM_ATTENTION_BACKEND");

        if (v && (streq(v, "FLASHINFER") || streq(v, "FLASH_ATTN") || streq(v, "TRITON_ATTN")))
                return v;
        return "TRITON_ATTN"; /* GB10 default (spark-arena#17: "MARLIN + TRITON_ATTN") */
}

/* Stand-in decode speed factors (README "Speed"), so configurations differ. */
double sim_config_speed(const struct sim_config *c, const struct sim_moe *m)
{
        double s = m->speed * (c->speed_factor > 0 ? c->speed_factor : 1.0);

        if (c->enforce_eager)
                s *= 0.82; /* no CUDA graphs: launch overhead per decode step */
        if (sim_env_true("VLLM_USE_ATTENTION_SINKS"))
                s *= 0.97;
        if (c->spec.method)
                s /= 1.25; /* a step also runs the draft model */
        return s;
}
