#!/usr/bin/env python3
"""bench/tilelang/same_source.py — the same TileLang source through Tile and through TileLang.

For the GPU machine (issue 19's "same source, two compilers"). TileLang's own programs are
read at run time from a copy of its repository (never from this one): --src names a tree
with its `benchmark/compile_speed/kernel_zoo.py` and `examples/` (e.g. made with
`git --git-dir=<mirror> archive HEAD benchmark/compile_speed examples | tar x -C DIR`).
Each program is compiled by both compilers from the same file and factory with the same
arguments, run on the same random torch CUDA tensors, checked against each other and
against the file's own reference (its `ref_program`) or a torch one, then timed the same
way: CUDA events around each call, L2 flushed (a 256 MiB write) before each, median of
--iters calls, in two interleaved rounds (Tile, TileLang, TileLang, Tile), the better
round of each kept.

Compile time is cold for both: Tile with an empty TILE_CACHE_DIR, TileLang with its cache
disabled and an empty TILELANG_CACHE_DIR; it runs from the compile call to the end of the
first call (both compilers may defer work to the first call). One warm-up compile per
compiler before any measured one keeps process start-up out of the figures.

    python3 bench/tilelang/same_source.py --src DIR [--only zoo,gemm,autotune,mha,gqa,fp8,fp4]
        [--iters 20] [--limit N] [--match REGEX] [--jobs N] [--out FILE]

--jobs N compiles every case of a family first in N threads (for the 48-configuration sweep,
where the compile times are not the point) and leaves the compile columns empty.

Programs: the 42 kernels of kernel_zoo.py (its build_zoo() sweep at scale 1, salt 0),
examples/gemm/example_gemm.py (1024^3 and 4096^3 at its main's tile), a 48-configuration
slice of example_gemm_autotune.py's space at 4096^3 (block_M 64/128 x block_N 128/256 x
block_K 32/64 x stages 0/2/3 x threads 128/256, rasterisation on), example_mha_fwd_bshd.py
at its main's configuration (8x32x4096x128, causal and not), example_gqa_fwd_bshd.py at its
main's (1x64x4096x128, 16 groups, causal and not) and 1x32x8192x128, the fp8 GEMM example
(e4m3 and e5m2, 4096^3) and the fp4-dequantising GEMM (4096^3, its regression config).
"""
import argparse
import datetime
import importlib.util
import math
import os
import re
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

WORK = tempfile.mkdtemp(prefix="same_source_")
os.environ["TILE_CACHE_DIR"] = os.path.join(WORK, "tile-cache")
os.environ["TILELANG_CACHE_DIR"] = os.path.join(WORK, "tilelang-cache")

import torch  # noqa: E402

import tile  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_module(path):
    spec = importlib.util.spec_from_file_location("tl_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    return mod


def cuda_time(fn, iters):
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(3):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in ev:
        flush.zero_()
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev) * 1e-3


def rel_err(x, ref):
    x, ref = x.double(), ref.double()
    d = (ref.norm()).item()
    return (x - ref).norm().item() / (d if d > 0 else 1.0)


def randn(shape, dt):
    return torch.randn(*shape, device="cuda", dtype=torch.float16).to(dt) if dt.itemsize == 1 and dt.is_floating_point \
        else torch.randn(*shape, device="cuda", dtype=dt)


# ---------------------------------------------------------------------------------------------
# Cases: each gives the file, the factory, its arguments (by name: both compilers take them),
# how TileLang is asked for a kernel, the inputs, which outputs the call returns or fills, a
# reference, and the work (flops, or bytes moved).

class Case:
    def __init__(self, family, name, path, factory, kwargs, inputs, outs, ref, work, unit, tl_style, tol=2e-2):
        self.family, self.name, self.path, self.factory = family, name, path, factory
        self.kwargs, self.inputs, self.outs, self.ref = kwargs, inputs, outs, ref
        self.work, self.unit, self.tl_style, self.tol = work, unit, tl_style, tol


