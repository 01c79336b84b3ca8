"""tile.ops: the operator library from Python, against torch's own functions (and NumPy
float64 references where torch has none), from NumPy arrays, torch CPU tensors and
tile.Tensor; bad arguments; CUDA tensors (on the device, no host copies) where a GPU is seen.

The sweeps over whole families run on the interpreter (each kernel compiles in
milliseconds there); the cpu target runs a sample of every family (each of its kernels is a
C compile on first use)."""
import math

import numpy as np
import pytest

import tile
import tile.ops as ops

torch = pytest.importorskip("torch")
F = torch.nn.functional

rng = np.random.default_rng(22)


def close(got, want, rtol=1e-5, atol=1e-6):
    if isinstance(got, torch.Tensor):
        got = got.detach().cpu()
    if isinstance(want, torch.Tensor):
        want = want.detach().cpu()
    g, w = np.asarray(torch.as_tensor(got).double()), np.asarray(torch.as_tensor(want).double())
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


# ---------- every unary and binary registry operator, against torch ----------
def _unary_input(name):
    if name in ("log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"):
        return rng.uniform(0.1, 4, (5, 7))
    if name in ("log1p",):
        return rng.uniform(-0.5, 3, (5, 7))
    if name in ("asin", "acos", "atanh"):
        return rng.uniform(-0.9, 0.9, (5, 7))
    if name == "acosh":
        return rng.uniform(1.1, 4, (5, 7))
    return rng.uniform(-3, 3, (5, 7))


def _torch_fn(name, ref):
    if "approximate='tanh'" in ref:
        return lambda x: F.gelu(x, approximate="tanh")
    for mod in (torch, F, torch.special):
        f = getattr(mod, name, None)
        if f is not None:
            return f
    return None


UNARY = [(n, r) for n, fam, r in ops.names() if fam == "unary" and n not in ("leaky_relu", "hardtanh", "elu", "softplus", "clamp")]
BINARY = [(n, r) for n, fam, r in ops.names() if fam == "binary"]


@pytest.mark.parametrize("name,ref", UNARY, ids=[n for n, _ in UNARY])
def test_unary_family_interp(name, ref):
    x = torch.from_numpy(_unary_input(name).astype(np.float32))
    if name == "bitwise_not":
        x = torch.from_numpy(rng.integers(-50, 50, (5, 7)).astype(np.int32))
    f = _torch_fn(name, ref)
    assert f is not None, name
    got = getattr(ops, name)(x, target="interp")
    want = f(x)
    assert isinstance(got, torch.Tensor) and got.dtype == want.dtype, (got.dtype, want.dtype)
    close(got, want, rtol=2e-5, atol=2e-6)


def _binary_ref(name):
    special = {"div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
               "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc")}
    return special.get(name) or getattr(torch, name)


@pytest.mark.parametrize("name,ref", BINARY, ids=[n for n, _ in BINARY])
def test_binary_family_interp(name, ref):
    ints = name.startswith("bitwise") or name in ("lshift", "rshift") or "shift" in name
    if ints:
        a = torch.from_numpy(rng.integers(0, 60, (4, 1, 6)).astype(np.int32))
        b = torch.from_numpy(rng.integers(0, 5, (3, 1)).astype(np.int32))
    else:
        a = torch.from_numpy(rng.uniform(0.5, 3, (4, 1, 6)).astype(np.float32))
        b = torch.from_numpy(rng.uniform(0.5, 3, (3, 1)).astype(np.float32))
    f = getattr(torch, name, None) or _binary_ref(name)
    if name in ("div_floor", "div_trunc"):
        f = _binary_ref(name)
    if name.startswith("bitwise_left") or name.startswith("bitwise_right"):
        f = getattr(torch, name)
    got = ops.binary(name, a, b, target="interp")
    want = f(a, b)
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    close(got, want, rtol=2e-5)


