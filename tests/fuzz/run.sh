#!/usr/bin/env bash
# Build the libFuzzer targets with clang in their own tree (build-fuzz, -DMX_FUZZ=ON)
# and run each for a bounded time on its committed corpus (corpus-<name>/, copied, so
# runs never change the repository) plus real inputs as extra seeds. A crash, leak,
# timeout or broken invariant fails; its input is kept as BUILD/crashes/<target>-*.
#   usage: tests/fuzz/run.sh [SECONDS-PER-TARGET]   (default 25; MX_FUZZ_BUILD=build-fuzz)
#   exit 0: all clean; 1: a finding or a build failure; 77: no clang with libFuzzer here
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
secs=${1:-25}
build=${MX_FUZZ_BUILD:-build-fuzz}
cc=${MX_FUZZ_CC:-$(command -v clang || command -v clang-14 || true)}
if [ -z "$cc" ]; then
        echo "fuzz: no clang here (tests/deps.sh installs it); skipped" >&2
        exit 77
fi
# libFuzzer ships in compiler-rt (libclang-rt-14-dev on Debian 12): check that it links
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)%s\n' \
        '{ (void)d; (void)n; return 0; }' >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address -o "$probe/p" "$probe/p.c" 2>"$probe/err"; then
        echo "fuzz: $cc cannot link libFuzzer (install libclang-rt-14-dev); skipped: $(head -n 3 "$probe/err")" >&2
        exit 77
fi

CC=$cc cmake -S . -B "$build" -DMX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=(fuzz-matrix fuzz-protocol fuzz-profreport fuzz-sse)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

# extra seeds per target: real inputs that are not committed in corpus-<name>
seeds() {
        case $1 in
        fuzz-matrix) echo matrix tests/fixtures/matrix ;;
        fuzz-profreport) echo tests/fixtures/device ;;
        *) ;;
        esac
}
mkdir -p "$build/crashes"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in "${targets[@]}"; do
        name=${t#fuzz-}
        work=$build/corpus/$name
        rm -rf "$work" "$build/crashes/$t-"*
        mkdir -p "$work"
        cp tests/fuzz/corpus-"$name"/* "$work"/
        echo "=== $t: ${secs}s on $(ls "$work" | wc -l) seeds"
        # shellcheck disable=SC2046
        if ! "$build/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
                -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" "$work" $(seeds "$t") \
                >"$build/$t.log" 2>&1; then
                tail -n 60 "$build/$t.log"
                echo "=== $t: FINDING (log $build/$t.log, input $(ls "$build/crashes/$t-"* 2>/dev/null | head -n1))"
                status=1
        else
                grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/$t.log" | tail -n 2
        fi
done
exit $status
