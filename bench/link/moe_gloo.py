#!/usr/bin/env python3
"""moe_gloo.py — the same dispatch + combine as tlink_moe_dispatch/combine (flat), with
torch.distributed's gloo backend and all_to_all_single (bench/link/moe.sh runs it in the same
run as TileLink and Open MPI). Run under torchrun or `tile launch` (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT). Options as moe_common.h: -t tokens, -H hidden, -E experts, -k top-k,
-d bf16|fp8, -w warm-up, -i iterations, -s seed. The routing and data come from the same
xorshift as the C benchmarks, so every library moves the same tokens.

Per iteration, as a torch user would: per destination the token indices (each token once per
rank, ascending) and rows per local expert; all_to_all_single of the counts, of the metadata
(index, scale, per slot the local expert and weight) and of the packed rows (index_select);
the rows placed per expert by (source rank, token) (index_copy, a token's further rows from
the same receive row). Combine: the weighted sum of each received token's rows in f32
(index_add, slot order), rounded to bf16, all_to_all_single back, summed per token over the
ranks in rank order (f32), rounded. Rows travel as uint8 views (gloo's all_to_all takes no
16-bit integer or bfloat16 tensors)."""
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

M64 = (1 << 64) - 1


def rng_stream(seed):
    s = seed
    while True:
        s ^= (s << 13) & M64
        s ^= s >> 7
        s ^= (s << 17) & M64
        yield s


def make(o, rank):
    """moe_common.h's moe_make, in the same order of draws"""
    T, H, E, K = o["t"], o["H"], o["E"], o["k"]
    seed = (o["s"] * 0x9E3779B97F4A7C15 + rank * 0xBF58476D1CE4E5B9 + 1) & M64
    g = rng_stream(seed)
    ids = np.zeros((T, K), np.int32)
    w = np.zeros((T, K), np.float32)
    scales = np.zeros(T, np.float32)
    for t in range(T):
        total = np.float32(0)
        for j in range(K):
            while True:
                e = next(g) % E
                if e not in ids[t, :j]:
                    break
            ids[t, j] = e
            w[t, j] = np.float32(next(g) % 1000 + 1)
            total = np.float32(total + w[t, j])
        w[t] = (w[t] / total).astype(np.float32)
        if o["fp8"]:
            scales[t] = np.float32(next(g) % 64 + 1) / np.float32(64)
    # the rows: moe_common.h's hash of (rank, token, element)
    t_ = np.arange(T, dtype=np.uint32).reshape(-1, 1)
    i_ = np.arange(H, dtype=np.uint32).reshape(1, -1)
    h = (t_ * np.uint32(2654435761)) ^ (i_ * np.uint32(40503)) ^ np.uint32((rank * 9176) & 0xFFFFFFFF)
    h ^= h >> np.uint32(15)
    if o["fp8"]:
        x = (h & np.uint32(0xB7)).astype(np.uint8)
    else:
        x = (np.uint32(0x3C00) | (h & np.uint32(0x80FF))).astype(np.uint16).view(np.int16)
    return ids, w, scales, np.ascontiguousarray(x)


