"""tile.torch.op: a Tile kernel registered as a PyTorch operator through torch.library.

The operator runs the kernel on CPU and CUDA tensors (zero copy, on PyTorch's current CUDA
stream); its fake implementation takes the output shapes and dtypes from Tile's shape
inference (tile_infer_shapes: the kernel's signature and the input shapes, nothing run), so
torch.compile(fullgraph=True) and torch.export see one operator and no graph break. A
second kernel given as backward= is registered as the operator "<name>_backward" and wired
into autograd."""
import ctypes
import inspect
import numbers

import torch

from .. import _lib as L
from .._core import TileError, check, _torch
from ..kernel import Kernel, jit

__all__ = ["op", "output_meta"]


def _code_of(dtype, where):
    _, maps = _torch()
    code = maps[0].get(dtype)
    if code is None:
        raise TypeError("%s: torch dtype %s has no tile dtype" % (where, dtype))
    return code


def output_meta(kernel, inputs):
    """[(shape, torch dtype)] of the tensors a call kernel(*inputs) returns (its out_idx
    parameters, then its returned tensors), from Tile's shape inference: only the inputs'
    shapes and dtypes are read (they may be fake or meta tensors); nothing is run."""
    _, maps = _torch()
    nparams = len(kernel.params)
    tens = (L.Tensor_ * max(1, nparams))()
    rets = (L.Tensor_ * max(1, kernel.num_rets))()
    for i, x in zip(kernel._inputs, inputs):
        if kernel._is_tensor[i]:
            shape = tuple(x.shape)
            tens[i].data, tens[i].dtype, tens[i].rank = 1, _code_of(x.dtype, kernel.params[i]), len(shape)
            for d, s in enumerate(shape):
                if not isinstance(s, int):
                    raise TileError("%s: parameter %s has a symbolic shape %s; Tile specialises kernels on shapes: compile "
                                    "with torch.compile(dynamic=False) or mark the dimension static" % (kernel.name, kernel.params[i], shape))
                tens[i].shape[d] = s
    for i in kernel.out_idx:
        tens[i].data, tens[i].rank = None, 0
    err = L.ERR()
    check(L.tile_infer_shapes(kernel._k, tens, nparams, rets, kernel.num_rets, ctypes.byref(err)), err)
    out = [(tuple(tens[i].shape[:tens[i].rank]), maps[1][kernel._dtypes[i]]) for i in kernel.out_idx]
    out += [(tuple(rets[r].shape[:rets[r].rank]), maps[1][rets[r].dtype]) for r in range(kernel.num_rets)]
    return out


class _Resolver:
    """Finds the Kernel for a call: a Kernel itself; factory(**specialize(*inputs)) (or
    factory(*specialize(*inputs)) for a tuple); or factory(*inputs), which must return a
    Kernel."""

    def __init__(self, what, specialize, argname):
        if isinstance(what, Kernel):
            self.kernel, self.factory = what, None
        elif callable(what):
            self.kernel, self.factory = None, what
        else:
            raise TypeError("%s: give a tile.Kernel, a @tile.jit factory or a function returning a Kernel, not %s"
                            % (argname, type(what).__name__))
        if specialize is not None and not callable(specialize):
            raise TypeError("%s: specialize must be a function of the operator's inputs" % argname)
        if specialize is not None and self.kernel is not None:
            raise TypeError("%s: specialize is for factories; a tile.Kernel is already specialised" % argname)
        self.specialize, self.argname = specialize, argname

    def __call__(self, inputs):
        if self.kernel is not None:
            return self.kernel
        if self.specialize is not None:
            args = self.specialize(*inputs)
            k = self.factory(**args) if isinstance(args, dict) else self.factory(*args)
        else:
            k = self.factory(*inputs)
        if not isinstance(k, Kernel):
            raise TypeError("%s: the factory returned %s, not a tile.Kernel (a @tile.jit factory needs specialize= to map "
                            "the operator's inputs to its compile-time arguments)" % (self.argname, type(k).__name__))
        return k


