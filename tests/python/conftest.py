import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
EXAMPLES = os.environ.get("TILE_TEST_EXAMPLES", os.path.join(ROOT, "examples"))

# the plain-form kernel the package tests share: C = 2 A + B
PLAIN = """
@tile_op
def axpb(A: Tensor[(M, N)], B: Tensor[(M, N)]) -> Tensor[(M, N)]:
    C = allocate((M, N), dtype=A.dtype)
    for i in range(M):
        for j in range(N):
            C[i, j] = A[i, j] * 2.0 + B[i, j]
    return C
"""
