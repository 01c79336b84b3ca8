#!/usr/bin/env python3
"""bench/robust/cpu.py — robustness of the cpu target: variants of the project's GEMM, softmax
and RMSNorm examples that should not matter (block sizes, thread count, stages, B layout,
dtype, an extra epilogue op, a scaled input, a residual add), timed against the best variant
of their family and dtype, and against a peer in the same rounds: NumPy's matmul (OpenBLAS)
for the f32 GEMMs, a two-thread memcpy of the same bytes for the row kernels.

    bench/robust/cpu.py [--lib build/libtile.so] [--examples examples] [--families gemm,softmax,rmsnorm]
                        [--gemm 2048] [--rows 2048x8192] [--rounds 3] [--label after] [--out FILE]

Every kernel runs through libtile's public API (include/tile.h, by ctypes), so the same
script measures any tree: `--lib` names its libtile.so and `--examples` its examples folder;
the variant programs written for this bench (bench/robust/cpu_*.tl) are read from this
script's folder. Each variant's output is checked against NumPy before it is timed. Timing:
`--rounds` rounds; in each round every variant (and the peer) runs `reps` times (at least 2,
about 0.4 s worth) in the same order, and the round's median is kept; the table gives the
median of the rounds and their spread (min-max). Bar (issue 19): every variant at >= 0.9 of
the best variant of its family and dtype.
"""
import argparse
import ctypes
import datetime
import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

DT = {"bool": 0, "float16": 9, "bfloat16": 10, "float32": 11, "float64": 12}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int), ("shape", ctypes.c_int64 * 8)]


def np_dtype(name):
    if name == "float16":
        return np.float16
    if name == "bfloat16":
        return ml_dtypes.bfloat16
    if name == "float32":
        return np.float32
    raise ValueError(name)


class Tile:
    def __init__(self, lib):
        self.L = ctypes.CDLL(lib)
        L = self.L
        L.tile_compile_file.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_char_p)]
        L.tile_module_kernel.restype = ctypes.c_void_p
        L.tile_module_kernel.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        L.tile_kernel_num_params.argtypes = [ctypes.c_void_p]
        L.tile_kernel_param_name.restype = ctypes.c_char_p
        L.tile_kernel_param_name.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.tile_run.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(Tensor), ctypes.c_int, ctypes.POINTER(Tensor), ctypes.c_int,
                               ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]

    def compile(self, path, defines):
        arr = (ctypes.c_char_p * len(defines))(*[d.encode() for d in defines])
        mod = ctypes.c_void_p()
        diag = ctypes.c_char_p()
        rc = self.L.tile_compile_file(path.encode(), arr, len(defines), ctypes.byref(mod), ctypes.byref(diag))
        if rc != 0:
            raise RuntimeError(f"{path} {defines}: {diag.value.decode() if diag.value else rc}")
        k = self.L.tile_module_kernel(mod, None)
        names = [self.L.tile_kernel_param_name(k, i).decode() for i in range(self.L.tile_kernel_num_params(k))]
        return k, names

    def run(self, k, arrays):
        ts = (Tensor * len(arrays))()
        for i, a in enumerate(arrays):
            ts[i].data = a.ctypes.data
            ts[i].dtype = DT[str(a.dtype)]
            ts[i].rank = a.ndim
            for d in range(a.ndim):
                ts[i].shape[d] = a.shape[d]
        err = ctypes.c_char_p()
        rc = self.L.tile_run(k, b"cpu", ts, len(arrays), None, 0, None, ctypes.byref(err))
        if rc != 0:
            raise RuntimeError(err.value.decode() if err.value else f"tile_run: {rc}")


# ---------------------------------------------------------------- the variants
def gemm_variants(ex):
    g = os.path.join(ex, "gemm.tl")
    e = os.path.join(HERE, "cpu_gemm_epilogue.tl")
    V = []
    for dt in ("float16", "bfloat16", "float32"):
        base = [f"dtype={dt}"]
        V += [
            (f"{dt} 64x64x32 s2 t128 (defaults)", g, base, dt),
            (f"{dt} 128x256x64 s3 t256", g, base + ["block_M=128", "block_N=256", "block_K=64", "num_stages=3", "threads=256"], dt),
        ]
        if dt == "float16":
            V += [
                (f"{dt} 128x256x64 s3 t128", g, base + ["block_M=128", "block_N=256", "block_K=64", "num_stages=3", "threads=128"], dt),
                (f"{dt} 128x256x64 s3 t384", g, base + ["block_M=128", "block_N=256", "block_K=64", "num_stages=3", "threads=384"], dt),
                (f"{dt} 128x256x64 s4 t256", g, base + ["block_M=128", "block_N=256", "block_K=64", "num_stages=4", "threads=256"], dt),
                (f"{dt} 128x128x32 s2 t128", g, base + ["block_M=128", "block_N=128", "block_K=32"], dt),
                (f"{dt} 32x32x16 s1 t128", g, base + ["block_M=32", "block_N=32", "block_K=16", "num_stages=1"], dt),
                (f"{dt} 64x64x32 B stored NxK", g, base + ["trans_B=True"], dt),
                (f"{dt} 64x64x32 out float16", g, base + ["out_dtype=float16"], dt),
                (f"{dt} 64x64x32 + bias, ReLU epilogue", e, base, dt),
                (f"{dt} 128x256x64 + bias, ReLU epilogue", e, base + ["block_M=128", "block_N=256", "block_K=64", "num_stages=3", "threads=256"], dt),
            ]
        if dt == "bfloat16":
            V += [(f"{dt} 64x64x32 B stored NxK", g, base + ["trans_B=True"], dt),
                  (f"{dt} 64x64x32 out bfloat16", g, base + ["out_dtype=bfloat16"], dt)]
        if dt == "float32":
            V += [(f"{dt} 64x64x32 + bias, ReLU epilogue", e, base, dt)]
    return V


