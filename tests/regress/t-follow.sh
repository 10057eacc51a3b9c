#!/usr/bin/env bash
# A person's view of a running sweep: "mxmatrix follow" prints readable lines
# (run, configuration, level verdicts with their messages, crash classes), on
# a terminal a progress line redrawn in place (runs done / total, passes,
# failures, elapsed, ETA), raw JSON items only with --json (the daemon's
# "progress" items among them); "status" shows the same summary for the job
# under way. Against a private daemon on the command matrix. Exit 0 pass, 1
# fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

step="start"
# mode=sleep runs for 4 s: long enough to see status while it runs, after four short runs.
mxd_start SLEEP=4
expect_exit 0 mx pause
j=$(submit feature=fast --strategy full)
[ "$(job_field "$j" '.runs | length')" = 5 ] || fail "want 5 runs (ok x2, fail, crash, sleep)"
rsleep=$(job_field "$j" '.runs[] | select(.config_key == "mode=sleep,speed=fast") | .id')
ok "job $j: 5 runs, the last (r$rsleep) sleeps"

step="follow: plain, --json and on a terminal"
timeout "$MX_WAIT_S" "$MX_BIN" follow "$j" >"$T/plain" 2>&1 &
plain_pid=$!
timeout "$MX_WAIT_S" "$MX_BIN" --json follow "$j" >"$T/json" 2>&1 &
json_pid=$!
tty_pid=""
if command -v script >/dev/null; then
        # script(1) gives follow a pseudo-terminal; what it drew lands in $T/tty.
        timeout "$MX_WAIT_S" script -qfec "$(printf %q "$MX_BIN") follow $j" "$T/tty" >/dev/null 2>&1 &
        tty_pid=$!
fi
expect_exit 0 mx resume

step="status while r$rsleep runs"
wait_until "r$rsleep to run" is_current "$rsleep"
expect_exit 0 mx status
has "$T/out" "job $j:  4/5 runs: 2 pass, 1 fail, 1 crashed, "
has "$T/out" " elapsed, ETA "
st=$(mxj status)
[ "$(jq -r ".queue[] | select(.id == $j) | .progress.timed_runs" <<<"$st")" = 4 ] ||
        fail "status --json: want progress.timed_runs 4: $st"
jq -e ".queue[] | select(.id == $j) | .progress.running_since > .progress.started_at" >/dev/null <<<"$st" ||
        fail "status --json: running_since after started_at: $st"
ok "status: 4/5 runs with elapsed and ETA; --json has the timing"

step="follow's lines"
wait "$plain_pid"
[ $? = 1 ] || fail "follow $j: want exit 1 (a run failed)"
f=$T/plain
has "$f" "job accepted: 5 runs of feature fast"
has "$f" "mode=ok,speed=slow  started"
has "$f" "mode=fail,speed=fast  L1 fail: exit status 3"
has "$f" "mode=crash,speed=fast  finished: crashed, crash class signal"
has "$f" "r$rsleep mode=sleep,speed=fast  finished: pass"
has "$f" "job $j done: 5/5 runs: 3 pass, 1 fail, 1 crashed, "
has "$f" " elapsed; 3 of 5 runs as expected (pass or xfail)"
lacks "$f" " passed"
has "$f" "job $j done: "
# Not a terminal: no progress line, no escape sequences, no JSON.
lacks "$f" "[job $j:"
lacks "$f" $'\e'
lacks "$f" '{"'
[ "$(grep -c '  finished: ' "$f")" = 5 ] || fail "want 5 'finished' lines"
ok "readable lines, no progress line when stdout is not a terminal"

step="follow --json"
wait "$json_pid"
jq -e . "$T/json" >/dev/null || fail "follow --json printed something that is not JSON"
jq -se '[.[] | select(.kind == "level-finished")] | length == 10' "$T/json" >/dev/null ||
        fail "want 10 level-finished items"
jq -se '[.[] | select(.kind == "progress" and (.job.counts.total == 5) and (.job.progress | has("timed_us")))]
        | length >= 1' "$T/json" >/dev/null || fail "want progress items with the job's counts and timing"
jq -se '[.[] | select(.kind == "run-started")] | all(.config_key | test("^mode="))' "$T/json" >/dev/null ||
        fail "run events carry their configuration"
ok "JSON lines: events with config_key, progress items"

step="follow on a terminal"
if [ -n "$tty_pid" ]; then
        wait "$tty_pid"
        t=$T/tty
        has "$t" $'\r'"[job $j: 0/5 runs, "
        has "$t" "[job $j: 4/5 runs: 2 pass, 1 fail, 1 crashed, "
        has "$t" $'\e[K'
        # Redrawn while r$rsleep was quiet for 4 s: the idle tick draws it again with a new elapsed time.
        n=$(grep -ao "\[job $j: 4/5 runs[^]]*\]" "$t" | sort -u | wc -l)
        [ "$n" -ge 3 ] || fail "the progress line was redrawn $n times while the sleep ran, want >= 3"
        # The final line replaces the progress line: erased first.
        has "$t" $'\r\e[K'"job $j done: "
        ok "progress line drawn, redrawn $n times during the quiet run, erased at the end"
else
        ok "skipped: no script(1)"
fi

step="stop"
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "daemon exited $MXD_STATUS"
ok "clean stop"
