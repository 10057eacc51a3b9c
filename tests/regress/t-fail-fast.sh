#!/usr/bin/env bash
# Fail-fast order (issue 19 item 3) through a private daemon and the real
# client, against mxsim: a sweep of five configurations whose last one never
# boots (mxsim's crash-at-start fault, by MXSIM_FAULT_RULES).
#  - plan and submit --dry-run show the order: fail-fast by default for more
#    than 3 runs, its two passes (L1, then L1 and L4);
#  - the fail-fast job reports the broken configuration before any L4
#    begins (the first pass), and runs L4 only for the four that booted;
#  - the same sweep with --order fifo reaches the broken one after four L4s
#    (so the check above can fail);
#  - cache_key_axes puts runs sharing a key back to back in the plan.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"

step="matrix"
MXD_MATRIX=$T/matrix.json
jq -n --arg sim "$MX_BUILD_DIR/tests/sim/mxsim" --arg lock "$T/gpu.lock" '{
  matrix: 1, name: "fail-fast",
  target: {profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: [$sim, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--disable-uvicorn-access-log"],
           env: {MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1", MXSIM_GPU_LOCK: $lock,
                 MXSIM_TOKEN_MS: "2", MXSIM_PREFILL_TPS: "10000",
                 MXSIM_FAULT_RULES: "MXSIM_BROKEN=1:crash-at-start"},
           ready: {timeout: "30s", interval: "100ms"}},
  axes: [{name: "kernel", values: [
           {name: "marlin", env: {VLLM_MXFP4_MOE_KERNEL: "marlin"}},
           {name: "cutlass", env: {VLLM_MXFP4_MOE_KERNEL: "gemm"}},
           {name: "triton", env: {VLLM_MXFP4_MOE_KERNEL: "marlin", X_VARIANT: "triton"}},
           {name: "flashinfer", env: {VLLM_MXFP4_MOE_KERNEL: "marlin", X_VARIANT: "flashinfer"}},
           {name: "broken", env: {VLLM_MXFP4_MOE_KERNEL: "marlin", MXSIM_BROKEN: "1"}}]},
         {name: "mode", values: [{name: "plain"}]}],
  baseline: {kernel: "marlin", mode: "plain"},
  levels: {run: ["L1", "L4"], L4: {pp: [256], tg: [16], depth: [0], runs: 2, warmup: 0}}
}' >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
ok "checks"

step="plan shows the order"
expect_exit 0 mx plan "$MXD_MATRIX" plain --strategy full
has "$T/out" "Order: fail-fast (the default for more than 3 runs: this job has 5)"
has "$T/out" "pass 1: L1"
has "$T/out" "pass 2: L1, L4"
expect_exit 0 mx plan "$MXD_MATRIX" plain --strategy full --order fifo
has "$T/out" "Order: fifo (asked with --order)"
ok "fail-fast by default, fifo when asked"

step="start"
mxd_start
ok "daemon pid $MXD_PID"

step="submit --dry-run says the order"
out=$(mxj submit plain --strategy full --dry-run) || fail "dry-run"
[ "$(jq -r .order.order <<<"$out")" = fail-fast ] || fail "order: $out"
[ "$(jq -c '.order.passes | map(.levels)' <<<"$out")" = '[["L1"],["L1","L4"]]' ] || fail "passes: $out"
expect_exit 0 mx submit plain --strategy full --dry-run
has "$T/out" "order: fail-fast (the default for more than 3 runs: this job has 5): every run's L1/L1.5 first"
ok "$(jq -r .order.why <<<"$out")"

# the line numbers in $T/follow of the first line matching each pattern
first_line() { grep -n -m1 -e "$1" "$T/follow" | cut -d: -f1; }

step="fail-fast: the broken configuration is reported in the first pass"
job=$(submit plain --strategy full)
follow_job "$job"
cat "$T/follow"
broken=$(first_line "kernel=broken,mode=plain.*finished: crashed")
l4=$(first_line "L4 pass")
[ -n "$broken" ] || fail "the broken run's end is not in follow's output"
[ -n "$l4" ] || fail "no L4 in follow's output"
[ "$broken" -lt "$l4" ] || fail "the broken run ended at line $broken, after the first L4 at line $l4"
[ "$(grep -c "L4 pass" "$T/follow")" -eq 4 ] || fail "L4 did not run for the four that boot"
out=$(mxj show "$job") || fail "show"
[ "$(jq '[.runs[] | select(.result == "pass")] | length' <<<"$out")" -eq 4 ] || fail "passes: $out"
[ "$(jq -r '.runs[] | select(.config_key == "kernel=broken,mode=plain") | .result' <<<"$out")" = crashed ] ||
        fail "broken: $out"
# the passing runs' result is their second pass: L1 and L4 on one server start
rid=$(jq -r '.runs[] | select(.config_key == "kernel=cutlass,mode=plain") | .id' <<<"$out")
[ "$(run_field "$rid" '.run.attempts')" = 2 ] || fail "r$rid attempts: $(mxj show "r$rid")"
[ "$(run_field "$rid" '[.run.levels[].level] | join(",")')" = L1,L4 ] || fail "r$rid levels: $(mxj show "r$rid")"
ok "line $broken, first L4 at line $l4"

step="fifo: the broken one comes after four L4s"
job=$(submit plain --strategy full --order fifo)
follow_job "$job"
broken=$(first_line "kernel=broken,mode=plain.*finished: crashed")
l4=$(first_line "L4 pass")
[ -n "$broken" ] && [ -n "$l4" ] && [ "$broken" -gt "$l4" ] || fail "fifo: broken at '$broken', L4 at '$l4'"
rid=$(jq -r '.runs[] | select(.config_key == "kernel=cutlass,mode=plain") | .id' <<<"$(mxj show "$job")")
[ "$(run_field "$rid" '.run.attempts')" = 1 ] || fail "fifo r$rid: more than one start"
ok "line $broken, first L4 at line $l4"

step="cache_key_axes: runs sharing a key back to back"
jq '.axes += [{name: "activation", values: [{name: "bf16"}, {name: "fp8", env: {A: "fp8"}}]}]
    | .baseline.activation = "bf16" | .settings = {cache_key_axes: ["activation"], order: "fifo"}' "$MXD_MATRIX" >"$T/cache.json"
# full enumerates the kernels for each activation; without the key they would alternate
jq '.settings.cache_key_axes = []' "$T/cache.json" >"$T/nokey.json"
expect_exit 0 mx --json plan "$T/nokey.json" plain --strategy full
keys=$(jq -r '[.runs[].config.kernel] | join(" ")' "$T/out")
[ "$keys" = "marlin cutlass triton flashinfer broken marlin cutlass triton flashinfer broken" ] ||
        fail "order without cache_key_axes: $keys"
jq '.settings.cache_key_axes = ["kernel"]' "$T/cache.json" >"$T/key.json"
expect_exit 0 mx --json plan "$T/key.json" plain --strategy full
keys=$(jq -r '[.runs[].config.kernel] | join(" ")' "$T/out")
[ "$keys" = "marlin marlin cutlass cutlass triton triton flashinfer flashinfer broken broken" ] ||
        fail "kernel order: $keys"
has "$T/cache.json" '"fifo"'
expect_exit 0 mx plan "$T/cache.json" plain --strategy full
has "$T/out" "Order: fifo (the matrix's settings.order)"
jq '.settings = {cache_key_axes: ["nope"]}' "$MXD_MATRIX" >"$T/bad.json"
expect_exit 3 mx matrix check "$T/bad.json"
has "$T/err" "cache_key_axes: nope is not an axis of the matrix"
ok "$keys"
