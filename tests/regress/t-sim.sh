#!/usr/bin/env bash
# mxsim, the simulated target (tests/sim/README.md): every documented
# behaviour against the real binary, driven with curl. Exit 0 pass, 1 fail,
# 77 skip. Every process started here carries MXSIM_TEST_TAG in its
# environment; the exit trap kills whatever still carries it (orphaned and
# escaped engines included), so nothing outlives the test.
set -u

build=${MX_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build}
sim=$build/tests/sim/mxsim
[ -x "$sim" ] || { echo "SKIP: $sim is not built"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
command -v flock >/dev/null || { echo "SKIP: flock (util-linux) is not installed"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-sim.XXXXXX")
export MXSIM_TEST_TAG="t-sim-$$-$RANDOM"
export MXSIM_GPU_LOCK=$tmp/gpu.lock
export MXSIM_LOAD_S=0.3 MXSIM_WATCHDOG_S=0.5 MXSIM_TOKEN_MS=1 MXSIM_SHUTDOWN_WAIT_S=0.5
unset MXSIM_FAULTS MXSIM_FLAVOR MXSIM_KERNEL_REPORT VLLM_MXFP4_MOE_KERNEL VLLM_MXFP4_ACTIVATION \
        VLLM_USE_ATTENTION_SINKS FLASHINFER_MOE_TILE VLLM_KEEP_ALIVE_ON_ENGINE_DEATH
ulimit -c 0

# Kill every process that carries our tag (sims, orphaned and escaped engines).
sweep() {
        local e pid
        for e in /proc/[0-9]*/environ; do
                pid=${e#/proc/}; pid=${pid%/environ}
                [ "$pid" = $$ ] && continue
                if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "MXSIM_TEST_TAG=$MXSIM_TEST_TAG"; then
                        kill -9 "$pid" 2>/dev/null
                fi
        done
}
cleanup() {
        sweep
        wait 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

name=""
fail() {
        echo "FAIL [$name]: $*"
        for f in "$tmp/$name".out "$tmp/$name".err; do
                [ -f "$f" ] && { echo "--- $f (last 40 lines)"; tail -40 "$f"; }
        done
        exit 1
}
pass() { echo "ok   [$name] $*"; }

port_in_use() {
        local hex
        hex=$(printf ':%04X' "$1")
        awk -v h="$hex" 'NR > 1 && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }' \
                /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port() {
        local p i
        for i in $(seq 100); do
                p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
                port_in_use "$p" || { echo "$p"; return 0; }
        done
        return 1
}

# start NAME [VAR=value...] -- [mxsim serve args...]: background sim; sets PID and PORT.
start() {
        name=$1; shift
        local envs=()
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
        [ "${1:-}" = "--" ] && shift
        PORT=$(free_port) || fail "no free port"
        env "${envs[@]}" "$sim" serve openai/gpt-oss-120b --port "$PORT" "$@" \
                >"$tmp/$name.out" 2>"$tmp/$name.err" &
        PID=$!
}
url() { echo "http://127.0.0.1:$PORT$1"; }
# status PATH: the HTTP status of GET PATH ("000" when refused).
status() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$(url "$1")"; }
# wait_ready [seconds]: until /health answers 200.
wait_ready() {
        local deadline=$((SECONDS + ${1:-10}))
        while [ $SECONDS -le $deadline ]; do
                [ "$(status /health)" = 200 ] && return 0
                kill -0 "$PID" 2>/dev/null || fail "server exited before it was ready"
                sleep 0.05
        done
        fail "not ready after ${1:-10}s"
}
# wait_exit [seconds]: until the server exits; sets RC.
wait_exit() {
        local deadline=$((SECONDS + ${1:-10}))
        while kill -0 "$PID" 2>/dev/null; do
                [ $SECONDS -le $deadline ] || fail "still running after ${1:-10}s"
                sleep 0.05
        done
        wait "$PID"
        RC=$?
}
# post PATH JSON [outfile]: POST, body to outfile (default $tmp/body), prints the status.
post() {
        curl -s -o "${3:-$tmp/body}" -w '%{http_code}' --max-time "${POST_TIMEOUT:-10}" \
                -H 'Content-Type: application/json' -d "$2" "$(url "$1")"
}
# field KEY [file]: the first "KEY":value of a JSON body (value as text).
field() { grep -o "\"$1\":\(\"[^\"]*\"\|[^,}]*\)" "${2:-$tmp/body}" | head -1 | sed "s/^\"$1\"://; s/^\"//; s/\"$//"; }
engine_pid() { grep -o 'EngineCore_DP0 pid=[0-9]*' "$tmp/$name.out" | head -1 | cut -d= -f2; }
logged() { grep -qF -- "$1" "$tmp/$name.out" "$tmp/$name.err"; }
line_of() { grep -nF -- "$1" "$tmp/$name.out" | head -1 | cut -d: -f1; }
gone() { # gone PID [seconds]
        local deadline=$((SECONDS + ${2:-5}))
        while kill -0 "$1" 2>/dev/null; do
                [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] && return 0
                [ $SECONDS -le $deadline ] || return 1
                sleep 0.05
        done
}
stop() { kill -TERM "$PID" 2>/dev/null; wait_exit 10; }

# ---------------------------------------------------------------- vLLM start-up
start startup VLLM_USE_CUDA_GRAPH=1 MXSIM_LOAD_S=0.8 -- --served-model-name gpt-oss-120b \
        --gpu-memory-utilization 0.70 --enable-prefix-caching --load-format fastsafetensors
sleep 0.2
code=$(status /health)
[ "$code" = 000 ] || fail "expected connection refused while loading, got HTTP $code"
wait_ready
pass "connection refused while loading, then /health 200"
prev=0
for l in "vLLM API server version" "non-default args: {" "Unknown vLLM environment variable detected: VLLM_USE_CUDA_GRAPH" \
         "Using 'MARLIN' Mxfp4 MoE backend." "Model loading took" "GPU KV cache size:" "Graph capturing finished" \
         "init engine (profile, create kv cache, warmup model) took" "Starting vLLM server on http://0.0.0.0:$PORT" \
         "Available routes are:" "Route: /v1/completions" "INFO:     Started server process" \
         "INFO:     Waiting for application startup." "INFO:     Application startup complete."; do
        n=$(line_of "$l")
        [ -n "$n" ] || fail "start-up line missing: $l"
        [ "$n" -gt "$prev" ] || fail "start-up line out of order: $l"
        prev=$n
done
grep -q "'load_format': 'fastsafetensors'" "$tmp/startup.out" || fail "non-default args lack load_format"
grep -q "'gpu_memory_utilization': 0.7," "$tmp/startup.out" || fail "non-default args: float not as Python prints it"
grep -q "Capturing CUDA graphs (decode, FULL)" "$tmp/startup.err" || fail "no graph capture progress on stderr"
pass "start-up log lines in vLLM's order"

[ "$(curl -s "$(url /v1/models)" | grep -o '"id":"[^"]*"' | head -1)" = '"id":"gpt-oss-120b"' ] ||
        fail "/v1/models does not list the served name"
curl -s "$(url /version)" | grep -q '"version":"0\.' || fail "/version"
[ "$(post /v1/completions '{"prompt":"Hello there, how are you today?","max_tokens":37,"seed":7}')" = 200 ] ||
        fail "completion failed"
[ "$(field completion_tokens)" = 37 ] || fail "completion_tokens $(field completion_tokens) != 37"
[ "$(field finish_reason)" = length ] || fail "finish_reason $(field finish_reason)"
text1=$(field text)
prompt_tokens=$(field prompt_tokens)
[ "$(echo "$text1" | wc -w)" = 37 ] || fail "37 tokens should be 37 words: '$text1'"
post /v1/completions '{"prompt":"Hello there, how are you today?","max_tokens":37,"seed":7}' >/dev/null
[ "$(field text)" = "$text1" ] || fail "same prompt and seed gave different text"
post /v1/completions '{"prompt":"Hello there, how are you today?","max_tokens":37,"seed":8}' >/dev/null
[ "$(field text)" != "$text1" ] || fail "different seeds gave the same text"
pass "exact token counts, deterministic output per seed"

post /tokenize '{"prompt":"Hello there, how are you today?"}' >/dev/null
[ "$(field count)" = "$prompt_tokens" ] || fail "/tokenize count $(field count) != prompt_tokens $prompt_tokens"
post /tokenize "{\"prompt\":\"$text1\"}" >/dev/null
ids=$(grep -o '"tokens":\[[^]]*\]' "$tmp/body" | sed 's/"tokens"://')
post /detokenize "{\"tokens\":$ids}" >/dev/null
[ "$(field prompt)" = "$text1" ] || fail "detokenize(tokenize(text)) != text"
pass "/tokenize agrees with usage; generated text round-trips"

post /v1/completions '{"prompt":"abc","max_tokens":5,"logprobs":3,"seed":1}' >/dev/null
lps=$(grep -o '"token_logprobs":\[[^]]*\]' "$tmp/body")
[ "$(echo "$lps" | grep -o -- '-[0-9.e-]*' | wc -l)" = 5 ] || fail "token_logprobs: $lps"
[ "$(grep -o '"top_logprobs":\[{[^]]*\]' "$tmp/body" | grep -o '{' | wc -l)" = 5 ] || fail "top_logprobs"
post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":9,"logprobs":true,"top_logprobs":2}' >/dev/null
[ "$(field completion_tokens)" = 9 ] || fail "chat completion_tokens"
grep -q '"content":"[a-z]' "$tmp/body" || fail "chat content is not text"
grep -q '"top_logprobs":\[{"token"' "$tmp/body" || fail "chat logprobs"
pass "logprobs (completions and chat), chat content"

word=$(echo "$text1" | awk '{print $5}')
post /v1/completions "{\"prompt\":\"Hello there, how are you today?\",\"max_tokens\":37,\"seed\":7,\"stop\":[\" $word\"]}" >/dev/null
[ "$(field finish_reason)" = stop ] && [ "$(field stop_reason)" = " $word" ] || fail "stop string: $(cat "$tmp/body")"
[ "$(field completion_tokens)" = 5 ] || fail "stop string at word 5: completion_tokens $(field completion_tokens)"
pass "stop strings cut the text and count the tokens up to the stop"

post /v1/completions '{"prompt":"Hello world","max_tokens":2,"echo":true,"n":3,"seed":1}' >/dev/null
[ "$(grep -o '"text":"Hello world [a-z]* [a-z]*"' "$tmp/body" | wc -l)" = 3 ] || fail "echo / n=3: $(cat "$tmp/body")"
[ "$(field completion_tokens)" = 6 ] && [ "$(field prompt_tokens)" = 2 ] || fail "n=3 usage"
pass "echo and n>1"

curl -sN --max-time 10 -H 'Content-Type: application/json' "$(url /v1/completions)" \
        -d '{"prompt":"hi","max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}' >"$tmp/sse"
[ "$(grep -c '^data: {"id"' "$tmp/sse")" -ge 13 ] || fail "stream: too few events: $(cat "$tmp/sse")"
[ "$(tail -2 "$tmp/sse" | head -1)" = "data: [DONE]" ] || fail "stream does not end in data: [DONE]"
grep '"choices":\[\]' "$tmp/sse" | grep -q '"completion_tokens":12' || fail "stream: no usage chunk"
curl -sN --max-time 10 -H 'Content-Type: application/json' "$(url /v1/chat/completions)" \
        -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}' >"$tmp/sse"
grep -q '"delta":{"role":"assistant"' "$tmp/sse" || fail "chat stream: no role delta"
grep -q '"finish_reason":"length"' "$tmp/sse" || fail "chat stream: no finish_reason"
pass "SSE streaming (completions with usage, chat)"

[ "$(post /v1/completions '{"prompt":"","max_tokens":5}')" = 400 ] || fail "empty prompt not 400"
[ "$(field code)" = 400 ] || fail "error.code != 400"
[ "$(post /v1/completions '{"prompt":"hi","stream_options":{"include_usage":true}}')" = 400 ] ||
        fail "stream_options without stream not 400"
grep -qF 'Stream options can only be defined when `stream=True`.' "$tmp/body" || fail "stream_options message"
[ "$(post /v1/completions '{"prompt":"hi","stream":true,"prompt_logprobs":1}')" = 400 ] ||
        fail "prompt_logprobs with stream not 400"
[ "$(post /v1/completions '{"model":"other","prompt":"hi"}')" = 404 ] || fail "unknown model not 404"
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":131072}')" = 400 ] || fail "context overflow not 400"
[ "$(post /v1/completions '{"prompt":[1,2,999999]}')" = 400 ] || fail "out-of-vocabulary id not 400"
[ "$(post /v1/completions 'not json')" = 400 ] || fail "bad JSON not 400"
pass "validation errors as vLLM (400/404 with error.code)"

curl -s "$(url /metrics)" >"$tmp/metrics"
grep -q '^vllm:generation_tokens_total{engine="0",model_name="gpt-oss-120b"} ' "$tmp/metrics" ||
        fail "/metrics lacks vllm:generation_tokens_total"
grep -q '^vllm:time_to_first_token_seconds_bucket{' "$tmp/metrics" || fail "/metrics lacks the TTFT histogram"
pass "/metrics in Prometheus text with vllm: names"

POST_TIMEOUT=0.3 post /v1/completions '{"prompt":"hi","max_tokens":100000,"ignore_eos":true}' >/dev/null
curl -sN --max-time 0.3 -H 'Content-Type: application/json' "$(url /v1/completions)" \
        -d '{"prompt":"hi","max_tokens":100000,"ignore_eos":true,"stream":true}' >/dev/null
sleep 0.6
[ "$(grep -c "Aborted request cmpl-" "$tmp/startup.out")" = 2 ] || fail "clients that left were not aborted"
curl -s "$(url /metrics)" | grep -q '^vllm:num_requests_running{engine="0",model_name="gpt-oss-120b"} 0.0$' ||
        fail "aborted requests still running"
pass "requests of clients that disconnect are aborted (streaming and not)"

epid=$(engine_pid)
[ "$(cat "/proc/$epid/comm")" = "VLLM::EngineCor" ] || fail "engine comm is '$(cat "/proc/$epid/comm")'"
[ "$(tr '\0' ' ' <"/proc/$epid/cmdline" | awk '{print $1}')" = "VLLM::EngineCore" ] || fail "engine cmdline"
flock -n "$MXSIM_GPU_LOCK" true && fail "the engine does not hold the GPU lock"
stop
[ "$RC" = 0 ] || fail "SIGTERM: exit status $RC"
logged "Shutting down FastAPI HTTP server." || fail "no graceful shutdown line"
logged "INFO:     Finished server process" || fail "no uvicorn shutdown lines"
gone "$epid" || fail "engine survived a graceful stop"
flock -n "$MXSIM_GPU_LOCK" true || fail "GPU lock still held after a graceful stop"
pass "engine titled VLLM::EngineCore holds the lock; SIGTERM is graceful, exit 0"

# ---------------------------------------------------------------- engine death
start crash MXSIM_FAULTS=crash-after=1
wait_ready
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":3}')" = 200 ] || fail "first completion"
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":3}')" = 500 ] || fail "completion on a crashing engine not 500"
[ "$(status /health)" = 503 ] || fail "/health after engine death not 503"
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":3}')" = 500 ] || fail "completion on a dead engine not 500"
wait_exit 5
[ "$RC" = 0 ] || fail "exit status after engine death $RC, expected 0 (vllm#48966)"
logged "cudaErrorIllegalInstruction" || fail "no illegal-instruction traceback"
logged "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client." || fail "no engine-death line"
logged "EngineDeadError" || fail "no EngineDeadError"
pass "crash-after=1: 200, then 500, /health 503, exit 0 after the watchdog"

start keepalive MXSIM_FAULTS=launch-failure-after=0 VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1
wait_ready
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":3}')" = 500 ] || fail "launch failure not 500"
logged "cudaErrorLaunchFailure" || fail "no launch-failure text"
sleep 1.2
kill -0 "$PID" 2>/dev/null || fail "exited despite VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1"
[ "$(status /health)" = 503 ] || fail "/health not 503"
stop
[ "$RC" = 0 ] || fail "exit status $RC"
pass "launch-failure-after=0 with VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1 stays up with /health 503"

start segv MXSIM_FAULTS=segfault-after=0
wait_ready
epid=$(engine_pid)
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":3}')" = 500 ] || fail "segfault not 500"
logged "Segmentation fault" || fail "no Segmentation fault line"
wait_exit 5
[ "$RC" = 0 ] || fail "exit status $RC"
pass "segfault-after=0: engine dies of SIGSEGV, 500, exit 0"

