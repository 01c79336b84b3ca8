# A prefix sum among the first R threads of a block (a Hillis-Steele scan as in TileLang's
# deepseek_v32 top-k selector): named barriers T.sync_threads(id, R) inside a branch on the
# thread index, then a warp sum with T.shfl_down under another thread-dependent branch.
import tilelang
import tilelang.language as T


@tilelang.jit
def prefix(N, R=64, threads=128):
    @T.prim_func
    def main(X: T.Tensor((N,), "int32"), P: T.Tensor((N,), "int32"), W: T.Tensor((T.ceildiv(N, R),), "int32")):
        with T.Kernel(T.ceildiv(N, R), threads=threads) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((R,), "int32")
            val = T.alloc_var("int32")
            if tx < R:
                s[tx] = T.if_then_else(bx * R + tx < N, X[T.min(bx * R + tx, N - 1)], 0)
                for i in T.serial(6):
                    off = 1 << i
                    T.sync_threads(3, R)
                    if tx >= off:
                        val = s[tx] + s[tx - off]
                    T.sync_threads(3, R)
                    if tx >= off:
                        s[tx] = val
                T.sync_threads(3, R)
                if bx * R + tx < N:
                    P[bx * R + tx] = s[tx]
            T.sync_threads()
            if tx < 32:
                w = s[tx] - T.if_then_else(tx > 0, s[T.max(tx - 1, 0)], 0)
                for m in T.serial(5):
                    w = w + T.shfl_down(w, 16 >> m)
                if tx == 0:
                    W[bx] = w

    return main
