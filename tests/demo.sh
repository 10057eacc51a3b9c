#!/usr/bin/env bash
# The demo: a real sweep with the real daemon and client.
#
# Builds mxmatrix, starts a private mxmatrixd (temporary socket, database and
# state directory) on matrix/demo-sim.json, whose target is mxsim, the
# simulated GB10 vLLM in tests/sim, then submits feature=cutlass as a user
# would (no levels word: the protocol, L1 to L5) and follows it. It shows every run's outcome with
# its L1 (smoke), L1.5 (kernel gate), L2 (correctness), L3 (stress), L4
# (benchmark) and L5 (regression) verdicts, one crash in detail with its log
# evidence, the injected L2 and L3 failures (MXSIM_FAULT_RULES in the demo
# matrix) with their evidence, every run's L4 numbers against mxsim's token
# schedule (within 1 %), seed 002's Results block, L5's verdicts against the
# baseline (activation=fp8 is made a real regression by MXSIM_SPEED_RULES),
# and checks that nothing the runs started is still running. It ends by
# writing the seeds' documents for the sweep (mxmatrix report all:
# BENCHMARK_RESULTS.md, FEATURE_MATRIX.md, the test log, JSON, CSV, JUnit, the
# HTML page) into build/demo-reports (or $MX_DEMO_REPORTS), with a screenshot
# of the page (report.png) when headless Chromium is there, and prints where
# they are. Exit status 0 when the sweep came out as the seeds predict.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tests/deps.sh
echo "== building"
cmake -S . -B build -DMX_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

