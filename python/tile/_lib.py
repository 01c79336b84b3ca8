"""ctypes bindings of libtile (include/tile.h): the library is found in this package
(wheels carry it), through $TILE_LIBRARY, or in the source tree's build/ folder."""
import ctypes
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _candidates(name, env):
    if os.environ.get(env):
        yield os.environ[env]
    yield os.path.join(_here, "lib", name)
    root = os.path.dirname(os.path.dirname(_here))
    for b in ("build", "build-release", "build-python"):
        yield os.path.join(root, b, name)


def _load(name, env):
    tried = []
    for p in _candidates(name, env):
        if p and os.path.exists(p):
            return ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL), p
        tried.append(p)
    return None, tried


lib, _where = _load("libtile.so", "TILE_LIBRARY")
if lib is None:
    raise ImportError("tile: cannot find libtile.so (tried %s); build it (cmake --build build) or set TILE_LIBRARY" % ", ".join(_where))
library_path = _where

c_int, c_int32, c_int64, c_size_t, c_double = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t, ctypes.c_double
c_char_p, c_void_p, POINTER, byref = ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER, ctypes.byref


class Tensor_(ctypes.Structure):  # tile_tensor
    _fields_ = [("data", c_void_p), ("dtype", c_int), ("rank", c_int), ("shape", c_int64 * 8)]


class Device_(ctypes.Structure):  # tile_device
    _fields_ = [("type", c_int32), ("index", c_int32)]


class View_(ctypes.Structure):  # tile_view
    _fields_ = [("data", c_void_p), ("byte_offset", c_int64), ("device", Device_), ("dtype", c_int), ("rank", c_int),
                ("shape", c_int64 * 8), ("strides", c_int64 * 8)]


class MemoryStats_(ctypes.Structure):
    _fields_ = [("in_use", c_size_t), ("cached", c_size_t), ("high_water", c_size_t), ("allocs", c_int64), ("reused", c_int64),
                ("driver_allocs", c_int64)]


class CacheStats_(ctypes.Structure):
    _fields_ = [("compiles", c_int64), ("specializations", c_int64), ("spec_hits", c_int64), ("launches", c_int64)]


class RunOptions_(ctypes.Structure):
    _fields_ = [("check_bounds", c_int), ("check_uninit", c_int), ("check_races", c_int), ("f64_reference", c_int),
                ("scalars", POINTER(c_double))]


ERR = POINTER(ctypes.c_char)


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


