# TileLang spellings: a language function chosen by name at compile time (getattr(T, name)),
# the upper-case loop aliases T.Serial and T.Unroll.
import tilelang
import tilelang.language as T


@tilelang.jit
def spellings(N, op_name="atomic_max", block=32):
    atom = getattr(T, op_name)

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((1,), "float32"), Z: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    atom(Y[0], X[bx * block + i])
            acc = T.alloc_fragment((block,), "float32")
            T.clear(acc)
            for k in T.Serial(1, 4):
                for u in T.Unroll(2):
                    for i in T.Parallel(block):
                        acc[i] += (k * 2 + u) * X[T.min(bx * block + i, N - 1)]
            T.copy(acc, Z[bx * block])

    return main
