"""tile.compile, @tile.jit and Kernel: TileLang source (a path, a string, or a Python
function) compiled by libtile, called on NumPy arrays, PyTorch tensors (CPU and CUDA) and
anything with __dlpack__, zero copy."""
import ctypes
import inspect
import os
import statistics
import sys
import textwrap
import threading
import warnings

from . import _lib as L
from ._core import (CPU, Device, Tensor, TileError, check, default_stream, dtype_code, DTYPES, from_dlpack, numpy_dtype,
                    numpy_dtype_code, wrapped_stream, _streams_lock, _torch)


def _define(name, value):
    if isinstance(value, bool):
        v = "True" if value else "False"
    elif isinstance(value, (int, float)):
        v = repr(value)
    elif isinstance(value, str):
        v = value
    elif hasattr(value, "name") and type(value).__module__.startswith(("numpy", "torch")):
        v = str(value).replace("torch.", "")
    else:
        raise TileError("compile-time value %s=%r: give an int, float, bool or str" % (name, value))
    return "%s=%s" % (name, v)


def _source_of_function(fn):
    """The text of a Python function (a kernel or a kernel factory), dedented, without its
    decorators, after the import lines of its module (so `T.` and `tilelang` resolve)."""
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError) as e:
        raise TileError("cannot read the source of %r: %s" % (fn, e))
    src = textwrap.dedent(src)
    lines = src.split("\n")
    # drop decorators of the factory itself (@tile.jit(...), possibly on several lines)
    i = 0
    while i < len(lines) and not lines[i].lstrip().startswith(("def ", "async def ")):
        i += 1
    body = "\n".join(lines[i:])
    decorators = "\n".join(l for l in lines[:i] if not ("jit" in l or l.strip().startswith(")")))
    first = fn.__code__.co_firstlineno + i
    head = []
    try:
        mod_src = inspect.getsource(sys.modules[fn.__module__])
        for l in mod_src.split("\n"):
            if l.startswith(("import ", "from ")) and "__future__" not in l:
                head.append(l)
    except (OSError, TypeError, KeyError):
        head = ["import tilelang.language as T"]
    path = inspect.getsourcefile(fn) or "<function>"
    # pad with blank lines so that diagnostics point at the function's lines in its file
    pad = max(0, first - 1 - len(head) - (1 if decorators else 0))
    text = "\n".join(head) + "\n" * (pad + 1) + (decorators + "\n" if decorators else "") + body
    return path, text


def _compile_module(source, func, consts):
    defines = [_define(k, v) for k, v in consts.items()]
    arr = (ctypes.c_char_p * max(1, len(defines)))(*[d.encode() for d in defines])
    m, diag = L.c_void_p(), L.ERR()
    if callable(source):
        name, text = _source_of_function(source)
        st = L.tile_compile_string(name.encode(), text.encode(), arr, len(defines), ctypes.byref(m), ctypes.byref(diag))
    elif isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and
                                              (os.path.exists(source) or source.endswith((".tl", ".py")))):
        st = L.tile_compile_file_kernel(os.fspath(source).encode(), func.encode() if func else None, arr, len(defines),
                                        ctypes.byref(m), ctypes.byref(diag))
    elif isinstance(source, str):
        st = L.tile_compile_string(b"<string>", source.encode(), arr, len(defines), ctypes.byref(m), ctypes.byref(diag))
    else:
        raise TileError("tile.compile: source must be a path, a source string or a function, not %s" % type(source).__name__)
    msg = L.take(diag)
    if st != L.TILE_OK:
        raise TileError(msg or "compile failed", st)
    return m.value, msg


class _Module:
    """Owns a tile_module (freed when the last kernel of it goes)."""

    def __init__(self, handle):
        self.h = handle

    def __del__(self):
        if self.h and L is not None and L.tile_module_free is not None:
            L.tile_module_free(self.h)
            self.h = None


def _option_text(v):
    return ("1" if v else "0") if isinstance(v, bool) else str(v)


def _set_options(h, options, pass_configs):
    """Tile options (errors raise) and TileLang pass_configs (unknown keys warn) on module h."""
    items = [(k, v, False) for k, v in (pass_configs or {}).items()] + [(k, v, True) for k, v in (options or {}).items()]
    for k, v, strict in items:
        if L.tile_module_set_option is None:
            raise TileError("options: this libtile has no per-kernel options (tile_module_set_option)")
        if not strict and not L.tile_option_known(str(k).encode()):
            warnings.warn("pass_configs key '%s' has no Tile equivalent and is ignored" % k, stacklevel=3)
            continue
        err = L.ERR()
        check(L.tile_module_set_option(h, str(k).encode(), _option_text(v).encode(), ctypes.byref(err)), err)


