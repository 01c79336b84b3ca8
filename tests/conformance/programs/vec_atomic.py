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
