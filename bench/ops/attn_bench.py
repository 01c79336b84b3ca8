#!/usr/bin/env python3
"""bench/ops/attn_bench.py — the operator library's attention kernel (src/ops/attn.tl, attn_fwd)
against torch's scaled_dot_product_attention, in one run on one GPU.

Ours: `tile run src/ops/attn.tl -f attn_fwd` with the compile-time values the operator picks on
cuda for 16-bit head dims up to 128 (src/ops/attn.c, fwd_tiles: 128 x 128 tiles, 256 threads,
2 stages) and the scalars it passes (sc = log2(e) / sqrt(D), GQA group 1), timed by
`tile run --bench` (device-resident tensors, CUDA events, L2 flushed), as bench/cuda/bench.py
does for the example kernels. Peers on the same inputs (read back with --out), the same
method: torch SDPA with its default backend choice, and with the flash backend only. Every
output of ours is checked against SDPA in float32 before its time counts.

    python3 bench/ops/attn_bench.py --tile build/bin/tile [--iters 10] [--shape 4x32x4096] [--dims 64,128] [--out FILE.md]
"""
import argparse
import datetime
import math
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cuda"))
import bench as cb  # noqa: E402  (bench/cuda/bench.py: Torch, run_tile, load, relerr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile", default=os.path.join(cb.ROOT, "build", "bin", "tile"))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--shape", default="4x32x4096", help="BxHxS")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--out", default="")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    B, H, S = (int(x) for x in args.shape.split("x"))
    T = cb.Torch()
    date = datetime.datetime.now(datetime.timezone.utc)
    rows = ["| case | ours (ms) | ours TFLOP/s | SDPA default (ms) | ratio | SDPA flash (ms) | ratio | rel. error | status |",
            "|---|---|---|---|---|---|---|---|---|"]
    ok = True
    with tempfile.TemporaryDirectory(prefix="tile-attn-") as tmp:
        for D in (int(d) for d in args.dims.split(",")):
            for causal in (False, True):
                name = "sdpa fwd bf16 %dx%dx%dx%d%s" % (B, H, S, D, " causal" if causal else "")
                defs = ["-f", "attn_fwd", "-D", "D=%d" % D, "-D", "dtype=bfloat16", "-D", "block_M=128", "-D", "block_N=128", "-D", "threads=256",
                        "-D", "num_stages=2", "-D", "causal=%d" % causal, "-D", "BH=%d" % (B * H), "-D", "SQ=%d" % S, "-D", "BHK=%d" % (B * H),
                        "-D", "SKV=%d" % S, "-D", "SH=1", "-D", "LR=1", "-D", "group=1", "-D", "heads=%d" % H,
                        "-D", "sc=%r" % (math.log2(math.e) / math.sqrt(D)), "-D", "cap2=0", "-D", "off=0", "-D", "wl=0"]
                flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
                try:
                    ms, paths, _ = cb.run_tile(args, args.tile, "src/ops/attn.tl", defs, ["Q", "K", "V", "O"], args.iters, tmp, args.timeout)
                except Exception as e:
                    rows.append("| %s | - | - | - | - | - | - | - | FAIL: %s |" % (name, str(e).replace("\n", " ")[:300]))
                    ok = False
                    continue
                if T.why:
                    rows.append("| %s | %.3f | %.1f | - | - | - | - | - | no peer: %s |" % (name, ms, flops / ms / 1e9, T.why))
                    continue
                t = T.t
                F = t.nn.functional
                q, k, v, o = (cb.load(paths[n], "bfloat16", T).reshape(B, H, S, D) for n in ("Q", "K", "V", "O"))
                ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
                err = cb.relerr(o, ref)
                peer = T.time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), args.iters)
                from torch.nn.attention import SDPBackend, sdpa_kernel
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                    flash = T.time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), args.iters)
                st = "ok" if err <= 1e-2 else "FAIL (error > 1e-2)"
                ok = ok and st == "ok"
                rows.append("| %s | %.3f | %.1f | %.3f | %.2fx | %.3f | %.2fx | %.2e | %s |" % (name, ms, flops / ms / 1e9, peer, peer / ms, flash,
                                                                                            flash / ms, err, st))
                print(rows[-1], flush=True)
                for p in os.listdir(tmp):
                    os.remove(os.path.join(tmp, p))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    text = "\n".join(["# attention operator vs torch SDPA, %s" % date.strftime("%Y-%m-%d %H:%M UTC"), "",
                      "- GPU: %s%s" % (gpu, "" if T.why else " (torch %s)" % T.t.__version__),
                      "- Host: %s" % platform.node(),
                      "- Command: `python3 bench/ops/attn_bench.py %s`" % " ".join(sys.argv[1:]),
                      "- Method: ours = `tile run src/ops/attn.tl -f attn_fwd --bench` with the operator's cuda tile choice; "
                      "peers = torch SDPA (default backend, and flash only) on the same inputs; median of %d runs, L2 flushed; "
                      "ratio = peer time / our time (above 1: ours faster)" % args.iters, ""] + rows + [""])
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