def compile(source, func=None, target="auto", out_idx=None, pass_configs=None, options=None, **consts):
    """Compile TileLang source into a Kernel.

    source: a path (.tl or .py), a source string, or a Python function (its text is read
    with inspect; a kernel factory's parameters come from ``consts``). func: which kernel of
    the module (None: the only one). target: "auto", "cpu", "cuda", "opencl", "interp".
    out_idx: parameter indices (negative from the end) that the call allocates and returns,
    as in TileLang. pass_configs: TileLang's {key: value} (tl.disable_tma_lower, ...; keys Tile
    has no equivalent for warn). options: Tile's per-kernel compile options {name: value}
    (`tile env --options`; they override pass_configs). consts: values of
    kernel-factory parameters and symbolic dimensions (like `tile run -D NAME=VALUE`)."""
    h, warnings = _compile_module(source, func, consts)
    mod = _Module(h)
    if pass_configs or options:
        _set_options(h, options, pass_configs)
    n = L.tile_module_num_kernels(h)
    if func is None and n != 1:
        names = [L.tile_module_kernel_name(h, i).decode() for i in range(n)]
        raise TileError("the source has %d kernels (%s): name one with func=" % (n, ", ".join(names)))
    k = L.tile_module_kernel(h, func.encode() if func else None)
    if not k:
        raise TileError("no kernel named '%s'" % func)
    return Kernel(mod, k, target, out_idx, warnings)


class jit:
    """@tile.jit(out_idx=..., target=..., pass_configs=...) on a kernel factory: calling the
    factory with its compile-time arguments returns a Kernel (cached per arguments), as
    TileLang's @tilelang.jit does. The factory's body is compiled by Tile, never run."""

    def __init__(self, func=None, *, out_idx=None, target="auto", pass_configs=None, options=None, **kw):
        self.out_idx, self.target, self.pass_configs, self.options = out_idx, target, pass_configs, options
        self._cache, self._lock = {}, threading.Lock()
        self.func = None
        if func is not None:
            self._wrap(func)

    def _wrap(self, func):
        self.func = func
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = func.__doc__
        self._sig = inspect.signature(func)
        return self

    def __call__(self, *args, **kwargs):
        if self.func is None:  # @tile.jit(...) then the function
            return self._wrap(args[0])
        bound = self._sig.bind(*args, **kwargs)
        key = tuple(sorted((k, repr(v)) for k, v in bound.arguments.items()))
        k = self._cache.get(key)
        if k is None:
            with self._lock:
                k = self._cache.get(key)
                if k is None:
                    k = self._cache[key] = compile(self.func, target=self.target, out_idx=self.out_idx,
                                                   pass_configs=self.pass_configs, options=self.options,
                                                   **dict(bound.arguments))
        return k


# ---------- calling ----------
class _Arg:
    """One parameter's tensor, adapted: its view metadata, data pointer and how to make
    outputs like it."""
    __slots__ = ("view", "ptr", "owner", "kind", "device", "torch_device")


