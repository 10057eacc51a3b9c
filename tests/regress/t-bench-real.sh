#!/usr/bin/env bash
# mxmatrix bench against the REAL llama-server (CPU, ../shared/targets) with
# both generated models (llama with a 760-token BPE that cuts words into
# several tokens, and gpt-oss MXFP4): every pp row's prompt is exactly its
# target, as the server itself logs it ("prompt eval time = ... / N tokens");
# a forced cache reuse is reported as failed requests, the server's log
# showing the reuse; llama-bench style verifies the context's reuse.
# Outside a tree with ../shared/targets it skips (MX_LLAMA_SERVER=PATH points
# it at a llama-server binary; MX_TARGETS=DIR at the targets directory).
set -uo pipefail
: "${MX_BUILD_DIR:?}"
: "${MX_SOURCE_DIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
targets=${MX_TARGETS:-$MX_SOURCE_DIR/../shared/targets}
mx=$MX_BUILD_DIR/client/mxmatrix
py=/usr/bin/python3
if [ ! -d "$targets/gguf-tools" ]; then
        echo "SKIP: no $targets (set MX_TARGETS=DIR with gguf-tools/, MX_LLAMA_SERVER=PATH to a llama-server)"
        exit 77
fi
command -v jq >/dev/null || { echo "SKIP: jq is not installed (tests/deps.sh)"; exit 77; }
[ -x "$mx" ] || { echo "SKIP: $mx is not built"; exit 77; }
$py -c 'import numpy, yaml' 2>/dev/null || { echo "SKIP: $py lacks numpy or yaml (python3-numpy python3-yaml)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-bench-real.XXXXXX")
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
unset OPENAI_API_KEY

fail() {
        echo "FAIL: $*"
        [ -f "$tmp/bench.err" ] && tail -20 "$tmp/bench.err"
        exit 1
}
ok() { echo "ok   $*"; }

server=${MX_LLAMA_SERVER:-}
if [ -z "$server" ]; then
        server=$tmp/llama-server
        xz -dc "$targets/llama-server-cpu.xz" >"$server" && chmod +x "$server" || fail "unpacking llama-server"
fi
models=$MX_BUILD_DIR/real-models
mkdir -p "$models"
[ -s "$models/llama.gguf" ] || PYTHONPATH=$targets/gguf-tools $py "$targets/gguf-tools/make-random-gguf.py" \
        --out "$models/llama.gguf" >/dev/null 2>&1 || fail "generating the llama model"
[ -s "$models/gptoss.gguf" ] || PYTHONPATH=$targets/gguf-tools $py "$targets/gguf-tools/make-random-gptoss-gguf.py" \
        --out "$models/gptoss.gguf" >/dev/null 2>&1 || fail "generating the gpt-oss model"

