#!/usr/bin/env bash
# fa_device.sh — one device call for the Hopper attention lowering (src/codegen/sm90_attn.c):
# Release build of the CLI, the sm90attn tests on the GPU (against the interpreter), bench.py's
# flash attention cases (ours vs SDPA flash in the same run, extra rows per FA_ENV entry), and
# optionally Nsight Compute on the non-causal benchmark kernel (FA_NCU="name=ENV,..." pairs
# separated by spaces; ENV "-" for the defaults). Everything goes to $OUT (or /tmp/fa_out).
#
#   FA_ENV="TILE_SM90_ATTN_FAST=0,TILE_SM90_ATTN_MASKSKIP=0" FA_NCU="new=-" bench/cuda/fa_device.sh
set -u
export NCCL_NVLS_ENABLE=0
O=${OUT:-/tmp/fa_out}
mkdir -p "$O"
B=build-gpu
step() { echo "== $1 $(date -u +%H:%M:%S)"; }
step build
{ timeout 200 cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && timeout 300 ninja -C $B -j16 tile_cli nvrtc_check; } > "$O/build.log" 2>&1
echo "build rc=$?"; tail -3 "$O/build.log"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$O/gpu.txt"
if [ "${FA_TESTS:-1}" = 1 ]; then
    step tests
    timeout ${FA_TEST_TIMEOUT:-200} ctest --test-dir $B -R "sm90attn" -j16 --output-on-failure > "$O/tests.log" 2>&1
    echo "tests rc=$?"; grep -E "tests passed|Failed|Not Run|\*\*\*Fail|Timeout" "$O/tests.log" | head -20
fi
if [ "${FA_COMPILE:-1}" = 1 ]; then
    step "cold compile (TILE_LOG=info, no kernel cache)"
    for c in False True; do
        TILE_LOG=info TILE_CACHE_DIR=$(mktemp -d) timeout 60 $B/bin/tile run examples/flash_attention.tl -D batch=1 -D heads=32 -D seq_len=4096 \
            -D dim=128 -D is_causal=$c -D dtype=bfloat16 -D block_M=128 -D block_N=128 -D threads=256 -D num_stages=3 --target cuda --quiet 2>&1 \
            | grep -iE "nvrtc|compil" | head -4 | tee -a "$O/compile.log"
    done
fi
if [ -n "${FA_NCU:-}" ]; then
    for pair in $FA_NCU; do
        name=${pair%%=*}; envs=${pair#*=}
        step "ncu $name ($envs)"
        ( [ "$envs" = - ] || { IFS=,; for kv in $envs; do export "$kv"; done; }
          timeout 150 ncu --clock-control none --launch-count 1 \
            --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
            --section MemoryWorkloadAnalysis --section Occupancy --section SourceCounters \
            --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum" \
            $B/bin/tile run examples/flash_attention.tl -D batch=4 -D heads=32 -D seq_len=4096 -D dim=128 -D is_causal=False \
            -D dtype=bfloat16 -D block_M=128 -D block_N=128 -D threads=256 -D num_stages=3 --target cuda --quiet ) > "$O/ncu_$name.txt" 2>&1
        echo "ncu rc=$?"; grep -E "stalled_.*ratio +[0-9.]+$" "$O/ncu_$name.txt" | awk '$NF > 0.3' | sed 's/smsp__average_warps_issue_stalled_//'
        grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" "$O/ncu_$name.txt" | head -12
    done
fi
if [ "${FA_BENCH:-1}" = 1 ]; then
    step bench
    args=()
    IFS=' ' read -r -a envs <<< "${FA_ENV:-}"
    for e in "${envs[@]}"; do args+=(--fa-env "$e"); done
    timeout ${FA_BENCH_TIMEOUT:-300} python3 bench/cuda/bench.py --tile $B/bin/tile --only fa "${args[@]}" --out "$O/bench.md" > "$O/bench.log" 2>&1
    echo "bench rc=$?"; grep -E "^\| flash" "$O/bench.md" || tail -20 "$O/bench.log"
fi
step done
