"""torch.compile(model, backend="tile"): the ATen graph (AOTAutograd, forward and backward)
with every node that the operator library (include/tile_ops.h) implements run by Tile, and
the rest by PyTorch (eager ATen).

A node is handed to Tile when its operator is mapped below (GEMM: mm, addmm, bmm; the
elementwise unary and binary families, by the ATen names in the library's registry; silu,
gelu; softmax and log_softmax; native_layer_norm over the last axis) and its tensors, as
the graph's example values show them, are CPU tensors of a dtype the operator accepts with
static shapes. At run time a mapped node checks its tensors again (CPU, dense: contiguous,
or a transposed matrix for GEMM) and calls PyTorch's own operator where they are not.
The library takes host tensors, so nodes on CUDA tensors stay with PyTorch; Tile kernels on
CUDA tensors inside a compiled model are tile.torch.op operators (ops.py)."""
import ctypes
import operator
import threading

import torch

from .. import _lib as L
from .._core import TileError, _torch

__all__ = ["tile_backend", "stats", "reset_stats", "available"]

aten = torch.ops.aten


# ---------- ctypes binding of the operator library (the part mapped here) ----------
class OpScalar_(ctypes.Structure):  # tile_op_scalar
    _fields_ = [("f", ctypes.c_double), ("i", ctypes.c_int64), ("kind", ctypes.c_int)]


class GemmOpts_(ctypes.Structure):  # tile_op_gemm_opts
    _fields_ = [("trans_a", ctypes.c_int), ("trans_b", ctypes.c_int), ("activation", ctypes.c_char_p), ("alpha", ctypes.c_double),
                ("beta", ctypes.c_double), ("out_dtype", ctypes.c_int)]


class OpInfo_(ctypes.Structure):  # tile_op_info
    _fields_ = [("name", ctypes.c_char_p), ("family", ctypes.c_char_p), ("reference", ctypes.c_char_p), ("aten", ctypes.c_char_p),
                ("summary", ctypes.c_char_p), ("source", ctypes.c_char_p), ("factory", ctypes.c_char_p), ("dtypes", ctypes.c_uint32),
                ("targets", ctypes.c_uint32)]


def _bind(name, *argtypes):
    f = getattr(L.lib, name, None)
    if f is None:
        return None
    f.restype = ctypes.c_int
    f.argtypes = list(argtypes)
    return f


T = ctypes.POINTER(L.Tensor_)
E = ctypes.POINTER(L.ERR)
S = ctypes.c_char_p
_op_count = getattr(L.lib, "tile_op_count", None)
available = _op_count is not None
if available:
    _op_count.restype, _op_count.argtypes = ctypes.c_int, []
    _op_at = L.lib.tile_op_at
    _op_at.restype, _op_at.argtypes = ctypes.POINTER(OpInfo_), [ctypes.c_int]
    _unary = _bind("tile_op_unary", S, S, T, T, E)
    _binary = _bind("tile_op_binary", S, S, T, T, T, E)
    _binary_scalar = _bind("tile_op_binary_scalar", S, S, T, OpScalar_, ctypes.c_int, T, E)
    _gemm = _bind("tile_op_gemm", S, T, T, T, ctypes.POINTER(GemmOpts_), T, E)
    _softmax = _bind("tile_op_softmax", S, T, ctypes.c_int, T, E)
    _log_softmax = _bind("tile_op_log_softmax", S, T, ctypes.c_int, T, E)
    _layer_norm = _bind("tile_op_layer_norm", S, T, T, T, T, ctypes.c_double, T, T, T, T, E)

_CPU = b"cpu"


def _registry():
    """{name: (family, dtype mask, {aten overload names})} of the operator library."""
    out = {}
    if not available:
        return out
    for i in range(_op_count()):
        p = _op_at(i)
        if not p:
            continue
        info = p.contents
        out[info.name.decode()] = (info.family.decode(), info.dtypes, set((info.aten or b"").decode().split()))
    return out


_REG = _registry()


def _code(t):
    _, maps = _torch()
    return maps[0].get(t.dtype)


