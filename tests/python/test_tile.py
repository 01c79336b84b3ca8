"""The tile Python package: compiling, calling on NumPy / torch / DLPack tensors, strides and
offsets, out_idx, errors, threads, DLPack round trips, traces. CUDA tests run where torch
sees a GPU."""
import json
import os
import threading

import numpy as np
import pytest

import tile
from conftest import EXAMPLES, PLAIN

rng = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_devices():
    d = tile.devices()
    assert d["interp"] and d["cpu"]
    assert set(d) >= {"interp", "cpu", "cuda", "opencl"}
    assert tile.Device.parse("cpu") in tile.device_list()


def test_compile_from_path_and_call_in_place():
    k = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=40, N=24)
    a, b, c = rand(40, 24), rand(40, 24), np.zeros((40, 24), np.float32)
    assert k(a, b, c) is None
    np.testing.assert_array_equal(c, a + b)


def test_compile_from_string_returns_output():
    k = tile.compile(PLAIN)
    a, b = rand(9, 13), rand(9, 13)
    c = k(a, b)
    assert isinstance(c, np.ndarray) and c.shape == (9, 13) and c.dtype == np.float32
    np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)
    # the symbolic sizes bind from each call's shapes
    a2, b2 = rand(3, 5), rand(3, 5)
    np.testing.assert_allclose(k(a2, b2), a2 * 2 + b2, rtol=1e-6)


def test_jit_factory_from_function():
    from kernels import add_factory
    k = add_factory(33, 20)
    assert isinstance(k, tile.Kernel)
    assert add_factory(33, 20) is k  # cached per arguments
    a, b = rand(33, 20), rand(33, 20)
    np.testing.assert_array_equal(k(a, b), a + b)


def test_out_idx_and_interp_target_agree():
    kc = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=16, N=16, out_idx=[-1], target="cpu")
    ki = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=16, N=16, out_idx=[-1], target="interp")
    a, b = rand(16, 16), rand(16, 16)
    np.testing.assert_array_equal(kc(a, b), ki(a, b))
    with pytest.raises(tile.TileError, match="out_idx 5"):
        tile.compile(os.path.join(EXAMPLES, "add.tl"), M=16, N=16, out_idx=[5])


def test_offsets_and_strides():
    k = tile.compile(PLAIN, target="cpu")
    big_a, big_b = rand(12, 10), rand(12, 10)
    # a row slice: contiguous, with a byte offset
    a, b = big_a[3:9], big_b[3:9]
    np.testing.assert_allclose(k(a, b), a * 2 + b, rtol=1e-6)
    # a column slice: strided rows, contiguous last dimension (the cpu target takes it)
    a, b = big_a[:, 2:7], big_b[:, 4:9]
    assert not a.flags.c_contiguous
    np.testing.assert_allclose(k(a, b), a * 2 + b, rtol=1e-6)
    # a transposed view (last stride 10): refused with the parameter's name
    with pytest.raises(tile.TileError, match=r"parameter 'A' is not contiguous"):
        k(big_a.T, big_b.T.copy())
    # the interpreter takes contiguous tensors only: same kind of message
    ki = tile.compile(PLAIN, target="interp")
    with pytest.raises(tile.TileError, match=r"'A' is not contiguous.*interpreter"):
        ki(big_a[:, 2:7], big_b[:, 2:7])


def test_errors_carry_the_source_location():
    k = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=8, N=8)
    a = np.zeros((8, 8), np.float64)
    with pytest.raises(tile.TileError) as e:
        k(a, a, a)
    msg = str(e.value)
    assert "add.tl:" in msg and "error:" in msg and "float32" in msg and "float64" in msg
    with pytest.raises(tile.TileError, match="should have shape"):
        k(rand(8, 7), rand(8, 7), rand(8, 7))
    with pytest.raises(tile.TileError, match=r"<string>:1:\d+: error"):
        tile.compile("def f(:\n  x = \n")
    with pytest.raises(tile.TileError, match="takes 3 arguments"):
        k(rand(8, 8))


