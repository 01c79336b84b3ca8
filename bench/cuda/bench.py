#!/usr/bin/env python3
"""bench/cuda/bench.py — our CUDA kernels against the vendor's libraries, in one run, on one GPU.

Ours: `tile run FILE -D ... --target cuda --bench --iters N --out ...` (libtile's tile_bench:
the tensors are copied to the device once and stay there; each time is the CUDA-event time of
the kernel launches alone, the L2 cache flushed before each run). The inputs are tile's own
random data (uniform in [-1, 1), never zeros; the outputs are poisoned with random data too),
written back with --out so that the peer and the reference see exactly the same inputs.

Peers (PyTorch on the same GPU, the same method: warm-up, L2 flushed by writing a buffer of
twice its size before each run, CUDA events around the call alone, median of N runs):
  bf16 GEMM            torch.matmul (cuBLAS)
  fp8 e4m3 GEMM        torch._scaled_mm with B stored N x K (cuBLASLt)
  flash attention fwd  scaled_dot_product_attention, flash backend only
  softmax / RMSNorm / add   torch.softmax / rms_norm / add, and the device copy bandwidth
                       (a device-to-device copy, bytes read + written) as the ceiling

Correctness first: every output of ours is compared with a float32/float64 reference computed
by PyTorch on the same inputs (norm-wise relative error, tolerance by dtype); a case whose
output is wrong is reported FAIL and its time is not a result.

  python3 bench/cuda/bench.py --tile build-gpu/bin/tile [--quick] [--iters 20] [--only gemm,fa]
      [--out bench/results/cuda-DATE.md]

The mma80 group times the mma.sync lowering (src/codegen/sm80.c, TILE_CUDA_MMA_SYNC=1) on bf16
4096^3 and 8192^3 against cuBLAS: on an sm_90 card that is "the sm_80 path on an sm_90 card".
--quick runs small shapes with 5 timed runs (a smoke test of the harness, not a result).
--fa-env VAR=VAL[,VAR=VAL] (repeatable): each flash attention case runs once more with these
environment variables set for our `tile run` (e.g. TILE_SM90_ATTN_OVERLAP=0, the in-order
Hopper attention schedule), the row named with them, its peer measured again beside it.
The speed ratio is peer time / our time (above 1: we are faster).
"""
import argparse
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Tile sizes of our tile-form GEMMs (the factory parameters of examples/gemm.tl / gemm_fp8.tl):
# the sm_90a lowering's configurations (docs/backends-gpu.md, "Hopper"); B is stored N x K.
GEMM_BF16_TILE = ["-D", "block_M=128", "-D", "block_N=256", "-D", "block_K=64", "-D", "num_stages=4", "-D", "threads=256", "-D", "trans_B=True"]
GEMM_FP8_TILE = ["-D", "block_M=128", "-D", "block_N=128", "-D", "block_K=128", "-D", "num_stages=6", "-D", "threads=256"]
# The mma.sync lowering (src/codegen/sm80.c) forced on an sm_90 card: "the sm_80 path on an sm_90
# card" (TILE_CUDA_MMA_SYNC=1 takes it before wgmma); --mma80-tile BMxBNxBKxSTAGESxTHREADS.
GEMM_MMA80_ENV = {"TILE_CUDA_MMA_SYNC": "1"}
GEMM_MMA80_TILE = "128x256x32x4x256"
FA_TILE = ["-D", "block_M=128", "-D", "block_N=128", "-D", "num_stages=3", "-D", "threads=256"]


def log(*a):
    print(*a, flush=True)


class Torch:
    """The peers and the reference, or why there are none."""

    def __init__(self):
        self.why = None
        try:
            import torch  # noqa
            self.t = torch
            if not torch.cuda.is_available():
                self.why = "torch sees no CUDA device"
                return
            p = torch.cuda.get_device_properties(0)
            self.l2 = getattr(p, "L2_cache_size", 50 << 20) or (50 << 20)
            self.flush = torch.empty(2 * self.l2, dtype=torch.uint8, device="cuda")
            self.name = p.name
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        except Exception as e:  # no torch: ours still run, without peers
            self.why = "no PyTorch (%s)" % e

    def time(self, fn, iters, warm=3):
        t = self.t
        for _ in range(warm):
            fn()
        t.cuda.synchronize()
        ms = []
        for _ in range(iters):
            self.flush.zero_()
            s, e = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ms.append(s.elapsed_time(e))
        return float(np.median(ms))


