#!/usr/bin/env bash
# Bounds a service needs (issue 7, item 7), through the real client:
# - the client waits at most --timeout / $MXMATRIX_TIMEOUT seconds for a
#   stopped (SIGSTOP) daemon, then exits 69 with a reason;
# - too many clients is limit-exceeded and exit 1, as mxmatrix(1) says;
# - a run that kills the daemon is requeued at most --max-requeues times, then
#   ends infra-error with the reason, and the rest of the queue runs;
# - a FIFO as a matrix is refused without blocking: matrix check and plan,
#   the daemon's --matrix at start and reload, submit --matrix;
# - a matrix file the requesting admin cannot read is not read for them, so no
#   line of it comes back (root only: a second uid through setpriv).
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

# bounded CMD...: CMD under a time limit well above what each step allows, so a hang fails the test.
bounded() {
        timeout 30 "$@"
}

step="client timeout"
mxd_start SLEEP=1000
expect_exit 2 mx --timeout soon status
has "$T/err" "--timeout 'soon'"
kill -STOP "$MXD_PID"
t0=$(now_ms)
expect_exit 69 bounded "$MX_BIN" --timeout 2 status
t1=$(now_ms)
has "$T/err" "did not answer within 2 s"
[ $((t1 - t0)) -lt 15000 ] || fail "--timeout 2 took $((t1 - t0)) ms"
MXMATRIX_TIMEOUT=1 expect_exit 69 bounded "$MX_BIN" list
has "$T/err" "did not answer within 1 s"
MXMATRIX_TIMEOUT=x expect_exit 2 bounded "$MX_BIN" list
has "$T/err" "MXMATRIX_TIMEOUT 'x'"
kill -CONT "$MXD_PID"
expect_exit 0 mx --timeout 0 status
ok "a stopped daemon: exit 69 after --timeout 2 ($((t1 - t0)) ms) and MXMATRIX_TIMEOUT=1; bad values exit 2"

step="limit-exceeded exits 1"
mxd_stop
echo '{"limits": {"connections": 2}}' >"$T/two.json"
mxd_start SLEEP=1000 -- --config "$T/two.json"
j=$(submit feature=fast mode=sleep)
# Two followers hold both connections. One may be refused itself while the submit's
# (or a check's) connection is still being closed: start it again until both hold.
f1="" f2=""
status_refused() {
        { [ -n "$f1" ] && kill -0 "$f1" 2>/dev/null; } || { "$MX_BIN" follow "$j" >/dev/null 2>&1 & f1=$!; }
        { [ -n "$f2" ] && kill -0 "$f2" 2>/dev/null; } || { "$MX_BIN" follow "$j" >/dev/null 2>&1 & f2=$!; }
        sleep 0.2
        kill -0 "$f1" 2>/dev/null && kill -0 "$f2" 2>/dev/null || return 1
        "$MX_BIN" status >"$T/out" 2>"$T/err"
        local st=$?
        [ "$st" = 0 ] && return 1
        [ "$st" = 1 ] || fail "status exited $st: $(cat "$T/err")"
        grep -q "limit-exceeded" "$T/err"
}
wait_until "a third client to be refused" status_refused
has "$T/err" "too many clients"
kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ok "the third client: limit-exceeded, exit 1"

step="requeue bound"
mxd_stop
rm -rf "$MXD_STATE"
# speed=slow kills the daemon that runs it (the command's parent); speed=fast passes.
MXD_MATRIX=$T/killer.json
jq '.target.command = ["sh", "-c", "case $SPEED in slow) kill -9 $PPID; sleep 100;; esac; exit 0"]' \
        "$MX_FIXTURE_MATRIX" >"$MXD_MATRIX" || fail "jq"