# ---------- the cpu target, a sample of every family, NumPy and torch ----------
def test_numpy_in_numpy_out_cpu():
    x = rng.standard_normal((6, 33)).astype(np.float32)
    y = ops.silu(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, x / (1 + np.exp(-x.astype(np.float64))), rtol=1e-5, atol=1e-6)
    z = ops.mul(x, 2.5)
    np.testing.assert_allclose(z, x * 2.5, rtol=1e-6)
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    s = ops.sum(i)
    assert s.dtype == np.int64 and int(s) == 66      # torch: integer sums are int64
    assert ops.mul(i, 2.5).dtype == np.float32        # int32 tensor * 2.5 is float32 (wrapped number)


def test_tile_tensor_in_tile_tensor_out():
    x = tile.Tensor((4, 5), "float32").copy_(rng.standard_normal((4, 5)).astype(np.float32))
    y = ops.exp(x)
    assert isinstance(y, tile.Tensor) and y.shape == (4, 5) and y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), np.exp(x.numpy()), rtol=1e-6)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
def test_norms_softmax_dtypes_cpu(dtype, tol):
    x = torch.randn(7, 129, dtype=torch.float32).to(dtype)
    w = (torch.rand(129) + 0.5).to(dtype)
    b = torch.randn(129).to(dtype)
    close(ops.rms_norm(x, (129,), w, eps=1e-6), F.rms_norm(x.double(), (129,), w.double(), eps=1e-6), rtol=tol, atol=tol)
    close(ops.rms_norm(x, [129]), F.rms_norm(x.double(), [129], eps=torch.finfo(dtype).eps), rtol=tol, atol=tol)
    close(ops.layer_norm(x, (129,), w, b), F.layer_norm(x.double(), (129,), w.double(), b.double()), rtol=tol, atol=4 * tol)
    close(ops.softmax(x, -1), torch.softmax(x.double(), -1), rtol=tol, atol=tol)
    close(ops.softmax(x, 0), torch.softmax(x.double(), 0), rtol=tol, atol=tol)
    close(ops.log_softmax(x, 1), torch.log_softmax(x.double(), 1), rtol=tol, atol=4 * tol)
    y = ops.add(x, x, alpha=2)
    assert y.dtype == dtype
    close(y, x + 2 * x, rtol=tol, atol=tol)


def test_norm_over_several_dims_and_fused_residual():
    x = torch.randn(3, 4, 10)
    w = torch.rand(4, 10) + 0.5
    close(ops.rms_norm(x, (4, 10), w, eps=1e-5), F.rms_norm(x, (4, 10), w, eps=1e-5), rtol=1e-5)
    close(ops.layer_norm(x, (4, 10), w, None), F.layer_norm(x, (4, 10), w, None), rtol=1e-4, atol=1e-5)
    r = torch.randn(3, 4, 10)
    y, h = ops.fused_add_rms_norm(x, r, torch.ones(10), eps=1e-6)
    close(h, x + r)
    close(y, F.rms_norm(x + r, (10,), eps=1e-6), rtol=1e-5)
    out, m, rs = ops.native_layer_norm(x, (10,), None, None, 1e-5)
    wo, wm, wr = torch.ops.aten.native_layer_norm(x, [10], None, None, 1e-5)
    close(out, wo, rtol=1e-4, atol=1e-5)
    close(m, wm, rtol=1e-5, atol=1e-6)
    close(rs, wr, rtol=1e-4)


