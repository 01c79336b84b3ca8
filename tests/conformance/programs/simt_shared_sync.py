# Per-thread code that exchanges values through shared memory without writing
# T.sync_threads(): as in TileLang, the threads meet between a shared-memory write and a
# later read of the same buffer (also inside a loop the same in every thread), so each
# thread reads its neighbour's value of the same round.
import tilelang
import tilelang.language as T


@tilelang.jit
def rotate(N, rounds=3, threads=64):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            buf = T.alloc_shared((threads,), "float32")
            v = T.alloc_local((1,), "float32")
            tx = T.get_thread_binding(0)
            g = bx * threads + tx
            v[0] = T.if_then_else(g < N, X[T.min(g, N - 1)], 0.0)
            for r in T.serial(rounds):
                buf[tx] = v[0]
                v[0] = buf[(tx + 1) % threads] * 2.0 + r
            if g < N:
                Y[g] = v[0]

    return main
