/* SPDX-License-Identifier: MIT */
/*
 * The error texts a crashing vLLM prints: Python tracebacks logged through
 * vLLM's logger (every line carries the log prefix, as its NewLineFormatter
 * does), CUDA error strings, and the process's way of dying. Wording follows
 * target-surfaces.md §A2.5 and the seeds' known issues; the daemon matches
 * loosely, so the point is the recognisable parts (cudaErrorIllegalInstruction,
 * "Engine core proc EngineCore_DP0 died unexpectedly", ...).
 */
#include "sim.h"

#include <signal.h>

#define VLLM_SRC "/workspace/vllm/vllm"

/* The frames of a forward pass: replayed from a CUDA graph, or run eagerly. */
static const char graph_frames[] =
        "  File \"" VLLM_SRC "/v1/worker/gpu_model_runner.py\", line 2461, in execute_model\n"
        "    model_output = self._model_forward(\n"
        "  File \"" VLLM_SRC "/compilation/cuda_graph.py\", line 205, in __call__\n"
        "    entry.cudagraph.replay()\n";
static const char eager_frames[] =
        "  File \"" VLLM_SRC "/v1/worker/gpu_model_runner.py\", line 2461, in execute_model\n"
        "    model_output = self._model_forward(\n"
        "  File \"" VLLM_SRC "/model_executor/layers/fused_moe/layer.py\", line 1870, in forward_impl\n"
        "    final_hidden_states = self.quant_method.apply(\n";

/* The exception a failing forward pass raises. */
static const struct {
        enum sim_crash kind;
        const char *exception;
} request_errors[] = {
        {SIM_CRASH_ILLEGAL_INSTRUCTION,
         "torch.AcceleratorError: CUDA error: an illegal instruction was encountered "
         "(cudaErrorIllegalInstruction)\n"
         "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
         "below might be incorrect.\n"
         "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
         "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."},
        {SIM_CRASH_LAUNCH_FAILURE,
         "torch.AcceleratorError: CUDA error: unspecified launch failure (cudaErrorLaunchFailure)\n"
         "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
         "below might be incorrect.\n"
         "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
         "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."},
};

static void log_lines(enum sim_level level, const char *where, const char *text)
{
        for (const char *p = text; *p;) {
                const char *nl = strchrnul(p, '\n');
                sim_log(level, where, "%.*s", (int)(nl - p), p);
                p = *nl ? nl + 1 : nl;
        }
}

void sim_tb_engine_fatal(enum sim_crash kind, const char *where, bool graphs)
{
        if (kind == SIM_CRASH_SEGFAULT) {
                /* faulthandler writes straight to stderr, no logger involved */
                sim_print(STDERR_FILENO, "Fatal Python error: Segmentation fault");
                sim_print(STDERR_FILENO, "%s", "");
                sim_print(STDERR_FILENO, "Thread 0x00007f3a2c9ff6c0 (most recent call first):");
                sim_print(STDERR_FILENO,
                          "  File \"%s/model_executor/layers/fused_moe/layer.py\", line 1870 "
                          "in forward_impl",
                          VLLM_SRC);
                sim_print(STDERR_FILENO, "  File \"%s/v1/engine/core.py\", line 322 in step", VLLM_SRC);
                sim_print(STDERR_FILENO, "Segmentation fault");
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(request_errors); i++) {
                if (request_errors[i].kind != kind)
                        continue;
                sim_log(SIM_ERROR, "core.py:710", "EngineCore encountered a fatal error.");
                log_lines(SIM_ERROR, "core.py:710",
                          "Traceback (most recent call last):\n"
                          "  File \"" VLLM_SRC "/v1/engine/core.py\", line 701, in run_engine_core\n"
                          "    engine_core.run_busy_loop()\n"
                          "  File \"" VLLM_SRC "/v1/engine/core.py\", line 728, in run_busy_loop\n"
                          "    self._process_engine_step()\n"
                          "  File \"" VLLM_SRC "/v1/engine/core.py\", line 754, in _process_engine_step\n"
                          "    outputs, model_executed = self.step_fn()\n");
                log_lines(SIM_ERROR, "core.py:710", graphs ? graph_frames : eager_frames);
                if (where)
                        sim_log(SIM_ERROR, "core.py:710", "    # in %s", where);
                log_lines(SIM_ERROR, "core.py:710", request_errors[i].exception);
                sim_print(STDERR_FILENO,
                          "terminate called after throwing an instance of 'c10::AcceleratorError'");
                sim_print(STDERR_FILENO, "  what():  CUDA error: %s",
                          kind == SIM_CRASH_LAUNCH_FAILURE ? "unspecified launch failure"
                                                           : "an illegal instruction was encountered");
                return;
        }
}

