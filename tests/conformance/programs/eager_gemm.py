# The eager @tilelang.jit style: tensor arguments annotated by statements, sizes named by
# T.const and bound from the arguments' shapes, the output made with T.empty and returned,
# pass_configs given as a dict.
import tilelang
import tilelang.language as T


@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: False, "tl.disable_tma_lower": True})
def gemm_bias(A, B, bias, block_M=32, block_N=32, block_K=16, dtype=T.float32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    bias: T.Tensor((N,), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((block_M, block_K), dtype)
        B_s = T.alloc_shared((block_K, block_N), dtype)
        acc = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(acc)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, k * block_K], A_s)
            T.copy(B[k * block_K, bx * block_N], B_s)
            T.gemm(A_s, B_s, acc)
        for i, j in T.Parallel(block_M, block_N):
            if bx * block_N + j < N:
                acc[i, j] = acc[i, j] + bias[bx * block_N + j]
        T.copy(acc, C[by * block_M, bx * block_N])
    return C


if __name__ == "__main__":
    import torch

    a, b, bias = torch.randn(70, 40), torch.randn(40, 50), torch.randn(50)
    torch.testing.assert_close(gemm_bias(a, b, bias), a @ b + bias)
