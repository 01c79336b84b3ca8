"""tile.link's MoE dispatch/combine, comm status and secret bindings, at 3 ranks in
subprocesses (each rank checks its received rows and combined output against a NumPy
reference computed from every rank's inputs, regenerated from the seed)."""
import os
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = os.path.join(ROOT, "python")

_WORKER = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[4])
from tile import link
rank, size, addr, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[5]
if mode == "secret":
    link.set_secret(sys.argv[6])
T, H, E, K = 37, 24, 12, 3
L = E // size

def inputs(r):
    g = np.random.default_rng(100 + r)
    ids = np.stack([g.choice(E, K, replace=False) for _ in range(T)]).astype(np.int32)
    ids[5, 1] = -1                                          # an unused slot
    w = g.random((T, K), dtype=np.float32) + np.float32(0.1)
    bits = (g.integers(0, 1 << 16, (T, H)) & 0x80FF | 0x3C00).astype(np.uint16)   # finite bf16
    return ids, w, bits

def bf(u):  # bf16 bits -> f32
    return (u.astype(np.uint32) << 16).view(np.float32)

with link.Comm(rank, size, addr) as comm:
    comm.set_timeout(60)
    ids, w, x = inputs(rank)
    h = link.moe_dispatch(comm, x, ids, w, num_experts=E, dtype="bfloat16", algo="flat")
    assert h.num_local_experts == L and h.first_expert == rank * L and h.algo == "flat"
    # reference: rows of expert e ordered by (source rank, token)
    want = []
    for e in range(rank * L, (rank + 1) * L):
        for r in range(size):
            ri, rw, rx = inputs(r)
            for t in range(T):
                for j in range(K):
                    if ri[t, j] == e:
                        want.append((r, t, rw[t, j], rx[t], e))
    assert h.nrows == len(want), (h.nrows, len(want))
    offs = [sum(1 for q in want if q[4] < rank * L + e) for e in range(L + 1)]
    assert list(h.expert_offsets) == offs, (list(h.expert_offsets), offs)
    assert int(h.expert_offsets[-1]) == h.nrows and int(h.expert_counts.sum()) == h.nrows
    for i, (r, t, wt, row, _) in enumerate(want):
        assert h.src_rank[i] == r and h.src_token[i] == t, (i, h.src_rank[i], h.src_token[i], r, t)
        assert h.weights[i] == wt and (h.x[i] == row).all(), i
    # the experts: out = 2 x the row (f32), combined back
    out = (bf(np.asarray(h.x)) * np.float32(2)).astype(np.float32)
    y = h.combine(out)
    assert y.shape == (T, H) and y.dtype == np.float32
    ref = np.zeros((T, H), np.float32)
    for t in range(T):
        for j in range(K):
            if ids[t, j] >= 0:
                ref[t] += w[t, j] * 2 * bf(x[t])
    assert np.allclose(y, ref, rtol=1e-5, atol=1e-6), np.abs(y - ref).max()
    h.free()
    with __import__("pytest").raises(link.LinkError, match="freed"):
        h.combine(out)
    st = comm.status(timeout=10)
    assert [s["rank"] for s in st] == list(range(size)) and all(s["answered"] for s in st), st
    assert any(s["call"] == "moe_combine" or s["call"] for s in st)
    assert "rank" in comm.status_report(timeout=10)
    try:
        link.moe_dispatch(comm, x[:, :5].copy(), ids, w, num_experts=E, dtype="float16")
        raise SystemExit("bad dtype accepted")
    except link.LinkError as e:
        assert "bfloat16" in str(e), e
print("rank", rank, "ok")
"""


def _port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _run(tmp_path, n, mode, *extra, env=None):
    script = tmp_path / "moe_worker.py"
    script.write_text(_WORKER)
    port = _port()
    e = dict(os.environ)
    e.pop("TLINK_SECRET", None)
    e.update(env or {})
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(n), "127.0.0.1:%d" % port, PY, mode] + list(extra),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e) for r in range(n)]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    return procs, outs


def test_link_moe_three_ranks(tmp_path):
    pytest.importorskip("tile.link")
    procs, outs = _run(tmp_path, 3, "plain")
    assert all(p.returncode == 0 for p in procs), outs
    assert all("rank %d ok" % r in outs[r] for r in range(3)), outs


def test_link_moe_with_secret(tmp_path):
    from tile import link
    s = link.generate_secret()
    assert len(s) == 64 and s != link.generate_secret()
    procs, outs = _run(tmp_path, 2, "secret", s)
    assert all(p.returncode == 0 for p in procs), outs


def test_link_secret_errors():
    from tile import link
    with pytest.raises(link.LinkError, match="non-empty"):
        link.set_secret("")
    old = os.environ.get("TLINK_SECRET")
    link.set_secret("0123456789abcdef0123")
    assert os.environ["TLINK_SECRET"] == "0123456789abcdef0123"
    link.set_secret(None)
    assert "TLINK_SECRET" not in os.environ
    if old is not None:
        os.environ["TLINK_SECRET"] = old
