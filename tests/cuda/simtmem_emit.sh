#!/bin/sh
# simtmem_emit.sh TILE — the memory-bound lowerings of the SIMT generator are really emitted
# (src/codegen/simt.c: gen_reduce_warp, gen_copy_vec), and TILE_SIMT_MEMOPT=0 turns them off.
# Their results are checked against the interpreter by opencl.<example> (PoCL runs the same
# generator; the OpenCL butterfly goes through shared memory) and cuda.<example> on a GPU.
tile=$1
fail() { echo "FAIL: $*"; exit 1; }
cu=$("$tile" emit examples/rmsnorm.tl -D M=64 -D N=512 --target cuda) || fail "tile emit --target cuda"
echo "$cu" | grep -q "__shfl_xor_sync(0xffffffffu, tl_acc, 16)" || fail "no warp-shuffle reduction in rmsnorm (cuda)"
echo "$cu" | grep -q "const uint4 tl_u = \*(const TL_GLOBAL uint4 \*)" || fail "no 16-byte vector load in rmsnorm (cuda)"
bf=$("$tile" emit examples/softmax.tl -D M=64 -D N=512 -D dtype=bfloat16 --target cuda) || fail "tile emit bf16"
echo "$bf" | grep -q "const uint2 tl_u = \*(const TL_GLOBAL uint2 \*)" || fail "no 8-byte bf16 vector load in softmax (cuda)"
echo "$bf" | grep -q "tcv_f32_to_bf16_bits(TL_F32_BITS(tl_u.z))" || fail "no packed bf16 vector store in softmax (cuda)"
cl=$("$tile" emit examples/rmsnorm.tl -D M=64 -D N=512 --target opencl) || fail "tile emit --target opencl"
echo "$cl" | grep -q "tl_red\[" || fail "no butterfly reduction in rmsnorm (opencl)"
off=$(TILE_SIMT_MEMOPT=0 "$tile" emit examples/rmsnorm.tl -D M=64 -D N=512 --target cuda) || fail "tile emit with TILE_SIMT_MEMOPT=0"
echo "$off" | grep -q "__shfl_xor_sync\|uint4 tl_u" && fail "TILE_SIMT_MEMOPT=0 still emits the memory-bound lowerings"
# fewer rows than warps: the warps of a row meet in shared memory
rb=$("$tile" emit examples/rmsnorm.tl -D M=64 -D N=512 -D block_M=1 --target cuda) || fail "tile emit block_M=1"
echo "$rb" | grep -q "tl_acc = tl_acc + tl_redw\[(tl_tid >> 5) + 3\];" || fail "block_M=1, 4 warps: no cross-warp step"
# threads not a multiple of 32: the per-row serial reduction
t48=$("$tile" emit examples/rmsnorm.tl -D M=64 -D N=512 -D threads=48 --target cuda) || fail "tile emit threads=48"
echo "$t48" | grep -q "__shfl_xor_sync" && fail "a warp reduction with 48 threads a block"
# clear=False (flash attention's running max) keeps the serial reduction unless TILE_SIMT_MEMOPT=2
fa="examples/flash_attention.tl -D batch=1 -D heads=1 -D seq_len=128 -D dim=64"
[ "$("$tile" emit $fa --target cuda | grep -c '__shfl_xor_sync')" = 5 ] || fail "flash attention: expected only reduce_sum's 5 shuffles"
[ "$(TILE_SIMT_MEMOPT=2 "$tile" emit $fa --target cuda | grep -c '__shfl_xor_sync')" = 10 ] || fail "flash attention at TILE_SIMT_MEMOPT=2: expected 10 shuffles"
echo ok
