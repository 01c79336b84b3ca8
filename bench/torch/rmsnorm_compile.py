"""A Tile RMSNorm operator (tile.torch.op) inside a torch.compile'd module against the same
module with PyTorch's RMSNorm (both compiled by inductor), on CUDA; random inputs; CUDA
events around ITERS calls after warm-up; prints a markdown table with the ratio.

    python3 bench/torch/rmsnorm_compile.py [--tokens 8192] [--hidden 4096] [--dtype bfloat16]"""
import argparse
import statistics

import torch
import tile
import tile.torch as tt

SRC = '''
import tilelang.language as T


def rms_norm(M, N, NB=1024, block_M=2, dtype="bfloat16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=256) as bx:
            x = T.alloc_fragment((block_M, NB), "float32")
            sq = T.alloc_fragment((block_M, NB), "float32")
            w = T.alloc_fragment((NB,), "float32")
            ss = T.alloc_fragment((block_M,), "float32")
            part = T.alloc_fragment((block_M,), "float32")
            T.fill(ss, 0.0)
            for t in T.serial(T.ceildiv(N, NB)):
                T.copy(X[bx * block_M, t * NB], x)
                for i, j in T.Parallel(block_M, NB):
                    sq[i, j] = x[i, j] * x[i, j]
                T.reduce_sum(sq, part, dim=1)
                for i in T.Parallel(block_M):
                    ss[i] += part[i]
            for i in T.Parallel(block_M):
                ss[i] = T.rsqrt(ss[i] / N + 1e-6)
            for t in T.serial(T.ceildiv(N, NB)):
                T.copy(X[bx * block_M, t * NB], x)
                T.copy(W[t * NB], w)
                for i, j in T.Parallel(block_M, NB):
                    x[i, j] = x[i, j] * ss[i] * w[j]
                T.copy(x, Y[bx * block_M, t * NB])

    return main
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    dt = getattr(torch, a.dtype)
    fac = lambda M, N, dtype: tile.compile(SRC, out_idx=[-1], M=M, N=N, dtype=dtype)
    rms = tt.op(fac, "tilebench::rms_norm", specialize=lambda x, w: dict(M=x.shape[0], N=x.shape[1], dtype=a.dtype))

    class Block(torch.nn.Module):
        def __init__(self, use_tile):
            super().__init__()
            self.use_tile = use_tile
            self.w = torch.nn.Parameter(torch.rand(a.hidden, dtype=dt, device="cuda") + 0.5)
            self.proj = torch.nn.Linear(a.hidden, a.hidden, dtype=dt, device="cuda")

        def norm(self, x):
            if self.use_tile:
                return rms(x, self.w)
            return torch.nn.functional.rms_norm(x, (a.hidden,), self.w, eps=1e-6)

        def forward(self, x):
            return self.proj(self.norm(x))

    torch.manual_seed(0)
    x = torch.randn(a.tokens, a.hidden, dtype=dt, device="cuda")
    rows = []
    with torch.no_grad():
        ref_mod, tile_mod = Block(False), Block(True)
        tile_mod.load_state_dict(ref_mod.state_dict())
        for label, fn_t, fn_r in (("RMSNorm alone", torch.compile(tile_mod.norm, fullgraph=True), torch.compile(ref_mod.norm, fullgraph=True)),
                                  ("RMSNorm + Linear module", torch.compile(tile_mod, fullgraph=True), torch.compile(ref_mod, fullgraph=True))):
            yt, yr = fn_t(x), fn_r(x)
            err = (yt.float() - yr.float()).abs().max().item()
            res = {}
            for name, fn in (("tile", fn_t), ("torch", fn_r)):
                for _ in range(10):
                    fn(x)
                ts = []
                for _ in range(5):
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    for _ in range(a.iters):
                        fn(x)
                    e1.record()
                    e1.synchronize()
                    ts.append(e0.elapsed_time(e1) / a.iters * 1e3)
                res[name] = statistics.median(ts)
            rows.append((label, res["tile"], res["torch"], err))
    gb = 2 * a.tokens * a.hidden * x.element_size() / 1e9
    print("| %s, x [%d, %d] %s | Tile op (us) | inductor RMSNorm (us) | torch / tile | max abs diff |" % (torch.cuda.get_device_name(), a.tokens, a.hidden, a.dtype))
    print("|---|---|---|---|---|")
    for label, t, r, err in rows:
        print("| %s | %.1f | %.1f | %.2f | %.3g |" % (label, t, r, r / t, err))
    print("\nRMSNorm alone moves %.3f GB (read x, write y): Tile %.0f GB/s" % (gb, gb / (rows[0][1] * 1e-6)))


if __name__ == "__main__":
    main()
