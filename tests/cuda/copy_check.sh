#!/bin/sh
# copy_check.sh TILE NVRTC_CHECK TMPDIR NAME EXPECT ARGS... — the form of a program's register
# fragment copies on sm_90a: EXPECT `fast` when the ranges prove every copy's region inside
# its tensor and aligned (only the vector accesses: no run-time `tl_vec` test and no
# element-by-element path in the CUDA C), `checked` when they do not (the run-time tests
# stay); then the CUDA C compiles with NVRTC (exit 77 when NVRTC is not loadable).
tile=$1; check=$2; dir=$3; name=$4; expect=$5
shift 5
mkdir -p "$dir" || exit 1
out="$dir/copy_$name.cu"
TILE_CUDA_ARCH=sm_90a "$tile" emit "$@" --target cuda > "$out" || { echo "tile emit failed"; exit 1; }
n=$(grep -c "tl_vec" "$out")
e=$(grep -c "for (int tl_v = 0" "$out")
case $expect in
  fast) [ "$n" -eq 0 ] && [ "$e" -eq 0 ] || { echo "expected vector-only copies; $n tl_vec lines, $e element loops in $out"; exit 1; } ;;
  checked) [ "$n" -gt 0 ] && [ "$e" -gt 0 ] || { echo "expected checked copies; $n tl_vec lines, $e element loops in $out"; exit 1; } ;;
  *) echo "copy_check.sh: EXPECT is fast or checked, not '$expect'"; exit 1 ;;
esac
exec "$check" "$out" sm_90a