def test_repeated_calls_do_not_compile_again():
    k = tile.compile(PLAIN, target="cpu")
    a, b = rand(6, 6), rand(6, 6)
    k(a, b)
    before = tile.cache_stats()
    for _ in range(5):
        k(a, b)
    after = tile.cache_stats()
    assert after["compiles"] == before["compiles"]
    assert after["specializations"] == before["specializations"]
    assert after["launches"] == before["launches"] + 5
    # a new shape is a new specialisation of the same compiled code
    k(rand(4, 4), rand(4, 4))
    again = tile.cache_stats()
    assert again["compiles"] == after["compiles"] and again["specializations"] == after["specializations"] + 1


def test_eight_threads_one_kernel():
    k = tile.compile(PLAIN, target="cpu")
    errors, results = [], {}

    def work(t):
        try:
            for it in range(10):
                a, b = rand(5 + t, 7), rand(5 + t, 7)
                c = k(a, b)
                if not np.allclose(c, a * 2 + b, rtol=1e-6):
                    errors.append((t, it))
            results[t] = True
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    th = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    [t.start() for t in th]
    [t.join() for t in th]
    assert not errors and len(results) == 8


class DLPackOnly:
    """An object that offers only the DLPack protocol (versioned or not)."""

    def __init__(self, arr, versioned):
        self.arr, self.versioned = arr, versioned

    def __dlpack__(self, stream=None, max_version=None, **kw):
        if self.versioned:
            return self.arr.__dlpack__(max_version=max_version)
        if max_version is not None:
            raise TypeError("old producer")
        return self.arr.__dlpack__()

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_in(versioned):
    k = tile.compile(PLAIN, target="cpu")
    a, b = rand(7, 3), rand(7, 3)
    c = k(DLPackOnly(a, versioned), DLPackOnly(b, versioned))
    assert isinstance(c, tile.Tensor)  # no framework to allocate like: tile's own memory
    np.testing.assert_allclose(np.from_dlpack(c), a * 2 + b, rtol=1e-6)


def test_dlpack_out_round_trip_numpy():
    t = tile.Tensor((4, 5), "float32")
    x = np.from_dlpack(t)
    x[...] = np.arange(20, dtype=np.float32).reshape(4, 5)
    y = np.from_dlpack(t)  # the same memory, no copy
    assert y.ctypes.data == x.ctypes.data == t.data_ptr
    np.testing.assert_array_equal(y, np.arange(20).reshape(4, 5))
    del x, y, t
    stats = tile.memory_stats("cpu")
    assert stats["high_water"] >= 80 and stats["allocs"] >= 1


def test_memory_pool_reuses_blocks():
    before = tile.memory_stats("cpu")
    for _ in range(4):
        t = tile.Tensor((1000,), "float32")
        del t
    after = tile.memory_stats("cpu")
    assert after["allocs"] - before["allocs"] == 4
    assert after["reused"] - before["reused"] >= 3


def test_trace_file(tmp_path):
    path = tmp_path / "trace.json"
    with tile.trace(path):
        k = tile.compile(PLAIN, target="cpu")
        k(rand(3, 3), rand(3, 3))
    doc = json.loads(path.read_text())
    names = {e["name"] for e in doc["traceEvents"]}
    cats = {e.get("cat") for e in doc["traceEvents"]}
    assert "compile" in cats and "launch" in cats and "axpb" in names


def test_source_and_ir():
    k = tile.compile(PLAIN)
    assert "tile_entry" in k.source("cpu")
    assert "axpb" in k.ir()
    assert k.ir("cpu", after="autoschedule")
    with pytest.raises(tile.TileError, match="no generated source"):
        k.source("interp")


def test_bench_cpu():
    k = tile.compile(PLAIN, target="cpu")
    t = k.bench(rand(16, 16), rand(16, 16), iters=5, warmup=1)
    assert t > 0


def test_language_shim_loads_upstream_style_files():
    import tile.tilelang_alias  # noqa: F401
    import tilelang
    import tilelang.language as T
    assert T.prim_func and T.Tensor((4, 4), "float16") is not None
    if getattr(tilelang, "__doc__", "").startswith("Tile's stand-in"):
        assert tilelang.jit is tile.jit


