"""Errors, dtypes, devices, streams and the adaptation of NumPy / PyTorch / DLPack tensors to
tile views (zero copy)."""
import ctypes
import threading

from . import _lib as L


class TileError(RuntimeError):
    """An error from libtile; the message is its text (``file:line:col: error: ...`` with the
    source line and a caret for errors in a kernel's source or at its parameters)."""

    def __init__(self, message, status=L.TILE_ERR_USER):
        super().__init__(message.rstrip("\n"))
        self.status = status


def check(st, err):
    """Raise TileError for a non-OK status, with the message in err (a POINTER(c_char))."""
    if st != L.TILE_OK:
        raise TileError(L.take(err) or "tile: error %d" % st, st)


# ---------- dtypes ----------
DTYPES = {}  # tile dtype number -> canonical name
for _i in range(64):
    _n = L.tile_dtype_name(_i)
    if not _n or _n == b"?":
        break
    DTYPES[_i] = _n.decode()
DTYPE_OF = {v: k for k, v in DTYPES.items()}


def dtype_code(name):
    d = L.tile_dtype_parse(str(name).encode())
    if d < 0:
        raise TileError("unknown dtype '%s'" % name)
    return d


_NP_NAME = {"bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
            "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "float16": "float16", "float32": "float32",
            "float64": "float64", "bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2"}


def numpy_dtype_code(dt):
    n = _NP_NAME.get(dt.name)
    if n is None:
        raise TileError("NumPy dtype %s has no tile dtype" % dt)
    return DTYPE_OF[n]


def numpy_dtype(code):
    import numpy as np
    name = DTYPES[code]
    if name in ("bfloat16", "float8_e4m3", "float8_e5m2"):
        try:
            import ml_dtypes
        except ImportError:
            raise TileError("NumPy has no %s: install ml_dtypes" % name)
        return np.dtype({"bfloat16": ml_dtypes.bfloat16, "float8_e4m3": ml_dtypes.float8_e4m3fn,
                         "float8_e5m2": ml_dtypes.float8_e5m2}[name])
    if name == "float4_e2m1":
        raise TileError("float4_e2m1 is packed two per byte: NumPy cannot hold it")
    return np.dtype(name)


_torch_maps = None