def _adapt(x, stream_hint):
    """(kind, view, ptr, owner, device) for a NumPy array, torch tensor, tile.Tensor or
    __dlpack__ object. ptr has the byte offset applied."""
    t, maps = _torch()
    a = _Arg()
    a.owner = x
    if t is not None and isinstance(x, t.Tensor):
        code = maps[0].get(x.dtype)
        if code is None:
            raise TileError("torch dtype %s has no tile dtype" % x.dtype)
        v = L.View_()
        dev = x.device
        if dev.type == "cuda":
            a.device = Device(L.DEVICE_CUDA, dev.index if dev.index is not None else t.cuda.current_device())
        elif dev.type == "cpu":
            a.device = CPU
        else:
            raise TileError("torch device %s is not one tile runs on" % dev)
        a.kind, a.torch_device = "torch", dev
        shp, strd = x.shape, x.stride()
        v.device, v.dtype, v.rank = a.device.c(), code, len(shp)
        for d in range(len(shp)):
            v.shape[d], v.strides[d] = shp[d], strd[d]
        a.view, a.ptr = v, x.data_ptr()
        return a
    ai = getattr(x, "__array_interface__", None)
    if ai is not None and type(x).__module__ == "numpy":
        code = numpy_dtype_code(x.dtype)
        v = L.View_()
        v.device, v.dtype, v.rank = CPU.c(), code, x.ndim
        isz = x.itemsize
        for d in range(x.ndim):
            v.shape[d] = x.shape[d]
            if x.strides[d] % isz:
                raise TileError("a NumPy array with strides %s (bytes) that are not whole elements" % (x.strides,))
            v.strides[d] = x.strides[d] // isz
        a.kind, a.device, a.view, a.ptr = "numpy", CPU, v, ai["data"][0]
        return a
    if isinstance(x, Tensor):
        v = x.view()
        a.kind, a.device, a.view, a.ptr = "tile", x.device, v, x.data_ptr
        return a
    if hasattr(x, "__dlpack__"):
        if stream_hint is None and hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] == 2:
            stream_hint = 1  # CUDA: tile launches on the legacy default stream for such tensors
        v, owner = from_dlpack(x, stream=stream_hint)
        a.kind, a.owner = "dlpack", (x, owner)
        a.device = Device(v.device.type, v.device.index)
        a.view, a.ptr = v, (v.data or 0) + v.byte_offset
        v.data, v.byte_offset = a.ptr, 0
        return a
    raise TileError("argument of type %s is not a tensor (NumPy array, torch tensor, or an object with __dlpack__)" % type(x).__name__)


def _sig_of(a):
    v = a.view
    r = v.rank
    return (v.device.type, v.device.index, v.dtype, tuple(v.shape[:r]), tuple(v.strides[:r]))


class _Miss:
    """What a fast launcher returns for arguments it was not made for."""


if L.fast is not None:
    _MISS = L.fast.MISS
    _KernelBase = L.fast.KernelBase
else:
    _MISS = _Miss()

    class _KernelBase:
        """The pure-Python form of tile._fast.KernelBase: a call tries the launcher of the last
        signature (self._last_fast), then the general path (self._call)."""

        def __call__(self, *args, stream=None):
            if stream is None:
                try:
                    r = self._last_fast(args)
                except AttributeError:  # an argument that is not a tensor
                    r = _MISS
                if r is not _MISS:
                    return r
            return self._call(*args, stream=stream)


