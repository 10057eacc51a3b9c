#!/usr/bin/env bash
# Device check of issue 18 (decode profile), the capture half: the CUDA llama-server under Nsight
# Compute with two generated gpt-oss models that differ only in their layer count, each serving the
# same declared decode workload (seed 001 Phase 0: prompt 2048 tokens, 64 output tokens; 3 requests,
# prompt cache off, EOS ignored so every request generates exactly 64 tokens).
#   usage: capture.sh STAGE OUT   (STAGE: made by tests/device/real/stage.sh; OUT: kept files)
# OUT/<model>/ receives kernels.csv (ncu --csv --page raw, one row per kernel launch of the server's
# whole life), server.log, metrics-before.txt / metrics-after.txt (the server's /metrics around the
# workload: its own prompt and generated token counters), workload.json (what was sent and what the
# server says it did) and replies.jsonl. The server is started with --no-warmup, so the only work in
# the capture besides the workload is loading; "per token" divides by the server's counters.
# tests/device/profile/check.sh and tests/regress/t-device-profile.sh read them (fixtures in
# tests/fixtures/device/profile/).
set -u
stage=$(cd "${1:?usage: capture.sh STAGE OUT}" && pwd)
out=${2:?usage: capture.sh STAGE OUT}
work=${MX_DEVICE_WORK:-/tmp/mxmatrix-device-work}
mkdir -p "$work" "$out"
command -v jq >/dev/null || PATH=$stage/jq:$PATH
log=$out/capture.log
say() { echo "$(date +%T) $*" | tee -a "$log"; }
PROMPT_TOKENS=${PROMPT_TOKENS:-2048}
OUTPUT_TOKENS=${OUTPUT_TOKENS:-64}
REQUESTS=${REQUESTS:-3}
port=18181

setup() {
        if [ ! -x "$work/llama-server" ]; then
                cat "$stage"/cuda/ls.part.* | xz -d | tar -x -C "$work" || return 1
        fi
        local layers
        for layers in 2 4; do
                [ -s "$work/gptoss-${layers}l.gguf" ] && continue
                # gpt-oss-20b's per-layer shapes (../shared/targets/README.md); only --layers differs
                PYTHONPATH=$stage/targets/gguf-tools python3 "$stage/targets/gguf-tools/make-random-gptoss-gguf.py" \
                        --out "$work/gptoss-${layers}l.gguf.tmp" --layers "$layers" --embd 2880 --heads 64 \
                        --kv-heads 8 --head-dim 64 --experts 32 --experts-used 4 --ff-exp 2880 --ctx 131072 \
                        >"$out/model-gen-${layers}l.log" 2>&1 || { tail "$out/model-gen-${layers}l.log"; return 1; }
                mv "$work/gptoss-${layers}l.gguf.tmp" "$work/gptoss-${layers}l.gguf"
        done
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$log"
        ncu --version | tail -n 1 | tee -a "$log"
}

# capture LAYERS: one server life under ncu serving the workload.
capture() {
        local layers=$1 dir=$out/gptoss-${1}l pid i ids
        mkdir -p "$dir"
        ncu --target-processes all --csv --page raw --metrics gpu__time_duration.sum \
                --log-file "$dir/kernels.csv" \
                "$work/llama-server" -m "$work/gptoss-${layers}l.gguf" --alias "gptoss-${layers}l" \
                --host 127.0.0.1 --port $port -ngl 99 -c 8192 -np 1 --metrics --no-warmup --no-webui -lv 4 \
                >"$dir/server.log" 2>&1 &
        pid=$!
        for i in $(seq 600); do
                curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
                kill -0 $pid 2>/dev/null || { say "server died"; tail "$dir/server.log"; return 1; }
                sleep 0.5
        done
        curl -sf "http://127.0.0.1:$port/metrics" >"$dir/metrics-before.txt"
        # the prompt: exactly PROMPT_TOKENS ids of the server's own tokenizer (a text tokenized once, cycled)
        curl -sf "http://127.0.0.1:$port/tokenize" -H 'Content-Type: application/json' \
                -d '{"content":"The quick brown fox jumps over the lazy dog while the river runs past old stone bridges and quiet fields of wheat."}' |
                jq -c '.tokens' >"$dir/text-tokens.json"
        ids=$(jq -r --argjson n "$PROMPT_TOKENS" '. as $t | [range($n)] | map($t[. % ($t | length)]) | map(tostring) | join(",")' "$dir/text-tokens.json")
        [ -n "$ids" ] || { say "no tokens from /tokenize"; return 1; }
        for i in $(seq "$REQUESTS"); do
                # a different first token per request: nothing is reused even if the cache were on
                curl -sf "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
                        -d "{\"prompt\":[$(jq -r ".[$i]" "$dir/text-tokens.json"),$ids],\"n_predict\":$OUTPUT_TOKENS,\"ignore_eos\":true,\"cache_prompt\":false,\"temperature\":0,\"stream\":false}" |
                        jq -c '{tokens_predicted, tokens_evaluated, timings}' >>"$dir/replies.jsonl"
        done
        curl -sf "http://127.0.0.1:$port/metrics" >"$dir/metrics-after.txt"
        jq -n --argjson p "$((PROMPT_TOKENS + 1))" --argjson t "$OUTPUT_TOKENS" --argjson r "$REQUESTS" \
                --slurpfile replies "$dir/replies.jsonl" --arg layers "$layers" \
                '{model: ("gptoss-" + $layers + "l"), layers: ($layers | tonumber), requests: $r, prompt_tokens: $p,
                  output_tokens: $t, predicted_total: ([$replies[].tokens_predicted] | add),
                  evaluated_total: ([$replies[].tokens_evaluated] | add),
                  which: "the server life under ncu (load, then the requests); generated tokens from the server replies"}' \
                >"$dir/workload.json"
        # ncu writes its report when the server exits normally: stop the server, not ncu
        pkill -TERM -x llama-server
        for i in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
        wait $pid
        say "gptoss-${layers}l: $(wc -l <"$dir/kernels.csv") kernel rows, $(jq -c '{predicted_total, evaluated_total}' "$dir/workload.json")"
        xz -f "$dir/kernels.csv" "$dir/server.log"
}

say "=== setup"
setup || { say "setup failed"; exit 1; }
for layers in 2 4; do
        say "=== capture ${layers} layers"
        capture "$layers" || say "capture $layers failed"
done
(cd "$out" && tar -cf profile.tar gptoss-2l gptoss-4l && rm -rf gptoss-2l gptoss-4l)
du -sh "$out" | tee -a "$log"
