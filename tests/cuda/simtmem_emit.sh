#!/bin/sh
# simtmem_emit.sh TILE — the memory-bound lowerings of the SIMT generator are really emitted
# (src/codegen/simt.c: gen_reduce_warp, gen_copy_vec), and TILE_SIMT_MEMOPT=0 turns them off.
# Their results are checked against the interpreter by opencl.<example> (PoCL runs the same
# generator; the OpenCL butterfly goes through shared memory) and cuda.<example> on a GPU.
# The shared-memory lowerings are checked with the register fragments off (TILE_SIMT_REGFRAG=0);
# the register fragments themselves at the end.
tile=$1
fail() { echo "FAIL: $*"; exit 1; }
TILE_SIMT_REGFRAG=0; export TILE_SIMT_REGFRAG
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

# --- register fragments (TILE_SIMT_REGFRAG=1, the default)
unset TILE_SIMT_REGFRAG
regs() { # expected count of register fragments, then tile emit arguments
    n=$1; shift
    src=$("$tile" emit "$@") || fail "tile emit $*"
    [ "$(echo "$src" | grep -c '/\* register fragment (')" = "$n" ] || fail "$*: expected $n register fragments, got $(echo "$src" | grep -c '/\* register fragment (')"
}
regs 3 examples/softmax_row.tl -D M=64 -D N=1024 --target cuda
regs 3 examples/softmax_row.tl -D M=64 -D N=1024 --target opencl
regs 4 examples/rmsnorm.tl -D M=64 -D N=512 -D block_M=1 --target cuda
regs 5 examples/softmax.tl -D M=64 -D N=512 -D block_M=2 -D block_N=512 --target cuda
# rows shorter than 4 x threads and thread counts that are not warps: registers too (the layout
# pass gives every fragment a layout, src/opt/layout.c)
regs 5 examples/softmax.tl -D M=64 -D N=512 --target cuda
regs 4 examples/rmsnorm.tl -D M=64 -D N=512 -D threads=48 --target cuda
# rmsnorm's defaults (8 rows of 8192): 512 elements a thread for all rows, over the register
# budget; the layout pass runs the rows one at a time (row groups), 64 registers a thread
regs 4 examples/rmsnorm.tl -D M=8192 -D N=8192 --target cuda
rl=$("$tile" emit examples/rmsnorm.tl -D M=8192 -D N=8192 --target cuda)
echo "$rl" | grep -q "float b3_x\[64\]; /\* register fragment (8192 elements, 64 a thread) \*/" || fail "rmsnorm defaults: x is not 64 registers a thread (row groups)"
"$tile" ir examples/rmsnorm.tl -D M=8192 -D N=8192 --target cuda | grep -q "for tl_rg in serial(0, 8):" || fail "rmsnorm defaults: no row-group loop in the IR"
TILE_SIMT_REGFRAG=0 regs 0 examples/softmax_row.tl -D M=64 -D N=1024 --target cuda
TILE_SIMT_MEMOPT=0 regs 0 examples/softmax_row.tl -D M=64 -D N=1024 --target cuda
sr=$("$tile" emit examples/softmax_row.tl -D M=64 -D N=1024 --target cuda)
echo "$sr" | grep -q "float b2_x\[4\];" || fail "softmax_row: x is not 4 registers a thread (1024 elements, 256 threads)"
echo "$sr" | grep -q "__shfl_xor_sync(0xffffffffu, tl_ra\[tl_q\], 16)" || fail "softmax_row: no shuffle in the register reduction"
echo "$sr" | grep -q "const uint4 tl_u = \*(const TL_GLOBAL uint4 \*)(b0_X" || fail "softmax_row: no 16-byte load into registers"
echo "$sr" | grep -q "\*(TL_GLOBAL uint4 \*)(b1_Y + tl_o1) = tl_u;" || fail "softmax_row: no 16-byte store from registers"
# the nests and copies between the reductions need no barrier, and each reduction has its own
# cross-warp scratch: one barrier a reduction (two in a loop, where the scratch is reused)
[ "$(echo "$sr" | grep -c 'TL_BARRIER();')" = 2 ] || fail "softmax_row: expected 2 barriers, got $(echo "$sr" | grep -c 'TL_BARRIER();')"
sm=$("$tile" emit examples/softmax.tl -D M=64 -D N=2048 -D block_M=1 -D block_N=1024 --target cuda)
[ "$(echo "$sm" | grep -c 'TL_BARRIER();')" -ge 4 ] || fail "softmax.tl: a reduction in a loop without its barrier before the scratch is reused"
ad=$("$tile" emit examples/add.tl -D M=1000 -D N=1000 --target cuda)
echo "$ad" | grep -q "TL_BARRIER();" && fail "add: a barrier in a kernel of thread-local statements"
echo "$ad" | grep -q "tl_ixd(" || fail "add: the unrolled nest does not defer its bounds checks"
echo ok
