"""tile.ops: the operator library (include/tile_ops.h, docs/ops.md) from Python.

Functions take NumPy arrays, torch tensors (CPU and CUDA) and tile.Tensor, with the
signatures and semantics of the torch / torch.nn.functional function of the same name where
one exists, and return the kind of their first tensor argument (NumPy in, NumPy out; a CUDA
torch tensor in, a CUDA torch tensor out, on the same device):

    import torch, tile.ops as ops
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
    y = ops.rms_norm(x, (4096,), w, eps=1e-6)      # on torch's current stream, no copies

The target follows the data: CUDA tensors run on cuda (on PyTorch's current stream,
asynchronously, through tile_op_set_device: no host copies, outputs from tile's device pool
handed to torch through DLPack); CPU data run on the cpu target unless target= names another
("interp", or "cuda"/"opencl", which then copy in and out). Errors raise tile.TileError with
the library's message, which names the argument ("add: b: shape [5] cannot be broadcast to
[3, 4] (dimension -1: 5 vs 4)").

Every registry operator of the elementwise families is a function here by its registry name
(tile.ops.exp, tile.ops.bitwise_xor, ...); tile.ops.unary(name, x, *args) and
tile.ops.binary(name, a, b) call them by name. tile.ops.names() lists the registry.
"""
import builtins as _builtins
import ctypes
import math
import numbers
import sys

from . import _lib as L
from ._core import (CPU, DTYPE_OF, DTYPES, Device, Tensor, TileError, _Releaser, _torch, default_stream, dtype_code,
                    numpy_dtype_code, wrapped_stream)

# ---------- the C functions ----------
P = ctypes.c_void_p
T = ctypes.POINTER(L.Tensor_)
ERRP = ctypes.POINTER(L.ERR)
c_int, c_int64, c_double, c_char_p = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_char_p


class Scalar_(ctypes.Structure):  # tile_op_scalar
    _fields_ = [("f", c_double), ("i", c_int64), ("kind", c_int)]


class GemmOpts_(ctypes.Structure):  # tile_op_gemm_opts
    _fields_ = [("trans_a", c_int), ("trans_b", c_int), ("activation", c_char_p), ("alpha", c_double), ("beta", c_double),
                ("out_dtype", c_int)]


class AttnOpts_(ctypes.Structure):  # tile_op_attn_opts
    _fields_ = [("is_causal", c_int), ("scale", c_double), ("window", c_int64), ("softcap", c_double), ("sinks", ctypes.POINTER(L.Tensor_))]


class OpInfo_(ctypes.Structure):  # tile_op_info
    _fields_ = [("name", c_char_p), ("family", c_char_p), ("reference", c_char_p), ("aten", c_char_p), ("summary", c_char_p),
                ("source", c_char_p), ("factory", c_char_p), ("dtypes", ctypes.c_uint32), ("targets", ctypes.c_uint32)]


def _own(name):
    """A function object of libtile's of this module's own: the cached attribute L.lib.name is
    shared, and another module setting its argtypes (with its own structure classes) would
    change this one's."""
    return L.lib._FuncPtr((name, L.lib))


def _f(name, *argtypes):
    f = _own(name)
    f.restype = c_int
    f.argtypes = [c_char_p] + list(argtypes) + [ERRP]
    return f


I64P, INTP, DBLP = ctypes.POINTER(c_int64), ctypes.POINTER(c_int), ctypes.POINTER(c_double)
SCP = ctypes.POINTER(Scalar_)
_set_device = _own("tile_op_set_device")
_set_device.restype, _set_device.argtypes = c_int, [L.Device_, P, ERRP]
_reset_device = _own("tile_op_reset_device")
_reset_device.restype, _reset_device.argtypes = None, []
_op_count = _own("tile_op_count")
_op_count.restype, _op_count.argtypes = c_int, []
_op_at = _own("tile_op_at")
_op_at.restype, _op_at.argtypes = ctypes.POINTER(OpInfo_), [c_int]

C = {
    "unary": _f("tile_op_unary", c_char_p, T, T),
    "unary_args": _f("tile_op_unary_args", c_char_p, T, DBLP, c_int, T),
    "binary": _f("tile_op_binary", c_char_p, T, T, T),
    "binary_scalar": _f("tile_op_binary_scalar", c_char_p, T, Scalar_, c_int, T),
    "add": _f("tile_op_add", T, T, Scalar_, T),
    "sub": _f("tile_op_sub", T, T, Scalar_, T),
    "where": _f("tile_op_where", T, T, T, T),
    "clamp": _f("tile_op_clamp", T, SCP, SCP, T),
    "clamp_tensor": _f("tile_op_clamp_tensor", T, T, T, T),
    "cast": _f("tile_op_cast", T, c_int, T),
    "copy": _f("tile_op_copy", T, T),
    "fill": _f("tile_op_fill", Scalar_, T),
    "arange": _f("tile_op_arange", Scalar_, Scalar_, Scalar_, c_int, T),
    "reshape": _f("tile_op_reshape", T, I64P, c_int, T),
    "permute": _f("tile_op_permute", T, INTP, T),
    "transpose": _f("tile_op_transpose", T, c_int, c_int, T),
    "expand": _f("tile_op_expand", T, I64P, c_int, T),
    "slice": _f("tile_op_slice", T, c_int, c_int64, c_int64, c_int64, T),
    "select": _f("tile_op_select", T, c_int, c_int64, T),
    "flip": _f("tile_op_flip", T, INTP, c_int, T),
    "repeat": _f("tile_op_repeat", T, I64P, c_int, T),
    "diagonal": _f("tile_op_diagonal", T, c_int64, c_int, c_int, T),
    "as_strided": _f("tile_op_as_strided", T, I64P, I64P, c_int, c_int64, T),
    "cat": _f("tile_op_cat", T, c_int, c_int, T),
    "stack": _f("tile_op_stack", T, c_int, c_int, T),
    "split": _f("tile_op_split", T, I64P, c_int, c_int, T),
    "pad": _f("tile_op_pad", T, I64P, c_int, Scalar_, T),
    "pad_reflect": _f("tile_op_pad_reflect", T, I64P, c_int, T),
    "pad_replicate": _f("tile_op_pad_replicate", T, I64P, c_int, T),
    "slice_scatter": _f("tile_op_slice_scatter", T, T, c_int, c_int64, c_int64, c_int64, T),
    "select_scatter": _f("tile_op_select_scatter", T, T, c_int, c_int64, T),
    "index_select": _f("tile_op_index_select", T, c_int, T, T),
    "gather": _f("tile_op_gather", T, c_int, T, T),
    "scatter": _f("tile_op_scatter", T, c_int, T, T, c_char_p, T),
    "embedding": _f("tile_op_embedding", T, T, T),
    "embedding_backward": _f("tile_op_embedding_backward", T, T, c_int64, c_int64, T),
    "reduce": _f("tile_op_reduce", c_char_p, T, INTP, c_int, c_int, T),
    "var": _f("tile_op_var", c_char_p, T, INTP, c_int, c_double, c_int, T),
    "argmax": _f("tile_op_argmax", c_char_p, T, c_int, c_int, T),
    "max_dim": _f("tile_op_max_dim", c_char_p, T, c_int, c_int, T, T),
    "cumsum": _f("tile_op_cumsum", c_char_p, T, c_int, T),
    "rms_norm": _f("tile_op_rms_norm", T, T, T, c_double, T, T),
    "layer_norm": _f("tile_op_layer_norm", T, T, T, T, c_double, T, T, T, T),
    "batch_norm": _f("tile_op_batch_norm", T, T, T, T, T, c_int, c_double, T, T, T),
    "softmax": _f("tile_op_softmax", T, c_int, T),
    "log_softmax": _f("tile_op_log_softmax", T, c_int, T),
    "glu": _f("tile_op_glu", c_char_p, T, T, T),
    "rope": _f("tile_op_rope", T, T, T, T, c_int, T),
    "cross_entropy": _f("tile_op_cross_entropy", T, T, c_int64, c_char_p, T, T),
    "cross_entropy_backward": _f("tile_op_cross_entropy_backward", T, T, T, T, c_int64, c_char_p, T),
    "quantize_fp8": _f("tile_op_quantize_fp8", T, c_int, c_int, T, T),
    "dequantize_fp8": _f("tile_op_dequantize_fp8", T, T, c_int, c_int, T),
    "rand": _f("tile_op_rand", c_int64, T),
    "randn": _f("tile_op_randn", c_int64, T),
    "dropout": _f("tile_op_dropout", T, c_double, c_int64, T, T),
    "gemm": _f("tile_op_gemm", T, T, T, ctypes.POINTER(GemmOpts_), T),
    "gemm_fp8": _f("tile_op_gemm_fp8", T, T, T, T, c_int, T),
    "gemm_int8": _f("tile_op_gemm_int8", T, T, T, T, c_int, T),
    "gemm_fp4": _f("tile_op_gemm_fp4", T, T, T, c_double, c_int, T),
    "grouped_gemm": _f("tile_op_grouped_gemm", T, T, T, T, T, T),
    "sdpa": _f("tile_op_scaled_dot_product_attention", T, T, T, ctypes.POINTER(AttnOpts_), T, T),
    "sdpa_backward": _f("tile_op_scaled_dot_product_attention_backward", T, T, T, T, T, T, ctypes.POINTER(AttnOpts_), T, T, T, T),
    "attention_varlen": _f("tile_op_attention_varlen", T, T, T, T, T, ctypes.POINTER(AttnOpts_), T, T),
    "attention_decode": _f("tile_op_attention_decode", T, T, T, T, T, ctypes.POINTER(AttnOpts_), c_int, T, T),
}

