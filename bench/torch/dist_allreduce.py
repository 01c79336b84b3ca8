"""all_reduce through backend "tile" against "gloo" in the same torchrun job (both groups over
the same ranks, alternating per size): latency (median of iterations) and bus bandwidth
(2 (n-1)/n x bytes / time), random f32 inputs.

    torchrun --nproc-per-node 2 bench/torch/dist_allreduce.py [--max-mib 64] [--iters 20]"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import tile.torch  # noqa: F401


def timed(x, group, iters):
    ts = []
    for _ in range(iters):
        dist.barrier(group=group)
        t0 = time.perf_counter()
        dist.all_reduce(x, group=group)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-mib", type=float, default=64)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    dist.init_process_group("tile")
    gloo = dist.new_group(backend="gloo")
    tile_g = dist.group.WORLD
    r, n = dist.get_rank(), dist.get_world_size()
    sizes = [s for s in [8, 64, 512, 4096, 32768, 2 ** 18, 2 ** 20, 2 ** 22, 2 ** 24, 2 ** 26] if s <= a.max_mib * 2 ** 20]
    if r == 0:
        print("| bytes | tile us | gloo us | tile busbw GB/s | gloo busbw GB/s | busbw tile/gloo |")
        print("|---:|---:|---:|---:|---:|---:|")
    for nb in sizes:
        x = torch.randn(max(1, nb // 4))
        it = a.iters if nb < 2 ** 22 else max(5, a.iters // 4)
        timed(x, tile_g, 2), timed(x, gloo, 2)
        tt, tg = timed(x, tile_g, it), timed(x, gloo, it)
        t = torch.tensor([tt, tg], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        tt, tg = t.tolist()
        f = 2 * (n - 1) / n * nb / 1e9 if n > 1 else nb / 1e9
        if r == 0:
            print("| %d | %.1f | %.1f | %.3f | %.3f | %.2fx |" % (nb, tt * 1e6, tg * 1e6, f / tt, f / tg, tg / tt), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
