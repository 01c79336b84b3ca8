#!/bin/bash
# gemm_quick.sh OUTDIR [quick|full] — on an H200 machine: build; full: run the cuda tests
# (ctest -L cuda: every CUDA test against the interpreter, sm90 ones included) and look for
# HGMMA/QGMMA and local memory in the SASS of the sm90 kernels; then time it against PyTorch (cuBLAS / cuBLASLt fp8) with gemm_quick.py.
# Every step has a timeout; logs and results go to OUTDIR.
out=${1:-/tmp/gemm_quick}; mode=${2:-full}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TILE_CACHE_DIR=$out/cache
exec > >(tee "$out/log.txt") 2>&1
set -x
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
timeout 240 cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
timeout 300 ninja -C build-rel -j16 tile_cli nvrtc_check >/dev/null || exit 1
T=build-rel/bin/tile
set +x
if [ "$mode" = quick ]; then
  # the GPU tests of tests/cuda/sm90.txt only, with `tile run --check`
  grep -v '^#' tests/cuda/sm90.txt | while IFS='|' read -r name expect args; do
    [ -n "$args" ] || continue
    echo "== $name ($expect):"; timeout 120 $T run $args --target cuda --check --quiet; echo "rc=$?"
  done
fi
if [ "$mode" = full ]; then
  # every CUDA test (examples, test programs, tests/cuda/sm90.txt) against the interpreter
  timeout 300 ninja -C build-rel -j16 >/dev/null || exit 1
  timeout 400 ctest --test-dir build-rel -L cuda -j8 --timeout 120 > "$out/ctest.txt" 2>&1; grep -E "tests passed|Failed|\*\*\*|Timeout" "$out/ctest.txt" | grep -v Skipped | tail -30
  echo "== SASS of the cubins of the sm90 tests (HGMMA/QGMMA count, local-memory instructions)"
  for f in build-rel/tile-cache/*.cubin; do
    n_h=$(cuobjdump --dump-sass "$f" | grep -c -E "HGMMA|QGMMA"); n_l=$(cuobjdump --dump-sass "$f" | grep -c -E "STL|LDL")
    [ "$n_h" -gt 0 ] && echo "$(basename $f): GMMA=$n_h local-mem=$n_l"
  done
fi
echo "== bench"
B="python3 bench/cuda/gemm_quick.py --tile $T --json $out/gemm.jsonl"
for s in 4096x4096x4096 8192x8192x8192 4096x7168x2048; do
  timeout 120 $B --dtype bfloat16 --shape $s -D block_M=128 -D block_N=256 -D block_K=64 -D threads=256 -D num_stages=4
done
# the grid rasterisation's effect: the same kernel with blocks in plain order
TILE_SM90_GROUP=1 timeout 120 $B --dtype bfloat16 --shape 8192x8192x8192 -D block_M=128 -D block_N=256 -D block_K=64 -D threads=256 -D num_stages=4
for s in 4096x4096x4096 8192x8192x8192 4096x7168x2048; do
  timeout 120 $B --dtype float8_e4m3 --shape $s -D block_M=128 -D block_N=128 -D block_K=128 -D threads=256 -D num_stages=6
done
