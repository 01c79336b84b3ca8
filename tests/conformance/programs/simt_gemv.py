# Thread-level GEMV in the style of TileLang's examples/gemv: a 2-D thread block
# (threads=(BLOCK_N, BLOCK_K)), each thread accumulating a slice of one row in a per-thread
# T.alloc_local buffer, the slices summed with atomic adds into shared memory between
# T.sync_threads() barriers.
import tilelang
import tilelang.language as T


@tilelang.jit
def gemv(N, K, BLOCK_N=32, BLOCK_K=4, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, BLOCK_K)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            acc = T.alloc_local((1,), "float32")
            C_shared = T.alloc_shared((BLOCK_N,), "float32")
            if tk == 0:
                C_shared[tn] = 0
            T.clear(acc)
            T.sync_threads()
            for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                k = bk * BLOCK_K + tk
                if k < K and bn * BLOCK_N + tn < N:
                    acc[0] += A[k] * B[bn * BLOCK_N + tn, k]
            T.atomic_add(C_shared[tn], acc[0])
            T.sync_threads()
            if tk == 0 and bn * BLOCK_N + tn < N:
                C[bn * BLOCK_N + tn] = C_shared[tn]

    return main
