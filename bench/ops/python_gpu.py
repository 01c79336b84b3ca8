"""tile.ops calls on CUDA torch tensors against the same torch functions (bench/ops/python_gpu.sh runs it).

For each operation: the device time of one call (CUDA events recorded on torch's current
stream around the call, the L2 flushed by a 256 MB write before each; median of ITERS after
3 warm-up calls), for tile.ops and torch in the same process on the same inputs, their
ratio (torch time / tile time: above 1 means tile is faster), the bandwidth or FLOP rate,
and the host time per call of back-to-back calls (wall clock over 50 calls, synchronised at
the end). The outputs are checked against torch's (relative error in float64) first.

    python3 bench/ops/python_gpu.py [--iters 25] [--out FILE.md]
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import tile
import tile.ops as ops


def device_ms(fn, iters, flush):
    ts = []
    for i in range(iters + 3):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        if i >= 3:
            ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def host_us(fn, n=50):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=25)
    ap.add_argument("--out", default=None)
    ap.add_argument("--M", type=int, default=8192)
    ap.add_argument("--N", type=int, default=8192)
    ap.add_argument("--S", type=int, default=4096)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    bf = torch.bfloat16
    M, N, S = a.M, a.N, a.S
    x = torch.randn(M, N, device=dev, dtype=bf)
    y = torch.randn(M, N, device=dev, dtype=bf)
    w = torch.rand(N, device=dev, dtype=bf) + 0.5
    b = torch.randn(N, device=dev, dtype=bf)
    ga, gb = torch.randn(S, S, device=dev, dtype=bf), torch.randn(S, S, device=dev, dtype=bf)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    nb = M * N * 2
    cases = [
        # name, tile call, torch call, bytes moved (read + write), flops
        ("rms_norm bf16 %dx%d" % (M, N), lambda: ops.rms_norm(x, (N,), w, 1e-6), lambda: F.rms_norm(x, (N,), w, 1e-6), 2 * nb, 0),
        ("layer_norm bf16 %dx%d" % (M, N), lambda: ops.layer_norm(x, (N,), w, b), lambda: F.layer_norm(x, (N,), w, b), 2 * nb, 0),
        ("softmax bf16 %dx%d" % (M, N), lambda: ops.softmax(x, -1), lambda: torch.softmax(x, -1), 2 * nb, 0),
        ("silu bf16 %dx%d" % (M, N), lambda: ops.silu(x), lambda: F.silu(x), 2 * nb, 0),
        ("add bf16 %dx%d" % (M, N), lambda: ops.add(x, y), lambda: torch.add(x, y), 3 * nb, 0),
        ("sum(dim=-1) bf16 %dx%d" % (M, N), lambda: ops.sum(x, -1), lambda: torch.sum(x, -1), nb, 0),
        ("gemm bf16 %d^3" % S, lambda: ops.matmul(ga, gb), lambda: ga @ gb, 3 * S * S * 2, 2 * S ** 3),
    ]
    rows = []
    for name, ft, fr, nbytes, flops in cases:
        err = rel_err(ft(), fr())
        tt = device_ms(ft, a.iters, flush)
        tr = device_ms(fr, a.iters, flush)
        ht, hr = host_us(ft), host_us(fr)
        rate = (lambda ms: "%.0f TFLOP/s" % (flops / ms / 1e9)) if flops else (lambda ms: "%.0f GB/s" % (nbytes / ms / 1e6))
        rows.append("| %s | %.4f | %.4f | %.2f | %s | %s | %.0f | %.0f | %.1e |" % (name, tt, tr, tr / tt, rate(tt), rate(tr), ht, hr, err))
        print(rows[-1], flush=True)
    head = ["# tile.ops on CUDA torch tensors vs torch", "",
            "- device: %s; torch %s; tile %s" % (torch.cuda.get_device_name(), torch.__version__, tile.__version__),
            "- command: python3 bench/ops/python_gpu.py --iters %d (medians of %d, CUDA events, L2 flushed before each call)" % (a.iters, a.iters),
            "- ratio = torch ms / tile ms (above 1: tile faster); host us: wall time per call of 50 back-to-back calls", "",
            "| operation | tile ms | torch ms | ratio | tile rate | torch rate | tile host us | torch host us | rel err |",
            "|---|---|---|---|---|---|---|---|---|"]
    text = "\n".join(head + rows) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
