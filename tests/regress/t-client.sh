#!/usr/bin/env bash
# Every verb of the mxmatrix client through the real binary, against a private
# mxmatrixd running the command matrix (tests/fixtures/daemon/command.json):
# human and --json output (parsed with jq), exit codes, the running run in
# status, logs -f, cancel of queued and running work (nothing left running;
# a follow ends when its runs are cancelled one by one),
# pause/resume, priorities, retry, list paging, reload, and --help of every
# verb. Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

verbs=(submit status list show cancel pause resume retry logs follow reload)

step="no daemon"
expect_exit 69 mx status
has "$T/err" "mxmatrixd is not running (no daemon on $MXMATRIX_SOCKET"
expect_exit 69 mx --socket "$T/elsewhere.sock" list
has "$T/err" "no daemon on $T/elsewhere.sock"
for v in "${verbs[@]}"; do
        # Help needs no daemon, and names the verb's synopsis from protocol.json.
        expect_exit 0 mx "$v" --help
        has "$T/out" "Usage: mxmatrix $v"
        has "$T/out" "Privilege:"
done
has "$T/out" "Usage: mxmatrix reload"
expect_exit 0 mx --help
for v in "${verbs[@]}"; do has "$T/out" "  $v"; done
ok "exit 69 with the reason; --help of all ${#verbs[@]} verbs"

step="usage errors"
expect_exit 2 mx
expect_exit 2 mx frobnicate
has "$T/err" "unknown verb 'frobnicate'"
expect_exit 2 mx show
expect_exit 2 mx show x12
has "$T/err" "'x12' is neither a job number (N or jN) nor a run (rN)"
expect_exit 2 mx show 1 2
expect_exit 2 mx logs
has "$T/err" "missing required parameter 'run'"
expect_exit 2 mx cancel 1 r2
has "$T/err" "more than one job or run given"
# N and jN are jobs, rN runs, in every verb: a verb that takes only one says so, the right way round.
expect_exit 2 mx follow r2
has "$T/err" "follow takes a job (N or jN), and 'r2' is a run: mxmatrix show r2 names its job"
expect_exit 2 mx logs 1
has "$T/err" "logs takes a run (r<number>), and '1' is job 1: use r1 for run 1, or mxmatrix show 1"
expect_exit 2 mx logs j1
expect_exit 2 mx show r1 --limit 5 --after x
has "$T/err" "'x' is not a run (r<number>)"
expect_exit 2 mx submit feature=fast --priority
expect_exit 2 mx list --frobnicate
ok "exit 2 before any connection"

# The daemon's matrix is a copy, so reload can be tested by editing it.
MXD_MATRIX=$T/matrix.json
cp "$MX_FIXTURE_MATRIX" "$MXD_MATRIX"
step="start"
mxd_start SLEEP=1000
ok "daemon pid $MXD_PID answers"

step="usage errors the daemon finds"
expect_exit 2 mx list --state sideways
has "$T/err" "state"
expect_exit 2 mx submit speed=fast
has "$T/err" "nothing to submit"
expect_exit 2 mx submit feature=fast --priority 5000
expect_exit 3 mx submit feature=fast mode=warp
expect_exit 3 mx submit feature=nosuchfeature
ok "bad-request exits 2, matrix errors exit 3"

step="submit human"
expect_exit 0 mx submit feature=fast mode=ok
has "$T/out" "job 1 queued: 2 runs"
has "$T/out" "mode=ok,speed=slow"
has "$T/out" "mode=ok,speed=fast"
j1=1
expect_exit 0 follow_job $j1
has "$T/follow" "mode=ok,speed=fast  started"
has "$T/follow" "mode=ok,speed=fast  finished: pass"
has "$T/follow" "job $j1 done: 2/2 runs: 2 pass, "
has "$T/follow" "; 2 of 2 runs as expected (pass or xfail)"
ok "job $j1 ran, follow exit 0"

