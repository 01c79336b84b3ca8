# T.alloc_var (with and without an initial value, T.clear on it, v[0] access) and
# T.alloc_global; a prefix count of positive entries per block.
import tilelang.language as T


def count_positive(N, block=32):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), C: T.Tensor((T.ceildiv(N, block),), "int32")):
        tmp = T.alloc_global((N,), "float32")
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    tmp[bx * block + i] = X[bx * block + i] * 3.0
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            count = T.alloc_var(T.int32)
            T.clear(count)
            bias = T.alloc_var("float32", 0.5)
            for i in T.serial(block):
                if bx * block + i < N:
                    if tmp[bx * block + i] > 0:
                        count += 1
                    Y[bx * block + i] = tmp[bx * block + i] + bias[0] + count
            bias[0] = 1.0
            C[bx] = count + T.cast(bias, "int32")

    return main