/* Start-up failures: the frames up to the failing call and the exception text. */
static const struct {
        enum sim_crash kind;
        const char *frames;
        const char *exception;
} startup_errors[] = {
        {SIM_CRASH_OOM,
         "  File \"" VLLM_SRC "/v1/worker/gpu_model_runner.py\", line 2602, in load_model\n"
         "    self.model = model_loader.load_model(\n"
         "  File \"" VLLM_SRC "/model_executor/model_loader/base_loader.py\", line 45, in load_model\n"
         "    model = initialize_model(vllm_config=vllm_config,\n",
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.98 GiB. GPU 0 has a total "
         "capacity "
         "of 119.70 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 420.00 "
         "MiB "
         "memory in use. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved "
         "by "
         "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
         "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"},
        {SIM_CRASH_CUDA_INIT,
         "  File \"" VLLM_SRC "/v1/worker/gpu_worker.py\", line 263, in determine_available_memory\n"
         "    self.model_runner.profile_run()\n"
         "  File \"" VLLM_SRC "/v1/worker/gpu_model_runner.py\", line 3187, in profile_run\n"
         "    hidden_states, last_hidden_states = self._dummy_run(\n",
         "torch.AcceleratorError: CUDA error: an illegal instruction was encountered "
         "(cudaErrorIllegalInstruction)\n"
         "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
         "below might be incorrect.\n"
         "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"},
        {SIM_CRASH_PTXAS,
         "  File \"/usr/local/lib/python3.12/dist-packages/triton/compiler/compiler.py\", line 359, in "
         "compile\n"
         "    next_module = compile_ir(module, metadata)\n"
         "  File \"/usr/local/lib/python3.12/dist-packages/triton/backends/nvidia/compiler.py\", line 461, "
         "in make_cubin\n"
         "    raise PTXASError(f\"{error}\\n\"\n",
         "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
         "`ptxas` stderr:\n"
         "ptxas /tmp/tmp5e0k_3xq.ptx, line 1187; error   : Feature '.tile::scatter4' not supported on "
         ".target 'sm_121a'\n"
         "ptxas fatal   : Ptx assembly aborted due to errors"},
        {SIM_CRASH_TMA_LAYOUT,
         "  File \"/workspace/flashinfer/flashinfer/jit/core.py\", line 294, in build_and_load\n"
         "    self.build(verbose, need_lock=False)\n"
         "  File \"/workspace/flashinfer/flashinfer/jit/cpp_ext.py\", line 281, in run_ninja\n"
         "    raise RuntimeError(msg) from e\n",
         "RuntimeError: Ninja build failed. Ninja output:\n"
         "[1/4] /usr/local/cuda/bin/nvcc -gencode=arch=compute_121a,code=sm_121a -c "
         "fused_moe_gemm_mxfp4_sm120_64x128.cu -o fused_moe_gemm_mxfp4_sm120_64x128.cuda.o\n"
         "FAILED: fused_moe_gemm_mxfp4_sm120_64x128.cuda.o\n"
         "/workspace/flashinfer/3rdparty/cutlass/include/cute/atom/copy_traits_sm90_tma.hpp(1018): error: "
         "static assertion failed with \"CTA_Tile and SLayout top-level size equivalence.\"\n"
         "1 error detected in the compilation of \"fused_moe_gemm_mxfp4_sm120_64x128.cu\".\n"
         "ninja: build stopped: subcommand failed."},
        {SIM_CRASH_NO_SM100,
         "  File \"/workspace/flashinfer/flashinfer/fused_moe/core.py\", line 1510, in "
         "trtllm_fp4_block_scale_moe\n"
         "    get_trtllm_moe_sm100_module().trtllm_fp4_block_scale_moe(\n",
         "RuntimeError: No supported CUDA architectures found for major versions [10]."},
};