# ---------- PyTorch ----------
def test_torch_cpu_and_dlpack():
    torch = pytest.importorskip("torch")
    k = tile.compile(PLAIN, target="cpu")
    a, b = torch.randn(6, 4), torch.randn(6, 4)
    c = k(a, b)
    assert isinstance(c, torch.Tensor) and c.device.type == "cpu" and c.dtype == torch.float32
    torch.testing.assert_close(c, a * 2 + b)
    # strided torch views (a column slice)
    big = torch.randn(6, 9)
    torch.testing.assert_close(k(big[:, 1:5], big[:, 4:8]), big[:, 1:5] * 2 + big[:, 4:8])
    # tile memory seen by torch without a copy
    t = tile.Tensor((3, 2), "float32")
    x = torch.from_dlpack(t)
    x.fill_(2.5)
    assert x.data_ptr() == t.data_ptr
    np.testing.assert_array_equal(np.from_dlpack(t), np.full((3, 2), 2.5, np.float32))


def test_torch_bfloat16_in_place():
    torch = pytest.importorskip("torch")
    k = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=8, N=8, dtype="bfloat16", out_idx=[-1])
    a, b = torch.randn(8, 8).bfloat16(), torch.randn(8, 8).bfloat16()
    c = k(a, b)
    assert c.dtype == torch.bfloat16
    torch.testing.assert_close(c.float(), (a.float() + b.float()).bfloat16().float())


def _fast_path_checks(torch, device):
    """The cached launcher of the last all-torch signature must not accept tensors of another
    signature: each change goes to the general path (a new specialisation or a TileError
    naming the parameter), and results stay right after each switch."""
    k = tile.compile(PLAIN, target="cuda" if device == "cuda" else "cpu")
    a, b = torch.randn(6, 4, device=device), torch.randn(6, 4, device=device)
    for _ in range(3):  # the first call makes the plan, the next ones take the generated launcher
        torch.testing.assert_close(k(a, b), a * 2 + b)
    assert k._last_fast is not None and k._last_fast((a, b)) is not None
    a2, b2 = torch.randn(5, 3, device=device), torch.randn(5, 3, device=device)
    torch.testing.assert_close(k(a2, b2), a2 * 2 + b2)  # other shapes: another plan
    torch.testing.assert_close(k(a, b), a * 2 + b)
    with pytest.raises(tile.TileError, match="parameter 'B' is float32, but the tensor given is float64"):
        k(a, b.double())
    with pytest.raises(tile.TileError, match="parameter 'A' has 2 dimensions, but the tensor given has 1"):
        k(a.reshape(-1), b)
    with pytest.raises(tile.TileError, match="takes 2 arguments"):
        k(a)
    with pytest.raises(tile.TileError, match="not a tensor"):
        k(a, [1.0])
    big = torch.randn(6, 9, device=device)
    if device == "cpu":  # the cpu target takes strides
        torch.testing.assert_close(k(big[:, 1:5], b), big[:, 1:5] * 2 + b)
    else:
        with pytest.raises(tile.TileError, match="parameter 'A' is not contiguous"):
            k(big[:, 1:5], b)
    torch.testing.assert_close(k(a, b), a * 2 + b)


def test_torch_cpu_fast_path_keeps_checks():
    _fast_path_checks(pytest.importorskip("torch"), "cpu")


def _opencl():
    if not tile.devices().get("opencl"):
        pytest.skip("no OpenCL device")


