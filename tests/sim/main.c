/* SPDX-License-Identifier: MIT */
/*
 * mxsim: a simulated LLM inference server for testing mxmatrixd without a GPU.
 * "mxsim serve MODEL [options]" behaves like "vllm serve" (or llama-server,
 * SGLang with --flavor); tests/sim/README.md lists every option, knob and fault.
 */
#include "sim.h"

static void usage(FILE *f)
{
        fputs("usage: mxsim serve MODEL [--host H] [--port N] [--served-model-name NAME] [--enforce-eager]\n"
              "                         [--speculative-config JSON] [--moe-backend X] [--quantization Q]\n"
              "                         [--flavor vllm|llama-server|sglang] [--mxsim-fault F]... "
              "[--any-flag [V]]\n"
              "environment: MXSIM_FLAVOR MXSIM_LOAD_S MXSIM_WATCHDOG_S MXSIM_TOKEN_MS "
              "MXSIM_SHUTDOWN_WAIT_S\n"
              "             MXSIM_FAULTS MXSIM_GPU_LOCK MXSIM_KERNEL_REPORT MXSIM_VERSION (see "
              "tests/sim/README.md)\n",
              f);
}

int main(int argc, char **argv)
{
        struct sim_config c;
        _cleanup_free_ char *err = NULL;
        int r;

        if (argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                usage(stdout);
                return 0;
        }
        sim_proctitle_init(argc, argv);
        r = sim_config_parse(&c, argc, argv, &err);
        if (r < 0) {
                usage(stderr);
                fprintf(stderr, "mxsim serve: error: %s\n", err);
                sim_config_done(&c);
                return 2;
        }
        switch (c.flavor) {
        case SIM_FLAVOR_LLAMA:
                r = sim_llama_main(&c);
                break;
        case SIM_FLAVOR_SGLANG:
                r = sim_sglang_main(&c);
                break;
        default:
                r = sim_vllm_main(&c);
                break;
        }
        sim_config_done(&c);
        return r;
}
