#!/usr/bin/env bash
# bench/cuda/landing.sh — one device call that checks a landing on the GPU machine: a Release
# build; `ctest -L cuda` (every GPU test against the interpreter) alongside `tile fuzz --targets
# interp,cuda` for FUZZ_S seconds; then the timings named in TIMINGS, a comma list of
#   fp8     the fp8 GEMM example's program at 4096^3, fp8 and bf16 results (tile run --bench)
#   zoo     bench/tilelang/same_source.py on the zoo cases matching ZOO (needs TileLang's site in
#           .whl/ and a copy of its repository in SRC, see bench/tilelang/gpu.sh)
#   qgemm   bench/ops/qgemm_gpu.sh (quantised and grouped GEMM operators against PyTorch)
#   dequant bench/cuda/dequant.py (the fp4-dequantising GEMM against cuBLAS on dequantised weights)
# each cut at its own limit (T_<NAME> seconds). Everything lands in $OUT (default ./gpu-out).
#   FUZZ_S=240 TIMINGS=fp8,zoo ZOO='silu|gqa' bash bench/cuda/landing.sh
set -u
O=${OUT:-$PWD/gpu-out}
mkdir -p "$O"
export NCCL_NVLS_ENABLE=0 PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
T0=$(date +%s)
step() { echo "== $1 at $(( $(date +%s) - T0 )) s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step build
{ cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build; } > "$O/build.log" 2>&1 || { tail -20 "$O/build.log"; exit 1; }
step "ctest -L cuda, tile fuzz ${FUZZ_S:=240} s"
if [ "$FUZZ_S" -gt 0 ]; then
  (timeout $((FUZZ_S + 30)) build/bin/tile fuzz --targets interp,cuda --seconds "$FUZZ_S" --form tile --seed "${SEED:-$(date +%Y%m%d)}" \
     --timeout 60 --out "$O/fuzz" > "$O/fuzz.log" 2>&1; echo "fuzz rc=$?" >> "$O/fuzz.log") &
fi
(cd build && timeout "${T_CTEST:-300}" ctest -L cuda -j"${JOBS:-10}" --timeout 150 --output-on-failure > "$O/ctest_cuda.log" 2>&1)
grep -E "tests passed|\(Failed|\(Timeout|\*\*\*Failed" "$O/ctest_cuda.log" | head -20
wait
[ "$FUZZ_S" -gt 0 ] && tail -2 "$O/fuzz.log"
for t in $(echo "${TIMINGS:-}" | tr ',' ' '); do
  step "$t"
  case $t in
  fp8)
    for io in "float8_e4m3 float8_e4m3" "float8_e5m2 float8_e5m2" "float8_e4m3 bfloat16"; do
      set -- $io
      echo "$1 -> $2: $(timeout "${T_FP8:-30}" build/bin/tile run tests/cuda/data/gemm_fp8_io.tl -D M=4096 -D N=4096 -D K=4096 \
        -D in_dtype=$1 -D out_dtype=$2 --target cuda --bench --iters 20 -q 2>&1 | grep -i median | head -1)"
    done ;;
  zoo)
    SRC=${SRC:-$PWD/.dev/tlb} timeout "${T_ZOO:-200}" bash bench/tilelang/gpu.sh --only zoo --match "${ZOO:-.}" --iters 20 \
      --out "$O/tilelang-zoo.md" > "$O/zoo.log" 2>&1
    grep -E "^\| zoo" "$O/tilelang-zoo.md" 2>/dev/null || tail -5 "$O/zoo.log" ;;
  qgemm)
    OUT=$O timeout "${T_QGEMM:-200}" bash bench/ops/qgemm_gpu.sh > "$O/qgemm.log" 2>&1; tail -30 "$O/qgemm.log" ;;
  dequant)
    TILE=build/bin/tile timeout "${T_DEQUANT:-90}" python3 bench/cuda/dequant.py --iters 20 > "$O/dequant.log" 2>&1; tail -12 "$O/dequant.log" ;;
  *) echo "unknown timing '$t'" ;;
  esac
done
step done
