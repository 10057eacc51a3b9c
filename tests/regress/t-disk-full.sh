#!/usr/bin/env bash
# A full disk under a run (issue 7, item 3). The state directory is a small
# tmpfs in a private mount namespace; while r1 runs, the test fills it, so the
# daemon's next queue writes (r1's level verdict, its outcome) fail with
# ENOSPC. Then: the queue is paused with the reason in status, r1 is not left
# without an outcome, a cancel while the disk is full fails with a reason and
# exit 1 (never "cancelled 0" and 0); once space is back the retried writes
# land: r1's attempt ends infra-error and r1 is requeued (the machine cut it,
# issue 15), the pause and its reason are stored, the job acknowledged before
# keeps all its runs, the database is sound, and resume runs the rest, r1
# again included, so its job's L5 has its reference. Needs root (mount); exit 77 without. Exit 0 pass, 1 fail.
set -u
if [ -z "${MX_DISKFULL_NS:-}" ]; then
        [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a tmpfs in a mount namespace"; exit 77; }
        unshare -m true 2>/dev/null || { echo "SKIP: cannot create a mount namespace here"; exit 77; }
        MX_DISKFULL_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || skip "the sqlite3 CLI is not installed (tests/deps.sh)"

mkdir -p "$MXD_STATE"
mount -t tmpfs -o size=6m,mode=0700 mx-disk-full "$MXD_STATE" || skip "cannot mount a tmpfs"
# The state directory is a mount point: unmount it before lib.sh removes $T.
trap 'st=$?; sweep; umount -l "$MXD_STATE" 2>/dev/null; (exit $st); mx_cleanup' EXIT

# r1 (mode=sleep) waits for $T/gate, so the disk fills while it runs, before its next write.
MXD_MATRIX=$T/matrix.json
jq '.target.command = ["sh", "-c",
        "echo started; case $MODE in sleep) while [ ! -e \"$GATE\" ]; do sleep 0.05; done;; esac; echo done"]' \
        "$MX_FIXTURE_MATRIX" >"$MXD_MATRIX" || fail "jq"

step="start"
mxd_start GATE="$T/gate"
j=$(submit feature=fast mode=sleep)
mapfile -t runs < <(job_runs "$j")
[ "${#runs[@]}" = 2 ] || fail "job $j has ${#runs[@]} runs, want 2"
r1=${runs[0]} r2=${runs[1]}
wait_until "r$r1 to run" is_current "$r1"
ok "job $j acknowledged with runs r$r1 r$r2; r$r1 runs"

step="fill the disk"
dd if=/dev/zero of="$MXD_STATE/filler" bs=64k >/dev/null 2>&1
dd if=/dev/zero of="$MXD_STATE/filler2" bs=512 >/dev/null 2>&1
[ "$(df --output=avail -B1 "$MXD_STATE" | tail -1)" -lt 4096 ] || fail "the tmpfs is not full: $(df "$MXD_STATE")"
touch "$T/gate" # r1's command ends now; recording its verdict and outcome fails
paused_for_disk() {
        local out
        out=$(mxj status) || return 1
        [ "$(jq -r .paused <<<"$out")" = true ] && jq -r '.pause_reason // ""' <<<"$out" | grep -q "No space left"
}
wait_until "the queue to pause for the full disk" paused_for_disk
expect_exit 0 mx status
has "$T/out" "PAUSED"
has "$T/out" "No space left on device"
has "$MXD_LOG" "the queue is paused"
[ "$(run_field "$r1" .run.state)" = running ] || fail "r$r1 is $(run_field "$r1" .run.state) while its outcome cannot be written"
ok "the queue is paused with the reason (status, log); r$r1 waits for its outcome"

step="cancel while full"
expect_exit 1 mx cancel "r$r1"
has "$T/err" "cannot write its database"
lacks "$T/out" "cancelled 0"
ok "cancel r$r1 says why it cannot and exits 1"

step="space back"
rm -f "$MXD_STATE/filler" "$MXD_STATE/filler2"
run_done() { run_in_state "$1" done; }
run_queued() { run_in_state "$1" queued; }
wait_until "r$r1 to get its outcome once space is back (requeued)" run_queued "$r1"
[ "$(run_field "$r1" '.run.attempt_history[-1].outcome')" = infra-error ] ||
        fail "r$r1's attempt outcome $(run_field "$r1" '.run.attempt_history[-1].outcome')"
run_field "$r1" '.run.attempt_history[-1].message' | grep -q "requeued" ||
        fail "r$r1's message does not say it was requeued: $(run_field "$r1" '.run.attempt_history[-1].message')"
run_field "$r1" '.run.attempt_history[-1].message' | grep -q "No space left on device" ||
        fail "r$r1's message does not say why: $(run_field "$r1" '.run.attempt_history[-1].message')"
# The attempt's GPU and memory summary is one of its writes: refused with the rest, it lands with them.
n=$(run_field "$r1" '.run.attempt_history[-1].samples.run.samples // 0')
[ "$n" -gt 0 ] 2>/dev/null ||
        fail "r$r1's GPU and memory summary was lost to the full disk: $(run_field "$r1" '.run.attempt_history[-1]')"
[ "$(db_query "SELECT value FROM settings WHERE key = 'paused'")" = 1 ] || fail "the pause is not stored"
db_query "SELECT value FROM settings WHERE key = 'paused_reason'" | grep -q "No space left" ||
        fail "the pause's reason is not stored"
[ "$(run_field "$r2" .run.state)" = queued ] || fail "r$r2 is $(run_field "$r2" .run.state), want queued (paused)"
[ "$(db_query "SELECT count(*) FROM runs WHERE job_id = $j")" = 2 ] || fail "job $j lost runs"
[ "$(db_query 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
has "$MXD_LOG" "the database takes writes again"
ok "r$r1's attempt ended infra-error with the reason and r$r1 is queued again; paused and its reason stored; job $j whole"

step="resume"
expect_exit 0 mx resume
wait_until "r$r1 to run again and finish" run_done "$r1"
[ "$(run_field "$r1" .run.result)" = pass ] || fail "r$r1 result $(run_field "$r1" .run.result) after resume"
wait_until "r$r2 to finish" run_done "$r2"
[ "$(run_field "$r2" .run.result)" = pass ] || fail "r$r2 result $(run_field "$r2" .run.result)"
expect_exit 0 mx status
lacks "$T/out" "No space left"
ok "resume clears the reason and runs r$r1 again and r$r2 (pass)"

step="cancel after"
expect_exit 1 mx cancel "r$r1"
has "$T/err" "is not queued or running"
ok "cancel of the finished r$r1 says so and exits 1"

step="cancel of a queued run"
expect_exit 0 mx pause
j2=$(submit feature=fast mode=sleep)
mapfile -t runs < <(job_runs "$j2")
expect_exit 0 mx cancel "r${runs[1]}"
has "$T/out" "cancelled 1"
expect_exit 0 mx cancel "$j2"
has "$T/out" "cancelled 1"
[ "$(job_field "$j2" .job.state)" = cancelled ] || fail "job $j2 is $(job_field "$j2" .job.state)"
ok "cancel works again"
mxd_stop
[ "$MXD_STATUS" = 0 ] || fail "mxmatrixd exited $MXD_STATUS"