def test_activations_cpu():
    x = torch.randn(5, 67)
    close(ops.gelu(x), F.gelu(x), rtol=1e-5, atol=1e-6)
    close(ops.gelu(x, approximate="tanh"), F.gelu(x, approximate="tanh"), rtol=1e-5, atol=1e-6)
    close(ops.leaky_relu(x, 0.2), F.leaky_relu(x, 0.2))
    close(ops.hardtanh(x, -0.5, 0.7), F.hardtanh(x, -0.5, 0.7))
    close(ops.elu(x, 0.7), F.elu(x, 0.7), rtol=1e-5, atol=1e-6)
    close(ops.softplus(x, 2.0, 3.0), F.softplus(x, 2.0, 3.0), rtol=1e-5, atol=1e-6)
    g, u = torch.randn(4, 40), torch.randn(4, 40)
    close(ops.swiglu(g, u), F.silu(g) * u, rtol=1e-5, atol=1e-6)
    close(ops.swiglu(torch.cat([g, u], -1)), F.silu(g) * u, rtol=1e-5, atol=1e-6)
    close(ops.geglu(g, u), F.gelu(g) * u, rtol=1e-5, atol=1e-6)
    close(ops.geglu(g, u, approximate="tanh"), F.gelu(g, approximate="tanh") * u, rtol=1e-5, atol=1e-6)
    close(ops.clamp(x, -0.3, 0.4), torch.clamp(x, -0.3, 0.4))
    close(ops.clamp(x, min=0.1), torch.clamp(x, min=0.1))
    lo, hi = torch.full((67,), -0.2), torch.full((5, 1), 0.3)
    close(ops.clamp(x, lo, hi), torch.clamp(x, lo, hi))
    c = x > 0
    close(ops.where(c, x, 0.0), torch.where(c, x, 0.0))
    close(ops.where(c, x, -x), torch.where(c, x, -x))


def test_binary_cpu_promotion_and_scalars():
    a = torch.randn(3, 1, 5)
    b = torch.randn(4, 1)
    close(ops.add(a, b), a + b)
    close(ops.sub(a, b, alpha=0.5), torch.sub(a, b, alpha=0.5), rtol=1e-6)
    close(ops.div(a, b), a / b, rtol=1e-6)
    close(ops.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="floor"))
    close(ops.pow(2, a), torch.pow(2, a), rtol=1e-5)
    close(ops.remainder(a, 0.7), torch.remainder(a, 0.7), rtol=1e-5, atol=1e-6)
    i = torch.arange(-6, 6, dtype=torch.int32).reshape(3, 4)
    h = torch.ones(4, dtype=torch.float16)
    got = ops.add(i, h)
    assert got.dtype == torch.float16
    close(got, i + h)
    assert ops.eq(i, 2).dtype == torch.bool
    close(ops.eq(i, 2), i == 2)
    close(ops.maximum(a, b), torch.maximum(a, b))


def test_reductions_cpu():
    x = torch.randn(4, 7, 9)
    close(ops.sum(x, 1), x.sum(1), rtol=1e-5, atol=1e-5)
    close(ops.sum(x, (0, 2), keepdim=True), x.sum((0, 2), keepdim=True), rtol=1e-5, atol=1e-5)
    close(ops.sum(x), x.sum(), rtol=1e-5, atol=1e-4)
    close(ops.mean(x, -1), x.mean(-1), rtol=1e-5, atol=1e-6)
    close(ops.amax(x, 1), x.amax(1))
    close(ops.prod(x[:, :, :3], 2), x[:, :, :3].prod(2), rtol=1e-5, atol=1e-6)
    close(ops.var(x, 1), x.var(1), rtol=1e-4, atol=1e-6)
    close(ops.std(x, 1, correction=0), x.std(1, correction=0), rtol=1e-4, atol=1e-6)
    close(ops.argmax(x, 2), x.argmax(2))
    close(ops.argmax(x), x.argmax())
    v, i = ops.max(x, 1)
    wv, wi = torch.max(x, 1)
    close(v, wv)
    close(i, wi)
    close(ops.max(x), x.max())
    close(ops.cumsum(x, 1), x.cumsum(1), rtol=1e-5, atol=1e-5)
    b = x > 0
    close(ops.any(b, 1), b.any(1))
    close(ops.all(b), b.all())
    close(ops.sum(x, 1, dtype=torch.float64), x.sum(1, dtype=torch.float64), rtol=1e-6)


