#!/bin/sh
# bench/cpu/amxa_device.sh — ONE run on the GPU machine's Xeon (the `run` tool) for the AMX bf16
# GEMM reading A in place (TILE_GEMM_AMX_DIRECT_A, docs/cpu-gemm.md): Release build into
# build-amxa (the two binaries it runs: bin/tile, test_cpu_gemm), `ctest -L kernels`, the real AMX kernel's gemm / denormal / amxa tests, one
# TILE_GEMM_PROF profile per switch value at 1024^3 on 16 threads (shows whether A was read in
# place and the packing time), then interleaved A/B rounds (bench/cpu/bf16_ab.py: A in place
# vs A packed vs A in place with A prefetch (=2) vs torch bf16, same rounds) at 16 threads and
# at 1 thread for 1024/2048/4096.
# Every step has a timeout, all cut to a common deadline: the script ends within ~230 s.
# Output under $OUT, 4 files: log.txt (steps, tests, profiles), ctest.txt, ab16.md, ab1.md;
# the A/B tables are printed last on stdout.
#   Usage: sh bench/cpu/amxa_device.sh COMMIT
COMMIT=${1:-?}
OUT=${OUT:-/tmp/amxa_out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
DEADLINE=225
L=$OUT/log.txt
. "$(dirname "$0")/device_steps.sh" # tmo, step
{ date -u; echo "commit $COMMIT"; lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3" | cut -c1-200; cat /proc/loadavg; } > $L 2>&1

step build 110 sh -c 'cmake -S . -B build-amxa -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C build-amxa -j16 bin/tile tests/kernels/test_cpu_gemm > build-amxa.log 2>&1'
tail -2 build-amxa.log >> $L 2>/dev/null
TG=build-amxa/tests/kernels/test_cpu_gemm
TB=build-amxa/bin/tile

step ctest-kernels 40 ctest --test-dir build-amxa -L kernels -j16 --timeout 30 > $OUT/ctest.txt 2>&1
grep -E "tests passed|Failed|\(Failed|Timeout|Skipped" $OUT/ctest.txt | head -12 >> $L

for m in gemm denormal amxa; do
  step "TILE_CPU_ISA=amx test_cpu_gemm $m" 25 env TILE_CPU_ISA=amx $TG $m > $OUT/.t 2>&1
  grep -E "isa|kernel|cases|FAIL|skipped" $OUT/.t | head -8 >> $L
done
step "TILE_CPU_ISA=amx TILE_GEMM_AMX_DIRECT_A=2 test_cpu_gemm amxa" 25 env TILE_CPU_ISA=amx TILE_GEMM_AMX_DIRECT_A=2 \
  $TG amxa > $OUT/.t 2>&1
grep -E "isa|kernel|cases|FAIL|skipped" $OUT/.t | head -8 >> $L
rm -f $OUT/.t

for v in 1 0 2; do
  step "prof DIRECT_A=$v" 15 env TILE_GEMM_PROF=1 TILE_GEMM_AMX_DIRECT_A=$v TILE_NUM_THREADS=16 TILE_CPU_ISA=amx \
    $TB run examples/gemm.tl --target cpu --bench --iters 20 --quiet -D M=1024 -D N=1024 -D K=1024 -D dtype=bfloat16 \
    > $OUT/.p 2>&1
  printf "TILE_GEMM_AMX_DIRECT_A=%s 16 threads 1024^3: " $v >> $L
  grep -E "prof|median|rror" $OUT/.p | tr '\n' ' ' >> $L
  echo >> $L
done
rm -f $OUT/.p

V="--var in_place=$TB:TILE_GEMM_AMX_DIRECT_A=1 --var packed=$TB:TILE_GEMM_AMX_DIRECT_A=0"
V="$V --var in_place_pfa=$TB:TILE_GEMM_AMX_DIRECT_A=2"  # + software prefetch of A's rows
# bf16_ab.py prints each table row to stderr as it is measured (kept if a step times out)
step "A/B 16 threads" 70 python3 bench/cpu/bf16_ab.py $V --threads 16 --sizes 1024,2048,4096 --iters 20 --rounds 5 \
  --commit "$COMMIT" --out $OUT/ab16.md > /dev/null 2> $OUT/ab16.err
[ -s $OUT/ab16.md ] || mv $OUT/ab16.err $OUT/ab16.md
rm -f $OUT/ab16.err
step "A/B 1 thread" 90 python3 bench/cpu/bf16_ab.py $V --threads 1 --sizes 1024,2048,4096 --iters 3 --rounds 3 \
  --commit "$COMMIT" --out $OUT/ab1.md > /dev/null 2> $OUT/ab1.err
[ -s $OUT/ab1.md ] || mv $OUT/ab1.err $OUT/ab1.md
rm -f $OUT/ab1.err
{ cat /proc/loadavg; date -u; echo "total $(($(date +%s) - T0)) s"; } >> $L

cat $L
echo
echo "== A/B (torch/ours > 1: ours faster; 'vs in_place' > 1: that variant faster than in_place)"
for f in ab16 ab1; do echo "-- $f"; grep -E "^\| [0-9]|^\| size" $OUT/$f.md 2>/dev/null || tail -5 $OUT/$f.md; done