_BOOL, _I64, _F64, _F32 = DTYPE_OF["bool"], DTYPE_OF["int64"], DTYPE_OF["float64"], DTYPE_OF["float32"]
_FLOATS = {DTYPE_OF[n] for n in ("float16", "bfloat16", "float32", "float64")}


def names():
    """The registry: [(name, family, reference)] of every operator of this libtile."""
    out = []
    for i in range(_op_count()):
        p = _op_at(i).contents
        out.append((p.name.decode(), p.family.decode(), p.reference.decode()))
    return out


# ---------- arguments ----------
class _Arg:
    """One tensor argument: its tile_tensor header, device, kind and what keeps it alive."""
    __slots__ = ("t", "dev", "kind", "keep", "shape", "code")


def _np():
    import numpy
    return numpy


_torch_seen = None   # (torch, its dtype maps) once torch is imported


def _torch_once():
    global _torch_seen
    if _torch_seen is None:
        t, maps = _torch()
        if t is None:
            return None, None
        _torch_seen = (t, maps)
    return _torch_seen


def _arg(x, name):
    """A tensor argument (NumPy array, torch tensor, tile.Tensor) as an _Arg; a row-major
    copy is made of a non-contiguous one (the operators take contiguous tensors)."""
    a = _Arg()
    torch, maps = _torch_once()
    if torch is not None and isinstance(x, torch.Tensor):
        if not x.is_contiguous():
            x = x.contiguous()
        code = maps[0].get(x.dtype)
        if code is None:
            raise TileError("%s: torch dtype %s has no tile dtype" % (name, x.dtype))
        dt = x.device.type
        if dt == "cpu":
            a.dev = CPU
        elif dt == "cuda":
            a.dev = Device(L.DEVICE_CUDA, x.device.index if x.device.index is not None else torch.cuda.current_device())
        else:
            raise TileError("%s: a torch tensor on %s (tile.ops takes cpu and cuda tensors)" % (name, x.device))
        a.kind, a.keep, a.shape, a.code, ptr = "torch", x, tuple(x.shape), code, x.data_ptr()
    elif isinstance(x, Tensor):
        a.dev, a.kind, a.keep, a.shape, a.code, ptr = x.device, "tile", x, x.shape, x._code, x.data_ptr
    else:
        np = _np()
        if not isinstance(x, np.ndarray):
            raise TileError("%s: expected a NumPy array, a torch tensor or a tile.Tensor, not %s" % (name, type(x).__name__))
        x = np.ascontiguousarray(x)
        try:
            code = numpy_dtype_code(x.dtype)
        except TileError:
            raise TileError("%s: NumPy dtype %s has no tile dtype" % (name, x.dtype))
        a.dev, a.kind, a.keep, a.shape, a.code, ptr = CPU, "numpy", x, tuple(x.shape), code, x.ctypes.data
    if len(a.shape) > 8:
        raise TileError("%s: rank %d (at most 8)" % (name, len(a.shape)))
    t = L.Tensor_()
    t.data, t.dtype, t.rank = ptr or None, a.code, len(a.shape)
    for i, s in enumerate(a.shape):
        t.shape[i] = s
    a.t = t
    return a


def _is_tensor(x):
    if isinstance(x, Tensor):
        return True
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return True
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _scalar(v, name="value"):
    s = Scalar_()
    if isinstance(v, bool) or (type(v).__name__ == "bool_"):
        s.f, s.i, s.kind = float(bool(v)), int(bool(v)), _BOOL
    elif isinstance(v, numbers.Integral):
        s.f, s.i, s.kind = float(v), int(v), _I64
    elif isinstance(v, numbers.Real):
        s.f, s.i, s.kind = float(v), int(v) if math.isfinite(v) else 0, _F64
    else:
        raise TileError("%s: expected a Python number, not %s" % (name, type(v).__name__))
    return s


def _dtype(d, name="dtype"):
    """A tile dtype code from a torch dtype, a NumPy dtype or a name."""
    if d is None:
        return None
    torch, maps = _torch()
    if torch is not None and isinstance(d, torch.dtype):
        c = maps[0].get(d)
        if c is None:
            raise TileError("%s: torch dtype %s has no tile dtype" % (name, d))
        return c
    if isinstance(d, str):
        return dtype_code({"float8_e4m3fn": "float8_e4m3", "half": "float16", "float": "float32", "double": "float64",
                           "long": "int64", "int": "int32"}.get(d, d))
    try:
        np = _np()
        return numpy_dtype_code(np.dtype(d))
    except (TypeError, TileError):
        raise TileError("%s: %r is not a dtype" % (name, d))


def _out():
    return L.Tensor_()


def _ints(seq, ctype=c_int64):
    seq = list(seq)
    return (ctype * _builtins.max(1, len(seq)))(*seq), len(seq)


# ---------- the device of a call, and its results ----------
def _device_of(args):
    dev = None
    first = None
    for name, a in args:
        if dev is None:
            dev, first = a.dev, name
        elif a.dev != dev:
            raise TileError("%s: on %s, but %s is on %s (the tensors of a call share one device)" % (name, a.dev, first, dev))
    return dev or CPU


def _stream_for(dev):
    if dev.type == L.DEVICE_CPU:
        return None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return wrapped_stream(dev, torch.cuda.current_stream(dev.index).cuda_stream)
    return default_stream(dev)


