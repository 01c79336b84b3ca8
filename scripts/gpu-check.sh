#!/usr/bin/env bash
# gpu-check.sh — the GPU acceptance run, on a machine with an NVIDIA GPU (e.g. an H200).
#
#   scripts/gpu-check.sh [BUILD_DIR]        (default BUILD_DIR: build-gpu)
#
# Steps (each under its own timeout; a failing step is recorded and the next one runs; the
# summary table is always printed):
#   build     CMake + Ninja, Release
#   devices   `tile devices` (is the cuda target available?)
#   ctest     every test of the cuda label (NVRTC for sm_90a/sm_80, every example, every
#             tests/programs program and every plain-form program on --target cuda); with
#             GPU_CHECK_ALL=1 the whole suite instead
#   examples  every example (tests/opencl/examples.txt) with `tile run --target cuda --check
#             --bench`: status, max relative error against the interpreter, median device time
#   bench     bench/cuda/run.sh: ours against cuBLAS / cuBLASLt / FlashAttention / copy
#             bandwidth (GPU_CHECK_QUICK=1: its --quick smoke test)
#   sass      the GEMM kernels' cubins (bf16 and fp8 tile form, the plain-form bf16 seed
#             matmul) through `cuobjdump --dump-sass`: HGMMA (bf16) / QGMMA (fp8) present, no
#             local-memory traffic (LDL/STL)
# The summary goes to stdout, to $OUT/gpu-check.md when OUT is set, and to
# bench/results/gpu-check-<date>.md. Environment: TILE_CUDA_DEVICE, TILE_CUDA_ARCH, JOBS,
# GPU_CHECK_ALL, GPU_CHECK_QUICK, GPU_CHECK_BENCH_TIMEOUT (seconds, default 1500),
# GPU_CHECK_NO_BUILD=1 (use BUILD_DIR as it is), GPU_CHECK_SKIP (comma-separated steps to
# leave out, e.g. ctest,examples: recorded as skipped). Result files that exist already are kept:
# the new one gets a -2, -3, ... suffix.
# Exit status 0 when every step passed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
export TILE_CACHE_DIR=${TILE_CACHE_DIR:-$build/tile-cache}
export NCCL_NVLS_ENABLE=0
date=$(date -u +%Y-%m-%d)
logdir=$build/gpu-check-logs
mkdir -p "$logdir"
tile=$build/bin/tile
summary=()   # "step|status|detail"
status=0
# path of a result file that does not exist yet: BASE.md, else BASE-2.md, ...
fresh() { local f=$1.md n=2; while [ -e "$f" ]; do f=$1-$n.md; n=$((n + 1)); done; echo "$f"; }
record() { summary+=("$1|$2|$3"); case $2 in ok|skipped) ;; *) status=1 ;; esac; }
step() { echo; echo "== $1 ($(date -u +%H:%M:%S))"; }
skip() { case ",${GPU_CHECK_SKIP:-}," in *",$1,"*) record "$1" skipped "GPU_CHECK_SKIP"; return 0 ;; esac; return 1; }

print_summary() {
  local f=$1; shift   # the rest: the script's own arguments, for the Command line
  {
    echo "# GPU check, $date"
    echo
    echo "- Machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i "${TILE_CUDA_DEVICE:-0}" 2>/dev/null | head -1), $(nproc 2>/dev/null) CPU cores"
    echo "- Commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') (as the checkout's git metadata says; a copied tree may carry stale metadata)"
    echo "- Command: \`scripts/gpu-check.sh $*\` (GPU_CHECK_ALL=${GPU_CHECK_ALL:-0}, GPU_CHECK_QUICK=${GPU_CHECK_QUICK:-0})"
    echo
    echo "| step | status | detail |"
    echo "|---|---|---|"
    for s in "${summary[@]}"; do echo "| ${s//|/ | } |"; done
    echo
    [ -s "$logdir/examples.txt" ] && { echo '```'; cat "$logdir/examples.txt"; echo '```'; echo; }
    [ -s "$logdir/sass.txt" ] && { echo '```'; cat "$logdir/sass.txt"; echo '```'; echo; }
    [ -s "$logdir/bench-table.txt" ] && { cat "$logdir/bench-table.txt"; echo; }
  } >"$f"
}

# ---- build
step "build ($build)"
if [ "${GPU_CHECK_NO_BUILD:-0}" = 1 ]; then
  record build skipped "GPU_CHECK_NO_BUILD=1: using $build as it is"
elif timeout 900 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$logdir/cmake.log" 2>&1 &&
   timeout 1200 ninja -C "$build" -j "$jobs" >"$logdir/build.log" 2>&1; then
  record build ok "Release, $jobs jobs"
else
  echo "the full build failed (see $logdir/build.log); building the GPU tools only"
  tail -20 "$logdir/build.log"
  if timeout 900 ninja -C "$build" -j "$jobs" tile_cli nvrtc_check >>"$logdir/build.log" 2>&1; then
    record build FAILED "full build failed; tile and nvrtc_check built"
  else
    record build FAILED "tile does not build (see $logdir/build.log)"
  fi
