# TileLang spellings: a language function chosen by name at compile time (getattr(T, name)),
# the upper-case loop aliases T.Serial and T.Unroll, a TIR variable (T.int32()) bound by T.let; a Triton kernel beside the TileLang one
# (benchmark files compare against Triton) is Python Tile does not compile.
import tilelang
import tilelang.language as T
import triton
import triton.language as tl


@triton.jit
def triton_copy(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)


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
            off = T.int32()
            T.let(off, bx * block)
            T.copy(acc, Z[off])

    return main
