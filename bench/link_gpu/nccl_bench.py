"""nccl_bench.py — the NCCL side of bench/link_gpu/run.sh: nccl-tests' columns through
torch.distributed (NCCL backend), one process per GPU, same sizes, warm-up and iteration
counts and the same timing as `tile link-bench --device cuda` (wall time of `iters` enqueued
collectives and one synchronize, the slowest rank's).

    python3 -m torch.distributed.run --nproc_per_node 2 nccl_bench.py -c allreduce -b 8 -e 8G -f 2
    ... -c allreduce,broadcast -o DIR     several collectives in one launch: DIR/nccl-<c>.log each
"""
import argparse, os, sys, time
import torch
import torch.distributed as dist


def size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * m[s[-1].upper()]) if s[-1].upper() in m else int(s)


ap = argparse.ArgumentParser()
ap.add_argument("-c", default="allreduce")
ap.add_argument("-b", type=size, default=8)
ap.add_argument("-e", type=size, default=32 << 20)
ap.add_argument("-f", type=float, default=2)
ap.add_argument("-w", type=int, default=5)
ap.add_argument("-i", type=int, default=20)
ap.add_argument("-d", default="f32")
ap.add_argument("-o", default=None, help="with several -c: write DIR/nccl-<c>.log per collective")
a = ap.parse_args()
assert os.environ.get("NCCL_NVLS_ENABLE") == "0", "export NCCL_NVLS_ENABLE=0"
rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl", device_id=torch.device("cuda", int(os.environ["LOCAL_RANK"])))
dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[a.d]
es = torch.tensor([], dtype=dt).element_size()
maxel = a.e // es
sbuf = torch.ones(maxel + 16, dtype=dt, device="cuda")
rbuf = torch.zeros(maxel + 16, dtype=dt, device="cuda")
for coll in a.c.split(","):
    out = open(os.path.join(a.o, f"nccl-{coll}.log"), "w") if (a.o and rank == 0) else sys.stdout
    factor = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "alltoall": (n - 1) / n, "broadcast": 1.0}[coll]

    def run(cnt):
        if coll == "allreduce":
            dist.all_reduce(sbuf[:cnt])
        elif coll == "allgather":
            dist.all_gather_into_tensor(rbuf[:cnt * n], sbuf[:cnt])
        elif coll == "reduce_scatter":
            dist.reduce_scatter_tensor(rbuf[:cnt], sbuf[:cnt * n])
        elif coll == "alltoall":
            dist.all_to_all_single(rbuf[:cnt * n], sbuf[:cnt * n])
        elif coll == "broadcast":
            dist.broadcast(sbuf[:cnt], 0)

    if rank == 0:
        print(f"# nccl (torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}): {coll}, {n} ranks, dtype {a.d}", file=out)
        print(f"# {'size':>12} {'count':>12} {'type':>8} {'time':>10} {'algbw':>9} {'busbw':>9}", file=out)
    b = a.b
    while b <= a.e:
        total = b // es
        cnt = total // n if coll in ("allgather", "reduce_scatter", "alltoall") else total
        eff = (cnt * n if coll in ("allgather", "reduce_scatter", "alltoall") else cnt) * es
        if cnt > 0:
            for _ in range(a.w):
                run(cnt)
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(a.i):
                run(cnt)
            torch.cuda.synchronize()
            t = torch.tensor([(time.perf_counter() - t0) / a.i], dtype=torch.float64, device="cuda")
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            us = t.item() * 1e6
            algbw = eff / (us * 1e3)
            if rank == 0:
                print(f"  {eff:12d} {eff // es:12d} {a.d:>8} {us:10.2f} {algbw:9.3f} {algbw * factor:9.3f}", file=out, flush=True)
        nb = int(b * a.f)
        b = nb if nb > b else b + 1
dist.destroy_process_group()
