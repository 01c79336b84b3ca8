# T.Pipelined without num_stages and with num_stages=0 (TileLang's default: no software
# pipelining) next to a pipelined loop; a row-sum of a matrix in K tiles.
import tilelang.language as T


def rowsum(M, K, block_M=16, block_K=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), S: T.Tensor((M,), "float32"), S2: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            A_s = T.alloc_shared((block_M, block_K), "float32")
            part = T.alloc_fragment((block_M,), "float32")
            acc = T.alloc_fragment((block_M,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K)):
                T.copy(A[bx * block_M, k * block_K], A_s)
                T.reduce_sum(A_s, part, dim=1)
                for i in T.Parallel(block_M):
                    acc[i] += part[i]
            T.copy(acc, S[bx * block_M])
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                T.copy(A[bx * block_M, k * block_K], A_s)
                T.reduce_sum(A_s, part, dim=1)
                for i in T.Parallel(block_M):
                    acc[i] += part[i] * 2.0
            T.copy(acc, S2[bx * block_M])

    return main