fi

# ---- devices
step devices
if [ -x "$tile" ] && timeout 60 "$tile" devices | tee "$logdir/devices.txt" | grep -q "^cuda .* available "; then
  record devices ok "$(grep '^cuda ' "$logdir/devices.txt" | sed 's/  */ /g' | cut -c1-110)"
  have_cuda=1
else
  record devices FAILED "the cuda target is not available: $(grep '^cuda ' "$logdir/devices.txt" 2>/dev/null | sed 's/  */ /g' | cut -c1-110)"
  have_cuda=0
fi

# ---- ctest
step "ctest"
if skip ctest; then :
elif [ -x "$tile" ]; then
  if [ "${GPU_CHECK_ALL:-0}" = 1 ]; then sel=(); what="all labels"; else sel=(-L cuda); what="label cuda"; fi
  timeout 1800 ctest --test-dir "$build" "${sel[@]}" -j "$jobs" --timeout 300 >"$logdir/ctest.log" 2>&1
  rc=$?
  line=$(grep -E "tests passed" "$logdir/ctest.log" | tail -1)
  nskip=$(grep -c "(Skipped)\|\*\*\*Skipped\|Not Run" "$logdir/ctest.log")
  fails=$(grep -E "\(Failed\)|\(Timeout\)|\*\*\*Failed|\*\*\*Timeout" "$logdir/ctest.log" | sed 's/^ *[0-9]* - //' | head -8 | tr '\n' ' ')
  grep -E "tests passed|\(Failed\)|\(Timeout\)" "$logdir/ctest.log" | tail -20
  if [ $rc -eq 0 ] && [ "$have_cuda" = 1 ] && [ "$nskip" -gt 0 ]; then record ctest SKIPS "$what: $line, but $nskip skipped on a GPU machine (see the log)"
  elif [ $rc -eq 0 ]; then record ctest ok "$what: $line"
  elif [ $rc -eq 124 ]; then record ctest TIMEOUT "$what: over 1800 s"
  else record ctest FAILED "$what: ${line:-no summary}; $fails"
  fi
else record ctest skipped "no tile binary"
fi

# ---- examples
step "examples on --target cuda --check --bench"
if skip examples; then :
elif [ "$have_cuda" = 1 ]; then
  nok=0; nbad=0; bad=""
  printf "%-24s %-10s %-12s %s\n" "program" "status" "max rel err" "median (device time)" >"$logdir/examples.txt"
  while IFS='|' read -r name args; do
    case "$name" in \#*|"") continue ;; esac
    name=$(echo "$name" | tr -d ' ')
    # shellcheck disable=SC2086
    out=$(cd "$root" && timeout 300 "$tile" run $args --target cuda --check --bench --iters 5 --quiet 2>&1)
    rc=$?
    err=$(echo "$out" | sed -n 's/^check .*max relative error \([^ ]*\) .*/\1/p' | sort -g | tail -1)
    med=$(echo "$out" | sed -n 's/^bench: .*median \([0-9.]* [mu]*s\).*/\1/p' | head -1)
    case $rc in 0) st=ok; nok=$((nok + 1)) ;; 2) st=TOLERANCE ;; 124) st=TIMEOUT ;; *) st="FAIL($rc)" ;; esac
    [ "$st" != ok ] && { nbad=$((nbad + 1)); bad="$bad $name"; }
    printf "%-24s %-10s %-12s %s\n" "$name" "$st" "${err:--}" "${med:--}" | tee -a "$logdir/examples.txt"
    [ $rc -ne 0 ] && echo "$out" | grep -E "error|check|failed" | head -4 | sed 's/^/    /' | tee -a "$logdir/examples.txt"
  done <"$root/tests/opencl/examples.txt"
  if [ $nbad -eq 0 ]; then record examples ok "$nok examples within tolerance"; else record examples FAILED "$nbad failed:$bad"; fi
else record examples skipped "no cuda target"
fi

# ---- bench
step "bench/cuda/run.sh"
if skip bench; then :
elif [ "$have_cuda" = 1 ]; then
  q=(); [ "${GPU_CHECK_QUICK:-0}" = 1 ] && q=(--quick)
  bout=$(fresh "$root/bench/results/cuda-$date${q:+-quick}")
  TILE=$tile timeout "${GPU_CHECK_BENCH_TIMEOUT:-1500}" "$root/bench/cuda/run.sh" "${q[@]}" --out "$bout" 2>&1 | tee "$logdir/bench.log"
  rc=${PIPESTATUS[0]}
  grep "^|" "$bout" >"$logdir/bench-table.txt" 2>/dev/null
  [ -n "${OUT:-}" ] && cp "$bout" "$OUT/" 2>/dev/null
  nfail=$(grep -c "| FAIL\|| TIMEOUT" "$logdir/bench-table.txt" 2>/dev/null)
  case $rc in
    0) record bench ok "all cases correct; $(basename "$bout")" ;;
    124) record bench TIMEOUT "over ${GPU_CHECK_BENCH_TIMEOUT:-1500} s; partial: $(basename "$bout")" ;;
    *) record bench FAILED "$nfail case(s) failed or wrong; $(basename "$bout")" ;;
  esac
