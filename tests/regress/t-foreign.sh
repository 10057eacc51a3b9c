#!/usr/bin/env bash
# The product against a server that is not ours: tests/foreign/vllm_like.py, an
# OpenAI-compatible server written from vLLM's documented behaviour (not from
# mxsim), whose tokens leave on an exact schedule: token i at F + i*D ms after
# the request. The truth of every metric follows from the schedule and
# bench-methods.md's definitions; the product must agree with it.
#  - mxmatrix bench, the role chunk with the first token, 3 gpt-oss header
#    tokens (no chunk), reasoning first, running usage (continuous_usage_stats):
#    TTFR = F, TTFT = F + 3D, tg = 1000/D, TPOT = (E2EL - TTFR)/(tg - 1) = D,
#    ITL p50 = D;
#  - the role chunk at once (before prefill): TTFR ~ 0, TTFT = F;
#  - a daemon run L1-L4 through a custom profile that starts the server:
#    L2's logprob checks on vLLM's shapes (chat top_logprobs lead with the
#    sampled token), L4's numbers on the schedule.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip "python3 is not installed"
SERVER=$MX_SOURCE_DIR/tests/foreign/vllm_like.py
F=60 D=10

# a free port: bind 0 in Python, print it (the server binds it again a moment later)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server ARGS...: the server in the background with the test's tag, waits for /health
start_server() {
        PORT=$(free_port)
        : >"$T/late.log"
        env MX_REGRESS_TAG="$MX_REGRESS_TAG" python3 "$SERVER" serve gpt-oss --host 127.0.0.1 --port "$PORT" \
                --first-token-ms $F --token-ms $D --disable-log-requests --timing-log "$T/late.log" "$@" \
                >"$T/server.log" 2>&1 &
        SRV_PID=$!
        wait_until "the foreign server on $PORT" curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"
}
stop_server() { kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; }

# The tolerances are the optimized build's; an AddressSanitizer build of the client stamps several times
# slower (the sanitizer tree checks memory, not microseconds): there they are SLACK times wider.
SLACK=1
ldd "$MX_BIN" 2>/dev/null | grep -q libasan && SLACK=4

