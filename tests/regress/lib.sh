# SPDX-License-Identifier: MIT
# Helpers for the regress tests (tests/regress/t-*.sh), sourced after
# "set -u": a private mxmatrixd on a temporary socket and state directory,
# driven through the real mxmatrix client.
#
# Every daemon a test starts carries MX_REGRESS_TAG=<unique> in its
# environment, and so does every process of every run (the command runner
# passes the daemon's environment on). The exit trap kills whatever carries
# the tag (daemons, commands, grandchildren that escaped with setsid) and the
# test's own background jobs, so a test never leaves processes behind, even
# when it fails half-way.
#
# Conventions: fail() ends the test at the first broken expectation with the
# daemon's log; ok() reports a passed step; a test that cannot run here
# calls skip() (exit 77).

: "${MX_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${MX_BUILD_DIR:=$MX_SOURCE_DIR/build}"
MXD_BIN=$MX_BUILD_DIR/daemon/mxmatrixd
MX_BIN=$MX_BUILD_DIR/client/mxmatrix
MX_FIXTURE_MATRIX=$MX_SOURCE_DIR/tests/fixtures/daemon/command.json

# Generous bounds: CI has two cores and runs the sanitizer tree too.
MX_WAIT_S=${MX_WAIT_S:-60}

mx_test_name=$(basename "$0" .sh)
step=""

skip() {
        echo "SKIP: $*"
        exit 77
}

[ -x "$MXD_BIN" ] || skip "$MXD_BIN is not built"
[ -x "$MX_BIN" ] || skip "$MX_BIN is not built"
command -v jq >/dev/null || skip "jq is not installed (tests/deps.sh)"

T=$(mktemp -d "${TMPDIR:-/tmp}/$mx_test_name.XXXXXX")
chmod 0755 "$T" # a second uid must reach sockets below it
MX_REGRESS_TAG="$mx_test_name-$$-$RANDOM$RANDOM"
export MXMATRIX_SOCKET=$T/control.sock
MXD_STATE=$T/state
MXD_LOG=$T/daemon.log
MXD_PID=""
MXD_STATUS=""

# pids_with VAR=VALUE: the processes whose environment holds exactly that entry.
# Bash builtins only, so the scan forks nothing that could match itself.
pids_with() {
        local f pid entry
        local -a env
        for f in /proc/[0-9]*/environ; do
                pid=${f#/proc/}
                pid=${pid%/environ}
                [ "$pid" = "$$" ] && continue
                mapfile -d '' -t env 2>/dev/null <"$f" || continue
                for entry in "${env[@]}"; do
                        if [ "$entry" = "$1" ]; then
                                echo "$pid"
                                break
                        fi
                done
        done
}

# The environment entry NAME=... of process PID, or nothing.
env_of() {
        local entry
        local -a env
        mapfile -d '' -t env 2>/dev/null <"/proc/$1/environ" || return 0
        for entry in "${env[@]}"; do
                case $entry in "$2="*) echo "${entry#*=}"; return 0 ;; esac
        done
}

# Kill every process that carries this test's tag, and the test's background jobs.
sweep() {
        local pid
        for pid in $(pids_with "MX_REGRESS_TAG=$MX_REGRESS_TAG") $(jobs -p); do
                kill -9 "$pid" 2>/dev/null
        done
}

mx_cleanup() {
        local status=$?
        trap - EXIT
        sweep
        wait 2>/dev/null
        if [ -n "$(pids_with "MX_REGRESS_TAG=$MX_REGRESS_TAG")" ]; then
                sleep 0.2
                sweep
        fi
        # In the sanitizer tree a daemon's report may not change what a test sees: look for one.
        local report='ERROR: [A-Za-z]+Sanitizer|runtime error:'
        if [ -f "$MXD_LOG" ] && grep -qE "$report" "$MXD_LOG"; then
                echo "FAIL: a sanitizer reported an error in mxmatrixd:" >&2
                grep -E -A20 "$report" "$MXD_LOG" | head -60 >&2
                status=1
        fi
        if [ "$status" -ne 0 ] && [ -n "${MX_KEEP_TMP:-}" ]; then
                echo "kept $T"
        else
                rm -rf "$T"
        fi
        exit "$status"
}
trap mx_cleanup EXIT
trap 'exit 1' INT TERM
# fail() in a command substitution or other subshell ends the whole test through this.
trap 'exit 1' USR1

fail() {
        {
                echo "FAIL [$step]: $*"
                for f in "$T/out" "$T/err" "$MXD_LOG"; do
                        [ -s "$f" ] && { echo "--- $f (last 30 lines)"; tail -30 "$f"; }
                done
        } >&2
        [ "$BASHPID" = "$$" ] || kill -USR1 $$
        exit 1
}

ok() {
        echo "ok   [$step] $*"
}

now_ms() {
        local t=${EPOCHREALTIME/[.,]/}
        echo $((t / 1000))
}

# wait_until DESC CMD...: run CMD until it succeeds; fail after MX_WAIT_S seconds.
wait_until() {
        local desc=$1 deadline
        shift
        deadline=$(($(now_ms) + MX_WAIT_S * 1000))
        until "$@"; do
                [ "$(now_ms)" -lt "$deadline" ] || fail "timed out after ${MX_WAIT_S}s waiting for: $desc"
                sleep 0.05
        done
}

