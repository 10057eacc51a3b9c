#!/usr/bin/env bash
# Every test: installs build dependencies, builds twice (-Werror; then with
# AddressSanitizer and UndefinedBehaviorSanitizer) and runs the whole ctest
# suite (unit tests, regress tests with the real daemon and client, systemd
# checks) in both trees, then runs each libFuzzer target for a bounded time in
# a third, clang-built tree (build-fuzz; MX_FUZZ_SECONDS per target, default 25;
# skipped only where clang cannot link libFuzzer). Exit status 0 only if
# everything passed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tests/deps.sh
jobs=$(nproc)

build() { # dir, extra cmake args...
        local dir=$1; shift
        cmake -S . -B "$dir" -DMX_WERROR=ON "$@" >/dev/null
        cmake --build "$dir" -j"$jobs"
}

build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
build build-asan -DCMAKE_BUILD_TYPE=Debug "-DMX_SANITIZE=address;undefined"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for dir in build build-asan; do
        echo "=== ctest in $dir"
        (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@") || status=1
done

echo "=== fuzzing (tests/fuzz/run.sh)"
fuzz=0
tests/fuzz/run.sh "${MX_FUZZ_SECONDS:-25}" || fuzz=$?
case $fuzz in
0) ;;
77) echo "fuzzing skipped: no clang with libFuzzer" ;;
*) status=1 ;;
esac
exit $status