work=$(mktemp -d /tmp/mxmatrix-demo.XXXXXX)
daemon_pid=
cleanup() {
        [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT

export MXMATRIX_SOCKET=$work/control.sock
mx() { build/client/mxmatrix "$@"; }

echo "== starting mxmatrixd (state in $work/state, log in $work/daemon.log)"
PATH=$top/build/tests/sim:$PATH build/daemon/mxmatrixd --foreground --socket "$MXMATRIX_SOCKET" \
        --state-dir "$work/state" --matrix matrix/demo-sim.json 2>"$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$MXMATRIX_SOCKET" ] && break; sleep 0.1; done

# No levels word: the matrix's levels.run, the protocol (L1 to L5), as for any submission.
echo "== mxmatrix submit feature=cutlass"
mx submit feature=cutlass
echo
echo "== mxmatrix follow 1 (events as the runs go)"
mx follow 1 || true
echo
echo "== mxmatrix show 1"
mx show 1 | tee "$work/show"
echo
crash=$(awk '/illegal-instruction/ { print $1; exit }' "$work/show")
echo "== mxmatrix show $crash (a known issue of seed 003: it crashes, as expected)"
mx show "$crash"
echo
echo "== mxmatrix logs $crash (the evidence)"
mx logs "$crash" | grep -E "Using '|backend=|illegal instruction|died unexpectedly|EngineDeadError|\[mxmatrixd\]" | head -12
echo
for lv in L2 L3; do
        run=$(mx --json show 1 | jq -r --arg lv "$lv" \
                '[.summary.runs[] | select(.verdicts[$lv] == "fail") | "r\(.run)"][0] // empty')
        echo "== mxmatrix show $run --json: the $lv failure and its evidence"
        mx --json show "$run" | jq -c --arg lv "$lv" '.run.levels[] | select(.level == $lv) |
                {level, verdict, message, artifacts: [.artifacts[]?.path]}' | tee -a "$work/failures"
        echo
done
# L4 and L5 of every run: the numbers against mxsim's schedule (README "Speed": 250 t/s x the
# configuration's speed, prefill 10000 t/s from the demo matrix), and the regression verdicts.
# Each from the run's result attempt: L5's confirmation starts (an undecided comparison starts the
# run and its reference again, L1/L1.5/L4 only) are later attempts of the same runs, the baseline's too.
for r in $(mx --json show 1 | jq -r '.runs[].id'); do
        mx --json show "r$r" | jq -c '.run as $run |
                ([$run.attempt_history[] | select(.n == $run.result_attempt and .confirm_of == null)][0] // {}) as $a |
                ($a.levels // []) as $lv | ($lv | map({(.level): .}) | add // {}) as $by |
                {run: $run.id, config: $run.config, log: $a.log, L3: $by.L3.verdict, L4: $by.L4.verdict,
                 tg32: ($by.L4.metrics.tests // [] | map(select(.test == "tg32"))[0].tps.mean),
                 pp2048: ($by.L4.metrics.tests // [] | map(select(.test == "pp2048"))[0].tps.mean),
                 arts: [($by.L4.artifacts // [])[].path], L5: $by.L5.verdict, L5msg: $by.L5.message,
                 rule: $by.L5.metrics.rule,
                 attempts: [$run.attempt_history[] | {id, n, confirm_of, levels: [.levels[].level]}]}'
done >"$work/l45"
echo "== L4 and L5 of every run (tg32 and pp2048 in t/s; expected from mxsim's schedule)"
# confirm_of names the attempt (its id) whose L5 a confirmation start serves, maybe another run's.
jq -rs '(map(.run as $r | .attempts[] | {(.id | tostring): "r\($r) attempt \(.n)"}) | add) as $aid | .[] |
        (.config.kernel // "marlin") as $k | (.config.activation // "bf16") as $act |
        ((if $k == "cutlass" then 1.22 else 1 end) *
         (if $k == "marlin" then 1 else ({"bf16": 1, "mxfp8": 1.08, "mxfp4": 1.10, "fp8": 0.735}[$act]) end) *
         (if .config.graphs == "off" then 0.82 else 1 end)) as $speed |
        "r\(.run) \(.config | to_entries | map("\(.key)=\(.value)") | join(","))\n    L4 \(.L4 // "-"): " +
        (if .tg32 then "tg32 \(.tg32 * 100 | round / 100) (schedule \(250 * $speed * 100 | round / 100)), " +
                "pp2048 \(.pp2048 | round) (schedule 10000)" else "no numbers" end) +
        "\n    L5 \(.L5 // "-"): \(.L5msg // "")" +
        ([.attempts[] | select(.confirm_of != null) | "\n    attempt \(.n): an L5 confirmation start " +
                "(\(.levels | join(", "))) for the L5 of \($aid[.confirm_of | tostring] // "attempt id \(.confirm_of)")"] |
         join(""))' "$work/l45"
echo
base=$(jq -r 'select(.config.kernel == "marlin") | .run' "$work/l45" | head -1)
cut=$(jq -r 'select(.config.kernel == "cutlass" and .config.activation == "bf16" and .config.graphs == "on" and
        .config.tile == "auto" and .config.sinks == "off" and .config.spec == "off") | .run' "$work/l45" | head -1)
echo "== mxmatrix show r$cut (the L4 table)"
mx show "r$cut" | sed -n '/^  L4 /,/startup/p'
echo
echo "== seed 002's Results block of r$cut (l4-results.yaml)"
cat "$(dirname "$(jq -r "select(.run == $cut) | .log" "$work/l45")")/l4-results.yaml"
echo
echo "== mxmatrix status"
mx status
echo
# The seeds' documents, written from the runs (kept after the demo, unlike its state directory).
reports=${MX_DEMO_REPORTS:-$top/build/demo-reports}
echo "== mxmatrix report all 1 -o $reports"
rm -rf "$reports"
mx report all 1 -o "$reports"
# docs/report-demo.png is this screenshot of the demo's own page.
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$chromium" ]; then
        HOME=$work XDG_RUNTIME_DIR=$work "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
                --user-data-dir="$work/chromium" --hide-scrollbars --window-size=1150,1700 \
                --screenshot="$reports/report.png" "file://$reports/report.html" >/dev/null 2>&1 &&
                echo "wrote $reports/report.png (headless Chromium)" || echo "no screenshot: chromium failed"
fi
echo
echo "== Where decode time goes, and seed 001's decision rules on it ($reports/analysis/VLLM_BASELINE_ANALYSIS.md)"
mx gates | sed -n '/^decision rules/,$p'
echo
echo "== Known Issues by Configuration, as the runs found them ($reports/FEATURE_MATRIX.md)"
sed -n '/^## Known Issues by Configuration/,$p' "$reports/FEATURE_MATRIX.md" | grep -E '^### |^- \*\*(Issue|Found from the runs|Cannot separate|Observed)' | cut -c1-160

kill "$daemon_pid"
wait "$daemon_pid" || true
daemon_pid=
# Ours only: processes whose working directory is in this demo's state (another session may run mxsim too).
left=
for p in $(pgrep mxsim || true) $(pgrep -f VLLM::EngineCor || true); do
        case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$work"/*) left="$left $p" ;; esac
done
echo
if [ -n "$left" ]; then
        echo "FAIL: processes left running: $left"
        exit 1
fi
echo "nothing left running"

# The seeds predict: baseline and CUTLASS pass; tiles 64x128, sinks and CUDA graphs + Eagle3 fail as
# known (xfail); graphs off passes. Injected: activation=mxfp8 fails L2 (seed drift), tile=128x128
# fails L3 (memory growth).
want_pass=$(grep -c " pass " "$work/show" || true)
want_xfail=$(grep -c " xfail:" "$work/show" || true)
echo "runs passed: $want_pass, failed as expected (known issues): $want_xfail"
grep -q '"level":"L2","verdict":"fail".*after other traffic.*L2-evidence/' "$work/failures" || { echo "FAIL: no L2 failure"; exit 1; }
grep -q '"level":"L3","verdict":"fail".*memory grew' "$work/failures" || { echo "FAIL: no L3 failure"; exit 1; }
# L4: every run that passed L3 measured, within 1 % of mxsim's schedule, with its Results block.
bad=$(jq -r '(.config.kernel // "marlin") as $k | (.config.activation // "bf16") as $act |
        ((if $k == "cutlass" then 1.22 else 1 end) *
         (if $k == "marlin" then 1 else ({"bf16": 1, "mxfp8": 1.08, "mxfp4": 1.10, "fp8": 0.735}[$act]) end) *
         (if .config.graphs == "off" then 0.82 else 1 end)) as $speed |
        select(.L3 == "pass") |
        select(.L4 != "pass" or .tg32 == null or ((.tg32 / (250 * $speed) - 1) | fabs) > 0.01 or
               ((.pp2048 / 10000 - 1) | fabs) > 0.01 or (.arts | index("l4-results.yaml")) == null) |
        "r\(.run): L4 \(.L4) tg32 \(.tg32) pp2048 \(.pp2048) (speed \($speed))"' "$work/l45")
[ -z "$bad" ] || { echo "FAIL: L4 numbers off mxsim's schedule (or missing):"; echo "$bad"; exit 1; }
measured=$(jq -r 'select(.L4 == "pass") | .run' "$work/l45" | wc -l)
# L5: the baseline has nothing earlier to compare with; CUTLASS is faster (no regression); fp8 is a
# regression, decided on server starts (the unit: N vs M starts, p(beyond) under alpha).
jq -se "map(select(.run == $base))[0] | .L5 == \"skipped\" and (.L5msg | test(\"^this run is the baseline\"))" \
        "$work/l45" >/dev/null || { echo "FAIL: baseline L5: $(jq -sc "map(select(.run == $base))[0] | {L5, L5msg}" "$work/l45")"; exit 1; }
jq -se "map(select(.run == $cut))[0].L5 == \"pass\"" "$work/l45" >/dev/null ||
        { echo "FAIL: CUTLASS L5: $(jq -sc "map(select(.run == $cut))[0] | {L5, L5msg}" "$work/l45")"; exit 1; }
jq -se 'map(select(.config.activation == "fp8"))[0] | .L5 == "fail" and (.L5msg | test("regression: tg32")) and
        (.rule | test("^tg32: [0-9]+ vs [0-9]+ starts: .* p\\(beyond\\)=[^ ]+ < "))' "$work/l45" >/dev/null ||
        { echo "FAIL: no L5 regression for fp8: $(jq -sc 'map(select(.config.activation == "fp8"))[0] | {L5, L5msg, rule}' "$work/l45")"; exit 1; }
echo "L4 measured $measured runs within 1 % of the schedule; L5: fp8 is a regression against the baseline"
echo "reports: $reports (BENCHMARK_RESULTS.md, FEATURE_MATRIX.md, TEST_LOGS/, report.json, report.csv, junit.xml," \
        "report.html)"
[ -s "$reports/report.html" ] || { echo "FAIL: no report.html"; exit 1; }
[ "$want_pass" -ge 4 ] && [ "$want_xfail" -eq 5 ]