class _Call:
    """One operator call: the device (and stream) its tensors live on, the kind of result to
    give back, the target."""

    def __init__(self, args, target):
        self.args = args
        self.dev = _device_of(args)
        self.kind = args[0][1].kind if args else "numpy"
        if target is None:
            target = "cpu" if self.dev.type == L.DEVICE_CPU else None
        self.target = target.encode() if isinstance(target, str) else target

    def run(self, fn, *cargs):
        err = L.ERR()
        s = _stream_for(self.dev)
        st = _set_device(self.dev.c(), s._h if s is not None else None, ctypes.byref(err))
        if st == L.TILE_OK:
            try:
                st = fn(self.target, *cargs, ctypes.byref(err))
            finally:
                _reset_device()
        if st != L.TILE_OK:
            raise TileError(L.take(err) or "tile.ops: error %d" % st, st)

    def wrap(self, t):
        """The result in t (allocated by the call from the device's pool) as the call's kind."""
        shape = tuple(t.shape[i] for i in range(t.rank))
        x = Tensor.__new__(Tensor)
        x.device, x.shape, x._code, x.dtype = self.dev, shape, t.dtype, DTYPES[t.dtype]
        n = 1
        for s in shape:
            n *= s
        x.nbytes = _builtins.max(1, (n * L.tile_dtype_bits(t.dtype) + 7) // 8)
        x.data_ptr = t.data
        x._rel = _Releaser(self.dev, t.data)
        st, strides = 1, [0] * len(shape)
        for d in range(len(shape) - 1, -1, -1):
            strides[d] = st
            st *= shape[d]
        x.strides = tuple(strides)
        if self.kind == "torch":
            return sys.modules["torch"].from_dlpack(x)
        if self.kind == "numpy":
            return _np().from_dlpack(x)
        return x


def _call(_target, **tensors):
    args = [(k, _arg(v, k)) for k, v in tensors.items() if v is not None]
    return _Call(args, _target), {k: a for k, a in args}


def _p(a):
    return ctypes.byref(a.t) if a is not None else None


def _like(dev, kind, target):
    c = _Call([], target)
    c.dev, c.kind = dev, kind
    if target is None and dev.type != L.DEVICE_CPU:
        c.target = None
    return c


def _creation(device, like, dtype, target):
    """(call, kind) of a function without tensor inputs: like= gives device and kind; else
    device= (a torch.device or a string; torch results if torch is imported and device or
    dtype is torch's, else NumPy on the cpu and tile.Tensor elsewhere)."""
    if like is not None:
        a = _arg(like, "like")
        return _like(a.dev, a.kind, target)
    torch = sys.modules.get("torch")
    kind = "numpy"
    if torch is not None and (isinstance(device, torch.device) or isinstance(dtype, torch.dtype)):
        kind = "torch"
    d = str(device) if device is not None else "cpu"
    dev = Device.parse("cuda:0" if d == "cuda" else d)
    if kind == "numpy" and dev.type != L.DEVICE_CPU:
        kind = "tile"
    return _like(dev, kind, target)


# ---------- elementwise ----------
def unary(op, x, *args, target=None):
    """out = op(x) for a registry operator of the unary family, with its scalar arguments."""
    c, a = _call(target, x=x)
    o = _out()
    if args:
        vals = (c_double * len(args))(*[float(v) for v in args])
        c.run(C["unary_args"], op.encode(), _p(a["x"]), vals, len(args), ctypes.byref(o))
    else:
        c.run(C["unary"], op.encode(), _p(a["x"]), ctypes.byref(o))
    return c.wrap(o)


def binary(op, a, b, target=None):
    """out = op(a, b) for a registry operator of the binary family; either may be a Python
    number (a wrapped number in type promotion, as in torch)."""
    if not _is_tensor(a) and not _is_tensor(b):
        raise TileError("%s: a and b are both numbers; one must be a tensor" % op)
    o = _out()
    if not _is_tensor(b):
        c, t = _call(target, a=a)
        c.run(C["binary_scalar"], op.encode(), _p(t["a"]), _scalar(b, "b"), 0, ctypes.byref(o))
    elif not _is_tensor(a):
        c, t = _call(target, b=b)
        c.run(C["binary_scalar"], op.encode(), _p(t["b"]), _scalar(a, "a"), 1, ctypes.byref(o))
    else:
        c, t = _call(target, a=a, b=b)
        c.run(C["binary"], op.encode(), _p(t["a"]), _p(t["b"]), ctypes.byref(o))
    return c.wrap(o)


def _alpha_op(name, input, other, alpha, target):
    """torch.add / torch.sub: input op alpha * other"""
    if not _is_tensor(other):
        return binary(name, input, other * alpha if alpha != 1 else other, target=target)
    if not _is_tensor(input):
        if alpha != 1:
            raise TileError("%s: alpha: with a number as input, alpha must be 1" % name)
        return binary(name, input, other, target=target)
    c, t = _call(target, input=input, other=other)
    o = _out()
    c.run(C[name], _p(t["input"]), _p(t["other"]), _scalar(alpha, "alpha"), ctypes.byref(o))
    return c.wrap(o)


def add(input, other, *, alpha=1, target=None):
    """torch.add(input, other, alpha=alpha)"""
    return _alpha_op("add", input, other, alpha, target)


def sub(input, other, *, alpha=1, target=None):
    """torch.sub(input, other, alpha=alpha)"""
    return _alpha_op("sub", input, other, alpha, target)


def div(input, other, *, rounding_mode=None, target=None):
    """torch.div(input, other, rounding_mode=None | 'trunc' | 'floor')"""
    op = {None: "div", "trunc": "div_trunc", "floor": "div_floor"}.get(rounding_mode)
    if op is None:
        raise TileError("div: rounding_mode: %r is not None, 'trunc' or 'floor'" % (rounding_mode,))
    return binary(op, input, other, target=target)


def where(condition, input, other, target=None):
    """torch.where(condition, input, other); input or other may be a Python number."""
    np = _np()

    def as_tensor(v, like):
        if _is_tensor(v):
            return v
        la = _arg(like, "condition") if like is not None else None
        if la is not None and la.code in _FLOATS and isinstance(v, numbers.Real) and not isinstance(v, bool):
            code = la.code
        elif la is not None and isinstance(v, numbers.Integral) and not isinstance(v, bool) and la.code not in (_BOOL,):
            code = la.code
        else:
            code = _BOOL if isinstance(v, bool) else _I64 if isinstance(v, numbers.Integral) else _F32
        return full((), v, dtype=DTYPES[code], like=_arg(condition, "condition").keep)

    a = as_tensor(input, other if _is_tensor(other) else None)
    b = as_tensor(other, input if _is_tensor(input) else None)
    c, t = _call(target, condition=condition, input=a, other=b)
    o = _out()
    c.run(C["where"], _p(t["condition"]), _p(t["input"]), _p(t["other"]), ctypes.byref(o))
    return c.wrap(o)


def clamp(input, min=None, max=None, target=None):
    """torch.clamp(input, min, max): numbers or tensors (at least one bound)."""
    o = _out()
    if _is_tensor(min) or _is_tensor(max):
        c, t = _call(target, input=input, min=min if _is_tensor(min) else None, max=max if _is_tensor(max) else None)
        if (min is not None and not _is_tensor(min)) or (max is not None and not _is_tensor(max)):
            raise TileError("clamp: min and max: give both as tensors or both as numbers")
        c.run(C["clamp_tensor"], _p(t["input"]), _p(t.get("min")), _p(t.get("max")), ctypes.byref(o))
    else:
        c, t = _call(target, input=input)
        lo = ctypes.byref(_scalar(min, "min")) if min is not None else None
        hi = ctypes.byref(_scalar(max, "max")) if max is not None else None
        c.run(C["clamp"], _p(t["input"]), lo, hi, ctypes.byref(o))
    return c.wrap(o)


clip = clamp


def gelu(input, approximate="none", target=None):
    """torch.nn.functional.gelu(input, approximate='none' | 'tanh')"""
    if approximate not in ("none", "tanh"):
        raise TileError("gelu: approximate: %r is not 'none' or 'tanh'" % (approximate,))
    return unary("gelu" if approximate == "none" else "gelu_tanh", input, target=target)


def leaky_relu(input, negative_slope=0.01, target=None):
    return unary("leaky_relu", input, negative_slope, target=target)


def hardtanh(input, min_val=-1.0, max_val=1.0, target=None):
    return unary("hardtanh", input, min_val, max_val, target=target)


def elu(input, alpha=1.0, target=None):
    """torch.nn.functional.elu(input, alpha)"""
    return unary("elu", input, alpha, 1.0, 1.0, target=target)


def softplus(input, beta=1.0, threshold=20.0, target=None):
    return unary("softplus", input, beta, threshold, target=target)


def to(input, dtype, target=None):
    """input converted to dtype (torch.Tensor.to(dtype)); a dtype of torch, NumPy or a name."""
    code = _dtype(dtype)
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["cast"], _p(t["input"]), code, ctypes.byref(o))
    return c.wrap(o)


cast = to


def clone(input, target=None):
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["copy"], _p(t["input"]), ctypes.byref(o))
    return c.wrap(o)


def _shaped_out(shape, code, name="size"):
    shape = tuple(int(s) for s in ((shape,) if isinstance(shape, numbers.Integral) else shape))
    if len(shape) > 8:
        raise TileError("%s: rank %d (at most 8)" % (name, len(shape)))
    o = _out()
    o.dtype, o.rank = code, len(shape)
    for i, s in enumerate(shape):
        o.shape[i] = s
    return o


def full(size, fill_value, *, dtype=None, device=None, like=None, target=None):
    """torch.full(size, fill_value, dtype=...): on like's device and of its kind, else on device."""
    c = _creation(device, like, dtype, target)
    s = _scalar(fill_value, "fill_value")
    code = _dtype(dtype) if dtype is not None else {_BOOL: _BOOL, _I64: _I64}.get(s.kind, _F32)
    o = _shaped_out(size, code)
    c.run(C["fill"], s, ctypes.byref(o))
    return c.wrap(o)


