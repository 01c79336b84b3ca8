# An eager kernel's `hidden: int` parameter is a Python int of the call (math.gcd works on
# it), here given by a call inside a closure, which sees its enclosing function's defaults.
import math

import tilelang
import tilelang.language as T
import torch


@tilelang.jit
def gcd_blocks(X, hidden: int, blk: int = 48):
    n = T.dynamic("n")
    blk = math.gcd(hidden, blk)
    X: T.Tensor((n, hidden), T.float32)
    Y = T.empty((n, hidden), T.float32)
    with T.Kernel(n, T.ceildiv(hidden, blk), threads=64) as (bx, by):
        for j in T.Parallel(blk):
            Y[bx, by * blk + j] = X[bx, by * blk + j] * blk
    return Y


def bench(rows=8, hidden=80):
    x = torch.randn(rows, hidden)

    def once():
        return gcd_blocks(x, hidden)

    return once()


if __name__ == "__main__":
    bench()
