#!/usr/bin/env bash
# mxmatrix probe URL against mxsim's three flavours through the real client:
# every line says what that flavour really does (vLLM: the vLLM tokenize form,
# legacy completions logprobs, running usage, prefix-cache counters; the
# llama-server flavour: /props, no /metrics without --metrics; SGLang: no
# request field defeats its cache), the exit status follows the failed lines,
# an API key is asked for. The real llama-server is t-probe-real.
set -uo pipefail
: "${MX_BUILD_DIR:?}"
mx=$MX_BUILD_DIR/client/mxmatrix
sim=$MX_BUILD_DIR/tests/sim/mxsim
command -v jq >/dev/null || { echo "jq is not installed (tests/deps.sh)"; exit 77; }
[ -x "$sim" ] || { echo "mxsim is not built"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
export MXSIM_LOAD_S=0.1
unset MXSIM_FAULTS MXSIM_FLAVOR OPENAI_API_KEY

fail() { echo "FAIL: $*"; exit 1; }

free_port() {
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
                echo $((20000 + RANDOM % 20000))
}

# start_sim FLAVOR [flags...]: sets PORT
start_sim() {
        local flavor=$1
        shift
        PORT=$(free_port)
        MXSIM_GPU_LOCK=$tmp/gpu-$PORT.lock "$sim" serve m --flavor "$flavor" --host 127.0.0.1 --port "$PORT" "$@" \
                >"$tmp/sim-$PORT.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 600); do
                curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && return 0
                sleep 0.05
        done
        fail "mxsim ($flavor) did not start"
}

# check JSON CHECK STATUS [SUBSTRING]: the check's status and line
check() {
        local st line
        st=$(jq -r --arg c "$2" '.checks[] | select(.check == $c) | .status' "$1")
        line=$(jq -r --arg c "$2" '.checks[] | select(.check == $c) | .line' "$1")
        [ "$st" = "$3" ] || fail "$1: $2 is '$st', not '$3': $line"
        [ -z "${4:-}" ] || [[ "$line" == *"$4"* ]] || fail "$1: $2 says '$line', not '$4'"
}

# vLLM flavour: everything the harness needs is there
start_sim vllm
"$mx" --json probe "http://127.0.0.1:$PORT" >"$tmp/vllm" || fail "probe of the vLLM flavour failed: $(cat "$tmp/vllm")"
[ "$(jq -r .server "$tmp/vllm")" = vllm ] || fail "server kind: $(jq -r .server "$tmp/vllm")"
check "$tmp/vllm" api_key pass "not needed"
check "$tmp/vllm" server_kind pass 'owned_by "vllm"'
check "$tmp/vllm" tokenize pass "vLLM form"
check "$tmp/vllm" context pass "131072 tokens (/v1/models max_model_len)"
check "$tmp/vllm" streamed_usage pass "continuous_usage_stats honoured"
check "$tmp/vllm" logprobs_completions pass "legacy arrays"
check "$tmp/vllm" logprobs_chat pass "content form"
check "$tmp/vllm" metrics pass "vllm:prefix_cache_hits_total found"
check "$tmp/vllm" cache_defeat pass "cache_salt (vllm:prefix_cache_hits_total +0)"
check "$tmp/vllm" determinism pass "the same 8 tokens twice"
[ "$(jq .failed "$tmp/vllm")" = 0 ] || fail "failed count"
# a smaller context is read, and the text form has one line per check
start_sim vllm --max-model-len 8192
"$mx" probe "http://127.0.0.1:$PORT" >"$tmp/vllm.txt" || fail "probe (text) failed"
grep -q '^PASS  *context  *8192 tokens' "$tmp/vllm.txt" || fail "no 8192 context line: $(cat "$tmp/vllm.txt")"
[ "$(grep -cE '^(PASS|FAIL|not measured) ' "$tmp/vllm.txt")" = 10 ] || fail "not one line per check"
# the profile's kind is checked against the server's
"$mx" --json probe --kind llama-server "http://127.0.0.1:$PORT" >"$tmp/kind" && fail "a wrong --kind passed"
check "$tmp/kind" server_kind fail "the profile says llama-server, the server is vllm"
echo "ok   vllm flavour"

# llama-server flavour without --metrics: /metrics is a 501, which fails, and so does the exit status
start_sim llama-server
"$mx" --json probe "http://127.0.0.1:$PORT" >"$tmp/llama"
rc=$?
[ $rc = 1 ] || fail "probe of llama-server without --metrics exited $rc, not 1"
check "$tmp/llama" server_kind pass "/props answered"
check "$tmp/llama" tokenize pass "llama-server form"
check "$tmp/llama" context pass "(/props default_generation_settings.n_ctx)"
check "$tmp/llama" metrics fail "--metrics"
check "$tmp/llama" cache_defeat pass "cache_prompt: false (prompt_n"
check "$tmp/llama" determinism pass
[ "$(jq .failed "$tmp/llama")" = 1 ] || fail "failed count $(jq .failed "$tmp/llama")"
start_sim llama-server --metrics
"$mx" --json probe "http://127.0.0.1:$PORT" >"$tmp/llama-m" || fail "probe of llama-server with --metrics failed"
check "$tmp/llama-m" metrics pass
echo "ok   llama-server flavour"

# SGLang flavour: no request field defeats its cache, and it reports no reuse: both not measured
start_sim sglang --enable-metrics
"$mx" --json probe "http://127.0.0.1:$PORT" >"$tmp/sglang" || fail "probe of the SGLang flavour failed"
check "$tmp/sglang" server_kind pass 'owned_by "sglang"'
check "$tmp/sglang" tokenize pass "vLLM form"
check "$tmp/sglang" cache_defeat "not measured" "reports neither"
check "$tmp/sglang" determinism "not measured" "no request field"
echo "ok   sglang flavour"

# nothing listening: a failed line and exit 1; usage errors exit 2
"$mx" probe "http://127.0.0.1:$(free_port)" >"$tmp/none" && fail "a dead URL passed"
grep -q '^FAIL  *server_kind  *no answer' "$tmp/none" || fail "no 'no answer' line: $(cat "$tmp/none")"
"$mx" probe >/dev/null 2>&1
[ $? = 2 ] || fail "probe without URL is not a usage error"
"$mx" probe --kind tgi http://127.0.0.1:1 >/dev/null 2>&1
[ $? = 2 ] || fail "an unknown --kind is not a usage error"
"$mx" probe --help | grep -q 'cache_defeat' || fail "--help does not list the checks"
echo "ok   errors"