def softmax_variants(ex):
    s = os.path.join(ex, "softmax.tl")
    sr = os.path.join(ex, "softmax_row.tl")
    sc = os.path.join(HERE, "cpu_softmax_scaled.tl")
    rs = os.path.join(HERE, "cpu_softmax_residual.tl")
    V = []
    for dt in ("float32", "bfloat16"):
        b = [f"dtype={dt}"]
        V += [(f"{dt} 8x64 t128 (defaults)", s, b, dt)]
        if dt == "float32":
            V += [
                (f"{dt} 1x64 t128", s, b + ["block_M=1"], dt),
                (f"{dt} 32x64 t128", s, b + ["block_M=32"], dt),
                (f"{dt} 8x256 t128", s, b + ["block_N=256"], dt),
                (f"{dt} 4x1024 t256", s, b + ["block_M=4", "block_N=1024", "threads=256"], dt),
                (f"{dt} 8x64 t384", s, b + ["threads=384"], dt),
                (f"{dt} whole row, 1 row a block (softmax_row)", sr, b + ["block_M=1"], dt),
                (f"{dt} whole row, 4 rows a block (softmax_row)", sr, b + ["block_M=4"], dt),
                (f"{dt} 8x64 input scaled by 0.5", sc, b, dt),
                (f"{dt} 8x64 + residual R", rs, b, dt),
            ]
    return V


def rmsnorm_variants(ex):
    r = os.path.join(ex, "rmsnorm.tl")
    rr = os.path.join(HERE, "cpu_rmsnorm_residual.tl")
    ra = os.path.join(HERE, "cpu_rmsnorm_affine.tl")
    V = []
    for dt in ("float32", "bfloat16"):
        b = [f"dtype={dt}"]
        V += [(f"{dt} 8 rows t128 (defaults)", r, b, dt)]
        if dt == "float32":
            V += [
                (f"{dt} 1 row t128", r, b + ["block_M=1"], dt),
                (f"{dt} 2 rows t256", r, b + ["block_M=2", "threads=256"], dt),
                (f"{dt} 8 rows t384", r, b + ["threads=384"], dt),
                (f"{dt} 8 rows + residual R", rr, b, dt),
                (f"{dt} 8 rows, scaled input and a bias", ra, b, dt),
            ]
    return V


# ---------------------------------------------------------------- inputs and references
def rand(shape, dt, rng):
    return rng.uniform(-1, 1, size=shape).astype(np.float32).astype(np_dtype(dt))


