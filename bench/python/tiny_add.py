"""The tiny kernel the launch benchmarks call: C = A + B over N = 4096 f32 elements, one
element a thread, so that a call's time is its launch cost."""
N = 4096
SRC = """
import tilelang.language as T
def add(N, block=256):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main
"""