def _tt(t, shape=None):
    """A host tile_tensor over a dense CPU torch tensor's memory (no copy)."""
    shape = tuple(t.shape) if shape is None else shape
    x = L.Tensor_()
    x.data, x.dtype, x.rank = t.data_ptr() if t.numel() else 0, _code(t), len(shape)
    for d, s in enumerate(shape):
        x.shape[d] = s
    return x


def _call(f, what, *args):
    err = L.ERR()
    st = f(*args, ctypes.byref(err))
    if st != L.TILE_OK:
        raise TileError("tile backend, %s: %s" % (what, L.take(err)), st)
    _stats_add(what)


_stats, _stats_lock = {"nodes": {}, "calls": {}, "fallbacks": 0}, threading.Lock()


def _stats_add(what, key="calls"):
    with _stats_lock:
        _stats[key][what] = _stats[key].get(what, 0) + 1


def stats():
    """{"nodes": {op: graph nodes given to Tile}, "calls": {op: calls Tile ran},
    "fallbacks": calls of a mapped node that ran PyTorch's operator instead}."""
    with _stats_lock:
        return {"nodes": dict(_stats["nodes"]), "calls": dict(_stats["calls"]), "fallbacks": _stats["fallbacks"]}


def reset_stats():
    with _stats_lock:
        _stats["nodes"].clear()
        _stats["calls"].clear()
        _stats["fallbacks"] = 0


def _dense(*ts):
    return all(t.device.type == "cpu" and t.is_contiguous() for t in ts)


def _fallback(orig, args, kwargs):
    with _stats_lock:
        _stats["fallbacks"] += 1
    return orig(*args, **kwargs)


def _ok_dtype(name, *ts):
    reg = _REG.get(name)
    if reg is None:
        return False
    for t in ts:
        c = _code(t)
        if c is None or not (reg[1] >> c) & 1:
            return False
    return True


# ---------- the runtime implementations of mapped nodes ----------
def _run_unary(name, orig):
    def tile_unary(x, *rest, **kw):
        if rest or not isinstance(x, torch.Tensor) or not _dense(x) or not _ok_dtype(name, x):
            return _fallback(orig, (x,) + rest, kw)
        out = torch.empty_like(x) if x.is_floating_point() or name in ("abs", "neg", "relu", "sign", "bitwise_not") else None
        if out is None:
            return _fallback(orig, (x,), kw)
        xt, ot = _tt(x), _tt(out)
        _call(_unary, name, _CPU, name.encode(), ctypes.byref(xt), ctypes.byref(ot))
        return out
    tile_unary.__name__ = "tile_" + name
    return tile_unary


def _scalar(v):
    s = OpScalar_()
    if isinstance(v, bool):
        s.i, s.f, s.kind = int(v), float(v), L.tile_dtype_parse(b"bool")
    elif isinstance(v, int):
        s.i, s.f, s.kind = v, float(v), L.tile_dtype_parse(b"int64")
    else:
        s.f, s.kind = float(v), L.tile_dtype_parse(b"float64")
    return s


def _run_binary(name, orig):
    def tile_binary(a, b, **kw):
        if kw.get("alpha", 1) != 1 or set(kw) - {"alpha"}:
            return _fallback(orig, (a, b), kw)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if not _dense(a, b) or not _ok_dtype(name, a, b) or a.dtype != b.dtype:
                return _fallback(orig, (a, b), kw)
            shape = torch.broadcast_shapes(a.shape, b.shape)
            out = torch.empty(shape, dtype=torch.bool if name in ("eq", "ne", "lt", "le", "gt", "ge") else a.dtype)
            at, bt, ot = _tt(a), _tt(b), _tt(out)
            _call(_binary, name, _CPU, name.encode(), ctypes.byref(at), ctypes.byref(bt), ctypes.byref(ot))
            return out
        if isinstance(a, torch.Tensor) and isinstance(b, (int, float)) and not isinstance(b, bool):
            if not _dense(a) or not _ok_dtype(name, a) or not a.is_floating_point():
                return _fallback(orig, (a, b), kw)
            out = torch.empty(a.shape, dtype=torch.bool if name in ("eq", "ne", "lt", "le", "gt", "ge") else a.dtype)
            at, ot = _tt(a), _tt(out)
            _call(_binary_scalar, name, _CPU, name.encode(), ctypes.byref(at), _scalar(b), 0, ctypes.byref(ot))
            return out
        return _fallback(orig, (a, b), kw)
    tile_binary.__name__ = "tile_" + name
    return tile_binary


