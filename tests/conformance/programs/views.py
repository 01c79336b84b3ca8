# Views of a buffer under a new shape (T.reshape, T.view with the same dtype): a global
# tensor copied through a 2-D view, a shared buffer reshaped both ways, a fragment written
# element by element through a 3-D view and reduced along its last dimension; a view made
# with T.Tensor(shape, dtype, buf.data) read element by element.
import tilelang
import tilelang.language as T


@tilelang.jit
def views(N, G, H=4, block=64):
    @T.prim_func
    def main(A: T.Tensor((N, G * H), "float32"), B: T.Tensor((N * G, H), "float32"),
             S: T.Tensor((N, G), "float32"), F: T.Tensor((N * G * H,), "float32"), P: T.Tensor((N, G), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            A_flat = T.reshape(A, [N * G, H])
            T.copy(A_flat[bx * block * G:(bx + 1) * block * G, 0:H], B[bx * block * G, 0])
            s = T.alloc_fragment((block, G * H), "float32")
            T.copy(A[bx * block, 0], s)
            s3 = T.reshape(s, (block, G, H))
            for i, g, h in T.Parallel(block, G, H):
                s3[i, g, h] = T.max(s3[i, g, h], 0) * (h + 1)
            out = T.alloc_fragment((block, G), "float32")
            T.reduce_sum(s3, out, dim=-1, clear=True, batch=2)
            T.copy(out, S[bx * block, 0])
            sh = T.alloc_shared((block * G * H,), "float32")
            sh2 = T.view(sh, (block, G * H))
            T.copy(s, sh2)
            T.copy(sh, F[bx * block * G * H])
            A3 = T.Tensor((N, G, H), "float32", A.data)
            for i, g in T.Parallel(block, G):
                if bx * block + i < N:
                    P[bx * block + i, g] = A3[bx * block + i, g, H - 1]

    return main