F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32


def zoo_cases(src):
    path = os.path.join(src, "benchmark", "compile_speed", "kernel_zoo.py")
    C = []
    # the sweep of build_zoo(scale=1, salt=0)
    m = 256
    dims = [(2048, 5632), (3584, 18944), (4096, 14336), (5120, 13824)]
    heads = [(32, 8, 128), (28, 4, 128), (40, 8, 128)]
    for hidden, inter in dims:
        for bm, bn, bk in [(64, 64, 32), (128, 128, 32), (128, 64, 64)]:
            for nm, N in (("qkv_%d" % hidden, hidden), ("up_%dx%d" % (hidden, inter), inter)):
                K = hidden

                def mk(M=m, N=N, K=K):
                    return [randn((M, K), F16), randn((K, N), F16), torch.empty(M, N, device="cuda", dtype=F16)]
                C.append(Case("zoo gemm", "gemm_%s_%dx%dx%d_%d" % (nm, bm, bn, bk, m), path, "gemm",
                              dict(M=m, N=N, K=K, block_M=bm, block_N=bn, block_K=bk), mk, [2],
                              lambda a: [a[0].float() @ a[1].float()], 2.0 * m * N * K, "TFLOP/s", "prim"))
    for h, kvh, hd in heads:
        for bm in (64, 128):
            def mk(h=h, kvh=kvh, hd=hd):
                return [randn((1, m, h, hd), F16), randn((1, m, kvh, hd), F16), randn((1, m, kvh, hd), F16),
                        torch.empty(1, m, h, hd, device="cuda", dtype=F16)]

            def ref(a, h=h, kvh=kvh):
                q, k, v = (t.float().transpose(1, 2) for t in a[:3])
                k = k.repeat_interleave(h // kvh, dim=1)
                v = v.repeat_interleave(h // kvh, dim=1)
                return [torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2)]
            C.append(Case("zoo gqa", "gqa_%dx%dx%d_bm%d_%d" % (h, kvh, hd, bm, m), path, "gqa_attention",
                          dict(batch=1, heads=h, kv_heads=kvh, seq_len=m, dim=hd, block_M=bm, block_N=64), mk, [3], ref,
                          4.0 * h * m * m * hd, "TFLOP/s", "prim"))
    for hidden, inter in dims:
        def mk2(N=hidden):
            return [randn((m, N), F32), torch.empty(m, N, device="cuda", dtype=F32)]

        def rms_ref(a):
            x = a[0]
            return [x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + 1e-6)]
        C.append(Case("zoo rmsnorm", "rmsnorm_%d_%d" % (hidden, m), path, "rms_norm", dict(M=m, N=hidden, block_M=32),
                      mk2, [1], rms_ref, 8.0 * m * hidden, "GB/s", "prim", tol=1e-4))

        def mk3(N=inter):
            return [randn((m, N), F16), randn((m, N), F16), torch.empty(m, N, device="cuda", dtype=F16)]
        C.append(Case("zoo silu", "silu_%d_%d" % (inter, m), path, "silu_gate", dict(M=m, N=inter, block_M=32, block_N=64),
                      mk3, [2], lambda a: [torch.nn.functional.silu(a[0].float()) * a[1].float()], 6.0 * m * inter,
                      "GB/s", "prim", tol=5e-3))
        C.append(Case("zoo softmax", "softmax_%d_%d" % (hidden, m), path, "softmax", dict(M=m, N=hidden, block_M=32),
                      mk2, [1], lambda a: [torch.softmax(a[0], dim=1)], 8.0 * m * hidden, "GB/s", "prim", tol=1e-4))
    return C


