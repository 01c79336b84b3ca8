#!/bin/sh
# mma_check.sh TILE NVRTC_CHECK TMPDIR NAME EXPECT ARGS... — `tile emit --target cuda` for
# sm_89 and sm_90a: with EXPECT mma every T.gemm must take the generic mma.sync lowering
# (src/codegen/simt_mma.c: its comment in the source, "mma.sync (generic" in --explain), with
# EXPECT simt none may; then an NVRTC compile for each (exit 77 when NVRTC is not loadable).
tile=$1; check=$2; dir=$3; name=$4; expect=$5
shift 5
mkdir -p "$dir" || exit 1
for arch in sm_89 sm_90a; do
  out="$dir/mma_${name}_$arch.cu"
  TILE_CUDA_ARCH=$arch "$tile" emit "$@" --target cuda > "$out" || { echo "tile emit failed ($arch)"; exit 1; }
  TILE_CUDA_ARCH=$arch "$tile" ir "$@" --target cuda --explain > "$out.explain" || { echo "tile ir --explain failed ($arch)"; exit 1; }
  if [ "$expect" = mma ]; then
    grep -q "T.gemm on mma.sync" "$out" || { echo "$arch: the generic mma.sync lowering was not taken:"; grep "T.gemm" "$out.explain"; exit 1; }
    grep -q "T.gemm: mma.sync (generic" "$out.explain" || { echo "$arch: --explain does not name it:"; cat "$out.explain"; exit 1; }
    if grep -q "T.gemm: wgmma" "$out.explain"; then echo "$arch: --explain still claims wgmma"; cat "$out.explain"; exit 1; fi
  else
    if grep -q "T.gemm on mma.sync" "$out"; then echo "$arch: mma.sync taken, expected the SIMT GEMM"; exit 1; fi
    grep -q "T.gemm: declined: mma.sync (generic)" "$out.explain" || { echo "$arch: no reason given:"; cat "$out.explain"; exit 1; }
  fi
  "$check" "$out" $arch || exit $?
done
exit 0