def zeros(*size, dtype="float32", device=None, like=None, target=None):
    size = size[0] if len(size) == 1 and not isinstance(size[0], numbers.Integral) else size
    return full(size, 0, dtype=dtype, device=device, like=like, target=target)


def ones(*size, dtype="float32", device=None, like=None, target=None):
    size = size[0] if len(size) == 1 and not isinstance(size[0], numbers.Integral) else size
    return full(size, 1, dtype=dtype, device=device, like=like, target=target)


def full_like(input, fill_value, *, dtype=None, target=None):
    a = _arg(input, "input")
    return full(a.shape, fill_value, dtype=dtype if dtype is not None else DTYPES[a.code], like=input, target=target)


def zeros_like(input, *, dtype=None, target=None):
    return full_like(input, 0, dtype=dtype, target=target)


def ones_like(input, *, dtype=None, target=None):
    return full_like(input, 1, dtype=dtype, target=target)


def arange(start, end=None, step=1, *, dtype=None, device=None, like=None, target=None):
    """torch.arange(start, end, step, dtype=...)"""
    if end is None:
        start, end = 0, start
    c = _creation(device, like, dtype, target)
    o = _out()
    c.run(C["arange"], _scalar(start, "start"), _scalar(end, "end"), _scalar(step, "step"),
          _dtype(dtype) if dtype is not None else -1, ctypes.byref(o))
    return c.wrap(o)


def rand(*size, seed=0, dtype="float32", device=None, like=None, target=None):
    """Uniform numbers in [0, 1) from (seed, element index): the same bits on every target."""
    size = size[0] if len(size) == 1 and not isinstance(size[0], numbers.Integral) else size
    c = _creation(device, like, dtype, target)
    o = _shaped_out(size, _dtype(dtype))
    c.run(C["rand"], int(seed), ctypes.byref(o))
    return c.wrap(o)


def randn(*size, seed=0, dtype="float32", device=None, like=None, target=None):
    """Standard normal numbers from (seed, element index) (Box-Muller)."""
    size = size[0] if len(size) == 1 and not isinstance(size[0], numbers.Integral) else size
    c = _creation(device, like, dtype, target)
    o = _shaped_out(size, _dtype(dtype))
    c.run(C["randn"], int(seed), ctypes.byref(o))
    return c.wrap(o)


def dropout(input, p=0.5, training=True, *, seed=0, return_mask=False, target=None):
    """torch.nn.functional.dropout with a counter-based mask from seed; return_mask: also
    the bool keep mask (torch.ops.aten.native_dropout)."""
    if not training:
        return (clone(input, target=target), None) if return_mask else input
    c, t = _call(target, input=input)
    o, m = _out(), _out()
    c.run(C["dropout"], _p(t["input"]), float(p), int(seed), ctypes.byref(o), ctypes.byref(m))
    return (c.wrap(o), c.wrap(m)) if return_mask else c.wrap(o)


# ---------- shapes and data movement ----------
def _sizes(args):
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


def reshape(input, shape, target=None):
    """torch.reshape(input, shape) (a copy; one -1 is inferred)"""
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    c, t = _call(target, input=input)
    arr, n = _ints(shape)
    o = _out()
    c.run(C["reshape"], _p(t["input"]), arr, n, ctypes.byref(o))
    return c.wrap(o)


view = reshape


def flatten(input, start_dim=0, end_dim=-1, target=None):
    s = _arg(input, "input").shape
    r = len(s)
    if r == 0:
        return reshape(input, (1,), target=target)
    a, b = start_dim % r, end_dim % r
    n = 1
    for d in s[a:b + 1]:
        n *= d
    return reshape(input, s[:a] + (n,) + s[b + 1:], target=target)


def squeeze(input, dim=None, target=None):
    s = _arg(input, "input").shape
    if dim is None:
        dims = [d for d in range(len(s)) if s[d] == 1]
    else:
        dims = [d % _builtins.max(1, len(s)) for d in ((dim,) if isinstance(dim, numbers.Integral) else dim)]
        dims = [d for d in dims if len(s) and s[d] == 1]
    return reshape(input, tuple(v for d, v in enumerate(s) if d not in dims), target=target)


def unsqueeze(input, dim, target=None):
    s = list(_arg(input, "input").shape)
    if not -len(s) - 1 <= dim <= len(s):
        raise TileError("unsqueeze: dim: %d is outside [%d, %d]" % (dim, -len(s) - 1, len(s)))
    s.insert(dim % (len(s) + 1), 1)
    return reshape(input, tuple(s), target=target)


def permute(input, dims, target=None):
    c, t = _call(target, input=input)
    arr, n = _ints(dims, c_int)
    if n != len(t["input"].shape):
        raise TileError("permute: dims: %d entries for a tensor of rank %d" % (n, len(t["input"].shape)))
    o = _out()
    c.run(C["permute"], _p(t["input"]), arr, ctypes.byref(o))
    return c.wrap(o)


def transpose(input, dim0, dim1, target=None):
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["transpose"], _p(t["input"]), int(dim0), int(dim1), ctypes.byref(o))
    return c.wrap(o)


def t(input, target=None):
    """torch.t: the transpose of a matrix (a vector unchanged)"""
    return transpose(input, 0, 1, target=target) if len(_arg(input, "input").shape) == 2 else clone(input, target=target)


def expand(input, *sizes, target=None):
    """torch.Tensor.expand(*sizes) (a copy; -1 keeps a dimension)"""
    c, t = _call(target, input=input)
    arr, n = _ints(_sizes(sizes))
    o = _out()
    c.run(C["expand"], _p(t["input"]), arr, n, ctypes.byref(o))
    return c.wrap(o)


def broadcast_to(input, size, target=None):
    return expand(input, tuple(size), target=target)


def slice(input, dim=0, start=None, end=None, step=1, target=None):
    """input[..., start:end:step, ...] along dim (Python slice rules, step >= 1)"""
    c, t = _call(target, input=input)
    o = _out()
    big = 1 << 62
    c.run(C["slice"], _p(t["input"]), int(dim), 0 if start is None else int(start), big if end is None else int(end), int(step),
          ctypes.byref(o))
    return c.wrap(o)


def narrow(input, dim, start, length, target=None):
    return slice(input, dim, start, start + length, 1, target=target)


def select(input, dim, index, target=None):
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["select"], _p(t["input"]), int(dim), int(index), ctypes.byref(o))
    return c.wrap(o)


def flip(input, dims, target=None):
    c, t = _call(target, input=input)
    arr, n = _ints((dims,) if isinstance(dims, numbers.Integral) else dims, c_int)
    o = _out()
    c.run(C["flip"], _p(t["input"]), arr, n, ctypes.byref(o))
    return c.wrap(o)


def repeat(input, *sizes, target=None):
    """torch.Tensor.repeat(*sizes)"""
    c, t = _call(target, input=input)
    arr, n = _ints(_sizes(sizes))
    o = _out()
    c.run(C["repeat"], _p(t["input"]), arr, n, ctypes.byref(o))
    return c.wrap(o)


def diagonal(input, offset=0, dim1=0, dim2=1, target=None):
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["diagonal"], _p(t["input"]), int(offset), int(dim1), int(dim2), ctypes.byref(o))
    return c.wrap(o)


def as_strided(input, size, stride, storage_offset=0, target=None):
    if len(size) != len(stride):
        raise TileError("as_strided: stride: %d entries for %d sizes" % (len(stride), len(size)))
    c, t = _call(target, input=input)
    sa, n = _ints(size)
    ta, _ = _ints(stride)
    o = _out()
    c.run(C["as_strided"], _p(t["input"]), sa, ta, n, int(storage_offset), ctypes.byref(o))
    return c.wrap(o)


def _many(fn, tensors, dim, target):
    tensors = list(tensors)
    if not tensors:
        raise TileError("%s: tensors: the sequence is empty" % fn)
    args = [("tensors[%d]" % i, _arg(x, "tensors[%d]" % i)) for i, x in enumerate(tensors)]
    c = _Call(args, target)
    arr = (L.Tensor_ * len(args))()
    for i, (_, a) in enumerate(args):
        arr[i] = a.t
    o = _out()
    c.run(C[fn], arr, len(args), int(dim), ctypes.byref(o))
    return c.wrap(o)


def cat(tensors, dim=0, target=None):
    """torch.cat(tensors, dim)"""
    return _many("cat", tensors, dim, target)


concat = cat


