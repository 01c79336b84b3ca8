#!/usr/bin/env bash
# bench/cpu/run.sh — Tile on the cpu target, end to end (bench/cpu/e2e.c): the seed matmul
# (auto-scheduled) and the tile-form GEMM vs OpenBLAS, softmax and RMSNorm vs memcpy
# bandwidth, compile latency; all cores, then one thread. Writes bench/results/cpu-e2e-<date>.md.
#   SIZES=1024,2048 ROWS=4096,65536 REPS=3 bench/cpu/run.sh      a quicker run
#   ROWS_ONLY=1 bench/cpu/run.sh                                  softmax/RMSNorm vs memcpy only
# Installs Debian's libopenblas-dev when missing, except with ROWS_ONLY=1: that build needs
# nothing but cmake, ninja and cc (e2e.c built with -DE2E_NO_BLAS). The library-level GEMM
# comparison (and bf16 vs oneDNN) is bench/cpu_gemm/run.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-e2e}
SIZES=${SIZES:-1024,2048,4096}
ROWS=${ROWS:-4096,16384,65536}
REPS=${REPS:-5}
ROWS_ONLY=${ROWS_ONLY:-0}
EXTRA=()
[ "$ROWS_ONLY" = 1 ] && EXTRA=(--no-gemm --no-latency)
OUT=${OUT:-$ROOT/bench/results/cpu-e2e-$(date +%F).md}
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD" tile_static tile_cli >/dev/null
if [ "$ROWS_ONLY" = 1 ]; then
  cc -O2 -std=gnu11 -DE2E_NO_BLAS -I"$ROOT/include" "$ROOT/bench/cpu/e2e.c" "$BUILD/libtile.a" -lpthread -ldl -lm -o "$BUILD/e2e"
else
  if ! dpkg -s libopenblas-dev >/dev/null 2>&1; then
    SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q libopenblas-dev >/dev/null
  fi
  OB_INC=/usr/include/x86_64-linux-gnu/openblas-pthread
  OB_LIB=/usr/lib/x86_64-linux-gnu/openblas-pthread
  cc -O2 -std=gnu11 -I"$ROOT/include" -I"$OB_INC" "$ROOT/bench/cpu/e2e.c" "$BUILD/libtile.a" -L"$OB_LIB" -lopenblas -lpthread -ldl -lm \
     -Wl,-rpath,"$OB_LIB" -o "$BUILD/e2e"
fi
NCPU=$(nproc)
CPU=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
{
  echo "# Tile on the cpu target, end to end, $(date +%F)"
  echo
  echo "- CPU: $CPU, $NCPU cores usable (nproc); Tile's cpu target: $("$BUILD/bin/tile" devices | sed -n 's/^cpu *available *//p')"
  [ "$ROWS_ONLY" = 1 ] || echo "- OpenBLAS: $(dpkg -s libopenblas0-pthread 2>/dev/null | sed -n 's/^Version: //p') (pthread build), run with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset"
  echo "- Command: \`bench/cpu/run.sh\` (SIZES=$SIZES ROWS=$ROWS REPS=$REPS ROWS_ONLY=$ROWS_ONLY), i.e. \`e2e --threads T --sizes $SIZES --rows $ROWS --reps $REPS ${EXTRA[*]}\` for T = $NCPU and 1"
  echo "- Load average before: $(cut -d' ' -f1-3 /proc/loadavg) (read the ratios: each row kernel is timed in rounds alternating with a memcpy of the same buffers)"
  echo "- Commit: $(git -C "$ROOT" rev-parse --short HEAD)"
  for T in "$NCPU" 1; do
    echo
    echo "## $T thread$([ "$T" = 1 ] || echo s)"
    (cd "$ROOT" && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$T" "$BUILD/e2e" --threads "$T" --sizes "$SIZES" --rows "$ROWS" --reps "$REPS" "${EXTRA[@]}")
  done
  echo
  echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"