step="submit --json, --strategy, --priority, pins"
out=$(mxj submit feature=fast mode=fail --strategy full --priority 3)
j2=$(jqv "$out" '.job')
[ "$(jq '.runs | length' <<<"$out")" = 2 ] || fail "want 2 runs: $out"
jq -e 'all(.runs[]; .config_key | startswith("mode=fail,"))' >/dev/null <<<"$out" || fail "pin lost: $out"
expect_exit 1 follow_job "$j2"
has "$T/follow" "job $j2 done: 2/2 runs: 2 fail, "
has "$T/follow" "; 0 of 2 runs as expected"
out=$(mxj show "$j2")
[ "$(jq -r '.job.strategy' <<<"$out")" = full ] || fail "strategy: $out"
[ "$(jq -r '.job.priority' <<<"$out")" = 3 ] || fail "priority: $out"
[ "$(jq -r '[.runs[].result] | unique | join(",")' <<<"$out")" = fail ] || fail "results: $out"
ok "job $j2: strategy full, priority 3, both runs fail, follow exit 1"

step="dry run"
before=$(mxj list --state all | jq '.jobs | length')
expect_exit 0 mx submit feature=fast --dry-run
has "$T/out" "dry run: 5 runs would be queued"
has "$T/out" "mode=sleep,speed=fast"
out=$(mxj submit feature=fast mode=crash --dry-run --strategy pairwise)
jq -e '.job == null and (.runs | length) == 2 and all(.runs[]; .state == "planned")' >/dev/null <<<"$out" ||
        fail "dry run JSON: $out"
after=$(mxj list --state all | jq '.jobs | length')
[ "$before" = "$after" ] || fail "a dry run stored a job ($before -> $after jobs)"
ok "nothing stored, $after jobs"

step="crash, show, logs"
j3=$(submit feature=fast mode=crash)
expect_exit 1 follow_job "$j3"
r3=$(job_runs "$j3" | head -1)
expect_exit 0 mx show "r$r3"
has "$T/out" "run r$r3 of job $j3 (#1): done, result crashed"
has "$T/out" "config: mode=crash,speed=slow"
has "$T/out" "attempt 1: crashed"
has "$T/out" "crash class signal"
has "$T/out" "signal 11"
has "$T/out" "L1    fail     killed by signal SEGV"
has "$T/out" "MODE=crash"
expect_exit 0 mx show "$j3"
has "$T/out" "job $j3: done, feature fast, strategy default, priority 0"
has "$T/out" "submitted "
has "$T/out" "by root (uid 0)"
has "$T/out" "r$r3"
has "$T/out" "crashed:signal"
expect_exit 0 mx logs "r$r3"
has "$T/out" "run in $MXD_STATE/runs/$r3/1: mode=crash speed=slow"
out=$(mxj logs "r$r3")
jq -se '.[0].data | test("mode=crash")' >/dev/null <<<"$out" || fail "logs --json stream item: $out"
jq -se '.[-1].outcome == "crashed" and .[-1].attempt == 1 and .[-1].bytes > 0' >/dev/null <<<"$out" ||
        fail "logs --json result: $out"
expect_exit 0 mx logs "r$r3" --tail 11
[ "$(cat "$T/out")" = "speed=slow" ] || fail "--tail 11 printed '$(cat "$T/out")'"
expect_exit 0 mx logs "r$r3" --attempt 1
has "$T/out" "mode=crash"
# 2^32 + 1 is no attempt of r$r3 (not attempt 1 after a truncation).
expect_exit 2 mx logs "r$r3" --attempt 4294967297
has "$T/err" "params.attempt"
ok "r$r3 crashed (SIGSEGV); show, logs, --tail, --attempt"

step="status while a run is running"
j4=$(submit feature=fast mode=sleep)
read -r r4a r4b < <(job_runs "$j4" | tr '\n' ' ')
wait_until "r$r4a to run" is_current "$r4a"
expect_exit 0 mx status
has "$T/out" "current: r$r4a of job $j4, attempt 1, L1 for "
has "$T/out" "mode=sleep,speed=slow"
has "$T/out" "queue:   running"
s1=$(mxj status)
jq -e ".current.run == $r4a and .current.job == $j4 and .current.level == \"L1\" and .current.attempt == 1" \
        >/dev/null <<<"$s1" || fail "status --json current: $s1"
