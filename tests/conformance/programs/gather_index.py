# A gather through index tensors (signed and unsigned): its random inputs must keep the
# indices in range, which `tile run --int-range 0:8` does (tests/conformance/CMakeLists.txt).
import tilelang.language as T


@T.prim_func
def gather(X: T.Tensor((16,), "float32"), I: T.Tensor((8,), "int32"), U: T.Tensor((8,), "uint8"), Y: T.Tensor((8,), "float32")):
    with T.Kernel(1) as bx:
        for i in T.Parallel(8):
            Y[i] = X[I[i] + U[i]]