void sim_tb_engine_startup(enum sim_crash kind, const char *detail)
{
        for (size_t i = 0; i < ELEMENTSOF(startup_errors); i++) {
                if (startup_errors[i].kind != kind)
                        continue;
                sim_log(SIM_ERROR, "core.py:708", "EngineCore failed to start.");
                log_lines(SIM_ERROR, "core.py:708",
                          "Traceback (most recent call last):\n"
                          "  File \"" VLLM_SRC "/v1/engine/core.py\", line 699, in run_engine_core\n"
                          "    engine_core = EngineCoreProc(*args, **kwargs)\n"
                          "  File \"" VLLM_SRC "/v1/engine/core.py\", line 498, in __init__\n"
                          "    super().__init__(vllm_config, executor_class, log_stats,\n");
                log_lines(SIM_ERROR, "core.py:708", startup_errors[i].frames);
                if (detail)
                        sim_log(SIM_ERROR, "core.py:708", "    # %s", detail);
                log_lines(SIM_ERROR, "core.py:708", startup_errors[i].exception);
                return;
        }
}

void sim_tb_engine_init_failed(void)
{
        static const char text[] =
                "Traceback (most recent call last):\n"
                "  File \"/usr/local/bin/vllm\", line 10, in <module>\n"
                "    sys.exit(main())\n"
                "  File \"" VLLM_SRC "/entrypoints/cli/main.py\", line 54, in main\n"
                "    args.dispatch_function(args)\n"
                "  File \"" VLLM_SRC "/entrypoints/cli/serve.py\", line 57, in cmd\n"
                "    uvloop.run(run_server(args))\n"
                "  File \"" VLLM_SRC "/v1/engine/utils.py\", line 900, in wait_for_engine_startup\n"
                "    raise RuntimeError(\n"
                "RuntimeError: Engine core initialization failed. See root cause above. "
                "Failed core proc(s): {'EngineCore_DP0': 1}";

        sim_print_block(STDERR_FILENO, text);
}

void sim_tb_engine_dead(void)
{
        sim_log(SIM_ERROR, "async_llm.py:480", "AsyncLLM output_handler failed.");
        log_lines(SIM_ERROR, "async_llm.py:480",
                  "Traceback (most recent call last):\n"
                  "  File \"" VLLM_SRC "/v1/engine/async_llm.py\", line 439, in output_handler\n"
                  "    outputs = await engine_core.get_output_async()\n"
                  "  File \"" VLLM_SRC "/v1/engine/core_client.py\", line 846, in get_output_async\n"
                  "    raise self._format_exception(outputs) from None\n"
                  "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
                  "trace "
                  "(above) for the root cause.");
}

void sim_tb_import_error(void)
{
        static const char *const lines[] = {
                "Traceback (most recent call last):",
                "  File \"/usr/local/bin/vllm\", line 5, in <module>",
                "    from vllm.entrypoints.cli.main import main",
                "  File \"" VLLM_SRC "/entrypoints/cli/__init__.py\", line 3, in <module>",
                "    from vllm.entrypoints.cli.benchmark.latency import BenchmarkLatencySubcommand",
                "  File \"" VLLM_SRC "/_custom_ops.py\", line 14, in <module>",
                "    import vllm._C  # noqa",
                "ModuleNotFoundError: No module named 'vllm._C'",
        };

        for (size_t i = 0; i < ELEMENTSOF(lines); i++)
                sim_print_raw(STDERR_FILENO, "%s", lines[i]);
}

void sim_crash_die(enum sim_crash kind)
{
        struct sigaction sa = {.sa_handler = SIG_DFL};
        int sig = kind == SIM_CRASH_SEGFAULT ? SIGSEGV : SIGABRT;

        /* sanitizers install their own handlers; the process must die by the signal itself */
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, NULL);
        raise(sig);
        _exit(128 + sig);
}
