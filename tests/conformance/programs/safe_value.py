# T.annotate_safe_value: reads of an annotated global tensor outside its bounds give the
# annotated value instead of being out-of-bounds accesses: element reads in T.Parallel and
# the source elements of T.copy (also of another rank; a float tensor with a non-zero value, an int tensor with a
# negative one, a tensor annotated with 0, whose T.copy keeps the ordinary zero fill).
import tilelang
import tilelang.language as T


@tilelang.jit
def safe_value(M, N, shift=5, pad=7.5, block_M=32, block_N=32, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), I: T.Tensor((M, N), "int32"), Z: T.Tensor((M, N), dtype),
             B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), "int32"),
             E: T.Tensor((M, N), dtype), G: T.Tensor((2, M, N), dtype), F: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            s = T.alloc_shared((block_M, block_N), dtype)
            T.annotate_safe_value({A: pad, I: -3, Z: 0, s: 1, G: -2})
            for i, j in T.Parallel(block_M, block_N):
                s[i, j] = A[by * block_M + i - shift, bx * block_N + j + shift]
            T.copy(s, B[by * block_M, bx * block_N])
            f = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M + shift, bx * block_N - shift], f)
            T.copy(f, C[by * block_M, bx * block_N])
            d = T.alloc_fragment((block_M, block_N), "int32")
            for i, j in T.Parallel(block_M, block_N):
                d[i, j] = I[by * block_M + i + shift, bx * block_N + j] + 1
            T.copy(d, D[by * block_M, bx * block_N])
            e = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(Z[by * block_M - shift, bx * block_N + shift], e)
            for i, j in T.Parallel(block_M, block_N):
                e[i, j] = e[i, j] + Z[by * block_M + i + shift, bx * block_N + j - shift]
            T.copy(e, E[by * block_M, bx * block_N])
            g = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(G[1, by * block_M - shift:(by + 1) * block_M - shift, bx * block_N + shift:(bx + 1) * block_N + shift], g)
            T.copy(g, F[by * block_M, bx * block_N])

    return main


# the map is scoped to the enclosing T.sblock (inner blocks override it for their body);
# T.reads / T.writes in a block have no effect; a single-element T.copy inside T.Parallel
@tilelang.jit
def safe_value_scoped(M, N, block=64):
    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), Out: T.Tensor((block, block), "int32"), In: T.Tensor((block, block), "int32"),
             El: T.Tensor((block, block), "int32")):
        with T.Kernel(1, threads=128):
            inner = T.alloc_shared((block, block), "int32")
            outer = T.alloc_shared((block, block), "int32")
            with T.sblock("outer"):
                T.reads()
                T.writes()
                T.annotate_safe_value({A: -1})
                with T.sblock("inner"):
                    T.reads(A[0:block, 0:block])
                    T.annotate_safe_value({A: -99})
                    T.copy(A[0:block, 0:block], inner)
                T.copy(A[0:block, 0:block], outer)
                for i, j in T.Parallel(block, block):
                    Out[i, j] = outer[i, j]
            T.copy(inner, In)
            with T.sblock("elements"):
                T.annotate_safe_value({A: 5})
                for i, j in T.Parallel(block, block):
                    T.copy(A[i + 1, j], El[i, j])

    return main
