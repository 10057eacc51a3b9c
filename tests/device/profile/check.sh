#!/usr/bin/env bash
# Checks the output of tests/device/profile/run.sh (issue 18 item 8): in the report document of the
# two-model job, each run's decode profile adds up (categories to the captured total exactly, calls to
# the launches, Time % to 100); both runs decoded the same tokens; the per-layer categories
# (Attention, MoE routing) launch exactly twice as often per token with 4 layers as with 2, as the
# model's graph says (one attention and one expert selection per layer); the analysis shows the
# 4-layer run's change against the 2-layer baseline and judges the decision rules.
#   usage: check.sh OUT      (exit 77 with one line when the profile part did not run: no ncu)
set -u
out=${1:?usage: check.sh OUT}
doc=$out/profile/export.json
md=$out/profile/analysis/VLLM_BASELINE_ANALYSIS.md
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$doc" ] || fail "no $doc (run.sh STAGE OUT setup profile first)"
if [ -e "$out/profile/no-ncu" ]; then
        # the pipeline without the profiler: every run says why it has no table
        jq -e '.analysis.runs | length == 2 and all(.[]; .error | test("no profiler"))' "$doc" >/dev/null ||
                fail "without ncu the analysis should say 'no profiler' for both runs"
        echo "SKIP: no ncu where run.sh ran: the profile checks need the GPU machine's report"
        exit 77
fi
jq -e '.analysis.runs | length == 2 and all(.[]; .table)' "$doc" >/dev/null ||
        fail "not two runs with a table: $(jq -c '[.analysis.runs[] | {run, error}]' "$doc")"
jq -e 'all(.analysis.runs[].table; .categories_total_us == .total_us and
        ([.categories[].calls] | add) == .launches and
        (([.categories[].time_pct] | add) - 100 | fabs) < 1e-9)' "$doc" >/dev/null ||
        fail "categories do not add up to the captured total"
# the runs by layer count
t2=$(jq -c '. as $d | .analysis.runs[] | select(.config_key == "layers=2") | .table' "$doc")
t4=$(jq -c '. as $d | .analysis.runs[] | select(.config_key == "layers=4") | .table' "$doc")
[ -n "$t2" ] && [ -n "$t4" ] || fail "no layers=2 and layers=4 runs"
jq -e -n --argjson a "$t2" --argjson b "$t4" '$a.tokens != null and $a.tokens == $b.tokens' >/dev/null ||
        fail "the two runs decoded different token counts ($(jq -n --argjson a "$t2" --argjson b "$t4" '[$a.tokens, $b.tokens]' -c))"
for cat in Attention "MoE routing"; do
        jq -e -n --argjson a "$t2" --argjson b "$t4" --arg c "$cat" '
          ($a.categories[] | select(.name == $c) | .calls_per_token) as $x |
          ($b.categories[] | select(.name == $c) | .calls_per_token) as $y |
          $x > 0 and (($y / $x) - 2 | fabs) < 1e-9' >/dev/null ||
                fail "$cat calls/token do not double with the layers: $(jq -n -c --argjson a "$t2" --argjson b "$t4" --arg c "$cat" '[$a, $b] | map(.categories[] | select(.name == $c) | .calls_per_token)')"
        echo "ok: $cat calls/token $(jq -n -r --argjson a "$t2" --argjson b "$t4" --arg c "$cat" '[$a, $b] | map(.categories[] | select(.name == $c) | .calls_per_token) | map(tostring) | join(" -> ")')"
done
[ -f "$md" ] || fail "no $md"
grep -q '^| Kernel Category | Time % | Avg (μs) | Calls/Token | μs/token |' "$md" || fail "no seed 001 table"
grep -q '^### Against the baseline' "$md" || fail "no diff against the 2-layer baseline"
grep -q '^### Decision gate' "$md" || fail "no decision rules"
echo "ok: $(grep -m1 '^\*\*' "$md")"
