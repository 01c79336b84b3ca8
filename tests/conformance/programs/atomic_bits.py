# T.atomic_or / T.atomic_and / T.atomic_xor: every element of a row folded into one word per
# row from all the blocks of the row (int32 and uint8 words, a negative int8 for the sign
# extension), return_prev=True as a value, and the region form (a tile xor-ed into a tile).
import tilelang
import tilelang.language as T


@tilelang.jit
def row_bits(M, N, block_N=16):
    @T.prim_func
    def main(
        A: T.Tensor((M, N), "int32"),
        Or: T.Tensor((M,), "int32"),
        And: T.Tensor((M,), "int32"),
        Xor: T.Tensor((M,), "int32"),
        Lo: T.Tensor((M,), "uint8"),
        Neg: T.Tensor((M,), "int8"),
        Prev: T.Tensor((M, N), "int32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=64) as bx:
            for i, j in T.Parallel(M, block_N):
                gj = bx * block_N + j
                if gj < N:
                    v = A[i, gj]
                    T.atomic_or(Or[i], v, memory_order="release")
                    T.atomic_and(And[i], v)
                    T.atomic_xor(Xor[i], v, memory_order="relaxed")
                    T.atomic_or(Lo[i], T.cast(v & 0xFF, "uint8"))
                    T.atomic_and(Neg[i], T.cast(v % 128 - 128, "int8"))
                    # the old value of a word only this element touches
                    Prev[i, gj] = T.atomic_xor(Prev[i, gj], v, return_prev=True)

    return main


@tilelang.jit
def tile_xor(M, N, block_M=8, block_N=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), D: T.Tensor((block_M, block_N), "int32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            S = T.alloc_shared((block_M, block_N), "int32")
            T.copy(A[by * block_M, bx * block_N], S)
            T.atomic_xor(D[0:block_M, 0:block_N], S)

    return main
