# The bits of a 16-bit float held in a variable (as TileLang's top-k selector orders keys):
# h = T.cast(x, T.float16) then T.reinterpret(h, T.uint16), and the same through bfloat16.
import tilelang
import tilelang.language as T


def f16_key(x):
    h = T.cast(x, T.float16)
    bits = T.reinterpret(h, T.uint16)
    return bits


@tilelang.jit
def keys(N, block=64):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), H: T.Tensor((N,), "uint16"), B: T.Tensor((N,), "int16")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                g = bx * block + i
                if g < N:
                    H[g] = f16_key(X[g])
                    b = T.cast(X[g], T.bfloat16)
                    B[g] = T.reinterpret(b, T.int16)

    return main
