# A factory whose parameters have no default and no -D, compiled by a module-level driver
# loop (TileLang's examples sweep dtypes this way): the loops' first iteration gives the values,
# in_dtype = float16, scale = 2.5 and out_dtype from an assignment in the loop body.
import tilelang
import tilelang.language as T


@tilelang.jit
def cast_scale(N, in_dtype, out_dtype, scale, block=64):
    @T.prim_func
    def main(X: T.Tensor((N,), in_dtype), Y: T.Tensor((N,), out_dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=64) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Y[bx * block + i] = T.cast(X[bx * block + i] * scale, out_dtype)

    return main


N = 300
for in_dtype in [T.float16, T.bfloat16]:
    for scale in (2.5, 0.5):
        out_dtype = T.float32
        kernel = cast_scale.compile(N=N, in_dtype=in_dtype, out_dtype=out_dtype, scale=scale)
        print(in_dtype, scale, kernel.get_kernel_source()[:10])
