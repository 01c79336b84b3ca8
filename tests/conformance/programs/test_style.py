# Kernels in the style of TileLang's own tests: defined inside test functions and compiled
# there with tilelang.compile (the kernel is "<test>__<def>", or the test's own name when
# the test body compiles a prim_func it defines), sizes from a helper that returns early
# on a device query, and TileLang spellings: T.async_copy + T.ptx_wait_group, T.gemm with
# B=/C= keywords, T.__ldg, a reduction with a **options dict.
import pytest
import torch
import tilelang
import tilelang.language as T


def tile_sizes():
    major, minor = torch.cuda.get_device_capability()
    if major * 10 + minor >= 90:
        return 32, 16
    return 16, 16


def test_gemm_relu():
    block_M, block_K = tile_sizes()
    M, N, K = 64, 48, 80

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float32), B: T.Tensor((K, N), T.float32), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), T.float32)
            B_s = T.alloc_shared((block_K, N), T.float32)
            acc = T.alloc_fragment((block_M, N), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.async_copy(A[by * block_M, ko * block_K], A_s)
                T.ptx_wait_group(0)
                T.async_copy(B[ko * block_K, 0], B_s)
                T.ptx_wait_group(0)
                T.gemm(A_s, B=B_s, C=acc)
            for i, j in T.Parallel(block_M, N):
                acc[i, j] = T.max(acc[i, j], 0.0)
            T.copy(acc, C[by * block_M, 0])

    kernel = tilelang.compile(main, out_idx=[2], target="cuda")
    a = torch.randn(M, K)
    b = torch.randn(K, N)
    torch.testing.assert_close(kernel(a, b), torch.relu(a @ b))


def test_row_sums():
    opts = {"clear": True}

    @tilelang.jit(out_idx=[-1])
    def row_sums(M, N, block_M=8):
        @T.prim_func
        def kernel(X: T.Tensor((M, N), T.float32), S: T.Tensor((M,), T.float32)):
            with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
                x = T.alloc_fragment((block_M, N), T.float32)
                s = T.alloc_fragment((block_M,), T.float32)
                for i, j in T.Parallel(block_M, N):
                    x[i, j] = T.__ldg(X[bx * block_M + i, j]) * 2.0
                T.reduce_sum(x, s, dim=1, **opts)
                T.copy(s, S[bx * block_M])

        return kernel

    x = torch.randn(40, 24)
    torch.testing.assert_close(row_sums(40, 24)(x), 2 * x.sum(dim=1))
