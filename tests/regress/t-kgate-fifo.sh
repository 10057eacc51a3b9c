#!/usr/bin/env bash
# L1.5 reads the profiler report on the runner's event loop (the daemon's, with the local executor): a report
# path that is a FIFO must be refused at once ("is a FIFO, not a regular file"), the gate INVALID with that
# reason, never waited on (the old blocking open hung the daemon until a writer came). mxsim as vLLM, the
# demo matrix's kernel expectations, the report an absolute path made a FIFO before the job.
set -u
. "$(dirname "$0")/lib.sh"
[ -x "$MX_BUILD_DIR/tests/sim/mxsim" ] || skip "mxsim is not built"
export PATH=$MX_BUILD_DIR/tests/sim:$PATH

step="matrix"
fifo=$T/kernels.fifo
mkfifo "$fifo" || fail "mkfifo $fifo"
MXD_MATRIX=$T/matrix.json
# no profiling pass (no control, no workload): the gate alone reads the report
jq --arg r "$fifo" '.target.profiler = {format: "nsys", report: $r} | .target.env.MXSIM_KERNEL_REPORT = null
                    | del(.target.env.MXSIM_KERNEL_REPORT)' "$MX_SOURCE_DIR/matrix/demo-sim.json" >"$MXD_MATRIX" ||
        fail "jq"
mxd_start
ok "daemon pid $MXD_PID"

step="L1.5 on a FIFO"
job=$(submit feature=cutlass levels=L1,L1.5)
MX_WAIT_S=120 follow_job "$job" || true
[ "$(job_field "$job" '.job.state')" = done ] || fail "job $job did not finish: $(tail -5 "$T/follow")"
n=0
for r in $(job_runs "$job"); do
        l15=$(level_of "$r" L1.5)
        # a configuration the demo makes fail at start never reaches the gate
        [ "$(jq -r .verdict <<<"$l15")" != skipped ] || continue
        [ "$(jq -r .verdict <<<"$l15")" = invalid ] || fail "r$r: L1.5 is not invalid: $(jq -c . <<<"$l15")"
        grep -qF "profiler report $fifo: is a FIFO, not a regular file" <<<"$l15" ||
                fail "r$r: L1.5 does not say the report is a FIFO: $(jq -c . <<<"$l15")"
        n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "job $job has no run whose server became ready"
mxd_answers || fail "the daemon does not answer"
ok "$n runs that became ready: L1.5 invalid, 'is a FIFO, not a regular file'"
