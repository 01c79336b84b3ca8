# A 2-D convolution (NHWC image, KH x KW x C x F filter) as im2col tiles and a gemm:
# T.im2col gathers each (output pixel, filter tap x channel) tile with stride, dilation and
# zero padding; the filter is read through a flat view; a ragged last tile of output pixels
# and of the reduction dimension.
import tilelang
import tilelang.language as T


@tilelang.jit
def conv2d(N, H, W, C, F, K, S=1, D=1, P=1, block_M=32, block_N=32, block_K=32, dtype="float32"):
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def main(img: T.Tensor((N, H, W, C), dtype), filt: T.Tensor((K, K, C, F), dtype), out: T.Tensor((N * OH * OW, F), dtype)):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=128) as (bx, by):
            cols = T.alloc_shared((block_M, block_K), dtype)
            taps = T.alloc_shared((block_K, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            flat = T.Tensor((K * K * C, F), dtype, filt.data)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K * K * C, block_K), num_stages=2):
                T.im2col(img, cols, by, k, K, S, D, P)
                T.copy(flat[k * block_K, bx * block_N], taps)
                T.gemm(cols, taps, acc)
            T.copy(acc, out[by * block_M, bx * block_N])

    return main
