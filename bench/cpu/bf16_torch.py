#!/usr/bin/env python3
"""bench/cpu/bf16_torch.py — Tile's CPU bf16 GEMM (bf16 in, f32 accumulate) against PyTorch's
CPU bf16 matmul (oneDNN underneath) and against our own f32 GEMM, in the same run.

For machines where Debian's libdnnl-dev cannot be installed (the GPU machine has no network)
but PyTorch is present; bench/cpu_gemm/run.sh is the full comparison (OpenBLAS + oneDNN's C
API) where apt works. Issue 3 asks bf16 >= 0.9x oneDNN and >= 1.7x our f32 GEMM on CPUs with
AVX512-BF16 (this script says whether the CPU has it and which bf16 kernel Tile picked).

    python3 bench/cpu/bf16_torch.py --tile build/bin/tile [--sizes 1024,2048,4096] [--iters 10]

Ours: `tile run examples/gemm.tl --target cpu --bench` (the tile-form GEMM, which TileOpt's
tilegemm pass runs as one packed GEMM on all cores; median of --iters runs, host time). The
peer: torch.matmul on bf16 CPU tensors (bf16 result, f32 accumulation inside oneDNN), and
torch f32 for reference; medians of the same number of runs after a warm-up. Prints a
markdown report (stdout, and --out FILE)."""
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


def ours(tile, size, dtype, iters):
    cmd = [tile, "run", "examples/gemm.tl", "--target", "cpu", "--bench", "--iters", str(iters), "--quiet",
           "-D", "M=%d" % size, "-D", "N=%d" % size, "-D", "K=%d" % size, "-D", "dtype=%s" % dtype]
    env = dict(os.environ, TILE_LOG="info")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    out = p.stdout + p.stderr
    m = re.search(r"median ([0-9.]+) ms", out)
    if p.returncode != 0 or not m:
        raise SystemExit("tile failed (%s):\n%s" % (" ".join(cmd), out[-2000:]))
    kern = re.findall(r"(tilegemm: [^\n]*|thread pool: [^\n]*)", out)
    return float(m.group(1)), " ".join(cmd), kern[:2]


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile", default="build/bin/tile")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    model, flags = cpu_flags()
    dev = subprocess.run([a.tile, "devices"], capture_output=True, text=True).stdout
    cpu_line = next((l for l in dev.splitlines() if l.startswith("cpu")), "cpu ?")
    lines = ["# CPU bf16 GEMM vs PyTorch (oneDNN), %s" % datetime.date.today(), "",
             "- CPU: %s; %d cores usable; flags: %s" % (model, len(os.sched_getaffinity(0)), flags),
             "- `tile devices`: `%s`" % " ".join(cpu_line.split()),
             "- torch %s (mkldnn bf16: %s), %s" % (torch.__version__, torch.backends.mkldnn.is_available(), platform.platform()),
             "- Command: `python3 bench/cpu/bf16_torch.py --tile %s --sizes %s --iters %d`" % (a.tile, a.sizes, a.iters),
             "- ours = tile-form examples/gemm.tl on --target cpu (bf16 A, B; f32 accumulate and C), median of --iters; "
             "peer = torch.matmul on CPU tensors, median of the same count after a warm-up. Speed = peer time / our time.",
             "", "| size | ours bf16 (ms) | GFLOP/s | torch bf16 (ms) | ours / torch bf16 | ours f32 (ms) | torch f32 (ms) | ours bf16 / ours f32 speed |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for s in [int(x) for x in a.sizes.split(",") if x]:
        ob, cmd, kern = ours(a.tile, s, "bfloat16", a.iters)
        of, _, _ = ours(a.tile, s, "float32", a.iters)
        pb = peer(torch, s, torch.bfloat16, a.iters)
        pf = peer(torch, s, torch.float32, a.iters)
        gf = 2.0 * s ** 3 / (ob * 1e-3) / 1e9
        lines.append("| %d | %.2f | %.0f | %.2f | %.2fx | %.2f | %.2f | %.2fx |" % (s, ob, gf, pb, pb / ob, of, pf, of / ob))
        if kern:
            notes.append("- %d: %s" % (s, "; ".join(kern)))
        print(lines[-1], file=sys.stderr)
    lines += [""] + notes
    txt = "\n".join(lines) + "\n"
    print(txt)
    if a.out:
        with open(a.out, "w") as f:
            f.write(txt)


if __name__ == "__main__":
    main()