# ---------------------------------------------------------------- orphans and the GPU lock
start orphan
wait_ready
epid=$(engine_pid)
kill -9 "$PID"; wait "$PID" 2>/dev/null
sleep 0.2
kill -0 "$epid" 2>/dev/null || fail "engine died with its API server (vllm#55510 says it survives)"
flock -n "$MXSIM_GPU_LOCK" true && fail "orphaned engine released the GPU lock"
start second
wait_exit 10
[ "$RC" = 1 ] || fail "second server with the GPU taken: exit $RC, expected 1"
logged "torch.OutOfMemoryError: CUDA out of memory." || fail "no OOM traceback"
logged "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}" ||
        fail "no engine-initialization failure"
kill -TERM "$epid"
gone "$epid" || fail "orphan ignores SIGTERM"
pass "SIGKILLed API server leaves the engine holding the lock; the next server OOMs and exits 1"

start escape MXSIM_FAULTS=engine-escape
wait_ready
epid=$(engine_pid)
api_sid=$(awk '{print $6}' "/proc/$PID/stat")
eng_sid=$(awk '{print $6}' "/proc/$epid/stat")
[ "$api_sid" != "$eng_sid" ] || fail "engine-escape: engine in the API server's session"
[ "$eng_sid" = "$epid" ] || fail "engine-escape: engine is not a session leader"
stop
gone "$epid" || fail "escaped engine survived a graceful stop"
pass "engine-escape puts the engine in its own session"