e1=$(jq '.current.elapsed_ms' <<<"$s1")
elapsed_grew() { [ "$(mxj status | jq '.current.elapsed_ms')" -gt "$e1" ]; }
wait_until "the elapsed time to grow" elapsed_grew
ok "current run r$r4a, level L1, elapsed time grows from ${e1}ms"

step="logs -f of a running run"
mx logs -f "r$r4a" >"$T/logs-f" 2>&1 &
logs_pid=$!
log_has_line() { grep -q "mode=sleep speed=slow" "$T/logs-f"; }
wait_until "logs -f to print the command's output" log_has_line
kill -0 "$logs_pid" 2>/dev/null || fail "logs -f ended while r$r4a still runs"
ok "logs -f streams r$r4a and keeps waiting"

step="cancel a queued job"
j5=$(submit feature=fast mode=ok)
expect_exit 0 mx cancel "$j5"
has "$T/out" "cancelled 2 queued run(s)"
lacks "$T/out" "stopping"
[ "$(job_field "$j5" '.job.state')" = cancelled ] || fail "job $j5 is not cancelled"
[ "$(job_field "$j5" '[.runs[].result] | unique | join(",")')" = cancelled ] ||
        fail "runs of $j5 not cancelled"
[ "$(job_field "$j5" '[.runs[] | .attempts] | add')" = 0 ] || fail "a cancelled run of $j5 ran"
expect_exit 1 follow_job "$j5"
# Nothing left to cancel: refused, and a finished job keeps its state.
expect_exit 1 mx cancel "$j1"
has "$T/err" "invalid-state: job $j1 has no queued or running run to cancel"
[ "$(job_field "$j1" '.job.state')" = done ] || fail "job $j1 is $(job_field "$j1" '.job.state') after cancel"
expect_exit 1 mx cancel "r$r3"
has "$T/err" "invalid-state: r$r3 is not queued or running"
ok "job $j5: 2 runs cancelled before they ran; cancel of finished job $j1 and r$r3 refused"

step="cancel a running run"
tag=$(run_tag "$r4a")
pids=$(pids_with "MXMATRIX_RUN_TAG=$tag")
[ -n "$pids" ] || fail "no process carries r$r4a's tag $tag"
expect_exit 0 mx cancel "r$r4a"
has "$T/out" "cancelled 0 queued run(s); stopping r$r4a"
wait_until "r$r4a to end" run_in_state "$r4a" done
[ "$(run_field "$r4a" '.run.result')" = cancelled ] || fail "r$r4a result $(run_field "$r4a" '.run.result')"
no_process_with "MXMATRIX_RUN_TAG=$tag" || fail "processes of r$r4a left"
for p in $pids; do
        [ "$(env_of "$p" MXMATRIX_RUN_TAG)" != "$tag" ] || fail "pid $p of r$r4a still runs"
done
timeout "$MX_WAIT_S" tail --pid="$logs_pid" -f /dev/null || fail "logs -f did not end with r$r4a"
wait "$logs_pid" || fail "logs -f exited $?"
has "$T/logs-f" "[mxmatrixd] stopping the command (cancelled)"
ok "r$r4a stopped (pids $(echo $pids)), nothing left with its tag, logs -f ended"

step="cancel a job whose run is running"
wait_until "r$r4b to run" is_current "$r4b"
tag=$(run_tag "$r4b")
[ -n "$(pids_with "MXMATRIX_RUN_TAG=$tag")" ] || fail "no process carries r$r4b's tag"
out=$(mxj cancel "$j4")
[ "$(jqv "$out" '.stopping')" = "$r4b" ] || fail "cancel $j4: $out"
wait_until "r$r4b to end" run_in_state "$r4b" done
no_process_with "MXMATRIX_RUN_TAG=$tag" || fail "processes of r$r4b left"
[ "$(job_field "$j4" '.job.state')" = cancelled ] || fail "job $j4 state $(job_field "$j4" '.job.state')"
ok "job $j4 cancelled, r$r4b stopped"

