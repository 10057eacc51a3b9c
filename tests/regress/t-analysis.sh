#!/usr/bin/env bash
# mxmatrix report analysis (issue 18): a sweep of the demo matrix against mxsim, whose runs leave an
# nsys cuda_gpu_kern_sum report each (tests/sim/kreport.c); the capture's workload file
# (profile-workload.json, the data contract with the capture of issue 18 item 1) is put beside the
# reports of all runs but one, as a capture would write it. The analysis must: write seed 001's table
# per run with categories adding up to the report's total, divide by the declared tokens, say "not
# measured" with the reason where no workload was declared, show each feature run's change against
# the baseline run, judge the matrix's decision rules, and put the same in JSON and CSV; mxmatrix
# gates shows the rules judged beside the phase gates.
set -u
. "$(dirname "$0")/lib.sh"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
export PATH=$MX_BUILD_DIR/tests/sim:$PATH
MXD_MATRIX=$MX_SOURCE_DIR/matrix/demo-sim.json

step="sweep"
mxd_start
job=$(submit feature=cutlass levels=L1,L1.5)
MX_WAIT_S=600 follow_job "$job"
[ "$(job_field "$job" '.job.state')" = done ] || fail "job $job did not finish: $(cat "$T/follow")"
runs=$(job_runs "$job")
base=$(job_field "$job" '[.runs[] | select(.reasons | index("baseline"))][0].id')
[ -n "$base" ] && [ "$base" != null ] || fail "job $job has no baseline run"
ok "job $job, baseline r$base"

step="workload files"
bare=""
for r in $runs; do
        n=$(run_field "$r" '.run.result_attempt')
        d=$MXD_STATE/runs/$r/$n
        [ -f "$d/kernels.csv" ] || fail "r$r: no kernels.csv in $d"
        # the profiling pass of demo-sim.json's profiler (control and workload) wrote the capture's own file
        [ "$r" != "$base" ] || jq -e '.source == "server counters" and .tokens > 0' "$d/profile-workload.json" >/dev/null ||
                fail "r$r: the capture wrote no profile-workload.json from the server's counters"
        if [ -z "$bare" ] && [ "$r" != "$base" ]; then
                bare=$r # this one loses its workload: per token not measured
                rm -f "$d/profile-workload.json"
                continue
        fi
        printf '{"tokens": 64, "requests": 1, "prompt_tokens": 2048, "output_tokens": 65, "which": "decode tokens of 1 request of prompt 2048, output 65"}\n' >"$d/profile-workload.json"
done
ok "r$bare has no workload file"

step="report analysis"
expect_exit 0 mx report analysis "$job" -o "$T/a"
f=$T/a/analysis/VLLM_BASELINE_ANALYSIS.md
has "$T/out" "wrote $f"
has "$f" "# VLLM Baseline Analysis: job $job"
has "$f" "| Kernel Category | Time % | Avg (μs) | Calls/Token | μs/token | Calls | Total (μs) | Notes |"
has "$f" "| MoE GEMM |"
has "$f" "| Attention |"
has "$f" "Per token: 64 tokens (decode tokens of 1 request of prompt 2048, output 65)."
has "$f" "Per token: not measured (no profile-workload.json in the run directory"
has "$f" "### Against the baseline (r$base)"
has "$f" "### Decision gate (seed 001 Step 0.4)"
has "$f" "| MoE GEMM + MoE routing > 50% |"
[ "$(grep -c '^## r' "$f")" = "$(wc -w <<<"$runs")" ] || fail "not one section per run"
# the same document from the export
expect_exit 0 mx export "$job" -o "$T/doc.json"
mx report analysis --from "$T/doc.json" >"$T/from.md" || fail "report analysis --from"
cmp -s "$f" "$T/from.md" || fail "the analysis from the export differs"
ok "VLLM_BASELINE_ANALYSIS.md: $(grep -c '^## r' "$f") runs"

step="the document"
# every run with a report: categories add up to the total exactly; calls add up to the launches
jq -e --argjson base "$base" --argjson bare "$bare" '
  .analysis as $a | $a.baseline_run == $base and ($a.runs | length) == (.runs | length) and
  all($a.runs[]; .table.categories_total_us == .table.total_us and
      ([.table.categories[].calls] | add) == .table.launches and
      (([.table.categories[].time_pct] | add) - 100 | fabs) < 1e-9) and
  all($a.runs[] | select(.run != $bare); .table.tokens == 64 and
      all(.table.categories[]; (.us_per_token - .total_us / 64 | fabs) < 1e-6 and
                               (.calls_per_token - .calls / 64 | fabs) < 1e-9)) and
  ($a.runs[] | select(.run == $bare) | .table.tokens == null and .table.categories[0].us_per_token == null and
      (.table.per_token_why | test("profile-workload.json"))) and
  all($a.runs[] | select(.run != $base); .diff.text | type == "string") and
  ($a.runs[] | select(.run == $base) | .diff == null and (.rules | length) == 3 and
      all(.rules[]; .verdict == "holds" or .verdict == "does-not-hold"))' "$T/doc.json" >/dev/null ||
        fail "analysis section: $(jq -c '.analysis.runs[0] | {run, error, table: (.table | {total_us, categories_total_us, tokens})}' "$T/doc.json")"
