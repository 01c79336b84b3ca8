# Compile-time Python on dtypes: a TileLang dtype is a str (iterable, its characters),
# str.isdigit/isalpha, and tvm's DataType(...).bits.
import tilelang
import tilelang.language as T
from tilelang import DataType


@tilelang.jit
def scaled(N, storage_dtype=T.int8, in_dtype="float16"):
    storage_nbit = int("".join(c for c in storage_dtype if c.isdigit()))  # 8
    storage_kind = "".join(c for c in storage_dtype if c.isalpha())  # "int"
    bits = DataType(in_dtype).bits  # 16
    offset = 1 if storage_kind == "int" and not "int8".isalpha() else 0

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    Y[bx * 128 + i] = X[bx * 128 + i] * storage_nbit + bits + offset

    return main