start ignoreterm MXSIM_FAULTS=engine-ignore-term
wait_ready
epid=$(engine_pid)
kill -TERM "$epid"; sleep 0.3
kill -0 "$epid" 2>/dev/null || fail "engine-ignore-term: engine died of SIGTERM"
t0=$SECONDS
stop
[ "$RC" = 0 ] || fail "exit status $RC"
gone "$epid" 2 || fail "API server did not SIGKILL the engine after the wait"
pass "engine-ignore-term: the API server kills the engine after MXSIM_SHUTDOWN_WAIT_S"

start hangstop MXSIM_FAULTS=hang-stop
wait_ready
kill -TERM "$PID"; sleep 0.5
kill -0 "$PID" 2>/dev/null || fail "hang-stop: exited on SIGTERM"
epid=$(engine_pid)
kill -9 "$PID" "$epid"; wait "$PID" 2>/dev/null
pass "hang-stop ignores SIGTERM"

# ---------------------------------------------------------------- the seed's known issues (no fault flags)
spec='{"method":"eagle3","model":"nvidia/gpt-oss-120b-Eagle3-short-context","num_speculative_tokens":3}'
start eagle3graphs -- --speculative-config "$spec"
wait_ready
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":3}')" = 500 ] || fail "CUDA graphs + Eagle3 did not crash"
logged "cudaErrorIllegalInstruction" || fail "no illegal instruction"
logged "entry.cudagraph.replay()" || fail "not in graph replay"
wait_exit 5
pass "CUDA graphs + Eagle3: illegal instruction on the first completion"