free_port() {
        $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server MODEL: a llama-server with one slot; sets PORT, LOG
start_server() {
        PORT=$(free_port)
        LOG=$tmp/server-$PORT.log
        "$server" -m "$1" --host 127.0.0.1 --port "$PORT" -c 4096 -np 1 -t 2 >"$LOG" 2>&1 &
        pids+=($!)
        for _ in $(seq 600); do
                curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return 0
                kill -0 "${pids[-1]}" 2>/dev/null || fail "llama-server exited: $(tail -3 "$LOG")"
                sleep 0.1
        done
        fail "llama-server did not become ready"
}

# evals FROM_LINE: the prompt tokens the server evaluated per request since that log line, one a line
evals() {
        tail -n +"$1" "$LOG" | sed -n 's/.*prompt eval time = *[0-9.]* ms \/ *\([0-9]*\) tokens.*/\1/p'
}

bench() {
        "$mx" bench "http://127.0.0.1:$PORT" --json --seed 7 --timeout 300 "$@" >"$tmp/bench.json" 2>"$tmp/bench.err"
}

for model in llama gptoss; do
        start_server "$models/$model.gguf"

        # pp 512 at depth 0 and 1024, a tg: exact prompts, the server's own count says so
        mark=$(($(wc -l <"$LOG") + 1))
        bench --pp 512 --tg 8 --depth 0,1024 --runs 2 --warmup 1 --requests || fail "$model: bench exit $?"
        j=$tmp/bench.json
        [ "$(jq '.failed' "$j")" = 0 ] || fail "$model: failed requests: $(jq -c .failures "$j")"
        [ "$(jq '[.tests[] | select(.kind == "pp")] | length' "$j")" = 2 ] || fail "$model: not one pp row per depth"
        # the real server reports both halves of every pair on every request: each row's server figures rest
        # on all its requests, none left out as partial
        jq -e '[.requests[].server_timings | .prompt_n != null and .prompt_ms != null and .predicted_n != null and
                .predicted_ms != null] | all' "$j" >/dev/null || fail "$model: a request without all four timings"
        jq -e '[.tests[] | .server_timings_partial == 0 and .server_timings_requests == .requests] | all' "$j" \
                >/dev/null || fail "$model: rows $(jq -c '[.tests[] | {test, requests, server_timings_requests,
                                                          server_timings_partial}]' "$j")"
        for d in 0 1024; do
                want=$((512 + d))
                row=$(jq -c --argjson d "$d" '.tests[] | select(.kind == "pp" and .depth == $d)' "$j")
                [ "$(jq '.prompt_tokens_min' <<<"$row")" = "$want" ] && [ "$(jq '.prompt_tokens_max' <<<"$row")" = "$want" ] ||
                        fail "$model: pp512 @ d$d: prompt tokens $(jq -c '[.prompt_tokens_min,.prompt_tokens_max]' <<<"$row"), want $want"
                [ "$(jq '.cached_tokens_max' <<<"$row")" = 0 ] || fail "$model: d$d: cached tokens $(jq .cached_tokens_max <<<"$row")"
                # 1 warm-up + 2 runs, each evaluated in full by the server (its log, not our document)
                n=$(evals "$mark" | grep -cx "$want")
                [ "$n" = 3 ] || fail "$model: the server evaluated $n prompts of $want tokens (log: $(evals "$mark" | tr '\n' ' '))"
        done
        ok "$model: pp512 @ d0 and d1024: every prompt exactly 512 / 1536 tokens, as the server logged"

        # the server's own figures beside ours: server_pp_tps is the mean of prompt_n / prompt_ms x 1000 of the
        # row's requests as their final chunks gave them, and what the server logged for the same requests
        # ("prompt eval time = X ms / N tokens", ms rounded to 0.01: within 0.1 %); preparation_ms is what TTFR
        # holds beyond prompt_ms; server_tg_tps likewise from predicted_n / predicted_ms and "eval time"
        for d in 0 1024; do
                want=$((512 + d))
                row=$(jq -c --argjson d "$d" '.tests[] | select(.kind == "pp" and .depth == $d)' "$j")
                name=$(jq -r .test <<<"$row")
                jq -e '.server_pp_tps > 0 and .server_timings_requests == 2 and (.preparation_ms | type == "number")' \
                        <<<"$row" >/dev/null || fail "$model: $name: server figures $(jq -c '{server_pp_tps, preparation_ms, server_timings}' <<<"$row")"
                read -r chunk prep n_pn < <(jq -r --arg t "$name tg8" --argjson lat "$(jq .latency_ms "$j")" '
                        [.requests[] | select(.test == $t)] |
                        [(map(.server_timings.prompt_n / .server_timings.prompt_ms * 1000) | add / length),
                         (map(.resp_us / 1000 - $lat - .server_timings.prompt_ms) | add / length),
                         (map(select(.server_timings.prompt_n == '"$want"')) | length)] | @tsv' "$j")
                [ "$n_pn" = 2 ] || fail "$model: $name: $n_pn requests with timings.prompt_n $want, want 2"
                logged=$(tail -n +"$mark" "$LOG" | awk -v n="$want" '/prompt eval time =/ {
                        for (i = 1; i <= NF; i++) if ($i == "=") { ms = $(i + 1); pn = $(i + 4) }
                        if (pn == n) v[k++] = pn / ms * 1000 }
                        END { printf "%.6f\n", (v[k - 2] + v[k - 1]) / 2 }')
                srv=$(jq .server_pp_tps <<<"$row")
                awk -v a="$srv" -v b="$chunk" -v c="$logged" -v p="$prep" -v q="$(jq .preparation_ms <<<"$row")" 'BEGIN {
                        exit !((a - b) / b < 1e-9 && (b - a) / b < 1e-9 && (a - c) / c < 0.001 && (c - a) / c < 0.001 &&
                               (p - q < 1e-6 && q - p < 1e-6)) }' ||
                        fail "$model: $name: server_pp_tps $srv, the final chunks' prompt_n / prompt_ms $chunk, the log's $logged; preparation_ms $(jq .preparation_ms <<<"$row") vs $prep"
                ok "$model: $name: ours $(jq '.tps.mean' <<<"$row") t/s, server_pp_tps $srv (log $logged), preparation $(jq .preparation_ms <<<"$row") ms"
        done
        row=$(jq -c '.tests[] | select(.kind == "tg" and .depth == 0)' "$j")
        logged=$(tail -n +"$mark" "$LOG" | awk '/prompt eval time =/ { for (i = 1; i <= NF; i++) if ($i == "=") pn = $(i + 4); next }
                / eval time =/ { for (i = 1; i <= NF; i++) if ($i == "=") { ms = $(i + 1); m = $(i + 4) }
                                 if (pn == 512) v[k++] = m / ms * 1000 }
                END { printf "%.6f\n", (v[k - 2] + v[k - 1]) / 2 }')
        srv=$(jq .server_tg_tps <<<"$row")
        awk -v a="$srv" -v c="$logged" 'BEGIN { exit !(a > 0 && (a - c) / c < 0.001 && (c - a) / c < 0.001) }' ||
                fail "$model: tg8: server_tg_tps $srv, the log's predicted_n / predicted_ms $logged"
        ok "$model: tg8: ours $(jq '.tps.mean' <<<"$row") t/s, server_tg_tps $srv (log $logged)"

        # forced reuse: the same prompt with cache_prompt true is served from the cache and must fail
        mark=$(($(wc -l <"$LOG") + 1))
        bench --pp 256 --tg 8 --depth 0 --runs 2 --warmup 1 --debug-force-cache-reuse
        rc=$?
        [ "$rc" = 1 ] || fail "$model: forced reuse: exit $rc, want 1"
        [ "$(jq '.failed' "$j")" = 2 ] || fail "$model: forced reuse: $(jq .failed "$j") failed, want 2"
        jq -r '.failures[].error' "$j" | grep -q 'cached prompt tokens of 256' || fail "$model: forced reuse: $(jq -c .failures "$j")"
        evals "$mark" | tail -2 | while read -r n; do
                [ "$n" -lt 16 ] || fail "$model: forced reuse: the server evaluated $n tokens, so it did not reuse"
        done || exit 1
        ok "$model: a forced cache reuse is 2 failed requests (the server evaluated $(evals "$mark" | tail -1) token(s))"

        # llama-bench style: the context is reused on purpose, and the reuse verified
        mark=$(($(wc -l <"$LOG") + 1))
        bench --pp 256 --tg 8 --depth 1024 --runs 2 --warmup 0 --llama-bench-style || fail "$model: llama-bench style: exit $?"
        row=$(jq -c '.tests[] | select(.test == "pp256 @ d1024")' "$j")
        [ "$(jq '.failed' <<<"$row")" = 0 ] || fail "$model: llama-bench style: $(jq -c .failures "$j")"
        [ "$(jq '.cached_tokens_max >= 1000' <<<"$row")" = true ] || fail "$model: llama-bench style: cached $(jq .cached_tokens_max <<<"$row")"
        [ "$(jq '.prompt_tokens_max' <<<"$row")" = 1280 ] || fail "$model: llama-bench style: prompt $(jq .prompt_tokens_max <<<"$row")"
        ok "$model: llama-bench style: context reused ($(jq .cached_tokens_max <<<"$row") cached of 1280)"

        kill "${pids[-1]}"
        wait "${pids[-1]}" 2>/dev/null
done
echo "PASS"