class Kernel(_KernelBase):
    """A compiled kernel. Call it with tensors: kernel(A, B) -> outputs."""

    def __init__(self, module, handle, target="auto", out_idx=None, warnings=None):
        self._mod, self._k, self.target = module, handle, target
        self.warnings = warnings or ""
        self.name = L.tile_module_kernel_name(module.h, 0).decode() if L.tile_module_num_kernels(module.h) == 1 else "?"
        np_ = L.tile_kernel_num_params(handle)
        self.params = [L.tile_kernel_param_name(handle, i).decode() for i in range(np_)]
        self._is_tensor = [bool(L.tile_kernel_param_is_tensor(handle, i)) for i in range(np_)]
        self._dtypes = [L.tile_kernel_param_dtype(handle, i) for i in range(np_)]
        self.num_rets = L.tile_kernel_num_rets(handle)
        if out_idx is None:
            out_idx = []
        elif isinstance(out_idx, int):
            out_idx = [out_idx]
        outs = []
        for i in out_idx:
            j = i + np_ if i < 0 else i
            if not 0 <= j < np_ or not self._is_tensor[j]:
                raise TileError("out_idx %d: the kernel's tensor parameters are %s" % (
                    i, ", ".join("%d (%s)" % (p, self.params[p]) for p in range(np_) if self._is_tensor[p])))
            outs.append(j)
        self.out_idx = outs
        self._inputs = [i for i in range(np_) if i not in outs]
        self._plans = {}
        self._lock = threading.Lock()
        self._all_tensors = all(self._is_tensor[i] for i in self._inputs)
        self._last_fast = _no_fast  # see _note_fast

    @property
    def options(self):
        """The kernel's effective compile options, {name: value as text} (`tile env --options`)."""
        text = L.take(L.tile_kernel_options(self._k)) if L.tile_kernel_options else ""
        return dict(p.split("=", 1) for p in text.split(";") if p)

    def __repr__(self):
        return "tile.Kernel(%s(%s), target=%r)" % (self.name, ", ".join(self.params), self.target)

    # -- inspection --
    def source(self, target=None):
        """The generated source for target (C, CUDA C or OpenCL C), as `tile emit` prints."""
        out, err = L.ERR(), L.ERR()
        st = L.tile_kernel_emit(self._k, (target or self.target).encode(), ctypes.byref(out), ctypes.byref(err))
        if st != L.TILE_OK:
            L.take(out)
            check(st, err)
        return L.take(out)

    def ir(self, target=None, after=None):
        """The Tile IR: as sema produced it (target None), or after target's TileOpt pipeline
        (up to pass `after`), as `tile ir` prints."""
        if target is None and after is None:
            return L.take(L.tile_kernel_ir(self._k))
        out, err = L.ERR(), L.ERR()
        st = L.tile_kernel_ir_for(self._k, (target or self.target).encode(), after.encode() if after else None,
                                  ctypes.byref(out), ctypes.byref(err))
        if st != L.TILE_OK:
            L.take(out)
            check(st, err)
        return L.take(out)

    # -- calling --
    def _plan(self, key, args, given):
        """Specialise for this signature: output shapes, allocation recipe, the tile_spec."""
        nparams = len(self.params)
        tens = (L.Tensor_ * max(1, nparams))()
        rets = (L.Tensor_ * max(1, self.num_rets))()
        for i, a in given.items():
            v = a.view
            tens[i].data, tens[i].dtype, tens[i].rank = 1, v.dtype, v.rank
            for d in range(v.rank):
                tens[i].shape[d] = v.shape[d]
        for i in self.out_idx:
            tens[i].data, tens[i].rank = None, 0
        err = L.ERR()
        check(L.tile_infer_shapes(self._k, tens, nparams, rets, self.num_rets, ctypes.byref(err)), err)
        out_shapes = [(i, tuple(tens[i].shape[:tens[i].rank]), self._dtypes[i]) for i in self.out_idx]
        ret_shapes = [(nparams + r, tuple(rets[r].shape[:rets[r].rank]), rets[r].dtype) for r in range(self.num_rets)]
        proto = next(iter(given.values()), None)
        device = proto.device if proto is not None else CPU
        views = (L.View_ * max(1, nparams + self.num_rets))()
        for i, a in given.items():
            views[i] = a.view
            views[i].data, views[i].byte_offset = None, 0
        for idx, shape, code in out_shapes + ret_shapes:
            v = views[idx]
            v.device, v.dtype, v.rank = device.c(), code, len(shape)
            s = 1
            for d in range(len(shape) - 1, -1, -1):
                v.shape[d], v.strides[d] = shape[d], s
                s *= shape[d]
        spec, err = L.c_void_p(), L.ERR()
        tgt = None if self.target in (None, "auto") else self.target.encode()
        check(L.tile_kernel_specialize(self._k, tgt, views, nparams + self.num_rets, ctypes.byref(spec), ctypes.byref(err)), err)
        return _Plan(spec.value, out_shapes + ret_shapes, proto, device, nparams + self.num_rets)

    def _fast_key(self, args):
        """A signature from the tensors' own attributes (torch, NumPy), without making views;
        None where an argument needs the general path."""
        t, _ = _torch()
        key = []
        for i, x in zip(self._inputs, args):
            if not self._is_tensor[i]:
                key.append(None)
            elif t is not None and type(x) is t.Tensor:
                key.append((x.dtype, x.shape, x.stride(), x.device))
            elif type(x).__module__ == "numpy" and hasattr(x, "__array_interface__"):
                key.append((x.dtype, x.shape, x.strides))
            else:
                return None
        return tuple(key)

    def _call(self, *args, stream=None):
        """The general path of a call (the base class's __call__ first tries _last_fast)."""
        fk = self._fast_key(args) if len(args) == len(self._inputs) else None
        plan = self._plans.get(fk) if fk is not None else None
        if plan is not None:
            self._note_fast(plan, args)
            return plan.run_fast(self, args, stream)
        nin = len(self._inputs)
        if len(args) != nin:
            names = ", ".join(self.params[i] for i in self._inputs)
            raise TileError("%s takes %d argument%s (%s), got %d" % (self.name, nin, "" if nin == 1 else "s", names, len(args)))
        given, scalars = {}, None
        for i, x in zip(self._inputs, args):
            if self._is_tensor[i]:
                given[i] = _adapt(x, None)
            else:
                if scalars is None:
                    scalars = (ctypes.c_double * len(self.params))()
                scalars[i] = float(x)
        # the first tensor's kind is in the key: it decides what outputs are (NumPy arrays,
        # torch tensors, tile Tensors) for views that are otherwise alike
        proto = given[min(given)] if given else None
        key = (proto.kind if proto is not None else None,) + tuple(_sig_of(given[i]) for i in sorted(given))
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._plans[key] = self._plan(key, args, given)
        if fk is not None:
            self._plans[fk] = plan
        self._note_fast(plan, args)
        return plan.run(given, scalars, stream)

    def _note_fast(self, plan, args):
        """Make plan's launcher the first thing the next call tries, where every parameter is
        a torch tensor (or, with tile._fast, every one is a NumPy array)."""
        if not self._all_tensors:
            return
        kind = plan.proto_kind
        if kind == "torch":
            t, _ = _torch()
            if not all(type(x) is t.Tensor for x in args):
                return
        elif kind == "numpy" and L.fast is not None:
            np = sys.modules.get("numpy")
            if np is None or not all(type(x) is np.ndarray for x in args):
                return
        else:
            return
        if plan.launcher is None:
            plan.launcher = _c_launcher(self, plan, args) if L.fast is not None else _torch_launcher(self, plan, args)
        self._last_fast = plan.launcher

    def bench(self, *args, iters=100, warmup=10):
        """Median seconds per call over `iters` back-to-back calls after `warmup`: device time
        between events recorded around each launch on the call's stream where the device has
        them (the first interval also holds the first call's host time; the median drops it),
        host time on the cpu."""
        times = self.bench_times(*args, iters=iters, warmup=warmup)
        return statistics.median(times)

    def bench_times(self, *args, iters=100, warmup=10):
        for _ in range(warmup):
            self(*args)
        given = {i: _adapt(x, None) for i, x in zip(self._inputs, args) if self._is_tensor[i]}
        dev = next(iter(given.values())).device if given else CPU
        stream = _current_stream(dev, next(iter(given.values()), None))
        if dev.type == L.DEVICE_CPU:
            out = []
            for _ in range(iters):
                t0 = L.tile_now()
                self(*args)
                out.append(L.tile_now() - t0)
            return out
        # events between back-to-back launches, one sync at the end: while the device runs
        # launch i the host enqueues launch i+1, so each interval is launch i's device time
        # alone (no host time of the Python call between an event and its launch)
        evs, err = [], L.ERR()
        try:
            for _ in range(iters + 1):
                e = L.c_void_p()
                check(L.tile_event_create(dev.c(), ctypes.byref(e), ctypes.byref(err)), err)
                evs.append(e)
            check(L.tile_event_record(evs[0], stream._h, ctypes.byref(err)), err)
            for i in range(iters):
                self(*args)
                check(L.tile_event_record(evs[i + 1], stream._h, ctypes.byref(err)), err)
            check(L.tile_event_sync(evs[-1], ctypes.byref(err)), err)
            out = []
            for i in range(iters):
                sec = ctypes.c_double()
                check(L.tile_event_elapsed(evs[i], evs[i + 1], ctypes.byref(sec), ctypes.byref(err)), err)
                out.append(sec.value)
            return out
        finally:
            for e in evs:
                L.tile_event_free(e)