step="pause, priorities, resume"
expect_exit 0 mx pause
has "$T/out" "queue paused: no new run starts"
j6=$(submit feature=fast mode=ok)
j7=$(submit feature=fast mode=ok --priority 5)
expect_exit 0 mx status
has "$T/out" "queue:   PAUSED (mxmatrix resume)"
has "$T/out" "current: none"
has "$T/out" "runs:    4 queued, 0 running"
# Nothing to wait for when nothing may happen: give a wrongly started run a moment to show.
sleep 1
[ "$(mxj list --state queued | jq -c '[.jobs[].id] | sort')" = "[$j6,$j7]" ] || fail "queued jobs"
for j in "$j6" "$j7"; do
        [ "$(job_field "$j" '[.runs[].attempts] | add')" = 0 ] || fail "a run of job $j started while paused"
done
out=$(mxj resume)
jq -e '.paused == false' >/dev/null <<<"$out" || fail "resume: $out"
expect_exit 0 follow_job "$j6"
expect_exit 0 follow_job "$j7"
first6=$(job_field "$j6" '.runs[0].id')
last7=$(job_field "$j7" '.runs[-1].id')
t6=$(run_field "$first6" '.run.attempt_history[0].started_at')
t7=$(run_field "$last7" '.run.attempt_history[0].started_at')
[ "$t7" -lt "$t6" ] || fail "priority 5 job $j7 (r$last7 at $t7) started after job $j6 (r$first6 at $t6)"
ok "nothing ran while paused; job $j7 (priority 5) ran before job $j6"

step="retry"
j8=$(submit feature=fast)
mapfile -t r8 < <(job_runs "$j8")
[ "${#r8[@]}" = 5 ] || fail "job $j8 has ${#r8[@]} runs, want 5"
wait_until "the sleep run r${r8[4]} to run" is_current "${r8[4]}"
expect_exit 0 mx cancel "r${r8[4]}"
expect_exit 1 follow_job "$j8"
[ "$(job_field "$j8" '[.runs[].result] | join(",")')" = "pass,pass,fail,crashed,cancelled" ] ||
        fail "results of $j8: $(job_field "$j8" '[.runs[].result] | join(",")')"
expect_exit 0 mx retry "$j8"
has "$T/out" "requeued 2 run(s)"
expect_exit 1 follow_job "$j8"
[ "$(job_field "$j8" '[.runs[].attempts] | join(",")')" = "1,1,2,2,1" ] ||
        fail "attempts after retry: $(job_field "$j8" '[.runs[].attempts] | join(",")')"
expect_exit 0 mx pause
out=$(mxj retry "$j8" --all)
[ "$(jqv "$out" '.requeued')" = 5 ] || fail "retry --all: $out"
[ "$(job_field "$j8" '[.runs[].state] | unique | join(",")')" = queued ] || fail "runs of $j8 not all queued"
expect_exit 1 mx retry "r${r8[0]}"
has "$T/err" "invalid-state: r${r8[0]} is queued or running"
expect_exit 0 mx cancel "$j8"
has "$T/out" "cancelled 5 queued run(s)"
# Cancelling the retries leaves each run with the result it had, and that attempt's levels.
[ "$(job_field "$j8" '[.runs[].result] | join(",")')" = "pass,pass,fail,crashed,cancelled" ] ||
        fail "results after the cancelled retry: $(job_field "$j8" '[.runs[].result] | join(",")')"
[ "$(job_field "$j8" '[.runs[0].levels[].verdict] | join(",")')" = "pass,skipped" ] ||
        fail "levels of r${r8[0]}: $(job_field "$j8" '.runs[0].levels')"
