#!/bin/bash
# simtmem_check.sh [OUTDIR] [full] — on a CUDA GPU machine (the H200): the memory-bound kernels of
# the SIMT generator (softmax, RMSNorm, elementwise add; src/codegen/simt.c: warp-shuffle row
# reductions, 16-byte vector copies).
#   1. build build-rel (Release);
#   2. correctness: `tile run --target cuda --check` against the interpreter, for each example
#      at ragged and at large sizes, f32 and bf16/f16 (the interpreter is slow: ~10^5
#      elements/s, so "large" is 2048 x 4096, not 8192 x 8192; bench.py checks 8192 x 8192
#      against PyTorch);
#   3. ptxas -v of the kernels (registers, spills: NVRTC to PTX, then ptxas) when ptxas is on PATH;
#   4. timing at 8192 x 8192: `tile run --target cuda --bench` (libtile's tile_bench: tensors
#      stay on the device, CUDA-event time of the launches alone, L2 flushed, median of the
#      runs) with the new lowering (TILE_SIMT_MEMOPT=1, the default) and the old one
#      (TILE_SIMT_MEMOPT=0) side by side; bandwidth = the minimal bytes (every input read
#      once, the output written once) / kernel time;
#   5. (only with `full`: it takes minutes) bench/cuda/bench.py --only mem: the same kernels against PyTorch and the device copy
#      bandwidth (the 85% goal), with a PyTorch reference check at 8192 x 8192.
# RMSNorm keeps whole rows of x and x^2 in (shared-memory) fragments: at N=8192 the default
# block_M=8 needs 544 KiB of shared memory per block, more than the H200's 227 KiB, so the
# runs here use block_M=2 (160 KiB) at N=8192 and block_M=4 at N=4096 (bench.py passes
# block_M=2 too).
# Every step has a timeout; prints ok/FAIL lines; logs go to OUTDIR (default /tmp/simtmem_check).
out=${1:-/tmp/simtmem_check}; mode=${2:-quick}
mkdir -p "$out"
export TILE_CACHE_DIR=$out/cache
exec > >(tee "$out/log.txt") 2>&1
echo "simtmem_check $(date -u '+%F %T UTC') on $(hostname); commit $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>/dev/null
build=${BUILD:-build-rel}   # BUILD=DIR reuses a Release build (e.g. gpu-check.sh's build-gpu)
timeout 300 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || { echo "FAIL configure"; exit 1; }
timeout 400 ninja -C "$build" -j16 tile_cli >/dev/null || { echo "FAIL build"; exit 1; }
T=$build/bin/tile
$T devices | grep -E "^cuda"
fails=0

# --- 2. correctness against the interpreter
check() { # name, timeout, args...
    local name=$1 to=$2; shift 2
    local log="$out/check_${name}.txt"
    if timeout "$to" $T run "$@" --target cuda --check >"$log" 2>&1; then
        echo "ok    check $name: $(grep -m1 '^check' "$log" | sed 's/ (norm-wise.*)//')"
    else
        echo "FAIL  check $name (rc=$?): $(grep -m1 -E 'check|error' "$log" || tail -1 "$log")"; fails=$((fails + 1))
    fi
}
for dt in float32 bfloat16 float16; do
    check softmax_ragged_$dt 120 examples/softmax.tl -D M=509 -D N=2051 -D dtype=$dt
    check softmax_vec_$dt 120 examples/softmax.tl -D M=300 -D N=1000 -D dtype=$dt
    check rmsnorm_ragged_$dt 120 examples/rmsnorm.tl -D M=509 -D N=2050 -D dtype=$dt
    check rmsnorm_odd_$dt 120 examples/rmsnorm.tl -D M=77 -D N=1001 -D dtype=$dt
    check add_ragged_$dt 120 examples/add.tl -D M=1001 -D N=1003 -D dtype=$dt
    check softmax_row_ragged_$dt 120 examples/softmax_row.tl -D M=509 -D N=2051 -D dtype=$dt
    check rmsnorm_row_regs_$dt 120 examples/rmsnorm.tl -D M=509 -D N=2052 -D block_M=1 -D dtype=$dt
done
check softmax_large_f32 400 examples/softmax.tl -D M=2048 -D N=4096
check rmsnorm_large_f32 400 examples/rmsnorm.tl -D M=2048 -D N=4096 -D block_M=4
check rmsnorm_large_bf16 400 examples/rmsnorm.tl -D M=2048 -D N=4096 -D dtype=bfloat16 -D block_M=4
check add_large_f32 400 examples/add.tl -D M=2048 -D N=4096
check flash_attention_causal 300 examples/flash_attention.tl -D batch=1 -D heads=2 -D seq_len=256 -D dim=64 -D is_causal=True
# the experimental clear=False warp reduction (off by default; PoCL miscompiles this case)
TILE_SIMT_MEMOPT=2 check flash_attention_causal_memopt2 300 examples/flash_attention.tl -D batch=1 -D heads=2 -D seq_len=256 -D dim=64 -D is_causal=True
TILE_SIMT_MEMOPT=2 check flash_attention_memopt2 300 examples/flash_attention.tl -D batch=2 -D heads=1 -D seq_len=100 -D dim=32 -D is_causal=False

