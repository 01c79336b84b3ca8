#!/usr/bin/env python3
"""bench/torch/sign1_sim.py — accuracy of DDP with a compressed all-reduce on the digits set,
simulated in one process: TileLink's two-phase compressed all-reduce (docs/tilelink-
compression.md) with its codecs decoded in Python, on the model, data and optimiser of
tests/python/torch_dist_worker.py's ddp mode.

Each simulated rank computes its gradient on its own batch; the buffer is split into one block
per rank on chunk boundaries; phase 1 compresses every rank's input (plus its residual e1) for
the blocks of the other ranks (the owner's own block stays exact); the owner sums and averages,
and phase 2 compresses the average again (plus the owner's residual e2) with the phase-2
method, or sends it exact ("none"). Methods are written PHASE1:PHASE2, e.g. sign1:sign1 (both
phases scaled sign, TileLink's sign1 before the gather method existed), sign1:int8, sign1:none.

    python3 bench/torch/sign1_sim.py [--ranks 2] [--epochs 6] [--chunks 32,64,128,1024]
        [--methods sign1:sign1,sign1:int8] [--seeds 1,2,3] [--models mlp,wide] [--lrs 0.1]
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


def codec(method, x, chunk):
    """x decoded after TileLink's encoding with method (one scale per chunk of x)."""
    if method == "none":
        return x.clone()
    n = x.numel()
    pad = (-n) % chunk
    c = torch.nn.functional.pad(x, (0, pad)).view(-1, chunk)
    k = torch.full((c.shape[0], 1), float(chunk))
    if pad:
        k[-1] = chunk - pad
    if method == "sign1":
        s = c.abs().sum(1, keepdim=True) / k
        y = torch.where(c >= 0, s, -s)
    elif method in ("int8", "int4"):
        lim = 127.0 if method == "int8" else 7.0
        s = c.abs().amax(1, keepdim=True) / lim
        y = torch.where(s > 0, torch.round(c / torch.where(s > 0, s, 1)).clamp(-lim, lim) * s, 0)
    elif method == "fp8":
        s = c.abs().amax(1, keepdim=True) / 448.0
        ss = torch.where(s > 0, s, 1)
        y = torch.where(s > 0, (c / ss).to(torch.float8_e4m3fn).to(torch.float32) * ss, 0)
    else:
        raise ValueError(method)
    return y.reshape(-1)[:n]


def blocks(total, n, chunk):
    """TileLink's split of total elements into n blocks of whole chunks."""
    nch = (total + chunk - 1) // chunk
    q, r = divmod(nch, n)
    return [min((j * q + min(j, r)) * chunk, total) for j in range(n + 1)]


def model_of(name):
    L = torch.nn.Linear
    if name == "mlp":
        return torch.nn.Sequential(L(64, 64), torch.nn.ReLU(), L(64, 10))
    if name == "wide":
        return torch.nn.Sequential(L(64, 128), torch.nn.ReLU(), L(128, 128), torch.nn.ReLU(), L(128, 10))
    raise ValueError(name)


