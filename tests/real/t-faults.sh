#!/usr/bin/env bash
# Real faults caught with the real llama-server (tests/real/README.md), each
# ending as documented, asserted through "mxmatrix show --json" with jq. One
# private daemon, tests/real/llama-server-cpu.json on the llama model, the
# server started through tests/real/segv-wrapper.sh (which only execs it unless
# a value sets MX_REAL_SEGV_AFTER). Each submission also runs its baseline,
# which must pass where the fault's run fails.
#  1. a wrong log gate: gate=wrong expects "flash_attn = disabled"; the real
#     log says auto / enabled -> L1.5 fail naming the pattern; with fa=off the
#     same expectation holds -> L1.5 pass;
#  2. a quantized V cache without flash attention (kv=q8_0 fa=off: -ctk q8_0
#     -ctv q8_0 -fa off): the server exits 1 before ready -> outcome crashed,
#     crash class quantized-v-needs-fa (the matrix's signature of the real
#     log line), result xfail (the matrix's known issue), L1 fail "exited
#     (exit-1) before it was ready";
#  3. a context too small for the asked prompt (ctx=1k: -c 1024; L3's
#     long-context prompt is 2048 tokens) -> L3 fail naming 2048 and 1024;
#  4. a crash mid-level: the server killed by SIGSEGV (segv-wrapper.sh, after
#     100 predicted tokens: in L3's sequential requests; the class comes from
#     the exit status, no log line names it) -> outcome crashed,
#     crash class signal-SEGV, result crashed, L3 fail.
# Exit 0 pass, 1 fail, 77 skip (no server here: see lib.sh).
set -u
source "$(dirname "$0")/lib.sh"

step="server and model"
real_server
real_model llama
ok "$REAL_SERVER, $REAL_MODEL"

step="matrix"
MXD_MATRIX=$T/matrix.json
real_matrix "$MXD_MATRIX"
jq --arg wrap "$MX_SOURCE_DIR/tests/real/segv-wrapper.sh" --arg srv "$REAL_SERVER" '
  .target.command[0] = $wrap | .target.env.MX_REAL_SERVER = $srv |
  .axes += [{name: "fault", values: [{name: "none"},
             {name: "segv", product: false, env: {MX_REAL_SEGV_AFTER: "100"}}]}] |
  .baseline.fault = "none"' "$MXD_MATRIX" >"$T/m2.json" && mv "$T/m2.json" "$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

# submit_wait ARGS...: submit, follow to the end; RUNS = the job's runs (the baseline first).
submit_wait() {
        local job
        job=$(submit "$@")
        mapfile -t RUNS < <(job_runs "$job")
        MX_WAIT_S=240 follow_job "$job"
        for r in "${RUNS[@]}"; do
                echo "     r$r $(run_field "$r" "$RESULT_ATTEMPT"' as $a | "\(.run.config_key): \($a.outcome) \(.run.result)"'): $(verdicts "$r")"
        done
}

# expect_run RUN OUTCOME RESULT [CRASH-CLASS]
expect_run() {
        local got want="$2 $3 ${4:-null}"
        got=$(run_field "$1" "$RESULT_ATTEMPT"' as $a | "\($a.outcome) \(.run.result) \($a.crash_class)"')
        if [ "$got" != "$want" ]; then
                echo "FAIL [$step]: r$1 outcome, result, crash class: $got, want $want" >&2
                REAL_ERRORS=$((REAL_ERRORS + 1))
        else
                ok "r$1 $got"
        fi
}

step="1. a wrong log gate"
submit_wait feature=gate=wrong levels=L1,L1.5
[ "${#RUNS[@]}" -eq 4 ] || fail "runs: ${RUNS[*]}"
base=${RUNS[0]}
expect_level "$base" L1.5 pass
for r in "${RUNS[@]:1}"; do
        fa=$(run_field "$r" '.run.config.fa // (.run.config_key | capture("fa=(?<v>[^,]+)").v)')
        if [ "$fa" = off ]; then
                expect_level "$r" L1.5 pass
        else
                expect_level "$r" L1.5 fail '[.metrics.log.must_see[] | select(.matched | not) | .any_of] ==
                        [["llama_context: flash_attn*= disabled"]] and
                        (.metrics.summary | contains("flash_attn*= disabled") and contains("not seen"))' \
                        "naming the expectation the real log contradicts"
                expect_level "$r" L1 pass
        fi
done

step="2. a quantized V cache without flash attention"
submit_wait feature=kv=q8_0 fa=off levels=L1
[ "${#RUNS[@]}" -eq 2 ] || fail "runs: ${RUNS[*]}"
expect_run "${RUNS[0]}" completed pass
expect_level "${RUNS[0]}" L1 pass
expect_run "${RUNS[1]}" crashed xfail quantized-v-needs-fa
expect_level "${RUNS[1]}" L1 fail '.message | test("exit-1.*before it was ready")' "the exit before ready"
mx logs "r${RUNS[1]}" >"$T/q8.log" 2>&1
has "$T/q8.log" "quantized V cache requires flash_attn to be enabled"

step="3. a context too small for the asked prompt"
submit_wait feature=ctx=1k fa=auto levels=L1,L3 L3.sequential=2 L3.concurrency=0 L3.long_generation_tokens=0
[ "${#RUNS[@]}" -eq 2 ] || fail "runs: ${RUNS[*]}"
expect_level "${RUNS[0]}" L3 pass
expect_run "${RUNS[1]}" completed fail
expect_level "${RUNS[1]}" L3 fail '.message | test("\\b2048\\b") and test("\\b1024\\b")' \
        "naming the asked 2048 tokens and the server's n_ctx 1024"

step="4. a crash mid-level (SIGSEGV)"
submit_wait feature=fault=segv fa=auto levels=L1,L3
[ "${#RUNS[@]}" -eq 2 ] || fail "runs: ${RUNS[*]}"
expect_run "${RUNS[0]}" completed pass
expect_run "${RUNS[1]}" crashed crashed signal-SEGV
expect_level "${RUNS[1]}" L1 pass
expect_level "${RUNS[1]}" L3 fail
mx logs "r${RUNS[1]}" >"$T/segv.log" 2>&1
has "$T/segv.log" "signal SEGV to the server"

real_done
