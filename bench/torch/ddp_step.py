#!/usr/bin/env python3
"""bench/torch/ddp_step.py — DDP step time with backend "tile" against "gloo" (same model,
data and torchrun; the backends alternate round by round), and the overlap ratio of backend
"tile" from a Chrome trace of torch.profiler: the fraction of the time its collectives run
(the "tile::" ranges the process group's worker thread records) that lies inside the
backward pass's compute (autograd's evaluate_function ranges), on rank 0.

    torchrun --nproc-per-node 4 bench/torch/ddp_step.py [--hidden 512] [--layers 4]
        [--batch 64] [--steps 20] [--rounds 3] [--hook none|sign1] [--trace DIR]
        [--runs gloo,tile,sign1/g=int8/m] [--data random|digits] [--lr 0.01] [--seed 0]

--runs: the DDP models that alternate, each with its own copy of the model: gloo, tile
(exact) or a comm_hook spec METHOD[/cCHUNK][/g=GATHER][/m] of bench/torch/ddp_digits.py on
backend "tile". --data digits trains on the digits set (the MLP's 64 inputs are its 8x8
pixels) and reports each run's test accuracy after its steps. Per run: median step time
with its quartiles, the median of the per-round medians' spread, process CPU time per step
(all threads: a rank that polls burns CPU its peer or its own backward could use), and the
gradient bytes a hook sends per step. Under network namespaces (scripts/netns.sh, a rate
limit) run it with `tile launch --netns --hosts tlh0:1,tlh1:1 -- env GLOO_SOCKET_IFNAME=eth0
python3 bench/torch/ddp_step.py ...`.
"""
import argparse
import ctypes
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tile.torch

from ddp_digits import _Stats, _get_stats, parse_hook  # noqa: E402 (same folder)


def make(a, seed=0):
    torch.manual_seed(seed)
    L, layers, d = torch.nn.Linear, [], 64
    for _ in range(a.layers):
        layers += [L(d, a.hidden), torch.nn.ReLU()]
        d = a.hidden
    layers.append(L(d, 10))
    return torch.nn.Sequential(*layers)


def steps(run, X, Y, k, cpu=None):
    """k steps of run (a dict: model, opt, step counter); wall times, CPU times into cpu."""
    m, opt = run["model"], run["opt"]
    t = []
    for _ in range(k):
        i = run["i"]
        run["i"] += 1
        c0, t0 = time.process_time(), time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(X[i % len(X)]), Y[i % len(Y)]).backward()
        opt.step()
        t.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
    return t


def digits(batch, rank, n):
    import gzip
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
    import prepare_digits
    rows = [list(map(int, l.split(b","))) for l in gzip.open(prepare_digits.find_csv()).read().split(b"\n") if l.strip()]
    t = torch.tensor(rows, dtype=torch.float32)
    X, Y = t[:, :64] / 16.0, t[:, 64].long()
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
    X, Y = X[perm], Y[perm]
    Xte, Yte, Xtr, Ytr = X[:397], Y[:397], X[397:], Y[397:]
    nb = len(Xtr) // (n * batch)
    Xs = [Xtr[(s * n + rank) * batch:(s * n + rank + 1) * batch] for s in range(nb)]
    Ys = [Ytr[(s * n + rank) * batch:(s * n + rank + 1) * batch] for s in range(nb)]
    return Xs, Ys, Xte, Yte