def stack(tensors, dim=0, target=None):
    """torch.stack(tensors, dim)"""
    return _many("stack", tensors, dim, target)


def split(tensor, split_size_or_sections, dim=0, target=None):
    """torch.split(tensor, split_size_or_sections, dim): a tuple of pieces"""
    c, t = _call(target, tensor=tensor)
    s = t["tensor"].shape
    if not s:
        raise TileError("split: tensor: a zero-dimensional tensor cannot be split")
    n = s[dim % len(s)]
    if isinstance(split_size_or_sections, numbers.Integral):
        k = int(split_size_or_sections)
        if k <= 0:
            raise TileError("split: split_size_or_sections: %d is not positive" % k)
        sizes = [k] * (n // k) + ([n % k] if n % k else [])
        if not sizes:
            sizes = [0]
    else:
        sizes = [int(v) for v in split_size_or_sections]
    arr, m = _ints(sizes)
    outs = (L.Tensor_ * _builtins.max(1, m))()
    c.run(C["split"], _p(t["tensor"]), arr, m, int(dim), outs)
    return tuple(c.wrap(outs[i]) for i in range(m))


def chunk(input, chunks, dim=0, target=None):
    s = _arg(input, "input").shape
    n = s[dim % len(s)]
    k = -(-n // chunks) if chunks > 0 else 0
    return split(input, _builtins.max(k, 1), dim, target=target)


def pad(input, pad, mode="constant", value=None, target=None):
    """torch.nn.functional.pad(input, pad, mode='constant' | 'reflect' | 'replicate', value)"""
    c, t = _call(target, input=input)
    arr, n = _ints(pad)
    o = _out()
    if mode == "constant":
        c.run(C["pad"], _p(t["input"]), arr, n, _scalar(0 if value is None else value), ctypes.byref(o))
    elif mode in ("reflect", "replicate"):
        c.run(C["pad_" + mode], _p(t["input"]), arr, n, ctypes.byref(o))
    else:
        raise TileError("pad: mode: %r is not 'constant', 'reflect' or 'replicate'" % (mode,))
    return c.wrap(o)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1, target=None):
    c, t = _call(target, input=input, src=src)
    o = _out()
    c.run(C["slice_scatter"], _p(t["input"]), _p(t["src"]), int(dim), 0 if start is None else int(start),
          (1 << 62) if end is None else int(end), int(step), ctypes.byref(o))
    return c.wrap(o)


def select_scatter(input, src, dim, index, target=None):
    c, t = _call(target, input=input, src=src)
    o = _out()
    c.run(C["select_scatter"], _p(t["input"]), _p(t["src"]), int(dim), int(index), ctypes.byref(o))
    return c.wrap(o)


def index_select(input, dim, index, target=None):
    c, t = _call(target, input=input, index=index)
    o = _out()
    c.run(C["index_select"], _p(t["input"]), int(dim), _p(t["index"]), ctypes.byref(o))
    return c.wrap(o)


def gather(input, dim, index, target=None):
    c, t = _call(target, input=input, index=index)
    o = _out()
    c.run(C["gather"], _p(t["input"]), int(dim), _p(t["index"]), ctypes.byref(o))
    return c.wrap(o)


def scatter(input, dim, index, src=None, *, value=None, reduce=None, target=None):
    """torch.scatter(input, dim, index, src) / (..., value=v); reduce None or 'add'"""
    if src is None and value is None:
        raise TileError("scatter: src: give src or value")
    if not _is_tensor(src):
        v = value if src is None else src
        src = full(_arg(index, "index").shape, v, dtype=DTYPES[_arg(input, "input").code], like=input, target=target)
    c, t = _call(target, input=input, index=index, src=src)
    o = _out()
    c.run(C["scatter"], _p(t["input"]), int(dim), _p(t["index"]), _p(t["src"]), None if reduce is None else reduce.encode(),
          ctypes.byref(o))
    return c.wrap(o)


def scatter_add(input, dim, index, src, target=None):
    return scatter(input, dim, index, src, reduce="add", target=target)


def embedding(input, weight, target=None):
    """torch.nn.functional.embedding(input, weight): weight[input]"""
    c, t = _call(target, input=input, weight=weight)
    o = _out()
    c.run(C["embedding"], _p(t["weight"]), _p(t["input"]), ctypes.byref(o))
    return c.wrap(o)


def embedding_backward(grad, indices, num_weights, padding_idx=-1, target=None):
    """torch.ops.aten.embedding_dense_backward(grad, indices, num_weights, padding_idx, False)"""
    c, t = _call(target, grad=grad, indices=indices)
    o = _out()
    c.run(C["embedding_backward"], _p(t["grad"]), _p(t["indices"]), int(num_weights), int(padding_idx), ctypes.byref(o))
    return c.wrap(o)


# ---------- reductions and scans ----------
def _dims(dim):
    if dim is None:
        return None
    return [int(dim)] if isinstance(dim, numbers.Integral) else [int(d) for d in dim]


def _reduce(op, input, dim, keepdim, dtype, target):
    if dtype is not None:
        input = to(input, dtype, target=target)
    c, t = _call(target, input=input)
    dims = _dims(dim)
    if dims is not None and not dims:
        dims = None if op in ("sum", "mean", "prod") else dims
    arr, n = _ints(dims or [], c_int)
    o = _out()
    c.run(C["reduce"], op.encode(), _p(t["input"]), arr, n, int(bool(keepdim)), ctypes.byref(o))
    return c.wrap(o)


def sum(input, dim=None, keepdim=False, *, dtype=None, target=None):
    """torch.sum(input, dim, keepdim, dtype=...)"""
    return _reduce("sum", input, dim, keepdim, dtype, target)


def prod(input, dim=None, keepdim=False, *, dtype=None, target=None):
    return _reduce("prod", input, dim, keepdim, dtype, target)


def mean(input, dim=None, keepdim=False, *, dtype=None, target=None):
    return _reduce("mean", input, dim, keepdim, dtype, target)


def amax(input, dim=(), keepdim=False, target=None):
    return _reduce("amax", input, dim, keepdim, None, target)


def amin(input, dim=(), keepdim=False, target=None):
    return _reduce("amin", input, dim, keepdim, None, target)


def any(input, dim=None, keepdim=False, target=None):
    return _reduce("any", input, dim, keepdim, None, target)


def all(input, dim=None, keepdim=False, target=None):
    return _reduce("all", input, dim, keepdim, None, target)


def _var(op, input, dim, unbiased, keepdim, correction, target):
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    c, t = _call(target, input=input)
    arr, n = _ints(_dims(dim) or [], c_int)
    o = _out()
    c.run(C["var"], op.encode(), _p(t["input"]), arr, n, float(correction), int(bool(keepdim)), ctypes.byref(o))
    return c.wrap(o)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, target=None):
    """torch.var(input, dim, correction=1, keepdim=False)"""
    return _var("var", input, dim, unbiased, keepdim, correction, target)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, target=None):
    return _var("std", input, dim, unbiased, keepdim, correction, target)


def _arg_ext(op, input, dim, keepdim, target):
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["argmax"], op.encode(), _p(t["input"]), -1000 if dim is None else int(dim), int(bool(keepdim)), ctypes.byref(o))
    return c.wrap(o)


def argmax(input, dim=None, keepdim=False, target=None):
    """torch.argmax(input, dim=None, keepdim=False) (int64)"""
    return _arg_ext("argmax", input, dim, keepdim, target)


def argmin(input, dim=None, keepdim=False, target=None):
    return _arg_ext("argmin", input, dim, keepdim, target)


def _max_dim(op, input, dim, keepdim, target):
    if dim is None:
        return _reduce("amax" if op == "max" else "amin", input, None, False, None, target)
    c, t = _call(target, input=input)
    v, i = _out(), _out()
    c.run(C["max_dim"], op.encode(), _p(t["input"]), int(dim), int(bool(keepdim)), ctypes.byref(v), ctypes.byref(i))
    return c.wrap(v), c.wrap(i)


def max(input, dim=None, keepdim=False, target=None):
    """torch.max(input) (the maximum) / torch.max(input, dim, keepdim) ((values, indices))"""
    return _max_dim("max", input, dim, keepdim, target)


def min(input, dim=None, keepdim=False, target=None):
    return _max_dim("min", input, dim, keepdim, target)


