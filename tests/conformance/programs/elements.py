# Element operations: T.copy of single elements (also inside T.Parallel), T.isfinite.
import tilelang
import tilelang.language as T


@tilelang.jit
def elements(N, block=64):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), F: T.Tensor((N,), "int32"),
             L: T.Tensor((1,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                g = bx * block + i
                if g < N:
                    if T.isfinite(X[g]):
                        T.copy(X[g], Y[g])
                    else:
                        Y[g] = 0.0
                    F[g] = T.if_then_else(T.isfinite(X[g]), 1, 0)
            if bx == 0:
                T.copy(X[1], L[0])

    return main
