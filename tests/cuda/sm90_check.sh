#!/bin/sh
# sm90_check.sh TILE NVRTC_CHECK TMPDIR NAME EXPECT ARGS... — `tile emit --target cuda` for
# sm_90a, check that the kernel took the EXPECTed lowering (the tl-launch comment), and
# compile it with NVRTC for sm_90a and sm_80 (exit 77 when NVRTC is not loadable).
tile=$1; check=$2; dir=$3; name=$4; expect=$5
shift 5
mkdir -p "$dir" || exit 1
out="$dir/sm90_$name.cu"
TILE_CUDA_ARCH=sm_90a "$tile" emit "$@" --target cuda > "$out" || { echo "tile emit failed"; exit 1; }
grep -q "tl-launch .* lowering=$expect " "$out" || { echo "expected lowering $expect:"; grep "tl-launch" "$out"; exit 1; }
exec "$check" "$out" sm_90a sm_80