# near GOT WANT TOL_PCT TOL_MS: |got - want| within TOL_PCT % or TOL_MS (times SLACK)
near() {
        jq -en --argjson g "$1" --argjson w "$2" --argjson p "$3" --argjson a "$4" --argjson k "$SLACK" \
                '(($g - $w) | fabs) <= ([($w | fabs) * $p / 100, $a] | max) * $k' >/dev/null
}
check() { # NAME GOT WANT TOL_PCT TOL_MS
        near "$2" "$3" "$4" "$5" || fail "$1 $2, the schedule says $3 (tolerance $4 % or $5 ms)"
        printf '     %-10s %10.3f  truth %10.3f\n' "$1" "$2" "$3"
}
# What the server really did: its --timing-log has a line per streamed request, the ms after the request
# arrived at which its first data event, its first text and its last token's chunk left. On a loaded machine
# Python's sleep overshoots the schedule; the client's figures must agree with the server's real times.
# server_mean COLUMN (1 first event, 2 first text, 3 last token): the mean over the measured requests
# (the log's last $MEASURED lines: the bench's measured requests are its last). The columns are
# documented in vllm_like.py --help (--timing-log).
server_mean() {
        tail -n "$MEASURED" "$LATE_LOG" | awk -v c="$1" '$c != "-" { s += $c; n++ } END { if (n) printf "%.3f", s / n; else print "null" }'
}
# check_at NAME GOT COLUMN SCHEDULE TOL_PCT TOL_MS: an absolute time against the server's real one. The
# client reads from before its request left, the server from when the request's line arrived: what lies
# between (the server's accept and read, the client's own wake-up on a loaded machine) makes a reading
# later, never earlier, so the tolerance above the truth is D/2: still less than any mistake of a token.
check_at() {
        local truth
        truth=$(server_mean "$3")
        [ "$truth" != null ] || fail "$1: the server's timing log has no such time"
        jq -en --argjson g "$2" --argjson w "$truth" --argjson p "$5" --argjson a "$6" --argjson k "$SLACK" \
                --argjson up "$(jq -n "$D / 2")" \
                '(([($w | fabs) * $p / 100, $a] | max) * $k) as $t | $g >= $w - $t and $g <= $w + ([$t, $up] | max)' \
                >/dev/null || fail "$1 $2, the server sent it at $truth (schedule $4; tolerance $5 % or $6 ms below, $((D / 2)) ms above)"
        printf '     %-10s %10.3f  truth %10.3f  (schedule %s)\n' "$1" "$2" "$truth" "$4"
}
# check_tg NAME GOT: (N - 1) / (last token - first token) on the server's real times: the schedule's rate 1000/D
# times the schedule's span over the real one between the first text and the last token, per request
check_tg() {
        local truth
        truth=$(tail -n "$MEASURED" "$LATE_LOG" | awk -v d=$D '$2 != "-" && $3 > $2 { s += 1000 / d * ($5 - $4) / ($3 - $2); n++ }
                END { if (n) printf "%.3f", s / n; else print "null" }')
        [ "$truth" != null ] || fail "$1: the server's timing log has no token span"
        check "$1" "$2" "$truth" 1 0
}
# check_pp NAME GOT COLUMN: pp t/s = prompt tokens / (TTFR - latency), TTFR the server's real time of its
# first event (COLUMN 1) or, for llama-benchy 0.4's pp, of its first text (2)
check_pp() {
        local truth
        truth=$(jq -n --argjson p "$(val '.tests[0].prompt_tokens_max')" --argjson l "$(val .latency_ms)" \
                --argjson t "$(server_mean "$3")" '$p / (($t - $l) / 1000)')
        check "$1" "$2" "$truth" 3 0
}
LATE_LOG=$T/late.log MEASURED=5

bench() {
        timeout 300 "$MX_BIN" bench "http://127.0.0.1:$PORT" --pp 128 --tg 32 --depth 0 --runs 5 --warmup 1 \
                --json >"$T/bench.json" 2>"$T/err" || fail "mxmatrix bench exited $?"
        jq -e '.failed == 0 and .measured == 5' "$T/bench.json" >/dev/null ||
                fail "failed requests: $(jq -c .failures "$T/bench.json")"
}
val() { jq -r "$1" "$T/bench.json"; }

step="the server refuses connections while it loads"
PORT=$(free_port)
env MX_REGRESS_TAG="$MX_REGRESS_TAG" python3 "$SERVER" serve m --host 127.0.0.1 --port "$PORT" --load-s 1.5 \
        >"$T/server.log" 2>&1 &
SRV_PID=$!
sleep 0.3
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health")
[ "$code" = 000 ] || fail "/health answered $code while loading"
wait_until "the server to listen" curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"
stop_server
ok "connection refused, then 200"

step="bench: role chunk with the first token, header tokens, reasoning, running usage"
start_server --header-tokens 3 --reasoning-tokens 5 --continuous-usage
bench
stop_server
[ "$(val '.server')" = vllm ] || fail "server kind $(val .server)"
[ "$(val '.serving[0].first_token_field.reasoning')" = 5 ] || fail "first token field: $(val '.serving[0].first_token_field')"
# E2EL = F + 31 D (the last token's chunk carries finish_reason); TPOT = (E2EL - TTFR) / 31
check_at ttfr "$(val '.serving[0].ttfr_ms.mean')" 1 $F 2 1.5
check_at ttft "$(val '.serving[0].ttft_ms.mean')" 2 $((F + 3 * D)) 2 1.5
check_at e2el "$(val '.serving[0].e2el_ms.mean')" 3 $((F + 31 * D)) 1 1.5
check tpot "$(val '.serving[0].tpot_ms.mean')" $D 1 0.2
check itl_p50 "$(val '.serving[0].itl_ms.p50')" $D 1 0.2
check_tg tg_tps "$(val '.tests[] | select(.kind == "tg") | .tps.mean')"
[ "$(val '.tests[] | select(.kind == "tg") | .tokens_counted_from')" = "running counts (usage.completion_tokens)" ] ||
        fail "tg counted from $(val '.tests[] | select(.kind == "tg") | .tokens_counted_from')"
# pp t/s = prompt tokens / (TTFR - latency)
check_pp pp_tps "$(val '.tests[] | select(.kind == "pp") | .tps.mean')" 1
[ "$(val '.tests[] | select(.kind == "pp") | .ttfr_before_prefill')" = false ] ||
        fail "the role chunk with the first token is flagged as sent before the prefill"
ok "TTFR, TTFT, E2EL, TPOT, ITL, tg and pp on the schedule"

step="bench: silent Harmony tokens mid-stream and at the end, behind an API key"
# 3 header tokens, 5 reasoning, 6 silent at the channel switch, content, the last 6 silent (only the very
# last sends a chunk): tg and the per-token ITL must follow the tokens really delivered, D apart
start_server --header-tokens 3 --reasoning-tokens 5 --switch-tokens 6 --end-tokens 6 --continuous-usage \
        --api-key sekrit --harmony-eos-error
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/models")
[ "$code" = 401 ] || fail "/v1/models without the key answered $code"
OPENAI_API_KEY=sekrit bench
check_tg tg_tps "$(val '.tests[] | select(.kind == "tg") | .tps.mean')"
check itl_p50 "$(val '.serving[0].itl_ms.p50')" $D 1 0.2
check itl_mean "$(val '.serving[0].itl_ms.mean')" $D 2 0.3
check_at e2el "$(val '.serving[0].e2el_ms.mean')" 3 $((F + 31 * D)) 1 1.5
# the chunk after the switch holds 7 tokens' time: vllm bench serve's per-chunk ITL shows it
# (a maximum only grows with the machine's jitter: its lower bound is exact, its upper bound loose)
ev_max=$(val '.serving[0].itl_event_ms.max')
jq -en --argjson g "$ev_max" --argjson w $((7 * D)) '$g >= $w * 0.98 and $g <= $w * 1.25' >/dev/null ||
        fail "itl_event_max $ev_max, the schedule says $((7 * D)) (at least 98 %, at most 125 %)"
[ "$(val '.serving[0].itl_from')" = "running counts (per token)" ] || fail "itl from $(val '.serving[0].itl_from')"
# vllm#50690: ignore_eos without min_tokens fails once the turn ends early; the bench's min_tokens avoids it
body='{"messages":[{"role":"user","content":"hi"}],"max_tokens":100,"ignore_eos":true}'
out=$(curl -s -H 'Authorization: Bearer sekrit' -d "$body" "http://127.0.0.1:$PORT/v1/chat/completions")
grep -q 'Unexpected token 200002 while expecting start token 200006' <<<"$out" || fail "no Harmony failure: $out"
stop_server
ok "tg and ITL on the delivered tokens' schedule; 401 without the key; vllm#50690 reproduced and avoided"

step="bench: the role chunk before prefill, content only"
start_server --role-at request --role-content-empty --sse-comments
bench
stop_server
check_at ttfr "$(val '.serving[0].ttfr_ms.mean')" 1 0 0 2
check_at ttft "$(val '.serving[0].ttft_ms.mean')" 2 $F 2 1.5
# TPOT from TTFT's origin (the first text): D; vllm bench serve's, from the role chunk at t0: (F + 31 D) / 31
check tpot "$(val '.serving[0].tpot_ms.mean')" $D 1 0.2
check tpot_vllm "$(val '.serving[0].tpot_vllm_ms.mean')" "$(jq -n "($F + 31 * $D) / 31")" 1 0.2
check itl_p50 "$(val '.serving[0].itl_ms.p50')" $D 1 0.2
check_tg tg_tps "$(val '.tests[] | select(.kind == "tg") | .tps.mean')"
# pp from a role chunk sent at once means nothing: flagged, and llama-benchy 0.4's pp (to the first text) kept
[ "$(val '.tests[] | select(.kind == "pp") | .ttfr_before_prefill')" = true ] ||
        fail "a role chunk before the prefill is not flagged"
check_pp pp_first_text "$(val '.tests[] | select(.kind == "pp") | .tps_first_text.mean')" 2
ok "TTFR is the role chunk, TTFT the first text; pp flagged, and by the first text on the schedule"

step="matrix: a custom profile that starts the foreign server"
MXD_MATRIX=$T/matrix.json
jq -n --arg srv "$SERVER" --argjson f $F --argjson d $D '{
  matrix: 1, name: "foreign",
  profiles: {foreign: {base: "vllm", ready: {timeout: "60s", interval: "100ms"},
                       stop: {signals: [{signal: "SIGTERM", grace: "10s"}, {signal: "SIGKILL", grace: "5s"}]}}},
  target: {profile: "foreign", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: ["python3", $srv, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--load-s", "0.5",
                     "--first-token-ms", ($f | tostring), "--token-ms", ($d | tostring),
                     "--header-tokens", "3", "--reasoning-tokens", "5", "--continuous-usage",
                     "--max-model-len", "8192", "--disable-log-requests", "--timing-log", "{run_dir}/late.log"]},
  axes: [{name: "role", values: [{name: "with-token"}, {name: "early", argv: ["--role-at", "request"]}]}],
  baseline: {role: "with-token"},
  features: [{name: "early", priority: 1, set: {role: "early"}, hypothesis: "the same", criteria: [{metric: "tg32_tps", min_gain_pct: 0}], status: "in-progress"}],
  levels: {run: ["L1", "L2", "L3", "L4"],
           L2: {max_tokens: 16, after_traffic: 1},
           L3: {sequential: 4, concurrency: 3, max_tokens: 8, long_generation_tokens: 64,
                long_context_tokens: 2048, memory_every: 2},
           L4: {pp: [128], tg: [32], depth: [0], runs: 4, warmup: 1}}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

step="L1-L4 against the foreign server"
job=$(submit feature=early)
mapfile -t runs < <(job_runs "$job")
[ "${#runs[@]}" -eq 2 ] || fail "runs: ${runs[*]}"
MX_WAIT_S=300 follow_job "$job"
for r in "${runs[@]}"; do
        lv=$(run_field "$r" "$RESULT_ATTEMPT.levels")
        for L in L1 L2 L3 L4; do
                v=$(jq -r ".[] | select(.level == \"$L\") | .verdict" <<<"$lv")
                [ "$v" = pass ] || fail "r$r $L: $v: $(jq -c ".[] | select(.level == \"$L\") | .message" <<<"$lv")"
        done
done
ok "r${runs[0]} r${runs[1]}: L1 L2 L3 L4 pass"

step="L4's numbers on the schedule"
late_log() { ls "$MXD_STATE"/runs/"$1"/*/late.log 2>/dev/null | tail -1; }
r=${runs[0]}
LATE_LOG=$(late_log "$r") MEASURED=
l4=$(level_of "$r" L4)
jq '.metrics' <<<"$l4" >"$T/bench.json"
MEASURED=$(val .measured)
[ -n "$LATE_LOG" ] || fail "r$r: the server's timing log is missing"
check_at ttfr "$(val '.serving[0].ttfr_ms.mean')" 1 $F 2 1.5
check_at ttft "$(val '.serving[0].ttft_ms.mean')" 2 $((F + 3 * D)) 2 1.5
check tpot "$(val '.serving[0].tpot_ms.mean')" $D 1 0.2
check itl_p50 "$(val '.serving[0].itl_ms.p50')" $D 1 0.2
check_tg tg_tps "$(val '.tests[] | select(.kind == "tg") | .tps.mean')"
r=${runs[1]}
LATE_LOG=$(late_log "$r") MEASURED=
l4=$(level_of "$r" L4)
jq '.metrics' <<<"$l4" >"$T/bench.json"
MEASURED=$(val .measured)
[ -n "$LATE_LOG" ] || fail "r$r: the server's timing log is missing"
check_at ttfr "$(val '.serving[0].ttfr_ms.mean')" 1 0 0 2
check_at ttft "$(val '.serving[0].ttft_ms.mean')" 2 $((F + 3 * D)) 2 1.5
check_tg tg_tps "$(val '.tests[] | select(.kind == "tg") | .tps.mean')"
ok "baseline and early-role runs agree with the schedule"
