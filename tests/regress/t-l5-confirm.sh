#!/usr/bin/env bash
# L5 confirmation starts through a private daemon, the real client and mxsim
# (issue 15 item 2), with L5.confirm_starts 2 and the baseline group only:
#  - a 50 % slower kernel ("slow") is a regression, decided at once or after
#    confirmation starts;
#  - after a new commit (no earlier baseline at the SHAs: 1 start a side), a
#    kernel 12 % slower ("near", inside the 24 % threshold, significant within
#    the start) is undecided: the daemon starts "near" and the baseline again,
#    A then B, while the job is not done; a daemon restart in the middle of
#    the confirmation loses nothing; L5 ends decided (no regression) and
#    show names the starts on each side and the rule.
# The planted effects are far from every edge of the decision (issue 14): a
# loaded 2-core machine (ctest -j2) moves a start's tg32 by a few percent
# (the sim wakes late, and a start may run loaded while the other side ran
# idle), and "near" at 3 % slower against 5 % decided unknown on 3 starts a
# side. Now "near" is 12 % from zero (significant within a start of 4
# requests, so confirmation starts) and 12 % from the threshold (clearly
# within it on 2 or 3 starts a side), "slow" 26 % beyond it. The other
# checks are not what this test is about and are held loosely: the pp512 row
# by the same 24 %, TTFT p99 (here the slowest of 4 requests of ~56 ms, which
# one late wake-up moves by 10 %) by 50 %.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v git >/dev/null || skip "git is not installed"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"

step="git tree"
g() { git_t "$@"; }
git_one_commit "$T/vllm" || fail "git"
ok "vllm $(git -C "$T/vllm" rev-parse --short HEAD)"

