"""The per-call path of Kernel.__call__: the launcher of a seen signature (tile._fast in C
where it is built: DLPack's C exchange API or tensor attributes for torch, the buffer protocol
for NumPy; the pure-Python launcher otherwise) must give what the general path gives and hand
every other call to the general path, whose errors name the parameter. The CTest entry
python.pytest_pure runs these files again with TILE_PY_FAST=0."""
import os
import threading

import numpy as np
import pytest

import tile
from tile import _lib, kernel
from conftest import PLAIN

ADD = """
import tilelang.language as T
def add(N, block=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main
"""

rng = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def misses(fast, args):
    """Whether a launcher hands args to the general path (the pure-Python launcher does so by
    raising AttributeError for an argument that is not a tensor)."""
    try:
        return fast(args) is kernel._MISS
    except AttributeError:
        return True


def pure():
    return os.environ.get("TILE_PY_FAST", "1").strip().lower() in ("0", "false", "off", "no")


def test_extension_is_used_where_built():
    """The build makes tile._fast for this interpreter (build/python/tile/); the package must
    pick it up unless TILE_PY_FAST=0 (which the pure-path run sets)."""
    if pure():
        assert _lib.fast is None and tile.Kernel.__mro__[1].__module__ == "tile.kernel"
        return
    built = os.path.join(os.path.dirname(_lib.library_path), "python", "tile")
    import importlib.machinery
    if not os.path.exists(os.path.join(built, "_fast" + importlib.machinery.EXTENSION_SUFFIXES[0])):
        pytest.skip("tile._fast was not built (no Python headers)")
    assert _lib.fast is not None and _lib.fast.ABI == _lib.FAST_ABI
    assert issubclass(tile.Kernel, _lib.fast.KernelBase)


@pytest.fixture(params=["exchange", "attributes"])
def torch_path(request, monkeypatch):
    """torch launchers through DLPack's C exchange API, and through tensor attributes."""
    torch = pytest.importorskip("torch")
    if request.param == "exchange":
        if _lib.fast is None or getattr(torch.Tensor, "__dlpack_c_exchange_api__", None) is None:
            pytest.skip("no C launcher or no DLPack C exchange API in this torch")
    else:
        monkeypatch.setattr(kernel, "_use_exchange_api", False)
    return torch


def test_torch_in_place_and_outputs(torch_path):
    torch = torch_path
    n = 300
    k = tile.compile(ADD, N=n, target="cpu")
    ko = tile.compile(ADD, N=n, target="cpu", out_idx=[-1])
    for it in range(4):  # the first call makes the plan; the next ones take the launcher
        a, b, c = torch.randn(n), torch.randn(n), torch.zeros(n)
        assert k(a, b, c) is None
        torch.testing.assert_close(c, a + b)
        o = ko(a, b)
        assert isinstance(o, torch.Tensor) and o.shape == (n,) and o.dtype == torch.float32
        torch.testing.assert_close(o, a + b)
    assert k._last_fast is not None and ko._last_fast is not None
    # a tensor that requires grad, and views with an offset, take the same launcher
    w = torch.randn(n, requires_grad=True)
    big = torch.randn(n + 5)
    c = torch.zeros(n)
    k(w, big[5:], c)
    torch.testing.assert_close(c, w.detach() + big[5:])


def test_torch_signature_changes_go_to_the_general_path(torch_path):
    torch = torch_path
    k = tile.compile(PLAIN, target="cpu")
    a, b = torch.randn(6, 4), torch.randn(6, 4)
    for _ in range(3):
        torch.testing.assert_close(k(a, b), a * 2 + b)
    fast = k._last_fast
    assert fast((a, b)) is not kernel._MISS
    # each change is a miss for this launcher, whatever the general path then does
    for args in ((a, b.double()), (a.reshape(-1), b), (a[:, :3], b[:, :3]), (a.t(), b.t()), (a,), (a, [1.0]),
                 (a.numpy(), b.numpy())):
        assert misses(fast, args), args
    torch.testing.assert_close(k(a.t().contiguous(), b.t().contiguous()), a.t() * 2 + b.t())
    with pytest.raises(tile.TileError, match="parameter 'B' is float32, but the tensor given is float64"):
        k(a, b.double())
    with pytest.raises(tile.TileError, match="parameter 'A' has 2 dimensions, but the tensor given has 1"):
        k(a.reshape(-1), b)
    with pytest.raises(tile.TileError, match="not a tensor"):
        k(a, [1.0])
    with pytest.raises(tile.TileError, match="takes 2 arguments"):
        k(a)
    # strided views: their own plan and launcher; the cpu target takes strides
    big = torch.randn(6, 9)
    for _ in range(3):
        torch.testing.assert_close(k(big[:, 1:5], big[:, 5:9]), big[:, 1:5] * 2 + big[:, 5:9])
    torch.testing.assert_close(k(big[:, 0:4], big[:, 4:8]), big[:, 0:4] * 2 + big[:, 4:8])
    # other strides of the same shape miss the strided launcher
    other = torch.randn(6, 11)
    torch.testing.assert_close(k(other[:, 1:5], other[:, 5:9]), other[:, 1:5] * 2 + other[:, 5:9])
    torch.testing.assert_close(k(a, b), a * 2 + b)


