#!/usr/bin/env bash
# bench/cuda/run.sh — the CUDA benchmarks against cuBLAS / cuBLASLt / FlashAttention (PyTorch)
# on this machine's GPU, in one run; writes bench/results/cuda-<date>.md.
#
#   bench/cuda/run.sh [--quick] [--only gemm,fp8,plain,fa,mem] [--iters N] [--out FILE]
#
# Builds build-gpu (Release) if $TILE is not set, then runs bench/cuda/bench.py (see its
# docstring for the method). Environment: TILE (a built tile CLI), TILE_CUDA_DEVICE, PYTHON.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tile=${TILE:-}
if [ -z "$tile" ]; then
  build=$root/build-gpu
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  ninja -C "$build" -j "$(nproc 2>/dev/null || echo 4)" tile_cli >/dev/null || { echo "bench/cuda/run.sh: build failed"; exit 1; }
  tile=$build/bin/tile
fi
export TILE_CACHE_DIR=${TILE_CACHE_DIR:-$root/build-gpu/tile-cache}
export NCCL_NVLS_ENABLE=0
exec "${PYTHON:-python3}" "$root/bench/cuda/bench.py" --tile "$tile" "$@"
