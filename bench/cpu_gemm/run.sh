#!/usr/bin/env bash
# bench/cpu_gemm/run.sh — Tile's CPU GEMM (tk_cpu_gemm) vs OpenBLAS cblas_sgemm and oneDNN,
# in the same process, and a markdown report in bench/results/cpu-gemm-<date>.md.
#
#   bench/cpu_gemm/run.sh                 f32 at 1024, 2048, 4096 (all cores, then 1 thread),
#                                         small f32 (64x64x32, 64, 128; 1 thread),
#                                         bf16 -> f32 at 1024, 2048
#   SIZES=512,1024 BF16_SIZES= REPS=3 bench/cpu_gemm/run.sh     a quicker run
#   OUT=/tmp/x.md bench/cpu_gemm/run.sh   write the report elsewhere
#
# Installs Debian's libopenblas-dev and libdnnl-dev when missing (apt-get, needs root).
# Builds libtile's static library (Release) in build-bench-gemm/ and links gemm_bench.c
# against it; if the rest of libtile does not build at the moment, it falls back to
# compiling src/kernels + src/core directly and says so in the report.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-gemm}
SIZES=${SIZES:-1024,2048,4096}
BF16_SIZES=${BF16_SIZES-1024,2048}
SMALL_SIZES=${SMALL_SIZES-64x64x32,64,128}   # tile-form block GEMMs, 1 thread
REPS=${REPS:-5}
DATE=$(date +%F)
OUT=${OUT:-$ROOT/bench/results/cpu-gemm-$DATE.md}
NCPU=$(nproc)

