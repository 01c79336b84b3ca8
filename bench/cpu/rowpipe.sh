#!/usr/bin/env bash
# bench/cpu/rowpipe.sh TILE — build bench/cpu/rowpipe.c against the C prelude printed by the
# given `tile` binary and run each form of the row loop (serial, pipe, pipepf, fused) for
# softmax and RMSNorm, one thread, each run alternating with a memcpy (ratio of medians), and
# the two reference loops (copy, expmap: see rowpipe.c).
#   N=16384 CHUNKS="2048" ROUNDS=2 bench/cpu/rowpipe.sh build-bench-e2e/bin/tile
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TILE=$1
NS=${NS:-"4096 16384 65536"}
CHUNKS=${CHUNKS:-2048}
ROUNDS=${ROUNDS:-2}
FORMS=${FORMS:-"serial pipe pipepf fused"}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$TILE" emit "$ROOT/examples/softmax.tl" --target cpu > "$T/emitted.c"
awk '/^\/\* ---------- GEMM on regions/{exit} {print}' "$T/emitted.c" > "$T/rowpipe_prelude.h"
grep -q tile_row_expsumf "$T/rowpipe_prelude.h" || { echo "rowpipe.sh: this tile's prelude has no row helpers" >&2; exit 1; }
cc -std=gnu11 -O2 -fno-fast-math -ffp-contract=off -fno-math-errno -fopenmp-simd -march=native -mprefer-vector-width=512 -w \
   -I"$T" "$ROOT/bench/cpu/rowpipe.c" -o "$T/rowpipe" -lm
echo "| kernel | N | form | chunk | GB/s | memcpy GB/s | / memcpy |"
echo "|---|---|---|---|---|---|---|"
for rep in $(seq "$ROUNDS"); do
  for n in $NS; do
    for k in softmax rmsnorm; do
      for form in $FORMS; do
        for ch in $CHUNKS; do "$T/rowpipe" "$k" "$n" "$form" "$ch"; done
      done
    done
  done
  # the references: a hand-written copy and y = exp(x), without and with the prefetch ahead
  for k in copy expmap; do
    "$T/rowpipe" $k 16384 serial 2048
    "$T/rowpipe" $k 16384 pipe 2048
  done
done