def setup(family, name, path, defines, dt, a, rng):
    """the arrays in parameter order, a checker, the bytes moved (rows) or flops (gemm)"""
    if family == "gemm":
        n = a.gemm
        tb = "trans_B=True" in defines
        out = "float32"
        for d in defines:
            if d.startswith("out_dtype="):
                out = d.split("=")[1]
        A = rand((n, n), dt, rng)
        B = rand((n, n), dt, rng)
        C = np.zeros((n, n), np_dtype(out))
        epi = path.endswith("cpu_gemm_epilogue.tl")
        arrs = [A, B] + ([rng.uniform(-1, 1, size=(n,)).astype(np.float32)] if epi else []) + [C]

        def check():
            a32, b32 = A.astype(np.float32), B.astype(np.float32)
            ref = a32 @ (b32.T if tb else b32)
            if epi:
                ref = np.maximum(ref + arrs[2][None, :], 0)
            got = C.astype(np.float32)
            err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
            tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}[out]
            if not err <= tol:
                raise RuntimeError(f"{name}: relative error {err:.3g} > {tol}")

        return arrs, check, 2.0 * n * n * n
    M, N = a.rows
    X = rand((M, N), dt, rng)
    Y = np.zeros((M, N), np_dtype(dt))
    if family == "softmax":
        resid = path.endswith("cpu_softmax_residual.tl")
        scaled = path.endswith("cpu_softmax_scaled.tl")
        R = rand((M, N), dt, rng) if resid else None
        arrs = [X] + ([R] if resid else []) + [Y]

        def check():
            x = X.astype(np.float32)
            if resid:
                x = x + R.astype(np.float32)
            if scaled:
                x = x * 0.5
            e = np.exp(x - x.max(axis=1, keepdims=True))
            ref = e / e.sum(axis=1, keepdims=True)
            err = np.linalg.norm(Y.astype(np.float32) - ref) / np.linalg.norm(ref)
            tol = 1e-5 if dt == "float32" else 1.6e-2
            if not err <= tol:
                raise RuntimeError(f"{name}: relative error {err:.3g} > {tol}")

        nbytes = X.nbytes * (3 if resid else 2)
        return arrs, check, nbytes
    resid = path.endswith("cpu_rmsnorm_residual.tl")
    affine = path.endswith("cpu_rmsnorm_affine.tl")
    W = rand((N,), dt, rng)
    R = rand((M, N), dt, rng) if resid else None
    Bi = rand((N,), dt, rng) if affine else None
    arrs = [X] + ([R] if resid else []) + [W] + ([Bi] if affine else []) + [Y]

    def check():
        x = X.astype(np.float32)
        if resid:
            x = x + R.astype(np.float32)
        if affine:
            x = x * 0.5
        ref = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * W.astype(np.float32)[None, :]
        if affine:
            ref = ref + Bi.astype(np.float32)[None, :]
        err = np.linalg.norm(Y.astype(np.float32) - ref) / np.linalg.norm(ref)
        tol = 1e-5 if dt == "float32" else 1.6e-2
        if not err <= tol:
            raise RuntimeError(f"{name}: relative error {err:.3g} > {tol}")

    return arrs, check, X.nbytes * (3 if resid else 2)


# ---------------------------------------------------------------- peers
libc = ctypes.CDLL(None)
libc.memmove.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]


