# Compile-time Python in a kernel factory: parameters with no default take the values of
# the call in main(); dicts, sets, list comprehensions, lambdas, `in`, **kwargs,
# int.bit_length(), sum() over a list, a tuple parameter, a nested helper that returns the
# prim_func, asserts on compile-time values, and an @autotune decorator (accepted).
import argparse
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune

SCALES = {"half": 0.5, "double": 2.0}
WIDTHS = [16, 32, 64]


def get_configs():
    return [dict(block=b, unroll=u) for b in WIDTHS for u in (1, 2)]


def _build(N, block, scale, offsets):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                g = bx * block + i
                if g < N:
                    Y[g] = X[g] * scale + sum(offsets)

    return main


@autotune(configs=get_configs(), warmup=3, rep=5)
@tilelang.jit(out_idx=[-1])
def scaled(N, mode, offsets, **kwargs):
    assert mode in SCALES, "unknown mode"
    cfg = dict(block=32, **kwargs)
    block = cfg["block"]
    assert block.bit_length() == 6 and block in {16, 32, 64}
    pick = lambda m: SCALES[m] * len([w for w in WIDTHS if w >= block])
    assert 3 not in offsets
    return _build(N, block, pick(mode), offsets)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    kernel = scaled(1000, "half", (1, 2))
    print(kernel)


if __name__ == "__main__":
    main()