def _mat(t):
    """(tile_tensor, transposed) of a 2-D/3-D CPU tensor that is row-major, or whose last two
    dims are a row-major matrix transposed (strides (.., 1, rows)); None otherwise."""
    if t.device.type != "cpu":
        return None
    if t.is_contiguous():
        return _tt(t), 0
    s, sh = t.stride(), t.shape
    if t.dim() == 2 and s == (1, sh[0]):
        return _tt(t, (sh[1], sh[0])), 1
    if t.dim() == 3 and s == (sh[1] * sh[2], 1, sh[1]):
        return _tt(t, (sh[0], sh[2], sh[1])), 1
    return None


def _gemm_call(a, b, bias, orig, args, kw):
    if not _ok_dtype("gemm", a, b) or a.dtype != b.dtype or (bias is not None and (not _dense(bias) or bias.dtype != a.dtype)):
        return _fallback(orig, args, kw)
    ma, mb = _mat(a), _mat(b)
    if ma is None or mb is None:
        return _fallback(orig, args, kw)
    shape = tuple(a.shape[:-1]) + (b.shape[-1],)
    out = torch.empty(shape, dtype=a.dtype)
    if bias is not None and tuple(bias.shape) not in ((shape[-1],), shape):
        return _fallback(orig, args, kw)
    opts = GemmOpts_(ma[1], mb[1], None, 1.0, 1.0, -1)
    ot = _tt(out)
    bt = _tt(bias) if bias is not None else None
    _call(_gemm, "gemm", _CPU, ctypes.byref(ma[0]), ctypes.byref(mb[0]), ctypes.byref(bt) if bt is not None else None,
          ctypes.byref(opts), ctypes.byref(ot))
    return out


def tile_mm(a, b):
    return _gemm_call(a, b, None, aten.mm.default, (a, b), {})


def tile_bmm(a, b):
    return _gemm_call(a, b, None, aten.bmm.default, (a, b), {})


