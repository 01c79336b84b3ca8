#!/usr/bin/env bash
# gpu-check.sh — the GPU acceptance run, on a machine with an NVIDIA GPU (e.g. an H200).
#
#   scripts/gpu-check.sh [BUILD_DIR]        (default BUILD_DIR: build-gpu)
#
# 1. builds the project (Release) with CMake + Ninja;
# 2. runs every CTest test (the cuda label then runs instead of skipping: NVRTC compiles of
#    every example for sm_90a and sm_80, every example and every tests/programs program on
#    --target cuda), and reports the failures;
# 3. runs every example (tests/opencl/examples.txt) with `tile run --target cuda --check
#    --bench` and prints one table: program, status, max relative error against the
#    interpreter, median time on the GPU.
# Environment: TILE_CUDA_DEVICE (ordinal), TILE_CUDA_ARCH (force an architecture),
# JOBS (parallel build/test jobs, default nproc). Exit status 0 when everything passed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
export TILE_CACHE_DIR=${TILE_CACHE_DIR:-$build/tile-cache}
status=0

echo "== build ($build)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || { echo "cmake failed"; exit 1; }
if ! ninja -C "$build" -j "$jobs" >"$build/gpu-check-build.log" 2>&1; then
  echo "the full build failed (see $build/gpu-check-build.log); building the GPU test tools only"
  status=1
  ninja -C "$build" -j "$jobs" tile_cli nvrtc_check || { echo "the GPU tools do not build"; exit 1; }
fi
tile=$build/bin/tile
echo "== devices"
"$tile" devices
if ! "$tile" devices | grep -q "^cuda .* available "; then
  echo "warning: the cuda target is not available here; the cuda tests will be skipped"
  status=1
fi

echo "== ctest (all labels, $jobs jobs)"
if ctest --test-dir "$build" -j "$jobs" >"$build/gpu-check-ctest.log" 2>&1; then
  grep -E "tests passed" "$build/gpu-check-ctest.log"
else
  status=1
  grep -E "tests passed|\(Failed\)|\(Timeout\)|\*\*\*" "$build/gpu-check-ctest.log" | tail -40
  echo "(full log: $build/gpu-check-ctest.log)"
fi
echo "cuda tests:"
(cd "$build" && ctest -N -L cuda | tail -1)

echo "== examples on --target cuda --check"
printf "%-24s %-8s %-12s %-12s %s\n" "program" "status" "max rel err" "median" "wall"
printf "%-24s %-8s %-12s %-12s %s\n" "-------" "------" "-----------" "------" "----"
while IFS='|' read -r name args; do
  case "$name" in \#*|"") continue ;; esac
  name=$(echo "$name" | tr -d ' ')
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  out=$(cd "$root" && "$tile" run $args --target cuda --check --bench --iters 5 2>&1)
  rc=$?
  t1=$(date +%s.%N)
  err=$(echo "$out" | sed -n 's/^check .*max relative error \([^ ]*\) .*/\1/p' | sort -g | tail -1)
  med=$(echo "$out" | sed -n 's/^bench: .*median \([0-9.]* [mu]*s\).*/\1/p' | head -1)
  case $rc in
    0) st=ok ;;
    2) st=TOLERANCE; status=1 ;;
    *) st="FAIL($rc)"; status=1 ;;
  esac
  printf "%-24s %-8s %-12s %-12s %.1fs\n" "$name" "$st" "${err:--}" "${med:--}" "$(echo "$t1 - $t0" | bc)"
  if [ $rc -ne 0 ]; then echo "$out" | grep -E "error|check" | head -5 | sed 's/^/    /'; fi
done <"$root/tests/opencl/examples.txt"
exit $status