def load(path, dtype, T):
    """An .npy written by tile --out as a torch tensor on the GPU (bf16 / fp8 are raw bits)."""
    a = np.load(path)
    t = T.t
    if a.dtype == np.uint16:
        a = a.view(np.int16)
    x = t.from_numpy(np.ascontiguousarray(a)).cuda()
    if dtype == "bfloat16":
        return x.view(t.bfloat16) if x.dtype == t.int16 else x.to(t.bfloat16)
    if dtype == "float8_e4m3":
        return x.view(t.uint8).view(t.float8_e4m3fn)
    return x


def relerr(out, ref):
    o, r = out.double(), ref.double()
    if not bool(o.isfinite().all()):
        return float("inf")
    return float((o - r).norm() / max(float(r.norm()), 1e-30))


def run_tile(args, tile, file, defines, outs, iters, tmp, timeout, env=None):
    """Ours: (median ms, {name: path}, clock text) or raises with the message. env: extra
    environment variables for this run."""
    paths = {n: os.path.join(tmp, "%s.npy" % n) for n in outs}
    cmd = [tile, "run", file] + defines + ["--target", "cuda", "--bench", "--iters", str(iters), "--quiet"]
    for n, p in paths.items():
        cmd += ["--out", "%s=%s" % (n, p)]
    t0 = time.time()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        raise RuntimeError("exit %d: %s" % (r.returncode, (r.stderr or r.stdout).strip()[-600:]))
    m = re.search(r"^bench: target cuda, median ([0-9.]+) ms.*?; (.*)$", r.stdout, re.M)
    if not m:
        raise RuntimeError("no bench line in: %s" % r.stdout[-400:])
    if args.verbose:
        log("    %s  (%.1f s)" % (" ".join(shlex.quote(c) for c in cmd), time.time() - t0))
    return float(m.group(1)), paths, m.group(2)