start eagle3eager VLLM_LOG_STATS_INTERVAL=0.2 -- --speculative-config "$spec" --enforce-eager
wait_ready
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":40}')" = 200 ] || fail "Eagle3 + eager failed"
sleep 0.5
logged "SpecDecoding metrics: Mean acceptance length:" || fail "no SpecDecoding metrics line"
logged "Engine 000: Avg prompt throughput:" || fail "no periodic throughput line"
logged "Graph capturing finished" && fail "graph capture with --enforce-eager"
stop
pass "Eagle3 + --enforce-eager works (spec-decode stats, no graph capture)"

start sinks VLLM_USE_ATTENTION_SINKS=1
wait_ready
[ "$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}]}')" = 500 ] || fail "sinks did not crash"
logged "attention sink kernel" || fail "error does not name the sink kernel"
wait_exit 5
pass "VLLM_USE_ATTENTION_SINKS=1: illegal instruction in the sink kernel"

start tile VLLM_MXFP4_MOE_KERNEL=gemm FLASHINFER_MOE_TILE=64x128
wait_exit 10
[ "$RC" = 1 ] || fail "64x128 tile: exit $RC"
logged 'static assertion failed with "CTA_Tile and SLayout top-level size equivalence."' || fail "no TMA layout error"
pass "FLASHINFER_MOE_TILE=64x128 on CUTLASS fails at start-up"

