"""tile.ops quantised and grouped GEMMs (gemm_fp8, gemm_int8, gemm_fp4, grouped_gemm) from
NumPy arrays and torch tensors, against torch's own functions where they exist
(torch._scaled_mm, torch._int_mm, torch._grouped_mm) and float64 references built from the
dequantised operands otherwise; ragged and size-1 shapes; bad arguments naming the argument;
CUDA tensors where a GPU is seen. B is stored N x K throughout (out = a @ b^T)."""
import numpy as np
import pytest

import tile
import tile.ops as ops

torch = pytest.importorskip("torch")

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2
gen = torch.Generator().manual_seed(22)


def close(got, want, rtol, atol):
    if isinstance(got, torch.Tensor):
        got = got.detach().cpu().double().numpy()
    if isinstance(want, torch.Tensor):
        want = want.detach().cpu().double().numpy()
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def fp8(shape, dt=E4, lo=-3.0, hi=3.0, device="cpu"):
    return (torch.rand(shape, generator=gen) * (hi - lo) + lo).to(dt).to(device)


def scale(shape, device="cpu"):
    return (torch.rand(shape, generator=gen) * 1.5 + 0.5).to(device)


def expand(s, rows, K, rb):
    """a scale operand of any kind as [rows, K] float64"""
    if s is None:
        return torch.ones(rows, K, dtype=torch.float64)
    s = torch.as_tensor(s).double().cpu()
    if s.numel() == 1:
        return s.reshape(1, 1).expand(rows, K)
    if s.dim() == 1:
        return s[:, None].expand(rows, K)
    return s.repeat_interleave(rb, 0).repeat_interleave(128, 1)[:rows, :K]


def fp8_ref(a, sa, b, sb):
    M, K = a.shape
    N = b.shape[0]
    return (a.double().cpu() * expand(sa, M, K, 1)) @ (b.double().cpu() * expand(sb, N, K, 128)).T


# ---------- gemm_fp8 ----------
# (a dtype, b dtype, a_scale shape, b_scale shape, out dtype, M, N, K): per tensor, per row,
# DeepSeek-V3's 1x128 / 128x128 blocks with ragged M, N, K (K past a 128 block, N past one),
# mixed e4m3 x e5m2, size-1 M and N
FP8_CASES = [
    (E4, E4, "t", "t", torch.bfloat16, 37, 45, 96),
    (E4, E4, "row", "row", torch.float32, 70, 33, 160),
    (E4, E5, "blk", "blk", torch.bfloat16, 37, 131, 300),
    (E5, E5, "blk", "t", torch.float16, 5, 29, 129),
    (E4, E4, "row", "blk", torch.float32, 1, 200, 257),
    (E4, E4, None, None, torch.float32, 3, 1, 64),
]


