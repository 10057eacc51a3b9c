#!/usr/bin/env bash
# The client's file verbs (matrix check/show/cover, plan) without a daemon:
# exit codes, error messages, and the figures a reader checks by hand.
# (The --json documents are parsed by tests/unit/test-matrix-cli-json.c.)
set -uo pipefail
: "${MX_BUILD_DIR:?}" "${MX_SOURCE_DIR:?}"
mx="$MX_BUILD_DIR/client/mxmatrix"
shipped="$MX_SOURCE_DIR/matrix/mxfp4-gb10.json"
upstream="$MX_SOURCE_DIR/matrix/vllm-upstream-gb10.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
        echo "FAIL: $*" >&2
        failures=$((failures + 1))
}

# run WANT_EXIT CMD...: run CMD, keep stdout in $tmp/out and stderr in $tmp/err, check the exit status.
run() {
        local want=$1 got
        shift
        "$@" >"$tmp/out" 2>"$tmp/err"
        got=$?
        [ "$got" -eq "$want" ] || fail "'$*' exited $got, want $want; stderr: $(head -c 400 "$tmp/err")"
}

# has FILE TEXT: FILE contains the fixed string TEXT.
has() {
        grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 600 "$1")"
}

# matrix check
run 0 "$mx" matrix check "$shipped"
has "$tmp/out" "$shipped: ok (6 axes, 20 values, 6 features; full 768, valid 384)"
run 0 "$mx" matrix check "$upstream"
has "$tmp/out" ": ok (6 axes,"
run 0 "$mx" --json matrix check "$shipped"
has "$tmp/out" '"ok": true'
has "$tmp/out" '"valid": 384'

# The shipped matrices warn about nothing: every expectation has a source.
run 0 "$mx" matrix check "$upstream"
[ ! -s "$tmp/err" ] || fail "matrix check warns about $upstream: $(cat "$tmp/err")"
run 0 "$mx" matrix check "$shipped"
[ ! -s "$tmp/err" ] || fail "matrix check warns about $shipped: $(cat "$tmp/err")"
# Without the profiler, kernel expectations can never be checked: a warning with the place, exit 0.
jq 'del(.target.profiler)' "$shipped" >"$tmp/noprof.json"
run 0 "$mx" matrix check "$tmp/noprof.json"
has "$tmp/err" "warning: $tmp/noprof.json:"
has "$tmp/err" "key 'axes[0].values[1].expect.kernels': kernel expectations of kernel=cutlass need a profiler report"
[ "$(grep -c '^warning: ' "$tmp/err")" -eq 5 ] || fail "want 5 warnings: $(cat "$tmp/err")"
run 0 "$mx" --json matrix check "$tmp/noprof.json"
[ "$(jq '.warnings | length' "$tmp/out")" -eq 5 ] || fail "--json: want 5 warnings"
run 0 "$mx" plan "$tmp/noprof.json" cutlass
has "$tmp/out" "kernels  never checked: profile 'vllm' has no profiler"
has "$tmp/out" "runs expect kernel names, but profile 'vllm' has no profiler: their L1.5 gate will be INVALID"
# The command profile runs no gate at all.
jq '.target.profile = "command" | del(.target.profiler, .target.ready, .target.stop, .target.crash_signatures)' \
        "$MX_SOURCE_DIR/matrix/demo-sim.json" >"$tmp/cmd.json"
run 0 "$mx" matrix check "$tmp/cmd.json"
has "$tmp/err" "key 'axes[0].values[0].expect': kernel=marlin has expectations, but the command profile runs no kernel gate"

printf '{"matrix": 1,\n "name": "t",\n "bogus": 1}\n' >"$tmp/bad.json"
run 3 "$mx" matrix check "$tmp/bad.json"
has "$tmp/err" "$tmp/bad.json:3:2: key 'bogus': unknown key 'bogus' in a matrix file"
run 3 "$mx" matrix check --json "$tmp/bad.json"
has "$tmp/out" '"ok": false'
run 3 "$mx" matrix check "$tmp/missing.json"
has "$tmp/err" "No such file or directory"
run 2 "$mx" matrix check
run 2 "$mx" matrix check "$shipped" extra
run 2 "$mx" matrix frobnicate "$shipped"
has "$tmp/err" "unknown 'matrix' command 'frobnicate'"
run 0 "$mx" matrix --help
has "$tmp/out" "mxmatrix matrix cover FILE [-t N]"

# matrix show
run 0 "$mx" matrix show "$shipped"
has "$tmp/out" "Matrix mxfp4-gb10"
has "$tmp/out" "cutlass               gemm"
has "$tmp/out" "fp6 (not in product)"
has "$tmp/out" "Baseline: kernel=marlin,activation=bf16,tile=auto,sinks=off,spec=off,graphs=on"
has "$tmp/out" "P1  cutlass-gemm"
has "$tmp/out" "criterion:  tg32_tps improves by >= 10% vs baseline"
has "$tmp/out" "rule     if kernel!=cutlass then tile=auto"
has "$tmp/out" "known incompatible (crash)  graphs=on, spec!=off"
has "$tmp/out" "kernel=cutlass         kernels must see 'cutlass_*_grouped_gemm'"
has "$tmp/out" "full product    768"
has "$tmp/out" "valid           384 (excluded 0, broke a rule 384, appended by include 0; 284 of them known incompatible)"
grep -qE '^  pairwise +[0-9]+ rows$' "$tmp/out" || fail "show: no pairwise row count"
grep -qE '^  3-way +[0-9]+ rows$' "$tmp/out" || fail "show: no 3-way row count"

