#!/usr/bin/env python3
"""bench/torch/ddp_digits.py — DDP on the digits set with backend "tile" and TileLink's
compression hooks: test accuracy and gradient bytes each rank sends per step, against
gloo, same model, data, seed and optimiser as tests/python/torch_dist_worker.py's ddp mode.

    torchrun --nproc-per-node 2 bench/torch/ddp_digits.py [--model mlp|wide] [--seed 1]
        [--hooks "sign1,sign1/c64,sign1/c64/g=int8,sign1/c64/g=int8/m"]

A hook is METHOD[/cCHUNK][/g=GATHER][/m] (m: the hook compresses each rank's momentum,
comm_hook(momentum=0.9))."""
import argparse
import ctypes
import gzip
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tile.torch
from tile import link

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import prepare_digits  # noqa: E402


class _Stats(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_uint64), ("last_wire_bytes", ctypes.c_uint64), ("total_wire_bytes", ctypes.c_uint64),
                ("f32_ring_bytes", ctypes.c_uint64), ("last_codec_s", ctypes.c_double), ("last_comm_s", ctypes.c_double),
                ("residual_norm", ctypes.c_double)]


_get_stats = link._fn("tlink_compress_get_stats", ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Stats))


def parse_hook(spec):
    parts = spec.split("/")
    kw = {}
    for p in parts[1:]:
        if p.startswith("c"):
            kw["chunk"] = int(p[1:])
        elif p.startswith("g="):
            kw["gather"] = p[2:]
        elif p == "m":
            kw["momentum"] = 0.9
        else:
            raise SystemExit("bad hook part %r in %r" % (p, spec))
    return parts[0], kw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--hooks", default="sign1,sign1/c64,sign1/c64/g=int8,sign1/m,sign1/c64/g=int8/m,int8")
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("tile")
    r, n = dist.get_rank(), dist.get_world_size()
    rows = [list(map(int, l.split(b","))) for l in gzip.open(prepare_digits.find_csv()).read().split(b"\n") if l.strip()]
    t = torch.tensor(rows, dtype=torch.float32)
    X, Y = t[:, :64] / 16.0, t[:, 64].long()
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
    X, Y = X[perm], Y[perm]
    Xte, Yte, Xtr, Ytr = X[:397], Y[:397], X[397:], Y[397:]
    gloo = dist.new_group(backend="gloo")
    L = torch.nn.Linear
    runs = [("gloo", gloo, None), ("tile", None, None)] + [(h, None, parse_hook(h)) for h in a.hooks.split(",") if h]
    if r == 0:
        print("| ranks | model | seed | run | test accuracy % | vs tile | gradient bytes sent per rank and step | vs f32 ring |")
        print("|---:|---|---:|---|---:|---:|---:|---:|")
    base = None
    for name, group, hook in runs:
        torch.manual_seed(a.seed)
        if a.model == "mlp":
            model = torch.nn.Sequential(L(64, 64), torch.nn.ReLU(), L(64, 10))
        else:
            model = torch.nn.Sequential(L(64, 128), torch.nn.ReLU(), L(128, 128), torch.nn.ReLU(), L(128, 10))
        m = DDP(model, process_group=group, bucket_cap_mb=0.01)
        h = None
        if hook:
            h = tile.torch.comm_hook(hook[0], **hook[1])
            m.register_comm_hook(None, h)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        bs, steps = 32, 0
        for _ in range(a.epochs):
            for step in range(len(Xtr) // (n * bs)):
                i = (step * n + r) * bs
                opt.zero_grad()
                torch.nn.functional.cross_entropy(m(Xtr[i:i + bs]), Ytr[i:i + bs]).backward()
                opt.step()
                steps += 1
        with torch.no_grad():
            acc = (model(Xte).argmax(1) == Yte).float().mean().item() * 100
        base = acc if name == "tile" else base
        wire = ring = ""
        if h is not None:
            last, f32 = 0, 0
            for comp in h._state.values():  # the states of the buckets after DDP's rebuild
                st = _Stats()
                _get_stats(comp._h, ctypes.byref(st))
                if st.calls == steps - 1 or len(h._state) == 1:
                    last += st.last_wire_bytes
                    f32 += st.f32_ring_bytes
            wire, ring = "%d" % last, "%.1fx less" % (f32 / last) if last else ""
        if r == 0:
            print("| %d | %s | %d | %s | %.2f | %s | %s | %s |" % (n, a.model, a.seed, name, acc,
                  "" if base is None or name in ("gloo", "tile") else "%+.2f" % (acc - base), wire, ring), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
