# Split-K GEMM: each split adds its tile into C with the region form of T.atomic_add.
import tilelang
import tilelang.language as T


@tilelang.jit
def splitk(M, N, K, block_M=32, block_N=32, block_K=16, splits=3):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), splits, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((block_M, block_K), "float32")
            B_s = T.alloc_shared((block_K, block_N), "float32")
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_l)
            per = T.ceildiv(T.ceildiv(K, block_K), splits)
            for k in T.Pipelined(per, num_stages=2):
                T.copy(A[by * block_M, (bz * per + k) * block_K], A_s)
                T.copy(B[(bz * per + k) * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.atomic_add(C[by * block_M, bx * block_N], C_l)

    return main
