#!/usr/bin/env python3
"""bench/cuda/compile_time.py — where the cold CUDA compile time of TileLang's programs goes.

Compiles the kernels of TileLang's compile benchmark (benchmark/compile_speed/kernel_zoo.py,
its build_zoo() sweep at scale 1) and the examples that bench/tilelang/same_source.py runs
(example_gemm, mha / gqa forward, the fp8 GEMM, the fp4-dequantising GEMM), read from a copy
of TileLang's repository (--src), with the same arguments as same_source.py, for sm_90a, and
prints one row per kernel with the time of each phase:

  front   tile.compile(): the TileLang front end and sema (the Python source parsed in C)
  emit    the TileOpt passes and the CUDA C generator (Kernel.source("cuda"))
  nv-fe   NVRTC's C++ front end (preprocessing and parsing the prelude and the kernel)
  nvvm    NVRTC's NVVM optimiser (LLVM IR -> PTX)
  ptx2bin NVRTC's PTX -> SASS translation (its built-in ptxas; the cubin Tile loads)
  nvrtc   wall time of the whole nvrtcCompileProgram call (nv-fe + nvvm + ptx2bin + overhead)
  nvrtc_cpu  the CPU time of that call (the figure to compare on a shared machine)
  total   front + emit + nvrtc
and the size of the generated CUDA C and of the PTX. No GPU is needed: NVRTC compiles for
sm_90a anywhere (TILE_CUDA_ARCH=sm_90a makes the passes plan for Hopper as on an H100/H200).
NVRTC is called through ctypes with the options of src/runtime/cuda.c (tile_cuda_nvrtc_options
prints them: `--options` here checks they agree), each phase from NVRTC's own `--time` report.

With --gpu (on a machine with a CUDA device), each kernel is also compiled and run once
through Tile's runtime, cold (an empty TILE_CACHE_DIR), as same_source.py times it: `e2e` is
the seconds from tile.compile() to the end of the first call on random inputs, `load` the
cuModuleLoadData share of it and `rt_nvrtc` NVRTC's (the runtime's own trace spans). One warm-up compile comes first, so
that process start-up and the first NVRTC load stay out of every row.

    python3 bench/cuda/compile_time.py --src DIR [--only zoo,gemm,mha,gqa,fp8,fp4] [--limit N]
        [--families silu,gemm,...] [--gpu] [--ptxas] [--nvrtc-extra OPTS] [--out FILE.md]

--families keeps the rows whose family name contains one of the words (e.g. silu,softmax).
--ptxas also times the standalone ptxas (-O3, the default) on NVRTC's PTX, for comparison;
--nvrtc-extra adds NVRTC options to the table's compiles (to try one: --split-compile=0, ...).
Figures are CPU-bound and single-threaded: on a shared or slower CPU compare ratios and
phase shares, not seconds.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = tempfile.mkdtemp(prefix="compile_time_")
os.environ.setdefault("TILE_CUDA_ARCH", "sm_90a")
os.environ["TILE_CACHE_DIR"] = os.path.join(WORK, "tile-cache")
sys.path.insert(0, os.path.join(ROOT, "python"))
if "TILE_LIBRARY" not in os.environ and os.path.exists(os.path.join(ROOT, "build", "libtile.so")):
    os.environ["TILE_LIBRARY"] = os.path.join(ROOT, "build", "libtile.so")

import tile  # noqa: E402
from tile import _lib as L  # noqa: E402

ARCH = os.environ["TILE_CUDA_ARCH"]


# ---------------------------------------------------------------------------------------------
# The programs: (family, name, file under --src, factory, arguments); the same as
# bench/tilelang/same_source.py's cases.

def zoo_cases():
    path = "benchmark/compile_speed/kernel_zoo.py"
    m = 256
    dims = [(2048, 5632), (3584, 18944), (4096, 14336), (5120, 13824)]
    heads = [(32, 8, 128), (28, 4, 128), (40, 8, 128)]
    C = []
    for hidden, inter in dims:
        for bm, bn, bk in [(64, 64, 32), (128, 128, 32), (128, 64, 64)]:
            for nm, N in (("qkv_%d" % hidden, hidden), ("up_%dx%d" % (hidden, inter), inter)):
                C.append(("zoo gemm", "gemm_%s_%dx%dx%d_%d" % (nm, bm, bn, bk, m), path, "gemm",
                          dict(M=m, N=N, K=hidden, block_M=bm, block_N=bn, block_K=bk)))
    for h, kvh, hd in heads:
        for bm in (64, 128):
            C.append(("zoo gqa", "gqa_%dx%dx%d_bm%d_%d" % (h, kvh, hd, bm, m), path, "gqa_attention",
                      dict(batch=1, heads=h, kv_heads=kvh, seq_len=m, dim=hd, block_M=bm, block_N=64)))
    for hidden, inter in dims:
        C.append(("zoo rmsnorm", "rmsnorm_%d_%d" % (hidden, m), path, "rms_norm", dict(M=m, N=hidden, block_M=32)))
        C.append(("zoo silu", "silu_%d_%d" % (inter, m), path, "silu_gate", dict(M=m, N=inter, block_M=32, block_N=64)))
        C.append(("zoo softmax", "softmax_%d_%d" % (hidden, m), path, "softmax", dict(M=m, N=hidden, block_M=32)))
    return C


def gemm_cases():
    return [("example_gemm", "matmul %d^3 128x128x32" % n, "examples/gemm/example_gemm.py", "matmul",
             dict(M=n, N=n, K=n, block_M=128, block_N=128, block_K=32)) for n in (1024, 4096)]


def mha_cases():
    b, h, s, d = 8, 32, 4096, 128
    return [("mha fwd", "%dx%dx%dx%d%s 128x128 t128" % (b, h, s, d, " causal" if c else ""),
             "examples/flash_attention/example_mha_fwd_bshd.py", "flashattn",
             dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=c, block_M=128, block_N=128, num_stages=1, threads=128))
            for c in (False, True)]


def gqa_cases():
    C = []
    for (b, h, s, d, g) in ((1, 64, 4096, 128, 16), (1, 32, 8192, 128, 8)):
        for c in (False, True):
            C.append(("gqa fwd", "%dx%dx%dx%d g%d%s 64x64 s2 t128" % (b, h, s, d, g, " causal" if c else ""),
                      "examples/flash_attention/example_gqa_fwd_bshd.py", "flashattn",
                      dict(batch=b, heads=h, seq_len=s, dim=d, is_causal=c, groups=g, block_M=64, block_N=64,
                           num_stages=2, threads=128)))
    return C


def fp8_cases():
    n = 4096
    return [("fp8 gemm", "%s %d^3 128x128x64" % (dt, n), "examples/gemm_fp8/example_tilelang_gemm_fp8.py", "matmul",
             dict(M=n, N=n, K=n, block_M=128, block_N=128, block_K=64, dtype=dt)) for dt in ("float8_e4m3fn", "float8_e5m2")]


def fp4_cases():
    n = 4096
    return [("fp4 dequant gemm", "f16 x fp4 %d^3 128x128x128 s2 t256" % n,
             "examples/dequantize_gemm/example_dequant_gemm_fp4_hopper.py", "matmul",
             dict(M=n, N=n, K=n, in_dtype="float16", out_dtype="float16", accum_dtype="float32", num_bits=4,
                  block_M=128, block_N=128, block_K=128, num_stages=2, threads=256, split=1))]


FAMILIES = dict(zoo=zoo_cases, gemm=gemm_cases, mha=mha_cases, gqa=gqa_cases, fp8=fp8_cases, fp4=fp4_cases)


# ---------------------------------------------------------------------------------------------
# NVRTC through ctypes, with Tile's options

class Nvrtc:
    def __init__(self):
        home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        self.lib = None
        for name in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", os.path.join(home, "lib64", "libnvrtc.so"),
                     "/usr/local/cuda-13.0/lib64/libnvrtc.so.13"):
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                pass
        if self.lib is None:
            sys.exit("compile_time: cannot load libnvrtc (set CUDA_HOME or the loader path)")
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def compile(self, src, opts, ptx=False):
        """(wall s, cpu s, {phase: ms}, output bytes); raises on a compile error."""
        lib = self.lib
        prog = ctypes.c_void_p()
        tf = os.path.join(WORK, "nvrtc-time.csv")
        if os.path.exists(tf):
            os.remove(tf)
        o = [x.encode() for x in opts] + [("--time=" + tf).encode()]
        t0, c0 = time.perf_counter(), time.process_time()
        if lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"tile.cu", 0, None, None):
            raise RuntimeError("nvrtcCreateProgram failed")
        rc = lib.nvrtcCompileProgram(prog, len(o), (ctypes.c_char_p * len(o))(*o))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value + 1)
        lib.nvrtcGetProgramLog(prog, log)
        out = b""
        if rc == 0:
            get_size, get = (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if ptx else (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN)
            get_size(prog, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value)
            get(prog, buf)
            out = buf.raw[:n.value - 1] if ptx else buf.raw
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        if rc:
            raise RuntimeError("NVRTC: %s\n%s" % (lib.nvrtcGetErrorString(rc).decode(), log.value.decode(errors="replace")[:2000]))
        phases = {}
        if os.path.exists(tf):
            for line in open(tf).read().splitlines()[1:]:
                p = [x.strip() for x in line.split(",")]
                if len(p) >= 4 and p[3] == "ms":
                    phases[p[1]] = phases.get(p[1], 0.0) + float(p[2])
        return wall, cpu, phases, out


def tile_nvrtc_options():
    """The options src/runtime/cuda.c passes NVRTC for ARCH, from libtile itself."""
    f = getattr(L.lib, "tile_cuda_nvrtc_options", None)
    if f is None:
        return None
    f.restype = ctypes.c_void_p
    f.argtypes = [ctypes.c_char_p]
    p = f(ARCH.encode())
    text = ctypes.string_at(p).decode()
    L.tile_free(p)
    return [o for o in text.split("\n") if o and not o.startswith("--gpu-architecture")]


# ---------------------------------------------------------------------------------------------

def measure(case, src_dir, nv, opts, a):
    fam, name, rel, factory, kw = case
    path = os.path.join(src_dir, rel)
    row = dict(family=fam, name=name)
    try:
        if a.gpu:  # first, so that nothing of this program was compiled in the process before
            row.update(e2e(case, src_dir))
        t0 = time.perf_counter()
        k = tile.compile(path, func=factory, target="cuda", **kw)
        row["front"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        cu = k.source("cuda")
        row["emit"] = time.perf_counter() - t0
        row["cu_kb"] = len(cu) / 1024.0
        wall, cpu, ph, _ = nv.compile(cu, ["--gpu-architecture=" + ARCH] + opts)
        row["nvrtc"], row["nvrtc_cpu"] = wall, cpu
        row["nv-fe"] = ph.get("CUDA C++ Frontend", 0) * 1e-3
        row["nvvm"] = ph.get("NVVM Optimizer", 0) * 1e-3
        row["ptx2bin"] = ph.get("PTX Translation", 0) * 1e-3
        if a.ptxas or a.ptx_size:
            _, _, _, ptx = nv.compile(cu, ["--gpu-architecture=" + ARCH.replace("sm_", "compute_")] + opts, ptx=True)
            row["ptx_lines"] = ptx.count(b"\n")
            if a.ptxas:
                pf = os.path.join(WORK, "k.ptx")
                open(pf, "wb").write(ptx)
                ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
                if not os.path.exists(ptxas):
                    ptxas = "/usr/local/cuda-13.0/bin/ptxas"
                t0 = time.perf_counter()
                subprocess.run([ptxas, "-arch=" + ARCH, pf, "-o", pf + ".cubin"], check=True)
                row["ptxas"] = time.perf_counter() - t0
        row["total"] = row["front"] + row["emit"] + row["nvrtc"]
    except Exception as e:  # a failure is a result: its first line
        row["error"] = str(e).strip().split("\n")[0][:160]
    return row


_SS = None


def e2e(case, src_dir):
    """Cold compile + first run through Tile's runtime, timed as same_source.py times it, and
    the runtime's own compile spans (tile.trace): passes, codegen, NVRTC, cuModuleLoadData."""
    global _SS
    import json
    import torch
    if _SS is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location("same_source", os.path.join(ROOT, "bench", "tilelang", "same_source.py"))
        _SS = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_SS)
        _SS.cases = {}
        for fn in _SS.FAMILIES.values():
            for c in fn(src_dir):
                _SS.cases[(c.family, c.name)] = c
    fam, name, rel, factory, kw = case
    if (fam, name) in _SS.cases:
        args = [x.clone() for x in _SS.cases[(fam, name)].inputs()]
    else:  # the warm-up program: a silu_gate of its own size
        args = [torch.randn(kw["M"], kw["N"], device="cuda", dtype=torch.float16) for _ in range(3)]
    torch.cuda.synchronize()
    tf = os.path.join(WORK, "trace.json")
    with tile.trace(tf):
        t0 = time.perf_counter()
        k = tile.compile(os.path.join(src_dir, rel), func=factory, target="cuda", **kw)
        k(*args)
        torch.cuda.synchronize()
        t = time.perf_counter() - t0
    out = {"e2e": t}
    text = open(tf).read().strip()
    try:
        ev = json.loads(text if text.endswith("]") else text.rstrip(",") + "]")
    except ValueError:
        ev = []
    if isinstance(ev, dict):
        ev = ev.get("traceEvents", [])
    for e in ev:
        key = {"nvrtc": "rt_nvrtc", "cuModuleLoadData": "load", "passes": "rt_passes", "codegen CUDA": "rt_codegen"}.get(e.get("name"))
        if key:
            out[key] = out.get(key, 0.0) + e.get("dur", 0) * 1e-6
    return out


