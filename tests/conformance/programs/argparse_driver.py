# Parameters from argparse defaults: a module-level parser gives the scale, main()'s own
# parser the row length and the thread count (a tuple index on it picks the block size).
import argparse

import tilelang
import tilelang.language as T

top = argparse.ArgumentParser()
top.add_argument("--scale", type=float, default=0.25)
top.set_defaults(offset=2)
TOP = top.parse_args()


@tilelang.jit
def rows(N, threads, dtype="float32"):
    block = [16, 32, 64, 128, 256][threads // 64]

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Y[bx * block + i] = X[bx * block + i] * TOP.scale + TOP.offset + block

    return main


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--threads", type=int, default=128, help="threads per block")
    args = parser.parse_args()
    kernel = rows(args.n, args.threads)
    print(kernel)


if __name__ == "__main__":
    main()