def test_size_one_dimensions_with_any_stride_are_contiguous(torch_path):
    torch = torch_path
    k = tile.compile(PLAIN, target="cpu")
    a, b = torch.randn(1, 5), torch.randn(1, 5)
    for _ in range(3):
        torch.testing.assert_close(k(a, b), a * 2 + b)
    odd = torch.randn(5, 3)[:, :1].t()  # shape (1, 5), strides (1, 3): not contiguous, a miss
    assert not odd.is_contiguous() and misses(k._last_fast, (odd, b))
    with pytest.raises(tile.TileError, match="parameter 'A' is not contiguous"):
        k(odd, b)
    one = torch.randn(1, 5).as_strided((1, 5), (99, 1))  # a size-1 dimension with a stride of 99: contiguous
    assert one.is_contiguous()
    torch.testing.assert_close(k(one, b), one * 2 + b)


def test_numpy_launcher():
    k = tile.compile(PLAIN, target="cpu")
    a, b = rand(5, 7), rand(5, 7)
    for _ in range(3):
        c = k(a, b)
        assert isinstance(c, np.ndarray) and c.dtype == np.float32
        np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)
    if _lib.fast is not None:
        fast = k._last_fast
        assert fast((a, b)) is not kernel._MISS
        for args in ((a, b.astype(np.float64)), (a.reshape(-1), b), (a[:, :3], b[:, :3]), (a.T, b.T), (a,), (a, [1.0])):
            assert misses(fast, args)
    big = rand(5, 12)
    for _ in range(2):
        np.testing.assert_allclose(k(big[:, 1:8], big[:, 5:12]), big[:, 1:8] * 2 + big[:, 5:12], rtol=1e-6)
    ro = a.copy()
    ro.flags.writeable = False  # inputs may be read-only
    np.testing.assert_allclose(k(ro, b), a * 2 + b, rtol=1e-6)
    with pytest.raises(tile.TileError, match="parameter 'B' is float32, but the tensor given is float64"):
        k(a, b.astype(np.float64))
    np.testing.assert_allclose(k(a, b), a * 2 + b, rtol=1e-6)


def test_outputs_follow_the_inputs_kind():
    """The same signature from NumPy and from torch: each gets outputs of its own kind."""
    torch = pytest.importorskip("torch")
    k = tile.compile(PLAIN, target="cpu")
    a, b = rand(4, 3), rand(4, 3)
    for _ in range(2):
        assert isinstance(k(a, b), np.ndarray)
        t = k(torch.from_numpy(a), torch.from_numpy(b))
        assert isinstance(t, torch.Tensor)
        torch.testing.assert_close(t, torch.from_numpy(a * 2 + b))


def test_launch_errors_raise_tile_error(torch_path):
    """An error from tile_spec_launch itself (not from the checks) is a TileError with its text."""
    torch = torch_path
    k = tile.compile(ADD, N=64, target="cpu")
    a = torch.randn(64)
    for _ in range(3):
        k(a, a, torch.zeros(64))
    plan = next(p for p in k._plans.values())
    assert plan.launcher is not None
    # a NULL data pointer is refused by tile_spec_launch: give one through a zero-size-free path
    if _lib.fast is None:
        pytest.skip("the pure-Python launcher reports through check(); covered by test_tile")
    bad = _lib.fast.Launcher(plan.spec, _lib.tile_spec_launch_address, _lib.tile_free_address, plan.n, 1, torch.Tensor,
                             [], [], torch.empty, kernel.default_stream(tile.CPU)._h.value, tile.TileError, None)
    with pytest.raises(tile.TileError) as e:
        bad(())
    assert str(e.value)


def test_launcher_rejects_bad_construction():
    if _lib.fast is None:
        pytest.skip("no C launcher")
    L = _lib.fast.Launcher
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="non-NULL"):
        L(0, 1, 1, 1, 1, torch.Tensor, [], [], torch.empty, 1, tile.TileError, None)
    with pytest.raises(ValueError, match="kind"):
        L(1, 1, 1, 1, 7, torch.Tensor, [], [], torch.empty, 1, tile.TileError, None)
    with pytest.raises(ValueError, match="view index"):
        L(1, 1, 1, 1, 1, torch.Tensor, [(3, torch.float32, (4,), None, -1)], [], torch.empty, 1, tile.TileError, None)
    with pytest.raises(ValueError, match="dimensions"):
        L(1, 1, 1, 1, 1, torch.Tensor, [(0, torch.float32, (1,) * 9, None, -1)], [], torch.empty, 1, tile.TileError, None)


def test_eight_threads_torch_launchers(torch_path):
    torch = torch_path
    k = tile.compile(PLAIN, target="cpu")
    errors = []

    def work(t):
        try:
            a, b = torch.randn(3 + t % 3, 5), torch.randn(3 + t % 3, 5)  # three signatures among eight threads
            for _ in range(30):
                c = k(a, b)
                if not torch.allclose(c, a * 2 + b, rtol=1e-6):
                    errors.append(t)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    th = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    [t.start() for t in th]
    [t.join() for t in th]
    assert not errors
