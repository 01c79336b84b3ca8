#!/usr/bin/env bash
# test.sh — the whole test suite: set up, build, run every CTest test.
# A slice: ./scripts/test.sh -L front   (labels: core front sema ir interp programs checks link launch link-net)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
