#!/usr/bin/env bash
# Device check of the L1.5 kernel gate: profile kernels.cu's program with the
# real Nsight Compute (details page, per-kernel summary, raw page) and gate each
# report with the real mxmatrix: one set of expectations that must PASS (exit 0)
# and one that must FAIL (exit 1). Runs on the GPU machine from a folder made
# by stage.sh; the reports and a log go to OUTDIR.
#   usage: ncu-gate.sh DIR OUTDIR     exit 0: every verdict as expected; 77: no ncu
set -u
dir=$(cd "${1:?usage: ncu-gate.sh DIR OUTDIR}" && pwd)
out=${2:?usage: ncu-gate.sh DIR OUTDIR}
mkdir -p "$out"
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log=$out/ncu-gate.log
say() { echo "$*" | tee -a "$log"; }

ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n1)
if [ -z "$ncu" ] || [ ! -x "$ncu" ]; then
        say "no ncu on this machine"
        exit 77
fi
say "ncu: $ncu"
"$ncu" --version 2>&1 | tee -a "$log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$log"
"$dir/kernels" 2>&1 | tee -a "$log"

# profile NAME NCU-ARGS...: stdout and stderr together, as a runner captures them
profile() {
        local name=$1 rc=0
        shift
        "$ncu" "$@" "$dir/kernels" >"$out/ncu-live-$name.csv" 2>&1 || rc=$?
        if [ $rc != 0 ] || ! grep -q '"Kernel Name"' "$out/ncu-live-$name.csv"; then
                say "ncu $* failed (exit $rc): $(tail -n 3 "$out/ncu-live-$name.csv")"
                say "retrying with --clock-control none"
                "$ncu" --clock-control none "$@" "$dir/kernels" >"$out/ncu-live-$name.csv" 2>&1
        fi
        say "ncu-live-$name.csv: $(wc -l <"$out/ncu-live-$name.csv") lines"
}
profile details --csv
profile summary --csv --print-summary per-kernel
profile raw --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed

status=0
# gate WANT-EXIT LABEL REPORT EXPECTATIONS...
gate() {
        local want=$1 label=$2 report=$3 got=0
        shift 3
        say "=== gate $label on $report (want exit $want)"
        "$dir/mxmatrix" gate --report "$out/$report" --kernels "$@" >>"$log" 2>&1 || got=$?
        say "exit $got"
        [ "$got" = "$want" ] || { say "UNEXPECTED"; status=1; }
}
pass=(--kernel-must-see 'moe_gemm<float, 128, 64>' --kernel-must-see 'marlin_*'
      --kernel-must-see 're:mx::mxfp8_quantize\(' --kernel-must-not-see 'cutlass_*_moe')
fail=(--kernel-must-see 'cutlass_*_grouped_gemm' --kernel-must-not-see 'marlin_*')
for r in details summary raw; do
        gate 0 pass "ncu-live-$r.csv" "${pass[@]}"
        gate 1 fail "ncu-live-$r.csv" "${fail[@]}"
done
"$dir/mxmatrix" --json gate --report "$out/ncu-live-details.csv" "${pass[@]}" >"$out/gate-pass-details.json" 2>&1
say "device check: $([ $status = 0 ] && echo 'all verdicts as expected' || echo 'UNEXPECTED VERDICTS')"
exit $status
