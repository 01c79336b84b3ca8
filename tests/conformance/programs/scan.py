# Inclusive scans: T.cumsum on shared memory along dim 0 (in place), on a fragment along
# dim 1 in reverse into another fragment, T.cummax of a 1-D buffer; T.fill of one element.
import tilelang
import tilelang.language as T


@tilelang.jit
def scans(M, N, block_M=16, block_N=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32"),
             X: T.Tensor((T.ceildiv(M, block_M), block_N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_N), "float32")
            A_f = T.alloc_fragment((block_M, block_N), "float32")
            R_f = T.alloc_fragment((block_M, block_N), "float32")
            row = T.alloc_shared((block_N,), "float32")
            T.copy(A[by * block_M, bx * block_N], A_s)
            T.copy(A_s, A_f)
            T.cumsum(src=A_s, dim=0)
            T.cumsum(A_f, R_f, dim=1, reverse=True)
            T.copy(A_s, B[by * block_M, bx * block_N])
            T.copy(R_f, C[by * block_M, bx * block_N])
            T.copy(A[by * block_M, bx * block_N], row)
            T.cummax(row)
            T.fill(row[0], -1.0)
            if bx == 0:
                T.copy(row, X[by, 0])

    return main