start triton VLLM_MXFP4_MOE_KERNEL=triton
wait_exit 10
[ "$RC" = 1 ] || fail "triton: exit $RC"
logged "Feature '.tile::scatter4' not supported on .target 'sm_121a'" || fail "no ptxas error"
pass "kernel triton: ptxas error at start-up"

start cutlass VLLM_MXFP4_MOE_KERNEL=gemm VLLM_MXFP4_ACTIVATION=mxfp8 FLASHINFER_MOE_TILE=128x128 \
        MXSIM_KERNEL_REPORT="$tmp/cutlass.csv"
wait_ready
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":8}')" = 200 ] || fail "CUTLASS + MXFP8 completion"
logged "Using 'FLASHINFER_CUTLASS_MXFP4_MXFP8' Mxfp4 MoE backend." || fail "backend line"
logged "[MoE] backend=flashinfer format=MXFP4_NATIVE fn=flashinfer.fused_moe.cutlass_fused_moe" || fail "callsite"
logged "mxfp8_quantize" || fail "no mxfp8_quantize evidence in the log"
stop
grep -q '^Processing \[.*cuda_gpu_kern_sum.py\]' "$tmp/cutlass.csv" || fail "report lacks nsys's noise lines"
grep -q '^Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name$' \
        "$tmp/cutlass.csv" || fail "report header"
grep -q 'cutlass_sm120_mxf4_grouped_gemm' "$tmp/cutlass.csv" || fail "no cutlass grouped gemm kernel"
grep -q 'mxfp8_quantize' "$tmp/cutlass.csv" || fail "no mxfp8_quantize kernel"
grep -q 'marlin' "$tmp/cutlass.csv" && fail "marlin kernel in a CUTLASS report"
grep -q '^[0-9.]*,[0-9]*,[0-9]*,[0-9.]*,[0-9.]*,[0-9]*,[0-9]*,[0-9.]*,"void ' "$tmp/cutlass.csv" ||
        fail "names with commas are not quoted"
pass "gemm + mxfp8: FLASHINFER_CUTLASS_MXFP4_MXFP8, mxfp8_quantize, nsys-style kernel report"

start marlin MXSIM_KERNEL_REPORT="$tmp/marlin.csv"
wait_ready
stop
grep -q 'marlin_moe_wna16::Marlin' "$tmp/marlin.csv" || fail "no marlin kernel"
grep -q 'cutlass_fused_moe' "$tmp/marlin.csv" && fail "cutlass MoE kernel in a Marlin report"
pass "default (auto) is MARLIN and its report shows marlin kernels"

