/* SPDX-License-Identifier: MIT */
/* A server's command line as the server reads it (see server-flags.h). */
#include "server-flags.h"

#include "util.h"

#include <ctype.h>

/*
 * llama-server's flags that take no value, from common/arg.cpp of the
 * snapshot in ../shared/targets (llama.cpp d32676d): options declared without
 * a value hint, and both names of each --x/--no-x pair.
 */
static const char *const llama_bools[] = {
        "--agent", "--backend-sampling", "--cache-idle-slots", "--cache-prompt", "--check",
        "--check-tensors", "--cont-batching", "--context-shift", "--conversation", "--cors-credentials",
        "--cpu-moe", "--cpu-moe-draft", "--dflash", "--diffusion-visual", "--direct-io",
        "--display-prompt", "--eagle3", "--embd-gemma-default", "--embedding", "--embeddings", "--escape",
        "--fim-qwen-1.5b-default", "--fim-qwen-14b-spec", "--fim-qwen-30b-default",
        "--fim-qwen-3b-default", "--fim-qwen-7b-default", "--fim-qwen-7b-spec", "--gpt-oss-120b-default",
        "--gpt-oss-20b-default", "--hellaswag", "--ids", "--ignore-eos", "--in-prefix-bos",
        "--interactive", "--interactive-first", "--jinja", "--kl-divergence", "--kv-offload",
        "--kv-unified", "--log-disable", "--log-prefix", "--log-timestamps", "--log-verbose",
        "--lora-init-without-apply", "--metrics", "--mlock", "--mmap", "--mmproj-auto", "--mmproj-offload",
        "--models-autoload", "--mtp", "--multiline-input", "--multiple-choice", "--no-agent", "--no-bos",
        "--no-cache-idle-slots", "--no-cache-prompt", "--no-cont-batching", "--no-context-shift",
        "--no-conversation", "--no-cors-credentials", "--no-direct-io", "--no-display-prompt",
        "--no-escape", "--no-host", "--no-jinja", "--no-kv-offload", "--no-kv-unified", "--no-log-prefix",
        "--no-log-timestamps", "--no-mmap", "--no-mmproj", "--no-mmproj-auto", "--no-mmproj-offload",
        "--no-models-autoload", "--no-op-offload", "--no-parse-special", "--no-perf", "--no-ppl",
        "--no-prefill-assistant", "--no-reasoning-preserve", "--no-repack", "--no-show-timings",
        "--no-skip-chat-parsing", "--no-slots", "--no-spec-draft-backend-sampling", "--no-ui",
        "--no-ui-mcp-proxy", "--no-warmup", "--no-webui", "--no-webui-mcp-proxy", "--offline",
        "--op-offload", "--parse-special", "--perf", "--ppl", "--prefill-assistant", "--process-output",
        "--prompt-cache-all", "--prompt-cache-ro", "--props", "--reasoning-preserve", "--repack",
        "--rerank", "--reranking", "--reuse-port", "--save-logits", "--show-count", "--show-statistics",
        "--show-timings", "--simple-io", "--single-turn", "--skip-chat-parsing", "--slots",
        "--spec-default", "--spec-draft-backend-sampling", "--spec-draft-cpu-moe", "--special",
        "--spm-infill", "--stdin", "--swa-full", "--ui", "--ui-mcp-proxy", "--verbose", "--verbose-prompt",
        "--vision-gemma-12b-default", "--vision-gemma-4b-default", "--warmup", "--webui",
        "--webui-mcp-proxy", "--winogrande", "-ag", "-bs", "-cb", "-cl", "-cmoe", "-cmoed", "-cnv", "-dio",
        "-e", "-i", "-if", "-kvo", "-kvu", "-mli", "-ndio", "-nkvo", "-no-ag", "-no-cnv", "-no-kvu",
        "-nocb", "-nr", "-pps", "-sp", "-st", "-tgs", "-v",
        NULL,
};