# --- 3. registers and spills: NVRTC -> PTX (bench/cuda/nvrtc_ptx.py), then ptxas -v
if command -v ptxas >/dev/null; then
    for ex in "softmax examples/softmax.tl -D M=8192 -D N=8192" "softmax_bf16 examples/softmax.tl -D M=8192 -D N=8192 -D dtype=bfloat16" \
              "rmsnorm examples/rmsnorm.tl -D M=8192 -D N=8192 -D block_M=2" "rmsnorm_bf16 examples/rmsnorm.tl -D M=8192 -D N=8192 -D dtype=bfloat16 -D block_M=2" \
              "add examples/add.tl -D M=8192 -D N=8192" \
              "softmax_row examples/softmax_row.tl -D M=8192 -D N=8192 -D threads=256" \
              "rmsnorm_regs examples/rmsnorm.tl -D M=8192 -D N=8192 -D block_M=1 -D threads=256"; do
        set -- $ex; name=$1; shift
        $T emit "$@" --target cuda >"$out/$name.cu" 2>/dev/null
        if timeout 120 python3 bench/cuda/nvrtc_ptx.py "$out/$name.cu" "$out/$name.ptx" compute_90a >"$out/ptxas_$name.txt" 2>&1 &&
           timeout 120 ptxas -arch=sm_90a -v "$out/$name.ptx" -o "$out/$name.cubin" >>"$out/ptxas_$name.txt" 2>&1; then
            if grep -qE '[1-9][0-9]* bytes spill' "$out/ptxas_$name.txt"; then w="FAIL "; fails=$((fails + 1)); else w="ok   "; fi
            echo "$w ptxas $name: $(grep -E 'registers|spill' "$out/ptxas_$name.txt" | sed 's/ptxas info *: //' | tr -s ' ' | tr '\n' ' ')shfl=$(grep -c shfl.sync "$out/$name.ptx") vector-ld/st=$(grep -cE '(ld|st)\.(global|shared)\.v[24]' "$out/$name.ptx")"
        else
            echo "FAIL  ptxas $name: see $out/ptxas_$name.txt"; fails=$((fails + 1))
        fi
    done
else
    echo "note  no ptxas on PATH: no register/spill report"
fi

# --- 4. timing at 8192 x 8192: new lowering against the old one, same run
bench() { # label, bytes, memopt, args...
    local label=$1 bytes=$2 mo=$3; shift 3
    local log="$out/bench_${label}_m$mo.txt"
    if TILE_SIMT_MEMOPT=$mo timeout 300 $T run "$@" --target cuda --bench --iters 20 >"$log" 2>&1; then
        local ms; ms=$(sed -n 's/^bench: target cuda, median \([0-9.]*\) ms.*/\1/p' "$log" | head -1)
        if [ -n "$ms" ]; then
            echo "ok    bench $label memopt=$mo: $ms ms, $(awk -v b="$bytes" -v t="$ms" 'BEGIN{printf "%.3f TB/s", b / (t * 1e-3) / 1e12}') (bytes $bytes)"
            echo "$ms"
            return
        fi
    fi
    echo "FAIL  bench $label memopt=$mo: $(grep -m1 -E 'error|bench' "$log" || tail -1 "$log")"; fails=$((fails + 1))
}
E=$((8192 * 8192))
for c in "softmax_f32 $((E * 8)) examples/softmax.tl -D M=8192 -D N=8192" \
         "softmax_bf16 $((E * 4)) examples/softmax.tl -D M=8192 -D N=8192 -D dtype=bfloat16" \
         "rmsnorm_f32 $((E * 8 + 8192 * 4)) examples/rmsnorm.tl -D M=8192 -D N=8192 -D block_M=2" \
         "rmsnorm_bf16 $((E * 4 + 8192 * 2)) examples/rmsnorm.tl -D M=8192 -D N=8192 -D dtype=bfloat16 -D block_M=2" \
         "softmax_row_f32 $((E * 8)) examples/softmax_row.tl -D M=8192 -D N=8192 -D threads=256" \
         "rmsnorm_regs_f32 $((E * 8 + 8192 * 4)) examples/rmsnorm.tl -D M=8192 -D N=8192 -D block_M=1 -D threads=256" \
         "add_f32 $((E * 12)) examples/add.tl -D M=8192 -D N=8192" \
         "add_bf16 $((E * 6)) examples/add.tl -D M=8192 -D N=8192 -D dtype=bfloat16"; do
    set -- $c; label=$1; bytes=$2; shift 2
    new=$(bench "$label" "$bytes" 1 "$@" | tee /dev/stderr | tail -1)
    old=$(bench "$label" "$bytes" 0 "$@" | tee /dev/stderr | tail -1)
    case "$new$old" in *FAIL*|"") ;; *) echo "      $label: old/new time = $(awk -v a="$old" -v b="$new" 'BEGIN{printf "%.2fx", a / b}')";; esac
done 2>&1 | grep -v '^[0-9.]*$'

# --- 5. against PyTorch and the device copy bandwidth (correctness at 8192 x 8192 included)
if [ "$mode" != full ]; then
    echo "note  bench.py --only mem skipped (pass 'full' as the second argument)"
elif python3 -c "import torch" 2>/dev/null; then
    timeout 900 python3 bench/cuda/bench.py --tile $T --only mem --out "$out/bench_mem.md" >"$out/bench_py.txt" 2>&1
    echo "bench.py rc=$?"; tail -25 "$out/bench_py.txt"
else
    echo "note  no PyTorch: no copy-bandwidth ceiling from bench.py"
fi
echo "simtmem_check: $fails failure(s); logs in $out"
res=bench/results/cuda-simtmem-$(date -u +%F).md
{
    echo "# SIMT memory-bound kernels on CUDA ($(date -u '+%F %T UTC'), $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null))"
    echo
    echo "Command: \`bench/cuda/simtmem_check.sh $*\`; GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
    echo "Bandwidth = minimal bytes (inputs read once, output written once) / median CUDA-event kernel time (tile run --bench);"
    echo "memopt=1 is the new lowering, memopt=0 the old one, in the same run."
    echo
    echo '```'
    grep -E '^(ok|FAIL|note) |^      |^simtmem_check|^bench.py' "$out/log.txt"
    echo '```'
} >"$res" && echo "results: $res"