def _current_stream(dev, proto):
    if dev.type == L.DEVICE_CUDA and proto is not None and proto.kind == "torch":
        return wrapped_stream(dev, _torch_raw_stream(dev.index))
    return default_stream(dev)


_raw_stream = None


def _torch_raw_stream(index):
    """The raw CUstream of torch's current stream on a device (cheap where torch has the
    private accessor)."""
    global _raw_stream
    if _raw_stream is None:
        t, _ = _torch()
        f = getattr(t._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = f if f is not None else (lambda i: t.cuda.current_stream(i).cuda_stream)
    return _raw_stream(index)


class _Plan:
    __slots__ = ("spec", "outs", "proto_kind", "proto", "device", "n", "ptrs", "inputs", "scalar_idx", "out_specs", "launcher")

    def __init__(self, spec, outs, proto, device, n):
        self.spec, self.outs, self.device, self.n = spec, outs, device, n
        self.proto_kind = proto.kind if proto is not None else "tile"
        self.proto = proto
        self.ptrs = None
        self.launcher = None

    def _alloc(self, shape, code):
        k = self.proto_kind
        if k == "torch":
            t, maps = _torch()
            return t.empty(shape, dtype=maps[1][code], device=self.proto.torch_device)
        if k == "numpy":
            import numpy as np
            return np.empty(shape, dtype=numpy_dtype(code))
        return Tensor(shape, code, self.device)

    def run_fast(self, k, args, stream):
        """A call whose signature was seen: data pointers straight from the tensors."""
        ptrs = (ctypes.c_void_p * self.n)()
        scalars = None
        kind = self.proto_kind
        for i, x in zip(k._inputs, args):
            if k._is_tensor[i]:
                ptrs[i] = x.data_ptr() if kind == "torch" else x.__array_interface__["data"][0]
            else:
                if scalars is None:
                    scalars = (ctypes.c_double * len(k.params))()
                scalars[i] = float(x)
        results = []
        for idx, shape, code in self.outs:
            o = self._alloc(shape, code)
            results.append(o)
            ptrs[idx] = o.data_ptr() if kind == "torch" else o.__array_interface__["data"][0]
        if stream is None:
            if self.device.type == L.DEVICE_CUDA and kind == "torch":
                stream = wrapped_stream(self.device, _torch_raw_stream(self.device.index))
            else:
                stream = default_stream(self.device)
        err = L.ERR()
        check(L.tile_spec_launch(self.spec, stream._h, ptrs, scalars, ctypes.byref(err)), err)
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    def run(self, given, scalars, stream):
        ptrs = (ctypes.c_void_p * self.n)()
        for i, a in given.items():
            ptrs[i] = a.ptr
        results = []
        for idx, shape, code in self.outs:
            o = self._alloc(shape, code)
            results.append(o)
            a = _adapt(o, None)
            ptrs[idx] = a.ptr
        if stream is None:
            stream = _current_stream(self.device, self.proto)
        err = L.ERR()
        st = L.tile_spec_launch(self.spec, stream._h, ptrs, scalars, ctypes.byref(err))
        check(st, err)
        if self.device.type == L.DEVICE_CPU:
            pass  # cpu work is done on return
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)



