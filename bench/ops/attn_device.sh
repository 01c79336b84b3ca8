#!/usr/bin/env bash
# attn_device.sh — one device call for the attention operators (src/ops/attn.tl): build
# libtile and the CLI, the attention conformance group on cuda (against NumPy f64 and the
# interpreter), then bench/ops/attn_bench.py (ours vs torch SDPA, bf16 B x H x S x {64, 128}).
# Everything goes to $OUT (or /tmp/attn_out). Budgets per step: ATTN_BUILD_S, ATTN_CONF_S,
# ATTN_BENCH_S; ATTN_ITERS timed runs a case.
#
#   OUT=/tmp/x bash bench/ops/attn_device.sh
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/attn_out}
mkdir -p "$O"
B=build-gpu
step() { echo "== $1 $(date -u +%H:%M:%S)"; }
step build
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && timeout ${ATTN_BUILD_S:-80} ninja -C $B -j16 tile tile_cli; } > "$O/build.log" 2>&1
echo "build rc=$?"; tail -2 "$O/build.log"
export TILE_CACHE_DIR=$PWD/$B/tile-cache
step conformance
# ATTN_FULL=1 (the default): every attention case on cuda too, the 16-bit ones included (those
# take the Hopper attention lowering); 0: one case per operator
TILE_OPS_TEST_FULL=${ATTN_FULL:-1} timeout ${ATTN_CONF_S:-90} python3 tests/ops/conformance.py --lib $B/libtile.so --targets interp,cuda --group attn > "$O/conformance.log" 2>&1
echo "conformance rc=$?"; tail -4 "$O/conformance.log"
step bench
timeout ${ATTN_BENCH_S:-120} python3 bench/ops/attn_bench.py --tile $B/bin/tile --iters ${ATTN_ITERS:-10} --out "$O/bench.md" > "$O/bench.log" 2>&1
echo "bench rc=$?"; grep -E "^\| sdpa" "$O/bench.md" 2>/dev/null || tail -8 "$O/bench.log"
step done
