#!/usr/bin/env bash
# Nothing outlives a run, one daemon per state directory, the health gate.
#
# A run's command leaves a descendant that cleared its environment and left
# the session (env -i setsid sleep, the way an escaped VLLM::EngineCore can
# look), directly or through a double fork, so that neither the run tag nor
# the session finds it. After the run, the rest of the sweep, the daemon's
# SIGTERM and a restart after kill -9, nothing of it may be alive: with cgroups
# (the run's cgroup, cgroup.kill, recorded for recovery) and without them
# (MXMATRIXD_CGROUP=off: the daemon's adopted children). A second daemon on the
# same state directory exits 75 without touching the first one's run. A
# failing health command pauses the queue with the reason and consumes no run.
# The cgroup part needs a writable cgroup2 file system (root here, CI): without
# one the rest runs and the test exits 77 saying so.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (tests/deps.sh)"
command -v setsid >/dev/null || skip "setsid is not installed"

# The escapees carry neither the test's tag nor the run's: kill them (and remove
# cgroups a failed step left) by what the runs wrote down.
kill_escapees() {
        local s=$? f pid cg d
        sweep
        for f in "$T"/state*/runs/*/*/escaped.pid; do
                [ -s "$f" ] && pid=$(cat "$f") && kill -9 "$pid" 2>/dev/null
        done
        for cg in $(sed -n "s/.*runs' cgroups go below \([^ ]*\).*/\1/p" "$MXD_LOG" 2>/dev/null | sort -u); do
                [ -d "$cg" ] || continue
                for d in "$cg"/*/; do
                        [ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
                done
                sleep 0.2
                find "$cg" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
                rmdir "$cg" 2>/dev/null
        done
        return $s
}
trap 'kill_escapees; mx_cleanup' EXIT

cat >"$T/escape.sh" <<'EOF'
# Runs in the run directory. Leaves a descendant with an empty environment in a
# session of its own (hold2, double: orphaned by a double fork), writes its pid to
# escaped.pid; hold and hold2 wait for $GO first.
case $MODE in
envi | hold) env -i setsid sh -c 'echo $$ >escaped.pid.tmp; mv escaped.pid.tmp escaped.pid; exec sleep 1000' \
        </dev/null >/dev/null 2>&1 & ;;
double | hold2) sh -c '(env -i setsid sh -c "echo \$\$ >escaped.pid.tmp; mv escaped.pid.tmp escaped.pid; exec sleep 1000" \
        </dev/null >/dev/null 2>&1 &)' ;;
esac
while [ ! -s escaped.pid ]; do sleep 0.05; done
if [ "$MODE" = hold ] || [ "$MODE" = hold2 ]; then
        while [ ! -e "$GO" ]; do sleep 0.05; done
fi
exit 0
EOF

# write_matrix FILE [HEALTH-JSON]: the test's matrix, with an optional health section.
write_matrix() {
        cat >"$1" <<EOF
{ "matrix": 1, "name": "contain",
  "target": { "profile": "command", "command": ["sh", "$T/escape.sh"], "env": { "GO": "$T/go" } },
  "axes": [ { "name": "mode", "values": [
      { "name": "envi", "env": { "MODE": "envi" } },
      { "name": "double", "env": { "MODE": "double" } },
      { "name": "hold", "env": { "MODE": "hold" } },
      { "name": "hold2", "env": { "MODE": "hold2" } } ] } ],
  "baseline": { "mode": "envi" },
  "features": [
    { "name": "double", "priority": 1, "set": { "mode": "double" }, "hypothesis": "h",
      "criteria": [{ "metric": "tg32_tps", "min_gain_pct": 10 }], "status": "in-progress" },
    { "name": "hold", "priority": 1, "set": { "mode": "hold" }, "hypothesis": "h",
      "criteria": [{ "metric": "tg32_tps", "min_gain_pct": 10 }], "status": "in-progress" },
    { "name": "hold2", "priority": 1, "set": { "mode": "hold2" }, "hypothesis": "h",
      "criteria": [{ "metric": "tg32_tps", "min_gain_pct": 10 }], "status": "in-progress" } ]
  ${2:+, \"health\": $2} }
EOF
}
write_matrix "$T/matrix.json"
export MXD_MATRIX=$T/matrix.json

escapee() { # RUN ATTEMPT: the pid the run's escapee wrote, or nothing
        cat "$MXD_STATE/runs/$1/$2/escaped.pid" 2>/dev/null
}
alive() { [ -n "$1" ] && [ -d "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
gone() { ! alive "$1"; }
has_escapee() { [ -n "$(escapee "$1" "$2")" ]; }
job_done() { [ "$(job_field "$1" '.job.state')" = done ]; }
attempt_cgroup() { db_query "SELECT ifnull(cgroup, 'NULL') FROM attempts a JOIN runs r ON r.id = a.run_id
                            WHERE r.id = $1 AND a.n = $2"; }

# check_sweep MODE-OF-CGROUPS: a job of two runs (env -i setsid, and a double fork) passes and leaves nothing.
check_sweep() {
        local j r pid
        j=$(submit feature=double)
        wait_until "job $j to finish" job_done "$j"
        for r in $(job_runs "$j"); do
                [ "$(run_field "$r" '.run.result')" = pass ] || fail "r$r: result $(run_field "$r" '.run.result')"
                pid=$(escapee "$r" 1)
                [ -n "$pid" ] || fail "r$r wrote no escapee pid"
                wait_until "r$r's escapee $pid to be gone" gone "$pid"
                if [ "$1" = cgroup ]; then
                        cg=$(attempt_cgroup "$r" 1)
                        [ "$cg" != NULL ] || fail "r$r: no cgroup recorded"
                        [ "${cg##*/}" = "$(run_tag "$r")" ] || fail "r$r: cgroup $cg is not named by its tag"
                        [ ! -e "$cg" ] || fail "r$r: its cgroup $cg was not removed"
                else
                        [ "$(attempt_cgroup "$r" 1)" = NULL ] || fail "r$r has a cgroup with cgroups off"
                fi
        done
        # The daemon is the escapees' reaper once their parents are gone: none of its children is left.
        [ -z "$(ps -o pid= --ppid "$MXD_PID")" ] || fail "the daemon still has children: $(ps -f --ppid "$MXD_PID")"
}