def test_shapes_cpu():
    x = torch.randn(3, 4, 5)
    close(ops.reshape(x, (4, -1)), x.reshape(4, -1))
    close(ops.permute(x, (2, 0, 1)), x.permute(2, 0, 1))
    close(ops.transpose(x, 0, 2), x.transpose(0, 2))
    close(ops.expand(x[:, :1], 3, 4, 5), x[:, :1].expand(3, 4, 5))
    close(ops.expand(x[:1], (2, -1, 4, 5)), x[:1].expand(2, -1, 4, 5))
    close(ops.slice(x, 1, 1, None, 2), x[:, 1::2])
    close(ops.select(x, 2, -1), x.select(2, -1))
    close(ops.flip(x, (0, 2)), x.flip((0, 2)))
    close(ops.repeat(x, 2, 1, 3), x.repeat(2, 1, 3))
    close(ops.diagonal(x, 1, 1, 2), x.diagonal(1, 1, 2))
    close(ops.cat([x, x[:, :2]], 1), torch.cat([x, x[:, :2]], 1))
    close(ops.stack([x, x], -1), torch.stack([x, x], -1))
    for got, want in zip(ops.split(x, 2, 1), torch.split(x, 2, 1)):
        close(got, want)
    for got, want in zip(ops.split(x, [1, 4], 2), torch.split(x, [1, 4], 2)):
        close(got, want)
    close(ops.pad(x, (1, 2, 0, 1), value=3.0), F.pad(x, (1, 2, 0, 1), value=3.0))
    close(ops.pad(x, (2, 1), mode="reflect"), F.pad(x, (2, 1), mode="reflect"))
    close(ops.pad(x, (2, 1, 1, 0), mode="replicate"), F.pad(x, (2, 1, 1, 0), mode="replicate"))
    close(ops.unsqueeze(x, 1), x.unsqueeze(1))
    close(ops.squeeze(x[:, :1]), x[:, :1].squeeze())
    close(ops.flatten(x, 1), x.flatten(1))
    close(ops.as_strided(x, (2, 3), (5, 2), 1), torch.as_strided(x, (2, 3), (5, 2), 1))
    s = torch.randn(3, 2, 5)
    close(ops.slice_scatter(x, s, 1, 1, 3), torch.slice_scatter(x, s, 1, 1, 3))
    close(ops.select_scatter(x, x[:, 0], 1, 2), torch.select_scatter(x, x[:, 0], 1, 2))
    nt = x.transpose(0, 1)                                           # not contiguous: copied first
    close(ops.exp(nt), nt.exp(), rtol=1e-6)


def test_indexing_cpu():
    x = torch.randn(6, 5)
    idx = torch.tensor([4, 0, 0, 5])
    close(ops.index_select(x, 0, idx), x.index_select(0, idx))
    g = torch.randint(0, 5, (6, 3))
    close(ops.gather(x, 1, g), torch.gather(x, 1, g))
    src = torch.randn(6, 3)
    p = torch.stack([torch.randperm(5)[:3] for _ in range(6)])       # no duplicates per row
    close(ops.scatter(x, 1, p, src), torch.scatter(x, 1, p, src))
    close(ops.scatter_add(x, 1, g, src), torch.scatter_add(x, 1, g, src), rtol=1e-5, atol=1e-6)
    close(ops.scatter(x, 1, p, value=2.0), torch.scatter(x, 1, p, 2.0))
    w = torch.randn(10, 8)
    ii = torch.tensor([[1, 9], [0, 3]], dtype=torch.int32)
    close(ops.embedding(ii, w), F.embedding(ii, w))
    gr = torch.randn(2, 2, 8)
    close(ops.embedding_backward(gr, ii, 10, padding_idx=3),
          torch.ops.aten.embedding_dense_backward(gr, ii.long(), 10, 3, False), rtol=1e-5, atol=1e-6)


