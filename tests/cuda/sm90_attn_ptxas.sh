#!/bin/sh
# sm90_attn_ptxas.sh TILE TMPDIR NAME ARGS... — `tile emit --target cuda` for sm_90a (the
# schedule picked by TILE_SM90_ATTN_OVERLAP in the environment), PTX from NVRTC
# (bench/cuda/nvrtc_ptx.py), then `ptxas -v`: the attention kernel must have been taken and
# compile with no spill and no serialised wgmma (ptxas's C751x "Potential Performance Loss"
# notes). Exit 77 when ptxas, python3 or NVRTC is missing.
tile=$1; dir=$2; name=$3
shift 3
command -v ptxas >/dev/null 2>&1 || { echo "no ptxas"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
mkdir -p "$dir" || exit 1
cu="$dir/sm90attn_ptxas_$name.cu"; ptx="$dir/sm90attn_ptxas_$name.ptx"
TILE_CUDA_ARCH=sm_90a "$tile" emit "$@" --target cuda > "$cu" || { echo "tile emit failed"; exit 1; }
grep -q "tl-launch .* lowering=sm90-attn " "$cu" || { echo "the attention lowering was not taken"; exit 1; }
if [ "${TILE_SM90_ATTN_OVERLAP:-1}" = 1 ]; then
    grep -q 'issued late' "$cu" || { echo "the overlapped schedule was not taken"; exit 1; }
fi
msg=$(python3 "$(dirname "$0")/../../bench/cuda/nvrtc_ptx.py" "$cu" "$ptx" compute_90a 2>&1)
case $? in
0) ;;
*) case "$msg" in *"cannot load libnvrtc"*) echo "$msg"; exit 77;; esac; echo "$msg"; exit 1;;
esac
log=$(ptxas -v -arch=sm_90a "$ptx" -o "$dir/sm90attn_ptxas_$name.cubin" 2>&1) || { echo "$log"; exit 1; }
echo "$log" | grep -E "registers|spill|C75"
if echo "$log" | grep -q "C751[0-9]"; then echo "wgmma serialised"; exit 1; fi
echo "$log" | grep -q " 0 bytes spill stores, 0 bytes spill loads" || { echo "spills"; exit 1; }
exit 0
