#!/usr/bin/env python3
"""bench/cpu/bf16_torch.py — Tile's CPU bf16 GEMM (bf16 in, f32 accumulate) through each of its
bf16 kernels (AMX tdpbf16ps, AVX512-BF16 vdpbf16ps), Tile's own f32 GEMM, and PyTorch's CPU
bf16 and f32 matmul (oneDNN underneath), all in the same run, same threads.

For machines where Debian's libdnnl-dev cannot be installed (the GPU machine has no network)
but PyTorch is present; bench/cpu_gemm/run.sh is the full comparison (OpenBLAS + oneDNN's C
API) where apt works. Issue 3 asks bf16 >= 0.9x oneDNN and >= 1.7x our f32 GEMM on CPUs with
AVX512-BF16.

    python3 bench/cpu/bf16_torch.py --tile build/bin/tile [--sizes 1024,2048,4096] [--iters 10]
        [--threads all,1] [--iters1 3] [--rounds 5] [--others] [--commit SHA] [--out FILE]

Ours: `tile run examples/gemm.tl --target cpu --bench` (the tile-form GEMM, which TileOpt's
tilegemm pass runs as one packed GEMM on the thread pool; median of --iters runs, host time),
with TILE_CPU_ISA=amx / avx512bf16 for the bf16 kernels (a path the CPU lacks is reported
n/a) and the default ISA for f32 (bf16 never enters the f32 GEMM). The peer: torch.matmul on
CPU tensors, bf16 (bf16 result, f32 accumulation inside oneDNN) and f32; medians of the same
number of runs after a warm-up. "1" threads: this process and its children are pinned to one
CPU, the last one usable (sched_setaffinity; Tile sizes its pool from the affinity) and torch.set_num_threads(1).
Noise: each size runs --rounds rounds interleaved (ours AMX, torch bf16, ours, torch, ...) and
the AMX/torch ratio is reported as the median and min-max over the rounds, so one disturbed
round cannot decide; ours f32 / torch f32 (and AVX512-BF16 with --others) run once per size.
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


# Before every measurement (ours and torch's) the harness sleeps PAUSE seconds, so that the
# threads the last one left spinning (torch's OpenMP pool in this process, or a finished
# `tile run`) are idle again: our pool reads the machine's runnable threads when it starts,
# and a `tile run --bench` of 20 x 0.5 ms is over before its re-read 5 ms later could turn its
# spin back on (session 8: 1024^3 rounds of 1.6 ms against 0.5). SPIN_OFF counts our runs whose
# pool started with its spin off all the same (TILE_LOG=info's "thread pool: ... spin 0 us").
PAUSE = 0.2
SPIN_OFF = [0, 0]  # runs whose pool started without its spin, runs


def ours(tile, size, dtype, iters, isa=None):
    """median ms, or None when this CPU lacks the forced ISA"""
    time.sleep(PAUSE)
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
    sp = re.search(r"thread pool: \d+ threads, spin (\d+) us", out)
    SPIN_OFF[1] += 1
    if sp and sp.group(1) == "0":
        SPIN_OFF[0] += 1
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
    time.sleep(PAUSE)
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


def finish_report(lines, detail, out):
    """The end of a results file: the load average, then the detail lines; printed, and
    written to out when given (bf16_ab.py ends its report the same way)."""
    lines.append("- load average at the end: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    lines.append("- %d of our %d runs started their thread pool with the spin off (another thread runnable at "
                 "its start; %.1f s pause before each measurement)" % (SPIN_OFF[0], SPIN_OFF[1], PAUSE))
    lines.append("")
    txt = "\n".join(lines + detail) + "\n"
    print(txt)
    if out:
        with open(out, "w") as f:
            f.write(txt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile", default="build/bin/tile")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", default="all,1", help="comma list of 'all' and/or '1'")
    ap.add_argument("--iters1", type=int, default=3, help="iterations for the 1-thread runs")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds per size (ours, torch, ours, torch, ...): the AMX vs torch ratio is "
                         "reported as the median and min-max over rounds")
    ap.add_argument("--others", action="store_true",
                    help="also time AVX512-BF16 (once per size; our f32 and torch f32 always run once per size)")
    ap.add_argument("--commit", default="", help="the commit measured (written into the report)")
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    all_cpus = sorted(os.sched_getaffinity(0))
    model, flags = cpu_flags()
    lines = ["# CPU bf16 GEMM: Tile (AMX, AVX512-BF16, f32) vs PyTorch (oneDNN), %s" % datetime.date.today(), "",
             "- CPU: %s; %d cores usable; flags: %s" % (model, len(all_cpus), flags),
             "- `tile devices` (auto): `%s`" % tile_cpu_line(a.tile),
             "- torch %s (mkldnn: %s), %s" % (torch.__version__, torch.backends.mkldnn.is_available(), platform.platform()),
             "- Command: `python3 bench/cpu/bf16_torch.py --tile %s --sizes %s --iters %d --threads %s --iters1 %d "
             "--rounds %d%s`" % (a.tile, a.sizes, a.iters, a.threads, a.iters1, a.rounds, " --others" if a.others else ""),
             "- Commit: %s; started %s UTC; load average %s" % (
                 a.commit or "?", datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S"),
                 " ".join("%.2f" % x for x in os.getloadavg())),
             "- ours = tile-form examples/gemm.tl on --target cpu (bf16 A, B; f32 accumulate and C; TILE_CPU_ISA=amx "
             "or avx512bf16 picks the bf16 kernel), median of the iterations of one `tile run --bench`; peer = "
             "torch.matmul on CPU tensors (bf16 result for bf16), median of the same count after a warm-up. Each "
             "size runs --rounds rounds, each round ours (AMX) then torch bf16, so both see the same machine state; "
             "the ratio (torch time / our time, > 1: ours faster) is taken per round and reported as the median "
             "and the min-max over the rounds; the times are the medians over the rounds.", ""]
    for isa in ("amx", "avx512bf16"):
        lines.append("- TILE_CPU_ISA=%s: `%s`" % (isa, tile_cpu_line(a.tile, isa)))
    lines.append("")
    detail = ["## Rounds (ms: ours AMX / torch bf16 = ratio)", ""]
    for th in [t for t in a.threads.split(",") if t]:
        if th == "1":
            os.sched_setaffinity(0, {all_cpus[-1]})  # not CPU 0: 1-thread runs pinned there were disturbed (s4 run 2, s5 run 1)
            iters = a.iters1
        else:
            os.sched_setaffinity(0, set(all_cpus))
            iters = a.iters
        nth = len(os.sched_getaffinity(0))
        torch.set_num_threads(nth)
        lines += ["## %d thread%s (%d rounds, each the median of %d runs)" % (nth, "" if nth == 1 else "s", a.rounds, iters), "",
                  "| size | AMX bf16 (ms) | AMX TFLOP/s | torch bf16 (ms) | AMX vs torch bf16: median | min-max "
                  "| ours f32 (ms) | AMX vs ours f32 | torch f32 (ms) | AVX512-BF16 (ms) | AVX512-BF16 vs ours f32 |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for sz in [int(x) for x in a.sizes.split(",") if x]:
            ams, pbs, rs = [], [], []
            for _ in range(a.rounds):
                am = ours(a.tile, sz, "bfloat16", iters, "amx")
                pb = peer(torch, sz, torch.bfloat16, iters)
                pbs.append(pb)
                if am is not None:
                    ams.append(am)
                    rs.append(pb / am)
            am = statistics.median(ams) if ams else None
            pb = statistics.median(pbs)
            of = ours(a.tile, sz, "float32", iters)
            pf = peer(torch, sz, torch.float32, iters)
            av = ours(a.tile, sz, "bfloat16", iters, "avx512bf16") if a.others else None
            tf = None if am is None else 2.0 * sz ** 3 / (am * 1e-3) / 1e12
            rmed = "%.2fx" % statistics.median(rs) if rs else "n/a"
            rmm = "%.2f-%.2fx" % (min(rs), max(rs)) if rs else "n/a"
            lines.append("| %d | %s | %s | %.2f | %s | %s | %.2f | %s | %.2f | %s | %s |" % (
                sz, fmt(am), fmt(tf), pb, rmed, rmm, of, ratio(of, am), pf, fmt(av), ratio(of, av)))
            detail.append("- %d thread%s, %d: %s" % (nth, "" if nth == 1 else "s", sz, ", ".join(
                "%.2f/%.2f=%.2fx" % (x, y, y / x) for x, y in zip(ams, pbs))))
            print(lines[-1], file=sys.stderr, flush=True)
        lines.append("")
    os.sched_setaffinity(0, set(all_cpus))
    finish_report(lines, detail, a.out)


if __name__ == "__main__":
    main()
