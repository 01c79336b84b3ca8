#!/usr/bin/env python3
"""gemm_quick.py — time the sm_90a GEMM kernel that `tile emit --target cuda` generates
against PyTorch's matmul (cuBLAS) / _scaled_mm (cuBLASLt fp8), side by side in one run.

    python3 bench/cuda/gemm_quick.py --tile build/bin/tile --dtype bfloat16 --shape 4096x4096x4096 \
        [-D block_M=128 ...] [--iters 30] [--json out.json]

C = A @ B^T with A (M x K) and B (N x K) (examples/gemm.tl with trans_B=True, or
examples/gemm_fp8.tl for float8_e4m3), output bf16 (out_dtype=bfloat16; f32 accumulation).
The generated source is compiled with NVRTC (the options of src/runtime/cuda.c) and
launched through the driver API (ctypes) on PyTorch's tensors; the TMA tensor maps are
encoded as src/runtime/cuda_tma.c does. Correctness is checked against an f32 PyTorch
product before timing. Timing: CUDA events around each launch, median of --iters runs
after warm-up; inputs rotate over enough copies to exceed the 60 MB L2.
"""
import argparse, ctypes, glob, json, os, re, statistics, subprocess, sys, time

import torch


def load_nvrtc():
    cands = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    cands += sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*"))
    cands += sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "**", "libnvrtc.so*"), recursive=True))
    for c in cands:
        try:
            return ctypes.CDLL(c)
        except OSError:
            pass
    sys.exit("no NVRTC")


def nvrtc_compile(src, arch="sm_90a"):
    nv = load_nvrtc()
    prog = ctypes.c_void_p()
    assert nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"tile.cu", 0, None, None) == 0
    opts = [b"--gpu-architecture=" + arch.encode(), b"-default-device", b"--fmad=false", b"--std=c++17", b"-diag-suppress=177,550"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = nv.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value + 1)
    nv.nvrtcGetProgramLog(prog, log)
    if r != 0:
        sys.exit("NVRTC failed:\n" + log.value.decode())
    nv.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cub = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetCUBIN(prog, cub)
    return cub.raw


cu = ctypes.CDLL("libcuda.so.1")


