#!/usr/bin/env bash
# mxmatrix gate on the real H200 ncu reports: verdicts, exit codes, evidence in
# text and JSON, and usage errors. Needs no daemon.
set -euo pipefail
mx=${MX_BUILD_DIR:?}/client/mxmatrix
fx=${MX_SOURCE_DIR:?}/tests/fixtures/gpu-h200
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS CMD...: run, keep output in $tmp/out, check the exit status
expect() {
        local want=$1 got=0; shift
        "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
        [[ $got == "$want" ]] || { cat "$tmp/out" "$tmp/err" >&2; fail "exit $got, wanted $want: $*"; }
}

expect 0 "$mx" gate --report "$fx/ncu-details.csv" --kernel-must-see 'nvjet_sm90_*' \
        --kernel-must-see 'marlin_*' --or 'cunn_SoftMaxForwardReg<float, float' --kernel-must-not-see 'cutlass_*_moe'
grep -q '^L1.5 kernel gate: PASS' "$tmp/out" || fail "no PASS line"
grep -q 'ncu --csv details page, 7 kernels, 18 launches' "$tmp/out" || fail "report summary"
grep -q "seen: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" "$tmp/out" || fail "evidence"

expect 1 "$mx" gate --report "$fx/ncu-summary.csv" --format ncu --kernel-must-not-see '*silu_kernel*' --json
python3 - "$tmp/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "fail", d
hit = d["kernels"]["must_not_see"][0]
assert hit["matched"] and "silu_kernel(at::TensorIteratorBase &)" in hit["subject"], hit
assert d["inputs"]["report"]["format"] == "ncu-summary"
assert len(d["inputs"]["report"]["kernels"]) == 7
PY

# a report that is not one: INVALID, exit 1, the reason names the formats tried
expect 1 "$mx" gate --report "$fx/nvidia-smi.txt" --kernel-must-see 'x'
grep -q 'INVALID' "$tmp/out" || fail "no INVALID"
grep -q 'tried: nsys cuda_gpu_kern_sum' "$tmp/out" || fail "formats tried"
# --format restricts detection
expect 1 "$mx" gate --report "$fx/ncu-details.csv" --format nsys --kernel-must-see 'nvjet'
grep -q 'INVALID' "$tmp/out" || fail "nsys-only detection accepted an ncu report"

# a log: line numbers in the evidence
printf 'INFO start\n[MoE] backend=flashinfer format=MXFP4_NATIVE\n[MoE] WARNING: Using NVFP4 path\n' >"$tmp/server.log"
expect 1 "$mx" gate --log "$tmp/server.log" --must-see 'backend=flashinfer' --must-not-see 'NVFP4'
grep -q 'SEEN at line 3: \[MoE\] WARNING: Using NVFP4 path' "$tmp/out" || fail "log evidence"
expect 0 "$mx" --json gate --log "$tmp/server.log" --must-see 're:format=MXFP4_(NATIVE|BF16)'
grep -q '"verdict": "pass"' "$tmp/out" || fail "global --json"

# usage errors exit 2
expect 2 "$mx" gate --report "$fx/ncu-details.csv"
expect 2 "$mx" gate --kernel-must-see x
expect 2 "$mx" gate matrix.json kernel=marlin --report "$fx/ncu-details.csv" --kernel-must-see x
grep -q 'matrix.json' "$tmp/err" || fail "a missing matrix file is named"
expect 2 "$mx" gate "$MX_SOURCE_DIR/matrix/mxfp4-gb10.json" kernel=nosuch --log "$tmp/server.log"
grep -q "nosuch" "$tmp/err" || fail "an unknown value is named"

# expectations from the matrix: the baseline with kernel=cutlass, as a run of it would be gated
cat >"$tmp/cutlass.csv" <<'CSV'
Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
61.0,1000,10,100,100,100,100,0,"void cutlass_sm120_mxf4_grouped_gemm<cute::tuple<cute::C<128>, cute::C<128>>>(Params)"
39.0,600,10,60,60,60,60,0,flashinfer::mxfp8_quantize_kernel
CSV
cat >"$tmp/cutlass.log" <<'LOG'
(EngineCore_DP0 pid=2) INFO [mxfp4.py:1007] [MoE] backend=flashinfer format=MXFP4_NATIVE fn=flashinfer.fused_moe.cutlass_fused_moe
(EngineCore_DP0 pid=2) INFO [gpu_model_runner.py:3480] Graph capturing finished in 10 secs, took 0.77 GiB
LOG
expect 0 "$mx" gate "$MX_SOURCE_DIR/matrix/mxfp4-gb10.json" kernel=cutlass --report "$tmp/cutlass.csv" --log "$tmp/cutlass.log"
grep -q 'PASS' "$tmp/out" || fail "the cutlass configuration passes on cutlass kernels"
# the same evidence for the baseline (Marlin) fails: marlin_* is missing
expect 1 "$mx" gate "$MX_SOURCE_DIR/matrix/mxfp4-gb10.json" --report "$tmp/cutlass.csv" --log "$tmp/cutlass.log"
grep -q 'FAIL' "$tmp/out" || fail "the marlin baseline fails on cutlass kernels"
expect 2 "$mx" gate --report "$fx/ncu-details.csv" --kernel-must-see 're:('
expect 2 "$mx" gate --report "$fx/ncu-details.csv" --format vtune --kernel-must-see x
expect 0 "$mx" gate --help
echo "t-gate: ok"
