#!/usr/bin/env bash
# mxmatrix probe against the real llama-server (../shared/targets, CPU) with
# both generated models (llama, gpt-oss MXFP4): what the real server does, as
# ../shared/targets/README.md observed it: /tokenize {content} -> {tokens},
# logprobs in the content form in completions too, usage on its own chunk,
# continuous usage ignored, cache_prompt: false evaluates a repeated prompt
# again (prompt_n = all of it) while the default cache reuses all but the last
# token, the same seed gives the same tokens, /metrics only with --metrics,
# and --api-key makes completions answer 401 without a key.
# MX_LLAMA_SERVER=PATH names a llama-server binary instead of the archive.
set -uo pipefail
: "${MX_BUILD_DIR:?}" "${MX_SOURCE_DIR:?}"
mx=$MX_BUILD_DIR/client/mxmatrix
targets=$MX_SOURCE_DIR/../shared/targets
py=/usr/bin/python3
if [ -z "${MX_LLAMA_SERVER:-}" ] && [ ! -f "$targets/llama-server-cpu.xz" ]; then
        echo "no real llama-server: ../shared/targets is absent (set MX_LLAMA_SERVER=PATH to point at one)"
        exit 77
fi
[ -f "$targets/gguf-tools/make-random-gguf.py" ] ||
        { echo "no model generator in ../shared/targets/gguf-tools"; exit 77; }
command -v jq >/dev/null || { echo "jq is not installed (tests/deps.sh)"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
unset OPENAI_API_KEY

fail() { echo "FAIL: $*"; exit 1; }

free_port() {
        $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

server=${MX_LLAMA_SERVER:-}
if [ -z "$server" ]; then
        server=$tmp/llama-server
        xz -dc "$targets/llama-server-cpu.xz" >"$server" && chmod +x "$server" || fail "cannot unpack the server"
fi
export PYTHONPATH=$targets/gguf-tools
$py "$targets/gguf-tools/make-random-gguf.py" --out "$tmp/llama.gguf" >/dev/null 2>&1 || fail "llama model"
$py "$targets/gguf-tools/make-random-gptoss-gguf.py" --out "$tmp/gptoss.gguf" >/dev/null 2>&1 || fail "gpt-oss model"

# start MODEL [flags...]: sets PORT
start() {
        local model=$1
        shift
        PORT=$(free_port)
        "$server" -m "$model" --host 127.0.0.1 --port "$PORT" -t 2 "$@" >"$tmp/server-$PORT.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 600); do
                curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        fail "llama-server did not become ready: $(tail -3 "$tmp/server-$PORT.log")"
}

check() {
        local st line
        st=$(jq -r --arg c "$2" '.checks[] | select(.check == $c) | .status' "$1")
        line=$(jq -r --arg c "$2" '.checks[] | select(.check == $c) | .line' "$1")
        [ "$st" = "$3" ] || fail "$1: $2 is '$st', not '$3': $line"
        [ -z "${4:-}" ] || [[ "$line" == *"$4"* ]] || fail "$1: $2 says '$line', not '$4'"
}

for model in llama gptoss; do
        start "$tmp/$model.gguf" -c 2048 --metrics
        out=$tmp/$model.json
        "$mx" --json probe --kind llama-server "http://127.0.0.1:$PORT" >"$out" ||
                fail "$model: an assumption failed: $(jq -c '.checks[] | select(.status != "pass")' "$out")"
        check "$out" server_kind pass 'owned_by "llamacpp"'
        check "$out" tokenize pass 'llama-server form'
        check "$out" tokenize pass 'the vLLM form got HTTP 200 {"tokens":[]}'
        check "$out" context pass "2048 tokens"
        check "$out" streamed_usage pass "in a chunk of its own"
        check "$out" streamed_usage pass "continuous_usage_stats not honoured"
        check "$out" logprobs_completions pass "content form"
        check "$out" logprobs_chat pass "content form"
        check "$out" metrics pass
        check "$out" cache_defeat pass "cache_n 0"
        check "$out" cache_defeat pass "without it the cache is used"
        check "$out" determinism pass "the same 8 tokens twice"
        # what the line says is what the server's log says: the repeated request evaluated the whole prompt
        n=$(jq -r '.checks[] | select(.check == "cache_defeat") | .line' "$out" |
                sed -n 's/.*cache_prompt: false (prompt_n \([0-9]*\) of \([0-9]*\),.*/\1 \2/p')
        set -- $n
        [ -n "${1:-}" ] && [ "$1" = "$2" ] || fail "$model: prompt_n is not the whole prompt: $n"
        grep -q "prompt eval time = .* / *$1 tokens" "$tmp/server-$PORT.log" ||
                fail "$model: the server's log has no prompt eval of $1 tokens"
        echo "ok   $model"
done

# --api-key, no --metrics: 401 without a key fails; with it, only /metrics fails
start "$tmp/llama.gguf" -c 1024 --api-key sekrit
"$mx" --json probe "http://127.0.0.1:$PORT" >"$tmp/nokey" && fail "no key given, yet the probe passed"
check "$tmp/nokey" api_key fail "HTTP 401"
check "$tmp/nokey" tokenize "not measured" "API key"
"$mx" --json probe --api-key sekrit "http://127.0.0.1:$PORT" >"$tmp/key"
[ $? = 1 ] || fail "without --metrics the probe did not exit 1"
check "$tmp/key" api_key pass "needed"
check "$tmp/key" metrics fail "HTTP 501"
check "$tmp/key" context pass "1024 tokens"
[ "$(jq .failed "$tmp/key")" = 1 ] || fail "failed: $(jq -c '.checks[] | select(.status == "fail")' "$tmp/key")"
echo "ok   api key, no metrics"