def main():
    o = {"t": 4096, "H": 7168, "E": 256, "k": 8, "w": 1, "i": 3, "s": 1, "fp8": False}
    a = sys.argv[1:]
    for i in range(0, len(a), 2):
        key, v = a[i].lstrip("-"), a[i + 1]
        if key == "d":
            o["fp8"] = v == "fp8"
        elif key in o:
            o[key] = int(v)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    T, H, E, K = o["t"], o["H"], o["E"], o["k"]
    L = E // W
    ids_np, w_np, sc_np, x_np = make(o, rank)
    ids = torch.from_numpy(ids_np).long()
    w = torch.from_numpy(w_np)
    x = torch.from_numpy(x_np)
    sc = torch.from_numpy(sc_np)
    dest = ids // L                                   # [T, K] destination rank per slot
    # each token once per rank: the first slot that lands there
    first = torch.ones_like(dest, dtype=torch.bool)
    for j in range(1, K):
        first[:, j] = (dest[:, j:j + 1] != dest[:, :j]).all(dim=1)
    remote = (first & (dest != rank)).sum().item()
    tot = torch.tensor([float(remote)], dtype=torch.float64)
    dist.all_reduce(tot)
    rb = H * (1 if o["fp8"] else 2)
    n = o["w"] + o["i"]
    td, tc = [], []
    rows_total = 0
    for it in range(n):
        dist.barrier()
        t0 = time.perf_counter()
        # ---- dispatch ----
        t_idx, j_idx = torch.nonzero(first, as_tuple=True)            # token order, slot order
        q_idx = dest[t_idx, j_idx]
        perm0 = torch.sort(q_idx, stable=True).indices                 # by destination, then token
        pairs_q, pairs_t = q_idx[perm0], t_idx[perm0]
        scount = torch.bincount(pairs_q, minlength=W)
        ecount = torch.zeros(W, L, dtype=torch.long)
        ecount.view(-1).index_add_(0, ids.view(-1), torch.ones(T * K, dtype=torch.long))
        cnt = torch.cat([scount.view(W, 1), ecount], dim=1).contiguous()
        rcnt = torch.empty_like(cnt)
        dist.all_to_all_single(rcnt, cnt)
        rtok = rcnt[:, 0].tolist()
        stok = scount.tolist()
        # metadata: token, and per slot the local expert (-1 elsewhere) and weight
        slot_e = torch.where(dest[pairs_t] == pairs_q.view(-1, 1), ids[pairs_t] % L, torch.full_like(ids[pairs_t], -1))
        slot_w = torch.where(slot_e >= 0, w[pairs_t], torch.zeros_like(w[pairs_t]))
        scale = sc[pairs_t].view(-1, 1)
        smeta = torch.cat([pairs_t.view(-1, 1).int(), scale.view(torch.int32), slot_e.int(), slot_w.view(torch.int32)],
                          dim=1).contiguous()
        rmeta = torch.empty((sum(rtok), 2 + 2 * K), dtype=torch.int32)
        dist.all_to_all_single(rmeta, smeta, rtok, stok)
        sx = x.index_select(0, pairs_t)                                 # pack
        rx8 = torch.empty((sum(rtok), rb), dtype=torch.uint8)
        dist.all_to_all_single(rx8, sx.view(torch.uint8), rtok, stok)
        rx = rx8.view(x.dtype)
        # unpack: rows of expert e by (source, token), slot order
        nr = sum(rtok)
        src = torch.repeat_interleave(torch.arange(W), torch.tensor(rtok)) if nr else torch.zeros(0, dtype=torch.long)
        rsc_u = rmeta[:, 1].contiguous().view(torch.float32)
        re = rmeta[:, 2:2 + K].long()
        rwt = rmeta[:, 2 + K:].contiguous().view(torch.float32)
        u_idx, j_idx = torch.nonzero(re >= 0, as_tuple=True)          # (unique token, slot), token order
        ex = re[u_idx, j_idx]
        key = ex * W + src[u_idx]                                       # sort by (expert, source), stably
        perm = torch.sort(key, stable=True).indices
        nrows = perm.numel()
        row_of = torch.empty(nrows, dtype=torch.long)
        row_of[perm] = torch.arange(nrows)
        rows = torch.empty((nrows, H), dtype=x.dtype)
        rows.index_copy_(0, row_of, rx.index_select(0, u_idx))
        rw = torch.empty(nrows)
        rw[row_of] = rwt[u_idx, j_idx]
        rsc = torch.empty(nrows)
        rsc[row_of] = rsc_u[u_idx]
        td.append(time.perf_counter() - t0)
        rows_total = nrows
        # the experts' outputs (untimed): the rows as bf16
        if o["fp8"]:
            eo = (rows.view(torch.float8_e4m3fn).to(torch.float32) * rsc.view(-1, 1)).to(torch.bfloat16)
        else:
            eo = rows.view(torch.bfloat16)
        dist.barrier()
        t0 = time.perf_counter()
        # ---- combine ----
        acc = torch.zeros((nr, H), dtype=torch.float32)
        contrib = eo.index_select(0, row_of).to(torch.float32) * rw[row_of].view(-1, 1)
        acc.index_add_(0, u_idx, contrib)
        part = acc.to(torch.bfloat16).view(torch.uint8)
        back = torch.empty((sum(stok), 2 * H), dtype=torch.uint8)
        dist.all_to_all_single(back, part, stok, rtok)
        y = torch.zeros((T, H), dtype=torch.float32)
        y.index_add_(0, pairs_t, back.view(torch.bfloat16).to(torch.float32))
        y = y.to(torch.bfloat16)
        tc.append(time.perf_counter() - t0)
    cks = torch.tensor([y.to(torch.float64).sum().item()], dtype=torch.float64)
    dist.all_reduce(cks)
    tdt = torch.tensor(td, dtype=torch.float64)
    tct = torch.tensor(tc, dtype=torch.float64)
    dist.all_reduce(tdt, op=dist.ReduceOp.MAX)
    dist.all_reduce(tct, op=dist.ReduceOp.MAX)
    rows_t = torch.tensor([float(rows_total)], dtype=torch.float64)
    dist.all_reduce(rows_t)
    if rank == 0:
        md = tdt[o["w"]:].mean().item() * 1e3
        mc = tct[o["w"]:].mean().item() * 1e3
        print(f"RESULT lib=gloo ranks={W} hosts=- tokens={T} hidden={H} experts={E} topk={K} "
              f"dtype={'fp8' if o['fp8'] else 'bf16'} algo=all_to_all_single dispatch_ms={md:.3f} combine_ms={mc:.3f} "
              f"disp_bytes={tot.item() * rb:.0f} comb_bytes={tot.item() * H * 2:.0f} rows={rows_t.item():.0f} "
              f"checksum={cks.item():.9g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
