#!/usr/bin/env bash
# matrix/demo-sim.json is matrix/mxfp4-gb10.json with the target pointed at mxsim: its axes,
# baseline, features and constraints must stay identical, or the demo stops showing the
# shipped matrix. Both must load, and the demo's target must be mxsim with a kernel report.
set -euo pipefail
src=${MX_SOURCE_DIR:?}
mx=${MX_BUILD_DIR:?}/client/mxmatrix
command -v jq >/dev/null || { echo "t-demo-matrix: jq missing (tests/deps.sh installs it)"; exit 1; }
fail() { echo "t-demo-matrix: FAIL: $*"; exit 1; }

for f in mxfp4-gb10 demo-sim; do
        "$mx" matrix check "$src/matrix/$f.json" >/dev/null || fail "$f.json does not load"
done
for key in axes baseline features constraints; do
        a=$(jq -S ".$key" "$src/matrix/mxfp4-gb10.json")
        b=$(jq -S ".$key" "$src/matrix/demo-sim.json")
        [ "$a" = "$b" ] || fail "'$key' differs between mxfp4-gb10.json and demo-sim.json"
done
[ "$(jq -r '.target.command[0]' "$src/matrix/demo-sim.json")" = mxsim ] || fail "the demo target is not mxsim"
[ "$(jq -r '.target.command[2:]' "$src/matrix/demo-sim.json")" = "$(jq -r '.target.command[2:]' "$src/matrix/mxfp4-gb10.json")" ] ||
        fail "the demo's server flags differ from the shipped baseline command"
jq -e '.target.profiler.report' "$src/matrix/demo-sim.json" >/dev/null || fail "no kernel report for L1.5"
# The same plan for feature=cutlass (the README demo), run for run.
diff <("$mx" --json plan "$src/matrix/mxfp4-gb10.json" feature=cutlass | jq -c '[.runs[] | .key, .reasons]') \
     <("$mx" --json plan "$src/matrix/demo-sim.json" feature=cutlass | jq -c '[.runs[] | .key, .reasons]') ||
        fail "plans differ"
echo "t-demo-matrix: ok"
