#!/usr/bin/env bash
# matrix/demo-sim.json is matrix/mxfp4-gb10.json with the target pointed at mxsim: its axes,
# baseline, features, constraints, hard constraints and reference must stay identical, or the demo stops showing the
# shipped matrix. Both must load, and the demo's target must be mxsim with a kernel report.
set -euo pipefail
src=${MX_SOURCE_DIR:?}
mx=${MX_BUILD_DIR:?}/client/mxmatrix
command -v jq >/dev/null || { echo "t-demo-matrix: jq missing (tests/deps.sh installs it)"; exit 1; }
fail() { echo "t-demo-matrix: FAIL: $*"; exit 1; }

for f in mxfp4-gb10 demo-sim; do
        "$mx" matrix check "$src/matrix/$f.json" >/dev/null || fail "$f.json does not load"
done
for key in axes baseline features constraints hard_constraints reference; do
        a=$(jq -S ".$key" "$src/matrix/mxfp4-gb10.json")
        b=$(jq -S ".$key" "$src/matrix/demo-sim.json")
        [ "$a" = "$b" ] || fail "'$key' differs between mxfp4-gb10.json and demo-sim.json"
done
[ "$(jq -r '.target.command[0]' "$src/matrix/demo-sim.json")" = mxsim ] || fail "the demo target is not mxsim"
# The shipped command runs vllm under nsys; compare what follows "serve".
after_serve='.target.command | .[(index(["serve"]) + 1):]'
[ "$(jq -c "$after_serve" "$src/matrix/demo-sim.json")" = "$(jq -c "$after_serve" "$src/matrix/mxfp4-gb10.json")" ] ||
        fail "the demo's server flags differ from the shipped baseline command"
# Both carry a kernel report for L1.5, and matrix check finds nothing that can never be checked.
jq -e '.target.profiler.report' "$src/matrix/mxfp4-gb10.json" >/dev/null || fail "the shipped matrix has no profiler"
for f in mxfp4-gb10 demo-sim vllm-upstream-gb10; do
        "$mx" matrix check "$src/matrix/$f.json" 2>"${TMPDIR:-/tmp}/t-demo-matrix.$$" >/dev/null
        if [ -s "${TMPDIR:-/tmp}/t-demo-matrix.$$" ]; then
                cat "${TMPDIR:-/tmp}/t-demo-matrix.$$"
                rm -f "${TMPDIR:-/tmp}/t-demo-matrix.$$"
                fail "$f.json: matrix check warns"
        fi
        rm -f "${TMPDIR:-/tmp}/t-demo-matrix.$$"
done
jq -e '.target.profiler.report' "$src/matrix/demo-sim.json" >/dev/null || fail "no kernel report for L1.5"
# The same plan for feature=cutlass (the README demo), run for run.
diff <("$mx" --json plan "$src/matrix/mxfp4-gb10.json" feature=cutlass | jq -c '[.runs[] | .key, .reasons]') \
     <("$mx" --json plan "$src/matrix/demo-sim.json" feature=cutlass | jq -c '[.runs[] | .key, .reasons]') ||
        fail "plans differ"
echo "t-demo-matrix: ok"
