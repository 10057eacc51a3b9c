#!/usr/bin/env bash
# mxmatrix bench URL against mxsim on an exact token schedule, through the real
# client binary: llama-benchy's table, --json, exit statuses, failures shown.
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
export MXSIM_LOAD_S=0.1 MXSIM_GPU_LOCK=$tmp/gpu.lock
unset MXSIM_FAULTS MXSIM_FLAVOR OPENAI_API_KEY

fail() { echo "FAIL: $*"; exit 1; }

free_port() {
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
                echo $((20000 + RANDOM % 20000))
}

# start_sim [flags...]: a vLLM-flavoured sim at 200 t/s; sets PORT; its token log (when it really sent each
# token, tests/sim/README.md) is $tmp/tokens-$PORT.jsonl
start_sim() {
        PORT=$(free_port)
        MXSIM_GPU_LOCK=$tmp/gpu-$PORT.lock "$sim" serve gpt-oss-120b --host 127.0.0.1 --port "$PORT" \
                --mxsim-decode-tps 200 --mxsim-prefill-tps 20000 --mxsim-token-log "$tmp/tokens-$PORT.jsonl" \
                "$@" >"$tmp/sim-$PORT.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 600); do
                curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && return 0
                sleep 0.05
        done
        fail "mxsim did not start"
}

start_sim
url=http://127.0.0.1:$PORT

# the table: llama-benchy's columns and rows, the serving metrics, the definitions
"$mx" bench "$url" --pp 128 --tg 16 --depth 0,256 --runs 3 --warmup 1 -q >"$tmp/table" 2>"$tmp/err" ||
        fail "bench failed: $(cat "$tmp/err")"
grep -q '^| model *| *test | *t/s | *peak t/s | *ttfr (ms) | est_ppt (ms) | e2e_ttft (ms) |$' "$tmp/table" ||
        fail "no llama-benchy header: $(head -2 "$tmp/table")"
for t in 'pp128' 'tg16' 'pp128 @ d256' 'tg16 @ d256'; do
        grep -q "| *$t |" "$tmp/table" || fail "no row '$t'"
done
grep -q 'TPOT' "$tmp/table" && grep -q 'ITL' "$tmp/table" && grep -q 'E2EL' "$tmp/table" ||
        fail "no serving metrics"
grep -q 'population std' "$tmp/table" || fail "the std is not named"
grep -q 'linear interpolation' "$tmp/table" || fail "the percentile method is not named"
grep -q 'Requests: 6 measured, 0 failed' "$tmp/table" || fail "request count missing"
echo "ok   table"

# --json: the decode rate the sim really kept, exact prompt lengths, seed 002's results block
"$mx" --json bench "$url" --pp 128 --tg 16 --depth 0 --runs 3 --warmup 1 -q >"$tmp/json" ||
        fail "bench --json failed"
