#!/usr/bin/env bash
# cuda_device.sh — one device call for the Hopper GEMM lowering's changes: Release build, the
# sm_90a GEMM tests on the GPU (against the interpreter), the robust sweep's GEMM, decode and
# attention rows (bench/robust/cuda.py), the block_K < 128-byte GEMM rows again with
# TILE_SM90_KMERGE=0 (one iteration a stage) in the same run, then the rest of `ctest -L cuda`
# with what time is left. Everything goes to $OUT (or /tmp/robust_out).
#
#   bash bench/robust/cuda_device.sh
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/robust_out}
mkdir -p "$O"
B=build-gpu
step() { echo "== $1 $(date -u +%H:%M:%S)"; }
step build
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $B -j16 tile tile_cli nvrtc_check test_bench test_alloc_classes; } > "$O/build.log" 2>&1
echo "build rc=$?"; tail -3 "$O/build.log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$O/gpu.txt"
export PYTHONPATH=$PWD/python TILE_LIBRARY=$PWD/$B/libtile.so TILE_CACHE_DIR=/tmp/tile-cache PYTHONUNBUFFERED=1
step "sm90 tests"
timeout ${T_SM90:-60} ctest --test-dir $B -R "^cuda\.sm90\." -j16 --output-on-failure > "$O/tests_sm90.log" 2>&1
echo "rc=$?"; grep -E "tests passed|Failed|\*\*\*|Timeout" "$O/tests_sm90.log" | head -20
step sweep
timeout ${T_SWEEP:-100} python3 bench/robust/cuda.py --only "${ONLY:-^(gemm|decode|attn)}" --out "$O/sweep.md" > "$O/sweep.log" 2>&1
echo "rc=$?"; tail -5 "$O/sweep.log"
step "sweep, TILE_SM90_KMERGE=0"
TILE_SM90_KMERGE=0 timeout ${T_SWEEP0:-45} python3 bench/robust/cuda.py --only "${ONLY0:-x(32|16) |decode}" --out "$O/sweep_k0.md" > "$O/sweep_k0.log" 2>&1
echo "rc=$?"; tail -3 "$O/sweep_k0.log"
step "ring depth probes (tile run --bench, fp16 4096^3)"
for c in "128 128 64 4" "128 128 64 8" "64 128 64 4" "64 128 64 8" "64 256 64 4" "64 256 64 5" "128 128 32 4" "128 128 32 8"; do
  set -- $c
  printf '%sx%sx%s num_stages=%s: ' $1 $2 $3 $4 | tee -a "$O/probes.txt"
  timeout 30 $B/bin/tile run examples/gemm.tl -D M=4096 -D N=4096 -D K=4096 -D dtype=float16 -D block_M=$1 -D block_N=$2 -D block_K=$3 \
      -D threads=256 -D num_stages=$4 --target cuda --bench --iters 20 --quiet 2>&1 | tail -1 | tee -a "$O/probes.txt"
done
step "ctest -L cuda"
timeout ${T_CUDA:-45} ctest --test-dir $B -L cuda -E "^cuda\.sm90\." -j16 --schedule-random > "$O/tests_cuda.log" 2>&1
echo "rc=$?"; grep -E "tests passed|Failed|\*\*\*Fail|Timeout|Not Run" "$O/tests_cuda.log" | head -30
step done