step="matrix"
MXD_MATRIX=$T/matrix.json
jq -n --arg sim "$MX_BUILD_DIR/tests/sim/mxsim" --arg v "$T/vllm" --arg lock "$T/gpu.lock" '{
  matrix: 1, name: "l5-confirm",
  target: {profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: [$sim, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--disable-uvicorn-access-log"],
           env: {MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1", MXSIM_GPU_LOCK: $lock,
                 MXSIM_TOKEN_MS: "8", MXSIM_PREFILL_TPS: "10000",
                 MXSIM_SPEED_RULES: "MXSIM_SLOW=1:0.5;MXSIM_NEAR=1:0.88"},
           ready: {timeout: "30s", interval: "100ms"}},
  axes: [{name: "kernel", values: [
           {name: "marlin", env: {VLLM_MXFP4_MOE_KERNEL: "marlin"}},
           {name: "slow", env: {VLLM_MXFP4_MOE_KERNEL: "marlin", MXSIM_SLOW: "1"}},
           {name: "near", env: {VLLM_MXFP4_MOE_KERNEL: "marlin", MXSIM_NEAR: "1"}}]}],
  baseline: {kernel: "marlin"},
  features: [{name: "slow", priority: 1, set: {kernel: "slow"}, hypothesis: "slower", criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"},
             {name: "near", priority: 2, set: {kernel: "near"}, hypothesis: "the same", criteria: [{metric: "tg32_tps", min_gain_pct: 5}], status: "in-progress"}],
  levels: {run: ["L1", "L4", "L5"],
           L4: {pp: [512], tg: [32], depth: [0], runs: 4, warmup: 1},
           L5: {confirm_starts: 2, against: ["baseline"], perf_max_drop_pct: 24, ttft_p99_max_rise_pct: 50}},
  metadata: {sources: {vllm: $v}, timeout_ms: 5000}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
ok "checks"

step="start"
mxd_start
ok "daemon pid $MXD_PID"

l5_of() { level_of "$1" L5; }
verdict_is() {
        local got
        got=$(jq -r .verdict <<<"$2")
        [ "$got" = "$1" ] || fail "verdict $got, want $1: $(jq -c '{level, verdict, message}' <<<"$2")"
}

step="a 50 % regression is decided"
job=$(submit feature=slow)
mapfile -t runs < <(job_runs "$job")
[ "${#runs[@]}" -eq 2 ] || fail "runs: ${runs[*]}"
follow_job "$job"
b1=${runs[0]} s1=${runs[1]}
l5=$(l5_of "$s1")
verdict_is fail "$l5"
jqv "$l5" '.message | test("regression: tg32 .*-[45][0-9][.0-9]* %")' >/dev/null
jqv "$l5" '.metrics.decision == "regression" and (.metrics.confirm == null)' >/dev/null
[ "$(run_field "$s1" .run.result)" = fail ] || fail "r$s1 result $(run_field "$s1" .run.result)"
ok "$(jq -r .message <<<"$l5" | cut -c1-160)"

step="a new commit: 'near' (12 % slower) is undecided on 1 start a side and confirmed"
echo two >>"$T/vllm/README" && g -C "$T/vllm" commit -qam two || fail "git"
job=$(submit feature=near)
mapfile -t runs < <(job_runs "$job")
b2=${runs[0]} n2=${runs[1]}
# the first confirmation start of "near" runs: its first attempt ended, L5 undecided, the job not done
conf_running() {
        [ "$(run_field "$n2" '[.run.attempt_history[] | select(.confirm_of != null)] | length')" -ge 1 ]
}
wait_until "a confirmation start of r$n2" conf_running
l5=$(l5_of "$n2")
verdict_is skipped "$l5"
jqv "$l5" '.message | test("^undecided: confirming on fresh server starts of r'"$n2"' and r'"$b2"' [(]A/B, round 1 of at most 2[)]")' >/dev/null
jqv "$l5" ".metrics.confirm.reference_run == $b2" >/dev/null
b2_l5=$(level_of "$b2" L5 | jq -c '{verdict, message}')
[ -n "$b2_l5" ] || fail "the baseline r$b2 has no L5 of its own"
state=$(job_field "$job" '.job.state')
[ "$state" != done ] || fail "job $job is done while its confirmation starts run"
[ "$(run_field "$n2" .run.result)" = null ] || fail "r$n2 has a result while L5 waits: $(run_field "$n2" .run.result)"
ok "job $state, r$n2 waits: $(jq -r .message <<<"$l5" | cut -c1-120)"

step="a daemon restart in the middle"
mxd_stop TERM
[ "$(db_query "SELECT count(*) FROM confirmations c JOIN attempts a ON a.id = c.for_attempt JOIN runs r ON r.id = a.run_id WHERE r.id = $n2")" -ge 2 ] ||
        fail "the planned starts are not in the database"
[ "$(db_query "SELECT confirming IS NOT NULL FROM runs WHERE id = $n2")" = 1 ] || fail "r$n2 no longer waits"
mxd_start
ok "restarted: pid $MXD_PID"

step="decided after the confirmation starts"
follow_job "$job" || true
l5=$(l5_of "$n2")
verdict_is pass "$l5"
jqv "$l5" '.message | test("^after [12] confirmation rounds? [(]A/B, fresh server starts[)]: no regression against the baseline r'"$b2"' [(][23] vs [23] server starts; tg32: [23] vs [23] starts: ")' >/dev/null
jqv "$l5" '.metrics.confirmation.rounds >= 1 and (.metrics.confirmation.current_attempts | length) >= 1 and
        (.metrics.confirmation.reference_attempts | length) >= 1' >/dev/null
[ "$(run_field "$n2" .run.state)" = done ] || fail "r$n2 $(run_field "$n2" .run.state)"
[ "$(run_field "$n2" .run.result)" = pass ] || fail "r$n2 result $(run_field "$n2" .run.result)"
[ "$(job_field "$job" '.job.state')" = done ] || fail "job $job $(job_field "$job" '.job.state')"
# the run's result is its first attempt's; the confirmation starts are attempts of their own
[ "$(run_field "$n2" '.run.attempt_history[0].levels | map(.level) | join(",")')" = "L1,L4,L5" ] || fail "levels"
[ "$(run_field "$n2" '[.run.attempt_history[] | select(.confirm_of != null) | .levels | map(.level) | join(",")] | unique | join(" ")')" = "L1,L4" ] ||
        fail "a confirmation start ran other levels"
# interleaved: A (near), then B (the baseline), per round, in the order they started
order=$(db_query "SELECT group_concat(side, ' ') FROM (SELECT c.side FROM confirmations c JOIN attempts a ON a.id = c.attempt_id
        WHERE c.for_attempt = (SELECT id FROM attempts WHERE run_id = $n2 AND n = 1) ORDER BY a.started_at)")
case "$order" in
"current reference" | "current reference current reference") ;;
*) fail "confirmation starts ran in the order: $order" ;;
esac
mx show "r$n2" >"$T/show" || fail "show"
has "$T/show" "confirmation round"
has "$T/show" "server starts; tg32:"
# the baseline's own result stays its first attempt's
[ "$(run_field "$b2" .run.result)" = pass ] || fail "r$b2 result $(run_field "$b2" .run.result)"
# and so do its levels: its confirmation starts (confirm_of r$n2's attempt, L1/L4 only) are later attempts
[ "$(run_field "$b2" '.run.result_attempt')" = 1 ] || fail "r$b2's result attempt $(run_field "$b2" .run.result_attempt)"
[ "$(run_field "$b2" '[.run.attempt_history[1:][] | .confirm_of != null] | length > 0 and all')" = true ] ||
        fail "r$b2's later attempts are not all confirmation starts: $(run_field "$b2" '[.run.attempt_history[] | {n, confirm_of}]')"
[ "$(run_field "$b2" '.run.attempt_history[-1].levels | map(.level) | join(",")')" = L1,L4 ] ||
        fail "r$b2's latest attempt is not a confirmation start (L1,L4)"
[ "$(level_of "$b2" L5 | jq -c '{verdict, message}')" = "$b2_l5" ] ||
        fail "r$b2's L5 changed with the confirmation starts: $(level_of "$b2" L5 | jq -c '{verdict, message}'), was $b2_l5"
ok "$(jq -r .message <<<"$l5" | cut -c1-200); order $order"
