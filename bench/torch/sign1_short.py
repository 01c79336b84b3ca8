#!/usr/bin/env python3
"""bench/torch/sign1_short.py — the sign1 DDP hook on the DDP benchmark's short recipe,
simulated in one process: `torchrun --nproc-per-node 2 bench/torch/ddp_step.py --data digits`
trains a 64-512-512-512-512-10 MLP (826k parameters) for 103 steps (3 warm-up + 5 rounds x 20),
batch 64 per rank, SGD lr 0.05 momentum 0.9, the ranks' batches cycling over the 10 of each
rank. The simulation repeats that with 2 ranks in one process: DDP's buckets (one bucket of
every parameter at step 0, then the rebuilt 1 MiB buckets in reverse parameter order, each
with fresh residuals, as the hook keys them), TileLink's two-phase compressed all-reduce per
bucket (bench/torch/sign1_sim.py's codecs: block split on chunk boundaries, phase-1 residual
per rank, the owner's exact block, phase 2 on the average with the owner's residual) and the
hook's momentum= (each rank compresses its own momentum; the optimiser gets M_t - beta M_{t-1}).
Uncompressed it reproduces the real run's accuracies exactly (seeds 0-2: 93.70 93.45 93.95).

    python3 bench/torch/sign1_short.py [--seeds 0,1,2] [--variants "none;sign1:int8+m;..."]
        [--every 10] [--steps 103]

A variant is PHASE1:PHASE2[+m][/knob=value...] on the bucket simulation, or tensor:CODEC for
the per-tensor simulation below. Knobs:
  chunk=N       elements per scale (1024)
  warm=N        the first N steps uncompressed (PowerSGD's start_powerSGD_iter)
  scale=l1|l2|pm  sign1's scale: mean |x| (TileLink's), the chunk's RMS (norm-preserving), or
                two scales, the mean of the positive and of the negative elements (1-bit SGD)
  align=1       every tensor padded to whole chunks (no chunk spans two tensors)
  exact_below=N tensors under N elements averaged exactly
  reset=K       every K steps the residuals' mean is added to the output and the residuals
                zeroed (error reset)
  only=B        sign1 in bucket B (1-based) only, int4 in the others (which bucket hurts)
  flush=1       also report the accuracy after the residuals still owed are applied at the end
  lr=X          another learning rate (the "vs exact" column still compares with lr 0.05;
                run none/lr=X for the exact figures)

The per-tensor simulation (tensor:CODEC) splits each parameter by rows between the 2 ranks and
compresses the other rank's half with: sign1 (chunk 1024), row (one scale per row), col (one
per column), rc (the sender's rank-1 magnitude a_i b_j, row and column RMS, times one L2-optimal
factor: what per-row and per-column side information buys), none (exact). Phase 2 is exact.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sign1_sim as S  # noqa: E402


def digits(batch, n):
    Xtr, Ytr, Xte, Yte = S.data()
    nb = len(Xtr) // (n * batch)
    Xs = [[Xtr[(s * n + r) * batch:(s * n + r + 1) * batch] for s in range(nb)] for r in range(n)]
    Ys = [[Ytr[(s * n + r) * batch:(s * n + r + 1) * batch] for s in range(nb)] for r in range(n)]
    return Xs, Ys, Xte, Yte


def make(seed, hidden=512, layers=4):
    """bench/torch/ddp_step.py's model."""
    torch.manual_seed(seed)
    L, ls, d = torch.nn.Linear, [], 64
    for _ in range(layers):
        ls += [L(d, hidden), torch.nn.ReLU()]
        d = hidden
    ls.append(L(d, 10))
    return torch.nn.Sequential(*ls)


def _chunks(x, chunk):
    n = x.numel()
    pad = (-n) % chunk
    c = torch.nn.functional.pad(x, (0, pad)).view(-1, chunk)
    k = torch.full((c.shape[0], 1), float(chunk))
    if pad:
        k[-1] = chunk - pad
    return c, k, n


def codec(m, x, chunk, scale="l1"):
    if m == "sign1" and scale == "l2":
        c, k, n = _chunks(x, chunk)
        s = (c.pow(2).sum(1, keepdim=True) / k).sqrt()
        return torch.where(c >= 0, s, -s).reshape(-1)[:n]
    if m == "sign1" and scale == "pm":
        c, k, n = _chunks(x, chunk)
        pos = c >= 0
        sp = (c * pos).sum(1, keepdim=True) / pos.sum(1, keepdim=True).clamp_min(1)
        sn = (-c * ~pos).sum(1, keepdim=True) / (~pos).sum(1, keepdim=True).clamp_min(1)
        return torch.where(pos, sp, -sn).reshape(-1)[:n]
    return S.codec(m, x, chunk)