/* llama-server's short flags and their first long name (the same arg.cpp). */
static const char *const llama_shorts[][2] = {
        {"-C","cpu_mask"}, {"-Cb","cpu_mask_batch"}, {"-Cbd","spec_draft_cpu_mask_batch"},
        {"-Cd","spec_draft_cpu_mask"}, {"-Cr","cpu_range"}, {"-Crb","cpu_range_batch"},
        {"-Crbd","spec_draft_cpu_range_batch"}, {"-Crd","spec_draft_cpu_range"}, {"-a","alias"},
        {"-ag","agent"}, {"-b","batch_size"}, {"-bf","binary_file"}, {"-bs","backend_sampling"},
        {"-c","ctx_size"}, {"-cb","cont_batching"}, {"-cl","cache_list"}, {"-cmoe","cpu_moe"},
        {"-cmoed","spec_draft_cpu_moe"}, {"-cms","checkpoint_min_step"}, {"-cnv","conversation"},
        {"-co","color"}, {"-cram","cache_ram"}, {"-ctk","cache_type_k"}, {"-ctkd","spec_draft_type_k"},
        {"-ctv","cache_type_v"}, {"-ctvd","spec_draft_type_v"}, {"-ctxcp","ctx_checkpoints"},
        {"-decay-epochs","learning_rate_decay_epochs"}, {"-dev","device"}, {"-devd","spec_draft_device"},
        {"-dio","direct_io"}, {"-dr","docker_repo"}, {"-dt","defrag_thold"}, {"-e","escape"},
        {"-epochs","epochs"}, {"-f","file"}, {"-fa","flash_attn"}, {"-fit","fit"}, {"-fitc","fit_ctx"},
        {"-fitp","fit_print"}, {"-fitt","fit_target"}, {"-gan","grp_attn_n"}, {"-gaw","grp_attn_w"},
        {"-h","help"}, {"-hf","hf_repo"}, {"-hfd","spec_draft_hf"}, {"-hff","hf_file"}, {"-hfr","hf_repo"},
        {"-hfrd","spec_draft_hf"}, {"-hft","hf_token"}, {"-i","interactive"}, {"-if","interactive_first"},
        {"-j","json_schema"}, {"-jf","json_schema_file"}, {"-kvo","kv_offload"}, {"-kvu","kv_unified"},
        {"-l","logit_bias"}, {"-lcd","lookup_cache_dynamic"}, {"-lcs","lookup_cache_static"},
        {"-lm","load_mode"}, {"-lr","learning_rate"}, {"-lr-min","learning_rate_min"}, {"-lv","verbosity"},
        {"-m","model"}, {"-md","spec_draft_model"}, {"-mg","main_gpu"}, {"-mli","multiline_input"},
        {"-mm","mmproj"}, {"-mmu","mmproj_url"}, {"-mu","model_url"}, {"-n","predict"},
        {"-ncmoe","n_cpu_moe"}, {"-ncmoed","spec_draft_n_cpu_moe"}, {"-ngl","gpu_layers"},
        {"-ngld","spec_draft_ngl"}, {"-np","parallel"}, {"-npl","npl"}, {"-npp","npp"},
        {"-ns","sequences"}, {"-ntg","ntg"}, {"-o","output"}, {"-ofreq","output_frequency"},
        {"-opt","optimizer"}, {"-ot","override_tensor"}, {"-otd","spec_draft_override_tensor"},
        {"-p","prompt"}, {"-pps","pps"}, {"-ptc","print_token_count"}, {"-r","reverse_prompt"},
        {"-rea","reasoning"}, {"-s","seed"}, {"-sm","split_mode"}, {"-sp","special"},
        {"-sps","slot_prompt_similarity"}, {"-st","single_turn"}, {"-sys","system_prompt"},
        {"-sysf","system_prompt_file"}, {"-t","threads"}, {"-tb","threads_batch"},
        {"-tbd","spec_draft_threads_batch"}, {"-td","spec_draft_threads"}, {"-tgs","tgs"},
        {"-to","timeout"}, {"-ts","tensor_split"}, {"-ub","ubatch_size"}, {"-v","verbose"},
        {"-val-split","val_split"}, {"-wd","weight_decay"}, {"load-on-startup","load_on_startup"},
        {"stop-timeout","stop_timeout"},
        {NULL, NULL},
};

/* vLLM's and SGLang's flags that take no value (argparse store_true / BooleanOptionalAction). */
static const char *const vllm_bools[] = {
        "--enforce-eager", "--enable-prefix-caching", "--trust-remote-code", "--disable-log-requests",
        "--disable-log-stats", "--enable-log-requests", "--enable-chunked-prefill", "--async-scheduling",
        "--disable-uvicorn-access-log", "--enable-auto-tool-choice", "--enable-prompt-tokens-details",
        "--enable-per-request-metrics", "--enable-server-load-tracking", "--enable-tokenizer-info-endpoint",
        "--disable-custom-all-reduce", "--enable-expert-parallel", "--enable-sleep-mode", "--enable-lora",
        "--disable-frontend-multiprocessing", "--headless", "--skip-tokenizer-init", "--enable-force-include-usage",
        "--enable-log-outputs", "--disable-fastapi-docs", "--enable-request-id-headers", "--enable-eplb",
        "--enable-dbo", "--enable-return-routed-experts", "--disable-cascade-attn", "--enable-mfu-metrics",
        /* SGLang */
        "--disable-radix-cache", "--disable-cuda-graph", "--enable-metrics", "--disable-overlap-schedule",
        "--enable-torch-compile", "--enable-dp-attention", "--enable-mixed-chunk", "--disable-cuda-graph-padding",
        "--enable-cache-report", "--skip-server-warmup", "--log-requests", "--enable-p2p-check",
        "--disable-chunked-prefix-cache", "--enable-deterministic-inference",
        NULL,
};

