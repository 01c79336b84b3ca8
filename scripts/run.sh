#!/usr/bin/env bash
# run.sh — the main job: set up, build, and run the seed matmul on the best target this
# machine has, checked against the interpreter's f64 reference. Extra arguments go to
# `tile run` (e.g. -D M=256).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
echo
echo "== targets on this machine"
./build/bin/tile devices
echo
echo "== the seed matmul (examples/seed_matmul_000.tl), M=N=K=64, on the best target, checked"
set -x
./build/bin/tile run examples/seed_matmul_000.tl -D M=64 -D N=64 -D K=64 --target auto --check "$@"
set +x
# more than one target here: the portability table (every target against the interpreter)
if [ "$(./build/bin/tile devices | grep -c ' available ')" -gt 1 ]; then
  echo
  echo "== the same program on every target"
  ./build/bin/tile run examples/seed_matmul_000.tl -D M=64 -D N=64 -D K=64 --target all "$@"
fi
