#!/usr/bin/env bash
# bench/cpu/rowpass.sh TILE [STREAMS] — compile bench/cpu/rowpass.c against the C prelude
# printed by the given `tile` binary (`tile emit`), with the cpu target's flags, and print
# one row: cycles per element of chunk max | exp+sum | write pass | total (one row in cache)
# [| fused exp+sum+write of the previous row | max + fused] (a prelude with tile_row_expsum_wrf).
#   bench/cpu/rowpass.sh build-bench-e2e/bin/tile 4      this tree (max in four streams)
#   bench/cpu/rowpass.sh /path/to/main/build/bin/tile 1   a build of main (one stream)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TILE=$1
STREAMS=${2:-4}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$TILE" emit "$ROOT/examples/softmax.tl" --target cpu > "$T/emitted.c"
awk '/^\/\* ---------- GEMM on regions/{exit} {print}' "$T/emitted.c" > "$T/rowpass_prelude.h"
WRF=0
grep -q tile_row_expsum_wrf "$T/rowpass_prelude.h" && WRF=1   # session 5: two more columns (rowpass.c)
cc -std=gnu11 -O2 -fno-fast-math -ffp-contract=off -fno-math-errno -fopenmp-simd -march=native -mprefer-vector-width=512 -w \
   -DROWPASS_STREAMS="$STREAMS" -DROWPASS_WRF=$WRF -I"$T" "$ROOT/bench/cpu/rowpass.c" -o "$T/rowpass" -lm
"$T/rowpass"
