"""Per-call host cost of Kernel.__call__ on a cached kernel, measured on the cpu target (no
GPU needed), and where it goes.

Each launcher is timed twice: with the real launch (tile_spec_launch runs the N=4096 f32 add
on the CPU pool) and with the launch replaced by a C function that does nothing (compiled
here with $CC or cc), which leaves the Python side of a call alone: argument checks, data
pointers, the stream, outputs, the call into C. The figure is the calling thread's CPU time
per call (time.thread_time: other processes on a busy machine do not count), median of 7
rounds of 2000 calls. Then the cost of each piece of the pure-Python fast path, timed alone
on the same tensors, predicts what doing it in C saves.

  python3 bench/python/launch_cpu.py [OUT.md]
with PYTHONPATH=python TILE_LIBRARY=build/libtile.so (TILE_PY_FAST=0: the pure-Python path)."""
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from tiny_add import N, SRC  # the script's folder is on sys.path


def per_call(fn, calls=2000, rounds=7):
    for _ in range(200):
        fn()
    out = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(calls):
            fn()
        out.append((time.thread_time() - t0) / calls)
    return statistics.median(out)


def noop_launch():
    """A C function with tile_spec_launch's signature that returns 0 at once."""
    d = tempfile.mkdtemp(prefix="tile-noop-")
    c, so = os.path.join(d, "noop.c"), os.path.join(d, "noop.so")
    with open(c, "w") as f:
        f.write("int noop(void *a, void *b, void *const *c, const double *d, char **e) { *e = 0; return 0; }\n")
    subprocess.check_call([os.environ.get("CC") or "cc", "-O2", "-shared", "-fPIC", c, "-o", so])
    lib = ctypes.CDLL(so)
    return lib, ctypes.cast(lib.noop, ctypes.c_void_p).value


def kernels(tile, torch):
    """(name, callable) of every launcher measured; compiled fresh so that their launchers are
    made after any stub is in place."""
    a, b, c = (np.random.rand(N).astype(np.float32) for _ in range(3))
    k = tile.compile(SRC, N=N, target="cpu")
    ko = tile.compile(SRC, N=N, target="cpu", out_idx=[-1])
    rows = [("NumPy, in place", lambda: k(a, b, c)), ("NumPy, output allocated", lambda: ko(a, b))]
    if torch is not None:
        ta, tb, tc = (torch.rand(N) for _ in range(3))
        rows += [("torch CPU, in place", lambda: k(ta, tb, tc)), ("torch CPU, output allocated", lambda: ko(ta, tb))]
    return rows


def pieces(torch):
    """ns per operation of the pure-Python fast path's pieces, on one torch CPU tensor."""
    if torch is None:
        return []
    x = torch.rand(N)
    T = torch.Tensor
    D, S = x.dtype, tuple(x.shape)
    lib, addr = noop_launch()
    f5 = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
    p = (ctypes.c_void_p * 3)()
    e = ctypes.POINTER(ctypes.c_char)()
    ref, h = ctypes.byref(e), ctypes.c_void_p(1)

    def call_args(*args, stream=None):
        return args

    out = []
    for name, fn in (("type(x) is Tensor", lambda: type(x) is T), ("x.dtype is D", lambda: x.dtype is D),
                     ("x.shape == S", lambda: x.shape == S), ("x.is_contiguous()", lambda: x.is_contiguous()),
                     ("x.get_device()", lambda: x.get_device()), ("x.data_ptr()", lambda: x.data_ptr()),
                     ("p[0] = x.data_ptr()", lambda: p.__setitem__(0, x.data_ptr())),
                     ("ctypes call, 5 arguments, no argtypes", lambda: f5(h, h, p, None, ref)),
                     ("a Python call f(*args, stream=None)", lambda: call_args(x, x, x)),
                     ("empty lambda (the timing loop's own cost)", lambda: None)):
        out.append((name, per_call(fn, calls=20000, rounds=5)))
    del lib
    return out


def main():
    try:
        import torch
    except ImportError:
        torch = None
    import tile
    from tile import _lib as L
    fast = getattr(L, "fast", None)
    mode = "tile._fast (C)" if fast is not None else "pure Python"
    real = [(n, per_call(f)) for n, f in kernels(tile, torch)]
    # the same launchers with a launch that does nothing: the Python side alone
    lib, addr = noop_launch()
    L.tile_spec_launch_objs = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
    L.tile_spec_launch = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_void_p)(addr)
    if hasattr(L, "tile_spec_launch_address"):
        L.tile_spec_launch_address = addr
    stub = [(n, per_call(f)) for n, f in kernels(tile, torch)]
    lines = ["Kernel.__call__ per-call host CPU time (%s), cpu target, N=%d f32 add, median of 7 x 2000 calls" % (mode, N), "",
             "| launcher | real launch us | launch stubbed us |", "|---|---|---|"]
    for (n, t), (_, s) in zip(real, stub):
        lines.append("| %s | %.2f | %.2f |" % (n, t * 1e6, s * 1e6))
    pc = pieces(torch)
    if pc:
        lines += ["", "| piece of the pure-Python path (torch CPU tensor) | ns |", "|---|---|"]
        lines += ["| %s | %.0f |" % (n, t * 1e9) for n, t in pc]
    text = "\n".join(lines)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text + "\n")
    del lib


if __name__ == "__main__":
    main()
