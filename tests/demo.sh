#!/usr/bin/env bash
# The demo: a real sweep with the real daemon and client.
#
# Builds mxmatrix, starts a private mxmatrixd (temporary socket, database and
# state directory) on matrix/demo-sim.json, whose target is mxsim, the
# simulated GB10 vLLM in tests/sim, then submits feature=cutlass as a user
# would and follows it, with levels L1 to L3. It shows every run's outcome with
# its L1 (smoke), L1.5 (kernel gate), L2 (correctness) and L3 (stress)
# verdicts, one crash in detail with its log evidence, the injected L2 and L3
# failures (MXSIM_FAULT_RULES in the demo matrix) with their evidence, and
# checks that nothing the runs started is still running. Exit status 0 when the
# sweep came out as the seeds predict.
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

echo "== mxmatrix submit feature=cutlass levels=L1-L3"
mx submit feature=cutlass levels=L1-L3
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
        run=$(awk -v lv="$lv" '$0 ~ lv"=fail" { print $1; exit }' "$work/show")
        echo "== mxmatrix show $run --json: the $lv failure and its evidence"
        mx --json show "$run" | jq -c --arg lv "$lv" '.run.levels[] | select(.level == $lv) |
                {level, verdict, message, artifacts: [.artifacts[]?.path]}' | tee -a "$work/failures"
        echo
done
echo "== mxmatrix status"
mx status

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
[ "$want_pass" -ge 5 ] && [ "$want_xfail" -eq 5 ]
