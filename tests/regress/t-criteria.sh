#!/usr/bin/env bash
# Success criteria (seed 000) in show JOB and gates between phases (seed 001) in
# mxmatrix gates, judged from a job's stored runs. A private daemon runs the
# command matrix with three features: P1 "fast" (tg32 >= +10 % and startup <=
# 60 s, seed 000's hard constraints), P2 "next" held back by P1's tg32 >= 40
# and its L3, P3 "last" held back by P2's L2. The command target measures
# nothing, so once P1's job has run, the level rows L4 and L3 would have written
# are stored with sqlite3 while the daemon is stopped (the bench engine's
# result shape, loadgen/bench.h), and the restarted daemon must judge them:
# PASS, then FAIL on a TTFT regression, then incomplete on an invalid L4;
# gates open, held and unknown with the gate, the number and the run named.
# Exit 0 pass, 1 fail, 77 skip.
set -u
source "$(dirname "$0")/lib.sh"

command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (tests/deps.sh)"

step="matrix"
MXD_MATRIX=$T/matrix.json
jq '.features = [
        .features[0] + {criteria: [{metric: "tg32_tps", target: ">= +10 %"}, {metric: "startup_s", target: "<= 60"}]},
        {name: "next", priority: 2, set: {}, hypothesis: "h", criteria: [{metric: "crashes", max: 0}],
         status: "not-started", depends_on: ["fast"],
         gate: [{metric: "tg32_tps", op: ">=", value: 40, note: "tg32 >= 40 before P2"}, {level: "L3"}]},
        {name: "last", priority: 3, set: {}, hypothesis: "h", criteria: [{metric: "crashes", max: 0}],
         status: "not-started", depends_on: ["next"], gate: [{level: "L2"}]}]' \
        "$MX_FIXTURE_MATRIX" >"$MXD_MATRIX" || fail "jq"
expect_exit 0 mx matrix check "$MXD_MATRIX"
ok "a matrix with criteria and gates checks"

step="nothing measured"
mxd_start
out=$(mxj gates)
[ "$(jq -r '.features[0].verdict' <<<"$out")" = open ] || fail "P1 has no gate, so it may start: $out"
[ "$(jq -r '.features[1].verdict' <<<"$out")" = unknown ] || fail "P2's gate is not judged yet: $out"
[ "$(jq -r '.features[1].gates[0].why' <<<"$out")" = "no run measured yet" ] || fail "no reason: $out"
expect_exit 0 mx gates
has "$T/out" "P2   next"
has "$T/out" "not yet known"
has "$T/out" "P1 tg32_tps >= 40: unknown: no run measured yet"
ok "before any run: P1 may start, P2 and P3 not yet known"

step="run P1's job"
job=$(submit feature=fast mode=ok)
follow_job "$job" || fail "follow $job: $(cat "$T/follow")"
out=$(mxj show "$job")
[ "$(jq -r '.criteria.overall' <<<"$out")" = incomplete ] || fail "no L4 ran, yet: $(jq -c .criteria <<<"$out")"
jq -e '.criteria.missing[] | select(startswith("tg32_tps: actual: r"))' <<<"$out" >/dev/null ||
        fail "the missing tg32 is not named: $(jq -c .criteria.missing <<<"$out")"
on=$(jq -r '.criteria.compared.on' <<<"$out")
off=$(jq -r '.criteria.compared.off' <<<"$out")
[ "$on" != "$off" ] && [ "$on" != null ] && [ "$off" != null ] || fail "compared runs: $on $off"
ok "job $job: incomplete without L4, comparing r$on (feature on) with r$off (off)"
mxd_stop

# level_rows RUN TG32 TTFT50 MEM_GB READY VALID: store the L4 and L3 a run's latest attempt would have
# (L4's metrics: the engine's result document, ready_s, the memory summary in bytes, valid).
DB=$MXD_STATE/queue.db
level_rows() {
        local att l4
        att=$(sqlite3 "$DB" "SELECT a.id FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.id = $1 AND a.n = r.attempts") ||
                fail "sqlite3"
        [ -n "$att" ] || fail "r$1 has no attempt"
        l4=$(jq -nc --argjson tg "$2" --argjson ttft "$3" --argjson mem "$4" --argjson ready "$5" --argjson valid "$6" '{
                tool: "mxmatrix bench", measured: 30, failed: 0,
                results: {throughput: {pp2048_tps: 4800.5, tg32_tps: $tg, tg128_tps: ($tg - 1)},
                          latency: {ttft_p50_ms: $ttft, ttft_p99_ms: ($ttft * 1.5), tpot_p50_ms: 30, tpot_p99_ms: 35}},
                memory: {figure: "gpu", peak: ($mem * 1073741824 | floor), samples: 12},
                ready_s: $ready, valid: $valid, kernel_gate: "pass"}')
        sqlite3 "$DB" "DELETE FROM levels WHERE attempt_id = $att AND level IN ('L3', 'L4');
                INSERT INTO levels (attempt_id, level, verdict, started_at, finished_at, metrics, message)
                VALUES ($att, 'L4', 'pass', 1, 2, '$l4', NULL),
                       ($att, 'L3', 'pass', 1, 2, '{\"requests\": 112, \"failed_checks\": 0, \"failures\": []}', NULL);" ||
                fail "sqlite3 insert"
}

