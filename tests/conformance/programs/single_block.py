# T.Kernel(threads=...) without grid dimensions: one block, no block index.
import tilelang
import tilelang.language as T


@tilelang.jit
def total(N, block=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), S: T.Tensor((2,), "float32")):
        with T.Kernel(threads=32):
            acc = T.alloc_fragment((block,), "float32")
            out = T.alloc_fragment((1,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(N, block)):
                for i in T.Parallel(block):
                    if k * block + i < N:
                        acc[i] += A[k * block + i]
            T.reduce_sum(acc, out, dim=0)
            S[0] = out[0]
            S[1] = N

    return main