step="cgroups available"
MXD_STATE=$T/state-cg
mxd_start
if grep -q "runs' cgroups go below" "$MXD_LOG"; then
        cgroups=yes
        base=$(sed -n "s/.*runs' cgroups go below \([^ ]*\).*/\1/p" "$MXD_LOG" | tail -1)
        [ -d "$base" ] || fail "base $base does not exist"
        ok "runs' cgroups go below $base"
else
        cgroups=no
        echo "no writable cgroup2 here: $(grep -o 'runs get no cgroup.*' "$MXD_LOG" | head -1)"
fi

if [ "$cgroups" = yes ]; then
        step="cgroup: env -i setsid and a double fork"
        check_sweep cgroup
        ok "both escapees killed at the end of their runs, the runs' cgroups removed"

        step="cgroup: a second daemon on the same state directory"
        rm -f "$T/go"
        j=$(submit feature=hold)
        wait_until "the hold run's escapee" has_escapee 4 1
        pid=$(escapee 4 1)
        grep -q "/$(run_tag 4)\$" "/proc/$pid/cgroup" || fail "the escapee is not in its run's cgroup: $(cat "/proc/$pid/cgroup")"
        first=$MXD_PID
        MXMATRIX_SOCKET=$T/second.sock expect_exit 75 "$MXD_BIN" --foreground --socket "$T/second.sock" \
                --state-dir "$MXD_STATE" --matrix "$MXD_MATRIX"
        has "$T/err" "another mxmatrixd (pid $first) is using the state directory $MXD_STATE"
        [ ! -e "$T/second.sock" ] || fail "the second daemon created its socket"
        alive "$pid" || fail "the second daemon killed the first one's run"
        is_current 4 || fail "r4 is no longer running"
        [ "$(db_query "SELECT count(*) FROM attempts WHERE finished_at IS NOT NULL AND outcome = 'interrupted'")" = 0 ] ||
                fail "the second daemon recorded an interruption"
        ok "exit 75 naming the directory and pid $first; the first daemon's run goes on untouched"

        step="cgroup: SIGTERM stops the running server and its escapee"
        mxd_stop TERM
        [ "$MXD_STATUS" = 0 ] || fail "the daemon exited $MXD_STATUS"
        gone "$pid" || fail "the escapee $pid outlived the daemon's SIGTERM"
        [ ! -e "$base" ] || fail "the daemon's cgroup tree $base is still there: $(find "$base" -type d)"
        ok "after SIGTERM nothing of the run is alive and the cgroup tree is gone"

        step="cgroup: restart after kill -9 kills what the dead daemon left in the cgroup"
        touch "$T/go" # the interrupted r4 passes now
        mxd_start
        wait_until "job $j to finish" job_done "$j"
        rm -f "$T/go"
        # The escapee of a double fork: neither tagged nor a descendant of anything tagged once the daemon is gone.
        j=$(submit feature=hold2)
        wait_until "the hold2 run's escapee" has_escapee 6 1
        pid=$(escapee 6 1)
        cg=$(attempt_cgroup 6 1)
        mxd_stop KILL
        alive "$pid" || fail "the escapee died with the daemon (nothing to recover)"
        touch "$T/go"
        mxd_start
        has "$MXD_LOG" "killed the processes the previous daemon left in its cgroup $cg"
        gone "$pid" || fail "the escapee $pid survived the restart's recovery"
        [ ! -e "$cg" ] || fail "the interrupted attempt's cgroup $cg was not removed"
        wait_until "job $j to finish" job_done "$j"
        [ "$(run_field 6 '.run.result')" = pass ] || fail "r6: $(run_field 6 '.run.result')"
        ok "recovery killed escapee $pid through the recorded cgroup; the run then passed"
        mxd_stop TERM