[ "$(job_field "$j8" '[.runs[4].levels[]] | length')" = 0 ] || fail "r${r8[4]} shows levels of a cancelled attempt"
expect_exit 0 mx show "$j8"
has "$T/out" "runs: 2 pass, 1 fail, 1 crashed, 1 cancelled"
expect_exit 0 mx show "r${r8[2]}"
has "$T/out" "result fail"
has "$T/out" "attempt 1: fail"
has "$T/out" "attempt 2: fail"
expect_exit 0 mx resume
out=$(mxj retry "r${r8[0]}")
[ "$(jqv "$out" '.requeued')" = 1 ] || fail "retry r${r8[0]}: $out"
wait_until "r${r8[0]} to run again" run_in_state "${r8[0]}" done
[ "$(run_field "${r8[0]}" '.run.attempts')" = 2 ] || fail "r${r8[0]} attempts"
[ "$(run_field "${r8[0]}" '[.run.attempt_history[] | "\(.n):\(.result):\([.levels[].verdict] | join("+"))"] | join(",")')" = \
        "1:pass:pass+skipped,2:pass:pass+skipped" ] || fail "history of r${r8[0]}: $(run_field "${r8[0]}" '.run.attempt_history')"
ok "retry requeued the failed 2 of 5, --all all 5, a queued run refused, one run retried"

step="list"
expect_exit 0 mx list
has "$T/out" "JOB  USER"
has "$T/out" "fast"
all=$(mxj list --state all --limit 1000)
n=$(jq '.jobs | length' <<<"$all")
[ "$n" = 8 ] || fail "list --state all: $n jobs, want 8"
jq -e '[.jobs[].id] == ([.jobs[].id] | sort | reverse)' >/dev/null <<<"$all" || fail "not newest first"
[ "$(mxj list --state cancelled | jq -c '[.jobs[].id] | sort')" = "[$j4,$j5]" ] || fail "cancelled jobs"
# A retry un-cancels a job (job $j8).
[ "$(mxj list --state done | jq -c '[.jobs[].id] | sort')" = "[$j1,$j2,$j3,$j6,$j7,$j8]" ] ||
        fail "done jobs"
[ "$(mxj list --state queued | jq '.jobs | length')" = 0 ] || fail "queued jobs left"
[ "$(mxj list --mine --state all | jq '[.jobs[].uid] | unique | join(",")' -r)" = 0 ] || fail "--mine"
expect_exit 0 mx list --state all --limit 3
has "$T/out" "(more: mxmatrix list --before 6)"
seen=()
before=""
for page in 1 2 3 4; do
        out=$(mxj list --state all --limit 3 ${before:+--before "$before"})
        mapfile -t ids < <(jq '.jobs[].id' <<<"$out")
        seen+=("${ids[@]}")
        [ "$(jq '.more' <<<"$out")" = true ] || break
        before=${ids[-1]}
done
[ "$page" = 3 ] || fail "paging took $page pages, want 3"
[ "${seen[*]}" = "8 7 6 5 4 3 2 1" ] || fail "pages gave ${seen[*]}"
ok "states, --mine, newest first, 3 pages with --before"

step="reload"
expect_exit 0 mx reload
has "$T/out" "reloaded $MXD_MATRIX"
expect_exit 3 mx submit feature=fast mode=quick --dry-run
# A queued run keeps its snapshot: queue one, then change the command and reload.
expect_exit 0 mx pause
j9=$(submit feature=fast mode=ok)
quick='{ "name": "quick", "product": false, "env": { "MODE": "ok" } },'
sed -e 's/run in {run_dir}/reloaded run in {run_dir}/' \
        -e "s/\"name\": \"ok\", \"env\": { \"MODE\": \"ok\" } },/&\n$quick/" \
        "$MX_FIXTURE_MATRIX" >"$MXD_MATRIX"
