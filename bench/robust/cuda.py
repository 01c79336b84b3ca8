#!/usr/bin/env python3
"""bench/robust/cuda.py — robustness of the cuda target: the project's GEMM, softmax and
RMSNorm examples (and this folder's epilogue variants) over configurations a user could
pick — tile sizes, stages, thread counts, B layout, dtypes, an epilogue; decode-shaped GEMMs
(M = 1..128 rows against a 4096 x 4096 weight, timed in microseconds); flash attention over
the head dimension (64/128/256, peer: torch SDPA) — each timed on
torch CUDA tensors against PyTorch (cuBLAS for the GEMMs, torch's own softmax / RMSNorm
for the row kernels) in the same run, and against the best variant of its family.

    python3 bench/robust/cuda.py [--gemm 4096] [--rows 8192x8192] [--jobs 16] [--out FILE] [--only REGEX]

Every variant is compiled through the Python package (tile.compile, compiles in parallel
threads), checked against a torch float32 reference, then timed with CUDA events: the
median of 20 back-to-back calls after 3 warm-ups, inputs in device memory, no copies. A
variant that does not compile or gives a wrong result is listed with the reason. Bar
(issue 19): every variant within 0.9 of the best of its family and dtype, the best at
>= 1.0x the peer.
"""
import argparse
import concurrent.futures as cf
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys

import torch

import tile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
HERE = os.path.dirname(os.path.abspath(__file__))
TD = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def gemm_variants():
    g, e = os.path.join(EX, "gemm.tl"), os.path.join(HERE, "cpu_gemm_epilogue.tl")
    V = []
    for bm in (64, 128):
        for bn in (128, 256):
            for bk in (32, 64):
                for st in (2, 3):
                    for th in (128, 256):
                        V.append(("float16 %dx%dx%d s%d t%d" % (bm, bn, bk, st, th), g,
                                  dict(dtype="float16", block_M=bm, block_N=bn, block_K=bk, num_stages=st, threads=th)))
    big = dict(block_M=128, block_N=256, block_K=64, num_stages=3, threads=256)
    V += [
        ("float16 64x64x32 s2 t128 (defaults)", g, dict(dtype="float16")),
        ("float16 128x256x64 s4 t256", g, dict(big, dtype="float16", num_stages=4)),
        ("float16 128x256x64 s3 t384", g, dict(big, dtype="float16", threads=384)),
        ("float16 128x256x64 s3 t256 B stored NxK", g, dict(big, dtype="float16", trans_B=True)),
        ("float16 128x256x64 s3 t256 out float16", g, dict(big, dtype="float16", out_dtype="float16")),
        ("float16 128x256x64 s3 t256 + bias, ReLU", e, dict(big, dtype="float16")),
        ("bfloat16 128x256x64 s3 t256", g, dict(big, dtype="bfloat16")),
        ("bfloat16 128x256x64 s3 t256 B stored NxK", g, dict(big, dtype="bfloat16", trans_B=True)),
        ("bfloat16 128x128x64 s3 t256 B stored NxK out bfloat16", g,
         dict(big, dtype="bfloat16", block_N=128, trans_B=True, out_dtype="bfloat16")),
        ("bfloat16 64x64x32 s2 t128 (defaults)", g, dict(dtype="bfloat16")),
        ("bfloat16 128x128x32 s2 t256", g, dict(dtype="bfloat16", block_M=128, block_N=128, block_K=32, threads=256)),
        ("bfloat16 128x256x32 s3 t256 B stored NxK", g, dict(big, dtype="bfloat16", block_K=32, trans_B=True)),
        ("float16 128x128x16 s4 t256", g, dict(dtype="float16", block_M=128, block_N=128, block_K=16, num_stages=4, threads=256)),
    ]
    G = [("gemm",) + v for v in V]
    # decode-shaped GEMMs: M rows of activations against a K x N weight (the time is the figure:
    # they are bound by reading B), each M its own family
    for m in (1, 16, 64, 128):
        for name, c in (("64x64x32 s2 t128 (defaults)", dict()),
                        ("64x128x64 s3 t128", dict(block_M=64, block_N=128, block_K=64, num_stages=3)),
                        ("64x64x128 s4 t128", dict(block_M=64, block_N=64, block_K=128, num_stages=4))):
            G.append(("decode M=%d" % m, "bfloat16 %s" % name, g, dict(c, dtype="bfloat16", out_dtype="bfloat16", M=m, N=4096, K=4096)))
    return G


