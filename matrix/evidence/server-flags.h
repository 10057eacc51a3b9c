/* SPDX-License-Identifier: MIT */
/*
 * A server's command line read the way the server reads it, with each server
 * kind's real defaults, for seed 002's configuration block (report/report-bench.c).
 *
 * A flag followed by another flag (or by nothing) has no value; a boolean
 * flag of the kind never takes one (llama-server --metrics, --no-warmup;
 * vLLM --enforce-eager, --enable-prefix-caching), so `--metrics -lv 4` is
 * metrics: true and verbosity: "4". --flag=value is one word. Keys are the
 * long names with '-' as '_'; llama-server's short flags become their first
 * long name (-fa -> flash_attn, -lv -> verbosity, -c -> ctx_size); --no-X
 * is X: false (vLLM's and SGLang's BooleanOptionalAction; llama-server's
 * negative flags).
 *
 * Defaults filled in where the flag is absent:
 *   vllm          enable_prefix_caching true (V1 for generative models), enforce_eager false
 *   llama-server  enable_prefix_caching = its prompt cache (cache_prompt, on unless
 *                 --no-cache-prompt), flash_attn "auto", enforce_eager = CUDA graphs off
 *                 (GGML_CUDA_DISABLE_GRAPHS set at all, it is presence-based)
 *   sglang        enable_prefix_caching = the radix cache (off with --disable-radix-cache),
 *                 enforce_eager = --disable-cuda-graph
 */
#pragma once

#include <jansson.h>

/*
 * The flags of argv (the run's argv, the program first) for a server of
 * kind (a profile base: "vllm", "llama-server", "sglang"; anything else:
 * only the generic rules), env the run's "NAME=value" array (may be NULL).
 * Values are strings, booleans true/false. Positional words are left out.
 */
json_t *mx_server_flags(const char *kind, json_t *argv, json_t *env);