start wrongkernel VLLM_MXFP4_MOE_KERNEL=gemm MXSIM_FAULTS=wrong-kernel MXSIM_KERNEL_REPORT="$tmp/wrong.csv"
wait_ready
logged "Using 'MARLIN' Mxfp4 MoE backend." || fail "wrong-kernel: no silent MARLIN fallback"
logged "FLASHINFER_CUTLASS" && fail "wrong-kernel: the requested backend is logged"
stop
grep -q 'marlin_moe_wna16' "$tmp/wrong.csv" || fail "wrong-kernel: report lacks the fallback's kernels"
pass "wrong-kernel: silent fallback to MARLIN in log and report"

start gemv VLLM_MXFP4_MOE_KERNEL=gemv
wait_ready
logged "Using 'GEMV_FP4' Mxfp4 MoE backend." || fail "no GEMV_FP4 line"
logged "[MoE] backend=gemv" || fail "no gemv callsite"
stop
pass "gemv logs GEMV_FP4 and its callsite"

# ---------------------------------------------------------------- other faults
start hangstart MXSIM_FAULTS=hang-start MXSIM_LOAD_S=0.1
sleep 0.8
[ "$(status /health)" = 000 ] || fail "hang-start: not refused"
stop
pass "hang-start: never listens"

start slow MXSIM_FAULTS=slow-start=1.2 MXSIM_LOAD_S=0.1
sleep 0.6
[ "$(status /health)" = 000 ] || fail "slow-start: ready too early"
wait_ready 5
stop
pass "slow-start=1.2"

for f in crash-at-start:"Engine core initialization failed" oom-at-start:"torch.OutOfMemoryError" \
         import-error:"ModuleNotFoundError: No module named 'vllm._C'" ptxas-error:"ptxas fatal"; do
        start "${f%%:*}" MXSIM_FAULTS="${f%%:*}"
        wait_exit 10
        [ "$RC" = 1 ] || fail "exit status $RC, expected 1"
        logged "${f#*:}" || fail "missing: ${f#*:}"
        [ "$name" = import-error ] && logged "Starting to load model" && fail "import-error started an engine"
        pass "${f%%:*}: exit 1 with its error"
done

start hangafter MXSIM_FAULTS=hang-after=1
wait_ready
[ "$(post /v1/completions '{"prompt":"hi","max_tokens":3}')" = 200 ] || fail "first completion"
code=$(POST_TIMEOUT=1 post /v1/completions '{"prompt":"hi","max_tokens":3}')
[ "$code" = 000 ] || fail "hang-after=1: second completion answered $code"
[ "$(status /health)" = 200 ] || fail "hang-after: /health should stay 200"
stop
pass "hang-after=1: the second completion never answers, /health stays 200"

start nan MXSIM_FAULTS=nan-logprobs,null-content,health-503-after=1
wait_ready
post /v1/completions '{"prompt":"hi","max_tokens":3,"logprobs":1}' >/dev/null
grep -q '"token_logprobs":\[NaN,NaN,NaN\]' "$tmp/body" || fail "nan-logprobs: $(cat "$tmp/body")"
[ "$(status /health)" = 503 ] || fail "health-503-after=1: /health not 503"
[ "$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":5}')" = 200 ] ||
        fail "health-503-after: completions should still work"
grep -q '"content":null' "$tmp/body" && grep -q '"reasoning":null' "$tmp/body" ||
        fail "null-content: $(cat "$tmp/body")"
[ "$(field completion_tokens)" = 5 ] || fail "null-content: completion_tokens"
stop
pass "nan-logprobs (Python's NaN), null-content (vllm#37030), health-503-after"

start memgrow MXSIM_FAULTS=memory-growth=64
wait_ready
epid=$(engine_pid)
rss0=$(awk '/^VmRSS/ {print $2}' "/proc/$epid/status")
for i in 1 2 3; do post /v1/completions '{"prompt":"hi","max_tokens":2}' >/dev/null; done
rss1=$(awk '/^VmRSS/ {print $2}' "/proc/$epid/status")
[ $((rss1 - rss0)) -ge $((150 * 1024)) ] || fail "memory-growth=64: RSS grew by $((rss1 - rss0)) kB"
stop
pass "memory-growth=64: engine RSS grows per request"

# metrics: the sum of a counter's samples (awk: name then "{" or " " at the line's start)
ctr() { awk -v n="$1" 'index($0, n "{") == 1 || index($0, n " ") == 1 { s += $NF } END { print s + 0 }' "$tmp/metrics"; }
start mreset MXSIM_FAULTS=metrics-reset-after=2
wait_ready
for i in 1 2 3; do post /v1/completions '{"prompt":"hi","max_tokens":3}' >/dev/null; done
curl -s --max-time 2 "$(url /metrics)" >"$tmp/metrics"
# the first two completions were counted, then the counters restarted: the third's alone
[ "$(ctr vllm:generation_tokens_total)" = 3 ] && [ "$(ctr vllm:request_success_total)" = 1 ] &&
        [ "$(ctr vllm:e2e_request_latency_seconds_count)" = 1 ] ||
        fail "metrics-reset-after=2: $(grep -E '^vllm:(generation_tokens|request_success)_total' "$tmp/metrics")"