def tile_addmm(bias, a, b, *, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        return _fallback(aten.addmm.default, (bias, a, b), {"beta": beta, "alpha": alpha})
    return _gemm_call(a, b, bias, aten.addmm.default, (bias, a, b), {})


def _run_softmax(log):
    orig = aten._log_softmax.default if log else aten._softmax.default
    name = "log_softmax" if log else "softmax"

    def tile_softmax(x, dim, half_to_float):
        if half_to_float or not _dense(x) or not _ok_dtype(name, x):
            return _fallback(orig, (x, dim, half_to_float), {})
        out = torch.empty_like(x)
        xt, ot = _tt(x), _tt(out)
        _call(_log_softmax if log else _softmax, name, _CPU, ctypes.byref(xt), dim, ctypes.byref(ot))
        return out
    tile_softmax.__name__ = "tile_" + name
    return tile_softmax


def tile_native_layer_norm(x, normalized_shape, weight, bias, eps):
    args = (x, normalized_shape, weight, bias, eps)
    ts = [t for t in (x, weight, bias) if t is not None]
    if len(normalized_shape) != 1 or x.dtype != torch.float32 or not _dense(*ts) or any(t.dtype != x.dtype for t in ts) or x.dim() < 1:
        return _fallback(aten.native_layer_norm.default, args, {})
    y = torch.empty_like(x)
    stat_shape = tuple(x.shape[:-1]) + (1,)
    mean, rstd = torch.empty(stat_shape, dtype=torch.float32), torch.empty(stat_shape, dtype=torch.float32)
    rows = tuple(x.shape[:-1]) if x.dim() > 1 else (1,)
    xt, yt, mt, rt = _tt(x), _tt(y), _tt(mean, rows), _tt(rstd, rows)
    wt = _tt(weight) if weight is not None else None
    bt = _tt(bias) if bias is not None else None
    ref = lambda t: ctypes.byref(t) if t is not None else None
    _call(_layer_norm, "layer_norm", _CPU, ctypes.byref(xt), ref(wt), ref(bt), None, float(eps), ctypes.byref(yt), None,
          ctypes.byref(mt), ctypes.byref(rt))
    return y, mean, rstd


# ---------- the mapping: ATen overload -> (library operator, runtime function) ----------
def _table():
    tab = {}
    if not available:
        return tab
    for name, (family, _, atens) in _REG.items():
        for a in atens:
            base, _, ovl = a.partition(".")
            pk = getattr(aten, base, None)
            if pk is None:
                continue
            if family == "unary" and ovl == "" and name not in ("leaky_relu", "hardtanh", "elu", "clamp", "gelu"):
                tab[pk.default] = (name, _run_unary(name, pk.default))
            elif family == "binary" and ovl in ("Tensor", "") and name not in ("atan2",):
                o = getattr(pk, ovl or "default", None)
                if o is not None:
                    tab[o] = (name, _run_binary(name, o))
    for extra in ("silu",):
        if extra in _REG:
            tab[getattr(aten, extra).default] = (extra, _run_unary(extra, getattr(aten, extra).default))
    if "gelu" in _REG:
        plain, tanh = _run_unary("gelu", aten.gelu.default), _run_unary("gelu_tanh", aten.gelu.default)

        def tile_gelu(x, approximate="none"):
            return tanh(x) if approximate == "tanh" else plain(x) if approximate == "none" else _fallback(aten.gelu.default, (x,), {"approximate": approximate})
        tab[aten.gelu.default] = ("gelu", tile_gelu)
    tab[aten.mm.default] = ("gemm", tile_mm)
    tab[aten.bmm.default] = ("gemm", tile_bmm)
    tab[aten.addmm.default] = ("gemm", tile_addmm)
    tab[aten._softmax.default] = ("softmax", _run_softmax(False))
    tab[aten._log_softmax.default] = ("log_softmax", _run_softmax(True))
    tab[aten.native_layer_norm.default] = ("layer_norm", tile_native_layer_norm)
    return tab


_TABLE = _table()


def _static_cpu(node):
    """Whether every tensor the node reads or makes is a CPU tensor with static shape (from
    the graph's example values)."""
    vals = [node.meta.get("val")]
    for a in node.all_input_nodes:
        vals.append(a.meta.get("val"))
    flat = []
    for v in vals:
        if isinstance(v, (tuple, list)):
            flat.extend(v)
        else:
            flat.append(v)
    for v in flat:
        if v is None:
            return False
        if isinstance(v, torch.Tensor):
            if v.device.type != "cpu" or any(not isinstance(s, int) for s in v.shape):
                return False
    return True


def _transform(gm):
    mapped = 0
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        ent = _TABLE.get(node.target)
        if ent is None or not _static_cpu(node):
            continue
        node.target = ent[1]
        _stats_add(ent[0], "nodes")
        mapped += 1
    if mapped:
        gm.recompile()
    return gm


def _compiler(gm, example_inputs):
    from torch._functorch.aot_autograd import make_boxed_func
    gm = _transform(gm)
    return make_boxed_func(gm.forward)


def tile_backend(gm, example_inputs):
    """The torch.compile backend "tile" (registered by `import tile.torch`)."""
    if not available:
        raise TileError("backend 'tile': this libtile has no operator library (tile_op_count)")
    from torch._dynamo.backends.common import aot_autograd
    return aot_autograd(fw_compiler=_compiler, bw_compiler=_compiler, inference_compiler=_compiler)(gm, example_inputs)


def register():
    from torch._dynamo import list_backends, register_backend
    if "tile" not in list_backends(exclude_tags=()):
        register_backend(name="tile")(tile_backend)