def cumsum(input, dim, *, dtype=None, target=None):
    if dtype is not None:
        input = to(input, dtype, target=target)
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["cumsum"], b"cumsum", _p(t["input"]), int(dim), ctypes.byref(o))
    return c.wrap(o)


def cumprod(input, dim, *, dtype=None, target=None):
    if dtype is not None:
        input = to(input, dtype, target=target)
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["cumsum"], b"cumprod", _p(t["input"]), int(dim), ctypes.byref(o))
    return c.wrap(o)


# ---------- neural-network operators ----------
_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16}


def _norm_view(name, x, normalized_shape, vecs, target):
    """x as [..., N] and the weight-like vectors flat, for a normalized_shape over the last dims."""
    ns = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(int(s) for s in normalized_shape)
    xs = _arg(x, "input").shape
    if not ns or tuple(xs[len(xs) - len(ns):]) != ns or len(ns) > len(xs):
        raise TileError("%s: normalized_shape: %s is not the last dimensions of input %s" % (name, list(ns), list(xs)))
    if len(ns) == 1:
        return x, vecs, xs
    n = 1
    for s in ns:
        n *= s
    x2 = reshape(x, xs[:len(xs) - len(ns)] + (n,), target=target)
    return x2, [reshape(v, (n,), target=target) if v is not None else None for v in vecs], xs


def rms_norm(input, normalized_shape, weight=None, eps=None, target=None):
    """torch.nn.functional.rms_norm(input, normalized_shape, weight, eps): eps None is the
    dtype's machine epsilon, as in torch."""
    x, (w,), xs = _norm_view("rms_norm", input, normalized_shape, [weight], target)
    a = _arg(x, "input")
    if eps is None:
        eps = _EPS.get(DTYPES[a.code], _EPS["float32"])
    if w is None:
        w = ones(a.shape[-1:], dtype=DTYPES[a.code], like=x, target=target)
    c, t = _call(target, input=x, weight=w)
    o = _out()
    c.run(C["rms_norm"], _p(t["input"]), _p(t["weight"]), None, float(eps), ctypes.byref(o), None)
    y = c.wrap(o)
    return reshape(y, xs, target=target) if tuple(a.shape) != tuple(xs) else y


def fused_add_rms_norm(input, residual, weight, eps=1e-6, target=None):
    """(rms_norm(h, weight), h) with h = input + residual, in one kernel (the residual stream
    of a pre-norm transformer): tile_op_rms_norm with a residual."""
    c, t = _call(target, input=input, residual=residual, weight=weight)
    o, h = _out(), _out()
    c.run(C["rms_norm"], _p(t["input"]), _p(t["weight"]), _p(t["residual"]), float(eps), ctypes.byref(o), ctypes.byref(h))
    return c.wrap(o), c.wrap(h)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, target=None):
    """torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)"""
    x, (w, b), xs = _norm_view("layer_norm", input, normalized_shape, [weight, bias], target)
    c, t = _call(target, input=x, weight=w, bias=b)
    o = _out()
    c.run(C["layer_norm"], _p(t["input"]), _p(t.get("weight")), _p(t.get("bias")), None, float(eps), ctypes.byref(o), None, None,
          None)
    y = c.wrap(o)
    return reshape(y, xs, target=target) if tuple(t["input"].shape) != tuple(xs) else y


def native_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, target=None):
    """torch.ops.aten.native_layer_norm: (out, mean, rstd), the statistics float32 with the
    normalised dims kept as size 1"""
    x, (w, b), xs = _norm_view("native_layer_norm", input, normalized_shape, [weight, bias], target)
    c, t = _call(target, input=x, weight=w, bias=b)
    o, m, r = _out(), _out(), _out()
    c.run(C["layer_norm"], _p(t["input"]), _p(t.get("weight")), _p(t.get("bias")), None, float(eps), ctypes.byref(o), None,
          ctypes.byref(m), ctypes.byref(r))
    nd = 1 if isinstance(normalized_shape, numbers.Integral) else len(normalized_shape)
    ss = xs[:len(xs) - nd] + (1,) * nd
    return (reshape(c.wrap(o), xs, target=target), reshape(c.wrap(m), ss, target=target), reshape(c.wrap(r), ss, target=target))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5, target=None):
    """torch.nn.functional.batch_norm. In training mode with running statistics given, they
    are updated in place as torch does (running = (1 - momentum) * running + momentum *
    batch statistic, the variance unbiased), with the framework's own arithmetic."""
    c, t = _call(target, input=input, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    o, sm, sr = _out(), _out(), _out()
    c.run(C["batch_norm"], _p(t["input"]), _p(t.get("weight")), _p(t.get("bias")), _p(t.get("running_mean")),
          _p(t.get("running_var")), int(bool(training)), float(eps), ctypes.byref(o), ctypes.byref(sm), ctypes.byref(sr))
    y = c.wrap(o)
    if training and running_mean is not None and running_var is not None and momentum is not None:
        xs = t["input"].shape
        n = 1
        for d, s in enumerate(xs):
            if d != 1:
                n *= s
        bm, br = c.wrap(sm), c.wrap(sr)
        if c.kind == "torch":
            bv = (1.0 / (br.double() ** 2) - eps) * (n / _builtins.max(n - 1, 1))
            running_mean.mul_(1 - momentum).add_(bm.to(running_mean.dtype), alpha=momentum)
            running_var.mul_(1 - momentum).add_(bv.to(running_var.dtype), alpha=momentum)
        elif c.kind == "numpy":
            np = _np()
            bv = (1.0 / np.asarray(br, np.float64) ** 2 - eps) * (n / _builtins.max(n - 1, 1))
            running_mean *= 1 - momentum
            running_mean += (momentum * np.asarray(bm, np.float64)).astype(running_mean.dtype)
            running_var *= 1 - momentum
            running_var += (momentum * bv).astype(running_var.dtype)
        else:
            raise TileError("batch_norm: running_mean: tile.Tensor statistics are not updated; pass momentum=None")
    return y




def softmax(input, dim, dtype=None, target=None):
    """torch.softmax(input, dim, dtype=None)"""
    if dtype is not None:
        input = to(input, dtype, target=target)
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["softmax"], _p(t["input"]), int(dim), ctypes.byref(o))
    return c.wrap(o)


def log_softmax(input, dim, dtype=None, target=None):
    """torch.log_softmax(input, dim, dtype=None)"""
    if dtype is not None:
        input = to(input, dtype, target=target)
    c, t = _call(target, input=input)
    o = _out()
    c.run(C["log_softmax"], _p(t["input"]), int(dim), ctypes.byref(o))
    return c.wrap(o)


def _glu(op, gate, up, target):
    c, t = _call(target, gate=gate, up=up)
    o = _out()
    c.run(C["glu"], op.encode(), _p(t["gate"]), _p(t.get("up")), ctypes.byref(o))
    return c.wrap(o)


def swiglu(gate, up=None, target=None):
    """silu(gate) * up; up None: gate holds [gate | up] along its last axis"""
    return _glu("swiglu", gate, up, target)


def geglu(gate, up=None, approximate="none", target=None):
    """gelu(gate, approximate) * up; up None: gate holds [gate | up] along its last axis"""
    if approximate not in ("none", "tanh"):
        raise TileError("geglu: approximate: %r is not 'none' or 'tanh'" % (approximate,))
    return _glu("geglu" if approximate == "none" else "geglu_tanh", gate, up, target)


def rope(x, cos, sin, positions=None, interleaved=False, target=None):
    """Rotary embedding of x [T, H, D] / [T, D] with float32 tables cos, sin [P, D/2] at rows
    positions (int [T]; None: row t); interleaved: GPT-J pairs, else Llama's rotate_half."""
    c, t = _call(target, x=x, cos=cos, sin=sin, positions=positions)
    o = _out()
    c.run(C["rope"], _p(t["x"]), _p(t["cos"]), _p(t["sin"]), _p(t.get("positions")), int(bool(interleaved)), ctypes.byref(o))
    return c.wrap(o)


def cross_entropy(input, target, ignore_index=-100, reduction="mean", *, return_lse=False, device_target=None):
    """torch.nn.functional.cross_entropy(input [N, V], target [N] class indices,
    ignore_index, reduction), chunked over the vocabulary (float32 result); return_lse: also
    the rows' log-sum-exp (float32 [N]) for cross_entropy_backward. device_target picks the
    Tile target (target is torch's name for the class indices here)."""
    c, t = _call(device_target, input=input, target=target)
    o, lse = _out(), _out()
    c.run(C["cross_entropy"], _p(t["input"]), _p(t["target"]), int(ignore_index), reduction.encode(), ctypes.byref(o),
          ctypes.byref(lse))
    return (c.wrap(o), c.wrap(lse)) if return_lse else c.wrap(o)


