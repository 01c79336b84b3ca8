#!/usr/bin/env bash
# bench/ops/gpu.sh — TileKernels on an NVIDIA GPU (for the H200 machine; not run in CI).
#
#   cd .dev/ops && bash bench/ops/gpu.sh [RESULTS_FILE]
#
# 1. Builds libtile and runs the conformance test on cuda (every operator against NumPy f64
#    references and the interpreter; a sample of shapes, TILE_OPS_TEST_FULL=1 for all).
# 2. Times the operators' kernels with `tile run --bench --target cuda` (tensors resident on
#    the device, CUDA-event times of the kernel launches, L2 flushed before each run) and the
#    same operations in PyTorch (CUDA events, L2 flushed by a 256 MB write between runs),
#    side by side, with the device copy bandwidth (a torch clone) as the memory-bound peer.
#    The operator API itself takes host tensors today (every call copies), so the kernel
#    times are what to compare until device tensors land.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-bench/results/ops-gpu-$(date +%Y%m%d-%H%M).md}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
ninja -C build-gpu tile tile_cli > /dev/null
TILE=build-gpu/bin/tile
export TILE_CACHE_DIR=$PWD/build-gpu/tile-cache
{
  echo "# TileKernels on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo
  echo "- date: $(date '+%Y-%m-%d %H:%M'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "- command: bash bench/ops/gpu.sh"
  echo
  echo '## Conformance on cuda'
  echo '```'
  python3 tests/ops/conformance.py --lib build-gpu/libtile.so --targets interp,cuda 2>&1 | tail -20 || true
  echo '```'
} > "$OUT"
bench() {  # name, file, factory, defines..., then torch expression after --
  local name=$1 file=$2 fn=$3; shift 3
  local defs=()
  while [ "$1" != "--" ]; do defs+=("$1"); shift; done
  shift
  local t
  t=$($TILE run "$file" -f "$fn" "${defs[@]}" --target cuda --bench --iters 20 2>&1 | grep -oE 'median [0-9.]+ (ms|us)' | head -1 || echo "failed")
  echo "| $name | $t | $(python3 - "$@" <<'PY'
import sys, torch
stmt, setup = sys.argv[1], sys.argv[2]
g = {"torch": torch}
exec(setup, g)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
ts = []
for i in range(23):
    flush.zero_()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); exec(stmt, g); e.record(); torch.cuda.synchronize()
    if i >= 3: ts.append(s.elapsed_time(e))
ts.sort(); print("median %.4f ms" % ts[len(ts) // 2])
PY
) |"
}
{
  echo
  echo '## Kernels: tile (tile run --bench) vs PyTorch, medians of 20'
  echo
  echo '| operation | tile | torch |'
  echo '|---|---|---|'
  M=8192; N=8192
  bench "copy bf16 ${M}x${N} (device bandwidth peer)" src/ops/gen/copy.tl gather1 -D x_dtype=bfloat16 -D y_dtype=bfloat16 -D unit=1 -D block=1024 \
    --shape X=$((M*N)):bfloat16 --shape Y=$((M*N)):bfloat16 -D o=0 -D s0=1 -- "y = x.clone()" "x = torch.randn($M*$N, device='cuda', dtype=torch.bfloat16)"
  bench "add bf16 ${M}x${N}" src/ops/gen/binary.tl b_add -D a_dtype=bfloat16 -D b_dtype=bfloat16 -D o_dtype=bfloat16 -D c_dtype=float32 -D block=1024 \
    --shape A=1x1x$((M*N)):bfloat16 --shape B=1x1x$((M*N)):bfloat16 --shape C=1x1x$((M*N)):bfloat16 -D alpha=1 -- "z = a + b" "a = torch.randn($M*$N, device='cuda', dtype=torch.bfloat16); b = a.clone()"
  bench "silu bf16 ${M}x${N}" src/ops/gen/unary.tl u_silu -D x_dtype=bfloat16 -D y_dtype=bfloat16 -D c_dtype=float32 -D block=1024 \
    --shape X=$((M*N)):bfloat16 --shape Y=$((M*N)):bfloat16 -D p0=0 -D p1=0 -D p2=0 -- "y = torch.nn.functional.silu(x)" "x = torch.randn($M*$N, device='cuda', dtype=torch.bfloat16)"
  bench "rms_norm bf16 ${M}x${N}" src/ops/norm.tl rms_norm -D x_dtype=bfloat16 -D w_dtype=bfloat16 -D NB=2048 -D has_res=0 \
    --shape X=${M}x${N}:bfloat16 --shape W=$N:bfloat16 --shape R=1x1:bfloat16 --shape Y=${M}x${N}:bfloat16 --shape H=1x1:bfloat16 -D eps=1e-6 \
    -- "y = torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)" "x = torch.randn($M, $N, device='cuda', dtype=torch.bfloat16); w = torch.randn($N, device='cuda', dtype=torch.bfloat16)"
  bench "softmax bf16 ${M}x${N}" src/ops/softmax.tl softmax -D dtype=bfloat16 -D NB=1024 --shape X=${M}x${N}:bfloat16 --shape Y=${M}x${N}:bfloat16 \
    -- "y = torch.softmax(x, -1)" "x = torch.randn($M, $N, device='cuda', dtype=torch.bfloat16)"
  bench "rope bf16 T=4096 H=32 D=128" src/ops/rope.tl rope -D dtype=bfloat16 --shape X=4096x32x128:bfloat16 --shape C=4096x64 --shape S=4096x64 \
    --shape Pos=1:int64 --shape Y=4096x32x128:bfloat16 -- "y = torch.cat([x[..., :64] * c - x[..., 64:] * s, x[..., :64] * s + x[..., 64:] * c], -1)" \
    "x = torch.randn(4096, 32, 128, device='cuda', dtype=torch.bfloat16); c = torch.randn(4096, 1, 64, device='cuda', dtype=torch.bfloat16); s = c.clone()"
  bench "quantize fp8 1x128 bf16 4096x7168" src/ops/quant.tl quant_fp8 -D x_dtype=bfloat16 -D per_block=1 --shape X=4096x7168:bfloat16 \
    --shape Q=4096x7168:float8_e4m3 --shape S=4096x56 -- "s = x.view(4096, 56, 128).abs().amax(-1) / 448; q = (x.view(4096, 56, 128) / s[..., None]).to(torch.float8_e4m3fn)" \
    "x = torch.randn(4096, 7168, device='cuda', dtype=torch.bfloat16)"
  for S in 4096 8192; do
    bench "gemm bf16 ${S}^3" src/ops/gemm.tl gemm -D dtype=bfloat16 -D out_dtype=bfloat16 -D block_M=128 -D block_N=128 -D block_K=64 -D num_stages=3 \
      --shape A=${S}x${S}:bfloat16 --shape B=${S}x${S}:bfloat16 --shape Bias=1:bfloat16 --shape C=${S}x${S}:bfloat16 -D alpha=1 -D beta=1 \
      -- "c = a @ b" "a = torch.randn($S, $S, device='cuda', dtype=torch.bfloat16); b = torch.randn($S, $S, device='cuda', dtype=torch.bfloat16)"
  done
} >> "$OUT"
echo "wrote $OUT"
cat "$OUT"