def quart(v):
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return q[0], q[2]


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
    ap.add_argument("--hook", default="none", help="shorthand: --runs gloo,tile,HOOK/g=int8/m")
    ap.add_argument("--runs", default="")
    ap.add_argument("--data", default="random", choices=("random", "digits"))
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--trace", default="")
    ap.add_argument("--seed", type=int, default=0, help="model initialisation (every run starts from the same weights)")
    a = ap.parse_args()
    specs = a.runs.split(",") if a.runs else ["gloo", "tile"] + ([a.hook + "/g=int8/m"] if a.hook != "none" else [])
    torch.set_num_threads(1)
    dist.init_process_group("tile")
    r, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    load0 = os.getloadavg()
    if a.data == "digits":
        X, Y, Xte, Yte = digits(a.batch, r, n)
    else:
        g = torch.Generator().manual_seed(100 + r)
        X = [torch.randn(a.batch, 64, generator=g) for _ in range(8)]
        Y = [torch.randint(0, 10, (a.batch,), generator=g) for _ in range(8)]
    runs = {}
    for name in specs:
        m = DDP(make(a, a.seed), process_group=gloo if name == "gloo" else None, bucket_cap_mb=a.bucket_mb)
        hook = None
        if name not in ("gloo", "tile"):
            method, kw = parse_hook(name)
            hook = tile.torch.comm_hook(method, **kw)
            m.register_comm_hook(None, hook)
        runs[name] = dict(model=m, opt=torch.optim.SGD(m.parameters(), lr=a.lr, momentum=0.9), hook=hook, i=0)
        steps(runs[name], X, Y, 3)  # warm-up, DDP's bucket rebuild
    times = {k: [] for k in runs}
    cpus = {k: [] for k in runs}
    rmed = {k: [] for k in runs}
    for rd in range(a.rounds):
        order = list(runs) if rd % 2 == 0 else list(runs)[::-1]  # drift falls on every run alike
        for name in order:
            dist.barrier()
            t = steps(runs[name], X, Y, a.steps, cpus[name])
            times[name] += t
            rmed[name].append(statistics.median(t))
    load1 = os.getloadavg()
    nparam = sum(p.numel() for p in runs[specs[0]]["model"].parameters())
    rows = {}
    for name, run in runs.items():
        acc = wire = ""
        if a.data == "digits":
            with torch.no_grad():
                acc = "%.2f" % ((run["model"].module(Xte).argmax(1) == Yte).float().mean().item() * 100)
        if run["hook"] is not None:
            last = 0
            for comp in run["hook"]._state.values():
                st = _Stats()
                _get_stats(comp._h, ctypes.byref(st))
                if st.calls == run["i"] - 1 or len(run["hook"]._state) == 1:  # the buckets after the rebuild
                    last += st.last_wire_bytes
            wire = "%d" % last
        rows[name] = (acc, wire)
    if r == 0:
        ref = statistics.median(times[specs[0]])
        print("ranks %d, parameters %d (%.1f MB f32), batch %d per rank, data %s, %d x %d steps, load average %.2f -> %.2f" % (
            n, nparam, nparam * 4 / 1e6, a.batch, a.data, a.rounds, a.steps, load0[0], load1[0]))
        print("| run | median step ms | quartiles ms | round medians ms | min ms | CPU ms per step | vs %s | test acc %% | hook bytes per step |" % specs[0])
        print("|---|---:|---|---|---:|---:|---:|---:|---:|")
        for k in specs:
            med, (q1, q3) = statistics.median(times[k]), quart(times[k])
            print("| %s | %.2f | %.2f-%.2f | %s | %.2f | %.2f | %.2fx | %s | %s |" % (
                k, med * 1e3, q1 * 1e3, q3 * 1e3, " ".join("%.1f" % (x * 1e3) for x in rmed[k]), min(times[k]) * 1e3,
                statistics.median(cpus[k]) * 1e3, ref / med, rows[k][0], rows[k][1]), flush=True)
    if a.trace:
        run = runs["tile"] if "tile" in runs else runs[specs[-1]]
        from torch._C._profiler import _ExperimentalConfig
        from torch.profiler import ProfilerActivity, profile
        dist.barrier()
        # every thread: the collectives run on the process group's worker thread
        with profile(activities=[ProfilerActivity.CPU], experimental_config=_ExperimentalConfig(profile_all_threads=True)) as prof:
            steps(run, X, Y, 5)
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
