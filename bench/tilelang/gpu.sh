#!/usr/bin/env bash
# bench/tilelang/gpu.sh — on the H200 device machine: build Tile, unpack the carried TileLang
# site (.whl/*.tar.xz or wheels; never committed) and run same_source.py on a copy of
# TileLang's repository (SRC, default .dev/tlsrc). Arguments go to same_source.py.
#   bash bench/tilelang/gpu.sh --only zoo,gemm --out bench/results/tilelang-same-source-DATE.md
set -uo pipefail
SRC=${SRC:-$PWD/.dev/tlsrc}
export NCCL_NVLS_ENABLE=0
[ -d "$SRC/examples" ] || { echo "no TileLang copy at $SRC (set SRC)"; exit 2; }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/tmp/build.log 2>&1 &&
  ninja -C build tile tile_cli >>/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
ninja -C build tile_py_fast >>/tmp/build.log 2>&1 || echo "tile._fast not built: the pure-Python call path runs"
SITE=/tmp/site
mkdir -p "$SITE"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl >/dev/null 2>&1
fi
for a in .whl/*.tar.xz; do [ -e "$a" ] && tar xJf "$a" -C "$SITE"; done
PYTHONPATH=$PWD/python:$SITE TILE_LIBRARY=$PWD/build/libtile.so python3 bench/tilelang/same_source.py --src "$SRC" "$@"
