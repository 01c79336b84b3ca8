#!/bin/sh
# sm90_attn_check.sh TILE NVRTC_CHECK TMPDIR NAME EXPECT ARGS... — `tile emit --target cuda`
# for sm_90a, check the lowering the kernel took (the tl-launch comment); when it is the
# attention lowering, check that both GEMMs are wgmma (the SS form for S = Q K^T, the RS form
# with P in registers for P V); compile with NVRTC for sm_90a and sm_80 (exit 77 when NVRTC is
# not loadable). Unless TILE_SM90_ATTN_OVERLAP=0 is in the environment, a kernel that takes the
# attention lowering must also take the overlapped schedule (the default) (P V issued late, after the next
# S = Q K^T) — the same checks apply to it — unless TILE_TEST_INORDER=1 says that it must
# decline it. With TILE_SM90_ATTN_PINGPONG=1 as well, a kernel of two consumer warpgroups must
# take the warpgroup ping-pong. The loads must be TMA copies unless TILE_SM90_ATTN_TMA=0 (then
# they must not be).
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
    if [ "${TILE_SM90_ATTN_TMA:-1}" = 1 ] && [ "${TILE_SM90_ATTN_WS:-1}" = 1 ]; then
        grep -q 'a TMA producer warpgroup' "$out" && grep -q 'cp.async.bulk.tensor' "$out" || { echo "the loads are not TMA copies"; exit 1; }
    elif grep -q 'a TMA producer warpgroup' "$out"; then
        echo "TMA loads with TILE_SM90_ATTN_TMA=0"; exit 1
    fi
    if [ "${TILE_SM90_ATTN_OVERLAP:-1}" = 1 ] && [ "${TILE_TEST_INORDER:-0}" != 1 ]; then
        grep -q 'O += P V of iteration tl_it - 1, issued late' "$out" || { echo "the overlapped schedule was not taken"; exit 1; }
        grep -q 'TL_AT_WG_WAIT(1);' "$out" || { echo "the overlapped schedule: no wait that leaves P V in flight"; exit 1; }
        if [ "${TILE_SM90_ATTN_PINGPONG:-0}" = 1 ] && grep -q "2 consumer warpgroup(s)" "$out"; then
            grep -q 'warpgroup ping-pong' "$out" && grep -q 'TL_AT_BAR_SYNC(1 + tl_wg)' "$out" || { echo "TILE_SM90_ATTN_PINGPONG=1: no ping-pong"; exit 1; }
        fi
    elif grep -q 'issued late' "$out"; then
        echo "the overlapped schedule was taken with TILE_SM90_ATTN_OVERLAP=0 or where it must be declined"; exit 1
    fi
fi
exec "$check" "$out" sm_90a sm_80