stop
pass "metrics-reset-after=2: the counters count the third completion alone"

start mbad MXSIM_FAULTS=metrics-malformed -- --served-model-name gpt-oss-120b
wait_ready
post /v1/completions '{"prompt":"hi","max_tokens":3}' >/dev/null
curl -s --max-time 2 "$(url /metrics)" >"$tmp/metrics"
grep -qx 'vllm:generation_tokens_total{engine="0",model_name="gpt-oss-120b"' "$tmp/metrics" ||
        fail "metrics-malformed: $(grep generation_tokens "$tmp/metrics")"
[ "$(ctr vllm:prompt_tokens_total)" -gt 0 ] && [ "$(ctr vllm:request_success_total)" = 1 ] ||
        fail "metrics-malformed: the other lines changed"
stop
pass "metrics-malformed: vllm:generation_tokens_total's sample cut before its brace, the rest as usual"

# ---------------------------------------------------------------- bad input
"$sim" serve m --mxsim-fault bogus >"$tmp/bad.out" 2>&1; rc=$?
name=bad
[ $rc = 2 ] && grep -q "unknown fault 'bogus'" "$tmp/bad.out" || fail "unknown fault: rc $rc $(cat "$tmp/bad.out")"
MXSIM_TOKEN_MS=fast "$sim" serve m >"$tmp/bad.out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "MXSIM_TOKEN_MS='fast'" "$tmp/bad.out" || fail "bad knob: rc $rc"
"$sim" serve m --moe-backend foo >"$tmp/bad.out" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "invalid choice: 'foo'" "$tmp/bad.out" || fail "bad --moe-backend: rc $rc"
pass "bad faults, knobs and flags: exit 2 naming them"
start badenv VLLM_MXFP4_MOE_KERNEL=cutless
wait_exit 10
[ "$RC" = 1 ] && logged "Invalid value 'cutless' for VLLM_MXFP4_MOE_KERNEL" || fail "bad kernel env: rc $RC"
pass "unknown VLLM_MXFP4_MOE_KERNEL value fails start-up like vLLM's env parser"

# ---------------------------------------------------------------- other personalities
start llama -- --flavor llama-server
deadline=$((SECONDS + 5))
until [ "$(status /health)" = 503 ]; do
        [ $SECONDS -le $deadline ] || fail "llama-server: no 503 while loading"
        sleep 0.02
done
curl -s "$(url /health)" | grep -qF '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}' ||
        fail "llama-server loading body"
wait_ready
curl -s "$(url /health)" | grep -qF '{"status":"ok"}' || fail "llama-server ready body"
[ "$(post /completion '{"prompt":"hello","n_predict":6}')" = 200 ] || fail "llama /completion"
[ "$(field tokens_predicted)" = 6 ] || fail "tokens_predicted"
[ "$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}')" = 200 ] ||
        fail "llama chat"
grep -q '"timings":{' "$tmp/body" || fail "llama chat lacks timings"
logged "main: server is listening on http://127.0.0.1:$PORT - starting the main loop" || fail "llama ready line"
stop
[ "$RC" = 0 ] || fail "exit $RC"
pass "llama-server: 503 Loading model, then 200 {\"status\":\"ok\"}; native /completion"

# llama-server's names under the /metrics faults: the counters restart after the first completion, the
# generated-token counter's sample lacks its value
start lmetrics MXSIM_FAULTS=metrics-reset-after=1,metrics-malformed -- --flavor llama-server --metrics
wait_ready
for i in 1 2; do post /v1/completions '{"prompt":"hello there","max_tokens":3}' >/dev/null; done
p=$(field prompt_tokens)
curl -s --max-time 2 "$(url /metrics)" >"$tmp/metrics"
grep -qx 'llamacpp:tokens_predicted_total' "$tmp/metrics" || fail "llama metrics-malformed: $(grep predicted_total "$tmp/metrics")"
[ "$p" -gt 0 ] && [ "$(ctr llamacpp:prompt_tokens_total)" = "$p" ] ||
        fail "llama metrics-reset-after=1: prompt_tokens_total $(ctr llamacpp:prompt_tokens_total), one request's $p"
stop
pass "llama-server: metrics-reset-after=1 counts the second completion alone; metrics-malformed cuts its value"

start sglang MXSIM_LOAD_S=0.5 -- --flavor sglang
sleep 0.2
[ "$(status /health)" = 000 ] || fail "sglang: not refused while loading"
deadline=$((SECONDS + 5))
until [ "$(status /health_generate)" = 503 ]; do
        [ $SECONDS -le $deadline ] || fail "sglang: no 503 while starting"
        sleep 0.02
