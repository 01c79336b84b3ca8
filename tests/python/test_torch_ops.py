"""tile.torch: Tile kernels as torch.library operators (eager, gradcheck, torch.compile with
fullgraph, torch.export) and the torch.compile backend "tile" against eager PyTorch."""
import pytest

torch = pytest.importorskip("torch")
import tile  # noqa: E402
import tile.torch as tt  # noqa: E402
from tile.torch import compile_backend as cb  # noqa: E402

SRC = '''
import tilelang.language as T


def sqmul(M, N, dtype="float32", block_M=8, block_N=16):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=64) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                row = by * block_M + i
                col = bx * block_N + j
                if row < M and col < N:
                    Y[row, col] = X[row, col] * X[row, col] * W[col]

    return main


def sqmul_bwd(M, N, dtype="float32", block_N=16):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), dY: T.Tensor((M, N), dtype),
             dX: T.Tensor((M, N), dtype), dW: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=64) as bx:
            acc = T.alloc_fragment((block_N,), dtype)
            T.fill(acc, 0)
            for i in T.serial(M):
                for j in T.Parallel(block_N):
                    col = bx * block_N + j
                    if col < N:
                        dX[i, col] = 2 * X[i, col] * W[col] * dY[i, col]
                        acc[j] += X[i, col] * X[i, col] * dY[i, col]
            for j in T.Parallel(block_N):
                if bx * block_N + j < N:
                    dW[bx * block_N + j] = acc[j]

    return main


def scale_inplace(M, N, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), s: T.float32):
        with T.Kernel(T.ceildiv(M, 8), threads=64) as bx:
            for i, j in T.Parallel(8, N):
                if bx * 8 + i < M:
                    X[bx * 8 + i, j] = X[bx * 8 + i, j] * s

    return main
'''


def _dt(x):
    return str(x.dtype).replace("torch.", "")


def _spec(x, w):
    return dict(M=x.shape[0], N=x.shape[1], dtype=_dt(x))


def _fwd(M, N, dtype):
    return tile.compile(SRC, func="sqmul", out_idx=[-1], M=M, N=N, dtype=dtype)


def _bwd(M, N, dtype):
    return tile.compile(SRC, func="sqmul_bwd", out_idx=[-2, -1], M=M, N=N, dtype=dtype)


@pytest.fixture(scope="module")
def sqmul():
    return tt.op(_fwd, "tiletest::sqmul", specialize=_spec, backward=_bwd, backward_specialize=lambda x, w, g: _spec(x, w))


def _inputs(dtype=torch.float64, device="cpu", grad=False):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 20, dtype=dtype, generator=g).to(device).requires_grad_(grad)
    w = torch.randn(20, dtype=dtype, generator=g).to(device).requires_grad_(grad)
    return x, w


def test_eager(sqmul):
    x, w = _inputs(torch.float32)
    torch.testing.assert_close(sqmul(x, w), x * x * w)
    torch.testing.assert_close(torch.ops.tiletest.sqmul(x, w), x * x * w)


def test_gradcheck(sqmul):
    x, w = _inputs(torch.float64, grad=True)
    assert torch.autograd.gradcheck(sqmul, (x, w))
    # the backward went through the Tile kernel registered as <name>_backward
    assert hasattr(torch.ops.tiletest, "sqmul_backward")


def test_compile_fullgraph(sqmul):
    x, w = _inputs(torch.float32)
    f = torch.compile(lambda x, w: torch.sin(sqmul(x, w)) + 1, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(f(x, w), torch.sin(x * x * w) + 1)


def test_export(sqmul):
    class M(torch.nn.Module):
        def forward(self, x, w):
            return sqmul(x, w) * 2

    x, w = _inputs(torch.float32)
    ep = torch.export.export(M(), (x, w))
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert torch.ops.tiletest.sqmul.default in targets
    torch.testing.assert_close(ep.module()(x, w), x * x * w * 2)


def test_output_meta_from_shape_inference():
    k = _fwd(3, 7, "float32")
    meta = tt.output_meta(k, [torch.empty(3, 7, device="meta"), torch.empty(7, device="meta")])
    assert meta == [((3, 7), torch.float32)]


def test_mutating_kernel():
    k = tile.compile(SRC, func="scale_inplace", M=9, N=4, dtype="float32")
    op = tt.op(k, "tiletest::scale_inplace", mutates_args=("X",))
    x = torch.randn(9, 4)
    ref = x * 3
    assert op(x, 3.0) is None
    torch.testing.assert_close(x, ref)


def test_errors():
    k = _fwd(3, 7, "float32")
    with pytest.raises(TypeError, match="name"):
        tt.op(k, "no_namespace")
    with pytest.raises(TypeError, match="mutates_args"):
        tt.op(k, "tiletest::bad1", mutates_args=("Q",))
    with pytest.raises(TypeError, match="kernel_or_factory"):
        tt.op(42, "tiletest::bad2")
    with pytest.raises(TypeError, match="specialize"):
        tt.op(tile.jit(out_idx=[-1])(lambda M: None), "tiletest::bad3")
    op = tt.op(k, "tiletest::fixed")
    with pytest.raises(tile.TileError):
        op(torch.randn(4, 7), torch.randn(7))  # the kernel is specialised on [3, 7]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_op_on_current_stream(sqmul):
    x, w = _inputs(torch.float32, "cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = sqmul(x, w)
    s.synchronize()
    torch.testing.assert_close(y, x * x * w)
    f = torch.compile(lambda x, w: sqmul(x, w) + 1, fullgraph=True)
    torch.testing.assert_close(f(x, w), x * x * w + 1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_gradcheck(sqmul):
    x, w = _inputs(torch.float64, "cuda", grad=True)
    assert torch.autograd.gradcheck(sqmul, (x, w))


class _Block(torch.nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 64)
        self.fc2 = torch.nn.Linear(64, d)

    def forward(self, x):
        h = self.ln(x)
        a = torch.softmax(h @ h.transpose(-1, -2) / 5.0, dim=-1) @ h
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(a))) * torch.sigmoid(a)


def test_backend_transformer_block_vs_eager():
    torch.manual_seed(0)
    m = _Block()
    x = torch.randn(2, 8, 32, requires_grad=True)
    ref = m(x)
    ref.sum().backward()
    gref = x.grad.clone()
    x.grad = None
    cb.reset_stats()
    out = torch.compile(m, backend="tile")(x)
    out.sum().backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(x.grad, gref)
    st = cb.stats()
    for name in ("gemm", "softmax", "layer_norm", "gelu", "add"):
        assert st["calls"].get(name, 0) > 0, st  # Tile ran these nodes, PyTorch the rest


def test_backend_leaves_unmapped_nodes_to_torch():
    cb.reset_stats()
    f = torch.compile(lambda x: torch.cumsum(x, 0).flip(0) + torch.relu(x), backend="tile")
    x = torch.randn(6, 5)
    torch.testing.assert_close(f(x), torch.cumsum(x, 0).flip(0) + torch.relu(x))
    assert cb.stats()["calls"].get("relu", 0) == 1
