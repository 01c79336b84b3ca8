# '/' on the factory's Python ints is Python's true division (a float), also when the ints
# are parameters bound only at run time (n from X's shape); math.ceil/floor/trunc give ints.
import math

import tilelang
import tilelang.language as T


@tilelang.jit
def chunks(n, block=48):
    nblk = math.ceil(n / block)
    half = -7 / 2  # -3.5

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), C: T.Tensor((nblk, 3), "int32")):
        with T.Kernel(nblk, threads=64) as bx:
            for i in T.Parallel(block):
                g = bx * block + i
                if g < n:
                    Y[g] = X[g] * (block / 64) + n / block + half
            C[bx, 0] = math.floor(-n / block) + bx
            C[bx, 1] = math.trunc(-n / block)
            C[bx, 2] = math.ceil((n + 5) / -block)

    return main