def _scale_of(kind, rows, K, rb):
    if kind is None:
        return None
    if kind == "t":
        return scale((1,))
    if kind == "row":
        return scale((rows,))
    return scale(((rows + rb - 1) // rb, (K + 127) // 128))


@pytest.mark.parametrize("adt,bdt,ka,kb,odt,M,N,K", FP8_CASES, ids=["%s-%s-%d" % (c[2], c[3], i) for i, c in enumerate(FP8_CASES)])
def test_gemm_fp8_vs_float64(adt, bdt, ka, kb, odt, M, N, K):
    a, b = fp8((M, K), adt), fp8((N, K), bdt)
    sa, sb = _scale_of(ka, M, K, 1), _scale_of(kb, N, K, 128)
    got = ops.gemm_fp8(a, b, sa, sb, out_dtype=odt)
    assert isinstance(got, torch.Tensor) and got.dtype == odt and got.shape == (M, N)
    ref = fp8_ref(a, sa, b, sb)
    tol = {torch.float32: 1e-5, torch.bfloat16: 8e-3, torch.float16: 1e-3}[odt]
    close(got, ref, rtol=tol, atol=tol * float(ref.abs().max()))


def test_gemm_fp8_per_tensor_vs_scaled_mm():
    a, b = fp8((33, 64)), fp8((48, 64))
    got = ops.gemm_fp8(a, b, 1.5, torch.tensor([0.25]))   # a Python number: a per-tensor scale
    want = torch._scaled_mm(a, b.t(), scale_a=torch.tensor(1.5), scale_b=torch.tensor(0.25), out_dtype=torch.bfloat16)
    assert got.dtype == torch.bfloat16
    close(got, want, rtol=8e-3, atol=1e-2)


def test_gemm_fp8_numpy_in_numpy_out():
    ml = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (9, 130)).astype(ml.float8_e4m3fn)
    b = rng.uniform(-2, 2, (11, 130)).astype(ml.float8_e4m3fn)
    sa = rng.uniform(0.5, 2, (9, 2)).astype(np.float32)
    sb = rng.uniform(0.5, 2, (1, 2)).astype(np.float32)
    got = ops.gemm_fp8(a, b, sa, sb, out_dtype="float32")
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    ref = fp8_ref(torch.from_numpy(a.astype(np.float32)), torch.from_numpy(sa), torch.from_numpy(b.astype(np.float32)), torch.from_numpy(sb))
    close(got, ref, rtol=1e-5, atol=1e-4)


def test_gemm_fp8_interp_matches_cpu():
    a, b = fp8((20, 256)), fp8((24, 256), E5)
    sa, sb = scale((20, 2)), scale((1, 2))
    x = ops.gemm_fp8(a, b, sa, sb, out_dtype=torch.float32)
    y = ops.gemm_fp8(a, b, sa, sb, out_dtype=torch.float32, target="interp")
    close(x, y, rtol=1e-6, atol=1e-5)


# ---------- gemm_int8 ----------
def test_gemm_int8_vs_int_mm_and_scaled():
    a = torch.randint(-128, 128, (33, 80), dtype=torch.int8, generator=gen)
    b = torch.randint(-128, 128, (40, 80), dtype=torch.int8, generator=gen)
    got = ops.gemm_int8(a, b)
    assert got.dtype == torch.int32
    assert torch.equal(got, torch._int_mm(a, b.t().contiguous()))
    sa, sb = scale((33,)), scale((40,))
    got = ops.gemm_int8(a, b, sa, sb)
    assert got.dtype == torch.float32
    close(got, (a.double() @ b.double().T) * sa.double()[:, None] * sb.double()[None, :], rtol=1e-5, atol=1e-2)
    got = ops.gemm_int8(a[:1], b[:7], 0.01, sb[:7], out_dtype=torch.bfloat16)
    assert got.dtype == torch.bfloat16 and got.shape == (1, 7)
    close(got, (a[:1].double() @ b[:7].double().T) * 0.01 * sb[:7].double()[None, :], rtol=8e-3, atol=1e-2)


# ---------- gemm_fp4 ----------
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)


def fp4_weights(N, K):
    """(values [N, K] float64, packed uint8 [N, K/2]): random e2m1 codes, low nibble first"""
    codes = torch.randint(0, 16, (N, K), generator=gen, dtype=torch.int64)
    vals = E2M1[codes & 7] * torch.where(codes >= 8, -1.0, 1.0).double()
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).to(torch.uint8)
    return vals, packed


@pytest.mark.parametrize("fmt,adt,M,N,K", [("mx", torch.bfloat16, 37, 70, 96), ("nv", torch.float16, 5, 33, 50), ("mx", torch.float32, 1, 3, 34)])
def test_gemm_fp4_vs_dequantised(fmt, adt, M, N, K):
    a = (torch.rand(M, K, generator=gen) * 2 - 1).to(adt)
    w, packed = fp4_weights(N, K)
    bs = 32 if fmt == "mx" else 16
    ks = (K + bs - 1) // bs
    if fmt == "mx":
        sc = torch.randint(120, 132, (N, ks), generator=gen, dtype=torch.int32).to(torch.uint8)
        sval, gs = 2.0 ** (sc.double() - 127), 1.0
        if hasattr(torch, "float8_e8m0fnu"):
            sc = sc.view(torch.float8_e8m0fnu)          # torch's own e8m0 dtype is taken too
    else:
        sc = (torch.rand(N, ks, generator=gen) * 2.9 + 0.1).to(E4)
        sval, gs = sc.double(), 0.37
    if hasattr(torch, "float4_e2m1fn_x2"):
        packed = packed.view(torch.float4_e2m1fn_x2)
    got = ops.gemm_fp4(a, packed, sc, gs)
    assert got.dtype == adt and got.shape == (M, N)
    ref = gs * a.double() @ (w * sval.repeat_interleave(bs, 1)[:, :K]).T
    tol = {torch.float32: 1e-5, torch.bfloat16: 8e-3, torch.float16: 1e-3}[adt]
    close(got, ref, rtol=tol, atol=tol * float(ref.abs().max()))


# ---------- grouped_gemm ----------
def test_grouped_gemm_offsets_vs_torch_grouped_mm():
    sizes = [37, 0, 70, 5]                               # ragged, one empty group
    G, N, K = len(sizes), 48, 64
    M = sum(sizes) + 6                                   # rows past the last offset: zeros
    a = torch.randn(M, K, generator=gen).to(torch.bfloat16)
    b = torch.randn(G, N, K, generator=gen).to(torch.bfloat16)
    offs = torch.tensor(np.cumsum(sizes), dtype=torch.int32)
    got = ops.grouped_gemm(a, b, offsets=offs)
    assert got.dtype == torch.bfloat16 and got.shape == (M, N)
    want = torch._grouped_mm(a[:offs[-1]], b.transpose(1, 2), offs=offs)
    close(got[:offs[-1]], want, rtol=1e-2, atol=3e-2)
    assert torch.count_nonzero(got[offs[-1]:]) == 0