P = c_void_p
tile_free = _fn("tile_free", None, c_void_p)
tile_version = _fn("tile_version", c_char_p)
tile_compile_file_kernel = _fn("tile_compile_file_kernel", c_int, c_char_p, c_char_p, POINTER(c_char_p), c_int, POINTER(P), POINTER(ERR))
tile_compile_string = _fn("tile_compile_string", c_int, c_char_p, c_char_p, POINTER(c_char_p), c_int, POINTER(P), POINTER(ERR))
tile_module_free = _fn("tile_module_free", None, P)
tile_module_num_kernels = _fn("tile_module_num_kernels", c_int, P)
tile_module_kernel_name = _fn("tile_module_kernel_name", c_char_p, P, c_int)
tile_module_kernel = _fn("tile_module_kernel", P, P, c_char_p)
tile_kernel_ir = _fn("tile_kernel_ir", ERR, P)
tile_kernel_ir_for = _fn("tile_kernel_ir_for", c_int, P, c_char_p, c_char_p, POINTER(ERR), POINTER(ERR))
tile_kernel_emit = _fn("tile_kernel_emit", c_int, P, c_char_p, POINTER(ERR), POINTER(ERR))
tile_auto_target = _fn("tile_auto_target", c_char_p)
tile_kernel_num_params = _fn("tile_kernel_num_params", c_int, P)
tile_kernel_param_name = _fn("tile_kernel_param_name", c_char_p, P, c_int)
tile_kernel_param_is_tensor = _fn("tile_kernel_param_is_tensor", c_int, P, c_int)
tile_kernel_param_dtype = _fn("tile_kernel_param_dtype", c_int, P, c_int)
tile_kernel_param_rank = _fn("tile_kernel_param_rank", c_int, P, c_int)
tile_kernel_num_rets = _fn("tile_kernel_num_rets", c_int, P)
tile_kernel_ret_name = _fn("tile_kernel_ret_name", c_char_p, P, c_int)
tile_infer_shapes = _fn("tile_infer_shapes", c_int, P, POINTER(Tensor_), c_int, POINTER(Tensor_), c_int, POINTER(ERR))
tile_run = _fn("tile_run", c_int, P, c_char_p, POINTER(Tensor_), c_int, POINTER(Tensor_), c_int, POINTER(RunOptions_), POINTER(ERR))
tile_devices_report = _fn("tile_devices_report", ERR)
tile_num_targets = _fn("tile_num_targets", c_int)
tile_target_name = _fn("tile_target_name", c_char_p, c_int)
tile_target_info = _fn("tile_target_info", c_int, c_char_p, POINTER(ERR), POINTER(ERR))
tile_dtype_name = _fn("tile_dtype_name", c_char_p, c_int)
tile_dtype_parse = _fn("tile_dtype_parse", c_int, c_char_p)
tile_dtype_bits = _fn("tile_dtype_bits", c_int, c_int)
tile_device_parse = _fn("tile_device_parse", c_int, c_char_p, POINTER(Device_), POINTER(ERR))
tile_device_count = _fn("tile_device_count", c_int, c_int)
tile_device_describe = _fn("tile_device_describe", c_int, Device_, POINTER(ERR), POINTER(ERR))
tile_stream_create = _fn("tile_stream_create", c_int, Device_, POINTER(P), POINTER(ERR))
tile_stream_wrap = _fn("tile_stream_wrap", c_int, Device_, c_void_p, POINTER(P), POINTER(ERR))
tile_stream_sync = _fn("tile_stream_sync", c_int, P, POINTER(ERR))
tile_stream_free = _fn("tile_stream_free", None, P)
tile_event_create = _fn("tile_event_create", c_int, Device_, POINTER(P), POINTER(ERR))
tile_event_record = _fn("tile_event_record", c_int, P, P, POINTER(ERR))
tile_event_sync = _fn("tile_event_sync", c_int, P, POINTER(ERR))
tile_event_elapsed = _fn("tile_event_elapsed", c_int, P, P, POINTER(c_double), POINTER(ERR))
tile_event_free = _fn("tile_event_free", None, P)
tile_buffer_alloc = _fn("tile_buffer_alloc", c_int, Device_, c_size_t, POINTER(c_void_p), POINTER(ERR))
tile_buffer_free = _fn("tile_buffer_free", None, Device_, c_void_p)
tile_memory_stats_get = _fn("tile_memory_stats_get", c_int, Device_, POINTER(MemoryStats_), POINTER(ERR))
tile_memory_trim = _fn("tile_memory_trim", None, Device_, c_int)
tile_memcpy_to_device = _fn("tile_memcpy_to_device", c_int, P, c_void_p, c_size_t, c_void_p, c_size_t, POINTER(ERR))
tile_memcpy_to_host = _fn("tile_memcpy_to_host", c_int, P, c_void_p, c_void_p, c_size_t, c_size_t, POINTER(ERR))
tile_kernel_specialize = _fn("tile_kernel_specialize", c_int, P, c_char_p, POINTER(View_), c_int, POINTER(P), POINTER(ERR))
tile_spec_launch = _fn("tile_spec_launch", c_int, P, P, POINTER(c_void_p), POINTER(c_double), POINTER(ERR))
# the same function for the hot path of Kernel.__call__, without argtypes: every argument is
# passed as a ctypes object already (c_void_p handles, the pointer array, byref(err)), which
# skips the per-call conversion
tile_spec_launch_objs = ctypes.CFUNCTYPE(c_int)(("tile_spec_launch", lib))
# addresses for tile._fast, which calls tile_spec_launch and tile_free without linking libtile
tile_spec_launch_address = ctypes.cast(lib.tile_spec_launch, c_void_p).value
tile_free_address = ctypes.cast(lib.tile_free, c_void_p).value
tile_cache_stats_get = _fn("tile_cache_stats_get", None, POINTER(CacheStats_))
tile_view_from_dlpack = _fn("tile_view_from_dlpack", c_int, c_void_p, POINTER(View_), POINTER(ERR))
tile_view_from_dlpack_versioned = _fn("tile_view_from_dlpack_versioned", c_int, c_void_p, POINTER(View_), POINTER(ERR))
tile_view_to_dlpack = _fn("tile_view_to_dlpack", c_void_p, POINTER(View_), c_void_p, c_void_p)
tile_view_to_dlpack_versioned = _fn("tile_view_to_dlpack_versioned", c_void_p, POINTER(View_), c_void_p, c_void_p)
tile_trace_start = _fn("tile_trace_start", c_int, c_char_p, POINTER(ERR))
tile_trace_stop = _fn("tile_trace_stop", None)
tile_trace_event = _fn("tile_trace_event", None, c_char_p, c_char_p, c_double, c_double, c_char_p)
tile_now = _fn("tile_now", c_double)
# per-kernel compile options (include/tile.h); absent in older libraries
try:
    tile_module_set_option = _fn("tile_module_set_option", c_int, P, c_char_p, c_char_p, POINTER(ERR))
    tile_option_known = _fn("tile_option_known", c_int, c_char_p)
    tile_kernel_options = _fn("tile_kernel_options", ERR, P)
except AttributeError:
    tile_module_set_option = tile_option_known = tile_kernel_options = None


def take(p):
    """A heap string from libtile as str (freed)."""
    if not p:
        return ""
    s = ctypes.cast(p, c_char_p).value.decode("utf-8", "replace")
    tile_free(p)
    return s


TILE_OK, TILE_ERR_USER, TILE_ERR_CHECK, TILE_ERR_INTERNAL, TILE_ERR_UNAVAILABLE = 0, 1, 2, 3, 4
DEVICE_CPU, DEVICE_CUDA, DEVICE_OPENCL = 1, 2, 4


FAST_ABI = 1  # the tile._fast contract this package speaks (TILE_FAST_ABI in _fast.c)


def _load_fast():
    """tile._fast, the C form of Kernel's per-call path, or None (then the pure-Python path
    runs): from the package (wheels built with a compiler carry it), else the one CMake built
    next to this libtile (build/python/tile/), for this interpreter's ABI. TILE_PY_FAST=0 turns
    it off."""
    if (os.environ.get("TILE_PY_FAST") or "1").strip().lower() in ("0", "false", "off", "no"):
        return None
    import importlib
    import importlib.machinery
    import importlib.util
    try:
        m = importlib.import_module("tile._fast")
    except ImportError:
        m = None
        d = os.path.join(os.path.dirname(os.path.abspath(library_path)), "python", "tile")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES[:1]:  # this interpreter's own ABI tag
            p = os.path.join(d, "_fast" + suffix)
            if not os.path.exists(p):
                continue
            try:
                spec = importlib.util.spec_from_file_location("tile._fast", p)
                m = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(m)
            except ImportError:
                m = None
                continue
            sys.modules["tile._fast"] = m
            break
    return m if m is not None and getattr(m, "ABI", None) == FAST_ABI else None


fast = _load_fast()
