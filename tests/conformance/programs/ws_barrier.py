# Explicit warp specialisation in the style of TileLang's warp_specialize examples: a
# producer warp group (T.ws(1)) fills a ring of shared stages with T.tma_copy, a consumer
# group (T.ws(0)) multiplies them, and mbarriers order the two (full: data is ready, empty:
# the stage may be refilled), named by index into T.alloc_barrier arrays, by keyword and by
# position. A block-wide barrier of 256 arrivals closes the kernel. consumer_first waits for
# an arrival that comes later in program order, which Tile reports at the wait.
import tilelang
import tilelang.language as T


@tilelang.jit
def ring_gemm(M, N, K, block_M=32, block_N=32, block_K=16, stages=2, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32"), D: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, block_M, block_K), dtype)
            B_s = T.alloc_shared((stages, block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier(arrive_count=[128] * stages)
            done = T.alloc_barrier(256)

            with T.ws(0):
                T.clear(C_f)
            for ko in T.serial(T.ceildiv(K, block_K)):
                s = ko % stages
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=empty[s], parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * block_M, ko * block_K], A_s[s, :, :], barrier=full[s])
                    T.tma_copy(B[ko * block_K, bx * block_N], B_s[s, :, :], barrier=full[s])
                    T.mbarrier_arrive(full[s])
                with T.ws(0):
                    T.barrier_wait(full[s], (ko // stages) % 2)
                    T.gemm(A_s[s, :, :], B_s[s, :, :], C_f)
                    T.barrier_arrive(empty[s])
            with T.ws(0):
                T.copy(C_f, C[by * block_M, bx * block_N])
            T.barrier_arrive(done)
            T.barrier_wait(done, 0)
            with T.ws(0, 1):
                for i, j in T.Parallel(block_M, block_N):
                    if by * block_M + i < M and bx * block_N + j < N:
                        D[by * block_M + i, bx * block_N + j] = C_f[i, j] * 2

    return main


@tilelang.jit
def consumer_first(N):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=256):
            S = T.alloc_shared((N,), "float32")
            ready = T.alloc_barrier(128)
            with T.ws(0):
                T.barrier_wait(ready, 0)
                T.copy(S, Y)
            with T.ws(1):
                T.copy(X, S)
                T.barrier_arrive(ready)

    return main
