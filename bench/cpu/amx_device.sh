#!/bin/sh
# bench/cpu/amx_device.sh — one batched run on the GPU machine's Xeon (the `run` tool) for the
# bf16 AMX GEMM: Release build, `ctest -L 'kernels|cpu'`, TILE_GEMM_PROF phase profiles at 16
# threads and 1 thread, blocking/task-split sweeps, then bench/cpu/bf16_torch.py (interleaved
# rounds). Logs under $OUT (few files). Usage: sh bench/cpu/amx_device.sh COMMIT [quick]
COMMIT=${1:-?}
MODE=${2:-full}
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
{ date -u; lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3|Flags" | cut -c1-300; cat /proc/loadavg; } > $L 2>&1
echo "== build" >> $L
timeout 180 sh -c 'cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C b -j16 > b.log 2>&1'
echo "build rc=$?" >> $L; tail -3 b.log >> $L
echo "== ctest" >> $L
if [ "$MODE" = full ]; then LE=; else LE="-LE opencl"; fi  # quick: without opencl.portability (100 s)
timeout 150 ctest --test-dir b -L 'kernels|cpu' $LE -j16 --timeout 100 > $OUT/ctest.txt 2>&1
tail -12 $OUT/ctest.txt >> $L
( TILE_CPU_ISA=amx timeout 60 b/tests/kernels/test_cpu_gemm denormal 2>&1 | tail -3 ) >> $L
T=b/bin/tile
prof() { # threads size iters [VAR=value ...]
  th=$1; sz=$2; it=$3; shift 3
  printf "%s t=%s n=%s: " "$*" $th $sz >> $L
  env TILE_GEMM_PROF=1 TILE_NUM_THREADS=$th "$@" timeout 100 $T run examples/gemm.tl --target cpu --bench --iters $it \
    --quiet -D M=$sz -D N=$sz -D K=$sz -D dtype=bfloat16 2>&1 | grep -E "prof|median" | tr '\n' ' ' >> $L
  echo >> $L
}
echo "== profiles (TILE_GEMM_PROF)" >> $L
if [ "$MODE" = full ]; then
  for sz in 1024 2048 4096; do prof 16 $sz 10; done
  for sz in 1024 2048; do prof 1 $sz 3; done
else
  prof 16 1024 10; prof 16 4096 10
  P1="taskset -c $(($(nproc) - 1))"; $P1 true 2>/dev/null || P1=
  printf "(pinned: %s) " "$P1" >> $L; T0=$T; T="$P1 $T0"; prof 1 1024 3; T=$T0
fi
if [ "$MODE" = full ]; then
  echo "== sweeps" >> $L
  for kc in 256 384 512 768; do prof 1 2048 3 TILE_GEMM_KC=$kc; done
  prof 1 2048 3 TILE_GEMM_AMX_PF=0
  for w in 2 4; do for sz in 1024 2048 4096; do prof 16 $sz 10 TILE_GEMM_MIN_WAVES=$w; done; done
  for kc in 384 768; do for sz in 1024 4096; do prof 16 $sz 10 TILE_GEMM_KC=$kc; done; done
fi
echo "== bench" >> $L
timeout 160 python3 bench/cpu/bf16_torch.py --tile $T --sizes 1024,2048,4096 --iters 10 --threads all,1 --iters1 3 \
  --rounds 3 --commit "$COMMIT" --out $OUT/bench.md > /dev/null 2>> $L
echo "bench rc=$?" >> $L; cat /proc/loadavg >> $L; date -u >> $L