def test_grouped_gemm_m_indices_and_masked_vs_float64():
    G, N, K = 3, 29, 40
    b = torch.randn(G, N, K, generator=gen)
    ids = torch.tensor([0] * 5 + [-1] * 3 + [2] * 11 + [1], dtype=torch.int32)
    a = torch.randn(len(ids), K, generator=gen)
    got = ops.grouped_gemm(a, b, ids)
    want = torch.zeros(len(ids), N, dtype=torch.float64)
    for r, g in enumerate(ids.tolist()):
        if g >= 0:
            want[r] = a[r].double() @ b[g].double().T
    close(got, want, rtol=1e-5, atol=1e-5)
    cnt = torch.tensor([4, 0, 1], dtype=torch.int32)
    am = torch.randn(G, 6, K, generator=gen)
    got = ops.grouped_gemm(am, b, masked_m=cnt)
    want = torch.zeros(G, 6, N, dtype=torch.float64)
    for g in range(G):
        want[g, :cnt[g]] = am[g, :cnt[g]].double() @ b[g].double().T
    close(got, want, rtol=1e-5, atol=1e-5)


def test_grouped_gemm_numpy():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((10, 16)).astype(np.float32)
    b = rng.standard_normal((2, 8, 16)).astype(np.float32)
    got = ops.grouped_gemm(a, b, offsets=np.array([4, 10], np.int32))
    assert isinstance(got, np.ndarray)
    want = np.concatenate([a[:4] @ b[0].T, a[4:] @ b[1].T])
    close(got, want, rtol=1e-5, atol=1e-5)


# ---------- bad arguments: the message names the argument ----------
def test_quant_errors_name_the_argument():
    a, b = fp8((4, 256)), fp8((6, 256))
    with pytest.raises(tile.TileError, match=r"gemm_fp8: b: shape \[6, 255\] is not \[N, K\]"):
        ops.gemm_fp8(a, fp8((6, 255)))
    with pytest.raises(tile.TileError, match=r"gemm_fp8: a: dtype float16"):
        ops.gemm_fp8(torch.ones(4, 256, dtype=torch.float16), b)
    with pytest.raises(tile.TileError, match=r"gemm_fp8: a_scale: shape \[4, 3\] is none of"):
        ops.gemm_fp8(a, b, scale((4, 3)))
    with pytest.raises(tile.TileError, match=r"gemm_fp8: b_scale: dtype float16; scales are float32"):
        ops.gemm_fp8(a, b, None, torch.ones(6, dtype=torch.float16))
    with pytest.raises(tile.TileError, match=r"gemm_fp8: out_dtype: int32 is not one of"):
        ops.gemm_fp8(a, b, out_dtype=torch.int32)
    with pytest.raises(tile.TileError, match=r"a_scale: expected a float32 tensor or a Python number, not str"):
        ops.gemm_fp8(a, b, "1.0")
    i8 = torch.ones(4, 8, dtype=torch.int8)
    with pytest.raises(tile.TileError, match=r"gemm_int8: a_scale: shape \[4, 1\] is neither"):
        ops.gemm_int8(i8, i8, torch.ones(4, 1))
    with pytest.raises(tile.TileError, match=r"gemm_int8: out_dtype: int32 takes the raw sums"):
        ops.gemm_int8(i8, i8, 2.0, out_dtype=torch.int32)
    with pytest.raises(tile.TileError, match=r"gemm_int8: b: dtype uint8"):
        ops.gemm_int8(i8, i8.to(torch.uint8))
    a16 = torch.ones(3, 64, dtype=torch.bfloat16)
    with pytest.raises(tile.TileError, match=r"gemm_fp4: b: shape \[5, 64\] is not \[N, K / 2\]"):
        ops.gemm_fp4(a16, torch.zeros(5, 64, dtype=torch.uint8), torch.zeros(5, 2, dtype=torch.uint8))
    with pytest.raises(tile.TileError, match=r"gemm_fp4: b_scale: shape \[5, 4\] is not \[N, ceil\(K / 32\)\]"):
        ops.gemm_fp4(a16, torch.zeros(5, 32, dtype=torch.uint8), torch.zeros(5, 4, dtype=torch.uint8))
    with pytest.raises(tile.TileError, match=r"gemm_fp4: b_scale: dtype float32 is neither uint8"):
        ops.gemm_fp4(a16, torch.zeros(5, 32, dtype=torch.uint8), torch.zeros(5, 2))
    with pytest.raises(tile.TileError, match=r"gemm_fp4: global_scale: expected a Python number"):
        ops.gemm_fp4(a16, torch.zeros(5, 32, dtype=torch.uint8), torch.zeros(5, 2, dtype=torch.uint8), torch.ones(1))
    ga, gb = torch.randn(10, 8), torch.randn(3, 5, 8)
    with pytest.raises(tile.TileError, match=r"grouped_gemm: m_indices, offsets, masked_m: pass exactly one \(0 given\)"):
        ops.grouped_gemm(ga, gb)
    with pytest.raises(tile.TileError, match=r"grouped_gemm: m_indices: entry 9 is 3, outside \[0, 3\)"):
        ops.grouped_gemm(ga, gb, torch.tensor([0] * 9 + [3], dtype=torch.int32))
    with pytest.raises(tile.TileError, match=r"grouped_gemm: offsets: dtype int64"):
        ops.grouped_gemm(ga, gb, offsets=torch.tensor([4, 6, 10]))
    with pytest.raises(tile.TileError, match=r"grouped_gemm: offsets: entry 1 is 2, outside \[4, M = 10\]"):
        ops.grouped_gemm(ga, gb, offsets=torch.tensor([4, 2, 10], dtype=torch.int32))
    with pytest.raises(tile.TileError, match=r"grouped_gemm: masked_m: entry 1 is 5, outside \[0, M_max = 4\]"):
        ops.grouped_gemm(torch.randn(3, 4, 8), gb, masked_m=torch.tensor([1, 5, 0], dtype=torch.int32))
    with pytest.raises(tile.TileError, match=r"grouped_gemm: b: dtype bfloat16 differs from a's float32"):
        ops.grouped_gemm(ga, gb.to(torch.bfloat16), torch.zeros(10, dtype=torch.int32))


