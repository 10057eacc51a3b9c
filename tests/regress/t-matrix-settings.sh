#!/usr/bin/env bash
# A matrix file's "settings" (run, level and ready time limits) travel in each
# run's snapshot and win over the daemon's --run-timeout and --level-timeout
# defaults (4h and 30m here): a run of the command matrix that sleeps ends by
# the matrix's 3 s run limit, and by a feature's 1 s level limit, which also
# overrides the matrix's run limit. Exit 0 pass, 1 fail.
set -u
source "$(dirname "$0")/lib.sh"

MXD_MATRIX=$T/matrix.json
jq '.settings = {"run_timeout": "3s"}
    | .features[0].settings = {"level_timeout": "1s", "run_timeout": "1h"}' \
        "$MX_FIXTURE_MATRIX" >"$MXD_MATRIX" || fail "cannot write the matrix"

step="plan"
out=$(mxj plan "$MXD_MATRIX" sleep)
[ "$(jqv "$out" '.settings.run_timeout_ms')" = 3000 ] || fail "plan settings: $out"
[ "$(jqv "$out" '.runs[0].settings.run_timeout_ms')" = 3000 ] || fail "snapshot settings: $out"
out=$(mxj plan "$MXD_MATRIX" feature=fast)
[ "$(jqv "$out" '.runs[0].settings.level_timeout_ms')" = 1000 ] || fail "feature settings: $out"
[ "$(jqv "$out" '.runs[0].settings.run_timeout_ms')" = 3600000 ] || fail "feature over matrix: $out"
ok "the plan carries the matrix's settings, the feature's over them"

step="start"
mxd_start SLEEP=1000 -- --run-timeout 4h --level-timeout 30m
ok "daemon pid $MXD_PID answers"

# The sleeping run of job J (mode=sleep), and how it ended.
sleep_run() {
        job_field "$1" '.runs[] | select(.config.mode == "sleep") | .id' | head -1
}
run_done() {
        run_in_state "$1" done
}

step="matrix run_timeout"
job=$(submit sleep --levels L1) || exit 1
r=$(sleep_run "$job")
[ -n "$r" ] || fail "no sleeping run in job $job"
wait_until "r$r to end by the matrix's 3 s run limit" run_done "$r"
[ "$(run_field "$r" '.run.outcome')" = timeout ] || fail "r$r outcome $(run_field "$r" '.run.outcome')"
ok "r$r ended as timeout within ${MX_WAIT_S}s (daemon default 4h)"

step="feature level_timeout"
job=$(submit feature=fast mode=sleep --levels L1) || exit 1
r=$(sleep_run "$job")
[ -n "$r" ] || fail "no sleeping run in job $job"
wait_until "r$r to end by the feature's 1 s level limit" run_done "$r"
expect_exit 0 mx logs "r$r"
has "$T/out" "exceeded the level time limit"
ok "r$r stopped by the feature's level limit (daemon default 30m)"

mxd_stop
echo "t-matrix-settings: ok"