# ---- 1. dependencies ----
need=()
dpkg -s libopenblas-dev >/dev/null 2>&1 || need+=(libopenblas-dev)
dpkg -s libdnnl-dev >/dev/null 2>&1 || need+=(libdnnl-dev)
if ((${#need[@]})); then
  echo "installing ${need[*]}" >&2
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}" >/dev/null
fi
OB_INC=/usr/include/x86_64-linux-gnu/openblas-pthread
OB_LIB=/usr/lib/x86_64-linux-gnu/openblas-pthread
[ -f "$OB_INC/cblas.h" ] || OB_INC=$(dirname "$(find /usr/include -name cblas.h -path '*openblas*' | head -1)")
[ -d "$OB_LIB" ] || OB_LIB=$(dirname "$(find /usr/lib -name 'libopenblas.so' | head -1)")
DNNL_FLAGS="-ldnnl"; DNNL_NOTE="oneDNN $(dpkg -s libdnnl-dev 2>/dev/null | sed -n 's/^Version: //p')"
if [ ! -f /usr/include/oneapi/dnnl/dnnl.h ]; then DNNL_FLAGS="-DNO_DNNL"; DNNL_NOTE="oneDNN not available"; fi

# ---- 2. build ----
mkdir -p "$BUILD"
BUILD_NOTE="linked against libtile.a (Release, $BUILD)"
CC=${CC:-cc}
if cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$BUILD/cmake.log" 2>&1 &&
   ninja -C "$BUILD" -j2 tile_static >"$BUILD/ninja.log" 2>&1; then
  LIBS=("$BUILD/libtile.a")
else
  echo "warning: libtile did not build (see $BUILD/ninja.log); compiling src/kernels + src/core directly" >&2
  BUILD_NOTE="libtile did not build at the time: src/kernels + src/core compiled directly with the same flags"
  K=$ROOT/src/kernels; F=(-O3 -std=gnu11 -I"$ROOT/include" -I"$ROOT/src")
  $CC "${F[@]}" -c "$K/cpu_gemm_avx512.c" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c -mavx2 -o "$BUILD/k_avx512.o"
  $CC "${F[@]}" -c "$K/cpu_gemm_avx2.c" -mavx2 -mfma -mf16c -o "$BUILD/k_avx2.o"
  LIBS=("$BUILD/k_avx512.o" "$BUILD/k_avx2.o")
  for f in "$K/cpu_gemm.c" "$K/cpuid.c" "$K/cpu_gemm_generic.c" "$ROOT/src/core/core.c" "$ROOT/src/core/dtype.c" "$ROOT/src/runtime/threadpool.c"; do
    o="$BUILD/k_$(basename "$f" .c).o"; $CC "${F[@]}" -c "$f" -o "$o"; LIBS+=("$o")
  done
  for f in "$K"/cpu_gemm_avx512bf16.c; do
    [ -f "$f" ] || continue
    $CC "${F[@]}" -c "$f" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mfma -o "$BUILD/k_bf16.o" && LIBS+=("$BUILD/k_bf16.o")
  done
fi
$CC -O2 -std=gnu11 -I"$ROOT/include" -I"$ROOT/src" -I"$OB_INC" "$ROOT/bench/cpu_gemm/gemm_bench.c" "${LIBS[@]}" \
    -L"$OB_LIB" -Wl,-rpath,"$OB_LIB" -lopenblas $DNNL_FLAGS -lpthread -ldl -lm -o "$BUILD/gemm_bench"

# ---- 3. run (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset for these commands only) ----
run() { # threads, extra args...
  local t=$1; shift
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$t" OMP_NUM_THREADS="$t" \
    "$BUILD/gemm_bench" --threads "$t" --reps "$REPS" "$@"
}
ROWS=$(mktemp); LOG=$(mktemp)
trap 'rm -f "$ROWS" "$LOG"' EXIT
status=0
for t in "$NCPU" 1; do
  run "$t" --sizes "$SIZES" >>"$ROWS" 2>>"$LOG" || status=1
done
if [ -n "$SMALL_SIZES" ]; then
  run 1 --sizes "$SMALL_SIZES" >>"$ROWS" 2>>"$LOG" || status=1
fi
if [ -n "$BF16_SIZES" ]; then
  for t in "$NCPU" 1; do
    run "$t" --bf16 --sizes "$BF16_SIZES" >>"$ROWS" 2>>"$LOG" || status=1
  done
fi

# ---- 4. report ----
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
FLAGS=$(grep -o -w -E 'avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|amx_bf16|avx2|fma|f16c' /proc/cpuinfo | sort -u | tr '\n' ' ')
OBCORE=$(sed -n 's/.*OpenBLAS core \([^ ]*\).*/\1/p' "$LOG" | head -1)
OBCONF=$(sed -n 's/.*OpenBLAS core [^ ]* (\(.*\))$/\1/p' "$LOG" | head -1)
ISA=$(sed -n 's/^# tile isa \([^,]*\),.*/\1/p' "$LOG" | head -1)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$(dirname "$OUT")"
{
  echo "# CPU GEMM benchmark, $DATE"
  echo
  echo "- CPU: $CPU, $NCPU cores usable by this process (\`nproc\`); features: $FLAGS"
  echo "- Tile ISA path: $ISA; OpenBLAS kernel: $OBCORE ($OBCONF); $DNNL_NOTE"
  echo "- Build: $BUILD_NOTE"
  echo "- Commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || echo " + uncommitted changes in src/ or include/")"
  echo "- Command: \`bench/cpu_gemm/run.sh\` (SIZES=$SIZES SMALL_SIZES=$SMALL_SIZES BF16_SIZES=$BF16_SIZES REPS=$REPS), each run as"
  echo "  \`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=T OMP_NUM_THREADS=T gemm_bench --threads T ...\`"
  echo "- Load average when the run ended: $LOAD (the machine is shared: absolute GFLOP/s move with"
  echo "  the load; the ratios come from interleaved runs in one process and are what to read)"
  echo
  echo "Row-major C = A @ B, M = N = K = size (or MxNxK), random uniform(-1, 1) data; ours checked against"
  echo "OpenBLAS first (max |difference| / (K/4), bound 2 K 2^-24); one warm-up, then $REPS timed runs of"
  echo "each library interleaved (rotating order, 150 ms pause before each run so that threads a"
  echo "library leaves spinning are idle, then one untimed call of the library about to be timed, so"
  echo "that its threads are awake); median GFLOP/s, and the ratio of the best times too."
  echo "bf16 rows: bf16 A and B, f32 C; OpenBLAS runs"
  echo "sgemm on the same values in f32, oneDNN its bf16 matmul primitive (implementation named)."
  echo
  echo "| dtype | size | threads | Tile GFLOP/s | OpenBLAS GFLOP/s | Tile / OpenBLAS (median) | Tile / OpenBLAS (best) | oneDNN GFLOP/s | Tile / oneDNN | check |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  cat "$ROWS"
} >"$OUT"
cat "$OUT"
echo "wrote $OUT" >&2
exit $status
