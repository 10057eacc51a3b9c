#!/usr/bin/env bash
# Issue 18 through a private daemon and the real client, mxsim as vLLM:
#  - the profiling pass (L1.5): the profile's profiler declares a control (vLLM's /start_profile and
#    /stop_profile, which mxsim, like vLLM, serves only with --profiler-config) and a workload; the pass sends
#    start, the workload, stop, and writes profile-workload.json with the tokens from the server's counters;
#    L4 runs after the stop and says it was not traced;
#  - a server without its profiler enabled answers 404: the pass says so, writes no workload file, and L4
#    says it was traced (the capture was never bounded);
#  - speculative decoding: mxsim's drafts accepted at a configured rate (--mxsim-spec-acceptance); L4 reads
#    /metrics before and after each test, keeps both texts, and its acceptance rate and mean acceptance
#    length are exactly the counters' increases (vLLM's definitions) and within the binomial-style
#    tolerance of the configured rate;
#  - without a control the capture is the whole life: L4 is traced, and profile-workload.json holds the
#    server's generation counter read after the last level;
#  - energy: NVML through the fake library (tests/unit/fake-nvml.c) integrating the H200 dump's recorded
#    power: joules per generated token from the counter around each test; a GPU without the counter
#    (FAKE_NVML_ENERGY=0) gives "not measured: the GPU does not report energy".
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
nvml=$MX_BUILD_DIR/tests/libfake-nvml.so
[ -e "$nvml" ] || skip "no $nvml (built with the unit tests)"