def _params_of(kernel_or_factory, specialize, params):
    """[(name, 'Tensor'|'float')] of the operator's inputs."""
    if params is not None:
        out = []
        for p in params:
            if isinstance(p, str):
                out.append((p, "Tensor"))
            else:
                name, kind = p
                if kind not in ("Tensor", "float"):
                    raise TypeError("params: %r: the kind is 'Tensor' or 'float'" % (p,))
                out.append((name, kind))
        return out
    if isinstance(kernel_or_factory, Kernel):
        k = kernel_or_factory
        return [(k.params[i], "Tensor" if k._is_tensor[i] else "float") for i in k._inputs]
    fn = specialize if specialize is not None else kernel_or_factory
    if isinstance(fn, jit):
        raise TypeError("a @tile.jit factory needs specialize=(a function of the operator's inputs giving the factory's "
                        "arguments) or params=[names]")
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError("%s: parameter %s: the operator's inputs are positional parameters" % (getattr(fn, "__name__", fn), p.name))
        isnum = p.default is not p.empty and isinstance(p.default, numbers.Real) and not isinstance(p.default, bool)
        out.append((p.name, "float" if isnum else "Tensor"))
    return out


def _schema(params, mutates, nouts):
    args = ", ".join("%s%s %s" % (kind, "(a%d!)" % i if name in mutates else "", name) for i, (name, kind) in enumerate(params))
    rets = "()" if nouts == 0 else "Tensor" if nouts == 1 else "(%s)" % ", ".join(["Tensor"] * nouts)
    return "(%s) -> %s" % (args, rets)


def _register(name, resolver, params, mutates, nouts, device_types):
    """One torch.library custom op whose real and fake implementations call resolver's kernel."""
    tensor_pos = [i for i, (_, kind) in enumerate(params) if kind == "Tensor"]

    def _check_count(kernel, inputs):
        if len(kernel._inputs) != len(inputs):
            names = ", ".join(kernel.params[i] for i in kernel._inputs)
            raise TileError("%s: the kernel %s takes %d inputs (%s); the operator has %d (%s)" % (
                name, kernel.name, len(kernel._inputs), names, len(inputs), ", ".join(p for p, _ in params)))
        metas = output_meta(kernel, inputs)
        if len(metas) != nouts:
            raise TileError("%s: the kernel %s returns %d tensors; the operator was declared with %d (num_outputs=)" % (
                name, kernel.name, len(metas), nouts))
        return metas

    def impl(*inputs):
        for i in tensor_pos:
            if not isinstance(inputs[i], torch.Tensor):
                raise TypeError("%s: argument %s must be a tensor, not %s" % (name, params[i][0], type(inputs[i]).__name__))
        kernel = resolver(inputs)
        _check_count(kernel, inputs)
        out = kernel(*inputs)
        if nouts == 0:
            return None
        return out

    def fake(*inputs):
        kernel = resolver(inputs)
        metas = _check_count(kernel, inputs)
        dev = next((inputs[i].device for i in tensor_pos), torch.device("cpu"))
        outs = tuple(torch.empty(shape, dtype=dt, device=dev) for shape, dt in metas)
        if nouts == 0:
            return None
        return outs[0] if nouts == 1 else outs

    schema = _schema(params, mutates, nouts)
    lib_op = torch.library.custom_op(name, impl, mutates_args=tuple(mutates), device_types=device_types, schema=schema)
    lib_op.register_fake(fake)
    return lib_op