def cross_entropy_backward(grad, input, target, lse, ignore_index=-100, reduction="mean", device_target=None):
    """d loss / d input of cross_entropy given d loss (grad) and the lse it returned"""
    c, t = _call(device_target, input=input, target=target, lse=lse, grad=grad)
    o = _out()
    c.run(C["cross_entropy_backward"], _p(t["input"]), _p(t["target"]), _p(t["lse"]), _p(t["grad"]), int(ignore_index),
          reduction.encode(), ctypes.byref(o))
    return c.wrap(o)


def quantize_fp8(x, dtype="float8_e4m3", block=0, target=None):
    """(q, scale): fp8 quantisation per row (block 0) or per 1x128 block (block 128)"""
    c, t = _call(target, x=x)
    q, s = _out(), _out()
    c.run(C["quantize_fp8"], _p(t["x"]), _dtype(dtype), int(block), ctypes.byref(q), ctypes.byref(s))
    return c.wrap(q), c.wrap(s)


def dequantize_fp8(q, scale, block=0, dtype="float32", target=None):
    c, t = _call(target, q=q, scale=scale)
    o = _out()
    c.run(C["dequantize_fp8"], _p(t["q"]), _p(t["scale"]), int(block), _dtype(dtype), ctypes.byref(o))
    return c.wrap(o)


# ---------- GEMM ----------
def gemm(a, b, bias=None, *, trans_a=False, trans_b=False, activation=None, alpha=1.0, beta=1.0, out_dtype=None, target=None):
    """act(alpha * op(a) @ op(b) + beta * bias) with f32 accumulation; batched for 3-D a"""
    c, t = _call(target, a=a, b=b, bias=bias)
    opts = GemmOpts_(int(bool(trans_a)), int(bool(trans_b)), activation.encode() if activation else None, float(alpha),
                     float(beta), _dtype(out_dtype) if out_dtype is not None else 0)
    if alpha == 0 or beta == 0:
        raise TileError("gemm: alpha and beta: 0 is not supported (the C API reads 0 as 1)")
    o = _out()
    c.run(C["gemm"], _p(t["a"]), _p(t["b"]), _p(t.get("bias")), ctypes.byref(opts), ctypes.byref(o))
    return c.wrap(o)


def mm(input, mat2, target=None):
    """torch.mm (2-D @ 2-D)"""
    return gemm(input, mat2, target=target)


def bmm(input, mat2, target=None):
    """torch.bmm (3-D @ 3-D)"""
    return gemm(input, mat2, target=target)


def matmul(input, other, target=None):
    """torch.matmul for 2-D and 3-D operands (a 2-D other is shared by a batch); 1-D ones
    are taken as a row / a column"""
    ra, rb = len(_arg(input, "input").shape), len(_arg(other, "other").shape)
    if ra == 1 or rb == 1:
        a2 = unsqueeze(input, 0, target=target) if ra == 1 else input
        b2 = unsqueeze(other, 1, target=target) if rb == 1 else other
        y = gemm(a2, b2, target=target)
        if ra == 1:
            y = squeeze(y, -2, target=target)
        if rb == 1:
            y = squeeze(y, -1, target=target)
        return y
    if ra > 3 or rb > 3 or (rb == 3 and ra != 3):
        raise TileError("matmul: input and other: ranks %d and %d (tile.ops.matmul takes 2-D and 3-D operands; b 3-D needs a 3-D)" % (ra, rb))
    return gemm(input, other, target=target)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, target=None):
    """torch.addmm: beta * input + alpha * mat1 @ mat2 (input [N] or [M, N])"""
    return gemm(mat1, mat2, input, alpha=alpha, beta=beta, target=target)


def linear(input, weight, bias=None, target=None):
    """torch.nn.functional.linear: input @ weight.T + bias, input [..., K]"""
    xs = _arg(input, "input").shape
    x2 = input if len(xs) == 2 else reshape(input, (-1, xs[-1]) if xs else (1, 1), target=target)
    y = gemm(x2, weight, bias, trans_b=True, target=target)
    if len(xs) != 2:
        ws = _arg(weight, "weight").shape
        y = reshape(y, tuple(xs[:-1]) + (ws[0],), target=target)
    return y


# ---------- quantised and grouped GEMM (B stored N x K: out = a @ b^T) ----------
def _bytes_view(x, name):
    """torch's packed fp4 (float4_e2m1fn_x2) and e8m0 scales (float8_e8m0fnu) as the uint8
    bytes the operators take; everything else as it is"""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        for dn in ("float4_e2m1fn_x2", "float8_e8m0fnu"):
            if getattr(torch, dn, None) is not None and x.dtype == getattr(torch, dn):
                return x.view(torch.uint8)
    return x


def _scale_arg(s, like, name):
    """a scale operand: a tensor as it is, a Python number as a float32 [1] tensor of the
    kind and device of `like` (a per-tensor scale)"""
    if s is None or _is_tensor(s):
        return s
    if not isinstance(s, numbers.Real) or isinstance(s, bool):
        raise TileError("%s: expected a float32 tensor or a Python number, not %s" % (name, type(s).__name__))
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        return torch.full((1,), float(s), dtype=torch.float32, device=like.device)
    if isinstance(like, Tensor):
        raise TileError("%s: a Python number with tile.Tensor operands: pass a float32 tile.Tensor of shape [1]" % name)
    return _np().full((1,), float(s), dtype=_np().float32)


def _out_dtype(d):
    return _dtype(d, "out_dtype") if d is not None else -1


def gemm_fp8(a, b, a_scale=None, b_scale=None, *, out_dtype=None, target=None):
    """fp8 GEMM, out [M, N] = (a * a_scale) @ (b * b_scale)^T with f32 accumulation:
    a [M, K] and b [N, K] float8_e4m3fn / float8_e5m2 (either, mixed allowed; b stored N x K
    as nn.Linear's weight and DeepGEMM's fp8_gemm_nt). Scales are float32, their kind read
    from their shape: a_scale [1] (or a Python number) per tensor, [M] per row, [M, ceil(K/128)]
    1x128 blocks; b_scale [1] per tensor, [N] per column of out, [ceil(N/128), ceil(K/128)]
    128x128 blocks (DeepSeek-V3's recipe). out_dtype: bfloat16 (default), float16, float32."""
    c, t = _call(target, a=a, a_scale=_scale_arg(a_scale, a, "a_scale"), b=b, b_scale=_scale_arg(b_scale, a, "b_scale"))
    o = _out()
    c.run(C["gemm_fp8"], _p(t["a"]), _p(t.get("a_scale")), _p(t["b"]), _p(t.get("b_scale")), _out_dtype(out_dtype), ctypes.byref(o))
    return c.wrap(o)


def gemm_int8(a, b, a_scale=None, b_scale=None, *, out_dtype=None, target=None):
    """int8 GEMM, a [M, K] and b [N, K] int8 (b stored N x K), int32 accumulation: without
    scales the int32 sums (torch._int_mm(a, b.T)); with float32 scales (a_scale [1] or [M],
    b_scale [1] or [N], or Python numbers) the scaled sums in out_dtype (float32 default,
    float16, bfloat16)."""
    c, t = _call(target, a=a, a_scale=_scale_arg(a_scale, a, "a_scale"), b=b, b_scale=_scale_arg(b_scale, a, "b_scale"))
    o = _out()
    c.run(C["gemm_int8"], _p(t["a"]), _p(t.get("a_scale")), _p(t["b"]), _p(t.get("b_scale")), _out_dtype(out_dtype), ctypes.byref(o))
    return c.wrap(o)