def attn_variants():
    """flash_attention.tl, bf16 4 x 32 heads x 4096, not causal, over the head dimension"""
    f = os.path.join(EX, "flash_attention.tl")
    V = []
    for d, cfgs in ((64, ((128, 128, 256, 2), (128, 64, 256, 2))), (128, ((128, 128, 256, 3), (128, 64, 256, 2))),
                    (256, ((128, 64, 256, 2), (64, 64, 128, 2)))):
        for bm, bn, th, st in cfgs:
            V.append(("attn d=%d" % d, "bfloat16 %dx%d s%d t%d" % (bm, bn, st, th), f,
                      dict(dtype="bfloat16", batch=4, heads=32, seq_len=4096, dim=d, is_causal=False,
                           block_M=bm, block_N=bn, threads=th, num_stages=st)))
    return V


def row_variants():
    s, sr, r = os.path.join(EX, "softmax.tl"), os.path.join(EX, "softmax_row.tl"), os.path.join(EX, "rmsnorm.tl")
    V = []
    for dt in ("float32", "bfloat16"):
        V += [("softmax", "%s 8x64 t128 (defaults)" % dt, s, dict(dtype=dt)),
              ("softmax", "%s whole row, 1 row a block t256" % dt, sr, dict(dtype=dt, block_M=1)),
              ("rmsnorm", "%s 8 rows t128 (defaults)" % dt, r, dict(dtype=dt)),
              ("rmsnorm", "%s 1 row t128" % dt, r, dict(dtype=dt, block_M=1))]
    V += [("softmax", "float32 4x1024 t256", s, dict(dtype="float32", block_M=4, block_N=1024, threads=256)),
          ("softmax", "float32 whole row, 4 rows a block t256", sr, dict(dtype="float32", block_M=4)),
          ("softmax", "float32 whole row, 1 row a block t512", sr, dict(dtype="float32", block_M=1, threads=512)),
          ("rmsnorm", "float32 2 rows t256", r, dict(dtype="float32", block_M=2, threads=256)),
          ("rmsnorm", "float32 8 rows t384", r, dict(dtype="float32", threads=384))]
    return V


def cuda_time(fn, warm=3, iters=20):
    for _ in range(warm):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev) * 1e-3


