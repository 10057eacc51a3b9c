#!/usr/bin/env bash
# Stage the device check in DEST: the CUDA program built here with nvcc (sm_90:
# the lent GPUs are H100/H200), the mxmatrix client from BUILD, the shared
# libraries it needs beyond glibc (nothing can be installed on the device), and
# ncu-gate.sh. Then, on the device: bash DEST/ncu-gate.sh DEST OUTDIR
#   usage: tests/device/stage.sh DEST [BUILD]   (BUILD defaults to build)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:?usage: stage.sh DEST [BUILD]}
build=${2:-$top/build}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

mkdir -p "$dest/lib"
"$nvcc" -O2 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
        -o "$dest/kernels" "$top/tests/device/kernels.cu"
cp "$build/client/mxmatrix" "$top/tests/device/ncu-gate.sh" "$dest/"
# every library mxmatrix loads except glibc's own (the device has a newer glibc)
ldd "$build/client/mxmatrix" | awk '$3 ~ /^\// { print $3 }' | while read -r lib; do
        case $(basename "$lib") in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
        *) cp -L "$lib" "$dest/lib/" ;;
        esac
done
ls -l "$dest" "$dest/lib"
