#!/usr/bin/env bash
# L4 and L5 through a private daemon and the real client, with the database as
# L5's history: a matrix whose target is mxsim (250 t/s on Marlin, CUTLASS
# 1.22x faster, a "slow" kernel value 50 % slower through MXSIM_SPEED_RULES)
# and a git work tree as its metadata source. "slow" is decided on 1 start
# against the baseline's 2, so with 1 degree of freedom: p(beyond 5 %) < 0.05
# needs t > 6.31, se = s * sqrt(1 + 1/2): at 30 % slower a spread s of 3.2 %
# between the baselines' two starts (a loaded machine's, issue 14) leaves it
# unknown (then confirmed, and the message below no longer matches); at 50 %
# it takes 5.8 %.
#  - the plan runs the baseline first; the baseline's L5 has nothing earlier
#    (skipped), CUTLASS passes against it;
#  - a second job: its baseline compares with the first baseline at the same
#    SHAs, "slow" is a regression named with its Welch rule;
#  - --skip-measured leaves out what passed L4 at these SHAs and says so;
#  - after a new commit, CUTLASS is compared with itself at the old SHAs too.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v git >/dev/null || skip "git is not installed"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"

step="git tree"
g() { git_t "$@"; }
git_one_commit "$T/vllm" || fail "git"
ok "vllm $(git -C "$T/vllm" rev-parse --short HEAD)"

step="mxsim refuses a bad speed rule"
MXSIM_SPEED_RULES="VLLM_MXFP4_ACTIVATION=fp8:fast" expect_exit 2 "$MX_BUILD_DIR/tests/sim/mxsim" serve m --port 1
has "$T/err" "MXSIM_SPEED_RULES: factor 'fast' is not a number in (0, 100]"
MXSIM_SPEED_RULES="no-equals-sign" expect_exit 2 "$MX_BUILD_DIR/tests/sim/mxsim" serve m --port 1
has "$T/err" "'no-equals-sign' is not VAR=value:factor"
ok "exit status 2, the rule named"

