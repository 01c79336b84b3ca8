#!/usr/bin/env python3
"""bench/cpu/bf16_ab.py — before/after of Tile's AMX bf16 GEMM in one run, against PyTorch's
bf16 matmul (oneDNN) measured in the same rounds: for each size, --rounds interleaved rounds,
each running every Tile variant (one `tile run --bench` each, TILE_CPU_ISA=amx or --isa; the order of
the variants alternates between rounds) and then torch.matmul. Reports per variant the median
time over the rounds and the torch/ours ratio per round (median and min-max; > 1: ours
faster), and each variant's per-round speed-up over the first one.

    python3 bench/cpu/bf16_ab.py --var before=b0/bin/tile --var after=b/bin/tile \\
        [--var 'after-nospin=b/bin/tile:TILE_POOL_SPIN_US=0'] [--sizes 1024,2048,4096] [--iters 10]
        [--rounds 5] [--commit TEXT] [--out FILE]

A variant is LABEL=TILE_BINARY[:VAR=VALUE,...] (environment for that variant only). Runs with
all usable CPUs (ours and torch.set_num_threads alike), or --threads N (TILE_NUM_THREADS=N for
ours, torch.set_num_threads(N))."""
import argparse
import datetime
import importlib.util
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bf16_torch", os.path.join(here, "bf16_torch.py"))
bt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bt)


def parse_var(s):
    label, _, rest = s.partition("=")
    path, _, envs = rest.partition(":")
    if not label or not path:
        raise SystemExit("--var: expected LABEL=TILE_BINARY[:VAR=VALUE,...], got %r" % s)
    env = dict(e.split("=", 1) for e in envs.split(",") if e)
    return label, path, env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--var", action="append", required=True)
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--isa", default="amx", help="TILE_CPU_ISA for ours ('' = the default pick)")
    ap.add_argument("--commit", default="")
    ap.add_argument("--threads", type=int, default=0, help="threads for ours and torch (0: all usable CPUs)")
    ap.add_argument("--out")
    a = ap.parse_args()
    vs = [parse_var(v) for v in a.var]
    import torch
    nth = a.threads if a.threads > 0 else len(os.sched_getaffinity(0))
    torch.set_num_threads(nth)
    if a.threads > 0:
        os.environ["TILE_NUM_THREADS"] = str(nth)
    model, _ = bt.cpu_flags()
    lines = ["# bf16 AMX GEMM before/after vs torch bf16, %s UTC" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), "",
             "- CPU: %s; %d threads (ours and torch); torch %s" % (model, nth, torch.__version__),
             "- Command: `python3 bench/cpu/bf16_ab.py %s --sizes %s --iters %d --rounds %d --isa '%s'%s`" % (
                 " ".join("--var '%s'" % v for v in a.var), a.sizes, a.iters, a.rounds, a.isa,
                 " --threads %d" % a.threads if a.threads > 0 else ""),
             "- Commit: %s; load average at the start %s" % (a.commit or "?", " ".join("%.2f" % x for x in os.getloadavg())),
             "", "| size | variant | ours (ms, median) | torch bf16 (ms) | torch/ours median | min-max | vs %s: median | min-max |" % vs[0][0],
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    detail = ["", "Rounds (ms, ours per variant / torch):", ""]
    for sz in [int(x) for x in a.sizes.split(",") if x]:
        t = {v[0]: [] for v in vs}
        pb = []
        for r in range(a.rounds):
            order = vs if r % 2 == 0 else vs[::-1]
            for label, path, env in order:
                saved = {k: os.environ.get(k) for k in env}
                os.environ.update(env)
                try:
                    t[label].append(bt.ours(path, sz, "bfloat16", a.iters, a.isa or None))
                    if t[label][-1] is None:
                        raise SystemExit("this CPU lacks TILE_CPU_ISA=%s" % a.isa)
                finally:
                    for k, v in saved.items():
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
            pb.append(bt.peer(torch, sz, torch.bfloat16, a.iters))
            detail.append("- %d round %d: %s / torch %.3f" % (sz, r + 1, ", ".join("%s %.3f" % (l, t[l][-1]) for l, _, _ in vs), pb[-1]))
        base = t[vs[0][0]]
        for label, _, _ in vs:
            rs = [p / x for p, x in zip(pb, t[label])]
            sp = [b / x for b, x in zip(base, t[label])]
            lines.append("| %d | %s | %.3f | %.3f | %.2fx | %.2f-%.2fx | %.2fx | %.2f-%.2fx |" % (
                sz, label, statistics.median(t[label]), statistics.median(pb), statistics.median(rs), min(rs), max(rs),
                statistics.median(sp), min(sp), max(sp)))
            print(lines[-1], file=sys.stderr, flush=True)
    lines.append("")
    bt.finish_report(lines, detail, a.out)


if __name__ == "__main__":
    main()
