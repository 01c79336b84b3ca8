# Warp shuffles: a butterfly sum with T.shfl_xor, T.shfl_down, T.shfl_up with a width of 16,
# T.shfl_sync and T.tvm_warp_shuffle broadcasts, in a block of 80 threads (a partial last
# warp), with the thread index from T.thread_binding and lanes from T.get_lane_idx.
import tilelang
import tilelang.language as T


@tilelang.jit
def warp_ops(N, threads=80):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), S: T.Tensor((N,), "float32"), D: T.Tensor((N,), "float32"),
             U: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), L: T.Tensor((N,), "int32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            tx = T.thread_binding(0, threads, thread="threadIdx.x")
            i = bx * threads + tx
            v = T.alloc_var("float32")
            v = T.if_then_else(i < N, X[T.min(i, N - 1)], 0.0)
            s = v
            for m in T.serial(5):
                s = s + T.shfl_xor(s, 1 << m)
            d = T.shfl_down(v, 3)
            u = T.shfl_up(v, 2, 16)
            b = T.shfl_sync(v, 5) + T.tvm_warp_shuffle(0xFFFFFFFF, v, T.get_lane_idx() + 1, 32, 32)
            if i < N:
                S[i] = s
                D[i] = d
                U[i] = u
                B[i] = b
                L[i] = T.get_warp_idx() * 100 + T.get_lane_idx()

    return main