def _torch():
    global _torch_maps
    import sys
    t = sys.modules.get("torch")
    if t is None:
        return None, None
    if _torch_maps is None:
        m = {}
        for tn, name in (("bool", "bool"), ("int8", "int8"), ("int16", "int16"), ("int32", "int32"), ("int64", "int64"),
                         ("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"), ("uint64", "uint64"),
                         ("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "float32"), ("float64", "float64"),
                         ("float8_e4m3fn", "float8_e4m3"), ("float8_e5m2", "float8_e5m2")):
            if hasattr(t, tn):
                m[getattr(t, tn)] = DTYPE_OF[name]
        _torch_maps = (m, {v: k for k, v in m.items()})
    return t, _torch_maps


# ---------- devices ----------
class Device:
    __slots__ = ("type", "index")

    def __init__(self, type_, index=0):
        self.type, self.index = int(type_), int(index)

    @staticmethod
    def parse(name):
        if isinstance(name, Device):
            return name
        d, err = L.Device_(), L.ERR()
        check(L.tile_device_parse(str(name).encode(), ctypes.byref(d), ctypes.byref(err)), err)
        return Device(d.type, d.index)

    def c(self):
        return L.Device_(self.type, self.index)

    @property
    def kind(self):
        return {L.DEVICE_CPU: "cpu", L.DEVICE_CUDA: "cuda", L.DEVICE_OPENCL: "opencl"}.get(self.type, "?")

    def __str__(self):
        return "cpu" if self.type == L.DEVICE_CPU else "%s:%d" % (self.kind, self.index)

    __repr__ = lambda self: "tile.Device(%r)" % str(self)
    __eq__ = lambda self, o: isinstance(o, Device) and (self.type, self.index) == (o.type, o.index)
    __hash__ = lambda self: hash((self.type, self.index))


CPU = Device(L.DEVICE_CPU, 0)


def devices():
    """The targets this library knows and whether each can run here, as a dict
    {name: description of the device it runs on, or None where it cannot run here}
    (device_list() gives the devices themselves)."""
    out = {}
    for i in range(L.tile_num_targets()):
        name = L.tile_target_name(i).decode()
        dev, why = L.ERR(), L.ERR()
        st = L.tile_target_info(name.encode(), ctypes.byref(dev), ctypes.byref(why))
        out[name] = L.take(dev) if st == L.TILE_OK else None
        L.take(why)
    return out


def device_list():
    res = []
    for t, name in ((L.DEVICE_CPU, "cpu"), (L.DEVICE_CUDA, "cuda"), (L.DEVICE_OPENCL, "opencl")):
        n = L.tile_device_count(t)
        for i in range(n):
            d = Device(t, i)
            desc, err = L.ERR(), L.ERR()
            if L.tile_device_describe(d.c(), ctypes.byref(desc), ctypes.byref(err)) == L.TILE_OK:
                res.append(d)
            L.take(desc)
            L.take(err)
    return res


# ---------- streams ----------
class Stream:
    """An in-order queue of work on one device (tile_stream). Stream(device) makes one;
    Stream.wrap(device, native) wraps a CUstream the caller owns (e.g. PyTorch's)."""

    def __init__(self, device="cpu", _handle=None):
        self.device = Device.parse(device)
        if _handle is None:
            h, err = L.c_void_p(), L.ERR()
            check(L.tile_stream_create(self.device.c(), ctypes.byref(h), ctypes.byref(err)), err)
            _handle = h
        self._h = _handle

    @classmethod
    def wrap(cls, device, native):
        d = Device.parse(device)
        h, err = L.c_void_p(), L.ERR()
        check(L.tile_stream_wrap(d.c(), L.c_void_p(native or 0), ctypes.byref(h), ctypes.byref(err)), err)
        return cls(d, h)

    def synchronize(self):
        err = L.ERR()
        check(L.tile_stream_sync(self._h, ctypes.byref(err)), err)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and L is not None and L.tile_stream_free is not None:
            L.tile_stream_free(h)
            self._h = None


_streams_lock = threading.Lock()
_default_streams = {}   # Device -> Stream (tile's own stream per device)
_wrapped = {}           # (Device, native) -> Stream


def default_stream(dev):
    s = _default_streams.get(dev)
    if s is None:
        with _streams_lock:
            s = _default_streams.get(dev)
            if s is None:
                s = _default_streams[dev] = Stream.wrap(dev, 0) if dev.type != L.DEVICE_CPU else Stream(dev)
    return s


def wrapped_stream(dev, native):
    key = (dev, native)
    s = _wrapped.get(key)
    if s is None:
        with _streams_lock:
            s = _wrapped.get(key)
            if s is None:
                s = _wrapped[key] = Stream.wrap(dev, native)
    return s


def memory_stats(device="cpu"):
    d = Device.parse(device)
    st, err = L.MemoryStats_(), L.ERR()
    check(L.tile_memory_stats_get(d.c(), ctypes.byref(st), ctypes.byref(err)), err)
    return {f: getattr(st, f) for f, _ in L.MemoryStats_._fields_}


def cache_stats():
    st = L.CacheStats_()
    L.tile_cache_stats_get(ctypes.byref(st))
    return {f: getattr(st, f) for f, _ in L.CacheStats_._fields_}


# ---------- tile-owned tensors (outputs where no framework allocates) ----------
class _Releaser:
    def __init__(self, dev, ptr):
        self.dev, self.ptr = dev, ptr

    def __del__(self):
        if self.ptr and L is not None and L.tile_buffer_free is not None:
            L.tile_buffer_free(self.dev.c(), L.c_void_p(self.ptr))
            self.ptr = None


_DLPACK_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_exported = {}
_exported_lock = threading.Lock()


@_DLPACK_RELEASE
def _on_release(ctx):
    with _exported_lock:
        _exported.pop(ctx, None)


class Tensor:
    """Memory tile owns (from the device's caching pool), with a shape, dtype and strides.
    Exchange it zero-copy with ``numpy.from_dlpack`` / ``torch.from_dlpack``."""

    def __init__(self, shape, dtype, device="cpu"):
        self.device = Device.parse(device)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = DTYPES[dtype] if isinstance(dtype, int) else DTYPES[dtype_code(dtype)]
        self._code = DTYPE_OF[self.dtype]
        n = 1
        for s in self.shape:
            n *= s
        bits = L.tile_dtype_bits(self._code)
        nbytes = max(1, (n * bits + 7) // 8)
        p, err = L.c_void_p(), L.ERR()
        check(L.tile_buffer_alloc(self.device.c(), nbytes, ctypes.byref(p), ctypes.byref(err)), err)
        self.nbytes = nbytes
        self.data_ptr = p.value
        self._rel = _Releaser(self.device, p.value)
        st, self.strides = 1, [0] * len(self.shape)
        for d in range(len(self.shape) - 1, -1, -1):
            self.strides[d] = st
            st *= self.shape[d]
        self.strides = tuple(self.strides)

    def view(self):
        v = L.View_()
        v.data, v.byte_offset, v.device, v.dtype, v.rank = self.data_ptr, 0, self.device.c(), self._code, len(self.shape)
        for d, (s, t) in enumerate(zip(self.shape, self.strides)):
            v.shape[d], v.strides[d] = s, t
        return v

    def __dlpack_device__(self):
        return ({L.DEVICE_CPU: 1, L.DEVICE_CUDA: 2, L.DEVICE_OPENCL: 4}[self.device.type], self.device.index)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("tile.Tensor.__dlpack__: copies are not made")
        v = self.view()
        key = id(self) ^ (len(_exported) << 48)
        with _exported_lock:
            _exported[key] = self  # alive until the consumer's deleter runs
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        f = L.tile_view_to_dlpack_versioned if versioned else L.tile_view_to_dlpack
        p = f(ctypes.byref(v), ctypes.cast(_on_release, ctypes.c_void_p), ctypes.c_void_p(key))
        return _capsule_new(p, b"dltensor_versioned" if versioned else b"dltensor", versioned)

    def numpy(self):
        """A NumPy array of the data: zero copy on the cpu, a copy to the host (after the
        device's default stream) elsewhere."""
        import numpy as np
        if self.device.type == L.DEVICE_CPU:
            return np.from_dlpack(self)
        out = np.empty(self.shape, dtype=numpy_dtype(self._code))
        err = L.ERR()
        check(L.tile_memcpy_to_host(default_stream(self.device)._h, out.ctypes.data, L.c_void_p(self.data_ptr), 0, self.nbytes,
                                    ctypes.byref(err)), err)
        return out

    def copy_(self, array):
        """Copy a host array (NumPy, or anything np.asarray takes) of the same shape and dtype
        into this tensor, on the device's default stream; returns self."""
        import numpy as np
        a = np.ascontiguousarray(array)
        if tuple(a.shape) != self.shape or numpy_dtype_code(a.dtype) != self._code:
            raise TileError("Tensor.copy_: the array is %s %s, the tensor %s %s" % (a.dtype, tuple(a.shape), self.dtype, self.shape))
        err = L.ERR()
        if self.device.type == L.DEVICE_CPU:
            ctypes.memmove(self.data_ptr, a.ctypes.data, self.nbytes)
        else:
            check(L.tile_memcpy_to_device(default_stream(self.device)._h, L.c_void_p(self.data_ptr), 0, a.ctypes.data, self.nbytes,
                                          ctypes.byref(err)), err)
        return self

    def __repr__(self):
        return "tile.Tensor(shape=%s, dtype=%s, device=%s)" % (self.shape, self.dtype, self.device)


# ---------- DLPack capsules through the C API of CPython ----------
_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]

_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _deleter_offset(versioned):
    # DLManagedTensorVersioned: version(8) ctx(8) deleter(8) ...; DLManagedTensor: DLTensor(48) ctx(8) deleter(8)
    return 16 if versioned else 56


# the same functions on a raw PyObject* (the destructor runs while the capsule is dying)
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))


