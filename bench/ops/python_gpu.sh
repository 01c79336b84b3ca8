#!/usr/bin/env bash
# bench/ops/python_gpu.sh — tile.ops on CUDA torch tensors, on the H200 device machine (not CI).
#
#   bash bench/ops/python_gpu.sh        (from the repository root; results under $OUT or ./gpu-out)
#
# Builds libtile, runs tests/python/test_ops.py's CUDA tests (operators on device-resident
# torch tensors against torch, exact index checks, a non-default stream) and
# bench/ops/python_gpu.py (tile.ops calls against the same torch functions, CUDA events).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TILE_CACHE_DIR=${TILE_CACHE_DIR:-/tmp/tile-cache} PYTHONUNBUFFERED=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
  ninja -C build tile >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export PYTHONPATH=$PWD/python TILE_LIBRARY=$PWD/build/libtile.so
python3 -m pytest -q -p no:cacheprovider tests/python/test_ops.py -k cuda 2>&1 | tee "$OUT/pytest.log" | tail -25
python3 bench/ops/python_gpu.py --out "$OUT/ops-python-gpu.md" 2>&1 | tee "$OUT/bench.log" | tail -14