def warm_case(src):
    """zoo's silu_gate at a size no case has: the warm-up compile."""
    path = os.path.join(src, "benchmark", "compile_speed", "kernel_zoo.py")
    M, N = 96, 320
    return Case("warm-up", "silu_gate 96x320", path, "silu_gate", dict(M=M, N=N, block_M=32, block_N=64),
                lambda: [randn((M, N), F16), randn((M, N), F16), torch.empty(M, N, device="cuda", dtype=F16)], [2],
                lambda a: [torch.nn.functional.silu(a[0].float()) * a[1].float()], 6.0 * M * N, "GB/s", "prim", tol=5e-3)


def gemm_cases(src):
    path = os.path.join(src, "examples", "gemm", "example_gemm.py")
    C = []
    for n in (1024, 4096):
        C.append(Case("example_gemm", "matmul %d^3 128x128x32" % n, path, "matmul",
                      dict(M=n, N=n, K=n, block_M=128, block_N=128, block_K=32),
                      lambda n=n: [randn((n, n), F16), randn((n, n), F16)], "ret",
                      lambda a: [a[0].float() @ a[1].float()], 2.0 * n ** 3, "TFLOP/s", "eager"))
    return C


def autotune_cases(src):
    path = os.path.join(src, "examples", "gemm", "example_gemm_autotune.py")
    n = 4096
    C = []
    for bm in (64, 128):
        for bn in (128, 256):
            for bk in (32, 64):
                for st in (0, 2, 3):
                    for th in (128, 256):
                        C.append(Case("autotune", "%dx%dx%d s%d t%d" % (bm, bn, bk, st, th), path, "matmul",
                                      dict(M=n, N=n, K=n, block_M=bm, block_N=bn, block_K=bk, num_stages=st, thread_num=th,
                                           enable_rasteration=True),
                                      lambda: [randn((n, n), F16), randn((n, n), F16)], "ret",
                                      lambda a: [a[0].float() @ a[1].float().T], 2.0 * n ** 3, "TFLOP/s", "jit"))
    return C


def mha_cases(src):
    path = os.path.join(src, "examples", "flash_attention", "example_mha_fwd_bshd.py")
    C = []
    b, h, s, d = 8, 32, 4096, 128
    for causal in (False, True):
        C.append(Case("mha fwd", "%dx%dx%dx%d%s 128x128 t128" % (b, h, s, d, " causal" if causal else ""), path, "flashattn",
                      dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=causal, block_M=128, block_N=128, num_stages=1,
                           threads=128),
                      lambda: [randn((b, s, h, d), F16) for _ in range(3)], "ret", ("mod_ref", causal, None),
                      4.0 * b * h * s * s * d * (0.5 if causal else 1.0), "TFLOP/s", "jit"))
    return C


