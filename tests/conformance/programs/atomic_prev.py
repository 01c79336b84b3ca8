# T.atomic_add(..., return_prev=True) as a value: the old elements of a T.Parallel update,
# and slots handed out to the threads of a block by an atomic counter in shared memory.
import tilelang
import tilelang.language as T


@tilelang.jit
def add_prev(M, N, block_M=8, block_N=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), Old: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                gi = by * block_M + i
                gj = bx * block_N + j
                if gi < M and gj < N:
                    Old[gi, gj] = T.atomic_add(B[gi, gj], A[gi, gj], return_prev=True)

    return main


@tilelang.jit
def slots(nblocks, threads=96):
    @T.prim_func
    def main(Mark: T.Tensor((nblocks, threads), "int32"), Count: T.Tensor((nblocks,), "int32")):
        with T.Kernel(nblocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            cnt = T.alloc_shared((1,), "int32")
            got = T.alloc_shared((threads,), "int32")
            if tx == 0:
                cnt[0] = 0
            got[tx] = 0
            T.sync_threads()
            pos = T.atomic_add(cnt[0], 1, return_prev=True)
            T.atomic_add(got[pos], tx + 1)
            T.sync_threads()
            Mark[bx, tx] = T.if_then_else(got[tx] > 0, 1, 0)
            if tx == 0:
                Count[bx] = cnt[0]

    return main
