# Blackwell-style MMA into tensor memory, on every target: T.alloc_tmem accumulators,
# T.tcgen05_gemm with a completion barrier and a run-time clear_accum, T.gemm(mbar=...) under
# a branch on the k-tile, T.tcgen05_mma_arrive, each completion waited for by parity.
import tilelang
import tilelang.language as T


@tilelang.jit
def tc_gemm(M, N, K, block_M=64, block_N=64, block_K=32, dtype="float16"):
    nk = T.ceildiv(K, block_K)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float32"), D: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_tmem([block_M, block_N], "float32")
            odd = T.alloc_tmem([block_M, block_N], "float32")
            mbar = T.alloc_barrier(1)
            done = T.alloc_barrier(1)
            out = T.alloc_fragment((block_M, block_N), "float32")
            for k in T.Pipelined(nk, num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[bx * block_N, k * block_K], B_s)
                T.tcgen05_gemm(A_s, B_s, acc, False, True, mbar=mbar, clear_accum=k == 0)
                T.mbarrier_wait_parity(mbar, k % 2)
                if k % 2 == 1:
                    T.gemm(A_s, B_s, odd, transpose_B=True, mbar=done, clear_accum=k == 1)
                    T.mbarrier_wait_parity(done, (k // 2) % 2)
            T.tcgen05_mma_arrive(mbar)
            T.mbarrier_wait_parity(mbar, nk % 2)
            T.copy(acc, out)
            T.copy(out, C[by * block_M, bx * block_N])
            T.copy(odd, D[by * block_M, bx * block_N])

    return main


# Hopper's explicit asynchronous MMA: T.wgmma_gemm over two halves of the K tile (slices of
# the shared operands), then T.wait_wgmma(0) before the accumulator is read
@tilelang.jit
def wg_gemm(M, N, K, block_M=64, block_N=64, block_K=32, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[bx * block_N, k * block_K], B_s)
                T.wgmma_gemm(A_s[:, : block_K // 2], B_s[:, : block_K // 2], acc, transpose_B=True)
                T.wgmma_gemm(A_s[:, block_K // 2 :], B_s[:, block_K // 2 :], acc, transpose_B=True)
                T.wait_wgmma(0)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main
