#!/bin/sh
# frag_check.sh TILE NVRTC_CHECK TMPDIR NAME ARCH EXPECT ARGS... — fragments of any size compile
# (issue 19: fragments are registers, spilled past the register budget, never a shared-memory
# total past the device's limit). For TILE_CUDA_ARCH=ARCH (sm_90a or sm_80):
#   - `tile ir --target cuda` places each fragment EXPECT names as it says: a comma list of
#     NAME:regs (registers), NAME:local (registers spilled to local memory), NAME:shared, or
#     lowering:L (the kernel's tl-launch lowering); "-" for none;
#   - `tile emit --target cuda`: every kernel's shared memory (the tl-launch comment) within the
#     architecture's opt-in limit per block (sm_90: 232448 bytes, sm_80: 166912);
#   - the CUDA C compiles with NVRTC for ARCH (exit 77 when NVRTC is not loadable).
tile=$1; check=$2; dir=$3; name=$4; arch=$5; expect=$6
shift 6
mkdir -p "$dir" || exit 1
out="$dir/frag_$name.cu"
ir="$dir/frag_$name.ir"
export TILE_CUDA_ARCH=$arch
"$tile" ir "$@" --target cuda > "$ir" || { echo "tile ir failed"; exit 1; }
"$tile" emit "$@" --target cuda > "$out" || { echo "tile emit failed"; exit 1; }
case $arch in
  sm_90a) lim=232448 ;;
  sm_80) lim=166912 ;;
  *) echo "frag_check.sh: unknown arch $arch"; exit 1 ;;
esac
n=0
for s in $(sed -n 's/.*tl-launch .* smem=\([0-9]*\) .*/\1/p' "$out"); do
    n=$((n + 1))
    [ "$s" -le "$lim" ] || { echo "a kernel needs $s bytes of shared memory, over the $arch limit of $lim:"; grep "tl-launch" "$out"; exit 1; }
done
[ "$n" -gt 0 ] || { echo "no tl-launch line in the emitted source"; exit 1; }
if [ "$expect" != - ]; then
    for e in $(echo "$expect" | tr ',' ' '); do
        f=${e%%:*}; want=${e#*:}
        if [ "$f" = lowering ]; then
            grep -q "tl-launch .* lowering=$want " "$out" || { echo "expected lowering $want:"; grep "tl-launch" "$out"; exit 1; }
            continue
        fi
        l=$(grep -m1 "^ *alloc $f: .* fragment " "$ir")
        [ -n "$l" ] || { echo "no fragment '$f' in the IR"; exit 1; }
        case $want in
          regs) case "$l" in *"# layout regs("*", local memory"*) ok=0 ;; *"# layout regs("*) ok=1 ;; *) ok=0 ;; esac ;;
          local) case "$l" in *"# layout regs("*", local memory"*) ok=1 ;; *) ok=0 ;; esac ;;
          shared) case "$l" in *"# layout shared"*) ok=1 ;; *) ok=0 ;; esac ;;
          *) echo "frag_check.sh: unknown placement $want"; exit 1 ;;
        esac
        [ "$ok" = 1 ] || { echo "fragment '$f': expected $want, the IR says:"; echo "$l"; exit 1; }
    done
fi
exec "$check" "$out" "$arch"