# a feature run that changes the MoE kernels (MXSIM's cutlass vs the baseline's marlin): the diff says so
jq -e --argjson bare "$bare" '[.analysis.runs[] | select(.diff and .run != $bare and (.diff.text | test("MoE GEMM")))] |
       length > 0' "$T/doc.json" >/dev/null || fail "no diff names MoE GEMM: $(jq -c '[.analysis.runs[].diff.text]' "$T/doc.json")"
ok "$(jq -r --argjson base "$base" '.analysis.runs[] | select(.diff and .diff.per_token) | "r\(.run): \(.diff.text)"' "$T/doc.json" | head -1)"

step="CSV"
mx report csv "$job" >"$T/r.csv" || fail "report csv"
grep -q ",decode-profile,,category.MoE GEMM.us_per_token," "$T/r.csv" || fail "no decode-profile rows in the CSV"
grep -q ",decode-profile,,diff.MoE GEMM.d_us_per_token," "$T/r.csv" || fail "no diff rows in the CSV"
ok "$(grep -c ',decode-profile,' "$T/r.csv") decode-profile rows"

step="HTML"
mx report html "$job" >"$T/r.html" || fail "report html"
grep -q 'data-chart="stacked"' "$T/r.html" || fail "no stacked bar of the decode profile"
segs=$(grep -oE 'class="mark seg (s[0-9]+|rest)"' "$T/r.html" | wc -l)
[ "$segs" -ge "$(wc -w <<<"$runs")" ] || fail "only $segs segments for $(wc -w <<<"$runs") runs"
# r$bare declared no workload: the bars are in % of the captured time, and say so
grep -q '% of captured kernel time' "$T/r.html" || fail "the stacked bar's unit"
ok "stacked bar: $segs segments"

step="gates"
expect_exit 0 mx gates
has "$T/out" "decision rules (seed 001 Step 0.4) on the decode profile of r$base (job $job):"
grep -qE 'MoE GEMM \+ MoE routing > 50% +[0-9.]+ %  (HOLDS|does not hold)' "$T/out" || fail "gates: no judged rule: $(tail -4 "$T/out")"
ok "$(grep -A1 'decision rules' "$T/out" | tail -1 | sed 's/  */ /g')"

step="reports that are no regular file"
# what the servers' side of a run directory holds is read on the daemon's event loop: a FIFO where a report
# is must be refused at once (opened without waiting for a writer), a file past the limit (64 MiB; sparse
# here) refused by its size, unread; the workload file alike. The daemon answers promptly and lives on.
fifo_run="" big_run=""
for r in $runs; do
        [ "$r" != "$base" ] || continue
        if [ -z "$fifo_run" ]; then fifo_run=$r; elif [ -z "$big_run" ]; then big_run=$r; fi
done
[ -n "$fifo_run" ] || fail "no run besides the baseline"
d=$MXD_STATE/runs/$fifo_run/$(run_field "$fifo_run" '.run.result_attempt')
rm -f "$d/kernels.csv" && mkfifo "$d/kernels.csv" || fail "mkfifo $d/kernels.csv"
bd=$MXD_STATE/runs/$base/$(run_field "$base" '.run.result_attempt')
rm -f "$bd/profile-workload.json" && mkfifo "$bd/profile-workload.json" || fail "mkfifo profile-workload.json"
if [ -n "$big_run" ]; then
        d=$MXD_STATE/runs/$big_run/$(run_field "$big_run" '.run.result_attempt')
        rm -f "$d/kernels.csv" && truncate -s 67108865 "$d/kernels.csv" || fail "truncate $d/kernels.csv"
fi
t0=$(date +%s)
timeout 30 "$MX_BIN" report analysis "$job" >"$T/refused.md" 2>"$T/err" || fail "report analysis with a FIFO as a report: exit $? (the daemon waited?): $(cat "$T/err")"
[ $(($(date +%s) - t0)) -le 20 ] || fail "report analysis took $(($(date +%s) - t0)) s"
has "$T/refused.md" "Not measured: profiler report $MXD_STATE/runs/$fifo_run/"
has "$T/refused.md" "kernels.csv: is a FIFO, not a regular file."
has "$T/refused.md" "Per token: not measured ($bd/profile-workload.json: is a FIFO, not a regular file)."
if [ -n "$big_run" ]; then
        has "$T/refused.md" "kernels.csv: 67108865 bytes, which exceeds the limit of 67108864 bytes."
fi
mxd_answers || fail "the daemon does not answer after the analysis"
ok "refused at once: the FIFO of r$fifo_run, the 64 MiB + 1 B file of r${big_run:-?}, the workload FIFO of r$base"