def ck(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cu.cuGetErrorString(r, ctypes.byref(s))
        sys.exit(f"{what} failed: {r} {s.value}")


def tmap(ptr, rows, cols, ebytes, box_rows, box_cols, swz):
    raw = (ctypes.c_ubyte * 256)()
    off = (-ctypes.addressof(raw)) % 64
    m = ctypes.cast(ctypes.addressof(raw) + off, ctypes.c_void_p)
    dims = (ctypes.c_uint64 * 2)(cols, rows)
    strides = (ctypes.c_uint64 * 1)(cols * ebytes)
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    es = (ctypes.c_uint32 * 2)(1, 1)
    sw = {128: 3, 64: 2, 32: 1, 0: 0}[swz]
    ck(cu.cuTensorMapEncodeTiled(m, 0 if ebytes == 1 else 1, 2, ctypes.c_void_p(ptr), dims, strides, box, es, 0, sw, 3, 0), "cuTensorMapEncodeTiled")
    return raw, m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile", default="build/bin/tile")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--shape", default="4096x4096x4096")
    ap.add_argument("-D", action="append", default=[])
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--json")
    a = ap.parse_args()
    M, N, K = (int(x) for x in a.shape.split("x"))
    fp8 = a.dtype.startswith("float8")
    ex = "examples/gemm_fp8.tl" if fp8 else "examples/gemm.tl"
    defs = [f"M={M}", f"N={N}", f"K={K}", "out_dtype=bfloat16"] + ([] if fp8 else [f"dtype={a.dtype}", "trans_B=True"]) + a.D
    cmd = [a.tile, "emit", ex, "--target", "cuda"] + sum((["-D", d] for d in defs), [])
    src = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(os.environ, TILE_CUDA_ARCH="sm_90a")).stdout
    L = re.search(r"tl-launch (\w+) threads=(\d+) smem=(\d+) lowering=(\S+) tma=(\d+) persistent=(\d)", src)
    persistent = L.group(6) == "1"
    name, threads, smem, lowering, ntma = L.group(1), int(L.group(2)), int(L.group(3)), L.group(4), int(L.group(5))
    g = re.search(r"sm_90a GEMM \(src/codegen/sm90.c\): (\d+)x(\d+)x(\d+) (\w+) tile, (\d+) stages", src)
    if not g:
        sys.exit(f"the kernel did not take the sm90 lowering ({lowering})")
    BM, BN, BK, stages = int(g.group(1)), int(g.group(2)), int(g.group(3)), int(g.group(5))
    t0 = time.time()
    cubin = nvrtc_compile(src)
    ctime = time.time() - t0

    torch.cuda.init()
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), cubin), "cuModuleLoadData")
    fn = ctypes.c_void_p()
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
    ck(cu.cuFuncSetAttribute(fn, 8, smem), "cuFuncSetAttribute")

    eb = 1 if fp8 else 2
    tdt = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[a.dtype]
    nrot = max(1, min(8, int(3 * 60e6 // ((M * K + N * K) * eb)) + 1))
    As, Bs = [], []
    for i in range(nrot):
        x = torch.randn(M, K, device=dev) * (1.0 if not fp8 else 2.0)
        y = torch.randn(N, K, device=dev) * (1.0 if not fp8 else 2.0)
        As.append(x.to(tdt))
        Bs.append(y.to(tdt))
    C = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    scal = torch.zeros(8, device=dev, dtype=torch.int64)
    err = torch.zeros(8, device=dev, dtype=torch.int64)
    grid = ((N + BN - 1) // BN) * ((M + BM - 1) // BM)
    if persistent:  # as src/runtime/cuda.c launches it: at most one block per multiprocessor
        grid = min(grid, torch.cuda.get_device_properties(0).multi_processor_count)

    def make_args(i):
        keep = []
        vals = [ctypes.c_void_p(As[i].data_ptr()), ctypes.c_void_p(Bs[i].data_ptr()), ctypes.c_void_p(C.data_ptr()),
                ctypes.c_void_p(scal.data_ptr()), ctypes.c_void_p(err.data_ptr())]
        r1, m1 = tmap(As[i].data_ptr(), M, K, eb, BM, BK, BK * eb)
        r2, m2 = tmap(Bs[i].data_ptr(), N, K, eb, BN, BK, BK * eb)
        keep += [r1, r2]
        ptrs = [ctypes.addressof(v) for v in vals] + [m1.value, m2.value]
        arr = (ctypes.c_void_p * len(ptrs))(*ptrs)
        return (vals, keep, arr)

    argsets = [make_args(i) for i in range(nrot)]
    stream = torch.cuda.current_stream().cuda_stream

    def launch(i):
        ck(cu.cuLaunchKernel(fn, grid, 1, 1, threads, 1, 1, smem, ctypes.c_void_p(stream), argsets[i][2], None), "cuLaunchKernel")

    # correctness (before timing)
    launch(0)
    torch.cuda.synchronize()
    assert int(err[0].item()) == 0, "kernel error record set"
    ref = As[0].float() @ Bs[0].float().t()
    diff = (C.float() - ref).abs().max().item()
    scale = ref.abs().max().item()
    ok = diff <= 1e-2 * scale + 1e-3
    print(f"check: max |C - ref| = {diff:.4g} (max |ref| {scale:.4g}) -> {'ok' if ok else 'MISMATCH'}")

    def timeit(f):
        for i in range(5):
            f(i % nrot)
        torch.cuda.synchronize()
        ts = []
        for i in range(a.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            f(i % nrot)
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e))
        return statistics.median(ts)

    t_tile = timeit(launch)
    if fp8:
        one = torch.ones((), device=dev)
        peer = lambda i: torch._scaled_mm(As[i], Bs[i].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        peer_name = "torch._scaled_mm (cuBLASLt fp8)"
    else:
        peer = lambda i: torch.matmul(As[i], Bs[i].t())
        peer_name = "torch.matmul (cuBLAS)"
    t_peer = timeit(peer)
    t_tile2 = timeit(launch)  # again, after the peer: clocks settled both ways
    t_tile = min(t_tile, t_tile2)
    fl = 2.0 * M * N * K
    res = dict(date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), device=torch.cuda.get_device_name(), shape=[M, N, K], dtype=a.dtype,
               tile=[BM, BN, BK], stages=stages, threads=threads, smem=smem, nvrtc_s=round(ctime, 3), check=ok, max_abs_err=diff,
               tile_ms=t_tile, tile_tflops=fl / t_tile / 1e9, peer=peer_name, peer_ms=t_peer, peer_tflops=fl / t_peer / 1e9,
               ratio=t_peer / t_tile, sm90_group=os.environ.get("TILE_SM90_GROUP", "8 (default)"), command=" ".join(sys.argv))
    print(f"{a.dtype} {M}x{N}x{K} tile {BM}x{BN}x{BK} s{stages} group {res['sm90_group']}: tile {res['tile_tflops']:.0f} TFLOP/s ({t_tile:.3f} ms), "
          f"{peer_name} {res['peer_tflops']:.0f} TFLOP/s ({t_peer:.3f} ms), ratio {res['ratio']:.3f}")
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(res) + "\n")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
