#!/usr/bin/env python3
"""nvrtc_ptx.py SRC.cu OUT.ptx [ARCH] — compile `tile emit --target cuda` output with NVRTC (the
options of src/runtime/cuda.c) to PTX for ARCH (default compute_90a), so that `ptxas -v` can
report registers and spills. Needs libnvrtc (CUDA_HOME/lib64 or the loader path)."""
import ctypes
import os
import sys

def main():
    src, out = sys.argv[1], sys.argv[2]
    arch = sys.argv[3] if len(sys.argv) > 3 else "compute_90a"
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    lib = None
    for name in (os.path.join(home, "lib64", "libnvrtc.so"), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            pass
    if lib is None:
        sys.exit("nvrtc_ptx: cannot load libnvrtc")
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), open(src, "rb").read(), b"tile.cu", 0, None, None):
        sys.exit("nvrtc_ptx: nvrtcCreateProgram failed")
    opts = [b"--gpu-architecture=" + arch.encode(), b"-default-device", b"--fmad=false", b"--std=c++17", b"-diag-suppress=177,550"]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc:
        sys.exit("nvrtc_ptx: %s does not compile:\n%s" % (src, log.value.decode(errors="replace")[:4000]))
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    ptx = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, ptx)
    open(out, "wb").write(ptx.value)

main()
