#!/usr/bin/env bash
# Stage the sampler's device check in DEST: alloc-steps.cu built here with nvcc
# (sm_90: the lent GPUs are H100/H200; the CUDA runtime is linked statically),
# mxmatrix-sample from BUILD with the shared libraries it needs beyond glibc
# (nothing can be installed on the device), and sampler.sh. Then, on the device:
#   bash DEST/sampler.sh DEST OUTDIR
#   usage: tests/device/sampler-stage.sh DEST [BUILD]   (BUILD defaults to build)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:?usage: sampler-stage.sh DEST [BUILD]}
build=${2:-$top/build}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

mkdir -p "$dest/lib"
"$nvcc" -O2 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
        -o "$dest/alloc-steps" "$top/tests/device/alloc-steps.cu"
cp "$build/daemon/mxmatrix-sample" "$top/tests/device/sampler.sh" "$dest/"
ldd "$build/daemon/mxmatrix-sample" | awk '$3 ~ /^\// { print $3 }' | while read -r lib; do
        case $(basename "$lib") in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
        *) cp -L "$lib" "$dest/lib/" ;;
        esac
done
ls -l "$dest" "$dest/lib"