def _no_fast(args):
    return _MISS


_tls = threading.local()


def _thread_ctx(n):
    """This thread's launch context for n views: an array of data pointers reused by every
    launch, an error slot and a byref of it (libtile writes a heap string there on error)."""
    slot = L.ERR()
    ctx = ((ctypes.c_void_p * n)(), slot, ctypes.byref(slot))
    setattr(_tls, "ctx%d" % n, ctx)
    return ctx


_native_streams = {}  # cuda device index -> {raw CUstream: tile_stream handle (a c_void_p)}


def _native_stream_table(index):
    tab = _native_streams.get(index)
    if tab is None:
        with _streams_lock:
            tab = _native_streams.setdefault(index, {})
    return tab


def _native_stream_miss(tab, index, raw):
    h = tab.get(raw)
    if h is None:
        h = ctypes.c_void_p(wrapped_stream(Device(L.DEVICE_CUDA, index), raw)._h.value)
        tab[raw] = h
    return h


def _torch_launcher(k, plan, args):
    """A function fast(args) for calls on torch tensors with exactly the signature of `args`
    (dtype, shape, contiguity or strides, device of each): it checks that signature from the
    tensors' cheap attributes (returning _MISS where any differs, so that the general path
    validates and reports), then takes the data pointers, torch's current raw stream and
    outputs from torch.empty, and makes one ctypes call. Generated per plan so that the checks
    are straight-line code; the values it compares with live in its namespace."""
    t, maps = _torch()
    n = len(args)
    ns = {"MISS": _MISS, "n": plan.n, "spec": ctypes.c_void_p(plan.spec), "launch": L.tile_spec_launch_objs, "tls": _tls,
          "mkctx": _thread_ctx, "check": check, "empty": t.empty, "tdev": plan.proto.torch_device}
    cond, body = [], []
    for j, (i, x) in enumerate(zip(k._inputs, args)):
        ns["D%d" % j], ns["S%d" % j], ns["I%d" % j] = x.dtype, tuple(x.shape), x.get_device()
        c = "a%d.dtype is D%d and a%d.shape == S%d and a%d.get_device() == I%d" % (j, j, j, j, j, j)
        if x.is_contiguous():
            c += " and a%d.is_contiguous()" % j
        else:
            ns["T%d" % j] = tuple(x.stride())
            c += " and a%d.stride() == T%d" % (j, j)
        cond.append(c)
        body.append("    p[%d] = a%d.data_ptr()" % (i, j))
    outs = []
    for m, (idx, shape, code) in enumerate(plan.outs):
        ns["OS%d" % m], ns["OD%d" % m] = shape, maps[1][code]
        body.append("    o%d = empty(OS%d, dtype=OD%d, device=tdev)" % (m, m, m))
        body.append("    p[%d] = o%d.data_ptr()" % (idx, m))
        outs.append("o%d" % m)
    if plan.device.type == L.DEVICE_CUDA:
        ns["raw"], ns["index"] = _torch_raw_stream_fn(), plan.device.index
        ns["tab"], ns["smiss"] = _native_stream_table(plan.device.index), _native_stream_miss
        body.append("    r = raw(index)")
        body.append("    s = tab.get(r)")
        body.append("    if s is None:")
        body.append("        s = smiss(tab, index, r)")
    else:
        ns["s"] = ctypes.c_void_p(default_stream(plan.device)._h.value)
    src = ["def fast(args):", "    if len(args) != %d:" % n, "        return MISS"]
    if n:
        src.append("    %s, = args" % ", ".join("a%d" % j for j in range(n)))
        src.append("    if not (%s):" % " and ".join("(%s)" % c for c in cond))
        src.append("        return MISS")
    src += ["    try:", "        p, e, ref = tls.ctx%d" % plan.n, "    except AttributeError:", "        p, e, ref = mkctx(n)"]
    src += body
    src.append("    if launch(spec, s, p, None, ref):")
    src.append("        check(1, e)")
    if not outs:
        src.append("    return None")
    elif len(outs) == 1:
        src.append("    return o0")
    else:
        src.append("    return (%s)" % ", ".join(outs))
    exec("\n".join(src), ns)  # noqa: S102 — code generated from the kernel's arity, values in ns
    return ns["fast"]


