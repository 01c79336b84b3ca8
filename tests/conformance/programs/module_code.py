# Module-level Python that is not kernel code: guarded imports, a class, a driver with
# loops and prints, constants in a dict; only what the kernel uses is evaluated.
import sys
import tilelang.language as T

try:
    import torch
except ImportError:
    torch = None

CONFIG = {"block": 64, "threads": 128}
BLOCK = CONFIG["block"]
DEVICE = torch.device("cuda") if torch is not None else None


class Runner:
    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, *args):
        return self.kernel(*args)


@T.prim_func
def axpy(X: T.Tensor((1000,), "float32"), Y: T.Tensor((1000,), "float32")):
    with T.Kernel(T.ceildiv(1000, BLOCK), threads=CONFIG["threads"]) as bx:
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < 1000:
                Y[bx * BLOCK + i] = Y[bx * BLOCK + i] + 2.0 * X[bx * BLOCK + i]


for name in ("a", "b"):
    print(name, file=sys.stderr)

if __name__ == "__main__":
    Runner(axpy)(torch.randn(1000), torch.randn(1000))
