#!/usr/bin/env bash
# bench/cuda/fp8_wgmma.sh — on an H200: the fp8 GEMM lowering (src/codegen/sm90.c) checked and
# timed. 1) every fp8 line of tests/cuda/sm90.txt and a few 16-bit ones, `tile run --target cuda
# --check` against the interpreter, with the lowering each one took; 2) the upstream TileLang
# fp8 example's program (tests/cuda/data/gemm_fp8_io.tl: 128x128x64, 3 stages, 128 threads) at
# 4096^3 for e4m3/e5m2 inputs and fp8/f16/bf16 results, `tile run --bench` (CUDA events, L2
# flushed, median); 3) torch._scaled_mm (cuBLASLt) on the same shape when torch is there.
#   TILE=build/bin/tile bash bench/cuda/fp8_wgmma.sh
set -uo pipefail
TILE=${TILE:-build/bin/tile}
export NCCL_NVLS_ENABLE=0
echo "## checks against the interpreter"
grep -v '^#' tests/cuda/sm90.txt | grep -E '^(fp8|bf16_hopper|ts_f16|nn_bf16_ragged|km_fp8)' | while IFS='|' read -r name expect args; do
  name=$(echo $name); args=$(echo $args)
  # the lowering each launch took, from the run's own log (`tile emit` without TILE_CUDA_ARCH
  # does not look at the device, so it plans for no architecture: simt)
  out=$(TILE_LOG=info $TILE run $args --target cuda --check 2>&1)
  low="lowering=$(echo "$out" | grep -o ': lowering [a-z0-9-]*' | sed 's/: lowering //' | paste -sd, -)"
  echo "$name | expect $(echo $expect) | $low | $(echo "$out" | grep -o 'check C: max relative error [0-9.e+-]*' | head -1) | $(echo "$out" | grep -o ': ok (tolerance[^)]*)\|FAILED[^)]*)' | head -1)"
done
echo "## 4096^3, tests/cuda/data/gemm_fp8_io.tl defaults (128x128x64 s3 t128)"
for io in "float8_e4m3 float8_e4m3" "float8_e5m2 float8_e5m2" "float8_e4m3 float16" "float8_e4m3 bfloat16"; do
  set -- $io
  r=$($TILE run tests/cuda/data/gemm_fp8_io.tl -D M=4096 -D N=4096 -D K=4096 -D in_dtype=$1 -D out_dtype=$2 --target cuda --bench --iters 20 -q 2>&1 | grep -i 'median' | head -1)
  ms=$(echo "$r" | grep -o '[0-9.]* ms' | head -1 | cut -d' ' -f1)
  tf=$(python3 -c "print('%.1f' % (2*4096**3/($ms*1e-3)/1e12))" 2>/dev/null)
  echo "$1 -> $2: $r  => $tf TFLOP/s"
done
echo "## torch._scaled_mm (cuBLASLt), e4m3 4096^3, bf16 out"
python3 - <<'PY' 2>&1 | tail -3
import torch
a = torch.randn(4096, 4096, device="cuda").to(torch.float8_e4m3fn)
b = torch.randn(4096, 4096, device="cuda").to(torch.float8_e4m3fn)
one = torch.tensor(1.0, device="cuda")
f = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
for _ in range(5): f()
fl = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
ts = []
for _ in range(20):
    fl.zero_(); s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record(); f(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
ts.sort(); m = ts[len(ts) // 2]
print("cublasLt e4m3 -> bf16: %.4f ms => %.1f TFLOP/s" % (m, 2 * 4096**3 / (m * 1e-3) / 1e12))
PY