# The truth is the sim's token log, not its 200 t/s schedule: on a loaded machine (ctest -j2 on 2 cores) the
# sim writes late, and the client can only be as right as what it was sent. The measured requests are the
# last 3 with max_tokens 16 (the warm-up comes first; the latency requests ask for fewer): per request
# (N - 1) / (last token's write - first token's write), their mean.
tg_true=$(jq -s '. as $all | [.[] | select(.ev == "req" and .max_tokens == 16) | .id][-3:] |
        [.[] as $id | [$all[] | select(.ev == "tok" and .id == $id)] |
         (.[-1].tokens - 1) / ((.[-1].sent_us - .[0].sent_us) / 1e6)] | add / length' "$tmp/tokens-$PORT.jsonl")
# 3 %: a token miscounted (N for N - 1) or a span a token off is 1/15 = 6.7 %; a late wake-up of the client
# at either end of a 75 ms span moves a request by 1.3 % a ms (beside 3 busy loops the mean of three was
# 1.5 % off)
jq -e --argjson t "$tg_true" '.tests[] | select(.test == "tg16") | .tps.mean | ((. - $t) | fabs) <= 0.03 * $t' \
        "$tmp/json" >/dev/null ||
        fail "tg16 is not the $tg_true t/s the sim really sent (schedule 200): $(jq -c '.tests' "$tmp/json")"
jq -e '.tests[] | select(.test == "pp128") | .prompt_tokens_min == 128 and .prompt_tokens_max == 128' \
        "$tmp/json" >/dev/null || fail "prompts are not 128 tokens"
jq -e '.results.throughput.tg16_tps > 0 and .results.latency.ttft_p50_ms > 0' "$tmp/json" >/dev/null ||
        fail "no seed 002 results block"
jq -e '.server == "vllm" and .definitions.tg_tps and .statistics.percentiles and .failed == 0' \
        "$tmp/json" >/dev/null || fail "server, definitions or statistics missing"
echo "ok   json: tg16 $(jq '.tests[] | select(.test == "tg16") | .tps.mean' "$tmp/json") t/s, the sim really sent $tg_true"

# the server's own figures: vLLM (this sim) sends no per-request timings, so they are null and say why, in the
# document and under the table, never a guess; the same sim as llama-server imitates its timings, read per row
jq -e '[.tests[] | select(.kind == "pp" or .kind == "tg")] | length > 0 and all(
        (.server_pp_tps // null) == null and (.server_tg_tps // null) == null and .server_timings_requests == 0 and
        (.server_timings | startswith("not reported by the server (vllm)")))' "$tmp/json" >/dev/null ||
        fail "vLLM's rows have server figures: $(jq -c '[.tests[] | {test, server_pp_tps, server_tg_tps, server_timings}]' "$tmp/json")"
jq -e '.tests[] | select(.kind == "pp") | .preparation_ms == null' "$tmp/json" >/dev/null || fail "vLLM: a preparation_ms"
grep -q '^blank server t/s: not reported by the server (vllm)' "$tmp/table" || fail "the table does not say why the server t/s is blank"
grep -q '^test *t/s *server t/s *preparation (ms) *with timings$' "$tmp/table" || fail "no server timings table"
PORT_V=$PORT
MXSIM_FLAVOR=llama-server start_sim
"$mx" --json bench "http://127.0.0.1:$PORT" --pp 128 --tg 16 --depth 0 --runs 3 --warmup 1 -q >"$tmp/json-llama" ||
        fail "bench --json (llama-server flavour) failed"
jq -e '.server == "llama-server" and (.tests[] | select(.kind == "pp") | .server_pp_tps > 0 and
        .server_timings_requests == 3 and (.preparation_ms | type == "number")) and
        (.tests[] | select(.kind == "tg") | .server_tg_tps > 0 and .server_timings_requests == 3)' \
        "$tmp/json-llama" >/dev/null ||
        fail "llama-server flavour: $(jq -c '[.tests[] | {test, server_pp_tps, server_tg_tps, preparation_ms, server_timings}]' "$tmp/json-llama")"
PORT=$PORT_V
echo "ok   server figures: null with the reason for vLLM, read from llama-server's timings"

# usage errors: 2; a server that is not there: 1 with a reason
"$mx" bench "$url" --tg 1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--tg 1 is not a usage error"
"$mx" bench >/dev/null 2>&1; [ $? -eq 2 ] || fail "a missing URL is not a usage error"
"$mx" bench "http://127.0.0.1:$(free_port)" --runs 1 -q >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q '/v1/models' "$tmp/err" || fail "unreachable server: exit $rc, $(cat "$tmp/err")"
echo "ok   exit status"

# failed requests are counted and shown, and fail the command (pp 128: gpt-oss's chat template alone is
# 71 tokens here, so a pp64 prompt cannot be made and fails before any request, a separate case)
start_sim --mxsim-fault null-content
"$mx" bench "http://127.0.0.1:$PORT" --pp 128 --tg 8 --depth 0 --runs 2 --warmup 0 -q >"$tmp/table" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "failed requests did not fail the command (exit $rc)"
grep -q 'Requests: 2 measured, 2 failed' "$tmp/table" || fail "failures not counted: $(tail -5 "$tmp/table")"
grep -q 'FAILED pp128 tg8 run 1: no event carried text' "$tmp/table" || fail "failure not shown"
"$mx" bench "http://127.0.0.1:$PORT" --pp 64 --tg 8 --depth 0 --runs 1 --warmup 0 -q >"$tmp/table" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q 'FAILED pp64 tg8 run 1: no prompt of 64 tokens: the chat template alone has' "$tmp/table" ||
        fail "a prompt smaller than the chat template was not a failure naming both (exit $rc): $(tail -3 "$tmp/table")"
echo "ok   failures"
