#!/bin/sh
# emit_check.sh TILE NVRTC_CHECK TMPDIR NAME ARGS... — `tile emit --target cuda ARGS` and
# compile the result with NVRTC for sm_90a and sm_80 (exit 77 when NVRTC is not loadable).
tile=$1; check=$2; dir=$3; name=$4
shift 4
mkdir -p "$dir" || exit 1
out="$dir/$name.cu"
"$tile" emit "$@" --target cuda > "$out" || { echo "tile emit failed"; exit 1; }
exec "$check" "$out" sm_90a sm_80
