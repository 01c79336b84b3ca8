#!/bin/sh
# sm80_check.sh TILE NVRTC_CHECK TMPDIR NAME EXPECT ARGS... — `tile emit --target cuda` for
# sm_80, sm_89 and (with TILE_CUDA_MMA_SYNC=1, the mma.sync lowering before wgmma) sm_90a;
# check that each kernel took the EXPECTed lowering (the tl-launch comment) and compile each
# with NVRTC for its architecture (exit 77 when NVRTC is not loadable). EXPECT sm80-mma-89: taken
# from sm_89 on (fp8), the portable lowering (simt) for sm_80.
tile=$1; check=$2; dir=$3; name=$4; expect=$5
shift 5
mkdir -p "$dir" || exit 1
for arch in sm_80 sm_89 sm_90a; do
  want=$expect
  [ "$expect" = sm80-mma-89 ] && { want=sm80-mma; [ $arch = sm_80 ] && want=simt; }
  out="$dir/sm80_${name}_$arch.cu"
  TILE_CUDA_MMA_SYNC=1 TILE_CUDA_ARCH=$arch "$tile" emit "$@" --target cuda > "$out" || { echo "tile emit failed ($arch)"; exit 1; }
  grep -q "tl-launch .* lowering=$want " "$out" || { echo "$arch: expected lowering $want:"; grep "tl-launch" "$out"; exit 1; }
  "$check" "$out" $arch || exit $?
done
# TILE_CUDA_MMA_SYNC=0 turns the lowering off
TILE_CUDA_MMA_SYNC=0 TILE_CUDA_ARCH=sm_80 "$tile" emit "$@" --target cuda > "$dir/sm80_${name}_off.cu" || { echo "tile emit failed (off)"; exit 1; }
if grep -q "lowering=sm80-mma" "$dir/sm80_${name}_off.cu"; then echo "TILE_CUDA_MMA_SYNC=0: still sm80-mma"; exit 1; fi
exit 0