def memcpy_threads(dst, src, nthreads):
    """dst[:] = src by nthreads threads (ctypes releases the GIL during memmove)"""
    n = src.nbytes
    step = (n // nthreads + 4095) // 4096 * 4096
    th = []
    for t in range(nthreads):
        a = t * step
        b = min(n, a + step)
        if b <= a:
            continue
        th.append(threading.Thread(target=libc.memmove, args=(dst.ctypes.data + a, src.ctypes.data + a, b - a)))
    for x in th:
        x.start()
    for x in th:
        x.join()


def timed(fn, budget=0.4, lo=2, hi=20):
    ts = []
    t_start = time.perf_counter()
    while len(ts) < lo or (len(ts) < hi and time.perf_counter() - t_start < budget):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libtile.so"))
    ap.add_argument("--examples", default=os.path.join(ROOT, "examples"))
    ap.add_argument("--families", default="gemm,softmax,rmsnorm")
    ap.add_argument("--gemm", type=int, default=2048, help="M = N = K of the GEMMs")
    ap.add_argument("--rows", default="2048x8192", help="M x N of the row kernels (f32 / bf16)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.4, help="seconds of runs per variant per round (at least 2 runs)")
    ap.add_argument("--only", default="", help="run only variants whose name contains this")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    a.rows = tuple(int(x) for x in a.rows.split("x"))
    T = Tile(a.lib)
    nthreads = int(os.environ.get("TILE_NUM_THREADS", os.cpu_count()))
    rng = np.random.default_rng(1)
    fams = [f for f in a.families.split(",") if f]
    jobs = []  # (family, name, dt, fn, work, kind)
    for fam in fams:
        V = {"gemm": gemm_variants, "softmax": softmax_variants, "rmsnorm": rmsnorm_variants}[fam](a.examples)
        if fam == "gemm":
            sz = [f"M={a.gemm}", f"N={a.gemm}", f"K={a.gemm}"]
        else:
            sz = [f"M={a.rows[0]}", f"N={a.rows[1]}"]
        for name, path, defs, dt in V:
            if a.only and a.only not in name:
                continue
            k, pnames = T.compile(path, sz + defs)
            arrs, check, work = setup(fam, name, path, defs, dt, a, rng)
            T.run(k, arrs)
            check()
            jobs.append((fam, name, dt, (lambda k=k, arrs=arrs: T.run(k, arrs)), work, "tile"))
            print(f"compiled and checked: {fam} {name}", file=sys.stderr)
        # the peers
        if fam == "gemm" and not a.only:
            n = a.gemm
            A = rand((n, n), "float32", rng)
            B = rand((n, n), "float32", rng)
            jobs.append((fam, "NumPy matmul f32 (OpenBLAS)", "peer", (lambda A=A, B=B: np.matmul(A, B)), 2.0 * n ** 3, "peer"))
        if fam != "gemm" and not any(j[0] != "gemm" and j[5] == "peer" for j in jobs) and not a.only:
            M, N = a.rows
            X = rand((M, N), "float32", rng)
            Y = np.empty_like(X)
            jobs.append(("rows", f"memcpy f32 {M}x{N}, {nthreads} threads", "peer", (lambda X=X, Y=Y: memcpy_threads(Y, X, nthreads)), 2 * X.nbytes, "peer"))
    samples = {i: [] for i in range(len(jobs))}
    load = [open("/proc/loadavg").read().split()[:3]]
    t_rounds = time.time()
    for r in range(a.rounds):
        order = list(range(len(jobs)))
        order = order[r % len(order):] + order[:r % len(order)]  # each round starts elsewhere
        for i in order:
            samples[i].append(timed(jobs[i][3], a.budget))
        el = time.time() - t_rounds
        print(f"round {r + 1}/{a.rounds} done ({len(jobs)} jobs): {el:.0f} s, ~{el / (r + 1) * (a.rounds - r - 1):.0f} s left",
              file=sys.stderr, flush=True)
    load.append(open("/proc/loadavg").read().split()[:3])
    # the table
    med = {i: float(np.median(samples[i])) for i in samples}
    rate = {}
    for i, (fam, name, dt, fn, work, kind) in enumerate(jobs):
        rate[i] = work / med[i]
    peer_gemm = [i for i, j in enumerate(jobs) if j[5] == "peer" and j[0] == "gemm"]
    peer_rows = [i for i, j in enumerate(jobs) if j[5] == "peer" and j[0] == "rows"]
    lines = []
    date = datetime.date.today().isoformat()
    commit = ""
    try:
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(a.lib)), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        pass
    cpu = ""
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lines.append(f"# Robustness of the cpu target{(' (' + a.label + ')') if a.label else ''}, {date}")
    lines.append("")
    lines.append(f"- Machine: {platform.node()}, {cpu}, {os.cpu_count()} CPUs, Tile's pool at {nthreads} threads")
    lines.append(f"- Library: `{a.lib}`{(' (git ' + commit + ')') if commit else ''}; examples from `{a.examples}`")
    lines.append(f"- Command: `bench/robust/cpu.py {' '.join(sys.argv[1:])}`")
    lines.append(f"- GEMMs {a.gemm}^3 (GFLOP/s); rows {a.rows[0]}x{a.rows[1]} (GB/s: inputs read once + output written once)")
    lines.append(f"- {a.rounds} rounds, each variant median of >= 2 runs (~{a.budget} s) per round; load average before {' '.join(load[0])}, after {' '.join(load[1])}")
    lines.append("- `vs best`: against the fastest variant of the same family and dtype (bar: >= 0.90); `vs peer`: NumPy matmul (f32 GEMMs), "
                 "the memcpy (rows)")
    for fam in fams:
        idx = [i for i, j in enumerate(jobs) if j[0] == fam and j[5] == "tile"]
        if not idx:
            continue
        unit = "GFLOP/s" if fam == "gemm" else "GB/s"
        scale = 1e-9
        lines.append("")
        lines.append(f"## {fam}")
        lines.append("")
        lines.append(f"| variant | ms (median) | spread ms | {unit} | vs best | vs peer | bar |")
        lines.append("|---|---:|---:|---:|---:|---:|:---:|")
        best = {}
        for i in idx:
            best[jobs[i][2]] = max(best.get(jobs[i][2], 0), rate[i])
        for i in idx:
            fam_, name, dt, fn, work, kind = jobs[i]
            rb = rate[i] / best[dt]
            if fam == "gemm":
                peer = f"{rate[i] / rate[peer_gemm[0]]:.2f}" if peer_gemm and dt == "float32" else ""
            else:
                peer = f"{rate[i] / rate[peer_rows[0]]:.2f}" if peer_rows else ""
            sp = f"{min(samples[i]) * 1e3:.2f}-{max(samples[i]) * 1e3:.2f}"
            lines.append(f"| {name} | {med[i] * 1e3:.2f} | {sp} | {rate[i] * scale:.1f} | {rb:.2f} | {peer} | {'ok' if rb >= 0.9 else '**no**'} |")
        peers = peer_gemm if fam == "gemm" else peer_rows
        for i in peers:
            lines.append(f"| peer: {jobs[i][1]} | {med[i] * 1e3:.2f} | {min(samples[i]) * 1e3:.2f}-{max(samples[i]) * 1e3:.2f} | {rate[i] * scale:.1f} | | 1.00 | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
