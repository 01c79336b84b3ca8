"""The seed matmul and the project's GEMM called from Python on torch CUDA tensors, timed
with CUDA events (Kernel.bench: median device time per call), against `tile run --bench`
on the same kernel (TILE_BENCH_FLUSH=0 so that both time back-to-back launches)."""
import os
import re
import subprocess
import sys

import torch

import tile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TILE = os.path.join(ROOT, "build", "bin", "tile")


def cli_median(args):
    env = dict(os.environ, TILE_BENCH_FLUSH="0")
    r = subprocess.run([TILE, "run"] + args + ["--target", "cuda", "--bench", "--iters", "50", "-q"], capture_output=True, text=True, env=env)
    m = re.search(r"median ([0-9.]+) (us|ms|s)", r.stdout + r.stderr)
    if not m:
        raise RuntimeError("no median in: " + r.stdout + r.stderr)
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)], (r.stdout + r.stderr).strip().splitlines()[-1]


def main():
    rows = ["| kernel | tile run --bench (ms) | Python Kernel.bench (ms) | Python / CLI |", "|---|---|---|---|"]
    cases = [
        ("seed_matmul_000.tl 1024^3 f32", os.path.join(ROOT, "examples", "seed_matmul_000.tl"), dict(M=1024, N=1024, K=1024), torch.float32, None),
        ("gemm.tl 4096^3 f16", os.path.join(ROOT, "examples", "gemm.tl"), dict(M=4096, N=4096, K=4096, dtype="float16", block_M=128,
                                                                              block_N=128, block_K=64, num_stages=3), torch.float16, [-1]),
    ]
    for name, path, consts, dt, out_idx in cases:
        k = tile.compile(path, target="cuda", out_idx=out_idx, **consts)
        M, N, K = consts["M"], consts["N"], consts["K"]
        a = torch.randn(M, K, device="cuda", dtype=dt)
        b = torch.randn(K, N, device="cuda", dtype=dt)
        c = k(a, b)
        ref = a.double() @ b.double()
        rel = ((c.double() - ref).norm() / ref.norm()).item()
        py = k.bench(a, b, iters=50, warmup=5)
        args = [path] + sum((["-D", "%s=%s" % kv] for kv in consts.items()), [])
        cli, line = cli_median(args)
        rows.append("| %s (rel err %.1e) | %.4f | %.4f | %.3f |" % (name, rel, cli * 1e3, py * 1e3, py / cli))
    text = "\n".join(rows)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