def gemm_fp4(a, b, b_scale, global_scale=1.0, *, out_dtype=None, target=None):
    """W4A16: out [M, N] = global_scale * a @ dequant(b)^T, a [M, K] float32/float16/bfloat16,
    b the e2m1 weights packed two per byte [N, K/2] (uint8 or torch.float4_e2m1fn_x2; element
    2i of a row in the low nibble of byte i), b_scale MX: [N, ceil(K/32)] e8m0 (uint8 or
    torch.float8_e8m0fnu) or NV: [N, ceil(K/16)] float8_e4m3fn; global_scale NV's per-tensor
    float scale (1 for MX). out_dtype: a's by default."""
    c, t = _call(target, a=a, b=_bytes_view(b, "b"), b_scale=_bytes_view(b_scale, "b_scale"))
    if not isinstance(global_scale, numbers.Real) or isinstance(global_scale, bool):
        raise TileError("gemm_fp4: global_scale: expected a Python number, not %s" % type(global_scale).__name__)
    o = _out()
    c.run(C["gemm_fp4"], _p(t["a"]), _p(t["b"]), _p(t["b_scale"]), float(global_scale), _out_dtype(out_dtype), ctypes.byref(o))
    return c.wrap(o)


def grouped_gemm(a, b, m_indices=None, *, offsets=None, masked_m=None, target=None):
    """MoE grouped GEMM with b [G, N, K] (one N x K weight per group, a's dtype: float32,
    float16, bfloat16), f32 accumulation; exactly one int32 layout argument:
    contiguous a [M, K] -> out [M, N], each group's rows contiguous, given by m_indices [M]
    (the group of each row, -1 for a padding row: a zero out row; DeepGEMM's m_grouped
    contiguous layout) or offsets [G] (each group's end row, non-decreasing: torch._grouped_mm's
    offs, with b of that call given as [G, N, K]; rows past the last are zero);
    masked a [G, M_max, K] with masked_m [G] valid rows per group -> out [G, M_max, N], rows past
    a group's count zero (DeepGEMM's masked layout for decode)."""
    c, t = _call(target, a=a, b=b, m_indices=m_indices, offsets=offsets, masked_m=masked_m)
    o = _out()
    c.run(C["grouped_gemm"], _p(t["a"]), _p(t["b"]), _p(t.get("m_indices")), _p(t.get("offsets")), _p(t.get("masked_m")), ctypes.byref(o))
    return c.wrap(o)


# ---------- every elementwise registry operator by its name ----------
_SPECIAL = set(globals())


def _make_unary(name, ref):
    def f(input, target=None):
        return unary(name, input, target=target)
    f.__name__ = name
    f.__doc__ = "%s (tile.ops.unary('%s', input))" % (ref, name)
    return f


def _make_binary(name, ref):
    def f(input, other, target=None):
        return binary(name, input, other, target=target)
    f.__name__ = name
    f.__doc__ = "%s (tile.ops.binary('%s', input, other))" % (ref, name)
    return f


for _name, _family, _ref in names():
    if _name in _SPECIAL:
        continue
    if _family == "unary":
        globals()[_name] = _make_unary(_name, _ref)
    elif _family == "binary":
        globals()[_name] = _make_binary(_name, _ref)

# torch's spellings of some registry names
for _alias, _name in (("multiply", "mul"), ("divide", "div"), ("true_divide", "div"), ("floor_divide", "div_floor"),
                      ("subtract", "sub"), ("greater", "gt"), ("less", "lt"), ("greater_equal", "ge"), ("less_equal", "le"),
                      ("not_equal", "ne"), ("negative", "neg"), ("absolute", "abs"), ("arctan2", "atan2")):
    if _alias not in globals() and _name in globals():
        globals()[_alias] = globals()[_name]


# ---------- attention ----------
def _attn_opts(t, is_causal, scale, window, softcap):
    o = AttnOpts_(int(bool(is_causal)), float(scale) if scale is not None else 0.0, int(window), float(softcap), None)
    if scale is not None and float(scale) == 0.0:
        raise TileError("scale: 0 is not supported (the C API reads 0 as 1 / sqrt(head_dim))")
    if "sinks" in t:
        o.sinks = ctypes.pointer(t["sinks"].t)
    return o


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, *,
                                 window=0, softcap=0.0, sinks=None, return_lse=False, target=None):
    """torch.nn.functional.scaled_dot_product_attention for query [B, Hq, Sq, D], key and value
    [B, Hkv, Skv, D] (Hkv < Hq needs enable_gqa, as in torch); no attn_mask, no dropout.
    Extras: window (a query sees its `window` most recent keys), softcap (tanh), sinks [Hq]
    (a logit per head in the denominator); return_lse: also the rows' logsumexp [B, Hq, Sq]."""
    if attn_mask is not None:
        raise TileError("scaled_dot_product_attention: attn_mask: not supported (is_causal and window give the masks)")
    if dropout_p:
        raise TileError("scaled_dot_product_attention: dropout_p: only 0 is supported")
    c, t = _call(target, query=query, key=key, value=value, sinks=sinks)
    hq, hk = t["query"].shape[1] if len(t["query"].shape) == 4 else 0, t["key"].shape[1] if len(t["key"].shape) == 4 else 0
    if hq != hk and not enable_gqa and hq and hk:
        raise TileError("scaled_dot_product_attention: key: %d heads, query %d: pass enable_gqa=True (as torch)" % (hk, hq))
    o, lse = _out(), _out()
    c.run(C["sdpa"], _p(t["query"]), _p(t["key"]), _p(t["value"]), ctypes.byref(_attn_opts(t, is_causal, scale, window, softcap)),
          ctypes.byref(o), ctypes.byref(lse) if return_lse else None)
    return (c.wrap(o), c.wrap(lse)) if return_lse else c.wrap(o)


def scaled_dot_product_attention_backward(grad_out, query, key, value, out, lse, is_causal=False, scale=None, *, window=0, softcap=0.0,
                                          sinks=None, target=None):
    """(dq, dk, dv), and d sinks when sinks are given: the gradients of
    scaled_dot_product_attention from its out and lse (return_lse=True) and grad_out"""
    c, t = _call(target, query=query, key=key, value=value, out=out, grad_out=grad_out, lse=lse, sinks=sinks)
    dq, dk, dv, ds = _out(), _out(), _out(), _out()
    c.run(C["sdpa_backward"], _p(t["query"]), _p(t["key"]), _p(t["value"]), _p(t["out"]), _p(t["grad_out"]), _p(t["lse"]),
          ctypes.byref(_attn_opts(t, is_causal, scale, window, softcap)), ctypes.byref(dq), ctypes.byref(dk), ctypes.byref(dv),
          ctypes.byref(ds) if sinks is not None else None)
    r = (c.wrap(dq), c.wrap(dk), c.wrap(dv))
    return r + (c.wrap(ds),) if sinks is not None else r


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False, softmax_scale=None, *, window=0, softcap=0.0, sinks=None,
                     return_lse=False, target=None):
    """flash_attn_varlen_func: packed q [Tq, Hq, D], k and v [Tk, Hkv, D], cu_seqlens int32
    [batch + 1]; causal is bottom-right aligned; return_lse: also lse [Hq, Tq]"""
    c, t = _call(target, q=q, k=k, v=v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, sinks=sinks)
    o, lse = _out(), _out()
    c.run(C["attention_varlen"], _p(t["q"]), _p(t["k"]), _p(t["v"]), _p(t["cu_seqlens_q"]), _p(t["cu_seqlens_k"]),
          ctypes.byref(_attn_opts(t, causal, softmax_scale, window, softcap)), ctypes.byref(o), ctypes.byref(lse) if return_lse else None)
    return (c.wrap(o), c.wrap(lse)) if return_lse else c.wrap(o)


def attention_decode(q, k_cache, v_cache, block_table, seq_lens, softmax_scale=None, *, window=0, softcap=0.0, sinks=None, num_splits=0,
                     return_lse=False, target=None):
    """one query token per sequence, q [B, Hq, D], against a paged KV cache [num_blocks,
    block_size, Hkv, D] through block_table [B, max_blocks] and seq_lens [B] (int32), split
    over the KV length (num_splits; 0: chosen) and combined; return_lse: also lse [B, Hq]"""
    c, t = _call(target, q=q, k_cache=k_cache, v_cache=v_cache, block_table=block_table, seq_lens=seq_lens, sinks=sinks)
    o, lse = _out(), _out()
    c.run(C["attention_decode"], _p(t["q"]), _p(t["k_cache"]), _p(t["v_cache"]), _p(t["block_table"]), _p(t["seq_lens"]),
          ctypes.byref(_attn_opts(t, False, softmax_scale, window, softcap)), int(num_splits), ctypes.byref(o),
          ctypes.byref(lse) if return_lse else None)
    return (c.wrap(o), c.wrap(lse)) if return_lse else c.wrap(o)
