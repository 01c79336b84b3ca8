#!/bin/sh
# fp8_f32_check.sh TILE BOUND ARGS... — an fp8 GEMM with an f32 result under TILE_SM90_FP8_F32=1
# on the GPU: the kernel must take the sm_90a lowering (the run's log) and its result must be
# within BOUND (norm-wise relative) of the interpreter's. That is looser than the f32 check's
# 1e-5 by design: wgmma's fp8 sums carry fewer bits than f32 (docs/backends-gpu.md, "fp8 with
# an f32 result"), so `tile run --check` may exit 2; this script applies the documented bound.
# Exit 77 without a CUDA device.
tile=$1; bound=$2
shift 2
line=$("$tile" devices 2>&1 | grep "^cuda ")
case "$line" in *" available "*) ;; *) echo "SKIP: no cuda: $line"; exit 77 ;; esac
out=$(TILE_SM90_FP8_F32=1 TILE_LOG=info "$tile" run "$@" --target cuda --check 2>&1)
echo "$out" | grep -E "lowering|check "
echo "$out" | grep -q ": lowering sm90-wgmma " || { echo "the sm_90a lowering was not taken"; exit 1; }
err=$(echo "$out" | grep -o 'max relative error [0-9.e+-]*' | head -1 | awk '{print $4}')
[ -n "$err" ] || { echo "no check line"; exit 1; }
awk -v e="$err" -v b="$bound" 'BEGIN { exit !(e + 0 <= b + 0) }' || { echo "error $err above $bound"; exit 1; }
exit 0