RATE=0.3 K=3 TG=128 RUNS=4
step="matrix"
MXD_MATRIX=$T/matrix.json
jq -n --arg sim "$MX_BUILD_DIR/tests/sim/mxsim" --arg lock "$T/gpu.lock" --arg rate "$RATE" --arg tg "$TG" \
      --arg runs "$RUNS" '{
  matrix: 1, name: "l4-profile",
  target: {profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: [$sim, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--disable-uvicorn-access-log",
                     "--enforce-eager",
                     "--speculative-config", "{\"method\": \"eagle3\", \"model\": \"d\", \"num_speculative_tokens\": 3}",
                     "--mxsim-spec-acceptance", $rate],
           env: {MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1", MXSIM_GPU_LOCK: $lock,
                 MXSIM_TOKEN_MS: "2", MXSIM_PREFILL_TPS: "20000", MXSIM_KERNEL_REPORT: "{run_dir}/kern.csv"},
           ready: {timeout: "30s", interval: "100ms"},
           profiler: {format: "nsys", report: "{run_dir}/kern.csv", control: {},
                      workload: {prompt_tokens: 256, output_tokens: 16, requests: 3}}},
  axes: [{name: "prof", values: [
           {name: "on", argv: ["--profiler-config", "{\"profiler\": \"cuda\"}"]},
           {name: "off"}]}],
  baseline: {prof: "on"},
  features: [{name: "off", priority: 1, set: {prof: "off"}, hypothesis: "h",
              criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"}],
  levels: {run: ["L1", "L1.5", "L4"],
           L4: {pp: [128], tg: [($tg | tonumber)], depth: [0], runs: ($runs | tonumber), warmup: 0}}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
ok "checks"

cat >"$T/mxmatrixd.json" <<CFG
{ "gpu_source": "nvml", "nvml_library": "$nvml" }
CFG
# the H200 dump without its compute process (pid 409 would be another process on the GPU: L4 invalid)
dump=$T/nvml.txt
grep -v '^proc ' "$MX_SOURCE_DIR/tests/fixtures/gpu-h200/nvml.txt" >"$dump"
step="start"
mxd_start FAKE_NVML_DUMP="$dump" FAKE_NVML_ENERGY=1 -- --config "$T/mxmatrixd.json"
ok "daemon pid $MXD_PID"

step="one job: the profiler enabled, then not"
job=$(submit feature=off)
mapfile -t runs < <(job_runs "$job")
[ "${#runs[@]}" -eq 2 ] || fail "runs: ${runs[*]}"
follow_job "$job"
on=${runs[0]} off=${runs[1]}
dir_on=$MXD_STATE/runs/$on/1 dir_off=$MXD_STATE/runs/$off/1
ok "r$on r$off"

step="the profiling pass: start, the workload, stop, then L4"
l15=$(level_of "$on" L1.5)
p=$(jq -c .metrics.profiling <<<"$l15")
[ "$(jq -r .control.started <<<"$p")/$(jq -r .control.stopped <<<"$p")" = true/true ] || fail "profiling: $p"
[ "$(jq -r .error <<<"$p")" = null ] || fail "profiling error: $p"
w=$dir_on/profile-workload.json
[ -s "$w" ] || fail "no $w"
# 3 requests x 16 output tokens, counted by the server's vllm:generation_tokens_total
[ "$(jq -r '.tokens, .requests, .prompt_tokens, .output_tokens, .source' "$w" | tr '\n' ' ')" = \
  "48 3 256 16 server counters " ] || fail "workload file: $(cat "$w")"
jq -e '.which | test("/start_profile") and test("vllm:generation_tokens_total")' "$w" >/dev/null ||
        fail "which: $(jq -r .which "$w")"
log=$(grep -l 'Starting profiler' "$dir_on"/* 2>/dev/null | head -1)
[ -n "$log" ] || fail "no log of r$on has the server's 'Starting profiler'"
start_line=$(grep -n 'Starting profiler' "$log" | head -1 | cut -d: -f1)
stop_line=$(grep -n 'Stopping profiler' "$log" | head -1 | cut -d: -f1)
[ -n "$stop_line" ] && [ "$start_line" -lt "$stop_line" ] || fail "$log: no start then stop of the profiler"
l4=$(level_of "$on" L4)
[ "$(jq -r .verdict <<<"$l4")" = pass ] || fail "L4: $(jq -c '{verdict, message}' <<<"$l4")"
[ "$(jq -r .metrics.traced <<<"$l4")" = false ] || fail "L4 traced: $(jq -c .metrics.traced_because <<<"$l4")"
ok "started, 48 tokens in the window by the server's counter, stopped before L4"

step="a server without its profiler: 404, no workload file, L4 traced"
p=$(level_of "$off" L1.5 | jq -c .metrics.profiling)
jq -e '.error | test("HTTP 404") and test("profiler-config")' <<<"$p" >/dev/null || fail "profiling: $p"
[ ! -e "$dir_off/profile-workload.json" ] || fail "a workload file without a bounded capture"
l4off=$(level_of "$off" L4)
[ "$(jq -r .metrics.traced <<<"$l4off")" = true ] || fail "L4 of r$off: not traced"
jq -e '.metrics.traced_because | test("did not stop")' <<<"$l4off" >/dev/null || fail "traced_because"
ok "$(jq -r .error <<<"$p" | cut -c1-60)..."

step="speculative decoding from /metrics before and after the test"
sv=$(jq -c '.metrics.serving[0]' <<<"$l4")
sd=$(jq -c .spec_decode <<<"$sv")
[ "$(jq -r .source <<<"$sd")" = "vllm /metrics" ] || fail "spec_decode: $sd"
before=$dir_on/l4-metrics-0-before.txt after=$dir_on/l4-metrics-0-after.txt
[ -s "$before" ] && [ -s "$after" ] || fail "the /metrics texts are not kept"
ctr() { awk -v n="$2" 'index($0, n "{") == 1 || index($0, n " ") == 1 { s += $2 } END { printf "%.0f", s }' "$1"; }
inc() { echo $(($(ctr "$after" "$1") - $(ctr "$before" "$1"))); }
drafts=$(inc vllm:spec_decode_num_drafts_total)
drafted=$(inc vllm:spec_decode_num_draft_tokens_total)
accepted=$(inc vllm:spec_decode_num_accepted_tokens_total)
[ "$drafts" -gt 50 ] && [ "$drafted" -eq $((drafts * K)) ] || fail "drafts $drafts, draft tokens $drafted"
awk -v a="$accepted" -v d="$drafted" -v n="$drafts" -v r="$(jq -r .acceptance_rate <<<"$sd")" \
        -v l="$(jq -r .mean_acceptance_length <<<"$sd")" \
        'BEGIN { exit !((r - a / d) ^ 2 < 1e-18 && (l - 1 - a / n) ^ 2 < 1e-18) }' ||
        fail "rate/length are not the counters' (accepted $accepted, drafted $drafted, drafts $drafts): $sd"
# Within 4 standard deviations of the configured rate: per draft the accepted count is a prefix of K
# positions each accepted with the p mxsim solves from the rate; var(a) exact from that p.
awk -v r="$RATE" -v k="$K" -v n="$drafts" -v got="$(jq -r .acceptance_rate <<<"$sd")" 'BEGIN {
        lo = 0; hi = 1
        for (it = 0; it < 60; it++) {
                p = (lo + hi) / 2; s = 0; q = 1
                for (i = 1; i <= k; i++) { q *= p; s += q }
                if (s / k < r) lo = p; else hi = p
        }
        m = 0; m2 = 0
        for (i = 0; i <= k; i++) { pr = (i < k) ? p ^ i * (1 - p) : p ^ k; m += i * pr; m2 += i * i * pr }
        sd = sqrt((m2 - m * m) / n) / k
        printf "rate %.4f, configured %.2f, sd %.4f over %d drafts\n", got, r, sd, n
        exit !((got - r) ^ 2 <= (4 * sd) ^ 2) }' >"$T/rate" || fail "$(cat "$T/rate")"
ok "$(cat "$T/rate")"

step="joules per generated token from NVML's energy counter"
en=$(jq -c .energy <<<"$sv")
tokens=$(jq -r .tokens <<<"$en")
[ "$tokens" = $((TG * RUNS)) ] || fail "energy tokens $tokens, want $((TG * RUNS)): $en"
dur=$(jq -r '(.metrics.finished_us - .metrics.started_us) / 1e6' <<<"$l4")
# the fake integrates the dump's 119177 mW: the window lasted joules / 119.177 s, within the L4's duration
awk -v j="$(jq -r .joules <<<"$en")" -v jpt="$(jq -r .joules_per_token <<<"$en")" -v t="$tokens" -v dur="$dur" \
        'BEGIN { exit !(j > 0 && (jpt * t - j) ^ 2 < 1e-9 && j / 119.177 <= dur + 0.05 && j / 119.177 > dur / 20) }' ||
        fail "energy $en against an L4 of $dur s"
ok "$(jq -r '"\(.joules_per_token) J/token over \(.tokens) tokens"' <<<"$en")"
step="the benchmark report's table"
mx report benchmark-results "$job" >"$T/bench.md" || fail "report benchmark-results"
has "$T/bench.md" "### Speculative Decoding and Energy"
rate3=$(jq -r '.acceptance_rate * 1000 | round / 1000' <<<"$sd")
grep -E "^\| .*\(r$on\) \| pp128 tg$TG \| $(printf '%.3f' "$rate3") \| " "$T/bench.md" >/dev/null ||
        fail "no row of r$on with its rate $rate3: $(grep -F "(r$on)" "$T/bench.md")"
ok "$(grep -F "(r$on) | pp128" "$T/bench.md")"
mxd_stop

step="no control: a whole-life capture, normalised before the stop; a GPU without the energy counter"
# the same matrix without profiler.control: nsys (were it there) would trace the server's whole life
jq 'del(.target.profiler.control)' "$T/matrix.json" >"$T/whole.json" || fail "jq"
MXD_MATRIX=$T/whole.json
mxd_start FAKE_NVML_DUMP="$dump" FAKE_NVML_ENERGY=0 -- --config "$T/mxmatrixd.json"
job=$(submit feature=off)
follow_job "$job"
r=$(job_runs "$job" | head -1)
l4=$(level_of "$r" L4)
en=$(jq -c '.metrics.serving[0].energy' <<<"$l4")
[ "$(jq -r .not_measured <<<"$en")" = "the GPU does not report energy" ] || fail "energy: $en"
[ "$(jq -r .metrics.traced <<<"$l4")" = true ] || fail "L4 not traced without a capture control"
jq -e '.metrics.traced_because | test("whole life")' <<<"$l4" >/dev/null || fail "traced_because"
w=$MXD_STATE/runs/$r/1/profile-workload.json
[ -s "$w" ] || fail "no whole-life profile-workload.json: $(level_of "$r" L1.5 | jq -c .metrics)"
# L4 is the last level and its last /metrics read follows its last request: the server's final count
want=$(ctr "$MXD_STATE/runs/$r/1/l4-metrics-0-after.txt" vllm:generation_tokens_total)
[ "$(jq -r .tokens "$w")" = "$want" ] && [ "$(jq -r .source "$w")" = "server counters" ] ||
        fail "whole-life tokens $(jq -c . "$w"), the server's counter after L4 $want"
jq -e '.which | test("every token the server generated in its life")' "$w" >/dev/null || fail "which"
ok "not measured: the GPU does not report energy; whole life $want tokens, L4 traced"