def gqa_cases(src):
    path = os.path.join(src, "examples", "flash_attention", "example_gqa_fwd_bshd.py")
    C = []
    for (b, h, s, d, g) in ((1, 64, 4096, 128, 16), (1, 32, 8192, 128, 8)):
        for causal in (False, True):
            C.append(Case("gqa fwd", "%dx%dx%dx%d g%d%s 64x64 s2 t128" % (b, h, s, d, g, " causal" if causal else ""), path,
                          "flashattn",
                          dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=causal, groups=g, block_M=64, block_N=64,
                               num_stages=2, threads=128),
                          lambda b=b, h=h, s=s, d=d, g=g: [randn((b, s, h, d), F16), randn((b, s, h // g, d), F16),
                                                           randn((b, s, h // g, d), F16)],
                          "ret", ("mod_ref", causal, g), 4.0 * b * h * s * s * d * (0.5 if causal else 1.0), "TFLOP/s",
                          "jit"))
    return C


def fp8_cases(src):
    path = os.path.join(src, "examples", "gemm_fp8", "example_tilelang_gemm_fp8.py")
    n = 4096
    C = []
    for name, dt in (("float8_e4m3fn", torch.float8_e4m3fn), ("float8_e5m2", torch.float8_e5m2)):
        C.append(Case("fp8 gemm", "%s %d^3 128x128x64" % (name, n), path, "matmul",
                      dict(M=n, N=n, K=n, block_M=128, block_N=128, block_K=64, dtype=name),
                      lambda dt=dt: [randn((n, n), dt), randn((n, n), dt)], "ret",
                      lambda a: [a[0].float() @ a[1].float().T], 2.0 * n ** 3, "TFLOP/s", "eager", tol=0.15))
    return C


def fp4_cases(src):
    path = os.path.join(src, "examples", "dequantize_gemm", "example_dequant_gemm_fp4_hopper.py")
    n = 4096
    return [Case("fp4 dequant gemm", "f16 x fp4 %d^3 128x128x128 s2 t256" % n, path, "matmul",
                 dict(M=n, N=n, K=n, in_dtype="float16", out_dtype="float16", accum_dtype="float32", num_bits=4,
                      block_M=128, block_N=128, block_K=128, num_stages=2, threads=256, split=1),
                 lambda: [randn((n, n), F16), torch.randint(0, 256, (n, n // 2), device="cuda", dtype=torch.uint8)],
                 "ret", ("mod_ref2",), 2.0 * n ** 3, "TFLOP/s", "jit")]


FAMILIES = dict(zoo=zoo_cases, gemm=gemm_cases, autotune=autotune_cases, mha=mha_cases, gqa=gqa_cases, fp8=fp8_cases,
                fp4=fp4_cases)


# ---------------------------------------------------------------------------------------------

def tl_kernel(tilelang, mod, c):
    f = getattr(mod, c.factory)
    if c.tl_style == "prim":
        return tilelang.compile(f(**c.kwargs), target="cuda")
    if c.tl_style == "eager":  # as the examples' own main() does: bind the sizes, then call on tensors
        return f.compile(**c.kwargs)
    return f(**c.kwargs)


def tl_call(kern, c, args):
    return kern(*args)


def outputs(c, args, ret):
    if c.outs == "ret":
        return list(ret) if isinstance(ret, (list, tuple)) else [ret]
    return [args[i] for i in c.outs]


def reference(c, mod, args):
    if isinstance(c.ref, tuple):
        if c.ref[0] == "mod_ref":
            _, causal, g = c.ref
            r = mod.ref_program(*args[:3], causal) if g is None else mod.ref_program(*args[:3], causal, g)
            return [r]
        if c.ref[0] == "mod_ref2":
            return [mod.ref_program(*args)]
    return c.ref(args)


def precompile(cases, tilelang, mods, jobs):
    """Both compilers' kernels for every case, compiled in a pool of `jobs` threads (nvcc and
    NVRTC run outside the GIL): {(case index, "tile"|"tl"): kernel or the exception}."""
    import concurrent.futures as cf
    for c in cases:
        if c.path not in mods:
            mods[c.path] = load_module(c.path)

    def one(i, who):
        c = cases[i]
        try:
            if who == "tile":
                return tile.compile(c.path, func=c.factory, target="cuda", **c.kwargs)
            return tl_kernel(tilelang, mods[c.path], c)
        except Exception as e:
            return e
    with cf.ThreadPoolExecutor(jobs) as ex:
        futs = {(i, w): ex.submit(one, i, w) for i in range(len(cases)) for w in ("tile", "tl")}
        return {k: f.result() for k, f in futs.items()}


def run_case(c, tilelang, mods, iters, log, pre=None):
    """pre: (Tile kernel, TileLang kernel) compiled beforehand (then no compile times)."""
    row = dict(family=c.family, name=c.name)
    mod = mods.get(c.path)
    if mod is None:
        mod = mods[c.path] = load_module(c.path)
    args = c.inputs()
    # Tile: compile + first call, cold
    try:
        t0 = time.perf_counter()
        tk = pre[0] if pre else tile.compile(c.path, func=c.factory, target="cuda", **c.kwargs)
        if isinstance(tk, Exception):
            raise tk
        tile_args = [a.clone() for a in args]
        tret = tk(*tile_args)
        torch.cuda.synchronize()
        if not pre:
            row["tile_compile"] = time.perf_counter() - t0
        tout = outputs(c, tile_args, tret)
    except Exception as e:  # a failure is a result: record its first line
        row["tile_error"] = str(e).strip().split("\n")[0][:160]
        tk = None
    try:
        t0 = time.perf_counter()
        lk = pre[1] if pre else tl_kernel(tilelang, mod, c)
        if isinstance(lk, Exception):
            raise lk
        tl_args = [a.clone() for a in args]
        lret = tl_call(lk, c, tl_args)
        torch.cuda.synchronize()
        if not pre:
            row["tl_compile"] = time.perf_counter() - t0
        lout = outputs(c, tl_args, lret)
    except Exception as e:
        row["tl_error"] = str(e).strip().split("\n")[0][:160]
        lk = None
    try:
        ref = reference(c, mod, args)
    except Exception as e:
        ref = None
        row["ref_error"] = str(e)[:120]
    if ref is not None:
        if tk is not None:
            row["tile_err"] = max(rel_err(o, r) for o, r in zip(tout, ref))
        if lk is not None:
            row["tl_err"] = max(rel_err(o, r) for o, r in zip(lout, ref))
    if tk is not None and row.get("tile_err", 0) > c.tol:
        row["tile_error"] = "wrong result: relative error %.3g > %g" % (row["tile_err"], c.tol)
        tk = None
    if lk is not None and row.get("tl_err", 0) > c.tol:
        row["tl_error"] = "wrong result: relative error %.3g > %g" % (row["tl_err"], c.tol)
        lk = None
    tt, lt = [], []
    for rnd in range(2):
        order = ("tile", "tl") if rnd == 0 else ("tl", "tile")
        for who in order:
            if who == "tile" and tk is not None:
                tt.append(cuda_time(lambda: tk(*tile_args), iters))
            if who == "tl" and lk is not None:
                lt.append(cuda_time(lambda: tl_call(lk, c, tl_args), iters))
    if tt:
        row["tile_s"] = min(tt)
    if lt:
        row["tl_s"] = min(lt)
    row["work"], row["unit"] = c.work, c.unit
    log(row)
    return row


def fmt_rate(row, key):
    if key not in row:
        return "—"
    r = row["work"] / row[key]
    return "%.1f" % (r * 1e-12 if row["unit"] == "TFLOP/s" else r * 1e-9)


def fmt_row(r):
    ratio = "%.2f" % (r["tl_s"] / r["tile_s"]) if "tl_s" in r and "tile_s" in r else "—"
    cratio = "%.1f" % (r["tl_compile"] / r["tile_compile"]) if "tl_compile" in r and "tile_compile" in r else "—"
    note = "; ".join(x for x in (("Tile: " + r["tile_error"]) if "tile_error" in r else "",
                                 ("TileLang: " + r["tl_error"]) if "tl_error" in r else "") if x)
    return "| %s | %s | %s | %s | %s | %s %s | %s | %s | %s | %s |" % (
        r["family"], r["name"], "%.2f" % r["tile_compile"] if "tile_compile" in r else "—",
        "%.2f" % r["tl_compile"] if "tl_compile" in r else "—", cratio, fmt_rate(r, "tile_s"), r["unit"],
        fmt_rate(r, "tl_s"), ratio, "%.1e / %.1e" % (r.get("tile_err", float("nan")), r.get("tl_err", float("nan"))), note)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="a copy of TileLang's repository (benchmark/ and examples/)")
    ap.add_argument("--only", default=",".join(FAMILIES), help="families: " + ",".join(FAMILIES))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--limit", type=int, default=0, help="at most this many cases per family (0: all)")
    ap.add_argument("--match", default=None, help="only the cases whose 'family name' matches this regular expression")
    ap.add_argument("--jobs", type=int, default=1,
                    help="compile every case first in this many threads (no compile times then)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import tilelang
    tilelang.disable_cache()
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    # warm-up compiles: process start-up, NVRTC/nvcc first loads; a program of its own, not one
    # of the measured cases (whose compile would then be a cache hit)
    mods = {}
    warm = warm_case(a.src)
    try:
        run_case(warm, tilelang, mods, 3, lambda r: None)
    except Exception:
        traceback.print_exc()
    rows = []
    for fam in a.only.split(","):
        cases = FAMILIES[fam](a.src)
        if a.match:
            cases = [c for c in cases if re.search(a.match, c.family + " " + c.name)]
        if a.limit:
            cases = cases[:a.limit]
        pre = precompile(cases, tilelang, mods, a.jobs) if a.jobs > 1 else None
        for i, c in enumerate(cases):
            try:
                r = run_case(c, tilelang, mods, a.iters, lambda r: None,
                             (pre[(i, "tile")], pre[(i, "tl")]) if pre else None)
            except Exception as e:
                r = dict(family=c.family, name=c.name, tile_error="bench: %s" % e, work=c.work, unit=c.unit)
            rows.append(r)
            print("[%s %d/%d] %s" % (fam, i + 1, len(cases), fmt_row(r)), flush=True)
    head = ["# Same TileLang source through Tile and TileLang %s, %s UTC" % (tilelang.__version__,
                                                                          datetime.datetime.now(datetime.timezone.utc).strftime(
                                                                              "%Y-%m-%d %H:%M")), "",
            "Machine: %s, %s; torch %s; Tile %s. Command: `%s`" % (
                torch.cuda.get_device_name(), platform.node(), torch.__version__, commit, " ".join(sys.argv)), "",
            "Compile: cold, seconds from the compile call to the end of the first call (— with --jobs: "
            "compiled beforehand in parallel). Run: CUDA events, L2 flushed, "
            "median of %d, better of two interleaved rounds. ratio = TileLang time / Tile time (> 1: Tile faster). "
            "err = relative L2 error against the file's reference (Tile / TileLang)." % a.iters, "",
            "| family | program | Tile compile s | TileLang compile s | compile ratio | Tile | TileLang | ratio | err | "
            "note |", "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    body = [fmt_row(r) for r in rows]
    summ = ["", "## Summary", "", "| family | programs | Tile ok | TileLang ok | run ratio median (min..max) | "
            "compile ratio median |", "|---|---:|---:|---:|---|---:|"]
    fams = []
    for r in rows:
        if r["family"] not in fams:
            fams.append(r["family"])
    for f in fams:
        rs = [r for r in rows if r["family"] == f]
        ok_t = sum(1 for r in rs if "tile_s" in r)
        ok_l = sum(1 for r in rs if "tl_s" in r)
        rat = [r["tl_s"] / r["tile_s"] for r in rs if "tl_s" in r and "tile_s" in r]
        crat = [r["tl_compile"] / r["tile_compile"] for r in rs if "tl_compile" in r and "tile_compile" in r]
        summ.append("| %s | %d | %d | %d | %s | %s |" % (
            f, len(rs), ok_t, ok_l,
            "%.2f (%.2f..%.2f)" % (statistics.median(rat), min(rat), max(rat)) if rat else "—",
            "%.1f" % statistics.median(crat) if crat else "—"))
        best_t = max((r["work"] / r["tile_s"] for r in rs if "tile_s" in r), default=None)
        best_l = max((r["work"] / r["tl_s"] for r in rs if "tl_s" in r), default=None)
        if f == "autotune" and best_t and best_l:
            summ.append("| autotune best | | | | Tile %.1f vs TileLang %.1f TFLOP/s: %.2f | |" % (
                best_t * 1e-12, best_l * 1e-12, best_t / best_l))
    text = "\n".join(head + body + summ) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
