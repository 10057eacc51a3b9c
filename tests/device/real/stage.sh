#!/usr/bin/env bash
# Stage the issue-14 device check in STAGE (a folder .git/info/exclude ignores,
# carried to the GPU machine): the daemon and client from BUILD, the CUDA
# llama-server's xz parts (from ../shared/targets/build-cuda-llama-server.sh
# run there once) and the model generators.
#   usage: tests/device/real/stage.sh STAGE CUDA-PARTS-DIR [BUILD]
# Then, on the device:  tests/device/real/run.sh STAGE OUT setup levels ncu
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
stage=${1:?usage: stage.sh STAGE CUDA-PARTS-DIR [BUILD]}
parts=${2:?usage: stage.sh STAGE CUDA-PARTS-DIR [BUILD]}
build=${3:-$top/build}
mkdir -p "$stage/bin" "$stage/cuda" "$stage/targets"
cp "$build/daemon/mxmatrixd" "$build/client/mxmatrix" "$stage/bin/"
strip "$stage/bin/"* 
[ "$(cd "$parts" && pwd)" = "$(cd "$stage/cuda" && pwd)" ] || cp "$parts"/ls.part.* "$stage/cuda/"
# jq for run.sh where the machine has none: the binary and the two libraries it loads
mkdir -p "$stage/jq"
cp /usr/bin/jq "$stage/jq/jq.real"
ldd /usr/bin/jq | awk '/libjq|libonig/ { print $3 }' | xargs -r -I{} cp -L {} "$stage/jq/"
printf '#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH="$here${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/jq.real" "$@"\n' >"$stage/jq/jq"
chmod +x "$stage/jq/jq"
rm -rf "$stage/targets/gguf-tools"
cp -r "$top/../shared/targets/gguf-tools" "$stage/targets/"
du -sh "$stage"
