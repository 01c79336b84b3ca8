# Warp reductions (T.warp_reduce_sum/max/bitor) in a block of 48 threads: a full warp and a
# partial one, each reducing over the threads it has.
import tilelang
import tilelang.language as T


@tilelang.jit
def warp_reduce(N, threads=48):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), K: T.Tensor((N,), "int32"), S: T.Tensor((N,), "float32"),
             M: T.Tensor((N,), "float32"), O: T.Tensor((N,), "int32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            tx = T.get_thread_binding(0)
            i = bx * threads + tx
            x = T.alloc_local((1,), "float32")
            k = T.alloc_local((1,), "int32")
            x[0] = T.if_then_else(i < N, X[T.min(i, N - 1)], 0.0)
            k[0] = T.if_then_else(i < N, K[T.min(i, N - 1)], 0)
            s = T.warp_reduce_sum(x[0])
            m = T.warp_reduce_max(x[0])
            o = T.warp_reduce_bitor(k[0])
            if i < N:
                S[i] = s
                M[i] = m
                O[i] = o + T.get_warp_group_idx()

    return main
