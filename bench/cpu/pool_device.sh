#!/bin/sh
# bench/cpu/pool_device.sh — one batched run on the GPU machine's Xeon (the `run` tool): the
# thread pool before/after. Builds this checkout (b) and a copy with OLD_THREADPOOL_C as
# src/runtime/threadpool.c (b0), Release, in parallel; runs the pool and AMX GEMM tests at all
# threads, bench/cpu/pool_ab.sh (pool round trips), TILE_GEMM_PROF profiles of 1024^3 / 2048^3
# on all threads and 1024^3 on one pinned thread (one core's packing rate), then bench/cpu/bf16_ab.py (before / after / after without spinning vs torch
# bf16, interleaved rounds). Logs under $OUT (log.txt, ab.md).
#   sh bench/cpu/pool_device.sh OLD_THREADPOOL_C COMMIT [rounds]
# (SKIP_BUILD=1: use b/ and b0/ as they are; SIZES, ISA: the bench's sizes and TILE_CPU_ISA.)
OLD=$(readlink -f "$1"); COMMIT=${2:-?}; R=${3:-5}
export NCCL_NVLS_ENABLE=0
L=$OUT/log.txt
{ date -u; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket"; cat /proc/loadavg; } > $L 2>&1
echo "== build" >> $L
if [ -z "$SKIP_BUILD" ]; then
rm -rf /tmp/old && mkdir -p /tmp/old && tar cf - --exclude=./b --exclude=./b0 . | tar xf - -C /tmp/old && cp "$OLD" /tmp/old/src/runtime/threadpool.c
( cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && timeout 200 ninja -C b -j8 tile_cli test_threadpool test_cpu_gemm > $OUT/build.txt 2>&1; echo "after: build rc=$?" >> $L ) &
( cmake -S /tmp/old -B b0 -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && timeout 200 ninja -C b0 -j8 tile_cli > /tmp/b0.log 2>&1; echo "before: build rc=$?" >> $L ) &
wait
fi
date -u >> $L
echo "== tests (all threads)" >> $L
timeout 90 ctest --test-dir b -R 'threadpool|^kernels\.(gemm|denormal|concurrent)' -j16 --timeout 60 > $OUT/ctest.txt 2>&1
tail -4 $OUT/ctest.txt >> $L
TILE_LOG=info b/tests/cpu/test_threadpool 2>&1 | grep -E "thread pool|spin|ok|FAIL" >> $L
echo "== pool round trips (us per call)" >> $L
timeout 60 sh bench/cpu/pool_ab.sh "$OLD" 3 2>&1 | sed -n '/# medians/,$p' >> $L
echo "== profiles (TILE_GEMM_PROF, all threads)" >> $L
for sz in 1024 2048; do
  for v in "before b0/bin/tile" "after b/bin/tile" "after-nospin b/bin/tile TILE_POOL_SPIN_US=0"; do
    set -- $v
    printf "%s n=%s: " $1 $sz >> $L
    env TILE_GEMM_PROF=1 TILE_CPU_ISA=${ISA-amx} $3 timeout 60 $2 run examples/gemm.tl --target cpu --bench --iters 20 --quiet \
      -D M=$sz -D N=$sz -D K=$sz -D dtype=bfloat16 2>&1 | grep -E "prof|median" | tr '\n' ' ' >> $L
    echo >> $L
  done
done
P1="taskset -c $(($(nproc) - 1))"; $P1 true 2>/dev/null || P1=
printf "after 1 thread (pinned: %s) n=1024: " "$P1" >> $L
env TILE_GEMM_PROF=1 TILE_CPU_ISA=${ISA-amx} TILE_NUM_THREADS=1 timeout 60 $P1 b/bin/tile run examples/gemm.tl --target cpu --bench \
  --iters 5 --quiet -D M=1024 -D N=1024 -D K=1024 -D dtype=bfloat16 2>&1 | grep -E "prof|median" | tr '\n' ' ' >> $L
echo >> $L
date -u >> $L
echo "== bench" >> $L
timeout 200 python3 bench/cpu/bf16_ab.py --var before=b0/bin/tile --var after=b/bin/tile \
  --var 'after-nospin=b/bin/tile:TILE_POOL_SPIN_US=0' --sizes ${SIZES:-1024,2048,4096} --iters 10 --rounds $R --isa "${ISA-amx}" \
  --commit "$COMMIT" --out $OUT/ab.md > /dev/null 2>> $L
echo "bench rc=$?" >> $L; cat /proc/loadavg >> $L; date -u >> $L
