#!/usr/bin/env bash
# bench/cpu/rowforms.sh TILE — build bench/cpu/rowforms.c against the C prelude printed by the
# given `tile` binary (with the row helpers: this tree or later) and run every combination of
# kernel, write-loop form and next-row prefetch at N = 16384, one thread, interleaved.
#   bench/cpu/rowforms.sh build-bench-e2e/bin/tile
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TILE=$1
N=${N:-16384}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$TILE" emit "$ROOT/examples/softmax.tl" --target cpu > "$T/emitted.c"
awk '/^\/\* ---------- GEMM on regions/{exit} {print}' "$T/emitted.c" > "$T/rowforms_prelude.h"
grep -q tile_row_expsumf "$T/rowforms_prelude.h" || { echo "rowforms.sh: this tile's prelude has no row helpers" >&2; exit 1; }
cc -std=gnu11 -O2 -fno-fast-math -ffp-contract=off -fno-math-errno -fopenmp-simd -march=native -mprefer-vector-width=512 -w \
   -I"$T" "$ROOT/bench/cpu/rowforms.c" -o "$T/rowforms" -lm
echo "| kernel | N | write loop | next-row prefetch | GB/s | memcpy GB/s | / memcpy |"
echo "|---|---|---|---|---|---|---|"
for rep in 1 2; do
  for k in softmax rmsnorm; do
    for form in buf256 vector; do
      for pf in 0 1; do "$T/rowforms" "$k" "$N" "$form" "$pf"; done
    done
  done
done
