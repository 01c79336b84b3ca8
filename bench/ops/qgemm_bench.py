"""tile.ops quantised and grouped GEMMs on CUDA torch tensors against PyTorch in the same run
(bench/ops/qgemm_gpu.sh runs it on the H200), for issue 22's bars:

- fp8 per tensor: tile.ops.gemm_fp8 (e4m3, [1] scales, bf16 out) vs torch._scaled_mm
  (cuBLASLt) at 4096^3, 8192^3 and DeepSeek-V3's shapes at M = 4096;
- fp8 with DeepSeek-V3's block scales (1x128 activations, 128x128 weights) at M = 64, 128,
  4096 and N x K = 2112x7168, 24576x1536, 7168x16384, 4096x7168, 7168x2048: TFLOP/s, the ratio
  to our own per-tensor fp8 at the same shape (bar: >= 0.9, and >= 1300 TFLOP/s at M = 4096),
  and torch.nn.functional.scaled_mm's block-wise recipe where this torch has it;
- grouped bf16: tile.ops.grouped_gemm (contiguous, offsets) vs torch._grouped_mm at G x M x N
  x K = 8 x 4096 x 4096 x 7168 (bar: >= 1.05x).

Method (bench/ops/python_gpu.py's helpers): every output is checked first (norm-wise relative
error against the peer, or against an f32 product of the dequantised operands for block
scales; a failed check is marked and its time not counted), then the device time of one call
between CUDA events on torch's current stream, the L2 flushed by a 256 MB write before each,
median of --iters after 3 warm-up calls; ratio = peer ms / tile ms (above 1: tile faster).
The host time per call (50 back-to-back calls) is printed too: where it exceeds the device
time the event time includes the host's per-call work (small-M shapes).

    python3 bench/ops/qgemm_bench.py [--iters 20] [--only fp8,block,grouped] [--out FILE.md]
"""
import argparse
import datetime
import os
import platform
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_gpu import device_ms, host_us, rel_err  # noqa: E402  (the events / L2 flush / error helpers)

import tile  # noqa: E402
import tile.ops as ops  # noqa: E402

DSV3 = [(2112, 7168), (24576, 1536), (7168, 16384), (4096, 7168), (7168, 2048)]
E4 = torch.float8_e4m3fn
CHECK = 2e-2   # norm-wise, bf16 results


def cdiv(a, b):
    return (a + b - 1) // b


def fp8_operand(shape, dev):
    return (torch.randn(shape, device=dev) * 2).to(E4)


def block_ref(a, sa, b, sb):
    """f32 product of the dequantised operands (TF32 off)"""
    M, K = a.shape
    N = b.shape[0]
    af = a.float() * sa.repeat_interleave(128, 1)[:, :K]
    bf = b.float() * sb.repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]
    return af @ bf.T