def op(kernel_or_factory, name, *, specialize=None, params=None, num_outputs=None, mutates_args=(), backward=None,
       backward_specialize=None, device_types=None):
    """Register a Tile kernel as the PyTorch operator `name` ("namespace::op") and return it
    (a torch.library CustomOpDef: call it like a function, or as torch.ops.namespace.op).

    kernel_or_factory: a tile.Kernel; a @tile.jit factory with specialize=, a function of
    the operator's inputs giving the factory's arguments (a dict, or a tuple); or a function
    of the inputs that returns a Kernel. The operator's inputs are the kernel's parameters
    that are not outputs (out_idx), in order: tensors, and floats for scalar parameters;
    their names come from the Kernel, from specialize's (or the function's) parameters
    (one with a number as default is a float), or from params=[name | (name, "Tensor" |
    "float")]. Its outputs are the kernel's out_idx tensors then its returned ones;
    num_outputs says how many for a factory (default 1; 0 for a kernel that only writes
    mutated inputs). mutates_args: names of inputs the kernel writes in place.
    backward: a kernel (or factory, with backward_specialize=) taking the operator's inputs
    followed by one gradient per output, returning one gradient per tensor input."""
    if not isinstance(name, str) or "::" not in name:
        raise TypeError("name: give 'namespace::op_name', not %r" % (name,))
    if isinstance(mutates_args, str):
        mutates_args = (mutates_args,)
    resolver = _Resolver(kernel_or_factory, specialize, "kernel_or_factory")
    plist = _params_of(kernel_or_factory, specialize, params)
    names = [p for p, _ in plist]
    for m in mutates_args:
        if m not in names:
            raise TypeError("mutates_args: %r is not one of the operator's inputs (%s)" % (m, ", ".join(names)))
        if dict(plist)[m] != "Tensor":
            raise TypeError("mutates_args: %r is a float parameter" % m)
    if isinstance(kernel_or_factory, Kernel):
        nouts = len(kernel_or_factory.out_idx) + kernel_or_factory.num_rets
        if num_outputs is not None and num_outputs != nouts:
            raise TypeError("num_outputs=%d: the kernel %s returns %d tensors" % (num_outputs, kernel_or_factory.name, nouts))
    else:
        nouts = 1 if num_outputs is None else int(num_outputs)
    fwd = _register(name, resolver, plist, set(mutates_args), nouts, device_types)
    if backward is None:
        if backward_specialize is not None:
            raise TypeError("backward_specialize: given without backward=")
        return fwd
    if mutates_args:
        raise TypeError("backward: an operator that mutates its inputs (mutates_args) has no autograd formula here")
    if nouts == 0:
        raise TypeError("backward: the operator returns nothing to differentiate")
    bres = _Resolver(backward, backward_specialize, "backward")
    bparams = plist + [("grad_%d" % k if nouts > 1 else "grad", "Tensor") for k in range(nouts)]
    tensor_pos = [i for i, (_, kind) in enumerate(plist) if kind == "Tensor"]
    bwd = _register(name + "_backward", bres, bparams, set(), len(tensor_pos), device_types)

    def setup_context(ctx, inputs, output):
        outs = output if nouts > 1 else (output,)
        ctx.save_for_backward(*[inputs[i] for i in tensor_pos])
        ctx.scalars = [None if kind == "Tensor" else inputs[i] for i, (_, kind) in enumerate(plist)]
        ctx.out_meta = [(o.shape, o.dtype, o.device) for o in outs]

    def backward_fn(ctx, *grads):
        saved = list(ctx.saved_tensors)
        args = []
        for i, (_, kind) in enumerate(plist):
            args.append(saved.pop(0) if kind == "Tensor" else ctx.scalars[i])
        for g, (shape, dt, dev) in zip(grads, ctx.out_meta):
            args.append(torch.zeros(shape, dtype=dt, device=dev) if g is None else g.contiguous())
        res = bwd(*args)
        res = res if isinstance(res, tuple) else (res,)
        out = [None] * len(plist)
        for i, g in zip(tensor_pos, res):
            out[i] = g
        return tuple(out)

    torch.library.register_autograd(name, backward_fn, setup_context=setup_context)
    fwd.backward_op = bwd
    return fwd