grep -q quick "$MXD_MATRIX" || fail "the test's matrix edit did not apply"
echo '{ "matrix": 1, "name": ' >"$T/broken.json"
cp "$MXD_MATRIX" "$T/good.json"
cp "$T/broken.json" "$MXD_MATRIX"
expect_exit 3 mx reload
has "$T/err" "matrix-error"
has "$T/err" "$MXD_MATRIX"
expect_exit 0 mx status
has "$T/out" "the last reload failed; the previous version is in use"
# ... and it is: submissions still plan with it.
expect_exit 0 mx submit --dry-run feature=fast
cp "$T/good.json" "$MXD_MATRIX"
out=$(mxj reload)
[ "$(jqv "$out" '.matrix')" = "$MXD_MATRIX" ] || fail "reload: $out"
expect_exit 0 mx submit feature=fast mode=quick --dry-run
has "$T/out" "mode=quick,speed=fast"
j10=$(submit feature=fast mode=ok)
expect_exit 0 mx resume
expect_exit 0 follow_job "$j9"
expect_exit 0 follow_job "$j10"
expect_exit 0 mx logs "r$(job_field "$j9" '.runs[0].id')"
lacks "$T/out" "reloaded run in"
has "$T/out" "run in $MXD_STATE"
expect_exit 0 mx logs "r$(job_field "$j10" '.runs[0].id')"
has "$T/out" "reloaded run in $MXD_STATE"
ok "reload takes a new value, refuses a broken file (exit 3), queued runs keep their snapshot"

step="not found"
expect_exit 5 mx show 999
has "$T/err" "not-found"
expect_exit 5 mx show r999
expect_exit 5 mx cancel 999
expect_exit 5 mx retry r999
expect_exit 5 mx logs r999
expect_exit 5 mx follow 999
ok "unknown jobs and runs exit 5"

step="permission denied"
# The socket is 0660 root:root: another uid cannot connect (more in t-permissions.sh).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
        install -m 0755 "$MX_BIN" "$T/mxmatrix-copy"
        expect_exit 4 setpriv --reuid=65534 --regid=65534 --clear-groups "$T/mxmatrix-copy" status
        has "$T/err" "permission denied on $MXMATRIX_SOCKET"
        ok "uid 65534 gets exit 4 with the reason"
else
        ok "skipped: needs root and setpriv"
fi

step="follow ends when its runs are cancelled one by one"
expect_exit 0 mx pause
jc=$(submit feature=fast mode=ok)
read -r rc1 rc2 < <(job_runs "$jc" | tr '\n' ' ')
timeout "$MX_WAIT_S" "$MX_BIN" follow "$jc" >"$T/follow-c" 2>&1 &
follow_pid=$!
follow_started() { grep -q "job accepted" "$T/follow-c"; }
wait_until "follow to print job $jc's first event" follow_started
expect_exit 0 mx cancel "r$rc1"
expect_exit 0 mx cancel "r$rc2"
wait "$follow_pid"
st=$?
[ "$st" = 1 ] || fail "follow $jc exited $st, want 1 (124: it still waited after its last run was cancelled)"
has "$T/follow-c" "run cancelled"
has "$T/follow-c" "job $jc done: 2/2 runs: 2 cancelled"
has "$T/follow-c" "; 0 of 2 runs"
expect_exit 0 mx resume
ok "follow $jc ended when r$rc2, its last run, was cancelled by number"

step="one vocabulary: status, list, show, follow, retry"
# The same matrix with mode=crash marked known-incompatible: its runs end xfail.
jq '.constraints = {"known_incompatible": [{"when": {"mode": "crash"}, "expect": "crash",
        "reason": "crashes on purpose"}]}' "$MX_FIXTURE_MATRIX" >"$T/xfail.json"
jx=$(submit feature=fast mode=crash --matrix "$T/xfail.json")
expect_exit 0 follow_job "$jx"
has "$T/follow" "job $jx done: 2/2 runs: 2 xfail, "
has "$T/follow" "; 2 of 2 runs as expected (pass or xfail)"
expect_exit 0 mx list
row=$(grep -E "^$jx +" "$T/out") || fail "no row for job $jx in list"
[[ $row == *"2 xfail" ]] || fail "list says '$row' for job $jx, want its RESULTS '2 xfail'"
lacks "$T/out" "PASS"
expect_exit 0 mx show "$jx"
has "$T/out" "runs: 2 xfail"
expect_exit 0 mx status
has "$T/out" "2 xfail"
[ "$(mxj list | jq ".jobs[] | select(.id == $jx) | .counts.xfail")" = 2 ] || fail "list --json counts of $jx"
# Nothing to retry: say why, in the same words, and exit 1 (invalid-state).
expect_exit 1 mx retry "$jx"
has "$T/err" "invalid-state: job $jx has no finished run that failed (2 xfail); retry $jx --all requeues every finished run"
lacks "$T/out" "requeued 0"
ok "job $jx: 2 xfail in follow, list, show, status and retry's refusal"