def cases(quick, mma80_tile=GEMM_MMA80_TILE):
    """(group, name, file, defines, outs, kind, params) — kind picks reference, peer and counts."""
    g = []
    gemm_shapes = [(512, 512, 512), (1024, 768, 256)] if quick else [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 2048)]
    for (M, N, K) in gemm_shapes:
        dm = ["-D", "M=%d" % M, "-D", "N=%d" % N, "-D", "K=%d" % K]
        g.append(("gemm", "bf16 GEMM %dx%dx%d (B NxK)" % (M, N, K), "examples/gemm.tl",
                  dm + ["-D", "dtype=bfloat16", "-D", "out_dtype=bfloat16"] + GEMM_BF16_TILE, ["A", "B", "C"], "gemm_bf16", (M, N, K)))
    for (M, N, K) in gemm_shapes:
        dm = ["-D", "M=%d" % M, "-D", "N=%d" % N, "-D", "K=%d" % K]
        g.append(("fp8", "fp8 e4m3 GEMM %dx%dx%d (B NxK)" % (M, N, K), "examples/gemm_fp8.tl",
                  dm + ["-D", "out_dtype=bfloat16"] + GEMM_FP8_TILE, ["A", "B", "C"], "gemm_fp8", (M, N, K)))
    bm, bn, bk, st, th = (int(x) for x in mma80_tile.split("x"))
    for (M, N, K) in gemm_shapes[:2]:
        dm = ["-D", "M=%d" % M, "-D", "N=%d" % N, "-D", "K=%d" % K]
        g.append(("mma80", "bf16 GEMM %dx%dx%d (B NxK) mma.sync %s" % (M, N, K, mma80_tile), "examples/gemm.tl",
                  dm + ["-D", "dtype=bfloat16", "-D", "out_dtype=bfloat16", "-D", "trans_B=True", "-D", "block_M=%d" % bm, "-D", "block_N=%d" % bn,
                        "-D", "block_K=%d" % bk, "-D", "num_stages=%d" % st, "-D", "threads=%d" % th], ["A", "B", "C"], "gemm_bf16", (M, N, K)))
    M = N = K = 512 if quick else 4096
    dm = ["-D", "M=%d" % M, "-D", "N=%d" % N, "-D", "K=%d" % K]
    g.append(("plain", "seed matmul plain form bf16->f32 %dx%dx%d" % (M, N, K), "tests/cuda/data/plain_matmul_bf16.tl", dm,
              ["A", "B", "ret"], "plain_mm", (M, N, K)))
    g.append(("plain", "same, tile form (gemm.tl bf16->f32, B NxK) %dx%dx%d" % (M, N, K), "examples/gemm.tl",
              dm + ["-D", "dtype=bfloat16", "-D", "out_dtype=float32"] + GEMM_BF16_TILE, ["A", "B", "C"], "tile_mm", (M, N, K)))
    B, H, S, D = (1, 4, 512, 128) if quick else (4, 32, 4096, 128)
    for causal in (False, True):
        g.append(("fa", "flash attention fwd bf16 %dx%dx%dx%d%s" % (B, H, S, D, " causal" if causal else ""), "examples/flash_attention.tl",
                  ["-D", "batch=%d" % B, "-D", "heads=%d" % H, "-D", "seq_len=%d" % S, "-D", "dim=%d" % D, "-D", "is_causal=%s" % causal,
                   "-D", "dtype=bfloat16"] + FA_TILE, ["Q", "K", "V", "Output"], "fa", (B, H, S, D, causal)))
    R = C = 1024 if quick else 8192
    dr = ["-D", "M=%d" % R, "-D", "N=%d" % C]
    # Register fragments (docs/backends-gpu.md): a fragment whose accesses all follow one
    # element-to-thread mapping lives in registers. A row a block (block_M=1) keeps every row
    # reduction inside the block; the thread counts are the ones a user would try (1024 threads:
    # one block a multiprocessor, 48-66% of copy in bench/results/cuda-mem-2026-11-29-s3.md's run 1).
    g.append(("mem", "softmax f32 %dx%d (softmax.tl, defaults: shared memory)" % (R, C), "examples/softmax.tl", dr, ["X", "Y"], "softmax", (R, C)))
    g.append(("mem", "softmax f32 %dx%d (softmax.tl two-pass, 1x4096 tiles in registers, 512 thr)" % (R, C), "examples/softmax.tl",
              dr + ["-D", "block_M=1", "-D", "block_N=4096", "-D", "threads=512"], ["X", "Y"], "softmax", (R, C)))
    for thr in ((256,) if quick else (256, 512)):
        g.append(("mem", "softmax f32 %dx%d (softmax_row.tl one-pass, row in registers, %d thr)" % (R, C, thr), "examples/softmax_row.tl",
                  dr + ["-D", "threads=%d" % thr], ["X", "Y"], "softmax", (R, C)))
    # rmsnorm.tl with block_M=2: the old configuration (x, x^2 in shared memory: block_M=2 fits the
    # H200's 227 KiB at N=8192); block_M=1 puts x, x^2 and w in registers.
    g.append(("mem", "RMSNorm f32 %dx%d (block_M=2, shared memory)" % (R, C), "examples/rmsnorm.tl", dr + ["-D", "block_M=2"], ["X", "W", "Y"], "rmsnorm", (R, C)))
    for thr in ((512,) if quick else (256, 512)):
        g.append(("mem", "RMSNorm f32 %dx%d (block_M=1, row in registers, %d thr)" % (R, C, thr), "examples/rmsnorm.tl",
                  dr + ["-D", "block_M=1", "-D", "threads=%d" % thr], ["X", "W", "Y"], "rmsnorm", (R, C)))
    g.append(("mem", "add f32 %dx%d (tile form)" % (R, C), "examples/add.tl", dr, ["A", "B", "C"], "add", (R, C)))
    g.append(("mem", "add f32 %dx%d (plain form)" % (R, C), "tests/cuda/data/plain_add.tl", dr, ["A", "B", "ret"], "add", (R, C)))
    return g