def test_gemm_family_cpu():
    a, b = torch.randn(33, 17), torch.randn(17, 20)
    close(ops.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
    close(ops.mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
    bias = torch.randn(20)
    close(ops.addmm(bias, a, b, beta=0.5, alpha=2.0), torch.addmm(bias, a, b, beta=0.5, alpha=2.0), rtol=1e-4, atol=1e-4)
    w = torch.randn(20, 17)
    x = torch.randn(2, 5, 17)
    close(ops.linear(x, w, bias), F.linear(x, w, bias), rtol=1e-4, atol=1e-4)
    ab, bb = torch.randn(3, 9, 17), torch.randn(3, 17, 4)
    close(ops.bmm(ab, bb), torch.bmm(ab, bb), rtol=1e-4, atol=1e-4)
    close(ops.matmul(a, b[:, 0]), a @ b[:, 0], rtol=1e-4, atol=1e-4)
    close(ops.gemm(a, b, bias, activation="relu"), torch.relu(a @ b + bias), rtol=1e-4, atol=1e-4)
    h, hb = a.to(torch.bfloat16), b.to(torch.bfloat16)
    got = ops.matmul(h, hb)
    assert got.dtype == torch.bfloat16
    close(got, h.float() @ hb.float(), rtol=1e-2, atol=2e-2)


def test_cross_entropy_cpu():
    logits = torch.randn(9, 300)
    tgt = torch.randint(0, 300, (9,))
    tgt[3] = -100
    for red in ("mean", "sum", "none"):
        close(ops.cross_entropy(logits, tgt, reduction=red), F.cross_entropy(logits, tgt, reduction=red), rtol=1e-5, atol=1e-5)
    loss, lse = ops.cross_entropy(logits, tgt, return_lse=True)
    close(lse, torch.logsumexp(logits, 1), rtol=1e-5)
    lg = logits.clone().requires_grad_()
    F.cross_entropy(lg, tgt).backward()
    close(ops.cross_entropy_backward(torch.tensor(1.0), logits, tgt, lse), lg.grad, rtol=1e-4, atol=1e-6)


def test_batch_norm_updates_running_stats():
    x = torch.randn(8, 3, 5)
    rm, rv = torch.zeros(3), torch.ones(3)
    wm, wv = rm.clone(), rv.clone()
    w, b = torch.rand(3) + 0.5, torch.randn(3)
    got = ops.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2)
    want = F.batch_norm(x, wm, wv, w, b, training=True, momentum=0.2)
    close(got, want, rtol=1e-4, atol=1e-5)
    close(rm, wm, rtol=1e-5, atol=1e-6)
    close(rv, wv, rtol=1e-4, atol=1e-6)
    close(ops.batch_norm(x, rm, rv, w, b), F.batch_norm(x, wm, wv, w, b), rtol=1e-4, atol=1e-5)


def test_rope_quant_random_numpy_references():
    T_, H, D = 5, 2, 8
    x = rng.standard_normal((T_, H, D)).astype(np.float32)
    ang = rng.uniform(0, 6, (11, D // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    pos = np.array([3, 0, 10, 7, 7], dtype=np.int64)
    c, s = cos[pos][:, None, :].astype(np.float64), sin[pos][:, None, :].astype(np.float64)
    x1, x2 = x[..., :D // 2].astype(np.float64), x[..., D // 2:].astype(np.float64)
    want = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)       # Llama's rotate_half
    np.testing.assert_allclose(ops.rope(x, cos, sin, pos), want, rtol=1e-5, atol=1e-6)
    q = rng.standard_normal((4, 256)).astype(np.float32)
    tq = torch.from_numpy(q)
    qq, sc = ops.quantize_fp8(tq, block=128)
    assert qq.dtype == torch.float8_e4m3fn and tuple(sc.shape) == (4, 2)
    amax = np.abs(q.reshape(4, 2, 128)).max(-1)
    np.testing.assert_allclose(sc.numpy(), amax / 448.0, rtol=1e-6)
    back = ops.dequantize_fp8(qq, sc, block=128)
    np.testing.assert_allclose(back.numpy(), q, rtol=0.07, atol=1e-3)
    r = ops.rand(1000, seed=5)
    assert r.shape == (1000,) and 0 <= r.min() and r.max() < 1 and abs(r.mean() - 0.5) < 0.05
    assert np.array_equal(r, ops.rand(1000, seed=5, target="interp"))
    y, m = ops.dropout(torch.ones(2000), 0.25, seed=1, return_mask=True)
    assert abs(m.float().mean().item() - 0.75) < 0.05
    close(y, m.float() / 0.75)


def test_creation():
    close(ops.full((2, 3), 7, dtype=torch.int32), torch.full((2, 3), 7, dtype=torch.int32))
    z = ops.zeros(3, 4)
    assert isinstance(z, np.ndarray) and z.shape == (3, 4) and not z.any()
    a = ops.arange(2, 11, 3)
    assert a.dtype == np.int64 and list(a) == [2, 5, 8]
    close(ops.arange(0, 1, 0.25, dtype=torch.float32), torch.arange(0, 1, 0.25))
    like = torch.ones(2)
    o = ops.ones_like(like)
    assert isinstance(o, torch.Tensor) and o.dtype == torch.float32


def test_many_calls_outputs_not_stale():
    # outputs come from tile's pool (reused buffers): results must not depend on old contents
    for k in range(5):
        x = torch.full((1000,), float(k))
        assert float(ops.sum(x)) == 1000.0 * k
        assert torch.equal(ops.add(x, 1.0), x + 1)


# ---------- bad arguments ----------
def test_errors_name_the_argument():
    x = torch.randn(3, 4)
    with pytest.raises(tile.TileError, match=r"add: b: shape \[5\] cannot be broadcast"):
        ops.add(x, torch.randn(5))
    with pytest.raises(tile.TileError, match=r"rms_norm: weight: shape \[5\]"):
        ops.rms_norm(x, (4,), torch.ones(5))
    with pytest.raises(tile.TileError, match=r"normalized_shape"):
        ops.rms_norm(x, (3,))
    with pytest.raises(tile.TileError, match=r"embedding: indices: entry 1 is 10, outside \[0, 10\)"):
        ops.embedding(torch.tensor([1, 10]), torch.randn(10, 4))
    with pytest.raises(tile.TileError, match=r"softmax: x: dtype int64"):
        ops.softmax(torch.arange(4), 0)
    with pytest.raises(tile.TileError, match=r"x: expected a NumPy array, a torch tensor or a tile.Tensor, not list"):
        ops.exp([1.0, 2.0]) if False else ops.unary("exp", [1.0, 2.0])
    with pytest.raises(tile.TileError, match=r"op: unknown operator 'nope'"):
        ops.unary("nope", x)
    with pytest.raises(tile.TileError, match=r"target: unknown target 'tpu'"):
        ops.exp(x, target="tpu")
    with pytest.raises(tile.TileError, match=r"div: rounding_mode"):
        ops.div(x, x, rounding_mode="up")
    with pytest.raises(tile.TileError, match=r"cross_entropy: targets: entry 0 is 7, outside \[0, 4\)"):
        ops.cross_entropy(x, torch.tensor([7, 0, 1]))
    with pytest.raises(tile.TileError, match=r"gather: index"):
        ops.gather(x, 1, torch.tensor([[0, 9]]))


def test_set_device_refuses_opencl_and_bad_streams():
    import ctypes
    from tile import _lib as L
    err = L.ERR()
    st = ops._set_device(L.Device_(L.DEVICE_OPENCL, 0), None, ctypes.byref(err))
    assert st == L.TILE_ERR_USER and "opencl" in L.take(err)
    st = ops._set_device(L.Device_(L.DEVICE_CUDA, 0), None, ctypes.byref(err))
    assert st == L.TILE_ERR_USER and "stream: NULL" in L.take(err)


# ---------- CUDA tensors (on the device: no host copies) ----------
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 1.6e-2)])
def test_cuda_family_sample(dtype, tol):
    x = torch.randn(37, 300, device="cuda").to(dtype)
    w = (torch.rand(300, device="cuda") + 0.5).to(dtype)
    y = ops.rms_norm(x, (300,), w, eps=1e-6)
    assert y.is_cuda and y.dtype == dtype and y.device == x.device
    close(y, F.rms_norm(x.double(), (300,), w.double(), eps=1e-6), rtol=tol, atol=tol)
    close(ops.layer_norm(x, (300,), w, None), F.layer_norm(x.double(), (300,), w.double()), rtol=tol, atol=4 * tol)
    close(ops.softmax(x, -1), torch.softmax(x.double(), -1), rtol=tol, atol=tol)
    close(ops.silu(x), F.silu(x.double()), rtol=tol, atol=tol)
    close(ops.add(x, x, alpha=3), x.double() * 4, rtol=tol, atol=tol)
    close(ops.mul(x, 0.5), x.double() * 0.5, rtol=tol, atol=tol)
    close(ops.sum(x, -1), x.double().sum(-1), rtol=tol, atol=tol * 30)
    close(ops.transpose(x, 0, 1), x.transpose(0, 1))
    close(ops.cat([x, x], 0), torch.cat([x, x], 0))
    a, b = torch.randn(65, 96, device="cuda").to(dtype), torch.randn(96, 40, device="cuda").to(dtype)
    close(ops.matmul(a, b), a.double() @ b.double(), rtol=tol, atol=tol * 10)
    idx = torch.tensor([3, 0, 36], device="cuda")
    close(ops.embedding(idx, x), F.embedding(idx, x))
    tgt = torch.randint(0, 300, (37,), device="cuda")
    close(ops.cross_entropy(x.float(), tgt), F.cross_entropy(x.float(), tgt), rtol=1e-4, atol=1e-5)