class State:
    """One bucket layout's residuals (the hook keys its compressors by layout)."""

    def __init__(self):
        self.e1 = self.e2 = None


def allreduce(xs, st, n, chunk, m1, m2, scale):
    """TileLink's compressed all-reduce (avg) of the ranks' buffers xs, residuals in st."""
    total = xs[0].numel()
    bo = S.blocks(total, n, chunk)
    if st.e2 is None:
        st.e1 = [torch.zeros(total) for _ in range(n)]
        st.e2 = torch.zeros(total)
    g = torch.empty(total)
    for j in range(n):
        lo, hi = bo[j], bo[j + 1]
        acc = torch.zeros(hi - lo)
        for r in range(n):
            x = xs[r][lo:hi]
            if r == j:
                acc += x
                continue
            t = x + st.e1[r][lo:hi]
            q = codec(m1, t, chunk, scale)
            st.e1[r][lo:hi] = t - q
            acc += q
        t = acc / n + st.e2[lo:hi]
        q = codec(m2, t, chunk, scale)
        st.e2[lo:hi] = t - q
        g[lo:hi] = q
    return g


def accuracy(net, Xte, Yte):
    with torch.no_grad():
        return (net(Xte).argmax(1) == Yte).float().mean().item() * 100


def run(seed, method=None, n=2, steps=103, lr=0.05, beta=0.9, batch=64, every=0, chunk=1024, warm=0,
        scale="l1", align=0, exact_below=0, reset=0, only=0, flush=0):
    """Test accuracy after the recipe, and the accuracy every `every` steps (plus, with flush,
    the accuracy after the owed residuals are applied)."""
    Xs, Ys, Xte, Yte = digits(batch, n)
    net = make(seed)
    params = list(net.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=beta)
    P = len(params)
    buckets, cur, size = [], [], 0  # DDP's rebuilt buckets: reverse order, closed at 1 MiB
    for i in reversed(range(P)):
        cur.append(i)
        size += params[i].numel()
        if size * 4 >= 1 << 20:
            buckets.append(cur)
            cur, size = [], 0
    if cur:
        buckets.append(cur)
    states = {}
    mloc = [[torch.zeros(p.numel()) for p in params] for _ in range(n)]
    Mprev = [torch.zeros(p.numel()) for p in params]
    mom = method is not None and method.endswith("+m")
    m1, m2 = method.replace("+m", "").split(":") if method else (None, None)
    padt = (lambda t: torch.nn.functional.pad(t, (0, (-t.numel()) % chunk))) if align else (lambda t: t)
    curve = []
    for step in range(steps):
        grads = []
        for r in range(n):
            net.zero_grad()
            torch.nn.functional.cross_entropy(net(Xs[r][step % len(Xs[r])]), Ys[r][step % len(Ys[r])]).backward()
            grads.append([p.grad.flatten().clone() for p in params])
        if mom:
            for r in range(n):
                for i in range(P):
                    mloc[r][i].mul_(beta).add_(grads[r][i])
            grads = mloc
        out = [None] * P
        for bi, b in enumerate([list(range(P))] if step == 0 else buckets):
            comp = [i for i in b if params[i].numel() >= exact_below]
            for i in b:
                if i not in comp:
                    out[i] = sum(grads[r][i] for r in range(n)) / n
            if not comp:
                continue
            xs = [torch.cat([padt(grads[r][i]) for i in comp]) for r in range(n)]
            if m1 is None or step < warm:
                g = sum(xs) / n
            else:
                st = states.setdefault((step == 0, bi), State())
                p1 = m1 if (not only or step == 0 or bi == only - 1) else "int4"
                g = allreduce(xs, st, n, chunk, p1, m2, scale)
                if reset and step % reset == reset - 1:
                    g = g + sum(st.e1) / n + st.e2
                    st.e1 = [torch.zeros_like(g) for _ in range(n)]
                    st.e2 = torch.zeros_like(g)
            o = 0
            for i in comp:
                k = params[i].numel()
                out[i] = g[o:o + k]
                o += k + ((-k) % chunk if align else 0)
        for i, p in enumerate(params):
            gi = out[i]
            if mom:
                gi, Mprev[i] = gi - beta * Mprev[i], gi
            p.grad = gi.view_as(p).clone()
        opt.step()
        if every and (step + 1) % every == 0:
            curve.append(accuracy(net, Xte, Yte))
    acc = accuracy(net, Xte, Yte)
    if flush:
        with torch.no_grad():
            for bi, b in enumerate(buckets):
                st = states.get((False, bi))
                if st is None or align or exact_below:
                    continue
                owe = sum(st.e1) / n + st.e2
                o = 0
                for i in b:
                    k = params[i].numel()
                    params[i].sub_(lr * owe[o:o + k].view_as(params[i]))
                    o += k
        curve.append(accuracy(net, Xte, Yte))
    return acc, curve


