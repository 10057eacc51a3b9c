#!/usr/bin/env bash
# Failure attribution on the demo matrix's simulated target (tests/sim/issues.c: the seed's known
# issues, without any fault flag): a pairwise L6 sweep of feature=cutlass, with the matrix's
# known_incompatible declarations removed so that whatever is found comes from the runs.
#   - mxmatrix attribute names tile=64x128 for tma-layout and sinks=on for illegal-instruction;
#   - --as-matrix prints known_incompatible entries that load back and mark exactly the failing
#     configurations of the sweep, and none that passed;
#   - submit --confirm makes a job of follow-up runs whose reasons name their candidate, and with
#     them attribute finds the seed's "graphs=on ∧ spec=eagle3-*" and triton's ptxas failure.
set -u
. "$(dirname "$0")/lib.sh"

[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
export PATH=$MX_BUILD_DIR/tests/sim:$PATH
MXD_MATRIX=$T/demo.json
jq 'del(.constraints.known_incompatible)' "$MX_SOURCE_DIR/matrix/demo-sim.json" >"$MXD_MATRIX"
mxd_start

step="pairwise sweep"
mx submit feature=cutlass --strategy pairwise --levels L1 >"$T/out" || fail "submit"
mx follow 1 >/dev/null 2>&1
mx --json show 1 >"$T/show1" || fail "show 1"
[ "$(jq '[.runs[] | select(.state != "done")] | length' "$T/show1")" = 0 ] || fail "job 1 did not finish"
jq -e '[.runs[] | select(.result != "pass")] | length > 0' "$T/show1" >/dev/null || fail "nothing failed"
ok "$step"

step="attribute"
mx --json attribute 1 >"$T/attr1" || fail "attribute 1"
cls() { jq -c --arg c "$1" '.attribution.classes[] | select(.class == $c)' "$T/attr1"; }
[ "$(cls tma-layout | jq -c '.groups[0].when')" = '{"tile":"64x128"}' ] || fail "tma-layout: $(cls tma-layout)"
cls tma-layout | jq -e '.groups[0].support == .failing and .unexplained == 0' >/dev/null ||
        fail "tile=64x128 does not explain every tma-layout failure"
cls illegal-instruction | jq -e '[.groups[].when] | index({"sinks":"on"}) != null' >/dev/null ||
        fail "sinks=on not found for illegal-instruction: $(cls illegal-instruction)"
# Every reported set is minimal and no passing run holds it: check against the runs themselves.
jq -r '.attribution.classes[].sets[].set | to_entries | map("\(.key)=\(.value)") | join(" ")' "$T/attr1" |
        while read -r set; do
                for pair in $set; do
                        rest=$(echo "$set" | tr ' ' '\n' | grep -vxF "$pair" | tr '\n' ' ')
                        [ -n "$rest" ] || continue
                        n=$(jq --arg s "$rest" '[.runs[] | select(.result == "pass") | .config as $c |
                                select([$s | splits(" ") | select(. != "") | split("=") |
                                        $c[.[0]] == .[1]] | all)] | length' "$T/show1")
                        [ "$n" -gt 0 ] || fail "'$set' is not minimal: '$rest' alone has no passing run"
                done
                n=$(jq --arg s "$set" '[.runs[] | select(.result == "pass") | .config as $c |
                        select([$s | splits(" ") | split("=") | $c[.[0]] == .[1]] | all)] | length' "$T/show1")
                [ "$n" = 0 ] || fail "'$set': $n passing runs hold it"
        done || exit 1
mx attribute 1 >"$T/text1" || fail "attribute 1 (text)"
has "$T/text1" "tile=64x128 → tma-layout ("
has "$T/text1" "0 passing hold it"
ok "$step"

step="--as-matrix loads back and marks exactly the failures"
{ echo "{"; mx attribute 1 --as-matrix; echo "}"; } >"$T/ki.json"
jq -e '.known_incompatible | length > 0' "$T/ki.json" >/dev/null || fail "--as-matrix is not JSON: $(cat "$T/ki.json")"
jq --slurpfile k "$T/ki.json" '.constraints.known_incompatible = $k[0].known_incompatible' "$MXD_MATRIX" \
        >"$T/marked.json"
mx matrix check "$T/marked.json" >/dev/null 2>"$T/err" || fail "the entries do not load: $(cat "$T/err")"
# Every configuration of the product (a pairwise plan of the marked file would set the marked ones aside).
mx --json plan "$T/marked.json" feature=cutlass --strategy full >"$T/plan" || fail "plan"
jq -n --slurpfile s "$T/show1" --slurpfile p "$T/plan" '
        ($p[0].runs | map({(.key): (.known_incompatible | length > 0)}) | add) as $marked |
        [$s[0].runs[] | {key: .config_key, failed: (.result != "pass"), marked: $marked[.config_key]}] |
        map(select(.failed != .marked or .marked == null))' >"$T/mismatch"
[ "$(jq length "$T/mismatch")" = 0 ] || fail "marks differ from the results: $(cat "$T/mismatch")"
ok "$step"

step="submit --confirm"
mx --json submit --confirm 1 --levels L1 >"$T/sub2" || fail "submit --confirm 1: $(cat "$T/sub2")"
job=$(jq .job "$T/sub2")
jq -e '[.runs[].reasons[] | startswith("confirm: ")] | all' "$T/sub2" >/dev/null || fail "reasons: $(jq -c '[.runs[].reasons]' "$T/sub2")"
jq -e '[.runs[].reasons[]] | index("confirm: tile=64x128 (without tile=64x128: tile=auto)") != null' "$T/sub2" \
        >/dev/null || fail "no run without tile=64x128"
expect_exit 2 mx submit feature=cutlass --confirm 1
mx follow "$job" >/dev/null 2>&1
mx attribute "$job" >"$T/text2" || fail "attribute $job"
has "$T/text2" "graphs=on ∧ spec=eagle3-* → illegal-instruction ("
has "$T/text2" "tile=64x128 → tma-layout ("
has "$T/text2" "kernel=triton → ptxas ("
has "$T/text2" "sinks=on → illegal-instruction ("
ok "$step"
echo "t-attribute: ok"