@cuda
def test_cuda_exact_index_checks_and_streams():
    w = torch.randn(10, 4, device="cuda")
    with pytest.raises(tile.TileError, match=r"embedding: indices: entry 2 is 10, outside \[0, 10\)"):
        ops.embedding(torch.tensor([1, 2, 10], device="cuda"), w)
    with pytest.raises(tile.TileError, match=r"on cuda:0, but .* is on cpu|on cpu, but .* is on cuda:0"):
        ops.add(torch.ones(3, device="cuda"), torch.ones(3))
    with pytest.raises(tile.TileError, match=r"target: 'cpu' cannot run on tensors in cuda memory"):
        ops.exp(torch.ones(3, device="cuda"), target="cpu")
    s = torch.cuda.Stream()
    x = torch.randn(1 << 20, device="cuda")
    with torch.cuda.stream(s):
        y = ops.exp(x)          # enqueued on s, ordered after x's producer by the caller
        z = ops.add(y, 1.0)
    s.synchronize()
    close(z, x.exp() + 1, rtol=1e-5, atol=1e-6)
    before = tile.memory_stats("cuda")
    for _ in range(3):
        ops.mul(x, 2.0)
    torch.cuda.synchronize()
    after = tile.memory_stats("cuda")
    assert after["driver_allocs"] - before["driver_allocs"] <= 1   # outputs come back to the pool


