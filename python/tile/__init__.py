"""tile: the Tile toolchain from Python — compile TileLang kernels and call them on NumPy
arrays and PyTorch tensors (CPU and CUDA) without copies.

    import numpy as np, tile
    add = tile.compile("examples/add.tl", M=64, N=64)
    a, b, c = (np.random.rand(64, 64).astype(np.float32) for _ in range(3))
    add(a, b, c)                      # C = A + B, in place, on the best target here

See docs/python.md."""
from . import _lib
from ._core import (CPU, Device, Stream, Tensor, TileError, cache_stats, device_list, devices, from_dlpack, memory_stats)
from .kernel import Kernel, compile, jit
from . import language

__version__ = _lib.tile_version().decode()
__all__ = ["compile", "jit", "Kernel", "TileError", "devices", "device_list", "Device", "Stream", "Tensor", "language",
           "memory_stats", "cache_stats", "trace", "from_dlpack"]


class trace:
    """with tile.trace("out.json"): ... writes a Chrome trace of the block (open it in
    Perfetto); TILE_TRACE=FILE.json traces the whole process."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        import ctypes
        err = _lib.ERR()
        from ._core import check
        check(_lib.tile_trace_start(str(self.path).encode(), ctypes.byref(err)), err)
        return self

    def __exit__(self, *a):
        _lib.tile_trace_stop()
        return False
