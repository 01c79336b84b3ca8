#!/usr/bin/env python3
"""bench/torch/ddp_step.py — DDP step time with backend "tile" against "gloo" (same model,
data and torchrun; the backends alternate round by round), and the overlap ratio of backend
"tile" from a Chrome trace of torch.profiler: the fraction of the time its collectives run
(the "tile::" ranges the process group's worker thread records) that lies inside the
backward pass's compute (autograd's evaluate_function ranges), on rank 0.

    torchrun --nproc-per-node 4 bench/torch/ddp_step.py [--hidden 512] [--layers 4]
        [--batch 64] [--steps 20] [--rounds 3] [--hook none|sign1] [--trace DIR]
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tile.torch


def make(a, seed=0):
    torch.manual_seed(seed)
    L, layers, d = torch.nn.Linear, [], 64
    for _ in range(a.layers):
        layers += [L(d, a.hidden), torch.nn.ReLU()]
        d = a.hidden
    layers.append(L(d, 10))
    return torch.nn.Sequential(*layers)


def steps(m, opt, X, Y, k):
    t = []
    for i in range(k):
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(X[i % len(X)]), Y[i % len(Y)]).backward()
        opt.step()
        t.append(time.perf_counter() - t0)
    return t


def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlap(trace):
    ev = [e for e in json.load(open(trace))["traceEvents"] if e.get("ph") == "X"]
    comm = union([(e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("tile::")])
    comp = union([(e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("autograd::engine::evaluate_function")])
    tc = sum(b - a for a, b in comm)
    hid = 0.0
    for a, b in comm:
        for c, d in comp:
            hid += max(0.0, min(b, d) - max(a, c))
    return tc, hid, sum(b - a for a, b in comp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bucket-mb", type=float, default=1.0)
    ap.add_argument("--hook", default="none")
    ap.add_argument("--trace", default="")
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("tile")
    r, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    g = torch.Generator().manual_seed(100 + r)
    X = [torch.randn(a.batch, 64, generator=g) for _ in range(8)]
    Y = [torch.randint(0, 10, (a.batch,), generator=g) for _ in range(8)]
    runs = {}
    for name, group in (("gloo", gloo), ("tile", None)):
        m = DDP(make(a), process_group=group, bucket_cap_mb=a.bucket_mb)
        if name == "tile" and a.hook != "none":
            m.register_comm_hook(None, tile.torch.comm_hook(a.hook, gather="int8", momentum=0.9))
        runs[name] = (m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9))
        steps(*runs[name], X, Y, 3)  # warm-up, DDP's bucket rebuild
    times = {k: [] for k in runs}
    for _ in range(a.rounds):
        for name in runs:
            dist.barrier()
            times[name] += steps(*runs[name], X, Y, a.steps)
    nparam = sum(p.numel() for p in runs["tile"][0].parameters())
    if r == 0:
        med = {k: statistics.median(v) for k, v in times.items()}
        print("ranks %d, parameters %d (%.1f MB f32), batch %d per rank, hook %s, %d x %d steps" % (
            n, nparam, nparam * 4 / 1e6, a.batch, a.hook, a.rounds, a.steps))
        print("| backend | median step ms | min step ms | vs gloo |")
        print("|---|---:|---:|---:|")
        for k in ("gloo", "tile"):
            print("| %s | %.2f | %.2f | %.2fx |" % (k, med[k] * 1e3, min(times[k]) * 1e3, med["gloo"] / med[k]))
    if a.trace:
        m, opt = runs["tile"]
        from torch._C._profiler import _ExperimentalConfig
        from torch.profiler import ProfilerActivity, profile
        dist.barrier()
        # every thread: the collectives run on the process group's worker thread
        with profile(activities=[ProfilerActivity.CPU], experimental_config=_ExperimentalConfig(profile_all_threads=True)) as prof:
            steps(m, opt, X, Y, 5)
        if r == 0:
            os.makedirs(a.trace, exist_ok=True)
            path = os.path.join(a.trace, "ddp_tile_rank0.json")
            prof.export_chrome_trace(path)
            tc, hid, tb = overlap(path)
            print("trace %s: backward compute %.1f ms, tile collectives %.1f ms, of which under backward %.1f ms: "
                  "overlap ratio %.1f %%" % (path, tb / 1e3, tc / 1e3, hid / 1e3, 100 * hid / tc if tc else 0))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