# ---------- CUDA tensors (on the device, no host copies) ----------
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
def test_cuda_quant_gemms_vs_references():
    d = "cuda"
    a, b = fp8((300, 512), device=d), fp8((264, 512), device=d)
    sa, sb = scale((300, 4), d), scale((3, 4), d)
    got = ops.gemm_fp8(a, b, sa, sb)
    assert got.is_cuda and got.dtype == torch.bfloat16
    ref = fp8_ref(a, sa, b, sb)
    close(got, ref, rtol=8e-3, atol=8e-3 * float(ref.abs().max()))
    a1, sa1 = fp8((37, 512), device=d), scale((37, 4), d)      # the 64-row tile (M <= 64)
    got = ops.gemm_fp8(a1, b, sa1, sb)
    ref = fp8_ref(a1, sa1, b, sb)
    close(got, ref, rtol=8e-3, atol=8e-3 * float(ref.abs().max()))
    st, tt = torch.tensor(0.5, device=d), torch.tensor(2.0, device=d)
    got = ops.gemm_fp8(a, b, st.reshape(1), tt.reshape(1))
    close(got, torch._scaled_mm(a, b.t(), scale_a=st, scale_b=tt, out_dtype=torch.bfloat16), rtol=1e-2, atol=0.5)
    i8a = torch.randint(-128, 128, (64, 96), dtype=torch.int8, device=d)
    i8b = torch.randint(-128, 128, (40, 96), dtype=torch.int8, device=d)
    assert torch.equal(ops.gemm_int8(i8a, i8b), torch._int_mm(i8a, i8b.t().contiguous()))
    w, packed = fp4_weights(72, 128)
    sc = torch.full((72, 4), 127, dtype=torch.uint8)
    x = torch.randn(17, 128, device=d).to(torch.bfloat16)
    got = ops.gemm_fp4(x, packed.to(d), sc.to(d))
    close(got, x.double().cpu() @ w.T, rtol=8e-3, atol=0.1)
    gb = torch.randn(4, 192, 128, device=d).to(torch.bfloat16)
    for sizes in ([128, 0, 256, 37], [128, 0, 256, 128]):     # ragged; every group whole tiles
        ga = torch.randn(sum(sizes), 128, device=d).to(torch.bfloat16)
        offs = torch.tensor(np.cumsum(sizes), dtype=torch.int32, device=d)
        got = ops.grouped_gemm(ga, gb, offsets=offs)
        close(got, torch._grouped_mm(ga, gb.transpose(1, 2), offs=offs), rtol=1e-2, atol=5e-2)
    cnt = torch.tensor([3, 0, 64, 1], dtype=torch.int32, device=d)
    am = torch.randn(4, 64, 128, device=d).to(torch.bfloat16)
    got = ops.grouped_gemm(am, gb, masked_m=cnt)
    for g in range(4):
        n = int(cnt[g])
        close(got[g, :n], am[g, :n].double() @ gb[g].double().T, rtol=1e-2, atol=5e-2)
        assert torch.count_nonzero(got[g, n:]) == 0
