#!/usr/bin/env python3
"""bench_ops.py — TileKernels on the CPU against NumPy and PyTorch, side by side in one run.

Memory-bound operators are timed as whole tile_op_* calls on host tensors (outputs
preallocated, so no call times an allocation; the first call, which compiles, is untimed)
and reported as GB/s of the bytes they must move (inputs read + outputs written), as a
fraction of this machine's copy bandwidth (NumPy's copyto of the same bytes, read + write),
and as ratios against NumPy's and PyTorch's CPU implementations of the operator (>1: Tile
is faster; PyTorch runs on the same memory through torch.from_numpy, with out= where it has
one, on its default thread count). GEMM is reported in GFLOP/s against NumPy's matmul (its
BLAS) and torch.matmul (oneDNN / MKL), f32 and bf16. Medians of --iters runs.

    python3 bench/ops/bench_ops.py --lib build/libtile.so [--n 4096] [--iters 7] [--out bench/results/ops-cpu.md]
"""
import argparse
import ctypes as C
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "ops"))
import conformance as cf  # noqa: E402  (the ctypes binding of tile_ops.h)

import ml_dtypes  # noqa: E402

try:
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
except ImportError:  # the NumPy columns still run
    torch = None


def as_torch(v):
    """A torch tensor on the same memory (bf16 through an int16 view)."""
    if v.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(v.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(v)


def timeit(fn, iters):
    fn()  # warm-up: compiles on first use
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def tile_call(name, *args):
    err = C.c_char_p()
    st = getattr(cf.LIB, name)(*args, C.byref(err))
    if st != 0:
        raise RuntimeError("%s: %s" % (name, err.value.decode() if err.value else st))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    cf.load(a.lib)
    n, it = a.n, a.iters
    tg = b"cpu"
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n), np.float32)
    y = rng.standard_normal((n, n), np.float32)
    o = np.empty_like(x)
    xb = x.astype(ml_dtypes.bfloat16)
    ob = np.empty_like(xb)
    w = rng.standard_normal(n, np.float32)
    wb = w.astype(ml_dtypes.bfloat16)
    rows = np.empty(n, np.float32)
    X, Y, O, XB, OB, W, WB, ROWS = (cf.tt(v) for v in (x, y, o, xb, ob, w, wb, rows))
    one = C.byref
    res = []
    t_copy = timeit(lambda: np.copyto(o, x), it)
    bw = 2 * x.nbytes / t_copy
    res.append(("memcpy (numpy copyto) f32", 2 * x.nbytes, None, t_copy, None))

    def np_rms(v, wt):
        v32 = v.astype(np.float32)
        return (v32 / np.sqrt((v32 * v32).mean(-1, keepdims=True) + 1e-6) * wt.astype(np.float32)).astype(v.dtype)

    def np_softmax(v):
        e = np.exp(v - v.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    cases = [
        ("copy f32", 2 * x.nbytes, lambda: tile_call("tile_op_copy", tg, one(X), one(O)), lambda: np.copyto(o, x)),
        ("add f32 (a + b)", 3 * x.nbytes, lambda: tile_call("tile_op_binary", tg, b"add", one(X), one(Y), one(O)), lambda: np.add(x, y, out=o)),
        ("add f32 row broadcast (a + w)", 2 * x.nbytes, lambda: tile_call("tile_op_binary", tg, b"add", one(X), one(W), one(O)),
         lambda: np.add(x, w, out=o)),
        ("mul f32 by scalar", 2 * x.nbytes, lambda: tile_call("tile_op_binary_scalar", tg, b"mul", one(X), cf.scalar(0.5), 0, one(O)),
         lambda: np.multiply(x, np.float32(0.5), out=o)),
        ("exp f32", 2 * x.nbytes, lambda: tile_call("tile_op_unary", tg, b"exp", one(X), one(O)), lambda: np.exp(x, out=o)),
        ("silu f32", 2 * x.nbytes, lambda: tile_call("tile_op_unary", tg, b"silu", one(X), one(O)), lambda: np.divide(x, 1 + np.exp(-x), out=o)),
        ("cast f32 -> bf16", x.nbytes + xb.nbytes, lambda: tile_call("tile_op_cast", tg, one(X), 10, one(OB)), lambda: np.copyto(ob, x, casting="unsafe")),
        ("transpose f32 2-D", 2 * x.nbytes, lambda: tile_call("tile_op_transpose", tg, one(X), 0, 1, one(O)), lambda: np.copyto(o, x.T)),
        ("sum f32 over the last dim", x.nbytes, lambda: tile_call("tile_op_reduce", tg, b"sum", one(X), cf.ip([1]), 1, 0, one(ROWS)),
         lambda: np.sum(x, -1, out=rows)),
        ("rms_norm f32", 2 * x.nbytes, lambda: tile_call("tile_op_rms_norm", tg, one(X), one(W), None, C.c_double(1e-6), one(O), None),
         lambda: np_rms(x, w)),
        ("rms_norm bf16", 2 * xb.nbytes, lambda: tile_call("tile_op_rms_norm", tg, one(XB), one(WB), None, C.c_double(1e-6), one(OB), None),
         lambda: np_rms(xb, wb)),
        ("softmax f32 (last dim)", 2 * x.nbytes, lambda: tile_call("tile_op_softmax", tg, one(X), -1, one(O)), lambda: np_softmax(x)),
    ]
    peers = {}
    if torch is not None:
        tx, ty, to, txb, tob, tw, twb, trows = (as_torch(v) for v in (x, y, o, xb, ob, w, wb, rows))
        peers = {
            "copy f32": lambda: to.copy_(tx),
            "add f32 (a + b)": lambda: torch.add(tx, ty, out=to),
            "add f32 row broadcast (a + w)": lambda: torch.add(tx, tw, out=to),
            "mul f32 by scalar": lambda: torch.mul(tx, 0.5, out=to),
            "exp f32": lambda: torch.exp(tx, out=to),
            "silu f32": lambda: to.copy_(F.silu(tx)),
            "cast f32 -> bf16": lambda: tob.copy_(tx),
            "transpose f32 2-D": lambda: to.copy_(tx.t()),
            "sum f32 over the last dim": lambda: torch.sum(tx, -1, out=trows),
            "rms_norm f32": lambda: F.rms_norm(tx, (n,), tw, 1e-6),
            "rms_norm bf16": lambda: F.rms_norm(txb, (n,), twb, 1e-6),
            "softmax f32 (last dim)": lambda: torch.softmax(tx, -1),
        }
    for name, nbytes, ft, fn_np in cases:
        tt = timeit(ft, it)
        tn = timeit(fn_np, it)
        tp = timeit(peers[name], it) if name in peers else None
        res.append((name, nbytes, tn, tt, tp))
    # GEMM f32 against NumPy's BLAS
    gemm_rows = []
    for dt in (np.float32, ml_dtypes.bfloat16):
        for m in (512, 1024, 2048):
            A = rng.standard_normal((m, m), np.float32).astype(dt)
            B = rng.standard_normal((m, m), np.float32).astype(dt)
            Cm = np.empty((m, m), dt)
            TA, TB, TC = cf.tt(A), cf.tt(B), cf.tt(Cm)
            gi = max(3, it // 2)
            tt = timeit(lambda: tile_call("tile_op_gemm", tg, one(TA), one(TB), None, None, one(TC)), gi)
            # NumPy has no bf16 BLAS: its column is f32 only
            tn = timeit(lambda: np.matmul(A, B, out=Cm), gi) if dt == np.float32 else None
            tp = None
            if torch is not None:
                tA, tB, tC = as_torch(A), as_torch(B), as_torch(Cm)
                tp = timeit(lambda: torch.matmul(tA, tB, out=tC), gi)
            gemm_rows.append(("f32" if dt == np.float32 else "bf16", m, 2 * m ** 3, tn, tt, tp))
    # report
    cpu = platform.processor() or "cpu"
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except Exception:
        pass
    la = os.getloadavg()
    cfg = np.show_config(mode="dicts") if hasattr(np, "show_config") else {}
    blas = ""
    try:
        blas = cfg["Build Dependencies"]["blas"]["name"]
    except Exception:
        pass
    lines = ["# TileKernels on the CPU against NumPy and PyTorch", "",
             "- date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
             "- machine: %s, %d CPUs available, load average %.1f / %.1f / %.1f at the end of the run" % (cpu, os.cpu_count(), *la),
             "- numpy %s (BLAS: %s); tile threads: the pool default (all CPUs)" % (np.__version__, blas or "?"),
             "- command: `python3 bench/ops/bench_ops.py --lib %s --n %d --iters %d`" % (a.lib, n, it),
             "- tensors [%d, %d]; times are medians of %d calls; GB/s counts the bytes the operator must move" % (n, n, it), "",
             "- torch %s, %d threads" % (torch.__version__, torch.get_num_threads()) if torch is not None else "- torch: not installed",
             "",
             "| operator | bytes | numpy ms | torch ms | tile ms | tile GB/s | of copy bandwidth | tile vs numpy | tile vs torch |",
             "|---|---|---|---|---|---|---|---|---|"]

    def ms(t):
        return "%.2f" % (t * 1e3) if t else "—"

    def ratio(peer, t):
        return "%.2fx" % (peer / t) if peer else "—"
    for name, nbytes, tn, tt, tp in res:
        gbs = nbytes / tt / 1e9
        lines.append("| %s | %.0f MB | %s | %s | %.2f | %.2f | %.2f | %s | %s |" % (
            name, nbytes / 1e6, ms(tn), ms(tp), tt * 1e3, gbs, nbytes / tt / bw, ratio(tn, tt), ratio(tp, tt)))
    lines += ["", "| GEMM M=N=K | dtype | numpy GFLOP/s | torch GFLOP/s | tile GFLOP/s | tile vs numpy | tile vs torch |",
              "|---|---|---|---|---|---|---|"]
    for dt, m, fl, tn, tt, tp in gemm_rows:
        lines.append("| %d | %s | %s | %s | %.1f | %s | %s |" % (
            m, dt, "%.1f" % (fl / tn / 1e9) if tn else "—", "%.1f" % (fl / tp / 1e9) if tp else "—", fl / tt / 1e9,
            ratio(tn, tt), ratio(tp, tt)))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
