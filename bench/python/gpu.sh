#!/usr/bin/env bash
# gpu.sh — on the H200 device machine: build Tile, run the Python tests with CUDA (torch CUDA
# tensors, a non-default stream), the launch-overhead benchmarks (Python vs Triton, TileLang
# where carried as wheels, a CUDA graph; C vs the driver) and the GEMM-from-Python vs
# `tile run --bench` comparison. Results under $OUT (default ./gpu-out).
#   run from the repository root: bash bench/python/gpu.sh
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TILE_CACHE_DIR=${TILE_CACHE_DIR:-/tmp/tile-cache}
log() { echo "== $*" | tee -a "$OUT/gpu.log"; }
{
  echo "# Tile Python package on the GPU, $(date -u +%Y-%m-%d)"
  echo
  echo "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $(nproc) cores"
  echo "python: $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
} > "$OUT/results.md"
log build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
  ninja -C build tile tile_static tilelink tile_cli >>"$OUT/build.log" 2>&1 || { log "build failed"; tail -30 "$OUT/build.log"; exit 1; }
# tile._fast, the C call path (absent without Python's headers: the pure-Python path runs)
ninja -C build tile_py_fast >>"$OUT/build.log" 2>&1 || log "tile._fast not built (see build.log): Python calls take the pure-Python path"
build/bin/tile devices | tee -a "$OUT/gpu.log"
export PYTHONPATH=$PWD/python TILE_LIBRARY=$PWD/build/libtile.so
log "pytest (CUDA tests included)"
# peers carried in .whl/ for the benchmarks (TileLang 0.1.15 and its needs): wheels, or
# .tar.xz archives of an unpacked site where the wheels exceed the carry limit. Only the
# benchmarks see them: the tests must find Tile's own tilelang stand-in.
PEERS=""
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1 && PEERS=/tmp/site
fi
for a in .whl/*.tar.xz; do
  [ -e "$a" ] || continue
  mkdir -p /tmp/site && tar xJf "$a" -C /tmp/site && PEERS=/tmp/site
done
if python3 -c "import pytest" 2>/dev/null; then
  python3 -m pytest -q -p no:cacheprovider tests/python 2>&1 | tee "$OUT/pytest.log" | tail -15
else
  log "pytest missing on the device: running the CUDA tests directly"
  python3 - <<'PY' 2>&1 | tee "$OUT/pytest.log"
import sys, traceback
sys.path.insert(0, "tests/python")
import test_tile as t
ok = bad = 0
for name in [n for n in dir(t) if n.startswith("test_cuda") or n.startswith("test_torch")]:
    try:
        getattr(t, name)(); ok += 1; print("PASS", name)
    except Exception as e:
        if type(e).__name__ == "Skipped": print("SKIP", name, e); continue
        bad += 1; print("FAIL", name); traceback.print_exc()
print("%d passed, %d failed" % (ok, bad))
PY
fi
log "launch overhead from Python"
{ echo; echo "## Launch overhead from Python (torch CUDA tensors, N=4096 f32 add)"; echo; echo 'command: `python3 bench/python/launch_overhead.py`'; echo; } >> "$OUT/results.md"
PYTHONPATH=$PYTHONPATH${PEERS:+:$PEERS} python3 bench/python/launch_overhead.py "$OUT/launch_py.md" 2>&1 | tee -a "$OUT/gpu.log"
cat "$OUT/launch_py.md" >> "$OUT/results.md" 2>/dev/null
log "launch overhead from C"
{ echo; echo "## Launch overhead from C"; echo; echo 'command: `cc -O2 bench/python/launch_c.c -Iinclude -Lbuild -ltile -ldl && ./a.out`'; echo; } >> "$OUT/results.md"
cc -O2 -std=gnu11 bench/python/launch_c.c -Iinclude -Lbuild -ltile -ldl -lm -o build/launch_c -Wl,-rpath,$PWD/build &&
  build/launch_c 2>&1 | tee -a "$OUT/results.md"
log "GEMM from Python vs tile run --bench"
{ echo; echo "## GEMM from Python vs tile run --bench (TILE_BENCH_FLUSH=0, CUDA events, median of 50)"; echo; echo 'command: `python3 bench/python/gemm_vs_cli.py`'; echo; } >> "$OUT/results.md"
python3 bench/python/gemm_vs_cli.py "$OUT/gemm.md" 2>&1 | tee -a "$OUT/gpu.log"
cat "$OUT/gemm.md" >> "$OUT/results.md" 2>/dev/null
log done
cat "$OUT/results.md"
