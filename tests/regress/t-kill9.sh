#!/usr/bin/env bash
# kill -9 of mxmatrixd at random and at chosen points (a burst of concurrent
# submits, a long run with a grandchild that escaped with setsid, a retry,
# right after start, during start-up), then a restart on the same state:
# every submit the client acknowledged is there exactly once with all its
# runs, no job is partial, the database passes PRAGMA integrity_check, runs
# that were running end "interrupted" and run again as attempt 2, and the
# processes the killed daemon started (found by MXMATRIX_RUN_TAG) are killed
# at restart; with --recovery pause the queue comes back paused; a run whose
# cancel was acknowledged while its server stopped stays cancelled.
# MX_KILL9_SEED=N repeats a random sequence. Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"
command -v sqlite3 >/dev/null || skip "the sqlite3 CLI is not installed (tests/deps.sh)"

seed=${MX_KILL9_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$seed
echo "seed $seed (MX_KILL9_SEED=$seed repeats it)"
iterations=${MX_KILL9_ITERATIONS:-20}

# Background submitters write their --json reply to $T/sub.N; an acknowledged job is one whose id
# was printed.
nsub=0
submit_bg() {
        nsub=$((nsub + 1))
        "$MX_BIN" --json submit "$@" >"$T/sub.$nsub" 2>/dev/null &
}
# Record "job runs" of each acknowledged submit in $T/acked (after the submitters are done).
collect_acks() {
        local f j n
        for f in "$T"/sub.*; do
                [ -e "$f" ] || continue
                j=$(jq -r '.job // empty' "$f" 2>/dev/null)
                n=$(jq -r '.runs | length' "$f" 2>/dev/null)
                [ -n "$j" ] && echo "$j $n" | tee -a "$T/acked" >>"$T/acked-new"
                rm -f "$f"
        done
}
any_ack() {
        grep -qs '"job"' "$T"/sub.*
}

# kill9: SIGKILL the daemon, then check the file and note the attempts it left open.
kill9() {
        local ic
        kill -9 "$MXD_PID" 2>/dev/null
        wait "$MXD_PID" 2>/dev/null
        MXD_PID=""
        wait # the submitters: they end when the socket does
        collect_acks
        [ -e "$MXD_STATE/queue.db" ] || return 0
        ic=$(db_query 'PRAGMA integrity_check') || fail "sqlite3 cannot read the database after kill -9"
        [ "$ic" = ok ] || fail "integrity_check after kill -9: $ic"
        db_query "SELECT tag FROM attempts WHERE finished_at IS NULL" >>"$T/open-tags"
}

# With a daemon serving again: the acknowledged jobs, whole; the killed daemon's runs ended and its
# processes gone.
check_recovered() { # runs-per-job
        local j n got ids dup tag o
        # All acknowledged jobs so far, in one query ("id runs" per stored job)...
        db_query "SELECT id || ' ' || (SELECT COUNT(*) FROM runs WHERE job_id = jobs.id) FROM jobs" \
                >"$T/stored" || fail "sqlite3"
        while read -r j n; do
                got=$(grep -c "^$j " "$T/stored")
                [ "$got" = 1 ] || fail "acknowledged job $j is stored $got times"
                grep -qx "$j $n" "$T/stored" ||
                        fail "job $j: stored '$(grep "^$j " "$T/stored")', acknowledged with $n runs"
        done <"$T/acked"
        # ...and the new ones through the client too.
        while read -r j n; do
                got=$(mxj show "$j" | jq '.runs | length')
                [ "$got" = "$n" ] || fail "job $j has $got runs, the submit acknowledged $n"
        done <"$T/acked-new"
        : >"$T/acked-new"
        ids=$(cut -d' ' -f1 "$T/acked" | sort)
        dup=$(uniq -d <<<"$ids")
        [ -z "$dup" ] || fail "job ids acknowledged twice: $dup"
        got=$(db_query "SELECT COUNT(*) FROM jobs
                        WHERE (SELECT COUNT(*) FROM runs WHERE job_id = jobs.id) != $1")
        [ "$got" = 0 ] || fail "$got jobs are partial (not $1 runs)"
        while read -r tag; do
                [ -n "$tag" ] || continue
                no_process_with "MXMATRIX_RUN_TAG=$tag" ||
                        fail "attempt $tag of the killed daemon still has processes"
                o=$(db_query "SELECT outcome FROM attempts WHERE tag = '$tag'")
                [ "$o" = interrupted ] ||
                        fail "attempt $tag left open by kill -9 ended '$o', not interrupted"
                echo "$tag" >>"$T/interrupted-tags"
        done <"$T/open-tags"
        : >"$T/open-tags"
        got=$(db_query "SELECT COUNT(*) FROM attempts WHERE finished_at IS NULL")
        [ "$got" -le 1 ] || fail "$got attempts open at once"
        got=$(db_query "SELECT COUNT(*) FROM runs WHERE state = 'running'")
        [ "$got" -le 1 ] || fail "$got runs running at once"
}

# Every run is done, passed, and each interrupted attempt was followed by a completed one.
all_done() {
        [ "$(db_query "SELECT COUNT(*) FROM runs WHERE state != 'done'")" = 0 ]
}
check_drained() {
        local got
        wait_until "every run to finish" all_done
        got=$(db_query "SELECT COUNT(*) FROM runs WHERE result IS NOT 'pass'")
        [ "$got" = 0 ] ||
                fail "$got runs failed: $(db_query "SELECT id, result FROM runs WHERE result IS NOT 'pass'")"
        got=$(db_query "SELECT COUNT(*) FROM runs r
                        WHERE r.attempts != (SELECT MAX(n) FROM attempts WHERE run_id = r.id)")
        [ "$got" = 0 ] || fail "$got runs whose attempt count disagrees with their attempts"
        got=$(db_query "SELECT COUNT(*) FROM attempts a WHERE a.outcome = 'interrupted' AND NOT EXISTS
                        (SELECT 1 FROM attempts b
                         WHERE b.run_id = a.run_id AND b.n > a.n AND b.outcome = 'completed')")
        [ "$got" = 0 ] || fail "$got interrupted attempts were not followed by a completed one"
        [ "$(db_query 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
}

: >"$T/acked"
: >"$T/acked-new"
: >"$T/open-tags"
: >"$T/interrupted-tags"

step="random kills"
kills_running=0
for i in $(seq "$iterations"); do
        if [ $((i % 5)) = 1 ]; then
                # During start-up: recovery, opening the database, binding the socket.
                mxd_spawn SLEEP=0.2
                sleep "0.0$((RANDOM % 10))"
                kill9
                continue
        fi
        mxd_start SLEEP=0.2
        check_recovered 2
        for k in 1 2; do
                case $((RANDOM % 2)) in
                0) submit_bg feature=fast mode=ok ;;
                1) submit_bg feature=fast mode=sleep ;;
                esac
        done
        sleep "0.$((RANDOM % 4))$((RANDOM % 10))"
        [ -n "$(current_run)" ] && kills_running=$((kills_running + 1))
        kill9
done
mxd_start SLEEP=0.2
check_recovered 2
check_drained
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "exit status $MXD_STATUS"
ok "$iterations kills ($kills_running with a run running): $(wc -l <"$T/acked") acknowledged jobs whole," \
        "$(wc -l <"$T/interrupted-tags") attempts interrupted and run again, integrity ok"

step="burst of submits"
mxd_start SLEEP=0.2
for k in $(seq 10); do submit_bg feature=fast mode=ok; done
wait_until "a submit to be acknowledged" any_ack
kill9
[ -s "$T/acked" ] || fail "no acknowledged submit"
mxd_start SLEEP=0.2
check_recovered 2
check_drained
mxd_stop TERM
ok "kill -9 while 10 clients submitted: $(wc -l <"$T/acked") acknowledged jobs in total, all whole"

step="long run with an escaped grandchild"
MXD_STATE=$T/state-escape
: >"$T/acked"
: >"$T/acked-new"
mxd_start SLEEP=1000
j=$(submit feature=fast mode=escape)
r=$(job_runs "$j" | head -1)
wait_until "r$r to run" is_current "$r"
tag=$(run_tag "$r")
three_processes() { [ "$(pids_with "MXMATRIX_RUN_TAG=$tag" | wc -l)" -ge 3 ]; }
wait_until "sh, its sleep and the escaped sleep" three_processes
pids=$(pids_with "MXMATRIX_RUN_TAG=$tag")
kill9
: >"$MXD_LOG"
for p in $pids; do
        [ "$(env_of "$p" MXMATRIX_RUN_TAG)" = "$tag" ] ||
                fail "pid $p died with the daemon: nothing left to recover"
done
mxd_start SLEEP=0.2
no_process_with "MXMATRIX_RUN_TAG=$tag" || fail "the killed daemon's processes survived the restart"
has "$MXD_LOG" "processes the previous daemon left behind"
[ "$(run_field "$r" '.run.attempt_history[0].outcome')" = interrupted ] ||
        fail "attempt 1 of r$r not interrupted"
expect_exit 0 follow_job "$j"
[ "$(run_field "$r" '.run.attempts')" = 2 ] ||
        fail "r$r ran $(run_field "$r" '.run.attempts') attempts, want 2"
[ "$(run_field "$r" '.run.attempt_history[1].outcome')" = completed ] || fail "attempt 2 of r$r"
tag2=$(run_tag "$r")
no_process_with "MXMATRIX_RUN_TAG=$tag2" || fail "attempt 2 left its escaped grandchild"
mxd_stop TERM
ok "pids $(echo $pids) killed at restart; r$r interrupted, then passed as attempt 2, nothing left"

step="during a retry"
MXD_STATE=$T/state-retry
mxd_start SLEEP=0.2
j=$(submit feature=fast mode=fail)
expect_exit 1 follow_job "$j"
expect_exit 0 mx pause
for k in 1 2 3 4 5; do
        "$MX_BIN" retry "$j" --all >"$T/retry.out" 2>&1 &
        sleep "0.0$((RANDOM % 3))"
        kill9
        mxd_start SLEEP=0.2
        states=$(job_field "$j" '[.runs[].state] | unique | join(",")')
        if grep -q "requeued 2 run(s)" "$T/retry.out"; then
                [ "$states" = queued ] || fail "an acknowledged retry was lost: runs $states"
        else
                [ "$states" = queued ] || [ "$states" = done ] || fail "a retry half done: runs $states"
        fi
        [ "$(mxj status | jq '.paused')" = true ] || fail "the pause was lost"
        if [ "$states" = queued ]; then
                expect_exit 0 mx resume
                expect_exit 1 follow_job "$j"
                expect_exit 0 mx pause
        fi
done
mxd_stop TERM
ok "5 kills around retry --all: each retry all or nothing, acknowledged ones kept, the pause kept"

step="right after start"
MXD_STATE=$T/state-start
for k in 1 2 3; do
        mxd_start SLEEP=0.2
        kill9
done
mxd_start SLEEP=0.2
j=$(submit feature=fast mode=ok)
expect_exit 0 follow_job "$j"
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "exit status $MXD_STATUS"
ok "3 kills right after READY; the next daemon serves"

step="recovery pause"
MXD_STATE=$T/state-pause
mxd_start SLEEP=1000
j=$(submit feature=fast mode=sleep)
r=$(job_runs "$j" | head -1)
wait_until "r$r to run" is_current "$r"
kill9
mxd_start SLEEP=0.2 -- --recovery pause
out=$(mxj status)
jq -e '.paused == true and .current == null' >/dev/null <<<"$out" || fail "not paused after recovery: $out"
[ "$(run_field "$r" '.run.state')" = queued ] || fail "r$r is not queued"
[ "$(run_field "$r" '.run.attempt_history[0].outcome')" = interrupted ] || fail "r$r attempt 1"
expect_exit 0 mx resume
expect_exit 0 follow_job "$j"
[ "$(run_field "$r" '.run.attempts')" = 2 ] || fail "r$r attempts"
mxd_stop TERM
ok "the queue came back paused with r$r requeued; after resume it ran as attempt 2"

step="while a cancelled run stops"
# The cancel is acknowledged when the stop begins; slowstop takes a second to exit after SIGTERM,
# so the kill lands while the attempt is still open. The cancel must outlive the daemon.
MXD_STATE=$T/state-cancel
mxd_start SLEEP=1000
j=$(submit feature=fast mode=slowstop)
read -r r r2 < <(job_runs "$j" | tr '\n' ' ')
wait_until "r$r to run" is_current "$r"
out=$(mxj cancel "$j")
[ "$(jqv "$out" '.stopping')" = "$r" ] || fail "cancel $j: $out"
kill9
[ "$(db_query "SELECT COUNT(*) FROM attempts WHERE finished_at IS NULL")" = 1 ] ||
        fail "r$r stopped before the kill: the test missed its window"
mxd_start SLEEP=1000
[ "$(run_field "$r" '.run.state')" = done ] || fail "r$r is $(run_field "$r" '.run.state') after recovery"
[ "$(run_field "$r" '.run.result')" = cancelled ] || fail "r$r result $(run_field "$r" '.run.result')"
[ "$(run_field "$r" '.run.attempts')" = 1 ] || fail "r$r ran again"
[ "$(run_field "$r2" '.run.attempts')" = 0 ] || fail "r$r2 ran"
[ "$(job_field "$j" '.job.state')" = cancelled ] || fail "job $j is $(job_field "$j" '.job.state')"
[ -z "$(current_run)" ] || fail "r$(current_run) runs after the restart"
has "$MXD_LOG" "while it was being cancelled; it stays cancelled"
expect_exit 1 follow_job "$j"
mxd_stop TERM
ok "kill -9 after cancel $j acknowledged the stop of r$r: after recovery r$r is cancelled, not requeued"