mxd_start -- --max-requeues 2
expect_exit 0 mx pause
j=$(submit feature=fast mode=ok)
mapfile -t runs < <(job_runs "$j")
r1=${runs[0]} r2=${runs[1]}
[ "$(run_field "$r1" .run.config.speed)" = slow ] || fail "r$r1 is not speed=slow"
daemon_gone() {
        local st
        st=$(ps -o stat= -p "$MXD_PID" 2>/dev/null)
        [ -z "$st" ] || [ "${st:0:1}" = Z ]
}
# The daemon may die before it answers: resume's own exit status says nothing here.
mx resume >/dev/null 2>&1
for i in 1 2 3; do
        wait_until "r$r1 (attempt $i) to kill the daemon" daemon_gone
        wait "$MXD_PID" 2>/dev/null
        mxd_spawn -- --max-requeues 2
done
mxd_wait_ready
run_done() { run_in_state "$1" done; }
wait_until "r$r1 to end" run_done "$r1"
[ "$(run_field "$r1" .run.result)" = infra-error ] || fail "r$r1 result $(run_field "$r1" .run.result)"
[ "$(run_field "$r1" .run.attempts)" = 3 ] || fail "r$r1 made $(run_field "$r1" .run.attempts) attempts, want 3"
run_field "$r1" '.run.attempt_history[-1].message' | grep -q "interrupted 3 times.*max_requeues 2" ||
        fail "r$r1's message: $(run_field "$r1" '.run.attempt_history[-1].message')"
[ "$(run_field "$r1" '.run.attempt_history[0].outcome')" = interrupted ] || fail "attempt 1 not interrupted"
wait_until "r$r2 to end" run_done "$r2"
[ "$(run_field "$r2" .run.result)" = pass ] || fail "r$r2 result $(run_field "$r2" .run.result)"
has "$MXD_LOG" "not requeued again (max_requeues 2)"
ok "r$r1 killed the daemon 3 times: requeued twice, then infra-error with the reason; r$r2 passed"

step="FIFO matrix"
mxd_stop
mkfifo "$T/fifo.json"
expect_exit 3 bounded "$MX_BIN" matrix check "$T/fifo.json"
has "$T/err" "not a regular file"
expect_exit 3 bounded "$MX_BIN" plan "$T/fifo.json" feature=fast
has "$T/err" "not a regular file"
MXD_MATRIX=$T/fifo.json
mxd_start
expect_exit 0 bounded "$MX_BIN" status
has "$T/out" "not a regular file"
expect_exit 3 bounded "$MX_BIN" reload
has "$T/err" "not a regular file"
expect_exit 3 bounded "$MX_BIN" submit feature=fast --matrix "$T/fifo.json"
has "$T/err" "not a regular file"
expect_exit 0 bounded "$MX_BIN" submit feature=fast mode=ok --matrix "$MX_FIXTURE_MATRIX"
ok "a FIFO is refused at once by matrix check, plan, the daemon's start, reload and submit --matrix"

step="unreadable matrix"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! getent group nogroup >/dev/null; then
        echo "skip [$step]: needs root, setpriv and group nogroup"
        exit 0
fi
mxd_stop
MXD_MATRIX=$MX_FIXTURE_MATRIX
mxd_start -- --socket-mode 0666 --admin-group nogroup
mkdir -m 0755 "$T/bin"
cp "$MX_BIN" "$T/bin/mxmatrix"
printf 'SECRET-LINE-1 root:x:0:0\n{"matrix": 1, "SECRET-KEY-2": true}\n' >"$T/secret.json"
chmod 0600 "$T/secret.json"
as_admin=(setpriv --reuid=65534 --regid=65534 --clear-groups "$T/bin/mxmatrix")
expect_exit 4 bounded "${as_admin[@]}" submit feature=fast --matrix "$T/secret.json"
has "$T/err" "uid 65534 cannot read this file"
lacks "$T/err" "SECRET"
lacks "$T/out" "SECRET"
# What the admin can read is read as before, errors and all.
chmod 0644 "$T/secret.json"
expect_exit 3 bounded "${as_admin[@]}" submit feature=fast --matrix "$T/secret.json"
has "$T/err" "near 'SECRET"
ok "a matrix the admin cannot read is refused without a word of it; a readable one shows its error"
mxd_stop
[ "$MXD_STATUS" = 0 ] || fail "mxmatrixd exited $MXD_STATUS"
