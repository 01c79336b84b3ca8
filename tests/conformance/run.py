#!/usr/bin/env python3
"""TileLang conformance programs (tests/conformance/programs/*.py, written for Tile in the
style of upstream TileLang programs) run through `tile run` on a target and compared with a
NumPy reference computed here.

    run.py --tile build/bin/tile --target cpu CASE     one case on one target
    run.py --list                                      the case names
    run.py --tile ... --target interp all              every case

A target that `tile devices` says is unavailable makes the case SKIP (exit 77). The cuda
target is covered in CI by NVRTC compiles (tests/conformance/CMakeLists.txt); on a GPU machine
`run.py --target cuda all` runs the same comparisons.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "programs")

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None


def rng(seed):
    return np.random.default_rng(seed)


def f32(shape, seed):
    return rng(seed).uniform(-1, 1, shape).astype(np.float32)


# ---------- references (float64) ----------
def ref_eager_gemm(a):
    return {"C": a["A"].astype(np.float64) @ a["B"] + a["bias"]}


def ref_factory_python(a):
    # scale: SCALES["half"] * len(widths >= 32) = 0.5 * 2; offsets (1, 2) sum to 3
    return {"Y": a["X"].astype(np.float64) * 1.0 + 3.0}


def ref_pipelined(a):
    s = a["A"].astype(np.float64).sum(axis=1)
    return {"S": s, "S2": 2 * s}


def ref_alloc_var(a, block=32):
    x = a["X"].astype(np.float64) * 3.0
    n = x.shape[0]
    y = np.zeros(n)
    nb = (n + block - 1) // block
    c = np.zeros(nb, np.int64)
    for b in range(nb):
        count = 0
        for i in range(block):
            g = b * block + i
            if g < n:
                if x[g] > 0:
                    count += 1
                y[g] = x[g] + 0.5 + count
        c[b] = count + 1
    return {"Y": y, "C": c}


def ref_reducer(a):
    x = a["A"].astype(np.float64)
    return {"S": x.sum(axis=0), "X": x.max(axis=0)}


def ref_splitk(a):
    return {"C": a["C"].astype(np.float64) + a["A"].astype(np.float64) @ a["B"]}


def ref_parallel_scope(a):
    t = a["X"].astype(np.float64) * 2.0 + 1.0
    return {"Y": t * t - t}


def ref_helpers(a):
    x = a["X"].astype(np.float64)
    return {"Y": np.clip(x, -0.5, 0.5), "Z": np.maximum(x, -1.0) + x}


def ref_module_code(a):
    return {"Y": a["Y"].astype(np.float64) + 2.0 * a["X"]}


def ref_driver_values(a):
    x = a["X"].astype(np.float64)
    return {"Y": x - x.sum(axis=1, keepdims=True) / 8}


def ref_test_gemm_relu(a):
    return {"C": np.maximum(a["A"].astype(np.float64) @ a["B"], 0.0)}


def ref_test_row_sums(a):
    return {"S": 2.0 * a["X"].astype(np.float64).sum(axis=1)}


def ref_simt_gemv(a):
    return {"C": a["B"].astype(np.float64) @ a["A"]}


def ref_simt_shuffle(a, threads=80):
    # one block at a time; lanes are the thread index mod 32; a source lane outside the
    # width segment or past the last thread gives the thread's own value
    x = a["X"].astype(np.float64)
    n = x.shape[0]
    out = {k: np.zeros(n) for k in "SDUB"}
    out["L"] = np.zeros(n, np.int32)

    def shfl(val, src_of):
        r = val.copy()
        for t in range(threads):
            src = src_of(t)
            if src is not None and 0 <= src < threads:
                r[t] = val[src]
        return r

    for b in range((n + threads - 1) // threads):
        g = b * threads + np.arange(threads)
        v = np.where(g < n, x[np.minimum(g, n - 1)], 0.0)
        s = v.copy()
        for m in range(5):
            s = s + shfl(s, lambda t: (t - t % 32) + ((t % 32) ^ (1 << m)))
        d = shfl(v, lambda t: t + 3 if t % 32 + 3 < 32 else None)
        u = shfl(v, lambda t: t - 2 if t % 16 - 2 >= 0 else None)
        bb = shfl(v, lambda t: t - t % 32 + 5) + shfl(v, lambda t: t - t % 32 + (t % 32 + 1) % 32)
        for t in range(threads):
            if g[t] < n:
                out["S"][g[t]], out["D"][g[t]], out["U"][g[t]], out["B"][g[t]] = s[t], d[t], u[t], bb[t]
                out["L"][g[t]] = (t // 32) * 100 + t % 32
    return out


def ref_simt_warp_reduce(a, threads=48):
    x, k = a["X"].astype(np.float64), a["K"]
    n = x.shape[0]
    out = {"S": np.zeros(n), "M": np.zeros(n), "O": np.zeros(n, np.int32)}
    for b in range((n + threads - 1) // threads):
        g = b * threads + np.arange(threads)
        xv = np.where(g < n, x[np.minimum(g, n - 1)], 0.0)
        kv = np.where(g < n, k[np.minimum(g, n - 1)], 0)
        for w in range(0, threads, 32):
            lanes = slice(w, min(w + 32, threads))
            s, m, o = xv[lanes].sum(), xv[lanes].max(), int(np.bitwise_or.reduce(kv[lanes]))
            for t in range(lanes.start, lanes.stop):
                if g[t] < n:
                    out["S"][g[t]], out["M"][g[t]], out["O"][g[t]] = s, m, o
    return out


def ref_scan(a, bm=16, bn=32):
    x = a["A"].astype(np.float64)
    m, n = x.shape
    b, cc = np.zeros_like(x), np.zeros_like(x)
    xs = np.zeros(((m + bm - 1) // bm, bn))
    for i0 in range(0, m, bm):
        for j0 in range(0, n, bn):
            t = np.zeros((bm, bn))
            blk = x[i0:i0 + bm, j0:j0 + bn]
            t[:blk.shape[0], :blk.shape[1]] = blk  # tile copies load zeros outside the tensor
            b[i0:i0 + bm, j0:j0 + bn] = np.cumsum(t, axis=0)[:blk.shape[0], :blk.shape[1]]
            cc[i0:i0 + bm, j0:j0 + bn] = np.cumsum(t[:, ::-1], axis=1)[:, ::-1][:blk.shape[0], :blk.shape[1]]
            if j0 == 0:
                r = np.maximum.accumulate(t[0])
                r[0] = -1.0
                xs[i0 // bm] = r
    return {"B": b, "C": cc, "X": xs}


def ref_simt_named_barrier(a, r=64):
    x = a["X"].astype(np.int64)
    n = x.shape[0]
    nb = (n + r - 1) // r
    p = np.zeros(n, np.int32)
    w = np.zeros(nb, np.int32)
    for b in range(nb):
        blk = np.zeros(r, np.int64)
        seg = x[b * r:(b + 1) * r]
        blk[:seg.shape[0]] = seg
        c = np.cumsum(blk)
        p[b * r:b * r + seg.shape[0]] = c[:seg.shape[0]]
        w[b] = blk[:32].sum()  # the first warp's elements, recovered from the prefix sums
    return {"P": p, "W": w}


def ref_atomic_prev(a):
    return {"B": a["B"].astype(np.float64) + a["A"], "Old": a["B"].astype(np.float64)}


def ref_atomic_slots(a, nblocks=3, threads=96):
    return {"Mark": np.ones((nblocks, threads), np.int32), "Count": np.full(nblocks, threads, np.int32)}


def ref_atomic_bits(a):
    x = a["A"].astype(np.int64)
    return {"Or": np.bitwise_or.reduce(x, axis=1) | a["Or"], "And": np.bitwise_and.reduce(x, axis=1) & a["And"],
            "Xor": np.bitwise_xor.reduce(x, axis=1) ^ a["Xor"], "Lo": np.bitwise_or.reduce(x & 0xFF, axis=1) | a["Lo"],
            "Neg": np.bitwise_and.reduce(x % 128 - 128, axis=1) & a["Neg"], "Prev": a["Prev"]}


def ref_tile_xor(a, bm=8, bn=16):
    x = a["A"]
    m, n = x.shape
    d = a["D"].copy()
    for i in range(0, m, bm):
        for j in range(0, n, bn):
            t = np.zeros((bm, bn), np.int32)
            blk = x[i:i + bm, j:j + bn]
            t[:blk.shape[0], :blk.shape[1]] = blk
            d ^= t
    return {"D": d}


def gen_atomic_bits(m, n, seed):
    r = rng(seed)
    return {"A": r.integers(-2**31, 2**31, (m, n), dtype=np.int64).astype(np.int32), "Or": r.integers(0, 16, m).astype(np.int32),
            "And": np.full(m, -1, np.int32), "Xor": r.integers(-2**31, 2**31, m, dtype=np.int64).astype(np.int32),
            "Lo": np.zeros(m, np.uint8), "Neg": np.full(m, -1, np.int8), "Prev": r.integers(-1000, 1000, (m, n)).astype(np.int32)}


def ref_ws_ring_gemm(a):
    c = a["A"].astype(np.float64) @ a["B"].astype(np.float64)
    return {"C": c, "D": 2 * c}


def ref_atomic_ls(a):
    # 2v + v in f32 (exact for f16 inputs), rounded once to the buffer's dtype
    x = a["A"]
    return {"B": (3 * x.astype(np.float64)).astype(x.dtype).astype(np.float64)}


def ref_atomic_flag(a, nblocks=3, threads=64):
    b = np.arange(nblocks)[:, None]
    t = np.arange(threads)[None, :]
    x = t * 2 - threads + b
    up = -(-x // 16) * 16 + -(-(threads + 1) // 32) * 32
    return {"Seen": np.broadcast_to(b * 10 + 3, (nblocks, threads)).astype(np.int32), "Up": up.astype(np.int32)}


def ref_reinterpret_var(a):
    x = a["X"]
    # bfloat16 round to nearest even from the f32 bits
    u = x.view(np.uint32).astype(np.uint64)
    bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).view(np.int16)
    return {"H": x.astype(np.float16).view(np.uint16), "B": bf}


def ref_simt_masked(a, bm=16):
    x = a["A"].astype(np.float64)
    rows = np.arange(x.shape[0])[:, None] // bm
    return {"B": x * 2.0 + rows}


def ref_py_division(a, block=48):
    n = a["X"].shape[0]
    nblk = math.ceil(n / block)
    c = np.array([[math.floor(-n / block) + b, math.trunc(-n / block), math.ceil((n + 5) / -block)] for b in range(nblk)], np.int32)
    return {"Y": a["X"].astype(np.float64) * (block / 64) + n / block - 3.5, "C": c}


def ref_vec_atomic(a):
    return {"S": a["S"].astype(np.float64) + a["A"].sum(axis=0, dtype=np.float64), "C": a["C"].astype(np.float64) + a["B"].sum(axis=0, dtype=np.float64)}


def ref_single_block(a):
    return {"S": np.array([a["A"].astype(np.float64).sum(), a["A"].shape[0]])}


def ref_region_scalar(a):
    h = a["H"].astype(np.float64).copy()
    h[0:4] += 6.0
    h[4:] += 2.0 * a["X"].astype(np.float64).sum()
    return {"H": h}


def ref_dtype_python(a):
    # 8 bits of storage (int8), 16 of float16, 1 for an "int" storage kind
    return {"Y": a["X"].astype(np.float64) * 8 + 16 + 1}


def ref_argparse_driver(a):
    # scale 0.25 and offset 2 from the module's parser; threads=128 picks block 64
    return {"Y": a["X"].astype(np.float64) * 0.25 + 2 + 64}


def ref_eager_int_param(a):
    return {"Y": a["X"].astype(np.float64) * math.gcd(80, 48)}


# name: (file, kernel, -D list, inputs, reference, integer outputs exact)

def ref_views(a, h=4):
    x = a["A"].astype(np.float64)
    n, gh = x.shape
    g = gh // h
    s3 = np.maximum(x.reshape(n, g, h), 0) * (np.arange(h) + 1)
    # F is s after the writes through its view s3
    return {"B": x.reshape(n * g, h), "S": s3.sum(axis=2), "F": s3.reshape(-1), "P": x.reshape(n, g, h)[:, :, h - 1]}


def ref_elements(a):
    x = a["X"].astype(np.float64)
    fin = np.isfinite(x)
    return {"Y": np.where(fin, x, 0.0), "F": fin.astype(np.int32), "L": x[1:2]}


def gen_elements(n, seed):
    x = f32((n,), seed)
    x[::7] = np.inf
    x[3::11] = -np.inf
    x[5::13] = np.nan
    return {"X": x}


def ref_simt_shared_sync(a, rounds=3, threads=64):
    x = a["X"].astype(np.float64)
    n = x.shape[0]
    nb = (n + threads - 1) // threads
    v = np.zeros(nb * threads)
    v[:n] = x
    v = v.reshape(nb, threads)
    for r in range(rounds):
        v = np.roll(v, -1, axis=1) * 2.0 + r
    return {"Y": v.reshape(-1)[:n]}


def shifted(x, dr, dc, pad):
    # out[r, c] = x[r + dr, c + dc], or pad where that is outside x
    m, n = x.shape
    out = np.full((m, n), pad, np.float64)
    r0, r1 = max(0, -dr), min(m, m - dr)
    c0, c1 = max(0, -dc), min(n, n - dc)
    if r0 < r1 and c0 < c1:
        out[r0:r1, c0:c1] = x[r0 + dr:r1 + dr, c0 + dc:c1 + dc]
    return out


def ref_safe_value(a, shift=5, pad=7.5):
    A, I, Z = a["A"].astype(np.float64), a["I"].astype(np.float64), a["Z"].astype(np.float64)
    return {"B": shifted(A, -shift, shift, pad), "C": shifted(A, shift, -shift, pad), "D": shifted(I, shift, 0, -3) + 1,
            "E": shifted(Z, -shift, shift, 0) + shifted(Z, shift, -shift, 0), "F": shifted(a["G"][1].astype(np.float64), -shift, shift, -2)}


def ref_safe_value_scoped(a, block=64):
    A = a["A"].astype(np.float64)
    pad = lambda v: shifted(np.pad(A, ((0, block - A.shape[0]), (0, block - A.shape[1])), constant_values=v), 0, 0, v)
    return {"Out": pad(-1), "In": pad(-99), "El": shifted(pad(5), 1, 0, 5)}


def gen_safe_value(m, n, seed):
    return {"A": f32((m, n), seed), "I": rng(seed + 1).integers(-100, 100, (m, n)).astype(np.int32), "Z": f32((m, n), seed + 2), "G": f32((2, m, n), seed + 3)}


def ref_any_all(a, block_M=16):
    x, mask = a["X"].astype(np.float64), a["Mask"]
    m, n = x.shape
    y = np.zeros((m, n))
    flags = np.zeros((m // block_M, 4), np.int64)
    for b in range(m // block_M):
        xs = x[b * block_M:(b + 1) * block_M]
        for k in range(n // 16):
            if mask[b, k, 1:].any():
                y[b * block_M:(b + 1) * block_M, k * 16:(k + 1) * 16] = xs[:, k * 16:(k + 1) * 16] * 2
            elif mask[b, k, 0]:
                y[b * block_M:(b + 1) * block_M, k * 16:(k + 1) * 16] = 1
            else:
                y[b * block_M:(b + 1) * block_M, k * 16:(k + 1) * 16] = -1
        pos = xs > -0.9
        flags[b] = [(xs > 0.99).any(), pos.all(), pos[1, :n // 2].all(), mask[b].any() + 2 * mask[b, :, 1].all()]
    return {"Y": y, "Flags": flags}


def gen_any_all(m, n, g, seed):
    x = f32((m, n), seed)
    mask = rng(seed + 1).uniform(0, 1, (m // 16, n // 16, g)) < 0.3
    mask[0, :, 1] = True  # one block where every mask of column 1 is set
    x[16:32, :] = np.abs(x[16:32, :])  # one block with no element <= -0.9
    return {"X": x, "Mask": mask}


def ref_spellings(a, op="max"):
    x = a["X"].astype(np.float64)
    y = max(a["Y"][0], x.max()) if op == "max" else a["Y"][0] + x.sum()
    return {"Y": np.array([y]), "Z": x * sum(k * 2 + u for k in range(1, 4) for u in range(2))}


def ref_simt_elect(a, group=64, threads=256):
    n = a["X"].shape[0]
    t = np.arange(n)
    return {"A": (t % group == 0) + 2 * (t % threads == 0), "L": a["X"][::group].astype(np.float64) * 2}


def ref_conv2d(a, S=1, D=1, P=1):
    x, w = a["img"].astype(np.float64), a["filt"].astype(np.float64)
    n, h, wd, c = x.shape
    k, f = w.shape[0], w.shape[3]
    oh, ow = (h + 2 * P - D * (k - 1) - 1) // S + 1, (wd + 2 * P - D * (k - 1) - 1) // S + 1
    xp = np.pad(x, ((0, 0), (P, P), (P, P), (0, 0)))
    out = np.zeros((n, oh, ow, f))
    for kh in range(k):
        for kw in range(k):
            patch = xp[:, kh * D:kh * D + (oh - 1) * S + 1:S, kw * D:kw * D + (ow - 1) * S + 1:S, :]
            out += patch @ w[kh, kw]
    return {"out": out.reshape(n * oh * ow, f)}


def ref_tc_gemm(a, block_K=32):
    A, B = a["A"].astype(np.float64), a["B"].astype(np.float64)
    K = A.shape[1]
    d = np.zeros((A.shape[0], B.shape[0]))
    for k in range(1, (K + block_K - 1) // block_K, 2):
        d += A[:, k * block_K:(k + 1) * block_K] @ B[:, k * block_K:(k + 1) * block_K].T
    return {"C": A @ B.T, "D": d}


def ref_simt_vote(a, threads=80):
    x = a["X"].astype(np.float64)
    n = x.shape[0]
    A, L, B = np.zeros(n, np.int64), np.ones(n, np.int64), np.zeros(n, np.int64)
    for b in range(n // threads):
        for w0 in range(0, threads, 32):
            lanes = range(b * threads + w0, b * threads + min(w0 + 32, threads))
            xs = x[list(lanes)]
            bal = sum(1 << k for k, v in enumerate(xs) if v > 0)
            for t in lanes:
                A[t] = int((xs > 0.9).any()) + 2 * int((xs > -0.95).all())
                B[t] = bal
    return {"A": A, "L": L, "B": B}


CASES = {
    "eager_gemm": ("eager_gemm.py", "gemm_bias", [], lambda: {"A": f32((70, 40), 1), "B": f32((40, 50), 2), "bias": f32((50,), 3)}, ref_eager_gemm),
    "factory_python": ("factory_python.py", "scaled", [], lambda: {"X": f32((1000,), 4)}, ref_factory_python),
    "pipelined_default": ("pipelined_default.py", "rowsum", ["M=40", "K=100"], lambda: {"A": f32((40, 100), 5)}, ref_pipelined),
    "alloc_var": ("alloc_var.py", "count_positive", ["N=100"], lambda: {"X": f32((100,), 6)}, ref_alloc_var),
    "reducer": ("reducer.py", "colstats", ["M=24", "N=40"], lambda: {"A": f32((24, 40), 7)}, ref_reducer),
    "splitk_atomic": ("splitk_atomic.py", "splitk", ["M=64", "N=40", "K=100"],
                      lambda: {"A": f32((64, 100), 8), "B": f32((100, 40), 9), "C": f32((64, 40), 10)}, ref_splitk),
    "parallel_scope": ("parallel_scope.py", "two_pass", ["M=5", "N=48"], lambda: {"X": f32((5, 48), 11)}, ref_parallel_scope),
    "helpers": ("helpers.py", "clamp_rows", [], lambda: {"X": f32((100, 50), 12)}, ref_helpers),
    "module_code": ("module_code.py", "axpy", [], lambda: {"X": f32((1000,), 13), "Y": f32((1000,), 14)}, ref_module_code),
    # sizes, dtype and tile sizes all from the file's driver (no -D)
    "driver_values": ("driver_values.py", "center_heads", [], lambda: {"X": f32((3, 6, 256), 15)}, ref_driver_values),
    # kernels defined and compiled inside test functions
    "test_gemm_relu": ("test_style.py", "test_gemm_relu", [], lambda: {"A": f32((64, 80), 16), "B": f32((80, 48), 17)}, ref_test_gemm_relu),
    # thread-level code: thread bindings, per-thread locals, T.sync_threads, warp shuffles
    "simt_gemv": ("simt_gemv.py", "gemv", ["N=70", "K=50"], lambda: {"A": f32((50,), 19), "B": f32((70, 50), 20)}, ref_simt_gemv),
    "simt_shuffle": ("simt_shuffle.py", "warp_ops", ["N=200"], lambda: {"X": f32((200,), 21)}, ref_simt_shuffle),
    "simt_warp_reduce": ("simt_warp_reduce.py", "warp_reduce", ["N=100"],
                         lambda: {"X": f32((100,), 22), "K": (1 << rng(23).integers(0, 30, 100)).astype(np.int32)}, ref_simt_warp_reduce),
    "scan": ("scan.py", "scans", ["M=40", "N=70"], lambda: {"A": f32((40, 70), 24)}, ref_scan),
    "simt_named_barrier": ("simt_named_barrier.py", "prefix", ["N=150"],
                           lambda: {"X": rng(25).integers(-50, 50, 150).astype(np.int32)}, ref_simt_named_barrier),
    "atomic_prev": ("atomic_prev.py", "add_prev", ["M=20", "N=40"], lambda: {"A": f32((20, 40), 26), "B": f32((20, 40), 27)}, ref_atomic_prev),
    "atomic_slots": ("atomic_prev.py", "slots", ["nblocks=3"], lambda: {}, ref_atomic_slots),
    "atomic_ls": ("atomic_ls.py", "scaled_copy", ["M=20", "N=40"], lambda: {"A": f32((20, 40), 42), "B": f32((20, 40), 43)}, ref_atomic_ls),
    "atomic_ls_f16": ("atomic_ls.py", "scaled_copy", ["M=12", "N=24", "dtype=float16"],
                      lambda: {"A": f32((12, 24), 44).astype(np.float16), "B": f32((12, 24), 45).astype(np.float16)}, ref_atomic_ls),
    "atomic_flag": ("atomic_ls.py", "flag", ["nblocks=3"], lambda: {}, ref_atomic_flag),
    "ws_ring_gemm": ("ws_barrier.py", "ring_gemm", ["M=70", "N=50", "K=40"],
                     lambda: {"A": f32((70, 40), 50).astype(np.float16), "B": f32((40, 50), 51).astype(np.float16)}, ref_ws_ring_gemm),
    "ws_ring_gemm_3": ("ws_barrier.py", "ring_gemm", ["M=64", "N=64", "K=100", "stages=3"],
                       lambda: {"A": f32((64, 100), 52).astype(np.float16), "B": f32((100, 64), 53).astype(np.float16)}, ref_ws_ring_gemm),
    # a string reference: the run must fail with this message at this line of the program
    "ws_consumer_first": ("ws_barrier.py", "consumer_first", ["N=64"], lambda: {"X": f32((64,), 54)},
                          "ws_barrier.py:56:19: error: assertion failed: T.barrier_wait: the phase waited for has not completed"),
    "atomic_bits": ("atomic_bits.py", "row_bits", ["M=6", "N=70"], lambda: gen_atomic_bits(6, 70, 47), ref_atomic_bits),
    "atomic_tile_xor": ("atomic_bits.py", "tile_xor", ["M=20", "N=40"],
                        lambda: {"A": rng(48).integers(-2**31, 2**31, (20, 40), dtype=np.int64).astype(np.int32),
                                 "D": rng(49).integers(-99, 99, (8, 16)).astype(np.int32)}, ref_tile_xor),
    "reinterpret_var": ("reinterpret_var.py", "keys", ["N=300"], lambda: {"X": (f32((300,), 28) * 100).astype(np.float32)}, ref_reinterpret_var),
    "simt_masked_tileop": ("simt_masked_tileop.py", "masked", ["M=40", "N=70"], lambda: {"A": f32((40, 70), 29)}, ref_simt_masked),
    # n bound from X's shape at run time: true division in f64 inside the kernel
    "py_division": ("py_division.py", "chunks", [], lambda: {"X": f32((1000,), 30)}, ref_py_division),
    "py_division_const": ("py_division.py", "chunks", ["n=100"], lambda: {"X": f32((100,), 31)}, ref_py_division),
    "vec_atomic": ("vec_atomic.py", "colsum_vec", ["M=20", "N=48"],
                   lambda: {"A": f32((20, 48), 32), "B": f32((20, 48), 33).astype(np.float16), "S": f32((1, 48), 34), "C": f32((48,), 35)}, ref_vec_atomic),
    "region_scalar": ("vec_atomic.py", "region_scalar", [], lambda: {"X": f32((3,), 37), "H": f32((6, 8), 38)}, ref_region_scalar),
    "dtype_python": ("dtype_python.py", "scaled", [], lambda: {"X": f32((300,), 39)}, ref_dtype_python),
    "argparse_driver": ("argparse_driver.py", "rows", [], lambda: {"X": f32((500,), 40)}, ref_argparse_driver),
    "eager_int_param": ("eager_int_param.py", "gcd_blocks", [], lambda: {"X": f32((5, 80), 41)}, ref_eager_int_param),
    "single_block": ("single_block.py", "total", [], lambda: {"A": f32((300,), 36)}, ref_single_block),
    # T.reshape / T.view of a global tensor, a fragment and a shared buffer
    "views": ("views.py", "views", ["N=128", "G=3"], lambda: {"A": f32((128, 12), 42)}, ref_views),
    # a ragged last block: view regions clip at the view's bounds like any region
    "views_ragged": ("views.py", "views", ["N=100", "G=3"], lambda: {"A": f32((100, 12), 44)}, ref_views),
    "views_h2": ("views.py", "views", ["N=192", "G=5", "H=2"], lambda: {"A": f32((192, 10), 43)}, lambda a: ref_views(a, 2)),
    "simt_shared_sync": ("simt_shared_sync.py", "rotate", ["N=150"], lambda: {"X": f32((150,), 46)}, ref_simt_shared_sync),
    "elements": ("elements.py", "elements", ["N=150"], lambda: gen_elements(150, 45), ref_elements),
    # T.annotate_safe_value: out-of-bounds reads of the annotated tensors give the value
    "safe_value": ("safe_value.py", "safe_value", ["M=96", "N=64"], lambda: gen_safe_value(96, 64, 60), ref_safe_value),
    "safe_value_ragged": ("safe_value.py", "safe_value", ["M=70", "N=45"], lambda: gen_safe_value(70, 45, 63), ref_safe_value),
    # T.any_of / T.all_of over regions, whole buffers and single elements
    "any_all": ("any_all.py", "any_all", ["M=64", "N=80", "G=3"], lambda: gen_any_all(64, 80, 3, 64), ref_any_all),
    # getattr(T, name), T.Serial, T.Unroll
    "spellings": ("spellings.py", "spellings", ["N=100"], lambda: {"X": f32((100,), 65), "Y": np.array([0.25], np.float32)}, ref_spellings),
    "spellings_add": ("spellings.py", "spellings", ["N=100", "op_name=atomic_add"], lambda: {"X": f32((100,), 66), "Y": np.array([0.25], np.float32)},
                      lambda a: ref_spellings(a, "add")),
    "safe_value_scoped": ("safe_value.py", "safe_value_scoped", ["M=60", "N=61"],
                          lambda: {"A": rng(67).integers(-1000, 1000, (60, 61)).astype(np.int32)}, ref_safe_value_scoped),
    "simt_elect": ("simt_elect.py", "elect", ["N=768"], lambda: {"X": f32((768,), 68)}, ref_simt_elect),
    "simt_elect_96": ("simt_elect.py", "elect", ["N=384", "group=96", "threads=192"], lambda: {"X": f32((384,), 69)},
                      lambda a: ref_simt_elect(a, 96, 192)),
    # T.im2col: stride 1 / pad 1, stride 2 / dilation 2 / pad 2 (ragged tiles of pixels and taps)
    "im2col": ("im2col.py", "conv2d", ["N=2", "H=9", "W=7", "C=5", "F=40", "K=3"],
               lambda: {"img": f32((2, 9, 7, 5), 70), "filt": f32((3, 3, 5, 40), 71)}, ref_conv2d),
    "im2col_strided": ("im2col.py", "conv2d", ["N=3", "H=11", "W=10", "C=4", "F=24", "K=3", "S=2", "D=2", "P=2"],
                       lambda: {"img": f32((3, 11, 10, 4), 72), "filt": f32((3, 3, 4, 24), 73)}, lambda a: ref_conv2d(a, 2, 2, 2)),
    # T.alloc_tmem, T.tcgen05_gemm(mbar=, clear_accum=<run time>), T.gemm(mbar=), T.tcgen05_mma_arrive
    "tcgen05": ("tcgen05.py", "tc_gemm", ["M=100", "N=72", "K=150"],
                lambda: {"A": f32((100, 150), 74).astype(np.float16), "B": f32((72, 150), 75).astype(np.float16)}, ref_tc_gemm),
    "wgmma_gemm": ("tcgen05.py", "wg_gemm", ["M=100", "N=72", "K=150"],
                   lambda: {"A": f32((100, 150), 76).astype(np.float16), "B": f32((72, 150), 77).astype(np.float16)},
                   lambda a: {"C": a["A"].astype(np.float64) @ a["B"].astype(np.float64).T}),
    # parameters from a module-level driver loop (its first iteration)
    "module_loop": ("module_loop.py", "cast_scale", [], lambda: {"X": f32((300,), 78).astype(np.float16)},
                    lambda a: {"Y": a["X"].astype(np.float64) * 2.5}),
    "simt_vote": ("simt_vote.py", "vote", ["N=480"], lambda: {"X": f32((480,), 79)}, ref_simt_vote),
    # T.pdl_sync / T.pdl_trigger: no-ops (kernels on a stream run one after the other)
    "pdl": ("pdl.py", "pdl_scale", ["N=300"], lambda: {"A": f32((300,), 80)}, lambda a: {"B": a["A"].astype(np.float64) * 2.0 + 1.0}),
    "test_row_sums": ("test_style.py", "test_row_sums__row_sums", ["M=40", "N=24"], lambda: {"X": f32((40, 24), 18)}, ref_test_row_sums),
}


def available(tile, target):
    if target == "interp":
        return True, ""
    out = subprocess.run([tile, "devices"], capture_output=True, text=True).stdout + ""
    for line in out.splitlines():
        if line.startswith(target + " "):
            return " available " in line, line
    return False, "no line for %s in `tile devices`" % target


def run_case(tile, target, name):
    file, kernel, defines, gen, ref = CASES[name]
    inputs = gen()
    want = ref if isinstance(ref, str) else ref(inputs)
    with tempfile.TemporaryDirectory() as d:
        cmd = [tile, "run", os.path.join(PROG, file), "-f", kernel, "--target", target, "--quiet"]
        for df in defines:
            cmd += ["-D", df]
        for k, v in inputs.items():
            p = os.path.join(d, "in_%s.npy" % k)
            np.save(p, v)
            cmd += ["--in", "%s=%s" % (k, p)]
        if isinstance(want, str):
            r = subprocess.run(cmd, capture_output=True, text=True)
            ok = r.returncode == 1 and want in r.stderr
            print("%s %s: %s" % (target, name, "fails as expected" if ok else "FAIL: expected exit 1 and '%s', got exit %d\n%s%s" % (want, r.returncode, r.stdout, r.stderr)))
            return ok
        for k in want:
            cmd += ["--out", "%s=%s" % (k, os.path.join(d, "out_%s.npy" % k))]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s on %s: tile run exited %d\n%s%s\n%s" % (name, target, r.returncode, r.stdout, r.stderr, " ".join(cmd)))
            return False
        ok = True
        for k, ref_v in want.items():
            got = np.load(os.path.join(d, "out_%s.npy" % k))
            ref_v = np.asarray(ref_v)
            if got.shape != ref_v.shape:
                print("FAIL %s on %s: %s has shape %s, expected %s" % (name, target, k, got.shape, ref_v.shape))
                ok = False
                continue
            if np.issubdtype(got.dtype, np.integer):
                bad = int((got != ref_v).sum())
                print("%s %s.%s: %d of %d elements differ (exact)" % (target, name, k, bad, got.size))
                ok &= bad == 0
            else:
                err = np.linalg.norm(got.astype(np.float64) - ref_v) / max(np.linalg.norm(ref_v), 1e-30)
                print("%s %s.%s: norm-wise relative error %.3g (tolerance 1e-5)" % (target, name, k, err))
                ok &= bool(err <= 1e-5)
        if not ok:
            print("FAIL %s on %s" % (name, target))
        return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile")
    ap.add_argument("--target", default="interp")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("case", nargs="?")
    a = ap.parse_args()
    if a.list:
        print("\n".join(CASES))
        return 0
    if np is None:
        print("SKIP: numpy is not installed")
        return 77
    ok, why = available(a.tile, a.target)
    if not ok:
        print("SKIP: target %s is not available here: %s" % (a.target, why))
        return 77
    names = list(CASES) if a.case in (None, "all") else [a.case]
    good = sum(run_case(a.tile, a.target, n) for n in names)
    print("%d passed, %d failed" % (good, len(names) - good))
    return 0 if good == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())