step="PASS"
level_rows "$off" 29.26 100 60 70 true
level_rows "$on" 44 102 61.5 55 true
mxd_start
out=$(mxj show "$job")
c=$(jq -c .criteria <<<"$out")
[ "$(jq -r .overall <<<"$c")" = pass ] || fail "want pass: $c"
[ "$(jq -r '.rows[0].pass' <<<"$c")" = pass ] || fail "tg32 row: $c"
[ "$(jq -r '.rows[0].baseline' <<<"$c")" = 29.26 ] || fail "tg32 baseline: $c"
[ "$(jq -r '.rows[0].actual' <<<"$c")" = 44 ] || fail "tg32 actual: $c"
[ "$(jq -r '.rows[0].target' <<<"$c")" = ">= +10 %" ] || fail "tg32 target: $c"
[ "$(jq -r '.rows[1].actual' <<<"$c")" = 55 ] || fail "startup from ready_s: $c"
[ "$(jq -r '[.constraints[].metric] | join(",")' <<<"$c")" = ttft_p50_ms,memory_gb,crashes ] ||
        fail "seed 000's hard constraints: $c"
[ "$(jq -r '[.constraints[].pass] | unique | join(",")' <<<"$c")" = pass ] || fail "constraints: $c"
expect_exit 0 mx show "$job"
has "$T/out" "success criteria of fast (P1), feature on r$on against off r$off on the baseline"
has "$T/out" "tg32_tps (tok/s)"
has "$T/out" "29.26 (r$off)"
has "$T/out" ">= +10 % (32.19)"
has "$T/out" "44 (r$on)"
has "$T/out" "hard constraints:"
has "$T/out" "overall: PASS"
ok "job $job: tg32 44 against 29.26, TTFT +2 %, memory +1.5 GB, no crash: PASS"

out=$(mxj gates)
[ "$(jq -r '.features[1].verdict' <<<"$out")" = open ] || fail "P2 may start: $out"
[ "$(jq -r '.features[1].gates[0].run' <<<"$out")" = "$on" ] || fail "the run that decided: $out"
[ "$(jq -r '.features[1].gates[0].actual' <<<"$out")" = 44 ] || fail "the number: $out"
[ "$(jq -r '.features[2].verdict' <<<"$out")" = unknown ] || fail "P3: $out"
expect_exit 0 mx gates
has "$T/out" "may start"
has "$T/out" "P1 tg32_tps >= 40: pass, 44 in r$on (job $job)"
has "$T/out" "(tg32 >= 40 before P2)"
ok "gates: P2 may start (r$on: 44 >= 40, L3 passed), P3 not yet known"
mxd_stop

step="FAIL"
level_rows "$on" 38 105 61.5 55 true
mxd_start
out=$(mxj show "$job")
c=$(jq -c .criteria <<<"$out")
[ "$(jq -r .overall <<<"$c")" = fail ] || fail "want fail: $c"
[ "$(jq -r '.constraints[0].pass' <<<"$c")" = fail ] || fail "TTFT +5 % passes: $c"
expect_exit 0 mx show "$job"
has "$T/out" "overall: FAIL"
out=$(mxj gates)
[ "$(jq -r '.features[1].verdict' <<<"$out")" = held ] || fail "P2 is not held back: $out"
[ "$(jq -r '.features[1].may_start' <<<"$out")" = false ] || fail "may_start: $out"
expect_exit 0 mx gates
has "$T/out" "held back"
has "$T/out" "P1 tg32_tps >= 40: fail, 38 in r$on (job $job): tg32_tps is 38, the gate wants >= 40"
ok "TTFT +5 %: FAIL; tg32 38: P2 held back, naming the gate, the number and the run"
mxd_stop

step="invalid L4"
level_rows "$on" 60 100 60 55 false
mxd_start
out=$(mxj show "$job")
c=$(jq -c .criteria <<<"$out")
[ "$(jq -r .overall <<<"$c")" = incomplete ] || fail "an invalid L4 passed: $c"
[ "$(jq -r '.rows[0].pass' <<<"$c")" = invalid ] || fail "tg32 row: $c"
out=$(mxj gates)
[ "$(jq -r '.features[1].gates[0].verdict' <<<"$out")" = unknown ] || fail "an invalid L4 decided a gate: $out"
jq -e '.features[1].gates[0].why | contains("is marked invalid")' <<<"$out" >/dev/null || fail "why: $out"
ok "an L4 marked invalid never passes: incomplete, and the gate stays unknown"

step="a job of no feature"
job2=$(submit feature=fail)
follow_job "$job2" || true # its runs fail (mode=fail): follow says so
out=$(mxj show "$job2")
[ "$(jq -r '.criteria.overall' <<<"$out")" = none ] || fail "criteria for a job of no feature: $out"
ok "a job submitted for an axis value no feature sets has no criteria ('none', with why)"