def rc(t, chunk):
    """The sender's rank-1 magnitude: c a_i b_j sign(t_ij), a and b the row and column RMS, c
    the L2-optimal factor (a vector, not a matrix, falls back to sign1)."""
    if t.dim() == 1:
        return S.codec("sign1", t, chunk)
    F = t.pow(2).mean(1, keepdim=True).sqrt() * t.pow(2).mean(0, keepdim=True).sqrt()
    F = torch.where(F > 0, F, torch.ones_like(F))
    c = (t.abs() * F).sum() / F.pow(2).sum()
    return c * F * torch.where(t >= 0, 1.0, -1.0)


def run_tensor(seed, codec1, n=2, steps=103, lr=0.05, beta=0.9, batch=64, chunk=1024):
    """Per tensor, rows split between the ranks, the other rank's half compressed with codec1
    (error feedback per rank), each rank's momentum compressed (the hook's momentum=)."""
    Xs, Ys, Xte, Yte = digits(batch, n)
    net = make(seed)
    params = list(net.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=beta)
    e1 = [[torch.zeros_like(p) for p in params] for _ in range(n)]
    mloc = [[torch.zeros_like(p) for p in params] for _ in range(n)]
    Mprev = [torch.zeros_like(p) for p in params]
    for step in range(steps):
        for r in range(n):
            net.zero_grad()
            torch.nn.functional.cross_entropy(net(Xs[r][step % len(Xs[r])]), Ys[r][step % len(Ys[r])]).backward()
            for i, p in enumerate(params):
                mloc[r][i].mul_(beta).add_(p.grad)
        for i, p in enumerate(params):
            R = p.shape[0]
            bo = [R * j // n for j in range(n + 1)]
            out = torch.empty_like(p)
            for j in range(n):
                acc = torch.zeros_like(p[bo[j]:bo[j + 1]])
                for r in range(n):
                    x = mloc[r][i][bo[j]:bo[j + 1]]
                    if r == j:
                        acc += x
                        continue
                    t = x + e1[r][i][bo[j]:bo[j + 1]]
                    if codec1 == "none":
                        q = t.clone()
                    elif codec1 == "rc":
                        q = rc(t, chunk)
                    elif codec1 == "row" and t.dim() == 2:
                        q = S.codec("sign1", t.flatten(), t.shape[1]).view_as(t)
                    elif codec1 == "col" and t.dim() == 2:
                        q = S.codec("sign1", t.t().flatten(), t.shape[0]).view(t.shape[1], t.shape[0]).t()
                    else:
                        q = S.codec("sign1", t.flatten(), chunk).view_as(t)
                    e1[r][i][bo[j]:bo[j + 1]] = t - q
                    acc += q
                out[bo[j]:bo[j + 1]] = acc / n
            g, Mprev[i] = out - beta * Mprev[i], out
            p.grad = g.clone()
        opt.step()
    return accuracy(net, Xte, Yte), []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--variants", default="none;sign1:int8+m")
    ap.add_argument("--every", type=int, default=0)
    ap.add_argument("--steps", type=int, default=103)
    a = ap.parse_args()
    torch.set_num_threads(1)
    seeds = list(map(int, a.seeds.split(",")))
    base = {s: run(s, None, steps=a.steps)[0] for s in seeds}
    print("uncompressed (exact), %d steps: %s, mean %.2f" % (a.steps, " ".join("%.2f" % base[s] for s in seeds),
                                                               sum(base.values()) / len(seeds)))
    print("| variant | test accuracy %% (seeds %s) | mean | vs exact per seed | mean vs exact |" % a.seeds)
    print("|---|---|---:|---|---:|")
    for v in a.variants.split(";"):
        parts = v.split("/")
        t0 = time.time()
        if parts[0].startswith("tensor:"):
            res = [run_tensor(s, parts[0][7:], steps=a.steps) for s in seeds]
        else:
            kw = {}
            for p in parts[1:]:
                k, val = p.split("=")
                kw[k] = val if k == "scale" else float(val) if k == "lr" else int(val)
            meth = None if parts[0] == "none" else parts[0]
            res = [run(s, meth, steps=a.steps, every=a.every, **kw) for s in seeds]
        accs = [r[0] for r in res]
        d = [x - base[s] for s, x in zip(seeds, accs)]
        print("| %s | %s | %.2f | %s | %+.2f |" % (v, " ".join("%.2f" % x for x in accs), sum(accs) / len(accs),
                                                    " ".join("%+.2f" % x for x in d), sum(d) / len(d)), flush=True)
        for s, r in zip(seeds, res):
            if r[1]:
                print("  seed %d: %s" % (s, " ".join("%.1f" % c for c in r[1])))
        print("  (%.0f s)" % (time.time() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
