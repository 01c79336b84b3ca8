# T.atomic_load / T.atomic_store on single elements (with every accepted memory_order), a
# flag published through shared memory by one thread and read atomically by all, and
# T.align_up on run-time and compile-time integers.
import tilelang
import tilelang.language as T


@tilelang.jit
def scaled_copy(M, N, block_M=8, block_N=16, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=64) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                gi = by * block_M + i
                gj = bx * block_N + j
                if gi < M and gj < N:
                    v = T.atomic_load(A[gi, gj], memory_order="acquire")
                    T.atomic_store(B[gi, gj], v * 2 + T.atomic_load(A[gi, gj]), memory_order="release")

    return main


@tilelang.jit
def flag(nblocks, threads=64):
    @T.prim_func
    def main(Seen: T.Tensor((nblocks, threads), "int32"), Up: T.Tensor((nblocks, threads), "int32")):
        with T.Kernel(nblocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            f = T.alloc_shared((1,), "int32")
            if tx == 0:
                T.atomic_store(f[0], bx * 10 + 3, memory_order="relaxed")
            T.sync_threads()
            Seen[bx, tx] = T.atomic_load(f[0], memory_order="seq_cst")
            # x in [-threads, threads) over the block: negative, zero and positive values
            Up[bx, tx] = T.align_up(tx * 2 - threads + bx, 16) + T.align_up(threads + 1, 32)

    return main
