# T.alloc_reducer: a sum and a max reducer updated from T.Parallel loops (plain updates
# and T.reducer_update), then T.finalize_reducer.
import tilelang.language as T


def colstats(M, N, block_N=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), S: T.Tensor((N,), "float32"), X: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            A_f = T.alloc_fragment((M, block_N), "float32")
            T.copy(A[0, bx * block_N], A_f)
            s = T.alloc_reducer((block_N,), "float32", op="sum")
            m = T.alloc_reducer((block_N,), "float32", op="max")
            T.reducer_init(s)
            T.reducer_init(m)
            for i, j in T.Parallel(M, block_N):
                s[j] += A_f[i, j]
            for i, j in T.Parallel(M, block_N):
                T.reducer_update(m[j], A_f[i, j])
            T.finalize_reducer(s)
            out = T.alloc_fragment((block_N,), "float32")
            T.finalize_reducer(m, out)
            T.copy(s, S[bx * block_N])
            T.copy(out, X[bx * block_N])

    return main
