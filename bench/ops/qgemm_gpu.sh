#!/usr/bin/env bash
# bench/ops/qgemm_gpu.sh — the quantised and grouped GEMM operators on the H200 device machine
# (not CI), in one call of under 300 s:
#
#   bash bench/ops/qgemm_gpu.sh        (from the repository root; results under $OUT or ./gpu-out)
#
# Builds libtile and the CLI, runs the operator kernels' sm_90a tests on the GPU (tests/cuda/
# sm90.txt rows ops_*: against the interpreter; cuda.sm90ptxas.ops_*), bench/ops/qgemm_bench.py
# (results: $OUT/ops-qgemm-DATE.md, for bench/results/) and tests/python/test_ops_quant.py's CUDA test.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TILE_CACHE_DIR=${TILE_CACHE_DIR:-/tmp/tile-cache} PYTHONUNBUFFERED=1
export PATH=/usr/local/cuda/bin:/usr/local/cuda-13.0/bin:$PATH
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
  ninja -C build tile tile_cli nvrtc_check >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
(cd build && ctest -R "cuda\.sm90\.(nvrtc\.)?ops_|cuda\.sm90ptxas\.ops_" -j8 --output-on-failure) >"$OUT/ctest.log" 2>&1
grep -E "tests passed|Failed" "$OUT/ctest.log" | grep -v Skipped | head -20
export PYTHONPATH=$PWD/python TILE_LIBRARY=$PWD/build/libtile.so
python3 bench/ops/qgemm_bench.py --iters 20 --out "$OUT/ops-qgemm-$(date -u +%Y-%m-%d).md" 2>&1 | tee "$OUT/bench.log" | tail -40
python3 -m pytest -q -p no:cacheprovider tests/python/test_ops_quant.py -k cuda 2>&1 | tee "$OUT/pytest.log" | tail -8
