#!/usr/bin/env python3
"""bench/cpu/bf16_torch.py — Tile's CPU bf16 GEMM (bf16 in, f32 accumulate) through each of its
bf16 kernels (AMX tdpbf16ps, AVX512-BF16 vdpbf16ps), Tile's own f32 GEMM, and PyTorch's CPU
bf16 and f32 matmul (oneDNN underneath), all in the same run, same threads.

For machines where Debian's libdnnl-dev cannot be installed (the GPU machine has no network)
but PyTorch is present; bench/cpu_gemm/run.sh is the full comparison (OpenBLAS + oneDNN's C
API) where apt works. Issue 3 asks bf16 >= 0.9x oneDNN and >= 1.7x our f32 GEMM on CPUs with
AVX512-BF16.

    python3 bench/cpu/bf16_torch.py --tile build/bin/tile [--sizes 1024,2048,4096] [--iters 10]
        [--threads all,1] [--iters1 3] [--out FILE]

Ours: `tile run examples/gemm.tl --target cpu --bench` (the tile-form GEMM, which TileOpt's
tilegemm pass runs as one packed GEMM on the thread pool; median of --iters runs, host time),
with TILE_CPU_ISA=amx / avx512bf16 for the bf16 kernels (a path the CPU lacks is reported
n/a) and the default ISA for f32 (bf16 never enters the f32 GEMM). The peer: torch.matmul on
CPU tensors, bf16 (bf16 result, f32 accumulation inside oneDNN) and f32; medians of the same
number of runs after a warm-up. "1" threads: this process and its children are pinned to one
CPU (sched_setaffinity; Tile sizes its pool from the affinity) and torch.set_num_threads(1).
Prints a markdown report (stdout, and --out FILE)."""
import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            txt = f.read()
    except OSError:
        return "", ""
    model = re.search(r"model name\s*:\s*(.*)", txt)
    flags = set(re.search(r"flags\s*:\s*(.*)", txt).group(1).split()) if "flags" in txt else set()
    want = [x for x in ("avx512f", "avx512_bf16", "amx_bf16", "avx2", "fma") if x in flags]
    return (model.group(1) if model else "?"), " ".join(want)


def ours(tile, size, dtype, iters, isa=None):
    """median ms, or None when this CPU lacks the forced ISA"""
    cmd = [tile, "run", "examples/gemm.tl", "--target", "cpu", "--bench", "--iters", str(iters), "--quiet",
           "-D", "M=%d" % size, "-D", "N=%d" % size, "-D", "K=%d" % size, "-D", "dtype=%s" % dtype]
    env = dict(os.environ, TILE_LOG="info")
    env.pop("TILE_CPU_ISA", None)
    if isa:
        env["TILE_CPU_ISA"] = isa
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    out = p.stdout + p.stderr
    if isa and "does not support" in out:
        return None
    m = re.search(r"median ([0-9.]+) ms", out)
    if p.returncode != 0 or not m:
        raise SystemExit("tile failed (%s %s):\n%s" % ("TILE_CPU_ISA=%s" % isa if isa else "", " ".join(cmd), out[-2000:]))
    return float(m.group(1))


def tile_cpu_line(tile, isa=None):
    env = dict(os.environ)
    env.pop("TILE_CPU_ISA", None)
    if isa:
        env["TILE_CPU_ISA"] = isa
    dev = subprocess.run([tile, "devices"], capture_output=True, text=True, env=env).stdout
    line = next((l for l in dev.splitlines() if l.startswith("cpu")), "cpu ?")
    return " ".join(line.split())


def peer(torch, size, dtype, iters):
    g = torch.Generator().manual_seed(size)
    a = (torch.rand(size, size, generator=g) * 2 - 1).to(dtype)
    b = (torch.rand(size, size, generator=g) * 2 - 1).to(dtype)
    torch.matmul(a, b)
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        torch.matmul(a, b)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def fmt(v, spec="%.2f"):
    return "n/a" if v is None else spec % v


def ratio(num, den):
    return "n/a" if num is None or den is None else "%.2fx" % (num / den)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile", default="build/bin/tile")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", default="all,1", help="comma list of 'all' and/or '1'")
    ap.add_argument("--iters1", type=int, default=3, help="iterations for the 1-thread runs")
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    all_cpus = sorted(os.sched_getaffinity(0))
    model, flags = cpu_flags()
    lines = ["# CPU bf16 GEMM: Tile (AMX, AVX512-BF16, f32) vs PyTorch (oneDNN), %s" % datetime.date.today(), "",
             "- CPU: %s; %d cores usable; flags: %s" % (model, len(all_cpus), flags),
             "- `tile devices` (auto): `%s`" % tile_cpu_line(a.tile),
             "- torch %s (mkldnn: %s), %s" % (torch.__version__, torch.backends.mkldnn.is_available(), platform.platform()),
             "- Command: `python3 bench/cpu/bf16_torch.py --tile %s --sizes %s --iters %d --threads %s --iters1 %d`"
             % (a.tile, a.sizes, a.iters, a.threads, a.iters1),
             "- ours = tile-form examples/gemm.tl on --target cpu (bf16 A, B; f32 accumulate and C; TILE_CPU_ISA=amx "
             "or avx512bf16 picks the bf16 kernel), median of the iterations; peer = torch.matmul on CPU tensors "
             "(bf16 result for bf16), median of the same count after a warm-up. Ratios are speed ratios (time of the "
             "other / time of ours): > 1 means ours is faster.", ""]
    for isa in ("amx", "avx512bf16"):
        lines.append("- TILE_CPU_ISA=%s: `%s`" % (isa, tile_cpu_line(a.tile, isa)))
    lines.append("")
    for th in [t for t in a.threads.split(",") if t]:
        if th == "1":
            os.sched_setaffinity(0, {all_cpus[0]})
            iters = a.iters1
        else:
            os.sched_setaffinity(0, set(all_cpus))
            iters = a.iters
        nth = len(os.sched_getaffinity(0))
        torch.set_num_threads(nth)
        lines += ["## %d thread%s (median of %d)" % (nth, "" if nth == 1 else "s", iters), "",
                  "| size | AMX bf16 (ms) | AMX TFLOP/s | AVX512-BF16 bf16 (ms) | ours f32 (ms) | torch bf16 (ms) | torch f32 (ms) "
                  "| AMX vs torch bf16 | AMX vs ours f32 | AVX512-BF16 vs ours f32 | AVX512-BF16 vs torch bf16 |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for sz in [int(x) for x in a.sizes.split(",") if x]:
            am = ours(a.tile, sz, "bfloat16", iters, "amx")
            av = ours(a.tile, sz, "bfloat16", iters, "avx512bf16")
            of = ours(a.tile, sz, "float32", iters)
            pb = peer(torch, sz, torch.bfloat16, iters)
            pf = peer(torch, sz, torch.float32, iters)
            tf = None if am is None else 2.0 * sz ** 3 / (am * 1e-3) / 1e12
            lines.append("| %d | %s | %s | %s | %.2f | %.2f | %.2f | %s | %s | %s | %s |" % (
                sz, fmt(am), fmt(tf), fmt(av), of, pb, pf, ratio(pb, am), ratio(of, am), ratio(of, av), ratio(pb, av)))
            print(lines[-1], file=sys.stderr, flush=True)
        lines.append("")
    os.sched_setaffinity(0, set(all_cpus))
    txt = "\n".join(lines) + "\n"
    print(txt)
    if a.out:
        with open(a.out, "w") as f:
            f.write(txt)


if __name__ == "__main__":
    main()