# mxd_spawn [VAR=value...] [-- daemon args...]: start a private daemon in the background
# with --foreground --socket --state-dir --matrix (args given later override these).
mxd_spawn() {
        local -a envs=()
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do
                envs+=("$1")
                shift
        done
        [ "${1:-}" = "--" ] && shift
        env MX_REGRESS_TAG="$MX_REGRESS_TAG" "${envs[@]}" "$MXD_BIN" --foreground --log-level=debug \
                --socket "$MXMATRIX_SOCKET" --state-dir "$MXD_STATE" \
                --matrix "${MXD_MATRIX:-$MX_FIXTURE_MATRIX}" \
                "$@" 2>>"$MXD_LOG" &
        MXD_PID=$!
}

# The daemon answers on the socket: a status round-trip through the real client.
mxd_answers() {
        kill -0 "$MXD_PID" 2>/dev/null || fail "mxmatrixd (pid $MXD_PID) exited before it was ready"
        "$MX_BIN" status >/dev/null 2>&1
}

mxd_wait_ready() {
        wait_until "mxmatrixd to answer on $MXMATRIX_SOCKET" mxd_answers
}

# mxd_start [VAR=value...] [-- daemon args...]: spawn and wait until it serves clients.
mxd_start() {
        mxd_spawn "$@"
        mxd_wait_ready
}

# mxd_stop [SIGNAL]: signal the daemon (TERM by default) and wait; its exit status in MXD_STATUS.
mxd_stop() {
        kill "-${1:-TERM}" "$MXD_PID" 2>/dev/null
        wait "$MXD_PID"
        MXD_STATUS=$?
        MXD_PID=""
}

mx() {
        "$MX_BIN" "$@"
}

# expect_exit WANT CMD...: run CMD with stdout in $T/out and stderr in $T/err; check its exit status.
expect_exit() {
        local want=$1 got
        shift
        "$@" >"$T/out" 2>"$T/err"
        got=$?
        [ "$got" -eq "$want" ] || fail "'$*' exited $got, want $want"
}

# has FILE TEXT / lacks FILE TEXT: FILE contains (or not) the fixed string TEXT.
has() {
        grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"
}
lacks() {
        ! grep -qF -- "$2" "$1" || fail "$(basename "$1") has '$2'"
}

# mxj ARGS...: "mxmatrix --json ARGS" must exit 0 and print valid JSON; prints it.
mxj() {
        local out
        out=$("$MX_BIN" --json "$@" 2>"$T/err") || fail "'mxmatrix --json $*' exited $?"
        jq -e . >/dev/null <<<"$out" || fail "'mxmatrix --json $*' printed no valid JSON: ${out:0:300}"
        printf '%s\n' "$out"
}

# jqv JSON FILTER: one value out of a JSON document (raw), failing if the filter yields null/false.
jqv() {
        jq -er "$2" <<<"$1" || fail "'$2' is null or false in: ${1:0:300}"
}

# submit ARGS...: submit through the client (--json), print the job id.
submit() {
        local out
        out=$(mxj submit "$@") || exit 1
        jqv "$out" '.job'
}

# follow_job JOB: the exit status of "mxmatrix follow JOB" (output in $T/follow), bounded in time.
follow_job() {
        timeout "$MX_WAIT_S" "$MX_BIN" follow "$1" >"$T/follow" 2>&1
}

# run_field RUN FILTER: a field of "mxmatrix --json show rRUN" (e.g. '.run.state').
run_field() {
        local out
        out=$(mxj show "r$1") || exit 1
        jq -r "$2" <<<"$out"
}

# The attempt a run's result comes from (jq on "show rRUN --json"), else its latest attempt that
# is not a confirmation start. L5's confirmation starts are later attempts of the same runs (L1,
# L1.5 and L4 only, confirm_of set) that never become the result: attempt_history[-1] may be one,
# and while the run's own confirmation start runs, show's result_attempt names that running start
# (a running run shows its running attempt), so a confirmation start is never taken for the result.
RESULT_ATTEMPT='(.run as $r | ([$r.attempt_history[] | select(.n == $r.result_attempt and .confirm_of == null)] |
        .[0]) // ([$r.attempt_history[] | select(.confirm_of == null)] | last) // $r.attempt_history[-1])'

# level_of RUN LEVEL: the level's record ({level, verdict, message, metrics...}) of rRUN's result attempt.
level_of() {
        run_field "$1" "$RESULT_ATTEMPT.levels[] | select(.level == \"$2\")"
}

job_field() {
        local out
        out=$(mxj show "$1") || exit 1
        jq -r "$2" <<<"$out"
}

# The run ids of a job, in plan order.
job_runs() {
        job_field "$1" '.runs[].id'
}

# True when rRUN is in STATE (queued, running, done).
run_in_state() {
        [ "$(run_field "$1" '.run.state')" = "$2" ]
}

# The run the daemon is running now, or empty.
current_run() {
        local out
        out=$(mxj status) || exit 1
        jq -r '.current.run // empty' <<<"$out"
}

is_current() {
        [ "$(current_run)" = "$1" ]
}

# The run tag of the latest attempt of rRUN.
run_tag() {
        run_field "$1" '.run.attempt_history[-1].tag'
}

# no_process_with VAR=VALUE: true when no process carries that environment entry.
no_process_with() {
        [ -z "$(pids_with "$1")" ]
}

# git as the tests' fixed committer, new repositories on branch main
git_t() { git -c user.name=t -c user.email=t@t -c init.defaultBranch=main "$@"; }
# git_one_commit DIR: a new repository at DIR with one commit (README "one")
git_one_commit() {
        mkdir -p "$1" && git_t -C "$1" init -q && echo one >"$1/README" && git_t -C "$1" add README &&
                git_t -C "$1" commit -qm one
}
db_query() {
        sqlite3 -bail -batch "$MXD_STATE/queue.db" "$@"
}
