#!/usr/bin/env bash
# L1.5's profiling pass when the server's /metrics cannot be trusted, through a private daemon and the real
# client, mxsim as vLLM (its profiler enabled, the pass's workload 3 requests x 7 output tokens):
#  - a sound server: profile-workload.json holds the 21 tokens by vllm:generation_tokens_total ("server
#    counters"), the control the sim's token log is counted against;
#  - metrics-malformed (the generation counter's sample cut short): the file says "declared", and its which
#    and L1.5's metrics.profiling.which name the read and the malformed line itself;
#  - metrics-reset-after=N, N set so that the counters restart between the workload's second and third
#    request (counted from the sound run's token log): which names the counter going backwards from the
#    tokens the server had generated before the window (the token log's sum) to the third request's 7;
#  - without a control (a whole-life capture) and a malformed /metrics: no file, and L1.5's
#    metrics.profiling.error (and the run's log) names the malformed line. The configurations expect
#    Marlin's kernels: an L1.5 without expectations is recorded (skipped) before the whole-life read.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"

OUT=7 REQS=3 PROMPT=128
GEN=vllm:generation_tokens_total
# matrix FILE FAULT-ARGV-JSON: one feature "x" whose run adds the fault's flags; the baseline has none
matrix() {
        jq -n --arg sim "$MX_BUILD_DIR/tests/sim/mxsim" --arg lock "$T/gpu.lock" --argjson fault "$2" \
              --argjson out "$OUT" --argjson reqs "$REQS" --argjson prompt "$PROMPT" \
              --argjson expect '{"kernels": {"must_see": ["marlin_*"]}}' '{
  matrix: 1, name: "profile-counters",
  target: {profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: [$sim, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--disable-uvicorn-access-log",
                     "--enforce-eager", "--profiler-config", "{\"profiler\": \"cuda\"}",
                     "--mxsim-token-log", "{run_dir}/tokens.jsonl"],
           env: {MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1", MXSIM_GPU_LOCK: $lock,
                 MXSIM_TOKEN_MS: "2", MXSIM_PREFILL_TPS: "20000", MXSIM_KERNEL_REPORT: "{run_dir}/kern.csv"},
           ready: {timeout: "30s", interval: "100ms"},
           profiler: {format: "nsys", report: "{run_dir}/kern.csv", control: {},
                      workload: {prompt_tokens: $prompt, output_tokens: $out, requests: $reqs}}},
  axes: [{name: "fault", values: [{name: "none", expect: $expect}, {name: "on", argv: $fault, expect: $expect}]}],
  baseline: {fault: "none"},
  features: [{name: "x", priority: 1, set: {fault: "on"}, hypothesis: "h",
              criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"}],
  levels: {run: ["L1", "L1.5"]}
}' >"$1" || fail "jq"
        expect_exit 0 mx matrix check "$1"
}

# run_job MATRIX: submit feature x of MATRIX and wait; runs=(its runs), the fault's run last
run_job() {
        local job
        job=$(submit x --matrix "$1") || exit 1
        follow_job "$job"
        [ "$(job_field "$job" '.job.state')" = done ] || fail "job $job did not finish: $(tail -5 "$T/follow")"
        mapfile -t runs < <(job_runs "$job")
        [ "${#runs[@]}" -ge 1 ] || fail "job $job has no run"
        [ "$(run_field "${runs[-1]}" .run.config.fault)" = on ] ||
                fail "job $job: its last run r${runs[-1]} is not fault=on"
}

# The completions the server answered before the workload's first request, and their generated tokens,
# from a run's token log (c = 1: every one of them ended before the pass read /metrics).
before_workload() {
        jq -s -r --argjson out "$OUT" --argjson prompt "$PROMPT" '
                (map(.ev == "req" and .max_tokens == $out and .prompt_tokens == $prompt) | index(true)) as $w |
                [.[:$w][] | select(.ev == "end" and .finish != "error")] |
                "\(length) \(map(.completion_tokens) | add)"' "$1"
}

step="matrices"
matrix "$T/malformed.json" '["--mxsim-fault", "metrics-malformed"]'
MXD_MATRIX=$T/malformed.json
mxd_start
ok "daemon pid $MXD_PID"

step="a sound server, then a malformed /metrics"
run_job "$T/malformed.json"
[ "${#runs[@]}" -eq 2 ] && [ "$(run_field "${runs[0]}" .run.config.fault)" = none ] || fail "runs ${runs[*]}"
sound=$MXD_STATE/runs/${runs[0]}/1 bad=$MXD_STATE/runs/${runs[1]}/1
w=$sound/profile-workload.json
[ "$(jq -r '"\(.tokens) \(.source)"' "$w")" = "$((REQS * OUT)) server counters" ] || fail "sound: $(cat "$w")"
log=$sound/tokens.jsonl
[ "$(jq -s --argjson out "$OUT" --argjson prompt "$PROMPT" \
        'map(select(.ev == "req" and .max_tokens == $out and .prompt_tokens == $prompt)) | length' "$log")" = "$REQS" ] ||
        fail "$log: not $REQS workload requests of $PROMPT + $OUT tokens"
read -r k before < <(before_workload "$log")
[ "$k" -gt 0 ] && [ "$before" -gt "$OUT" ] || fail "before the workload: $k completions, $before tokens"
ok "r${runs[0]}: $((REQS * OUT)) tokens by $GEN; $k completions ($before tokens) before the window"

w=$bad/profile-workload.json
[ "$(jq -r .source "$w")" = declared ] && [ "$(jq -r .tokens "$w")" = $((REQS * OUT)) ] || fail "malformed: $(cat "$w")"
re='the server'\''s generation counter is not used: before the window: /metrics line [0-9]+ is not a sample: '
re+='vllm:generation_tokens_total\{engine="0",model_name="gpt-oss-120b"$'
jq -e --arg re "$re" '.which | test($re)' "$w" >/dev/null || fail "which: $(jq -r .which "$w")"
p=$(level_of "${runs[1]}" L1.5 | jq -c .metrics.profiling)
[ "$(jq -r .source <<<"$p")" = declared ] && jq -e --arg re "$re" '.which | test($re)' <<<"$p" >/dev/null ||
        fail "L1.5 profiling: $p"
ok "r${runs[1]}: $(jq -r .which "$w" | sed 's/.*used: //')"

step="the counters restart inside the window"
n=$((k + 2))
matrix "$T/reset.json" "[\"--mxsim-fault\", \"metrics-reset-after=$n\"]"
jq '.name = "profile-counters-reset"' "$T/reset.json" >"$T/m" && mv "$T/m" "$T/reset.json" || fail "jq"
run_job "$T/reset.json"
dir=$MXD_STATE/runs/${runs[-1]}/1
# the same traffic before the window as in the sound run, or the reset fell elsewhere
[ "$(before_workload "$dir/tokens.jsonl")" = "$k $before" ] ||
        fail "r${runs[-1]}: before the workload $(before_workload "$dir/tokens.jsonl"), the sound run $k $before"
w=$dir/profile-workload.json
[ "$(jq -r .source "$w")" = declared ] && [ "$(jq -r .tokens "$w")" = $((REQS * OUT)) ] || fail "reset: $(cat "$w")"
# before the window: every token so far; after: the third request's alone
want="$GEN went backwards from $before to $OUT (the server restarted or reset its counters in the window)"
jq -e --arg s "$want" '.which | endswith($s)' "$w" >/dev/null || fail "which: $(jq -r .which "$w"), want '$want'"
p=$(level_of "${runs[-1]}" L1.5 | jq -c .metrics.profiling)
jq -e --arg s "$want" '.source == "declared" and (.which | endswith($s)) and .error == null' <<<"$p" >/dev/null ||
        fail "L1.5 profiling: $p"
ok "r${runs[-1]}: $want"

step="no control (a whole-life capture) and a malformed /metrics"
jq 'del(.target.profiler.control) | .name = "profile-counters-whole"' "$T/malformed.json" >"$T/whole.json" ||
        fail "jq"
run_job "$T/whole.json"
[ "${#runs[@]}" -eq 1 ] || [ -s "$MXD_STATE/runs/${runs[0]}/1/profile-workload.json" ] ||
        fail "the sound whole-life run r${runs[0]} wrote no file"
[ ! -e "$MXD_STATE/runs/${runs[-1]}/1/profile-workload.json" ] || fail "a whole-life file from a malformed /metrics"
p=$(level_of "${runs[-1]}" L1.5 | jq -c .metrics.profiling)
re='^the whole-life capture is not normalised: /metrics line [0-9]+ is not a sample: '
re+='vllm:generation_tokens_total\{engine="0",model_name="gpt-oss-120b"$'
jq -e --arg re "$re" '.error | test($re)' <<<"$p" >/dev/null || fail "L1.5 profiling: $p"
# and the run's log, where the pass notes it
grep -qF "L1.5: profiling pass: $(jq -r .error <<<"$p")" "$MXD_STATE/runs/${runs[-1]}/1/server.log" ||
        fail "the run's log lacks the pass's note"
ok "r${runs[-1]}: $(jq -r .error <<<"$p")"
mxd_stop
