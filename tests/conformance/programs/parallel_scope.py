# A name assigned inside one T.Parallel loop and again in a later one is a fresh
# per-iteration variable each time (as in TileLang's layer-norm backward).
import tilelang.language as T


def two_pass(M, N):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=64) as bx:
            row = T.alloc_fragment((N,), "float32")
            T.copy(X[bx, 0:N], row)
            for j in T.Parallel(N):
                t = row[j] * 2.0
                row[j] = t
            for j in T.Parallel(N):
                t = row[j] + 1.0
                u = t * t
                row[j] = u - t
            T.copy(row, Y[bx, 0:N])

    return main