@_CAPSULE_DTOR
def _capsule_dtor(cap):
    # a capsule nobody consumed: call the managed tensor's deleter (the name tells which kind)
    for name, versioned in ((b"dltensor", False), (b"dltensor_versioned", True)):
        if _is_valid_raw(cap, name):
            _call_deleter(_get_pointer_raw(cap, name), versioned)
            return


def _call_deleter(p, versioned):
    if not p:
        return
    fp = ctypes.c_void_p.from_address(p + _deleter_offset(versioned)).value
    if fp:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(fp)(p)


# keep the capsule destructor alive and pass it as a raw pointer (PyCapsule_Destructor takes PyObject*)
_CAPSULE_DTOR_PTR = ctypes.cast(_capsule_dtor, ctypes.c_void_p)


def _capsule_new(p, name, versioned):
    return _api.PyCapsule_New(p, name, _CAPSULE_DTOR_PTR)


def view_of_capsule(cap):
    """A tile view of a DLPack capsule (versioned or not), consumed: its deleter is called
    when the returned owner object is collected."""
    v, err = L.View_(), L.ERR()
    if _api.PyCapsule_IsValid(cap, b"dltensor_versioned"):
        p = _api.PyCapsule_GetPointer(cap, b"dltensor_versioned")
        check(L.tile_view_from_dlpack_versioned(p, ctypes.byref(v), ctypes.byref(err)), err)
        _api.PyCapsule_SetName(cap, b"used_dltensor_versioned")
        return v, _Consumed(p, True)
    if _api.PyCapsule_IsValid(cap, b"dltensor"):
        p = _api.PyCapsule_GetPointer(cap, b"dltensor")
        check(L.tile_view_from_dlpack(p, ctypes.byref(v), ctypes.byref(err)), err)
        _api.PyCapsule_SetName(cap, b"used_dltensor")
        return v, _Consumed(p, False)
    raise TileError("not a DLPack capsule (named 'dltensor' or 'dltensor_versioned')")


class _Consumed:
    """Owns a consumed DLPack managed tensor: calls its deleter when collected."""

    def __init__(self, p, versioned):
        self.p, self.versioned = p, versioned

    def __del__(self):
        if self.p:
            _call_deleter(self.p, self.versioned)
            self.p = None


def from_dlpack(obj, stream=None):
    """A tile view (and an owner to keep alive) of any object with __dlpack__."""
    try:
        cap = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:
        cap = obj.__dlpack__(stream=stream) if stream is not None else obj.__dlpack__()
    return view_of_capsule(cap)