def train(D, n, epochs, method=None, chunk=1024, seed=1, model="mlp", lr=0.1, momentum=0.9):
    Xtr, Ytr, Xte, Yte = D
    torch.manual_seed(seed)
    net = model_of(model)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    params = list(net.parameters())
    total = sum(p.numel() for p in params)
    mom = bool(method) and "+m" in method
    ef21 = bool(method) and "+ef21" in method
    m1, m2 = method.replace("+m", "").replace("+ef21", "").split(":") if method else (None, None)
    bo = blocks(total, n, chunk)
    e1 = [torch.zeros(total) for _ in range(n)]
    e2 = torch.zeros(total)  # the owners' residuals, each on its own block
    mloc = [torch.zeros(total) for _ in range(n)]  # +m: each rank's own momentum
    Mprev = torch.zeros(total)
    h = [torch.zeros(total) for _ in range(n)]  # +ef21: rank r's gradient estimate (known to r and the owners)
    G = torch.zeros(total)  # +ef21: the reduced estimate (known to every rank)
    bs = 32
    wire_bits = 0.0
    for _ in range(epochs):
        for step in range(len(Xtr) // (n * bs)):
            gs = []
            for r in range(n):
                i = (step * n + r) * bs
                net.zero_grad()
                torch.nn.functional.cross_entropy(net(Xtr[i:i + bs]), Ytr[i:i + bs]).backward()
                gs.append(torch.cat([p.grad.flatten() for p in params]))
            if mom:  # compress each rank's momentum; hand the optimiser what rebuilds the mean
                for r in range(n):
                    mloc[r].mul_(momentum).add_(gs[r])
                gs = [x.clone() for x in mloc]
            if m1 is None:
                g = sum(gs) / n
            else:
                g = torch.empty(total)
                for j in range(n):
                    lo, hi = bo[j], bo[j + 1]
                    acc = torch.zeros(hi - lo)
                    for r in range(n):
                        x = gs[r][lo:hi]
                        if r == j:
                            acc += x
                            continue
                        if ef21:  # send the change of the estimate
                            h[r][lo:hi] += codec(m1, x - h[r][lo:hi], chunk)
                            acc += h[r][lo:hi]
                            continue
                        t = x + e1[r][lo:hi]
                        q = codec(m1, t, chunk)
                        e1[r][lo:hi] = t - q
                        acc += q
                    if ef21:
                        G[lo:hi] += codec(m2, acc / n - G[lo:hi], chunk)
                        g[lo:hi] = G[lo:hi]
                        continue
                    t = acc / n + e2[lo:hi]
                    q = codec(m2, t, chunk)
                    e2[lo:hi] = t - q
                    g[lo:hi] = q
                if mom:
                    g, Mprev = g - momentum * Mprev, g
            o = 0
            for p in params:
                p.grad = g[o:o + p.numel()].view_as(p).clone()
                o += p.numel()
            opt.step()
    with torch.no_grad():
        return (net(Xte).argmax(1) == Yte).float().mean().item() * 100, total


BITS = {"none": 32, "sign1": 1, "int4": 4, "int8": 8, "fp8": 8}


def bits_per_element(method, chunk, n):
    """Bits each rank sends per gradient element and call (both phases; 32/chunk for the scale)."""
    if method is None:
        return 2 * (n - 1) / n * 32
    m1, m2 = method.replace("+m", "").replace("+ef21", "").split(":")
    hdr = lambda m: 0 if m == "none" else 32 / chunk  # noqa: E731
    return (n - 1) / n * (BITS[m1] + hdr(m1) + BITS[m2] + hdr(m2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--epochs", default="6")
    ap.add_argument("--chunks", default="32,64,128,1024")
    ap.add_argument("--methods", default="sign1:sign1,sign1:int8,sign1:none")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--models", default="mlp")
    ap.add_argument("--lrs", default="0.1")
    a = ap.parse_args()
    torch.set_num_threads(1)  # tiny model: one thread is faster than two
    D = data()
    seeds = list(map(int, a.seeds.split(",")))
    print("| ranks | model | lr | epochs | method (phase 1:phase 2) | chunk | wire bits/element | test accuracy %% (seeds %s) | mean | vs f32 |" % a.seeds)
    print("|---:|---|---:|---:|---|---:|---:|---|---:|---:|")
    for model in a.models.split(","):
        for lr in map(float, a.lrs.split(",")):
            for e in map(int, a.epochs.split(",")):
                accs = [train(D, a.ranks, e, seed=s, model=model, lr=lr)[0] for s in seeds]
                base = sum(accs) / len(accs)
                print("| %d | %s | %g | %d | f32 (exact) | | %.2f | %s | %.2f | |" % (
                    a.ranks, model, lr, e, bits_per_element(None, 1, a.ranks), " ".join("%.2f" % x for x in accs), base), flush=True)
                for meth in a.methods.split(","):
                    for ch in map(int, a.chunks.split(",")):
                        accs = [train(D, a.ranks, e, meth, ch, seed=s, model=model, lr=lr)[0] for s in seeds]
                        mean = sum(accs) / len(accs)
                        print("| %d | %s | %g | %d | %s | %d | %.2f | %s | %.2f | %+.2f |" % (
                            a.ranks, model, lr, e, meth, ch, bits_per_element(meth, ch, a.ranks),
                            " ".join("%.2f" % x for x in accs), mean, mean - base), flush=True)


if __name__ == "__main__":
    main()