def torch_blockwise(a, sa, b, sb):
    """torch.nn.functional.scaled_mm with the 1x128 / 128x128 recipes, or None where this
    torch (or this card) lacks them; tried with the scale layouts cuBLASLt documents (outer
    dimension major for the 1x128 scales)"""
    ST = getattr(F, "ScalingType", None)
    if not hasattr(F, "scaled_mm") or ST is None or not hasattr(ST, "BlockWise1x128"):
        return None, "no F.scaled_mm block-wise recipe in torch %s" % torch.__version__
    ref = block_ref(a, sa, b, sb)
    last = ""
    for sa_l in (sa.t().contiguous().t(), sa):
        for sb_l in (sb, sb.t().contiguous().t()):
            try:
                f = lambda sa_l=sa_l, sb_l=sb_l: F.scaled_mm(a, b.t(), sa_l, ST.BlockWise1x128, sb_l, ST.BlockWise128x128,
                                                             output_dtype=torch.bfloat16)
                if rel_err(f(), ref) < CHECK:
                    return f, ""
                last = "output mismatch"
            except Exception as e:  # the recipe is optional: say why it is missing
                last = str(e).splitlines()[0][:100]
    return None, last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", default="fp8,block,grouped")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    only = set(a.only.split(","))
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows, notes = [], []
    per_tensor_ms = {}

    def measure(section, name, flops, ft, fr, ref=None, extra=""):
        """one row: check, then time tile (ft) and the peer (fr, may be None)"""
        got = ft()
        want = ref() if ref is not None else fr()
        err = rel_err(got, want)
        ok = err < CHECK
        tt = device_ms(ft, a.iters, flush) if ok else float("nan")
        tr = device_ms(fr, a.iters, flush) if fr is not None else float("nan")
        ht = host_us(ft)
        tf = flops / tt / 1e9 if ok else float("nan")
        pf = flops / tr / 1e9 if fr is not None else float("nan")
        row = "| %s | %s | %.4f | %s | %.2f | %s | %s | %.0f | %.1e%s |" % (
            section, name, tt, "%.4f" % tr if fr is not None else "-", tr / tt if fr is not None and ok else float("nan"),
            "%.0f" % tf, "%.0f" % pf if fr is not None else "-", ht, err, "" if ok else " CHECK FAILED")
        if extra:
            row = row[:-2] + " " + extra + " |"
        rows.append(row)
        print(row, flush=True)
        return tt

    # ---- fp8 per tensor vs cuBLASLt (also the denominator of the block-scaled ratio) ----
    if "fp8" in only or "block" in only:
        shapes = [(4096, 4096, 4096), (8192, 8192, 8192)] if "fp8" in only else []
        shapes += [(M, N, K) for M in ((64, 128, 4096) if "block" in only else (4096,)) for N, K in DSV3]
        for M, N, K in shapes:
            x, w = fp8_operand((M, K), dev), fp8_operand((N, K), dev)
            sx, sw = torch.tensor([0.7], device=dev), torch.tensor([1.3], device=dev)
            ft = lambda x=x, w=w, sx=sx, sw=sw: ops.gemm_fp8(x, w, sx, sw)
            fr = lambda x=x, w=w, sx=sx, sw=sw: torch._scaled_mm(x, w.t(), scale_a=sx.reshape(()), scale_b=sw.reshape(()),
                                                                   out_dtype=torch.bfloat16)
            per_tensor_ms[(M, N, K)] = measure("fp8 per-tensor", "%dx%dx%d" % (M, N, K), 2.0 * M * N * K, ft, fr)

    # ---- fp8, DeepSeek-V3 block scales ----
    if "block" in only:
        for M in (64, 128, 4096):
            for N, K in DSV3:
                x, w = fp8_operand((M, K), dev), fp8_operand((N, K), dev)
                sx = torch.rand(M, cdiv(K, 128), device=dev) + 0.5
                sw = torch.rand(cdiv(N, 128), cdiv(K, 128), device=dev) + 0.5
                ft = lambda x=x, w=w, sx=sx, sw=sw: ops.gemm_fp8(x, w, sx, sw)
                fr, why = torch_blockwise(x, sx, w, sw)
                if fr is None and why and why not in notes:
                    notes.append(why)
                tt = measure("fp8 block 1x128/128x128", "%dx%dx%d" % (M, N, K), 2.0 * M * N * K, ft, fr,
                             ref=lambda x=x, w=w, sx=sx, sw=sw: block_ref(x, sx, w, sw))
                pt = per_tensor_ms.get((M, N, K))
                if pt:
                    rows[-1] = rows[-1][:-2] + " vs our per-tensor: %.2f |" % (pt / tt)
                    print("    block / our per-tensor (time ratio per-tensor ms / block ms): %.2f" % (pt / tt), flush=True)

    # ---- grouped bf16 vs torch._grouped_mm ----
    if "grouped" in only:
        G, Mg, N, K = 8, 4096, 4096, 7168
        xa = torch.randn(G * Mg, K, device=dev, dtype=torch.bfloat16)
        wb = torch.randn(G, N, K, device=dev, dtype=torch.bfloat16)
        offs = torch.arange(1, G + 1, device=dev, dtype=torch.int32) * Mg
        ft = lambda: ops.grouped_gemm(xa, wb, offsets=offs)
        fr = lambda: torch._grouped_mm(xa, wb.transpose(1, 2), offs=offs)
        measure("grouped bf16 (offsets)", "%dx%dx%dx%d" % (G, Mg, N, K), 2.0 * G * Mg * N * K, ft, fr)

    head = ["# tile.ops quantised and grouped GEMMs on CUDA torch tensors vs PyTorch", "",
            "- date: %s UTC; device: %s; host %s; torch %s; tile %s" % (
                datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), torch.cuda.get_device_name(), platform.node(),
                torch.__version__, tile.__version__),
            "- command: python3 bench/ops/qgemm_bench.py --iters %d --only %s (medians of %d, CUDA events on torch's "
            "stream, L2 flushed before each call; outputs checked first, norm-wise rel err < %g)" % (a.iters, a.only, a.iters, CHECK),
            "- ratio = peer ms / tile ms (above 1: tile faster); peers: torch._scaled_mm (cuBLASLt), "
            "F.scaled_mm block-wise, torch._grouped_mm; host us: tile's host time a call (50 back-to-back)",
            "- shapes MxNxK (B stored N x K); grouped GxM_per_groupxNxK", ""]
    head += ["- note: %s" % n for n in notes]
    head += ["", "| kind | shape | tile ms | peer ms | ratio | tile TFLOP/s | peer TFLOP/s | tile host us | rel err |",
             "|---|---|---|---|---|---|---|---|---|"]
    text = "\n".join(head + rows) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
