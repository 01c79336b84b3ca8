#!/bin/sh
# bench/cpu/pack_device.sh — ONE run on the GPU machine's 16-core Xeon (the `run` tool) asking
# why the AMX bf16 GEMM's packing step is slow per core at 1024^3 on 16 threads (session 5:
# 4.6x slower per core than one pinned core) and whether packing B privately per task fixes it:
#   1. Release build into build-dev (bin/tile, test_cpu_gemm, libtile.a) and bench/cpu/bf16_pack;
#   2. bf16_pack on 1 / 4 / 16 threads, caches warm, --readall (every core read the packed
#      output before the round: stores hit lines every core holds), --rotate (stores hit lines
#      another core wrote), --flush 64 (sources from memory);
#      (PACK_THREADS, PACK_MODES override the thread counts and the modes); f32 1024^3 on 16
#      threads per F32_VARS variant (none by default);
#   3. TILE_GEMM_PROF at 1024^3 on 16 threads for each variant below (and TILE_POOL_MOVE=0);
#   4. bench/cpu/bf16_ab.py: the variants against torch bf16 (oneDNN), interleaved rounds, at
#      16 threads, 1024 / 2048 / 4096. Variants: VARS (LABEL=ENV,ENV;...) or the default set.
#   5. TESTS=1: the GEMM tests (regions, gemm, denormal, amxa) on the real AMX kernel, before 4.
# Every step has a timeout under a common deadline (DEADLINE s, default 240; the A/B step
# AB_TIMEOUT s, default 150).
# Output under $OUT: log.txt (steps, bf16_pack, profiles), ab16.md; the log is printed last.
#   Usage: sh bench/cpu/pack_device.sh COMMIT
COMMIT=${1:-?}
OUT=${OUT:-/tmp/pack_out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
DEADLINE=${DEADLINE:-240}
L=$OUT/log.txt
. "$(dirname "$0")/device_steps.sh" # tmo, step
{ date -u; echo "commit $COMMIT"; lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3" | cut -c1-200; cat /proc/loadavg; } > $L 2>&1
B=${BUILD:-build-dev}
step build 120 sh -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C $B -j16 bin/tile tests/kernels/test_cpu_gemm tile_static tile_link_tool > $B.log 2>&1"
tail -2 $B.log >> $L 2>/dev/null
TB=$B/bin/tile
LIBA=$(ls $B/libtile*.a 2>/dev/null | head -1)
step bf16_pack-build 30 cc -O2 -I include -I src bench/cpu/bf16_pack.c $LIBA -lpthread -ldl -lm -o $B/bf16_pack
# PACK_THREADS, PACK_MODES (bf16_pack options per mode, ';' between modes; '-' = none)
IFS_OLD=$IFS
for nt in ${PACK_THREADS:-1 4 16}; do
  IFS=';'
  for m in ${PACK_MODES:-"-;--readall 1;--rotate 1;--flush 64"}; do
    IFS=$IFS_OLD
    [ "$m" = - ] && m=""
    step "bf16_pack --threads $nt $m" 15 $B/bf16_pack --threads $nt --reps 20 $m >> $L 2>&1
    IFS=';'
  done
  IFS=$IFS_OLD
done
# F32_VARS: f32 1024^3 on 16 threads, `tile run --bench` per variant (ENV,ENV), 3 interleaved rounds
for r in 1 2 3; do
  for v in $F32_VARS; do
    printf "f32 1024^3 16 threads %s round %s: " "$v" $r >> $L
    step "f32 $v" 15 env $(echo $v | tr ',' ' ') TILE_NUM_THREADS=16 $TB run examples/gemm.tl --target cpu --bench --iters 30 \
      --quiet -D M=1024 -D N=1024 -D K=1024 -D dtype=float32 > $OUT/.p 2>&1
    grep -E "median|rror" $OUT/.p | tr '\n' ' ' >> $L
    echo >> $L
  done
done

VARS=${VARS:-"def=X=1;priv=TILE_GEMM_BSHARED=0;priv_w1=TILE_GEMM_BSHARED=0,TILE_GEMM_MIN_WAVES=1"}
V=""
IFS_OLD=$IFS; IFS=';'
for v in $VARS; do
  IFS=$IFS_OLD
  label=${v%%=*}; envs=${v#*=}
  V="$V --var $label=$TB:$envs"
  for mv in 1 0; do
    printf "prof %s TILE_POOL_MOVE=%s 16 threads 1024^3: " "$label" $mv >> $L
    step "prof $label move=$mv" 15 env $(echo $envs | tr ',' ' ') TILE_POOL_MOVE=$mv TILE_GEMM_PROF=1 TILE_NUM_THREADS=16 \
      TILE_CPU_ISA=amx $TB run examples/gemm.tl --target cpu --bench --iters 30 --quiet -D M=1024 -D N=1024 -D K=1024 \
      -D dtype=bfloat16 > $OUT/.p 2>&1
    grep -E "prof|median|rror" $OUT/.p | tr '\n' ' ' >> $L
    echo >> $L
  done
  IFS=';'
done
IFS=$IFS_OLD
rm -f $OUT/.p
# TESTS=1: the GEMM tests on the real AMX kernel (test_cpu_gemm MODE with TILE_CPU_ISA=amx)
if [ "${TESTS:-0}" = 1 ]; then
  for m in regions gemm denormal amxrows; do
    step "test_cpu_gemm $m (amx)" 60 env TILE_CPU_ISA=amx $B/tests/kernels/test_cpu_gemm $m > $OUT/.t 2>&1
    tail -1 $OUT/.t >> $L; grep -m3 FAIL $OUT/.t >> $L
  done
  rm -f $OUT/.t
fi
step "A/B 16 threads" ${AB_TIMEOUT:-150} python3 bench/cpu/bf16_ab.py $V --threads 16 --sizes ${SIZES:-1024,2048,4096} --iters 20 --rounds 5 \
  --commit "$COMMIT" --out $OUT/ab16.md > /dev/null 2> $OUT/ab16.err
[ -s $OUT/ab16.md ] || mv $OUT/ab16.err $OUT/ab16.md
rm -f $OUT/ab16.err
{ cat /proc/loadavg; date -u; echo "total $(($(date +%s) - T0)) s"; command -v perf; } >> $L
cat $L
echo
grep -E "^\| [0-9]|^\| size" $OUT/ab16.md 2>/dev/null || tail -5 $OUT/ab16.md
