# Warp votes in per-thread code: T.any_sync / T.all_sync (int32 0 or 1 for the whole warp) and
# T.ballot / T.ballot_sync (the uint64 mask of lanes whose predicate holds), with a partial
# last warp (threads=80) and data-dependent predicates.
import tilelang
import tilelang.language as T


@tilelang.jit
def vote(N, threads=80):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), A: T.Tensor((N,), "int32"), L: T.Tensor((N,), "int32"), B: T.Tensor((N,), "int64")):
        with T.Kernel(N // threads, threads=threads) as bx:
            tx = T.get_thread_binding()
            g = bx * threads + tx
            A[g] = T.any_sync(X[g] > 0.9) + 2 * T.all_sync(X[g] > -0.95, 0xFFFFFFFF)
            L[g] = T.all_sync(1)
            B[g] = T.cast(T.ballot(X[g] > 0), "int64") + T.cast(T.ballot_sync(tx % 3 == 0), "int64") * 0

    return main
