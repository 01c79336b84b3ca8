#!/usr/bin/env python3
"""bench/cuda/dequant.py — the fp4-dequantising GEMM (tests/cuda/data/gemm_dequant_fp4.tl) on the
GPU: output checked first against a PyTorch reference, then timed, with the f16 GEMM of the
already dequantised weights (cuBLAS, torch.matmul) as the peer in the same run.

For each configuration: random X (f16, N(0,1)), W (uint8: two random e2m1 codes a byte) and S
(uint8); `tile run --target cuda --in ... --out Ct=... --bench --iters N` (CUDA events, L2
flushed, median); the reference decodes W in PyTorch (the e2m1 table, times 2^((S & 7) - 4) per
group of 32 with with_scale) and computes Ct = Wd @ X^T in f32, rounded to f16 once; the
norm-wise relative error must be below 2e-3 (f16's --check tolerance) or the row says FAIL.
The same program with TILE_CUDA_PROLOGUE=0 (the decoding left in the loop: SIMT) is timed too.

  TILE=build/bin/tile python3 bench/cuda/dequant.py [--iters 20] [--n 4096]
"""
import argparse, os, re, subprocess, sys, tempfile
import numpy as np
import torch

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def reference(X, W, S, with_scale, dt):
    n, kh = W.shape
    codes = torch.stack((W & 0xF, W >> 4), dim=-1).reshape(n, kh * 2).long()
    Wd = E2M1.to(X.device)[codes]
    if with_scale:
        sc = torch.pow(2.0, (S.long() & 7).float() - 4.0)          # [N, K // 32]
        Wd = Wd * sc.repeat_interleave(32, dim=1)
    Wd = Wd.to(dt)
    return (Wd.float() @ X.float().t()).to(dt), Wd


def tile_run(tile, args, files, out, iters, env_extra):
    env = dict(os.environ, **env_extra)
    cmd = [tile, "run", "tests/cuda/data/gemm_dequant_fp4.tl", *args, "--target", "cuda", "--bench", "--iters", str(iters)]
    for k, v in files.items():
        cmd += ["--in", "%s=%s" % (k, v)]
    cmd += ["--out", "Ct=%s" % out]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, TILE_LOG="info"))
    if r.returncode != 0:
        return None, r.stdout + r.stderr, ""
    m = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
    low = ",".join(re.findall(r": lowering ([a-z0-9-]+)", r.stderr))
    return (float(m.group(1)) if m else None), r.stdout + r.stderr, low


def peer_ms(Wd, X, iters):
    f = lambda: torch.matmul(Wd, X.t())
    for _ in range(3):
        f()
    fl = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    ts = []
    for _ in range(iters):
        fl.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--n", type=int, default=4096)
    a = ap.parse_args()
    tile = os.environ.get("TILE", "build/bin/tile")
    n = a.n
    # f16 only: .npy has no bfloat16 for --in
    configs = [("128x128x128 s2 t256 (upstream example)", dict()),
               ("128x128x128 s2 t128", dict(threads=128)),
               ("128x128x64 s3 t256 scaled", dict(block_K=64, num_stages=3, with_scale=True)),
               ("128x128x64 s3 t256 direct out", dict(block_K=64, num_stages=3, out_c="direct"))]
    print("| config | Tile ms | TFLOP/s | lowering | err | cuBLAS f16 on dequantised W ms | ratio | prologue off ms |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    g = torch.Generator().manual_seed(1)
    dt = torch.float16
    with tempfile.TemporaryDirectory() as d:
        for name, kw in configs:
            X = torch.randn(n, n, generator=g).to(dt)
            W = torch.randint(0, 256, (n, n // 2), generator=g, dtype=torch.uint8)
            S = torch.randint(0, 256, (n, n // 32), generator=g, dtype=torch.uint8)
            files = {}
            for k, t in (("X", X), ("W", W), ("S", S)):
                files[k] = os.path.join(d, k + ".npy")
                np.save(files[k], t.numpy())
            args = []
            for k, v in dict(M=n, N=n, K=n, **kw).items():
                args += ["-D", "%s=%s" % (k, v)]
            out = os.path.join(d, "ct.npy")
            ms, log, low = tile_run(tile, args, files, out, a.iters, {})
            if ms is None:
                print("| %s | FAILED | | | | | | |" % name)
                print(log[-2000:], file=sys.stderr)
                continue
            ref, Wd = reference(X.cuda(), W.cuda(), S.cuda(), kw.get("with_scale", False), dt)
            got = torch.from_numpy(np.load(out)).cuda().float()
            err = ((got - ref.float()).norm() / ref.float().norm()).item()
            ok = "%.1e" % err + ("" if err < 2e-3 else " FAIL")
            pms = peer_ms(Wd, X.cuda(), a.iters)
            oms, _, _ = tile_run(tile, args, files, out, 3, {"TILE_CUDA_PROLOGUE": "0"})
            tf = 2.0 * n ** 3 / (ms * 1e-3) / 1e12
            print("| %s | %.3f | %.1f | %s | %s | %.3f | %.2f | %s |" % (name, ms, tf, low, ok, pms, pms / ms, "%.2f" % oms if oms else "-"), flush=True)

if __name__ == "__main__":
    main()
