#!/usr/bin/env python3
"""bench/robust/cuda_frag.py — kernels whose fragments are large (issue 19: fragments are
registers, spilled past the register budget; their size never stops a kernel): TileLang's
compile benchmark's [32, N] softmax, softmax with many rows a block at many threads, the
RMSNorm example at 8 and 1 rows a block, and flash attention at TileLang's example
configuration (block 128 x 128, 128 threads) and at the project's, each timed against PyTorch
in the same run (torch.softmax, F.rms_norm, SDPA with the flash backend).

    python3 bench/robust/cuda_frag.py [--rows 8192x8192] [--attn 8x32x4096x128]

Same method as cuda.py (its cuda_time and its row-kernel inputs, checks and peers): checked
against a float32 torch reference first, then the median of 20 calls after 3 warm-ups.
"""
import argparse
import os
import sys

import torch

import tile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from cuda import cuda_time, prepare  # noqa: E402

EX, TD_ = os.path.join(ROOT, "examples"), os.path.join(ROOT, "tests", "cuda", "data")


def rows():
    s, r = os.path.join(TD_, "frag_rows_softmax.tl"), os.path.join(EX, "rmsnorm.tl")
    V = [("softmax", "[32, N] f32 t128 (TileLang's compile benchmark)", s, dict(dtype="float32")),
         ("softmax", "[64, N] f32 t512", s, dict(dtype="float32", block_M=64, threads=512)),
         ("softmax", "[4, N] f32 t128", s, dict(dtype="float32", block_M=4)),
         ("softmax", "[1, N] f32 t256", s, dict(dtype="float32", block_M=1, threads=256))]
    for dt in ("float32", "bfloat16"):
        V += [("rmsnorm", "%s 8 rows t128 (defaults)" % dt, r, dict(dtype=dt)),
              ("rmsnorm", "%s 1 row t128" % dt, r, dict(dtype=dt, block_M=1))]
    return V


def attn():
    t, e = os.path.join(TD_, "attn_tl_mha.tl"), os.path.join(EX, "flash_attention.tl")
    return [("float16 128x128 t128 (TileLang's example)", t, dict(dtype="float16", block_M=128, block_N=128, threads=128)),
            ("bfloat16 128x128 t128 (TileLang's configuration)", e, dict(dtype="bfloat16", block_M=128, block_N=128, threads=128)),
            ("bfloat16 64x128 t128", e, dict(dtype="bfloat16", block_M=64, block_N=128)),
            ("bfloat16 128x128 t256 s3 (bench configuration)", e, dict(dtype="bfloat16", block_M=128, block_N=128, threads=256, num_stages=3)),
            ("bfloat16 64x64 t128 (defaults)", e, dict(dtype="bfloat16"))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", default="8192x8192")
    p.add_argument("--attn", default="8x32x4096x128")
    a = p.parse_args()
    a.rows = tuple(int(x) for x in a.rows.split("x"))
    B, H, S, D = (int(x) for x in a.attn.split("x"))
    L = ["| family | variant | tile | peer | tile / peer |", "|---|---|---:|---:|---:|"]
    for fam, name, path, consts in rows():
        torch.manual_seed(0)
        args, check, work, peer = prepare(fam, name, path, consts, a)
        tp = cuda_time(peer)
        try:
            k = tile.compile(path, target="cuda", M=a.rows[0], N=a.rows[1], **consts)
            k(*args)
            torch.cuda.synchronize()
            check()
            t = cuda_time(lambda: k(*args))
            L.append("| %s | %s | %.1f GB/s | %.1f | %.2f |" % (fam, name, work / t / 1e9, work / tp / 1e9, tp / t))
        except Exception as ex:  # noqa: BLE001
            L.append("| %s | %s | fails: %s | %.1f | |" % (fam, name, str(ex).strip().splitlines()[0][:160].replace("|", "/"), work / tp / 1e9))
        print(L[-1], flush=True)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    flops = 4.0 * B * H * S * S * D
    for name, path, consts in attn():
        torch.manual_seed(0)
        dt = {"float16": torch.float16, "bfloat16": torch.bfloat16}[consts["dtype"]]
        q, k_, v = (torch.randn(B, S, H, D, device="cuda", dtype=dt) for _ in range(3))
        o = torch.empty_like(q)
        qh, kh, vh = (x.permute(0, 2, 1, 3) for x in (q, k_, v))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            tp = cuda_time(lambda: F.scaled_dot_product_attention(qh, kh, vh))
        try:
            kern = tile.compile(path, target="cuda", batch=B, heads=H, seq_len=S, dim=D, is_causal=False, **consts)
            kern(q, k_, v, o)
            torch.cuda.synchronize()
            ref = F.scaled_dot_product_attention(qh.float(), kh.float(), vh.float()).permute(0, 2, 1, 3)
            err = ((o.float() - ref).norm() / ref.norm()).item()
            if not err <= 1e-2:
                raise RuntimeError("relative error %.3g" % err)
            t = cuda_time(lambda: kern(q, k_, v, o))
            L.append("| attention %s | %s | %.1f TFLOP/s | %.1f | %.2f |" % (a.attn, name, flops / t / 1e12, flops / tp / 1e12, tp / t))
        except Exception as ex:  # noqa: BLE001
            L.append("| attention %s | %s | fails: %s | %.1f | |" % (a.attn, name, str(ex).strip().splitlines()[0][:160].replace("|", "/"), flops / tp / 1e12))
        print(L[-1], flush=True)
    print("\n".join(L))


if __name__ == "__main__":
    sys.exit(main())
