#!/bin/sh
# sm80_ptxas.sh TILE TMPDIR NAME ARCH ARGS... — `tile emit --target cuda` for ARCH (sm_80, sm_89,
# or sm_90a with TILE_CUDA_MMA_SYNC=1), PTX from NVRTC (bench/cuda/nvrtc_ptx.py), then
# `ptxas -v`: the mma.sync lowering must have been taken and compile with no spill and no stack
# frame. Exit 77 when ptxas, python3 or NVRTC is missing.
tile=$1; dir=$2; name=$3; arch=$4
shift 4
command -v ptxas >/dev/null 2>&1 || { echo "no ptxas"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
mkdir -p "$dir" || exit 1
cu="$dir/sm80_ptxas_${name}_$arch.cu"; ptx="$dir/sm80_ptxas_${name}_$arch.ptx"
TILE_CUDA_MMA_SYNC=1 TILE_CUDA_ARCH=$arch "$tile" emit "$@" --target cuda > "$cu" || { echo "tile emit failed"; exit 1; }
grep -q "tl-launch .* lowering=sm80-mma " "$cu" || { echo "the mma.sync lowering was not taken"; exit 1; }
msg=$(python3 "$(dirname "$0")/../../bench/cuda/nvrtc_ptx.py" "$cu" "$ptx" "compute_${arch#sm_}" 2>&1)
case $? in
0) ;;
*) case "$msg" in *"cannot load libnvrtc"*) echo "$msg"; exit 77;; esac; echo "$msg"; exit 1;;
esac
grep -q "mma.sync.aligned.m16n8k" "$ptx" || { echo "no mma.sync in the PTX"; exit 1; }
grep -q "ldmatrix.sync.aligned" "$ptx" || { echo "no ldmatrix in the PTX"; exit 1; }
grep -q "cp.async.cg.shared.global" "$ptx" || { echo "no cp.async in the PTX"; exit 1; }
log=$(ptxas -v -arch=$arch "$ptx" -o "$dir/sm80_ptxas_${name}_$arch.cubin" 2>&1) || { echo "$log"; exit 1; }
echo "$log" | grep -E "registers|spill"
echo "$log" | grep -q " 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" || { echo "spills"; exit 1; }
exit 0