done
wait_ready
[ "$(status /health_generate)" = 200 ] || fail "sglang /health_generate"
logged "The server is fired up and ready to roll!" || fail "no fired-up line"
[ "$(post /generate '{"text":"hello","sampling_params":{"max_new_tokens":5}}')" = 200 ] || fail "sglang /generate"
[ "$(field completion_tokens)" = 5 ] || fail "sglang completion_tokens"
stop
pass "SGLang: refused, 503 while warming up, 200 after \"fired up\""

start harmony -- --mxsim-harmony --mxsim-eos-at 20
wait_ready
chat='{"messages":[{"role":"user","content":"hi"}],"max_tokens":32'
# silent tokens: usage counts all 32; the stream carries the role chunk, 12 reasoning and 5 content chunks
# (3 header, 6 switch and the last 6 tokens send none), the last one's empty delta with finish_reason
[ "$(post /v1/chat/completions "$chat"',"ignore_eos":true,"min_tokens":32,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}')" = 200 ] ||
        fail "harmony stream: $(head -c 300 "$tmp/body")"
[ "$(grep -c '"reasoning":"' "$tmp/body")" = 12 ] || fail "reasoning chunks: $(grep -c '"reasoning":"' "$tmp/body")"
[ "$(grep -c '"content":"[^"]' "$tmp/body")" = 5 ] || fail "content chunks: $(grep -c '"content":"[^"]' "$tmp/body")"
grep -q '"delta":{},"logprobs":null,"finish_reason":"length"' "$tmp/body" || fail "no empty final delta"
# the first text chunk's running count holds the 3 silent header tokens before it; the role chunk says 0
grep -m1 '"reasoning":"' "$tmp/body" | grep -q '"completion_tokens":4' || fail "first text chunk's running count"
grep -m1 '"role":"assistant"' "$tmp/body" | grep -q '"completion_tokens":0' || fail "role chunk's running count"
[ "$(grep -o '"completion_tokens":[0-9]*' "$tmp/body" | tail -1)" = '"completion_tokens":32' ] || fail "usage"
# logprobs: one entry per output token, control tokens included
[ "$(post /v1/chat/completions "$chat"',"ignore_eos":true,"min_tokens":32,"logprobs":true}')" = 200 ] || fail "logprobs"
[ "$(grep -o '"top_logprobs"' "$tmp/body" | wc -l)" = 32 ] || fail "logprob entries: $(grep -o '"top_logprobs"' "$tmp/body" | wc -l)"
# vllm#50690: ignore_eos without min_tokens, the turn ending at 20 of 32
[ "$(post /v1/chat/completions "$chat"',"ignore_eos":true}')" = 500 ] || fail "no 500: $(head -c 300 "$tmp/body")"
grep -qF '{"error":{"message":"Unexpected token 200002 while expecting start token 200006","type":"InternalServerError"' \
        "$tmp/body" || fail "500 body: $(cat "$tmp/body")"
[ "$(post /v1/chat/completions "$chat"',"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}')" = 200 ] ||
        fail "streamed"
tail -4 "$tmp/body" | grep -q '^data: {"error":{"message":"Unexpected token 200002' || fail "no error event: $(tail -c 300 "$tmp/body")"
tail -1 "$tmp/body" | grep -q '^data: \[DONE\]$' || tail -2 "$tmp/body" | grep -q '^data: \[DONE\]$' || fail "no [DONE]"
! grep -q '"choices":\[\],"usage"' "$tmp/body" || fail "a usage chunk after the error"
logged "Error in chat completion stream generator." || fail "no error line"
# without ignore_eos the turn ends at 20 with <|return|>: finish_reason stop, 21 tokens
[ "$(post /v1/chat/completions "$chat"'}')" = 200 ] || fail "natural end"
[ "$(field finish_reason)" = stop ] && [ "$(field completion_tokens)" = 21 ] || fail "natural end: $(cat "$tmp/body")"
stop
"$sim" serve m --flavor llama-server --mxsim-harmony >"$tmp/h.out" 2>&1
[ $? = 2 ] && grep -q -- "--mxsim-harmony imitates vLLM" "$tmp/h.out" || fail "--mxsim-harmony with llama-server"
pass "Harmony: silent tokens counted, no chunk; vllm#50690 500 / error event; min_tokens avoids it"

name=sanitizers
bad=$(grep -l "Sanitizer" "$tmp"/*.err 2>/dev/null)
[ -z "$bad" ] || { for f in $bad; do echo "--- $f"; grep -A20 "Sanitizer" "$f" | head -40; done; fail "sanitizer reports"; }
echo "all mxsim checks passed"