step="matrix"
MXD_MATRIX=$T/matrix.json
# pp512 prefills for 205 ms (2500 t/s): against 51 ms a loaded machine's few ms of client wake-up were a
# 5 % "regression" between two starts of the same code (seen in the ASan tree); the verdicts here are
# about tg32 and the comparisons' bookkeeping, not about how small a prefill the machine can time.
# L5's thresholds are 15 % (tg) and 30 % (TTFT p99): the same code at another commit must be shown
# within them, and under ctest -j2 one start's tg moved 4 % (against 5 %: "unknown", seen); "slow" at
# 50 % and CUTLASS at +24 % stay far from 15
jq -n --arg sim "$MX_BUILD_DIR/tests/sim/mxsim" --arg v "$T/vllm" --arg lock "$T/gpu.lock" '{
  matrix: 1, name: "l5",
  target: {profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: [$sim, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--disable-uvicorn-access-log"],
           env: {MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1", MXSIM_GPU_LOCK: $lock,
                 MXSIM_TOKEN_MS: "4", MXSIM_PREFILL_TPS: "2500", MXSIM_SPEED_RULES: "MXSIM_SLOW=1:0.5"},
           ready: {timeout: "30s", interval: "100ms"}},
  axes: [{name: "kernel", values: [
           {name: "marlin", env: {VLLM_MXFP4_MOE_KERNEL: "marlin"}},
           {name: "cutlass", env: {VLLM_MXFP4_MOE_KERNEL: "gemm"}},
           {name: "slow", env: {VLLM_MXFP4_MOE_KERNEL: "marlin", MXSIM_SLOW: "1"}},
           {name: "fast", env: {VLLM_MXFP4_MOE_KERNEL: "gemm", MXSIM_FAST: "1"}}]}],
  baseline: {kernel: "marlin"},
  features: [{name: "cutlass", priority: 1, set: {kernel: "cutlass"}, hypothesis: "faster", criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"},
             {name: "slow", priority: 2, set: {kernel: "slow"}, hypothesis: "slower", criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"},
             {name: "fast", priority: 3, set: {kernel: "fast"}, hypothesis: "faster", criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"}],
  levels: {run: ["L1", "L4", "L5"],
           L4: {pp: [512], tg: [32], depth: [0], runs: 4, warmup: 1},
           L5: {perf_max_drop_pct: 15, ttft_p99_max_rise_pct: 30}},
  metadata: {sources: {vllm: $v}, timeout_ms: 5000}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
ok "checks"

step="start"
mxd_start
ok "daemon pid $MXD_PID"

# L5's and L4's records of rID's result attempt (not a later confirmation start of it)
l5_of() { level_of "$1" L5; }
l4_of() { level_of "$1" L4; }
verdict_is() {
        local got
        got=$(jq -r .verdict <<<"$2")
        [ "$got" = "$1" ] || fail "verdict $got, want $1: $(jq -c '{level, verdict, message}' <<<"$2")"
}

step="first job: the baseline first, CUTLASS against it"
job=$(submit feature=cutlass)
mapfile -t runs < <(job_runs "$job")
[ "${#runs[@]}" -eq 2 ] || fail "runs: ${runs[*]}"
[ "$(run_field "${runs[0]}" '.run.reasons | index("baseline") != null')" = true ] || fail "the baseline is not first"
follow_job "$job"
b1=${runs[0]} c1=${runs[1]}
l4=$(l4_of "$b1")
verdict_is pass "$l4"
jqv "$l4" '.metrics.tests[] | select(.test == "tg32") | .tps.values | length == 4' >/dev/null
jqv "$l4" '.metrics.valid == true and .metrics.ready_s > 0 and .metrics.memory.peak > 0' >/dev/null
jqv "$l4" '.artifacts | map(.path) | index("l4-results.yaml") != null' >/dev/null
l5=$(l5_of "$b1")
verdict_is skipped "$l5"
jqv "$l5" '.message | startswith("this run is the baseline")' >/dev/null
l5=$(l5_of "$c1")
verdict_is pass "$l5"
jqv "$l5" ".message | test(\"no regression against the baseline r$b1 \")" >/dev/null
jqv "$l5" '.metrics.groups[0].comparison.checks[] | select(.metric == "tg32") | .delta_pct > 15' >/dev/null
mx show "r$c1" >"$T/show" || fail "show"
has "$T/show" "L4 valid, 4 runs per test"
has "$T/show" "tg32"
ok "r$b1 baseline (L5 skipped), r$c1 CUTLASS +$(jq -r '.metrics.groups[0].comparison.checks[] |
        select(.metric == "tg32") | .delta_pct | floor' <<<"$l5") % (L5 pass)"

step="second job: the baseline against the first, 'slow' a regression"
job=$(submit feature=slow)
mapfile -t runs < <(job_runs "$job")
follow_job "$job"
b2=${runs[0]} s2=${runs[1]}
l5=$(l5_of "$b2")
verdict_is pass "$l5"
jqv "$l5" ".message | test(\"the baseline's earlier runs r$b1\")" >/dev/null
l5=$(l5_of "$s2")
verdict_is fail "$l5"
# the server start is the unit: 1 start of 'slow' against the baseline's starts (2, more when the first job confirmed), beyond 5 %
jqv "$l5" '.message | test("^regression: tg32 .*[(]-[0-9.]+ %; 1 vs [0-9]+ starts: .* against 15: p[(]beyond[)]=[0-9.e-]+ < 0.05")' \
        >/dev/null
jqv "$l5" '.metrics.rule | test("p[(]beyond[)]=[0-9.e-]+ < 0.05")' >/dev/null
# pooled: the job's baseline and the earlier one at the same SHAs
jqv "$l5" ".metrics.groups[0].runs | map(.run) | unique == ([$b1, $b2] | sort)" >/dev/null # confirmation starts are more starts of the same runs
ok "$(jq -r .message <<<"$l5")"

step="--skip-measured"
out=$(mxj submit feature=fast --skip-measured --dry-run)
jqv "$out" '.runs | length == 1 and .[0].config_key == "kernel=fast"' >/dev/null
jqv "$out" ".skipped[] | select(.config_key == \"kernel=marlin\") | .reason |
        test(\"already measured: L4 passed in r$b2 .* at the same source SHAs \\\\(vllm [0-9a-f]{12}\\\\)\")" \
        >/dev/null
expect_exit 1 mx submit feature=cutlass --skip-measured
has "$T/err" "nothing to run: all 2 runs of the plan were already measured"
ok "the measured baseline is left out and named; an all-measured plan is refused"

step="a new commit: the history at other SHAs"
echo two >>"$T/vllm/README" && g -C "$T/vllm" commit -qam two || fail "git"
out=$(mxj submit feature=cutlass --skip-measured --dry-run)
jqv "$out" '(.runs | length) == 2 and (.skipped | length) == 0' >/dev/null
job=$(submit feature=cutlass)
mapfile -t runs < <(job_runs "$job")
follow_job "$job"
l5=$(l5_of "${runs[1]}")
verdict_is pass "$l5"
jqv "$l5" ".message | test(\"against the baseline r${runs[0]}[; ]\") and
        test(\"this configuration at other source SHAs r$c1\")" >/dev/null
jqv "$l5" '.metrics.groups | map(.against) == ["baseline", "history"]' >/dev/null
ok "$(jq -r .message <<<"$l5")"
