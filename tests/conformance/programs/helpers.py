# Helpers and constants: T.cdiv, tilelang.cdiv, next_power_of_2 (tl.math, tilelang.math,
# tilelang), T.clamp with positional and keyword bounds, math.gcd, T.max_value.
import math
import tilelang
import tilelang as tl
import tilelang.language as T


def clamp_rows(M, N, lo=-0.5, hi=0.5):
    BLOCK = tl.math.next_power_of_2(N)
    assert BLOCK == tilelang.math.next_power_of_2(N) == tilelang.next_power_of_2(N)
    ROWS = math.gcd(M, 8)

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32"), Z: T.Tensor((M, N), "float32")):
        with T.Kernel(T.cdiv(M, ROWS), tilelang.cdiv(N, BLOCK), threads=128) as (bx, by):
            for i, j in T.Parallel(ROWS, BLOCK):
                r = bx * ROWS + i
                col = by * BLOCK + j
                if r < M and col < N:
                    Y[r, col] = T.clamp(X[r, col], lo, hi)
                    Z[r, col] = T.clamp(X[r, col], min_val=lo * 2) + T.clamp(X[r, col], max_val=T.max_value("float32"))

    return main


def main():
    kernel = clamp_rows(100, 50)
    print(kernel)