def prepare(fam, name, path, consts, a):
    """inputs, the call, the reference check, the work (flops or bytes), the peer's call"""
    dt = TD[consts["dtype"]]
    if fam == "gemm" or fam.startswith("decode"):
        n = a.gemm
        m, nn, kk = consts.get("M", n), consts.get("N", n), consts.get("K", n)
        tb = consts.get("trans_B", False)
        out = TD[consts.get("out_dtype", "float32")]
        A = torch.randn(m, kk, device="cuda", dtype=dt)
        B = torch.randn(nn, kk, device="cuda", dtype=dt) if tb else torch.randn(kk, nn, device="cuda", dtype=dt)
        C = torch.empty(m, nn, device="cuda", dtype=out)
        epi = path.endswith("cpu_gemm_epilogue.tl")
        bias = torch.randn(nn, device="cuda", dtype=torch.float32) if epi else None
        args = [A, B] + ([bias] if epi else []) + [C]
        Bm = B.t() if tb else B

        def check():
            ref = A.float() @ Bm.float()
            if epi:
                ref = torch.relu(ref + bias)
            err = ((C.float() - ref).norm() / ref.norm()).item()
            tol = {torch.float32: 1e-3, torch.float16: 3e-3, torch.bfloat16: 1.6e-2}[out]
            if not err <= tol:
                raise RuntimeError("relative error %.3g > %g" % (err, tol))

        bias_dt = bias.to(dt) if epi else None

        def peer():  # cuBLAS in the input dtype (f32 accumulation), as a torch user writes it
            return torch.relu(torch.addmm(bias_dt, A, Bm)) if epi else torch.matmul(A, Bm)
        return args, check, 2.0 * m * nn * kk, peer
    if fam.startswith("attn"):
        b, h, sq, d = consts["batch"], consts["heads"], consts["seq_len"], consts["dim"]
        Q, K, Vv = (torch.randn(b, sq, h, d, device="cuda", dtype=dt) for _ in range(3))
        O = torch.empty_like(Q)

        def sdpa():
            return torch.nn.functional.scaled_dot_product_attention(Q.transpose(1, 2), K.transpose(1, 2), Vv.transpose(1, 2))

        def check():
            ref = sdpa().transpose(1, 2).float()
            err = ((O.float() - ref).norm() / ref.norm()).item()
            if not err <= 1.6e-2:
                raise RuntimeError("relative error %.3g" % err)
        return [Q, K, Vv, O], check, 4.0 * b * h * sq * sq * d, sdpa
    M, N = a.rows
    X = torch.randn(M, N, device="cuda", dtype=dt)
    Y = torch.empty_like(X)
    if fam == "softmax":
        def check():
            ref = torch.softmax(X.float(), dim=1)
            err = ((Y.float() - ref).norm() / ref.norm()).item()
            if not err <= (1e-5 if dt == torch.float32 else 1.6e-2):
                raise RuntimeError("relative error %.3g" % err)
        return [X, Y], check, 2.0 * X.numel() * X.element_size(), lambda: torch.softmax(X, 1)
    W = torch.randn(N, device="cuda", dtype=dt)

    def check():
        x = X.float()
        ref = x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + 1e-6) * W.float()
        err = ((Y.float() - ref).norm() / ref.norm()).item()
        if not err <= (1e-5 if dt == torch.float32 else 1.6e-2):
            raise RuntimeError("relative error %.3g" % err)
    return [X, W, Y], check, 2.0 * X.numel() * X.element_size(), lambda: torch.nn.functional.rms_norm(X, (N,), W, 1e-6)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gemm", type=int, default=4096)
    p.add_argument("--rows", default="8192x8192")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    p.add_argument("--out")
    p.add_argument("--only", help="a regular expression: the variants whose 'family variant' it finds")
    a = p.parse_args()
    a.rows = tuple(int(x) for x in a.rows.split("x"))
    V = gemm_variants() + attn_variants() + row_variants()
    if a.only:
        V = [v for v in V if re.search(a.only, "%s %s" % (v[0], v[1]))]

    def build(v):
        fam, name, path, consts = v
        sz = dict(M=a.gemm, N=a.gemm, K=a.gemm) if fam == "gemm" else dict() if fam.startswith(("decode", "attn")) else dict(M=a.rows[0], N=a.rows[1])
        try:
            return tile.compile(path, target="cuda", **sz, **consts), None
        except Exception as e:  # noqa: BLE001
            return None, str(e).strip().splitlines()[0][:200]
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        built = list(ex.map(build, V))
    res = []
    for (fam, name, path, consts), (k, err) in zip(V, built):
        torch.manual_seed(0)
        args, check, work, peer = prepare(fam, name, path, consts, a)
        t = None
        if k is not None:
            try:
                k(*args)
                torch.cuda.synchronize()
                check()
                t = cuda_time(lambda: k(*args))
            except Exception as e:  # noqa: BLE001
                err = str(e).strip().splitlines()[0][:200]
        tp = cuda_time(peer)
        res.append((fam, name, consts["dtype"], t, tp, work, err))
        print("%-8s %-52s %s" % (fam, name, "%.3f ms" % (t * 1e3) if t else err), flush=True)
    best = {}
    for fam, name, dt, t, tp, work, err in res:
        if t:
            best[(fam, dt)] = min(best.get((fam, dt), t), t)
    unit = {"gemm": ("TFLOP/s", 1e12), "softmax": ("GB/s", 1e9), "rmsnorm": ("GB/s", 1e9)}
    for fam in {r[0] for r in res if r[0].startswith("attn")}:
        unit[fam] = ("TFLOP/s", 1e12)
    for fam in {r[0] for r in res if r[0].startswith("decode")}:
        unit[fam] = ("us", None)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    gpu = torch.cuda.get_device_name()
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        commit = "?"
    L = ["# Robustness of the cuda target, %s" % date, "",
         "Machine: %s, %s; torch %s. Tree %s. Command: `python3 bench/robust/cuda.py --gemm %d --rows %dx%d%s`." % (
             gpu, platform.node(), torch.__version__, commit, a.gemm, a.rows[0], a.rows[1], " --only '%s'" % a.only if a.only else ""),
         "GEMM %d^3 (TFLOP/s), row kernels %dx%d (GB/s of input + output); CUDA events, median of 20 calls; peer = PyTorch "
         "(cuBLAS in the input dtype, addmm + relu for the epilogue; torch.softmax; F.rms_norm; Tile's GEMM writes f32 unless out_dtype) "
         "in the same run." % (a.gemm, a.rows[0], a.rows[1]), "",
         "| family | variant | tile | peer | tile / peer | of best variant |", "|---|---|---:|---:|---:|---:|"]
    for fam, name, dt, t, tp, work, err in res:
        u, s = unit[fam]
        tv = (lambda x: x * 1e6) if s is None else (lambda x: work / x / s)
        if t:
            L.append("| %s | %s | %.1f %s | %.1f | %.2f | %.2f |" % (fam, name, tv(t), u, tv(tp), tp / t, best[(fam, dt)] / t))
        else:
            L.append("| %s | %s | %s | %.1f | | |" % (fam, name, "fails: " + (err or "?").replace("|", "/"), tv(tp)))
    ok = [r for r in res if r[3]]
    within = sum(1 for r in ok if best[(r[0], r[2])] / r[3] >= 0.9)
    L += ["", "%d of %d variants run; %d of them within 0.9 of the best of their family and dtype." % (len(ok), len(res), within)]
    text = "\n".join(L) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
