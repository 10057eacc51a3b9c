#!/usr/bin/env bash
# The answer on one screen and one result vocabulary, on a real sweep: the demo's matrix
# (matrix/demo-sim.json, five known issues) against mxsim, feature=cutlass with L1, L1.5 and
# L4, through the real daemon and client.
#  - follow's last line, status, show JOB, every report (test log, feature matrix, benchmark
#    results, porting) and the HTML page give the job's results in the same words and counts
#    (protocol.json's result vocabulary): the 5 expected failures are "5 xfail", never counted
#    as passed, and no HTML grid cell holding one is painted green;
#  - show JOB and the end of follow print one compact table, one row per configuration, with
#    each level's verdict in the seed's order and tg32 ± std (n), its change against the
#    baseline, pp2048 and TTFT p50/p99 from the runs' stored L4 levels (checked against show
#    rN's L4 document), "not measured" where no level measured them, within one screen.
set -u
. "$(dirname "$0")/lib.sh"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
export PATH=$MX_BUILD_DIR/tests/sim:$PATH
MXD_MATRIX=$MX_SOURCE_DIR/matrix/demo-sim.json

step="sweep"
mxd_start
job=$(submit feature=cutlass levels=L1,L1.5,L4)
MX_WAIT_S=600 follow_job "$job"
[ "$(job_field "$job" '.job.state')" = done ] || fail "job $job did not finish: $(cat "$T/follow")"
doc=$(mxj show "$job")
# The expected counts in protocol.json's order (mx_result_counts_text), from the runs themselves.
order='["pass","fail","xfail","xpass","crashed","timeout","infra-error","interrupted","cancelled"]'
counts=$(jq -r --argjson o "$order" '[.runs[].result] as $r |
        [$o[] as $k | ($r | map(select(. == $k)) | length) as $n | select($n > 0) | "\($n) \($k)"] | join(", ")' \
        <<<"$doc")
n=$(jq '.runs | length' <<<"$doc")
[[ $counts == *"5 xfail"* ]] || fail "the demo's five known issues are not 5 xfail: '$counts'"
ok "job $job: $counts"

step="the same words and counts everywhere"
has "$T/follow" "job $job done: $n/$n runs: $counts, "
lacks "$T/follow" " passed"
expect_exit 0 mx status
has "$T/out" "$n done ($counts) in 1 jobs"
lacks "$T/out" " passed"
expect_exit 0 mx show "$job"
cp "$T/out" "$T/show"
has "$T/show" "runs: $counts"
expect_exit 0 mx report all "$job" -o "$T/rep"
for f in "$T"/rep/TEST_LOGS/*.md "$T/rep/FEATURE_MATRIX.md" "$T/rep/BENCHMARK_RESULTS.md" \
        "$T/rep/porting/FEATURE_CUTLASS_GEMM.md"; do
        [ -f "$f" ] || fail "no report $f"
        has "$f" "$n runs: $counts)"
done
has "$T/rep/report.html" "<span>$n runs: $counts</span>"
lacks "$T/rep/report.html" "passed or failed as expected"
# The grid: an expected failure is never in a green cell, and the cells holding only expected failures are grey.
# A cell is <rect class="mark cell CLASS" ...><title>its runs and their results</title>.
tr '\n' ' ' <"$T/rep/report.html" | grep -o '<rect class="mark cell [a-z]*"[^>]*><title>[^<]*' >"$T/cells"
[ -s "$T/cells" ] || fail "no grid cells in report.html"
! grep 'cell pass"' "$T/cells" | grep -q 'xfail' || fail "a cell with an xfail is green: $(grep 'cell pass"' "$T/cells" | grep xfail | head -2)"
grep -q 'cell xfail"' "$T/cells" || fail "no grid cell marked xfail: $(head -5 "$T/cells")"
ok "follow, status, show, 4 reports and the HTML say '$counts'; no xfail is green"

step="the answer on one screen"
s=$(jq -c .summary <<<"$doc")
[ "$(jq '.runs | length' <<<"$s")" = "$n" ] && [ "$(jq .total <<<"$s")" = "$n" ] || fail "summary runs: $s"
[ "$(jq -c .levels <<<"$s")" = '["L1","L1.5","L4"]' ] || fail "levels in the seed's order: $(jq -c .levels <<<"$s")"
jq -e '[.metrics[].metric] | index("tg32_tps") < index("pp2048_tps") and index("pp2048_tps") < index("ttft_p50_ms")' \
        <<<"$s" >/dev/null || fail "metrics: $(jq -c '[.metrics[].metric]' <<<"$s")"
base=$(jq .baseline.run <<<"$s")
[ "$base" = "$(jq '[.runs[] | select(.reasons | index("baseline"))][0].id' <<<"$doc")" ] || fail "baseline r$base"
# Each measured figure is the run's stored L4 document's: the result, the tg32 row's std and n.
measured=0
for r in $(jq -r '.runs[] | select(.metrics.tg32_tps.value != null) | .run' <<<"$s"); do
        l4=$(mxj show "r$r" | jq -c '.run.attempt_history[-1].levels[] | select(.level == "L4") | .metrics')
        cell=$(jq -c ".runs[] | select(.run == $r) | .metrics.tg32_tps" <<<"$s")
        jq -e --argjson l4 "$l4" '(.value - $l4.results.throughput.tg32_tps | fabs) < 1e-9 and
                (.n == ($l4.tests[] | select(.kind == "tg" and .tg == 32 and .depth == 0) | .tps.n)) and
                ((.std - ($l4.tests[] | select(.kind == "tg" and .tg == 32 and .depth == 0) | .tps.std)) | fabs) < 1e-9' \
                <<<"$cell" >/dev/null || fail "r$r tg32 $cell differs from its L4 document"
        ttft=$(jq ".runs[] | select(.run == $r) | .metrics.ttft_p99_ms.value" <<<"$s")
        [ "$ttft" = "$(jq '.results.latency.ttft_p99_ms' <<<"$l4")" ] || fail "r$r TTFT p99 $ttft"
        if [ "$r" != "$base" ]; then
                b=$(jq ".runs[] | select(.run == $base) | .metrics.tg32_tps.value" <<<"$s")
                jq -e --argjson b "$b" '((.value - $b) / $b * 100 - .change_pct | fabs) < 1e-6' <<<"$cell" >/dev/null ||
                        fail "r$r change against r$base: $cell"
        fi
        measured=$((measured + 1))
done
[ "$measured" -ge 2 ] || fail "only $measured runs measured tg32: $s"
# The feature-on run's figure is the criteria's actual.
on=$(jq '.criteria.compared.on' <<<"$doc")
[ "$(jq ".runs[] | select(.run == $on) | .metrics.tg32_tps.value" <<<"$s")" = \
        "$(jq '.criteria.rows[] | select(.metric == "tg32_tps") | .actual' <<<"$doc")" ] || fail "tg32 of r$on is not the criteria's"
# An expected failure measured nothing: not measured, with why.
x=$(jq -r '[.runs[] | select(.result == "xfail")][0].run' <<<"$s")
jq -e ".runs[] | select(.run == $x) | .metrics.tg32_tps.not_measured | length > 0" <<<"$s" >/dev/null ||
        fail "r$x (xfail) has a tg32: $s"
# The table: headers, the baseline row, the change, not measured, the verdict columns; one screen.
for h in "RESULT" "L1.5" "tg32 tok/s ± std (n)" "Δ tg32" "pp2048 tok/s ± std (n)" "TTFT p50/p99 ms" \
        "CONFIG (vs baseline r$base)"; do
        has "$T/show" "$h"
done
grep -qE "^r$base +baseline +pass +pass +pass +pass +[0-9.]+ ± [0-9.]+ \([0-9]+\) +baseline" "$T/show" ||
        fail "no baseline row: $(grep "^r$base " "$T/show")"
pct=$(jq -r ".runs[] | select(.run == $on) | .metrics.tg32_tps.change_pct * 10 | round / 10 |
        if . >= 0 then \"+\(.)\" else \"\(.)\" end" <<<"$s")
grep -E "^r$on " "$T/show" | grep -qF -- "$pct" || fail "r$on's row lacks $pct %: $(grep "^r$on " "$T/show")"
grep -E "^r$x " "$T/show" | grep -q "xfail:.*not measured" || fail "r$x's row: $(grep "^r$x " "$T/show")"
lines=$(wc -l <"$T/show")
[ "$lines" -le 45 ] || fail "show $job takes $lines lines for $n runs"
# follow ends with the same table as show.
diff <(grep -E '^(RUN|r[0-9]+) ' "$T/show") <(grep -E '^(RUN|r[0-9]+) ' "$T/follow" | grep -E '^(RUN|r[0-9]+ +(baseline|[a-z]+=))') \
        >"$T/diff" || fail "follow's table differs from show's: $(head -5 "$T/diff")"
has "$T/follow" "success criteria of cutlass-gemm"
ok "show $job: $lines lines, $measured runs measured from their L4 documents, follow ends with the same table"

mxd_stop
ok "t-screen"
