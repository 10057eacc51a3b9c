#!/usr/bin/env bash
# The demo: build mxmatrix, start a private mxmatrixd against the simulated
# target, submit feature=cutlass on the demo matrix and show every run's outcome
# and level verdicts. Grows with the project; see README.md.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tests/deps.sh
cmake -S . -B build -DMX_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "built: $(ls build/daemon/mxmatrixd build/client/mxmatrix 2>/dev/null || echo 'daemon and client not yet built')"
