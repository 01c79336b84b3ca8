#!/usr/bin/env bash
# bench/cuda/compile_time.sh — build libtile and run bench/cuda/compile_time.py (where the cold
# CUDA compile time goes, per phase) on a copy of TileLang's repository: SRC (default
# .dev/tlsrc, made with `git --git-dir=<TileLang mirror> archive HEAD benchmark/compile_speed
# examples | tar x -C .dev/tlsrc`). Arguments go to compile_time.py; on the GPU machine add
# --gpu for the cold compile + first run through Tile's runtime.
#   bash bench/cuda/compile_time.sh --gpu --out bench/results/cuda-compile-DATE.md
set -uo pipefail
SRC=${SRC:-$PWD/.dev/tlsrc}
[ -d "$SRC/benchmark/compile_speed" ] || { echo "no TileLang copy at $SRC (set SRC)"; exit 2; }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/tmp/compile_time_build.log 2>&1 &&
  ninja -C build tile >>/tmp/compile_time_build.log 2>&1 || { tail -30 /tmp/compile_time_build.log; exit 1; }
PYTHONPATH=$PWD/python TILE_LIBRARY=$PWD/build/libtile.so python3 bench/cuda/compile_time.py --src "$SRC" "$@"