else record bench skipped "no cuda target"
fi

# ---- sass
step "SASS of the GEMM kernels"
sass_one() { # name want args...
  local name=$1 want=$2; shift 2
  local d=$build/sass-$name
  rm -rf "$d"; mkdir -p "$d"
  if ! (cd "$root" && TILE_CACHE_DIR=$d timeout 300 "$tile" run "$@" --target cuda --quiet >"$d/run.log" 2>&1); then
    printf "%-16s %-6s %6s %6s %6s %8s  %s\n" "$name" "$want" - - - - "FAIL: $(grep -m1 -i error "$d/run.log" | cut -c1-80)" >>"$logdir/sass.txt"
    return 1
  fi
  local cub
  cub=$(ls "$d"/*.cubin 2>/dev/null | head -1)
  [ -z "$cub" ] && { printf "%-16s %-6s  no cubin in the cache\n" "$name" "$want" >>"$logdir/sass.txt"; return 1; }
  timeout 120 cuobjdump --dump-sass "$cub" >"$d/sass.txt" 2>&1 || { echo "$name: cuobjdump failed" >>"$logdir/sass.txt"; return 1; }
  local h q m l
  h=$(grep -c "HGMMA" "$d/sass.txt"); q=$(grep -c "QGMMA" "$d/sass.txt"); m=$(grep -c "HMMA" "$d/sass.txt"); l=$(grep -cE "\b(LDL|STL)\b" "$d/sass.txt")
  local verdict=ok
  [ "$want" = HGMMA ] && [ "$h" -eq 0 ] && verdict="no HGMMA"
  [ "$want" = QGMMA ] && [ "$q" -eq 0 ] && verdict="no QGMMA"
  [ "$want" = HMMA ] && [ "$m" -eq 0 ] && verdict="no HMMA"
  [ "$l" -gt 0 ] && verdict="${verdict/ok/} local-memory spills"
  printf "%-16s %-6s %6d %6d %6d %8d  %s\n" "$name" "$want" "$h" "$q" "$m" "$l" "$verdict" >>"$logdir/sass.txt"
  [ "$verdict" = ok ]
}
if skip sass; then :
elif [ "$have_cuda" = 1 ] && command -v cuobjdump >/dev/null; then
  printf "%-16s %-6s %6s %6s %6s %8s  %s\n" kernel wants HGMMA QGMMA HMMA LDL/STL verdict >"$logdir/sass.txt"
  # the configurations bench/cuda/bench.py times (the sm_90a lowering's)
  nbad=0
  sass_one gemm_bf16 HGMMA examples/gemm.tl -D M=512 -D N=512 -D K=512 -D dtype=bfloat16 -D out_dtype=bfloat16 -D trans_B=True \
    -D block_M=128 -D block_N=256 -D block_K=64 -D num_stages=4 -D threads=256 || nbad=$((nbad + 1))
  sass_one gemm_fp8 QGMMA examples/gemm_fp8.tl -D M=512 -D N=512 -D K=512 -D out_dtype=bfloat16 \
    -D block_M=128 -D block_N=128 -D block_K=128 -D num_stages=6 -D threads=256 || nbad=$((nbad + 1))
  sass_one plain_mm_bf16 HGMMA tests/cuda/data/plain_matmul_bf16.tl -D M=512 -D N=512 -D K=512 || nbad=$((nbad + 1))
  # the mma.sync lowering (src/codegen/sm80.c) forced, in bench.py's mma80 configuration
  TILE_CUDA_MMA_SYNC=1 sass_one gemm_mma80 HMMA examples/gemm.tl -D M=512 -D N=512 -D K=512 -D dtype=bfloat16 -D out_dtype=bfloat16 -D trans_B=True \
    -D block_M=128 -D block_N=256 -D block_K=32 -D num_stages=4 -D threads=256 || nbad=$((nbad + 1))
  cat "$logdir/sass.txt"
  if [ $nbad -eq 0 ]; then record sass ok "GEMM kernels use HGMMA/QGMMA/HMMA, no LDL/STL"; else record sass FAILED "$nbad of 4 GEMM kernels lack wgmma/mma or spill (table below)"; fi
else record sass skipped "no cuda target or no cuobjdump"
fi

# ---- summary
step summary
mkdir -p "$root/bench/results"
res=$(fresh "$root/bench/results/gpu-check-$date")
print_summary "$res" "$@"
[ -n "${OUT:-}" ] && cp "$res" "$OUT/gpu-check.md" 2>/dev/null
printf "%-10s %-9s %s\n" step status detail
for s in "${summary[@]}"; do IFS='|' read -r a b c <<<"$s"; printf "%-10s %-9s %s\n" "$a" "$b" "$c"; done
echo "written: $res${OUT:+ and $OUT/gpu-check.md}"
exit $status
