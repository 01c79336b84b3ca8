#!/bin/sh
# sm90_ptxas.sh TILE TMPDIR NAME ARGS... — `tile emit --target cuda` for sm_90a, PTX from NVRTC
# (bench/cuda/nvrtc_ptx.py), then `ptxas -v`: the sm_90a GEMM lowering must have been taken with
# the pipeline plan's iterations a stage that EXPECT_U (environment, default 1) names, and the
# kernel must compile with no spill and no serialised wgmma (ptxas's C751x notes). Exit 77 when
# ptxas, python3 or NVRTC is missing.
tile=$1; dir=$2; name=$3
shift 3
command -v ptxas >/dev/null 2>&1 || { echo "no ptxas"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
mkdir -p "$dir" || exit 1
cu="$dir/sm90_ptxas_$name.cu"; ptx="$dir/sm90_ptxas_$name.ptx"
TILE_CUDA_ARCH=sm_90a "$tile" emit "$@" --target cuda > "$cu" || { echo "tile emit failed"; exit 1; }
grep -q "tl-launch .* lowering=sm90-wgmma " "$cu" || { echo "the sm_90a GEMM lowering was not taken"; exit 1; }
grep -q "stages of ${EXPECT_U:-1} iteration(s)" "$cu" || { echo "expected ${EXPECT_U:-1} iteration(s) a stage:"; grep "sm_90a GEMM" "$cu"; exit 1; }
msg=$(python3 "$(dirname "$0")/../../bench/cuda/nvrtc_ptx.py" "$cu" "$ptx" compute_90a 2>&1)
case $? in
0) ;;
*) case "$msg" in *"cannot load libnvrtc"*) echo "$msg"; exit 77;; esac; echo "$msg"; exit 1;;
esac
log=$(ptxas -v -arch=sm_90a "$ptx" -o "$dir/sm90_ptxas_$name.cubin" 2>&1) || { echo "$log"; exit 1; }
echo "$log" | grep -E "registers|spill|C75"
if echo "$log" | grep -q "C751[0-9]"; then echo "wgmma serialised"; exit 1; fi
echo "$log" | grep -q " 0 bytes spill stores, 0 bytes spill loads" || { echo "spills"; exit 1; }
exit 0