# ---------- attention, against torch (F.scaled_dot_product_attention and autograd) ----------
def _sink_attention(q, k, v, sinks, is_causal):
    """the sink as an extra logit column of every row, dropped after the softmax (gpt-oss)"""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    z = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        z = z.masked_fill(~torch.ones(z.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    z = torch.cat([z, sinks.view(1, -1, 1, 1).expand(*z.shape[:-1], 1)], -1)
    return z.softmax(-1)[..., :-1] @ v


def test_attention_forward_backward_vs_torch():
    q = torch.randn(2, 6, 37, 32, dtype=torch.float64).float().requires_grad_()
    k = torch.randn(2, 2, 53, 32).requires_grad_()
    v = torch.randn(2, 2, 53, 32).requires_grad_()
    for causal in (False, True):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        o, lse = ops.scaled_dot_product_attention(q.detach(), k.detach(), v.detach(), is_causal=causal, enable_gqa=True, return_lse=True)
        close(o, ref, rtol=1e-4, atol=1e-5)
        z = q @ k.repeat_interleave(3, 1).transpose(-1, -2) / math.sqrt(32)
        if causal:
            z = z.masked_fill(~torch.ones(37, 53, dtype=torch.bool).tril(), float("-inf"))
        close(lse, torch.logsumexp(z, -1), rtol=1e-5, atol=1e-5)
        do = torch.randn_like(ref)
        gq, gk, gv = torch.autograd.grad(ref, (q, k, v), do)
        dq, dk, dv = ops.scaled_dot_product_attention_backward(do, q.detach(), k.detach(), v.detach(), o, lse, is_causal=causal)
        for got, want in ((dq, gq), (dk, gk), (dv, gv)):
            close(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(tile.TileError, match="enable_gqa"):
        ops.scaled_dot_product_attention(q.detach(), k.detach(), v.detach())


def test_attention_sinks_and_their_gradient_vs_autograd():
    q = torch.randn(1, 4, 20, 16).requires_grad_()
    k, v = torch.randn(1, 2, 20, 16).requires_grad_(), torch.randn(1, 2, 20, 16).requires_grad_()
    sinks = torch.randn(4).requires_grad_()
    ref = _sink_attention(q, k, v, sinks, True)
    o, lse = ops.scaled_dot_product_attention(q.detach(), k.detach(), v.detach(), is_causal=True, enable_gqa=True, sinks=sinks.detach(),
                                              return_lse=True)
    close(o, ref, rtol=1e-4, atol=1e-5)
    do = torch.randn_like(ref)
    grads = torch.autograd.grad(ref, (q, k, v, sinks), do)
    got = ops.scaled_dot_product_attention_backward(do, q.detach(), k.detach(), v.detach(), o, lse, is_causal=True, sinks=sinks.detach())
    for g, w in zip(got, grads):
        close(g, w, rtol=1e-4, atol=1e-4)


def test_attention_decode_paged_vs_sdpa():
    B, Hq, Hkv, D, P = 3, 8, 2, 32, 16
    lens = [5, 40, 17]
    table = torch.tensor([[7, 0, 0], [1, 4, 2], [6, 3, 0]], dtype=torch.int32)
    kc, vc = torch.randn(8, P, Hkv, D), torch.randn(8, P, Hkv, D)
    q = torch.randn(B, Hq, D)
    for splits in (0, 1, 3):
        o = ops.attention_decode(q, kc, vc, table, torch.tensor(lens, dtype=torch.int32), num_splits=splits)
        for b, n in enumerate(lens):
            kk = kc[table[b].long()].reshape(-1, Hkv, D)[:n].transpose(0, 1)[None]
            vv = vc[table[b].long()].reshape(-1, Hkv, D)[:n].transpose(0, 1)[None]
            ref = F.scaled_dot_product_attention(q[b][None, :, None], kk, vv, enable_gqa=True)[0, :, 0]
            close(o[b], ref, rtol=1e-4, atol=1e-5)


@cuda
def test_cuda_attention_vs_sdpa():
    for dtype in (torch.bfloat16, torch.float16):
        q = torch.randn(2, 8, 300, 128, device="cuda").to(dtype)
        k, v = torch.randn(2, 4, 300, 128, device="cuda").to(dtype), torch.randn(2, 4, 300, 128, device="cuda").to(dtype)
        for causal in (False, True):
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal, enable_gqa=True)
            close(ops.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True), ref, rtol=2e-2, atol=2e-2)