def evaluate(T, kind, prm, paths, iters):
    """(reference error, tolerance, peer name, peer ms, work, unit) for one case of ours."""
    t = T.t
    F = t.nn.functional
    if kind in ("gemm_bf16", "plain_mm", "tile_mm"):
        M, N, K = prm
        a, b = load(paths["A"], "bfloat16", T), load(paths["B"], "bfloat16", T)
        out = load(paths["ret" if kind == "plain_mm" else "C"], "bfloat16" if kind == "gemm_bf16" else "float32", T)
        bkn = b if kind == "plain_mm" else b.t()  # the tile forms store B as N x K
        ref = a.float() @ bkn.float()
        tol = 1e-2 if kind == "gemm_bf16" else 1e-4
        peer = T.time(lambda: t.matmul(a, bkn), iters)
        return relerr(out, ref), tol, "cuBLAS bf16 (torch.matmul)", peer, 2.0 * M * N * K, "TFLOP/s"
    if kind == "gemm_fp8":
        M, N, K = prm
        a, b = load(paths["A"], "float8_e4m3", T), load(paths["B"], "float8_e4m3", T)
        out = load(paths["C"], "bfloat16", T)
        ref = a.float() @ b.float().t()
        one = t.tensor(1.0, device="cuda")
        peer = T.time(lambda: t._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=t.bfloat16), iters)
        return relerr(out, ref), 1e-2, "cuBLASLt fp8 (torch._scaled_mm)", peer, 2.0 * M * N * K, "TFLOP/s"
    if kind == "fa":
        B, H, S, D, causal = prm
        q, k, v = (load(paths[n], "bfloat16", T).permute(0, 2, 1, 3) for n in ("Q", "K", "V"))  # BSHD -> BHSD
        out = load(paths["Output"], "bfloat16", T).permute(0, 2, 1, 3)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            peer = T.time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), iters)
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        return relerr(out, ref), 1e-2, "FlashAttention (torch SDPA flash)", peer, flops, "TFLOP/s"
    R, C = prm
    if kind == "softmax":
        x, y = load(paths["X"], "float32", T), load(paths["Y"], "float32", T)
        peer = T.time(lambda: t.softmax(x, dim=-1), iters)
        return relerr(y, t.softmax(x.double(), dim=-1)), 1e-5, "torch.softmax", peer, 8.0 * R * C, "TB/s"
    if kind == "rmsnorm":
        x, w, y = (load(paths[n], "float32", T) for n in ("X", "W", "Y"))
        xd = x.double()
        ref = xd * t.rsqrt((xd * xd).mean(dim=-1, keepdim=True) + 1e-6) * w.double()
        peer = T.time(lambda: F.rms_norm(x, (C,), w, 1e-6), iters)
        return relerr(y, ref), 1e-5, "torch rms_norm", peer, 8.0 * R * C + 4.0 * C, "TB/s"
    if kind == "add":
        a, b = load(paths["A"], "float32", T), load(paths["B"], "float32", T)
        out = load(paths["ret" if "ret" in paths else "C"], "float32", T)
        peer = T.time(lambda: t.add(a, b), iters)
        return relerr(out, a.double() + b.double()), 1e-6, "torch.add", peer, 12.0 * R * C, "TB/s"
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tile", default=os.path.join(ROOT, "build-gpu", "bin", "tile"))
    ap.add_argument("--iters", type=int, default=0, help="timed runs (default 20; --quick: 5)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated groups: gemm,fp8,mma80,plain,fa,mem")
    ap.add_argument("--mma80-tile", default=GEMM_MMA80_TILE, metavar="BMxBNxBKxSxT", help="tile of the mma80 group (the mma.sync lowering forced)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case of ours")
    ap.add_argument("--out", default="")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--fa-env", action="append", default=[], metavar="VAR=VAL[,VAR=VAL]",
                    help="run each fa case once more with this environment for ours (repeatable)")
    args = ap.parse_args()
    iters = args.iters or (5 if args.quick else 20)
    only = set(x for x in args.only.split(",") if x)
    T = Torch()
    date = datetime.datetime.now(datetime.timezone.utc)
    rows, notes = [], []
    gpu = "?"
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        pass
    log("# bench/cuda: %s, GPU %s, %d timed runs a case%s" % (date.strftime("%Y-%m-%d %H:%M UTC"), gpu, iters, " (quick)" if args.quick else ""))
    copy_bw = None
    if T.why:
        notes.append("peers not measured: " + T.why)
        log("peers not measured: " + T.why)
    else:
        t = T.t
        n = (256 << 20) if args.quick else (1 << 30)
        src = t.rand(n // 4, device="cuda")
        dst = t.empty_like(src)
        ms = T.time(lambda: dst.copy_(src), max(iters, 20))
        copy_bw = 2.0 * n / (ms * 1e-3) / 1e12
        log("device copy bandwidth (D2D %d MiB, read + write): %.2f TB/s" % (n >> 20, copy_bw))
        notes.append("device copy bandwidth (a %d MiB device-to-device copy, bytes read + written, median of %d): %.2f TB/s" %
                     (n >> 20, max(iters, 20), copy_bw))
    with tempfile.TemporaryDirectory(prefix="tile-bench-") as tmp:
        todo = []
        for c in cases(args.quick, args.mma80_tile):
            todo.append(c + (dict(GEMM_MMA80_ENV) if c[0] == "mma80" else {},))
            for e in (args.fa_env if c[0] == "fa" else []):
                env = dict(kv.split("=", 1) for kv in e.split(",") if kv)
                todo.append((c[0], "%s [%s]" % (c[1], e)) + c[2:] + (env,))
        todo = [c for c in todo if not only or c[0] in only]
        t_cases = time.time()
        for i_case, (group, name, file, defines, outs, kind, prm, env) in enumerate(todo):
            el = time.time() - t_cases  # progress, on stderr (the rows go to stdout)
            print("bench.py: [%d/%d] %s (%.0f s so far)" % (i_case + 1, len(todo), name, el), file=sys.stderr, flush=True)
            row = {"name": name, "ours": None, "peer": None, "err": None, "status": "", "unit": "", "work": 0, "peer_name": "-"}
            try:
                ms, paths, clock = run_tile(args, args.tile, file, defines, outs, iters, tmp, args.timeout, env)
                row["ours"] = ms
                if "device time" not in clock:
                    notes.append("%s: our time is %s" % (name, clock))
                if T.why:
                    row["status"] = "no reference"
                else:
                    err, tol, pname, pms, work, unit = evaluate(T, kind, prm, paths, iters)
                    row.update(err=err, peer=pms, peer_name=pname, work=work, unit=unit)
                    row["status"] = "ok" if err <= tol else "FAIL (error > %.0e)" % tol
            except subprocess.TimeoutExpired:
                row["status"] = "TIMEOUT (%d s)" % args.timeout
            except Exception as e:
                row["status"] = "FAIL"
                notes.append("%s: %s" % (name, str(e).replace("\n", " ")[:500]))
            for p in os.listdir(tmp):
                os.remove(os.path.join(tmp, p))
            rows.append(row)
            log(fmt_row(row, copy_bw))
    table = ["| case | ours (ms) | ours | peer | peer (ms) | peer | speed vs peer | rel. error | status |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(fmt_row(r, copy_bw, md=True))
    text = "\n".join([
        "# CUDA benchmarks, %s" % date.strftime("%Y-%m-%d"),
        "",
        "- GPU: %s%s" % (gpu, "" if T.why else " (torch: %s, %s)" % (T.name, T.t.__version__)),
        "- Host: %s, %s" % (platform.node(), platform.platform()),
        "- Command: `%s`" % " ".join(shlex.quote(a) for a in ["bench/cuda/run.sh"] + sys.argv[1:]),
        "- Commit: %s" % git_head(),
        "- Method: ours = `tile run --target cuda --bench` (device-resident tensors, CUDA events around the launches, L2 flushed "
        "before each run), peers = PyTorch with the same method; median of %d timed runs after warm-up; random inputs "
        "(uniform [-1, 1)); each output checked against a PyTorch f32/f64 reference before its time counts. "
        "Speed vs peer = peer time / our time. Memory-bound rows: TB/s counting each input read once and each output written once%s."
        % (iters, ", and the fraction of the device copy bandwidth" if copy_bw else ""),
        "%s" % ("- **--quick: small shapes, a smoke test of the harness, not a result**" if args.quick else ""),
        "",
    ] + table + [""] + ["- " + n for n in notes] + [""])
    out = args.out or os.path.join(ROOT, "bench", "results", "cuda-%s%s.md" % (date.strftime("%Y-%m-%d"), "-quick" if args.quick else ""))
    with open(out, "w") as f:
        f.write(text)
    log("\n" + "\n".join(table))
    log("wrote %s" % out)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


def rate(work, ms, unit):
    if not ms or not work:
        return "-"
    v = work / (ms * 1e-3) / 1e12
    return "%.1f %s" % (v, unit) if unit == "TFLOP/s" else "%.2f %s" % (v, unit)


def fmt_row(r, copy_bw, md=False):
    ours = "%.3f" % r["ours"] if r["ours"] else "-"
    peer = "%.3f" % r["peer"] if r["peer"] else "-"
    orate, prate = rate(r["work"], r["ours"], r["unit"]), rate(r["work"], r["peer"], r["unit"])
    if r["unit"] == "TB/s" and copy_bw and r["ours"]:
        orate += " (%.0f%% of copy)" % (100.0 * r["work"] / (r["ours"] * 1e-3) / 1e12 / copy_bw)
    ratio = "%.2fx" % (r["peer"] / r["ours"]) if r["ours"] and r["peer"] else "-"
    err = "%.2e" % r["err"] if r["err"] is not None else "-"
    cells = [r["name"], ours, orate, r["peer_name"], peer, prate, ratio, err, r["status"]]
    return "| " + " | ".join(cells) + " |" if md else "%-44s %10s %-26s %10s %-14s %8s %-9s %s" % (
        r["name"], ours, orate, peer, prate, ratio, err, r["status"])


def git_head():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip() or "?"
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
