# Programmatic dependent launch, as upstream programs write it: T.pdl_sync() before the
# kernel reads what the previous kernel wrote, T.pdl_trigger() once its own output is written.
# Tile starts a kernel after the previous one on the stream has finished, so both are no-ops;
# the result is the plain element-wise kernel's.
import tilelang
import tilelang.language as T


def pdl_scale(N, block=128):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            T.pdl_sync()
            for i in T.Parallel(block):
                if bx * block + i < N:
                    B[bx * block + i] = A[bx * block + i] * 2.0 + 1.0
            T.pdl_trigger()

    return main