step="show pages through a large job"
# 35 x 35 = 1225 runs: more than the daemon's page of 1000, so the client fetches two.
jq -n '{matrix: 1, name: "pages", target: {profile: "command", command: ["true"]},
        axes: [{name: "a", values: [range(35) | {name: "a\(.)"}]}, {name: "b", values: [range(35) | {name: "b\(.)"}]}],
        baseline: {a: "a0", b: "b0"},
        features: [{name: "sweep", priority: 1, set: {}, hypothesis: "h",
                    criteria: [{metric: "tg32_tps", min_gain_pct: 1}], status: "in-progress"}]}' >"$T/pages.json"
expect_exit 0 mx pause
out=$(mxj submit sweep --strategy full --matrix "$T/pages.json")
jp=$(jqv "$out" '.job')
[ "$(jq '[.total, (.runs | length), .more] | map(tostring) | join(",")' -r <<<"$out")" = "1225,1000,true" ] ||
        fail "submit reply of job $jp: $(jq -c '{total, more, n: (.runs | length)}' <<<"$out")"
expect_exit 0 mx submit sweep --strategy full --matrix "$T/pages.json" --dry-run
all=$(mxj show "$jp")
[ "$(jq '.runs | length' <<<"$all")" = 1225 ] || fail "show $jp gave $(jq '.runs | length' <<<"$all") runs"
jq -e '[.runs[].seq] == [range(1; 1226)] and .more == false' >/dev/null <<<"$all" || fail "show $jp: order, more"
expect_exit 0 mx show "$jp"
[ "$(grep -cE '^r[0-9]+ ' "$T/out")" = 1225 ] || fail "show $jp printed $(grep -cE '^r[0-9]+ ' "$T/out") runs"
has "$T/out" "runs: 1225 queued"
page=$(mxj show "$jp" --limit 100)
[ "$(jq '.runs | length' <<<"$page")" = 100 ] || fail "--limit 100: $(jq '.runs | length' <<<"$page")"
r100=$(jq '.runs[-1].id' <<<"$page")
[ "$(jq '.after' <<<"$page")" = "$r100" ] && [ "$(jq '.more' <<<"$page")" = true ] || fail "--limit 100: after, more"
expect_exit 0 mx show "$jp" --limit 100
has "$T/out" "(more: mxmatrix show $jp --after r$r100 --limit 100)"
rest=$(mxj show "$jp" --after "r$r100")
[ "$(jq '.runs | length' <<<"$rest")" = 1125 ] || fail "--after r$r100: $(jq '.runs | length' <<<"$rest") runs"
[ "$(jq '.runs[0].id' <<<"$rest")" = $((r100 + 1)) ] || fail "--after r$r100 starts at r$(jq '.runs[0].id' <<<"$rest")"
expect_exit 2 mx show "$jp" --after "r$r3"
has "$T/err" "--after r$r3 is not a run of job $jp"
expect_exit 2 mx show "r$r100" --limit 3
expect_exit 0 mx cancel "$jp"
expect_exit 0 mx resume
ok "job $jp: 1225 runs over two pages, --limit 100, --after r$r100, the submit reply's first 1000"

step="stop"
mxd_stop TERM
[ "$MXD_STATUS" = 0 ] || fail "SIGTERM: exit status $MXD_STATUS"
[ ! -e "$MXMATRIX_SOCKET" ] || fail "the daemon left its socket behind"
expect_exit 69 mx status
ok "exit 0 on SIGTERM, socket removed, client exits 69"
