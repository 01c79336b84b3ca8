#!/usr/bin/env python3
"""bench/torch/sign1_sim.py — why DDP with the sign1 hook trains worse than uncompressed on the
digits set: a single-process simulation of TileLink's compressed all-reduce (per-chunk scaled
sign, error feedback) on the same model, data, seed and optimiser as tests/python/
torch_dist_worker.py's ddp mode, with the chunk size, the number of compression stages (one:
each rank's gradient; two: also the owner's re-compression of the sum, as TileLink does) and
the epochs varied.

    python3 bench/torch/sign1_sim.py [--ranks 2] [--epochs 6,20] [--chunks 32,64,128,256,1024]
"""
import argparse
import gzip
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import prepare_digits  # noqa: E402


def data():
    rows = [list(map(int, l.split(b","))) for l in gzip.open(prepare_digits.find_csv()).read().split(b"\n") if l.strip()]
    t = torch.tensor(rows, dtype=torch.float32)
    X, Y = t[:, :64] / 16.0, t[:, 64].long()
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
    X, Y = X[perm], Y[perm]
    return X[397:], Y[397:], X[:397], Y[:397]


def sign(x, chunk):
    """TileLink's sign1 codec decoded: each chunk becomes +-mean|x| by the sign of x."""
    out = torch.empty_like(x)
    for i in range(0, x.numel(), chunk):
        c = x[i:i + chunk]
        s = c.abs().mean()
        out[i:i + chunk] = torch.where(c >= 0, s, -s)
    return out


def train(D, n, epochs, chunk=None, stages=2, warmup=0):
    Xtr, Ytr, Xte, Yte = D
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    res = [torch.zeros(total) for _ in range(n)]
    res_owner = torch.zeros(total)
    bs = 32
    it = 0
    for _ in range(epochs):
        for step in range(len(Xtr) // (n * bs)):
            gs = []
            for r in range(n):
                i = (step * n + r) * bs
                model.zero_grad()
                torch.nn.functional.cross_entropy(model(Xtr[i:i + bs]), Ytr[i:i + bs]).backward()
                gs.append(torch.cat([p.grad.flatten() for p in params]))
            it += 1
            if chunk is None or it <= warmup:
                g = sum(gs) / n
            else:
                dec = []
                for r in range(n):
                    x = gs[r] + res[r]
                    q = sign(x, chunk)
                    res[r] = x - q
                    dec.append(q)
                g = sum(dec) / n
                if stages == 2:
                    x = g + res_owner
                    q = sign(x, chunk)
                    res_owner = x - q
                    g = q
            o = 0
            for p in params:
                p.grad = g[o:o + p.numel()].view_as(p).clone()
                o += p.numel()
            opt.step()
    with torch.no_grad():
        return (model(Xte).argmax(1) == Yte).float().mean().item() * 100


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--epochs", default="6,20")
    ap.add_argument("--chunks", default="32,64,128,256,1024")
    ap.add_argument("--warmup", default="0", help="uncompressed steps first (comma list)")
    a = ap.parse_args()
    D = data()
    print("| epochs | method | chunk | stages | uncompressed warm-up steps | test accuracy % |")
    print("|---:|---|---:|---:|---:|---:|")
    for e in map(int, a.epochs.split(",")):
        print("| %d | uncompressed | | | | %.2f |" % (e, train(D, a.ranks, e)), flush=True)
        for w in map(int, a.warmup.split(",")):
            for ch in map(int, a.chunks.split(",")):
                for st in (1, 2):
                    print("| %d | sign1 + error feedback | %d | %d | %d | %.2f |" % (e, ch, st, w, train(D, a.ranks, e, ch, st, w)), flush=True)


if __name__ == "__main__":
    main()
