#!/usr/bin/env bash
# Socket activation with systemd-socket-activate: the first client connection
# starts mxmatrixd, which serves on the passed descriptor and leaves the node
# alone (no unlink, no chmod: it belongs to the socket unit); several passed
# sockets need one named "control"; a LISTEN_PID that is not ours is ignored
# (the daemon binds its own socket), and LISTEN_* never reach the runs.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

activate=$(command -v systemd-socket-activate) || skip "systemd-socket-activate is not installed"

# Sanitizer settings must survive systemd-socket-activate, which passes only what -E names.
passenv=(-E MX_REGRESS_TAG -E NOTIFY_SOCKET -E SLEEP)
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
        [ -n "${!v:-}" ] && passenv+=(-E "$v")
done

# activated SOCKETS FDNAMES [daemon args...]: systemd-socket-activate in the background (pid in MXD_PID).
activated() {
        local socks=$1 names=$2 s
        local -a listen=()
        shift 2
        for s in $socks; do listen+=(-l "$s"); done
        MX_REGRESS_TAG=$MX_REGRESS_TAG NOTIFY_SOCKET=$T/nobody-listens SLEEP=1000 \
                "$activate" "${listen[@]}" --fdname="$names" "${passenv[@]}" \
                "$MXD_BIN" --foreground --log-level=debug --state-dir "$MXD_STATE" \
                --matrix "$MX_FIXTURE_MATRIX" --socket "$T/not-this.sock" "$@" 2>>"$MXD_LOG" &
        MXD_PID=$!
}

# The file the process runs, e.g. to tell the activator from the daemon it became.
exe_of() {
        readlink "/proc/$1/exe" 2>/dev/null
}

listening_on() {
        grep -qF "Listening on $1" "$MXD_LOG"
}

step="activation"
sock=$T/activated.sock
activated "$sock" control
wait_until "systemd-socket-activate to listen" listening_on "$sock"
chmod 0604 "$sock" # not what the daemon would set (0660): a chmod would show
before=$(stat -c '%i %a %U:%G' "$sock")
[ "$(exe_of "$MXD_PID")" = "$activate" ] || fail "pid $MXD_PID runs $(exe_of "$MXD_PID") before any client"
[ -z "$(pids_with "MX_REGRESS_TAG=$MX_REGRESS_TAG" | grep -vx "$MXD_PID")" ] ||
        fail "something started early"
expect_exit 0 timeout "$MX_WAIT_S" "$MX_BIN" --socket "$sock" status
has "$T/out" "queue:   running"
[ "$(exe_of "$MXD_PID")" = "$MXD_BIN" ] ||
        fail "the activator did not become mxmatrixd: $(exe_of "$MXD_PID")"
has "$MXD_LOG" "ready on the socket the service manager passed"
[ ! -e "$T/not-this.sock" ] || fail "the daemon bound its own socket too"
ok "the first connection started mxmatrixd (pid $MXD_PID) and was served"

step="serving on the passed socket"
export MXMATRIX_SOCKET=$sock
j=$(submit feature=fast mode=ok)
expect_exit 0 follow_job "$j"
j=$(submit feature=fast mode=sleep)
r=$(job_runs "$j" | head -1)
wait_until "r$r to run" is_current "$r"
tag=$(run_tag "$r")
for p in $(pids_with "MXMATRIX_RUN_TAG=$tag"); do
        [ -z "$(env_of "$p" LISTEN_FDS)$(env_of "$p" LISTEN_PID)$(env_of "$p" LISTEN_FDNAMES)" ] ||
                fail "run process $p inherited LISTEN_* variables"
        [ "$(env_of "$p" MX_REGRESS_TAG)" = "$MX_REGRESS_TAG" ] || fail "pid $p is not the run's"
        n=$((${n:-0} + 1))
done
[ "${n:-0}" -ge 2 ] || fail "r$r has ${n:-0} processes, want sh and sleep"
[ "$(stat -c '%i %a %U:%G' "$sock")" = "$before" ] ||
        fail "the node changed: $before -> $(stat -c '%i %a %U:%G' "$sock")"
ok "job $j ran; the run's ${n} processes carry no LISTEN_* variables"

step="stop leaves the node"
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "SIGTERM: exit status $MXD_STATUS"
no_process_with "MXMATRIX_RUN_TAG=$tag" || fail "r$r outlived the daemon"
[ -S "$sock" ] || fail "the daemon removed the socket node it was given"
[ "$(stat -c '%i %a %U:%G' "$sock")" = "$before" ] ||
        fail "the node changed: $before -> $(stat -c '%i %a %U:%G' "$sock")"
ok "exit 0; $sock still there, inode, mode and owner as before ($before)"

step="two sockets, one named control"
activated "$T/a.sock $T/b.sock" "other:control"
wait_until "systemd-socket-activate to listen" listening_on "$T/b.sock"
expect_exit 0 timeout "$MX_WAIT_S" "$MX_BIN" --socket "$T/b.sock" status
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "SIGTERM: exit status $MXD_STATUS"
ok "served on the descriptor named control"

step="two sockets, none named control"
: >"$MXD_LOG"
activated "$T/c.sock $T/d.sock" "one:two"
wait_until "systemd-socket-activate to listen" listening_on "$T/d.sock"
expect_exit 69 timeout "$MX_WAIT_S" "$MX_BIN" --socket "$T/c.sock" status
wait "$MXD_PID"
status=$?
MXD_PID=""
[ "$status" -ne 0 ] || fail "mxmatrixd accepted two unnamed sockets"
has "$MXD_LOG" "2 sockets were passed and none is named 'control'"
ok "refused with exit status $status and a clear error"

step="not a socket"
: >"$MXD_LOG"
# The exec keeps bash's pid, so LISTEN_PID=$$ names mxmatrixd; fd 3 is a plain file.
bash -c 'export LISTEN_PID=$$ LISTEN_FDS=1; exec "$@" 3<"$0"' "$MXD_LOG" "$MXD_BIN" --foreground \
        --state-dir "$MXD_STATE" --socket "$T/own.sock" 2>>"$MXD_LOG"
status=$?
[ "$status" -ne 0 ] || fail "mxmatrixd accepted a file as its socket"
has "$MXD_LOG" "the passed descriptor 3 is not a listening Unix stream socket"
[ ! -e "$T/own.sock" ] || fail "it bound its own socket instead"
ok "a passed descriptor that is no listening socket: exit status $status"

step="LISTEN_PID of another process"
: >"$MXD_LOG"
MXD_STATE=$T/state-own # the first state holds the interrupted sleep run, which would run first
export MXMATRIX_SOCKET=$T/own.sock
LISTEN_PID=1 LISTEN_FDS=1 LISTEN_FDNAMES=control mxd_start SLEEP=1000 -- --socket "$T/own.sock" 3</dev/null
[ -S "$T/own.sock" ] || fail "no socket of its own"
j=$(submit feature=fast mode=sleep)
r=$(job_runs "$j" | head -1)
wait_until "r$r to run" is_current "$r"
for p in $(pids_with "MXMATRIX_RUN_TAG=$(run_tag "$r")"); do
        [ -z "$(env_of "$p" LISTEN_PID)" ] || fail "run process $p inherited LISTEN_PID"
done
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "SIGTERM: exit status $MXD_STATUS"
[ ! -e "$T/own.sock" ] || fail "a socket it bound itself stays behind"
ok "bound and served $T/own.sock, removed it at exit"