# matrix cover
run 0 "$mx" matrix cover "$shipped" -t 2 --seed 7
grep -qE '^[0-9]+ rows cover all [0-9]+ valid 2-tuples of .* \(verified; seed 7\)$' "$tmp/out" ||
        fail "cover: no summary line: $(tail -1 "$tmp/out")"
head -1 "$tmp/out" | grep -qE '^#  +kernel +activation +tile +sinks +spec +graphs +ID$' || fail "cover: header"
# Without -t: pairwise, the strength people mean.
run 0 "$mx" matrix cover "$shipped"
grep -qE '^[0-9]+ rows cover all [0-9]+ valid 2-tuples of ' "$tmp/out" || fail "cover: no default t=2"
# The file verbs outside "matrix" are pointed to it.
run 2 "$mx" cover "$shipped"
has "$tmp/err" "unknown verb 'cover'; did you mean 'mxmatrix matrix cover'?"
run 2 "$mx" check "$shipped"
has "$tmp/err" "did you mean 'mxmatrix matrix check'?"
run 2 "$mx" matrix cover "$shipped" -t 9
run 2 "$mx" matrix show "$shipped" -t 2

# plan
run 0 "$mx" plan "$shipped" feature=cutlass
has "$tmp/out" "Plan for cutlass: kernel=cutlass (feature 'cutlass-gemm')"
has "$tmp/out" "Expectations (L1.5) are checked against:"
has "$tmp/out" "log      the server's output (stdout and stderr), whole run"
has "$tmp/out" "kernels  the profiler report {run_dir}/kern_cuda_gpu_kern_sum.csv (nsys), read after the server stopped, made by 'nsys stats --report cuda_gpu_kern_sum"
has "$tmp/out" "baseline feature-off"
has "$tmp/out" "vary:spec=eagle3-short       crash [1]"
has "$tmp/out" "12 runs (5 expected to fail), 0 skipped."
run 0 "$mx" plan "$shipped" feature=activation-mxfp8
has "$tmp/out" "Skipped (planned, but the matrix file rules them out):"
has "$tmp/out" "breaks the rule at $shipped:"
has "$tmp/out" "depends on 'runner-caching', which is not-started"
run 0 "$mx" plan "$shipped" feature=gemm graphs=off --verbose
has "$tmp/out" "Pinned in every run: graphs=off"
has "$tmp/out" "env   VLLM_MXFP4_MOE_KERNEL=gemm"
has "$tmp/out" "flag  --enforce-eager"
has "$tmp/out" "kernels (profiler report) must see 'cutlass_*_grouped_gemm'"
has "$tmp/out" "log (server output) must see '[MoE] backend=flashinfer"
run 0 "$mx" plan "$shipped" feature=cutlass --strategy pairwise
has "$tmp/out" "strategy pairwise (strength 2, seed 0,"
run 1 "$mx" plan "$shipped" feature=cutlass --strategy full --max-runs 50
has "$tmp/err" "--strategy full would plan more than 50 runs"
# A bare X, as submit takes it, and the P ids matrix show prints.
run 0 "$mx" plan "$shipped" cutlass
has "$tmp/out" "Plan for cutlass: kernel=cutlass (feature 'cutlass-gemm')"
run 0 "$mx" plan "$shipped" feature=P5
has "$tmp/out" "Plan for P5: feature 'spec-decode' (P5)"
run 0 "$mx" plan "$shipped" P1 graphs=off
has "$tmp/out" "Pinned in every run: graphs=off"
run 2 "$mx" plan "$shipped" cutlass gemm
has "$tmp/err" "plan takes one feature X"
# Pinning the feature's own axis keeps the feature-off run.
run 0 "$mx" plan "$shipped" feature=cutlass kernel=cutlass
has "$tmp/out" "baseline feature-off"
has "$tmp/out" "pin kernel=cutlass repeats what the feature sets"
has "$tmp/out" "12 runs (5 expected to fail), 0 skipped."
# Stacking: with P1 merged, P3 runs on kernel=cutlass (seed 003's C2) and alone on the baseline.
sed '0,/"status": "in-progress"/s//"status": "merged"/' "$shipped" >"$tmp/merged.json"
run 0 "$mx" plan "$tmp/merged.json" P3
has "$tmp/out" "Merged stack (P1): cutlass-gemm = kernel=cutlass"
has "$tmp/out" "feature-on:stack(P1) with:cutlass-gemm"
has "$tmp/out" "feature-off:stack(P1) prior:cutlass-gemm"
run 2 "$mx" plan "$shipped" feature=cutlas
has "$tmp/err" "did you mean feature 'cutlass-gemm', kernel=cutlass?"
run 2 "$mx" plan "$shipped" feature=off
has "$tmp/err" "'off' is ambiguous: it names sinks=off, spec=off, graphs=off"
run 2 "$mx" plan "$shipped" feature=cutlass kernel=marlin
has "$tmp/err" "conflicts with"
run 2 "$mx" plan "$shipped" feature=cutlass --strategy sideways
run 2 "$mx" plan "$shipped"
run 2 "$mx" plan "$shipped" feature=a feature=b
run 3 "$mx" plan "$tmp/bad.json" feature=x
run 0 "$mx" plan --help
has "$tmp/out" "--strategy S"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "ok"
