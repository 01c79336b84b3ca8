# Tile operations under branches on the thread index (TileLang's mask_op style): the
# operation runs once for the block when some thread takes the branch, not at all otherwise.
import tilelang
import tilelang.language as T


@tilelang.jit
def masked(M, N, block_M=16, block_N=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            S = T.alloc_shared((block_M, block_N), "float32")
            tx = T.get_thread_binding()
            T.fill(S, 1.0)
            if tx >= 64 and tx < 96:
                T.copy(A[by * block_M, bx * block_N], S)
            if tx >= 128:
                T.fill(S, -5.0)
            if tx < 32:
                for i, j in T.Parallel(block_M, block_N):
                    S[i, j] = S[i, j] * 2.0 + by
            T.copy(S, B[by * block_M, bx * block_N])

    return main
