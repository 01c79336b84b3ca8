#!/usr/bin/env bash
# tsan.sh — build libtile and the threaded runtime test with ThreadSanitizer (build-tsan/) and
# run it: compile and launch from 8 threads at once, the pool, streams, specialisations.
# Not part of ./scripts/test.sh (the instrumented build takes minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILE_TSAN=ON >/dev/null
nice ninja -C build-tsan -j"${JOBS:-2}" test_launch
cd build-tsan
# the generated kernels are built by $CC without TSan: their memory accesses are not seen;
# everything of libtile (compile, caches, pool, streams, launch) is.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" ctest --output-on-failure -R '^runtime\.launch$'
