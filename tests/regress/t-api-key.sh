#!/usr/bin/env bash
# The profile's API key through the daemon (mxmatrix.json(5): api_key,
# api_key_env): mxsim started with --api-key (vLLM's middleware: 401 on /v1
# without "Authorization: Bearer KEY") and, to show the levels' exact token
# counts do not trip vllm#50690, as vLLM streams gpt-oss (--mxsim-harmony,
# every turn ending at token 12, well before L2's and L4's limits).
#  - api_key_env names a variable the run's env sets to the server's key:
#    L1-L4 pass, every chat request of L2/L4 exact despite the early turn end;
#  - the variable holds another key: L1 fails at once with the 401 and says the
#    server refused the profile's key; nothing hangs, the daemon lives on;
#  - the variable is set nowhere: the run fails before the server starts,
#    naming the variable;
#  - a matrix that declares no key: L1 fails with the 401 and says the server
#    wants a key that the profile does not declare.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

SIM=$MX_BUILD_DIR/tests/sim/mxsim
[ -x "$SIM" ] || skip "mxsim is not built"
unset MX_T_KEY

# matrix FILE KEYDECL: the matrix, with KEYDECL merged into the target ({} for none)
matrix() {
        jq -n --arg sim "$SIM" --arg lock "$T/gpu.lock" --argjson key "$2" '{
  matrix: 1, name: "api-key",
  target: ({profile: "vllm", model: "openai/gpt-oss-120b", served_model_name: "gpt-oss-120b",
           command: [$sim, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                     "--served-model-name", "{served_model_name}", "--api-key", "sekrit",
                     "--mxsim-harmony", "--mxsim-eos-at", "12", "--max-model-len", "8192"],
           env: {MXSIM_LOAD_S: "0.1", MXSIM_WATCHDOG_S: "1", MXSIM_SHUTDOWN_WAIT_S: "1", MXSIM_GPU_LOCK: $lock,
                 MXSIM_TOKEN_MS: "1", MXSIM_PREFILL_TPS: "100000"},
           ready: {timeout: "30s", interval: "100ms"}} + $key),
  axes: [{name: "key", values: [{name: "right", env: {MX_T_KEY: "sekrit"}},
                                {name: "wrong", env: {MX_T_KEY: "nope"}},
                                {name: "unset"}]}],
  baseline: {key: "right"},
  features: [{name: "wrong", priority: 1, set: {key: "wrong"}, hypothesis: "refused",
              criteria: [{metric: "tg32_tps", min_gain_pct: 0}], status: "in-progress"},
             {name: "unset", priority: 2, set: {key: "unset"}, hypothesis: "refused",
              criteria: [{metric: "tg32_tps", min_gain_pct: 0}], status: "in-progress"}],
  levels: {run: ["L1", "L2", "L3", "L4"],
           L2: {max_tokens: 48, after_traffic: 1},
           L3: {sequential: 2, concurrency: 2, max_tokens: 8, long_generation_tokens: 64,
                long_context_tokens: 1024, memory_every: 2},
           L4: {pp: [128], tg: [32], depth: [0], runs: 2, warmup: 1}}
}' >"$1" || fail "jq"
}

level() { level_of "$@"; } # RUN LEVEL: that level's entry of the result attempt

step="matrix with api_key_env"
MXD_MATRIX=$T/matrix.json
matrix "$MXD_MATRIX" '{"api_key_env": "MX_T_KEY"}'
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
ok "daemon pid $MXD_PID"

step="the right key: L1-L4 pass"
job=$(submit feature=wrong)
mapfile -t runs < <(job_runs "$job")
[ "${#runs[@]}" -eq 2 ] || fail "runs: ${runs[*]}"
MX_WAIT_S=300 follow_job "$job"
good=${runs[0]} bad=${runs[1]}
for L in L1 L2 L3 L4; do
        e=$(level "$good" "$L")
        [ "$(jq -r .verdict <<<"$e")" = pass ] || fail "r$good $L: $(jq -c '{verdict, message}' <<<"$e")"
done
# L4: every request exact (min_tokens kept gpt-oss from ending its turn at token 12), none lost to vllm#50690
l4=$(level "$good" L4)
jqv "$l4" '.metrics.failed == 0 and .metrics.failed_known_issue == 0' >/dev/null
ok "r$good: L1 L2 L3 L4 pass; L4 $(jq -r .metrics.measured <<<"$l4") requests, none failed"

step="a wrong key: L1 fails with the 401, named"
e=$(level "$bad" L1)
[ "$(jq -r .verdict <<<"$e")" = fail ] || fail "r$bad L1: $(jq -c '{verdict, message}' <<<"$e")"
jqv "$e" '.message | test("HTTP 401.*Unauthorized.*the server refused the profile.s API key")' >/dev/null
[ "$(run_field "$bad" '.run.state')" = done ] || fail "r$bad is $(run_field "$bad" '.run.state')"
mxd_answers || fail "the daemon does not answer"
ok "r$bad: $(jq -r .message <<<"$e" | cut -c1-160)"

step="the variable set nowhere: the run fails before the server starts"
job=$(submit feature=unset)
mapfile -t runs < <(job_runs "$job")
MX_WAIT_S=120 follow_job "$job"
unset_run=${runs[-1]}
[ "$(run_field "$unset_run" '.run.state')" = done ] || fail "r$unset_run is $(run_field "$unset_run" '.run.state')"
mx show "r$unset_run" >"$T/show" 2>&1 || true
has "$T/show" "api_key_env names MX_T_KEY, which is set neither in the run's env nor in the daemon's environment"
ok "r$unset_run: the variable named"
mxd_stop

step="a matrix without a key against a server that wants one"
matrix "$MXD_MATRIX" '{}'
expect_exit 0 mx matrix check "$MXD_MATRIX"
mxd_start
job=$(submit feature=wrong) # its baseline run first: no key either
mapfile -t runs < <(job_runs "$job")
MX_WAIT_S=120 follow_job "$job"
e=$(level "${runs[0]}" L1)
[ "$(jq -r .verdict <<<"$e")" = fail ] || fail "r${runs[0]} L1: $(jq -c '{verdict, message}' <<<"$e")"
jqv "$e" '.message | test("HTTP 401.*the server wants an API key, and the profile declares none")' >/dev/null
ok "r${runs[0]}: $(jq -r .message <<<"$e" | cut -c1-160)"
mxd_stop
