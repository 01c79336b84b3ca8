# T.any_of / T.all_of: whether any / every element of a region is non-zero, as a value: over a
# slice of a global bool tensor in an `if` inside T.Pipelined, over a whole shared and a whole
# fragment buffer, over one row of a fragment, and over a single element.
import tilelang
import tilelang.language as T


@tilelang.jit
def any_all(M, N, G, block_M=16):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Mask: T.Tensor((M // block_M, N // 16, G), "bool"),
             Y: T.Tensor((M, N), "float32"), Flags: T.Tensor((M // block_M, 4), "int32")):
        with T.Kernel(M // block_M, threads=128) as bx:
            xs = T.alloc_shared((block_M, N), "float32")
            T.copy(X[bx * block_M, 0], xs)
            pos = T.alloc_fragment((block_M, N), "bool")
            for i, j in T.Parallel(block_M, N):
                pos[i, j] = xs[i, j] > -0.9
            big = T.alloc_shared((block_M, N), "int8")
            for i, j in T.Parallel(block_M, N):
                big[i, j] = T.if_then_else(xs[i, j] > 0.99, 1, 0)
            y = T.alloc_fragment((block_M, 16), "float32")
            for k in T.Pipelined(N // 16, num_stages=2):
                if T.any_of(Mask[bx, k, 1:G]):
                    for i, j in T.Parallel(block_M, 16):
                        y[i, j] = xs[i, k * 16 + j] * 2
                elif T.all_of(Mask[bx, k, 0]):
                    T.fill(y, 1)
                else:
                    T.fill(y, -1)
                T.copy(y, Y[bx * block_M, k * 16])
            Flags[bx, 0] = T.any_of(big)
            Flags[bx, 1] = T.all_of(pos)
            Flags[bx, 2] = T.all_of(pos[1, 0:N // 2])
            Flags[bx, 3] = T.any_of(Mask[bx, 0:N // 16, 0:G]) + 2 * T.all_of(Mask[bx, 0:N // 16, 1])

    return main