def fmt(r, key, scale=1.0, f="%.3f"):
    return f % (r[key] * scale) if key in r else "—"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="a copy of TileLang's repository (benchmark/ and examples/)")
    ap.add_argument("--only", default=",".join(FAMILIES), help="case lists: " + ",".join(FAMILIES))
    ap.add_argument("--families", default="", help="keep rows whose family contains one of these words")
    ap.add_argument("--limit", type=int, default=0, help="at most this many rows per family (0: all)")
    ap.add_argument("--ptxas", action="store_true", help="also time standalone ptxas on NVRTC's PTX")
    ap.add_argument("--ptx-size", action="store_true", help="also count the PTX lines")
    ap.add_argument("--gpu", action="store_true", help="also time the cold compile + first run on the GPU")
    ap.add_argument("--nvrtc-extra", default="", help="more NVRTC options for the table's compiles (space-separated, "
                    "e.g. '--split-compile=0'; not the runtime's e2e), to try an option")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    nv = Nvrtc()
    opts = tile_nvrtc_options()
    if opts is None:  # a libtile from before tile_cuda_nvrtc_options: the options it used
        opts = ["-default-device", "--fmad=false", "--std=c++17", "-diag-suppress=177,550"]
        print("compile_time: this libtile has no tile_cuda_nvrtc_options; NVRTC gets %s" % " ".join(opts))
    opts = [o for o in opts if o and not o.startswith("--gpu-architecture")] + a.nvrtc_extra.split()
    cases = []
    for fam in a.only.split(","):
        cs = FAMILIES[fam]()
        if a.families:
            cs = [c for c in cs if any(w in c[0] for w in a.families.split(","))]
        if a.limit:
            seen = {}
            cs = [c for c in cs if seen.setdefault(c[0], []).append(c) or len(seen[c[0]]) <= a.limit]
        cases += cs
    # warm-up: NVRTC's first load and Tile's start-up stay out of the rows
    # a program of its own (no row of the table: its cubin is then in the cache)
    warm = ("warm-up", "warm-up", "benchmark/compile_speed/kernel_zoo.py", "silu_gate", dict(M=96, N=320, block_M=32, block_N=64))
    w = measure(warm, a.src, nv, opts, argparse.Namespace(ptxas=False, ptx_size=False, gpu=a.gpu))
    if "error" in w:
        sys.exit("compile_time: the warm-up compile failed: %s" % w["error"])
    cols = ["front", "emit", "nv-fe", "nvvm", "ptx2bin", "nvrtc", "nvrtc_cpu", "total"]
    gcols = ["e2e", "rt_nvrtc", "load"] if a.gpu else []
    head = "| family | program | " + " | ".join(cols + gcols + ["CUDA C KiB"]) + \
        (" | PTX lines" if a.ptxas or a.ptx_size else "") + (" | ptxas -O3" if a.ptxas else "") + " | note |"
    rows = []
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    print(lines[0], flush=True)
    for c in cases:
        r = measure(c, a.src, nv, opts, a)
        rows.append(r)
        s = "| %s | %s | " % (r["family"], r["name"]) + " | ".join(fmt(r, k) for k in cols + gcols) + " | " + fmt(r, "cu_kb", f="%.0f")
        if a.ptxas or a.ptx_size:
            s += " | " + fmt(r, "ptx_lines", f="%d")
        if a.ptxas:
            s += " | " + fmt(r, "ptxas")
        s += " | %s |" % r.get("error", "")
        lines.append(s)
        print(s, flush=True)
    # per family: median of each phase and its share of the total
    scols = [k for k in cols[:-1] if k != "nvrtc_cpu"]
    summ = ["", "| family | kernels | " + " | ".join("%s median s (share)" % k for k in scols) + " | nvrtc_cpu median s | total median s | max |" +
            "".join(" %s median s | max |" % k for k in gcols[:1]), "|" + "---|" * (len(scols) + 5 + 2 * len(gcols[:1]))]
    fams = []
    for r in rows:
        if r["family"] not in fams:
            fams.append(r["family"])
    for f in fams:
        rs = [r for r in rows if r["family"] == f and "total" in r]
        if not rs:
            summ.append("| %s | 0 | %s |" % (f, " | ".join("—" for _ in range(len(scols) + 3))))
            continue
        tot = statistics.median(r["total"] for r in rs)
        cells = []
        for k in scols:
            med = statistics.median(r[k] for r in rs)
            share = statistics.median(r[k] / r["total"] for r in rs)
            cells.append("%.3f (%.0f%%)" % (med, 100 * share))
        cells.append("%.3f" % statistics.median(r["nvrtc_cpu"] for r in rs))
        line = "| %s | %d | %s | %.3f | %.3f |" % (f, len(rs), " | ".join(cells), tot, max(r["total"] for r in rs))
        for k in gcols[:1]:
            v = [r[k] for r in rs if k in r]
            line += " %s | %s |" % (("%.3f" % statistics.median(v), "%.3f" % max(v)) if v else ("—", "—"))
        summ.append(line)
    text = "\n".join(lines + summ) + "\n"
    print("\n".join(summ))
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("NVRTC options: `%s`, arch %s\n\n" % (" ".join(opts), ARCH) + text)


if __name__ == "__main__":
    main()
