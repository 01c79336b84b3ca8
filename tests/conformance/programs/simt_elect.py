# T.shuffle_elect(n): one thread of each group of n threads (n = 0: of the block), as a value
# and as the condition of a branch in per-thread code.
import tilelang
import tilelang.language as T


@tilelang.jit
def elect(N, group=64, threads=256):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), A: T.Tensor((N,), "int32"), L: T.Tensor((N // group,), "float32")):
        with T.Kernel(N // threads, threads=threads) as bx:
            tx = T.get_thread_binding()
            g = bx * threads + tx
            A[g] = T.shuffle_elect(group) + 2 * T.shuffle_elect(0)
            if T.shuffle_elect(group):
                L[g // group] = X[g] * 2

    return main