static bool in_list(const char *const *list, const char *w)
{
        for (size_t i = 0; list[i]; i++)
                if (streq(list[i], w))
                        return true;
        return false;
}

/* A word the server's parser takes for a flag: a dash and not a negative number ("-1", "-.5"). */
static bool is_flag(const char *w)
{
        return w && w[0] == '-' && w[1] && !isdigit((unsigned char)w[1]) &&
               !(w[1] == '.' && isdigit((unsigned char)w[2]));
}

static bool is_bool_flag(const char *kind, const char *name)
{
        if (streq_ptr(kind, "llama-server"))
                return in_list(llama_bools, name);
        if (startswith(name, "--no-"))
                return true;
        if (streq_ptr(kind, "vllm") || streq_ptr(kind, "sglang"))
                return in_list(vllm_bools, name);
        return false;
}

/* The key of a flag name (no value part): long names without dashes, '-' as '_', short ones mapped. */
static char *flag_key(const char *kind, const char *name)
{
        char *k = NULL;

        if (streq_ptr(kind, "llama-server") && !startswith(name, "--"))
                for (size_t i = 0; llama_shorts[i][0] && !k; i++)
                        if (streq(llama_shorts[i][0], name))
                                k = xstrdup(llama_shorts[i][1]);
        if (!k) {
                k = xstrdup(name + strspn(name, "-"));
                for (char *p = k; *p; p++)
                        if (*p == '-')
                                *p = '_';
        }
        return k;
}

static bool env_has(json_t *env, const char *name)
{
        json_t *e;
        size_t i, n = strlen(name);

        json_array_foreach(env, i, e) {
                const char *s = json_string_value(e);
                if (s && strncmp(s, name, n) == 0 && s[n] == '=')
                        return true;
        }
        return false;
}

static void set_default(json_t *flags, const char *key, json_t *v)
{
        if (!json_object_get(flags, key))
                json_object_set_new(flags, key, v);
        else
                json_decref(v);
}

static void kind_defaults(const char *kind, json_t *flags, json_t *env)
{
        if (streq_ptr(kind, "vllm")) {
                set_default(flags, "enable_prefix_caching", json_true());
                set_default(flags, "enforce_eager", json_false());
        } else if (streq_ptr(kind, "llama-server")) {
                json_t *cp = json_object_get(flags, "cache_prompt");
                set_default(flags, "enable_prefix_caching", json_boolean(!json_is_false(cp)));
                set_default(flags, "flash_attn", json_string("auto"));
                set_default(flags, "enforce_eager", json_boolean(env_has(env, "GGML_CUDA_DISABLE_GRAPHS")));
        } else if (streq_ptr(kind, "sglang")) {
                set_default(flags, "enable_prefix_caching",
                            json_boolean(!json_is_true(json_object_get(flags, "disable_radix_cache"))));
                set_default(flags, "enforce_eager",
                            json_boolean(json_is_true(json_object_get(flags, "disable_cuda_graph"))));
        }
}

json_t *mx_server_flags(const char *kind, json_t *argv, json_t *env)
{
        json_t *flags = json_object();
        size_t n = json_array_size(argv);

        for (size_t i = 1; i < n; i++) {
                const char *w = json_string_value(json_array_get(argv, i));
                const char *next = i + 1 < n ? json_string_value(json_array_get(argv, i + 1)) : NULL;
                const char *eq;
                _cleanup_free_ char *name = NULL, *key = NULL;

                if (!is_flag(w))
                        continue; /* positional (vllm serve MODEL) or a value already taken */
                eq = startswith(w, "--") ? strchr(w, '=') : NULL;
                name = eq ? xstrndup(w, (size_t)(eq - w)) : xstrdup(w);
                key = flag_key(kind, name);
                if (eq)
                        json_object_set_new(flags, key, json_string(eq + 1));
                else if (is_bool_flag(kind, name) || !next || is_flag(next)) {
                        bool neg = startswith(key, "no_") && key[3];
                        json_object_set_new(flags, neg ? key + 3 : key, json_boolean(!neg));
                } else {
                        json_object_set_new(flags, key, json_string(next));
                        i++;
                }
        }
        kind_defaults(kind, flags, env);
        return flags;
}
