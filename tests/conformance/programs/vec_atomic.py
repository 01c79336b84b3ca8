# T.atomic_addx2 / T.atomic_addx4: each adds 2 (4) consecutive elements of the last
# dimension, named by their first element or by a slice; here every row block of A adds
# into the column sums S, and B (float16) adds into C (float32) four at a time.
import tilelang
import tilelang.language as T


@tilelang.jit
def colsum_vec(M, N, block_M=8, block_N=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float16"), S: T.Tensor((1, N), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=64) as (bx, by):
            for i, j in T.Parallel(block_M, block_N // 2):
                gi = by * block_M + i
                gj = bx * block_N + j * 2
                if gi < M and gj < N:
                    T.atomic_addx2(S[0, gj], A[gi, gj])
            for i, j in T.Parallel(block_M, block_N // 4):
                gi = by * block_M + i
                gj = bx * block_N + j * 4
                if gi < M and gj < N:
                    T.atomic_addx4(C[gj : gj + 4], B[gi, gj : gj + 4])

    return main


# T.atomic_add of a scalar (a literal or an element) into every element of a region
@tilelang.jit
def region_scalar(R=6, W=8):
    @T.prim_func
    def main(X: T.Tensor((3,), "float32"), H: T.Tensor((R, W), "float32")):
        with T.Kernel(3, 2, threads=32) as (bx, by):
            T.atomic_add(H[0:4, 0:W], 1.0)
            T.atomic_add(H[4:R, :], X[bx])

    return main
