#!/usr/bin/env bash
# Who may do what, through the real client run as other uids (setpriv): with
# --socket-mode 0666 anyone reads (status, list, show, logs) and submits and
# cancels their own job, but may not cancel or retry someone else's, pause,
# resume, reload or name a matrix file (exit 4); a member of --admin-group
# may. The socket's own mode and --socket-group keep others out (exit 4).
# The admin group is made up: a copy of /etc/group with it is bind-mounted
# in a private mount namespace, so the host's is never changed. Root only;
# exit 0 pass, 1 fail, 77 skip.
set -u

if [ -z "${MX_PERM_NS:-}" ]; then
        [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to act as other uids"; exit 77; }
        command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is not installed"; exit 77; }
        unshare -m --propagation private true 2>/dev/null ||
                { echo "SKIP: cannot create a mount namespace here"; exit 77; }
        MX_PERM_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"

nobody=65534
admin_uid=64124
admin_gid=64123
admin_group=mxregress-admin

step="a made-up admin group"
getent group "$admin_group" >/dev/null && skip "group $admin_group exists on this host"
cp /etc/group "$T/group"
echo "$admin_group:x:$admin_gid:" >>"$T/group"
chmod 0644 "$T/group"
mount --bind "$T/group" /etc/group || fail "cannot bind-mount a group file"
[ "$(getent group "$admin_group" | cut -d: -f3)" = "$admin_gid" ] || fail "getent does not see $admin_group"
# Other uids run a copy of the client below $T (0755), whatever the permissions of the build tree.
mkdir -m 0755 "$T/bin"
cp "$MX_BIN" "$T/bin/mxmatrix"
ok "$admin_group ($admin_gid) visible in this namespace only"

# as_nobody / as_admin / as_root CMD...: the client as that user, output in $T/out and $T/err.
as_nobody() {
        setpriv --reuid="$nobody" --regid="$nobody" --clear-groups "$T/bin/mxmatrix" "$@"
}
as_admin() {
        setpriv --reuid="$admin_uid" --regid="$admin_uid" --groups="$admin_gid" "$T/bin/mxmatrix" "$@"
}

step="start"
mxd_start SLEEP=1000 -- --socket-mode 0666 --admin-group "$admin_group"
[ "$(stat -c %a "$MXMATRIX_SOCKET")" = 666 ] || fail "socket mode $(stat -c %a "$MXMATRIX_SOCKET")"
expect_exit 0 mx pause # root's jobs stay queued, so they can be cancelled later
root_job=$(submit feature=fast mode=ok)
root_run=$(job_runs "$root_job" | head -1)
ok "daemon with --socket-mode 0666 --admin-group $admin_group; root's job $root_job"

step="anyone reads"
expect_exit 0 as_nobody status
has "$T/out" "queue:   PAUSED"
expect_exit 0 as_nobody --json list
jq -e --argjson j "$root_job" '[.jobs[].id] | index($j) != null' "$T/out" >/dev/null || fail "nobody's list"
expect_exit 0 as_nobody show "$root_job"
has "$T/out" "by root (uid 0)"
expect_exit 0 as_nobody show "r$root_run"
expect_exit 0 as_nobody logs "r$root_run"
has "$T/err" "r$root_run has no log output yet"
ok "status, list, show, logs of root's job"

step="nobody submits and cancels their own"
expect_exit 0 as_nobody --json submit feature=fast mode=ok
own=$(jq -e '.job' "$T/out") || fail "nobody's submit: $(cat "$T/out")"
expect_exit 0 as_nobody --json list --mine
[ "$(jq -c '[.jobs[].id]' "$T/out")" = "[$own]" ] || fail "nobody's --mine: $(cat "$T/out")"
[ "$(job_field "$own" '.job.uid')" = "$nobody" ] || fail "job $own uid $(job_field "$own" '.job.uid')"
[ "$(job_field "$own" '.job.user')" = nobody ] || fail "job $own user $(job_field "$own" '.job.user')"
expect_exit 0 as_nobody cancel "$own"
has "$T/out" "cancelled 2 queued run(s)"
expect_exit 0 as_nobody retry "$own" --all
has "$T/out" "requeued 2 run(s)"
expect_exit 0 as_nobody cancel "$own"
ok "job $own submitted, listed as nobody's, cancelled, retried, cancelled"

step="nobody may not touch root's job or the queue"
expect_exit 4 as_nobody cancel "$root_job"
has "$T/err" "permission-denied"
has "$T/err" "job $root_job belongs to uid 0"
expect_exit 4 as_nobody cancel "r$root_run"
has "$T/err" "r$root_run belongs to uid 0"
expect_exit 4 as_nobody retry "$root_job"
expect_exit 4 as_nobody retry "r$root_run" --all
expect_exit 4 as_nobody resume
has "$T/err" "only root or the admin group may do this"
expect_exit 4 as_nobody pause
expect_exit 4 as_nobody reload
expect_exit 4 as_nobody submit feature=fast --matrix "$MX_FIXTURE_MATRIX"
has "$T/err" "only root or the admin group may name a matrix file"
[ "$(job_field "$root_job" '[.runs[].state] | unique | join(",")')" = queued ] ||
        fail "root's job was changed"
[ "$(mxj status | jq '.paused')" = true ] || fail "the queue was resumed"
ok "cancel, retry (job and run), pause, resume, reload, submit --matrix: exit 4 with the reason"

step="the admin group may"
expect_exit 0 as_admin --json list --mine
[ "$(jq '.jobs | length' "$T/out")" = 0 ] || fail "the admin has jobs of their own"
expect_exit 0 as_admin resume
has "$T/out" "queue resumed"
expect_exit 0 follow_job "$root_job"
expect_exit 0 as_admin pause
expect_exit 0 as_admin retry "$root_job" --all
has "$T/out" "requeued 2 run(s)"
expect_exit 0 as_admin cancel "$root_job"
has "$T/out" "cancelled 2 queued run(s)"
expect_exit 0 as_admin reload
expect_exit 0 as_admin submit feature=fast mode=ok --matrix "$MX_FIXTURE_MATRIX" --dry-run
ok "resume, pause, retry and cancel root's job, reload, --matrix"

step="logs of someone else's run"
expect_exit 0 mx resume
j=$(submit feature=fast mode=sleep)
r=$(job_runs "$j" | head -1)
wait_until "r$r to run" is_current "$r"
as_nobody logs -f "r$r" >"$T/logs-f" 2>&1 &
logs_pid=$!
log_there() { grep -q "mode=sleep" "$T/logs-f"; }
wait_until "nobody's logs -f to print" log_there
expect_exit 4 as_nobody cancel "r$r"
expect_exit 0 as_admin cancel "r$r"
wait "$logs_pid" || fail "nobody's logs -f exited $?"
has "$T/logs-f" "stopping the command (cancelled)"
expect_exit 0 mx cancel "$j"
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "exit status $MXD_STATUS"
ok "nobody followed root's r$r; nobody could not cancel it, the admin could"

step="the socket keeps others out"
mxd_start -- --admin-group "$admin_group"
[ "$(stat -c '%a %G' "$MXMATRIX_SOCKET")" = "660 root" ] ||
        fail "socket $(stat -c '%a %G' "$MXMATRIX_SOCKET")"
expect_exit 4 as_nobody status
has "$T/err" "permission denied on $MXMATRIX_SOCKET"
expect_exit 4 as_admin status
mxd_stop TERM
mxd_start -- --socket-group "$admin_group"
[ "$(stat -c '%a %G' "$MXMATRIX_SOCKET")" = "660 $admin_group" ] ||
        fail "socket $(stat -c '%a %G' "$MXMATRIX_SOCKET")"
expect_exit 4 as_nobody status
expect_exit 0 as_admin status
# In the socket's group but not the admin group: a plain user.
expect_exit 4 as_admin pause
mxd_stop TERM
ok "mode 0660: others get exit 4; --socket-group lets its members in"