def _c_launcher(k, plan, args):
    """A tile._fast.Launcher for calls with exactly the signature of `args` (all torch tensors,
    or all NumPy arrays): the checks, data pointers, outputs, stream and launch of
    _torch_launcher's generated code, done in C."""
    inputs, outputs = [], []
    if plan.proto_kind == "torch":
        t, maps = _torch()
        kind, ttype, empty = 1, t.Tensor, t.empty
        for i, x in zip(k._inputs, args):
            inputs.append((i, x.dtype, tuple(x.shape), None if x.is_contiguous() else tuple(x.stride()), x.get_device()))
        for idx, shape, code in plan.outs:
            outputs.append((idx, (shape,), {"dtype": maps[1][code], "device": plan.proto.torch_device}))
        if plan.device.type == L.DEVICE_CUDA:
            index = plan.device.index
            tab = _native_stream_table(index)
            stream = (_torch_raw_stream_fn(), index, lambda raw: _native_stream_miss(tab, index, raw).value)
        else:
            stream = default_stream(plan.device)._h.value
    else:
        np = sys.modules["numpy"]
        kind, ttype, empty = 2, np.ndarray, np.empty
        for i, x in zip(k._inputs, args):
            inputs.append((i, x.dtype, x.shape, x.strides, -1))  # strides in bytes, as the buffer protocol gives them
        for idx, shape, code in plan.outs:
            outputs.append((idx, (shape, numpy_dtype(code)), None))
        stream = default_stream(plan.device)._h.value
    protos = tuple(args) if kind == 1 and _use_exchange_api else None
    return L.fast.Launcher(plan.spec, L.tile_spec_launch_address, L.tile_free_address, plan.n, kind, ttype, inputs, outputs,
                           empty, stream, TileError, k._mod, protos)


# C launchers of torch tensors use DLPack's C exchange API where torch has it (the tests turn
# this off to cover the attribute path too)
_use_exchange_api = True


def _torch_raw_stream_fn():
    t, _ = _torch()
    f = getattr(t._C, "_cuda_getCurrentRawStream", None)
    return f if f is not None else (lambda i: t.cuda.current_stream(i).cuda_stream)