fi

step="no cgroups: env -i setsid and a double fork"
MXD_STATE=$T/state-nocg
rm -f "$T/go"
mxd_start MXMATRIXD_CGROUP=off
has "$MXD_LOG" "cgroups are disabled (MXMATRIXD_CGROUP=off)"
check_sweep none
ok "without cgroups both escapees are killed as the daemon's adopted children"

step="no cgroups: SIGTERM stops the running server and its escapee"
j=$(submit feature=hold)
wait_until "the hold run's escapee" has_escapee 4 1
pid=$(escapee 4 1)
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "the daemon exited $MXD_STATUS"
gone "$pid" || fail "the escapee $pid outlived the daemon's SIGTERM"
ok "after SIGTERM nothing of the run is alive"

step="health gate: a failing health command pauses the queue and consumes nothing"
MXD_STATE=$T/state-health
write_matrix "$T/matrix.json" '{ "command": ["sh", "-c", "echo the GPU fell off the bus; exit 3"] }'
touch "$T/go"
mxd_start
j=$(submit feature=double)
queue_paused() { [ "$(jq -r .paused <<<"$(mxj status)")" = true ]; }
wait_until "the queue to pause" queue_paused
st=$(mxj status)
reason=$(jqv "$st" .pause_reason)
[[ $reason == *"the health command exited with status 3"* ]] || fail "paused_reason: $reason"
has "$MXD_STATE/health.log" "the GPU fell off the bus"
has "$MXD_LOG" "the queue is paused until someone checks the machine"
expect_exit 0 "$MX_BIN" status
has "$T/out" "PAUSED (mxmatrix resume): health gate before the next run: the health command exited with status 3"
[ "$(db_query "SELECT count(*) FROM attempts")" = 0 ] || fail "a run was started despite the failed gate"
[ "$(db_query "SELECT count(*) FROM runs WHERE state = 'queued'")" = 2 ] || fail "runs were consumed"
ok "paused with the reason in status and the log; both runs still queued, no attempt made"

step="health gate: a health command over its time limit"
write_matrix "$T/matrix.json" '{ "command": ["sleep", "60"], "timeout_ms": 300 }'
kill -HUP "$MXD_PID"
wait_until "the reload" grep -q "reloaded" "$MXD_LOG"
mx resume >/dev/null || fail "resume"
wait_until "the queue to pause again" queue_paused
reason=$(jqv "$(mxj status)" .pause_reason)
[[ $reason == *"did not finish within 300 ms"* ]] || fail "paused_reason: $reason"
[ "$(db_query "SELECT count(*) FROM attempts")" = 0 ] || fail "a run was started despite the failed gate"
ok "the slow health command was killed and the queue paused"

step="health gate: a passing health command lets the runs go"
write_matrix "$T/matrix.json" '{ "command": ["true"] }'
kill -HUP "$MXD_PID"
sleep 0.2
wait_until "the second reload" [ "$(grep -c reloaded "$MXD_LOG")" -ge 2 ]
mx resume >/dev/null || fail "resume"
wait_until "job $j to finish" job_done "$j"
[ "$(jq -r '.pause_reason // "none"' <<<"$(mxj status)")" = none ] || fail "a reason is left after resume"
[ "$(db_query "SELECT count(*) FROM attempts")" = 2 ] || fail "not one attempt per run"
ok "both runs ran once the health command passed"
mxd_stop TERM

[ "$cgroups" = yes ] || skip "the no-cgroup and health parts passed; no writable cgroup2 file system for the cgroup part"