def test_opencl_device_memory_and_launch_against_interp():
    """opencl:0 buffers from the caching pool, tile_launch on an OpenCL queue (tile's own and
    a stream of its own), results equal to the interpreter's on the same inputs."""
    _opencl()
    k = tile.compile(PLAIN, target="opencl")
    ref = tile.compile(PLAIN, target="interp")
    a, b = rand(37, 19), rand(37, 19)
    want = ref(a, b)
    da = tile.Tensor(a.shape, "float32", "opencl:0").copy_(a)
    db = tile.Tensor(b.shape, "float32", "opencl:0").copy_(b)
    before = tile.memory_stats("opencl:0")
    c = k(da, db)
    assert isinstance(c, tile.Tensor) and str(c.device) == "opencl:0"
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-6)
    s = tile.Stream("opencl:0")
    c2 = k(da, db, stream=s)
    s.synchronize()
    np.testing.assert_allclose(c2.numpy(), want, rtol=1e-6)
    stats = tile.memory_stats("opencl:0")
    assert stats["allocs"] >= before["allocs"] + 2 and stats["high_water"] >= 4 * a.nbytes
    del c, c2
    again = k(da, db)  # the freed output's block comes back from the pool
    assert tile.memory_stats("opencl:0")["reused"] > stats["reused"]
    np.testing.assert_allclose(again.numpy(), want, rtol=1e-6)
    with pytest.raises(tile.TileError, match="parameter 'B' is float32, but the tensor given is float64"):
        k(da, tile.Tensor(b.shape, "float64", "opencl:0"))
    with pytest.raises(tile.TileError, match="opencl:1 is not available"):
        tile.Tensor((4,), "float32", "opencl:1")
    with pytest.raises(tile.TileError, match="parameter 'A' is not contiguous"):
        k(_transposed(tile.Tensor((19, 37), "float32", "opencl:0")), db)


def _transposed(t):
    """t (2-d, row-major) seen as its transpose: a strided view of the same memory."""
    t.shape, t.strides = t.shape[::-1], t.strides[::-1]
    return t


def test_opencl_events_time_a_launch():
    _opencl()
    k = tile.compile(PLAIN, target="opencl")
    a = tile.Tensor((64, 64), "float32", "opencl:0").copy_(rand(64, 64))
    t = k.bench(a, a, iters=3, warmup=1)
    assert t > 0


def test_nonexistent_device_is_a_clear_error():
    with pytest.raises(tile.TileError, match="cuda:99 is not available|device cuda is not available"):
        tile.Tensor((4,), "float32", "cuda:99")
    with pytest.raises(tile.TileError, match="there is one cpu device"):
        tile.Device.parse("cpu:1")


# ---------- CUDA (skipped without a GPU) ----------
def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or not tile.devices().get("cuda"):
        pytest.skip("no CUDA device")
    return torch


def test_cuda_tensors_zero_copy():
    torch = _cuda()
    k = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=256, N=128, out_idx=[-1])
    a, b = torch.randn(256, 128, device="cuda"), torch.randn(256, 128, device="cuda")
    c = k(a, b)
    assert c.is_cuda
    torch.testing.assert_close(c, a + b)
    before = tile.cache_stats()
    for _ in range(3):
        k(a, b)
    assert tile.cache_stats()["compiles"] == before["compiles"]


def test_cuda_non_default_stream():
    torch = _cuda()
    k = tile.compile(os.path.join(EXAMPLES, "gemm.tl"), M=512, N=512, K=256, dtype="float16", out_idx=[-1])
    a = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        c = k(a, b)
        ref = (a.float() @ b.float())
    s.synchronize()
    torch.testing.assert_close(c, ref, rtol=2e-2, atol=2e-2)


def test_cuda_strided_refused_with_name():
    torch = _cuda()
    k = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=16, N=16, out_idx=[-1])
    a = torch.randn(16, 32, device="cuda")
    with pytest.raises(tile.TileError, match="parameter 'A' is not contiguous"):
        k(a[:, :16], a[:, 16:].contiguous())


def test_cuda_fast_path_keeps_checks():
    _fast_path_checks(_cuda(), "cuda")


def test_cuda_fast_path_follows_the_current_stream():
    torch = _cuda()
    k = tile.compile(os.path.join(EXAMPLES, "add.tl"), M=512, N=512, out_idx=[-1])
    a, b = torch.randn(512, 512, device="cuda"), torch.randn(512, 512, device="cuda")
    torch.testing.assert_close(k(a, b), a + b)
    k(a, b)  # the generated launcher from here on
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(10_000_000)  # keep s busy: a launch on another stream would finish first
        c = k(a, b)
        d = c * 2
    s.synchronize()
    torch.testing.assert_close(d, (a + b) * 2)


