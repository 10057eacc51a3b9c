/* SPDX-License-Identifier: MIT */
/* Server command lines read as each server reads them, with each kind's real defaults (seed 002's block). */
#include "test.h"

#include "server-flags.h"

static json_t *argv_of(const char *words)
{
        json_t *a = json_array();
        _cleanup_free_ char *copy = xstrdup(words);
        char *save = NULL;

        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
                json_array_append_new(a, json_string(w));
        return a;
}

static const char *str(json_t *flags, const char *key)
{
        return json_string_value(json_object_get(flags, key));
}

TEST(llama_server_booleans_take_no_value_and_shorts_get_long_names)
{
        json_auto_t *argv = argv_of("llama-server -m m.gguf --metrics -lv 4 -fa on --no-warmup -c 40960 -ngl 99 "
                                    "--port 8080 --jinja");
        json_auto_t *f = mx_server_flags("llama-server", argv, NULL);

        /* seed 002's block said metrics: "-lv" */
        ASSERT_TRUE(json_is_true(json_object_get(f, "metrics")));
        ASSERT_STREQ(str(f, "verbosity"), "4");
        ASSERT_STREQ(str(f, "flash_attn"), "on");
        ASSERT_TRUE(json_is_false(json_object_get(f, "warmup")));
        ASSERT_STREQ(str(f, "ctx_size"), "40960");
        ASSERT_STREQ(str(f, "gpu_layers"), "99"); /* -ngl, --gpu-layers, --n-gpu-layers */
        ASSERT_STREQ(str(f, "model"), "m.gguf");
        ASSERT_TRUE(json_is_true(json_object_get(f, "jinja")));
        ASSERT_NULL(json_object_get(f, "lv"));
        /* its prompt cache is on by default: not "enable_prefix_caching: false" */
        ASSERT_TRUE(json_is_true(json_object_get(f, "enable_prefix_caching")));
        ASSERT_TRUE(json_is_false(json_object_get(f, "enforce_eager")));
}

TEST(llama_server_defaults_and_their_overrides)
{
        json_auto_t *argv = argv_of("llama-server -m m.gguf --no-cache-prompt");
        json_auto_t *env = json_pack("[s]", "GGML_CUDA_DISABLE_GRAPHS=");
        json_auto_t *f = mx_server_flags("llama-server", argv, env);
        json_auto_t *argv2 = argv_of("llama-server -m m.gguf");
        json_auto_t *g = mx_server_flags("llama-server", argv2, NULL);

        ASSERT_TRUE(json_is_false(json_object_get(f, "cache_prompt")));
        ASSERT_TRUE(json_is_false(json_object_get(f, "enable_prefix_caching")));
        /* presence-based: an empty value turns CUDA graphs off too */
        ASSERT_TRUE(json_is_true(json_object_get(f, "enforce_eager")));
        ASSERT_STREQ(str(g, "flash_attn"), "auto");
        ASSERT_TRUE(json_is_true(json_object_get(g, "enable_prefix_caching")));
}

TEST(vllm_booleans_negations_equals_and_defaults)
{
        json_auto_t *argv = argv_of("vllm serve openai/gpt-oss-120b --enforce-eager --max-model-len 131072 "
                                    "--no-enable-prefix-caching --gpu-memory-utilization=0.7 --trust-remote-code "
                                    "--quantization mxfp4");
        json_auto_t *f = mx_server_flags("vllm", argv, NULL);
        json_auto_t *argv2 = argv_of("vllm serve m --enable-prefix-caching --load-format fastsafetensors");
        json_auto_t *g = mx_server_flags("vllm", argv2, NULL);
        json_auto_t *argv3 = argv_of("vllm serve m");
        json_auto_t *h = mx_server_flags("vllm", argv3, NULL);

        ASSERT_TRUE(json_is_true(json_object_get(f, "enforce_eager")));
        ASSERT_STREQ(str(f, "max_model_len"), "131072");
        ASSERT_TRUE(json_is_false(json_object_get(f, "enable_prefix_caching")));
        ASSERT_STREQ(str(f, "gpu_memory_utilization"), "0.7");
        ASSERT_TRUE(json_is_true(json_object_get(f, "trust_remote_code")));
        ASSERT_STREQ(str(f, "quantization"), "mxfp4");
        /* a boolean flag never takes the next word, even when it is no flag */
        ASSERT_TRUE(json_is_true(json_object_get(g, "enable_prefix_caching")));
        ASSERT_STREQ(str(g, "load_format"), "fastsafetensors");
        /* V1's defaults for a generative model */
        ASSERT_TRUE(json_is_true(json_object_get(h, "enable_prefix_caching")));
        ASSERT_TRUE(json_is_false(json_object_get(h, "enforce_eager")));
        ASSERT_NULL(json_object_get(h, "serve"));
}

TEST(sglang_radix_cache_and_cuda_graphs)
{
        json_auto_t *argv = argv_of("python -m sglang.launch_server --model-path m --disable-radix-cache "
                                    "--disable-cuda-graph --tp 2");
        json_auto_t *f = mx_server_flags("sglang", argv, NULL);
        json_auto_t *argv2 = argv_of("python -m sglang.launch_server --model-path m");
        json_auto_t *g = mx_server_flags("sglang", argv2, NULL);

        ASSERT_TRUE(json_is_false(json_object_get(f, "enable_prefix_caching")));
        ASSERT_TRUE(json_is_true(json_object_get(f, "enforce_eager")));
        ASSERT_STREQ(str(f, "tp"), "2");
        ASSERT_STREQ(str(f, "model_path"), "m");
        ASSERT_TRUE(json_is_true(json_object_get(g, "enable_prefix_caching")));
}

TEST(unknown_servers_flag_after_flag_has_no_value_and_negative_numbers_are_values)
{
        json_auto_t *argv = argv_of("server --metrics -lv 4 --seed -1 --last");
        json_auto_t *f = mx_server_flags("command", argv, NULL);

        ASSERT_TRUE(json_is_true(json_object_get(f, "metrics")));
        ASSERT_STREQ(str(f, "lv"), "4");
        ASSERT_STREQ(str(f, "seed"), "-1");
        ASSERT_TRUE(json_is_true(json_object_get(f, "last")));
        /* nothing is claimed about a server of unknown kind */
        ASSERT_NULL(json_object_get(f, "enable_prefix_caching"));
        ASSERT_NULL(json_object_get(f, "enforce_eager"));
}
