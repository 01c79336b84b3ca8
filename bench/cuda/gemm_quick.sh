#!/bin/bash
# gemm_quick.sh OUTDIR [quick|full] — on an H200 machine: build, check the sm_90a GEMM
# lowering against the interpreter (tile run --check), look for HGMMA/QGMMA and spills in
# its SASS, then time it against PyTorch (cuBLAS / cuBLASLt fp8) with gemm_quick.py.
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
run() { echo "== $*"; timeout 120 $T run "$@" --target cuda --check --quiet; echo "rc=$?"; }
# the Hopper configurations (2 consumer warpgroups) and small/ragged ones (1 consumer)
H="-D block_M=128 -D block_N=256 -D block_K=64 -D threads=256 -D num_stages=4 -D trans_B=True"
run examples/gemm.tl -D M=512 -D N=512 -D K=512 -D dtype=bfloat16 $H
run examples/gemm.tl -D M=200 -D N=264 -D K=320 -D dtype=bfloat16 $H -D out_dtype=bfloat16
run examples/gemm.tl -D M=256 -D N=128 -D K=256 -D dtype=float16 -D trans_B=True -D block_M=64 -D block_N=128 -D block_K=64 -D num_stages=3
run examples/gemm.tl -D M=100 -D N=72 -D K=64 -D dtype=bfloat16 -D trans_B=True
run examples/gemm_fp8.tl -D M=128 -D N=128 -D K=256
run examples/gemm_fp8.tl -D M=100 -D N=96 -D K=160 -D out_dtype=bfloat16
run examples/gemm_fp8.tl -D M=384 -D N=512 -D K=512 -D block_M=128 -D block_N=256 -D block_K=128 -D threads=256 -D num_stages=4
echo "== SASS"
for f in $out/cache/*.cubin; do
  n_h=$(cuobjdump --dump-sass "$f" | grep -c -E "HGMMA|QGMMA"); n_l=$(cuobjdump --dump-sass "$f" | grep -c -E "STL|LDL")
  echo "$(basename $f): GMMA=$n_h local-mem=$n_l"
done
echo "== bench"
B="python3 bench/cuda/gemm_quick.py --tile $T --json $out/gemm.jsonl"
for s in 4096x4096x4096 8192x8192x8192 4096x7168x2048; do
  timeout 120 $B --dtype bfloat16 --shape $s -D block_M=128 -D block_N=256 -D block_K=64 -D threads=256 -D num_stages=4
done
for s in 4096x4096x4096 8192x8192x8192 4096x7168x2048; do
  timeout 120 $B --dtype float8_e4m3 --shape $s -D block_M=128 -D block_N=256 -D block_K=128 -D threads=256 -D num_stages=4
done