def test_cuda_device_beyond_the_last_is_a_clear_error():
    torch = _cuda()
    n = torch.cuda.device_count()
    with pytest.raises(tile.TileError, match="cuda:%d is not available" % n):
        tile.Stream("cuda:%d" % n)
    with pytest.raises(tile.TileError, match="cuda:%d is not available" % n):
        tile.Tensor((4,), "float32", "cuda:%d" % n)


# ---------- tile.link ----------
_LINK_WORKER = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[4])
from tile import link
rank, size, addr = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with link.Comm(rank, size, addr) as comm:
    comm.set_timeout(60)
    x = np.full(1000, rank + 1, np.float32)
    link.allreduce(comm, x)
    assert (x == size * (size + 1) / 2).all(), x[:4]
    g = np.zeros(2 * 3, np.int32)
    link.allgather(comm, np.full(3, rank, np.int32), g)
    assert list(g) == [0, 0, 0, 1, 1, 1], g
    b = np.arange(5, dtype=np.float64) * (rank == 0)
    link.broadcast(comm, b, root=0)
    assert (b == np.arange(5)).all()
    c = link.Compressor(comm, "sign1", 256)
    y = np.ones(256, np.float32) * (rank + 1)
    c.allreduce(y, op="avg")
    assert np.isfinite(y).all()
    assert not comm.revoked and comm.failed_ranks() == []
print("rank", rank, "ok")
"""


def test_link_two_ranks(tmp_path):
    import socket
    import subprocess
    import sys
    pytest.importorskip("tile.link")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    script = tmp_path / "worker.py"
    script.write_text(_LINK_WORKER)
    py = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python")
    traces = [tmp_path / ("trace%d.json" % r) for r in range(2)]
    procs = [subprocess.Popen([sys.executable, str(script), str(r), "2", "127.0.0.1:%d" % port, py],
                              env=dict(os.environ, TILE_TRACE=str(traces[r])),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert "rank 0 ok" in outs[0] and "rank 1 ok" in outs[1]
    # libtilelink's collectives in libtile's Chrome trace, with their sizes
    for r in range(2):
        ev = json.loads(traces[r].read_text())
        ev = ev["traceEvents"] if isinstance(ev, dict) else ev
        coll = [(e["name"], e["args"]) for e in ev if e.get("cat") == "collective"]
        assert any(n == "allreduce" and a["bytes"] == 4000 and a["count"] == 1000 and a["dtype"] == "f32" and a["rank"] == r
                   and a["size"] == 2 and a["status"] == 0 for n, a in coll), coll
        assert any(n == "allgather" and a["bytes"] == 12 for n, a in coll), coll
        assert any(n == "broadcast" and a["bytes"] == 40 and a["dtype"] == "f64" for n, a in coll), coll


def test_link_errors():
    from tile import link
    with pytest.raises(link.LinkError, match="C-contiguous|contiguous"):
        link._buf(np.zeros((4, 4), np.float32)[:, ::2])
    assert link.version


def test_options_and_pass_configs():
    path = os.path.join(EXAMPLES, "add.tl")
    k = tile.compile(path, M=16, N=16, options={"cpu_checks": True, "sm90_group": 4},
                     pass_configs={"tl.disable_warp_specialized": True})
    o = k.options
    assert o["cpu_checks"] == "1" and o["sm90_group"] == "4" and o["sm90_attn_ws"] == "0"
    assert tile.compile(path, M=16, N=16).options["cpu_checks"] in ("0", "1")  # the environment's
    with pytest.warns(UserWarning, match="tl.no_such_key"):
        tile.compile(path, M=16, N=16, pass_configs={"tl.no_such_key": 1})
    with pytest.raises(tile.TileError, match="no_such_option"):
        tile.compile(path, M=16, N=16, options={"no_such_option": 1})
    with pytest.raises(tile.TileError, match="sm90_group"):
        tile.compile(path, M=16, N=16, options={"sm90_group": 0})
    # the kernel compiled with the options still computes the sum
    a, b = np.random.rand(16, 16).astype(np.float32), np.random.rand(16, 16).astype(np.float32)
    c = np.zeros_like(a)
    k(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
