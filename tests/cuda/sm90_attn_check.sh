#!/bin/sh
# sm90_attn_check.sh TILE NVRTC_CHECK TMPDIR NAME EXPECT ARGS... — `tile emit --target cuda`
# for sm_90a, check the lowering the kernel took (the tl-launch comment); when it is the
# attention lowering, check that both GEMMs are wgmma (the SS form for S = Q K^T, the RS form
# with P in registers for P V); compile with NVRTC for sm_90a and sm_80 (exit 77 when NVRTC is
# not loadable).
tile=$1; check=$2; dir=$3; name=$4; expect=$5
shift 5
mkdir -p "$dir" || exit 1
out="$dir/sm90attn_$name.cu"
TILE_CUDA_ARCH=sm_90a "$tile" emit "$@" --target cuda > "$out" || { echo "tile emit failed"; exit 1; }
grep -q "tl-launch .* lowering=$expect " "$out" || { echo "expected lowering $expect:"; grep "tl-launch" "$out"; exit 1; }
if [ "$expect" = sm90-attn ]; then
    grep -q 'wgmma.mma_async.sync.aligned.m64n[0-9]*k16.f32.[bf0-9]*.[bf0-9]* {[^}]*}, %[0-9]*, %[0-9]*, p' "$out" || { echo "no SS wgmma"; exit 1; }
    grep -q 'wgmma.mma_async.sync.aligned.m64n[0-9]*k16.f32.[bf0-9]*.[bf0-9]* {[^}]*}, {%[0-9]*, %[0-9]*, %[0-9]*, %[0-9]*}, %[0-9]*, p, 1, 1, 1' "$out" || { echo "no RS wgmma"; exit 1; }
    grep -q '^ *tl_at_rs_' "$out" || { echo "the RS wgmma is not called"; exit 1; }
    grep -q '^ *tl_at_ss_' "$out" || { echo "the SS wgmma is not called"; exit 1; }
fi
exec "$check" "$out" sm_90a sm_80
