#!/usr/bin/env python3
"""conformance.py — TileKernels' conformance test (in the spirit of ggml's test-backend-ops).

Every operator of the registry is called through the C API (ctypes on libtile) on seeded
random inputs, and its result compared
  - with an independent float64 NumPy reference (written here, from PyTorch's documented
    semantics: the registry's `reference` column), on every target run, and
  - with the interpreter's result, on the compiled targets (cpu, opencl),
with shapes that include primes, ragged tails, size 1 and empty tensors; then bad arguments
that must fail with a message naming the argument.

Sampling (to stay within CI time on 2 cores): every (operator, dtype) runs on the
interpreter; on cpu each operator runs once per case list, rotating through its dtypes so
that every dtype appears; on opencl a rotating sample of the operators (--opencl-every N).
TILE_OPS_TEST_FULL=1 runs the whole cross product on every target.

    python3 tests/ops/conformance.py --lib build/libtile.so --targets interp,cpu [--only NAME] [--part K/N]
Exit 0 ok, 1 failures, 77 skipped (no numpy / ml_dtypes).
"""
import argparse
import ctypes as C
import math
import os
import sys

try:
    import numpy as np
    import ml_dtypes
except ImportError:
    print("SKIP: numpy and ml_dtypes are needed")
    sys.exit(77)

# ---------------------------------------------------------------------------------------
# the C API
DT = {"bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6, "uint32": 7, "uint64": 8,
      "float16": 9, "bfloat16": 10, "float32": 11, "float64": 12, "float8_e4m3": 13, "float8_e5m2": 14}
NP = {"bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
      "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
      "float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
DT_NAME = {v: k for k, v in DT.items()}


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int), ("rank", C.c_int), ("shape", C.c_int64 * 8)]


class Scalar(C.Structure):
    _fields_ = [("f", C.c_double), ("i", C.c_int64), ("kind", C.c_int)]


class Info(C.Structure):
    _fields_ = [("name", C.c_char_p), ("family", C.c_char_p), ("reference", C.c_char_p), ("aten", C.c_char_p),
                ("summary", C.c_char_p), ("source", C.c_char_p), ("factory", C.c_char_p), ("dtypes", C.c_uint32),
                ("targets", C.c_uint32)]


class GemmOpts(C.Structure):
    _fields_ = [("trans_a", C.c_int), ("trans_b", C.c_int), ("activation", C.c_char_p), ("alpha", C.c_double),
                ("beta", C.c_double), ("out_dtype", C.c_int)]


LIB = None
KEEP = []  # numpy arrays whose memory the C side is reading


def load(path):
    global LIB
    LIB = C.CDLL(path)
    LIB.tile_op_at.restype = C.POINTER(Info)
    LIB.tile_op_float.restype = Scalar
    LIB.tile_op_int.restype = Scalar
    LIB.tile_op_bool.restype = Scalar
    LIB.tile_free.argtypes = [C.c_void_p]


def scalar(v):
    if isinstance(v, bool):
        return LIB.tile_op_bool(C.c_int(int(v)))
    if isinstance(v, int):
        return LIB.tile_op_int(C.c_int64(v))
    return LIB.tile_op_float(C.c_double(v))


def tt(a):
    """a tile_tensor viewing numpy array a (kept alive)"""
    a = np.require(np.asarray(a), requirements="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    KEEP.append(a)
    name = [k for k, v in NP.items() if np.dtype(v) == a.dtype][0]
    t = Tensor()
    t.data = a.ctypes.data if a.size else None
    t.dtype = DT[name]
    t.rank = a.ndim
    for d in range(a.ndim):
        t.shape[d] = a.shape[d]
    return t


def out():
    return Tensor()


def to_np(t):
    shape = tuple(t.shape[d] for d in range(t.rank))
    dt = np.dtype(NP[DT_NAME[t.dtype]])
    n = int(np.prod(shape)) if shape else 1
    if n == 0 or not t.data:
        res = np.zeros(shape, dt)
    else:
        buf = (C.c_char * (n * dt.itemsize)).from_address(t.data)
        res = np.frombuffer(bytes(buf), dt).reshape(shape).copy()
    LIB.tile_tensor_free(C.byref(t))
    return res


class OpError(Exception):
    pass


def call(fn, *args):
    err = C.c_char_p()
    st = getattr(LIB, fn)(*args, C.byref(err))
    msg = err.value.decode() if err.value else ""
    if err.value:
        LIB.tile_free(err)
    if st != 0:
        raise OpError("status %d: %s" % (st, msg))


def b(s):
    return s.encode() if s is not None else None


def ip(lst):
    return (C.c_int * max(1, len(lst)))(*lst)


def lp(lst):
    return (C.c_int64 * max(1, len(lst)))(*lst)


# ---------------------------------------------------------------------------------------
# inputs and comparison
RNG = np.random.default_rng(1234)
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
ALL = ["bool"] + INTS + FLOATS
NUM = INTS + FLOATS
SHAPES = [(37,), (3, 5, 7), (1,), (0, 4), (2, 1, 129), (4, 300)]
TOL = {"float64": 1e-10, "float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2, "float8_e4m3": 0.13, "float8_e5m2": 0.25}


def rand(shape, dt, lo=-2.0, hi=2.0):
    if dt == "bool":
        return RNG.integers(0, 2, shape).astype(np.bool_)
    if dt in INTS:
        lo_i = 0 if dt == "uint8" else -8
        return RNG.integers(lo_i, 9, shape).astype(NP[dt])
    return RNG.uniform(lo, hi, shape).astype(NP[dt])


def f64(a):
    return np.asarray(a).astype(np.float64)


def close(got, ref, dt, what):
    """norm-wise relative error against the f64 reference, exact for integers and bool"""
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return "%s: shape %s, expected %s" % (what, got.shape, ref.shape)
    if got.size == 0:
        return None
    if dt in TOL:
        g, r = f64(got), f64(ref)
        nan_g, nan_r = np.isnan(g), np.isnan(r)
        if (nan_g != nan_r).any():
            return "%s: NaN at %d places where the reference has none (or the reverse)" % (what, int((nan_g != nan_r).sum()))
        inf = np.isinf(r)
        if (g[inf] != r[inf]).any():
            return "%s: infinities differ" % what
        m = ~(nan_r | inf)
        with np.errstate(invalid="ignore"):
            num = np.linalg.norm((g - r)[m])
        den = np.linalg.norm(r[m])
        err = num / den if den > 0 else num
        if err > TOL[dt]:
            i = int(np.argmax(np.abs(g - r) * m))
            return "%s: norm-wise relative error %.3g > %.3g (worst at flat %d: %r vs %r)" % (what, err, TOL[dt], i, g.flat[i], r.flat[i])
        return None
    if not np.array_equal(got.astype(np.int64) if got.dtype != np.bool_ else got, ref.astype(got.dtype).astype(np.int64) if got.dtype != np.bool_ else ref.astype(np.bool_)):
        bad = np.flatnonzero(got.astype(np.float64) != ref.astype(np.float64))
        i = int(bad[0]) if bad.size else 0
        return "%s: %d elements differ (first at flat %d: %r vs %r)" % (what, bad.size, i, got.flat[i], ref.flat[i])
    return None


def round_to(a, dt):
    """the f64 reference rounded to the output dtype, as the kernel's store does"""
    return np.asarray(a, np.float64).astype(NP[dt]) if dt in NP else a


# ---------------------------------------------------------------------------------------
# promotion (PyTorch's rules, written independently of the C side)
def cat(dt):
    return 0 if dt == "bool" else 2 if dt in FLOATS else 1


def promote(a, b):
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    if cat(a) != cat(b):
        return a if cat(a) > cat(b) else b
    if cat(a) == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return max(a, b, key=FLOATS.index)
    if "uint8" in (a, b):
        o = b if a == "uint8" else a
        return "int16" if o == "int8" else o
    return max(a, b, key=INTS.index)


# ---------------------------------------------------------------------------------------
# the reference semantics
def ref_unary(name, x, args):
    x = f64(x)
    with np.errstate(all="ignore"):
        t = {
            "abs": np.abs, "neg": np.negative, "sign": lambda v: np.where(np.isnan(v), 0.0, np.sign(v)),
            "reciprocal": lambda v: 1.0 / v, "sqrt": np.sqrt, "rsqrt": lambda v: 1.0 / np.sqrt(v), "exp": np.exp, "exp2": np.exp2,
            "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos,
            "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
            "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
            "erf": np.vectorize(math.erf, otypes=[np.float64]), "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
            "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc, "isnan": np.isnan, "isinf": np.isinf,
            "isfinite": np.isfinite, "logical_not": lambda v: v == 0, "relu": lambda v: np.where(v < 0, 0.0, v),
            "silu": lambda v: v / (1.0 + np.exp(-v)),
            "gelu": lambda v: 0.5 * v * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(v / math.sqrt(2.0))),
            "gelu_tanh": lambda v: 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3))),
            "leaky_relu": lambda v: np.where(v > 0, v, v * args[0]),
            "hardtanh": lambda v: np.minimum(np.maximum(v, args[0]), args[1]),
            "elu": lambda v: np.where(v > 0, args[1] * v, args[1] * args[0] * np.expm1(v * args[2])),
            "hardsigmoid": lambda v: np.clip(v / 6.0 + 0.5, 0.0, 1.0),
            "hardswish": lambda v: v * np.clip(v / 6.0 + 0.5, 0.0, 1.0),
            "softplus": lambda v: np.where(v * args[0] > args[1], v, np.log1p(np.exp(v * args[0])) / args[0]),
            "mish": lambda v: v * np.tanh(np.log1p(np.exp(v))), "square": lambda v: v * v,
        }
        return t[name](x)


UNARY_ARGS = {"leaky_relu": [0.1], "hardtanh": [-0.5, 0.7], "elu": [1.3, 1.1, 0.9], "softplus": [1.5, 2.0]}
UNARY_DOMAIN = {"log": (0.1, 3), "log2": (0.1, 3), "log10": (0.1, 3), "sqrt": (0.1, 3), "rsqrt": (0.1, 3), "log1p": (-0.9, 2),
                "asin": (-0.95, 0.95), "acos": (-0.95, 0.95), "atanh": (-0.9, 0.9), "acosh": (1.05, 4), "reciprocal": (0.2, 2),
                "tan": (-1.2, 1.2)}


def int_result(name, x):
    """exact integer references"""
    if name == "abs":
        return np.abs(x)
    if name == "neg":
        return np.negative(x)
    if name == "sign":
        return np.sign(x)
    if name in ("floor", "ceil", "round", "trunc"):
        return x
    if name == "bitwise_not":
        return np.invert(x)
    if name == "relu":
        return np.where(x < 0, 0, x).astype(x.dtype)
    if name == "square":
        return x * x
    return None


def ref_binary(name, a, b, rt, alpha=None):
    fa, fb = f64(a), f64(b)
    ints = rt in INTS or rt == "bool"
    with np.errstate(all="ignore"):
        if ints and name not in ("div", "atan2"):
            ia, ib = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
            r = {
                "add": lambda: ia + ib * (alpha if alpha is not None else 1), "sub": lambda: ia - ib * (alpha if alpha is not None else 1),
                "mul": lambda: ia * ib, "div_floor": lambda: ia // ib,
                "div_trunc": lambda: np.trunc(fa / fb).astype(np.int64), "remainder": lambda: ia % ib,
                "fmod": lambda: np.fmod(ia, ib), "pow": lambda: np.where(ib >= 0, ia ** np.maximum(ib, 0), np.where(ia == 1, 1, np.where(ia == -1, np.where(ib % 2 == 0, 1, -1), 0))),
                "maximum": lambda: np.maximum(ia, ib), "minimum": lambda: np.minimum(ia, ib), "fmax": lambda: np.maximum(ia, ib),
                "fmin": lambda: np.minimum(ia, ib), "bitwise_and": lambda: ia & ib, "bitwise_or": lambda: ia | ib, "bitwise_xor": lambda: ia ^ ib,
            }.get(name)
            if r is not None:
                v = r()
                # wrap to the result dtype (two's complement)
                return np.asarray(v).astype(NP[rt]) if rt != "bool" else np.asarray(v) != 0
        r = {
            "add": lambda: fa + fb * (alpha if alpha is not None else 1), "sub": lambda: fa - fb * (alpha if alpha is not None else 1),
            "mul": lambda: fa * fb, "div": lambda: fa / fb, "div_floor": lambda: np.floor_divide(fa, fb), "div_trunc": lambda: np.trunc(fa / fb),
            "remainder": lambda: np.remainder(fa, fb), "fmod": lambda: np.fmod(fa, fb), "pow": lambda: np.power(fa, fb),
            "maximum": lambda: np.maximum(fa, fb), "minimum": lambda: np.minimum(fa, fb), "fmax": lambda: np.fmax(fa, fb),
            "fmin": lambda: np.fmin(fa, fb), "atan2": lambda: np.arctan2(fa, fb),
            "logical_and": lambda: (fa != 0) & (fb != 0), "logical_or": lambda: (fa != 0) | (fb != 0), "logical_xor": lambda: (fa != 0) ^ (fb != 0),
            "eq": lambda: fa == fb, "ne": lambda: fa != fb, "lt": lambda: fa < fb, "le": lambda: fa <= fb, "gt": lambda: fa > fb, "ge": lambda: fa >= fb,
        }[name]
        return r()


BIN_RULE = {"div": "float", "atan2": "float", "logical_and": "bool", "logical_or": "bool", "logical_xor": "bool", "eq": "cmp", "ne": "cmp",
            "lt": "cmp", "le": "cmp", "gt": "cmp", "ge": "cmp"}


def bin_result(name, a_dt, b_dt):
    r = promote(a_dt, b_dt)
    rule = BIN_RULE.get(name)
    if rule == "float":
        return "float32" if r in INTS or r == "bool" else r, r
    if rule in ("bool", "cmp"):
        return "bool", r
    return r, r


# ---------------------------------------------------------------------------------------
class Runner:
    def __init__(self, targets, only, full, opencl_every):
        self.targets = targets
        self.only = only
        self.full = full
        self.opencl_every = opencl_every
        self.fails = []
        self.count = 0
        self.op_seen = set()
        self.counter = {}

    def want(self, name):
        return not self.only or name in self.only

    def targets_for(self, name, k):
        """interp always; cpu for one case of each (op, shape list) rotation; opencl sampled"""
        ts = ["interp"]
        n = self.counter.get(name, 0)
        self.counter[name] = n + 1
        if "cpu" in self.targets and (self.full or k == 0):
            ts.append("cpu")
        if "opencl" in self.targets and (self.full or (k == 0 and (hash_name(name) % self.opencl_every) == 0)):
            ts.append("opencl")
        if "cuda" in self.targets and (self.full or k == 0):
            ts.append("cuda")
        return [t for t in ts if t in self.targets]

    def check(self, name, what, fn, ref, out_dt, k=0):
        """fn(target) -> numpy result; compared with ref (f64 or exact) and with the interpreter"""
        self.op_seen.add(name)
        interp = None
        for tg in self.targets_for(name, k):
            self.count += 1
            label = "%s [%s] %s" % (name, tg, what)
            try:
                got = fn(tg)
            except OpError as e:
                self.fails.append("%s: %s" % (label, e))
                continue
            got_list = got if isinstance(got, tuple) else (got,)
            ref_list = ref if isinstance(ref, tuple) else (ref,)
            dts = out_dt if isinstance(out_dt, tuple) else (out_dt,)
            for i, (g, r, dt) in enumerate(zip(got_list, ref_list, dts)):
                m = close(g, r, dt, label + (" out%d" % i if len(got_list) > 1 else "") + " vs numpy")
                if m:
                    self.fails.append(m)
            if tg == "interp":
                interp = got_list
            elif interp is not None:
                for i, (g, r, dt) in enumerate(zip(got_list, interp, dts)):
                    m = close(g, r, dt, label + " vs interp")
                    if m:
                        self.fails.append(m)

    def expect_error(self, name, what, fn, arg):
        """a bad call: must fail, its message naming arg"""
        self.op_seen.add(name)
        self.count += 1
        try:
            fn("interp")
        except OpError as e:
            if (arg + ":") not in str(e):
                self.fails.append("%s bad-arg %s: the message does not name '%s': %s" % (name, what, arg, e))
            return
        self.fails.append("%s bad-arg %s: no error" % (name, what))


def hash_name(s):
    h = 0
    for ch in s:
        h = (h * 131 + ord(ch)) % 1000003
    return h


# ---------------------------------------------------------------------------------------
# the cases
def registry():
    ops = []
    for i in range(LIB.tile_op_count()):
        inf = LIB.tile_op_at(i).contents
        ops.append((inf.name.decode(), inf.family.decode(), inf.dtypes))
    return ops


def dtypes_of(mask):
    return [n for n, v in DT.items() if mask & (1 << v) and n in NP]


def unary_cases(R, ops):
    for name, fam, mask in ops:
        if fam != "unary" or not R.want(name) or name == "clamp":
            continue
        for di, dt in enumerate([d for d in dtypes_of(mask) if d in ALL]):
            shape = SHAPES[di % len(SHAPES)]
            lo, hi = UNARY_DOMAIN.get(name, (-2.0, 2.0))
            x = rand(shape, dt, lo, hi)
            if dt in INTS and name in UNARY_DOMAIN:
                x = RNG.integers(max(1, int(lo) + 1), 5, shape).astype(NP[dt])
            args = UNARY_ARGS.get(name, [])
            float_fn = name not in ("abs", "neg", "sign", "floor", "ceil", "round", "trunc", "bitwise_not", "relu", "square", "isnan",
                                    "isinf", "isfinite", "logical_not", "leaky_relu", "hardtanh", "elu", "silu", "gelu", "gelu_tanh",
                                    "hardsigmoid", "hardswish", "softplus", "mish")
            if name in ("isnan", "isinf", "isfinite", "logical_not"):
                odt = "bool"
                ref = ref_unary(name, x, args)
            elif dt in INTS or dt == "bool":
                odt = "float32" if float_fn else dt
                ir = int_result(name, x)
                ref = ir if ir is not None else ref_unary(name, x, args)
            else:
                odt = dt
                # the reference from the input's exact values, rounded once to the output dtype
                ref = ref_unary(name, x, args)
            if odt in TOL and odt != "float64":
                ref = round_to(ref, odt) if odt in ("float16", "bfloat16") else ref

            def fn(tg, x=x, name=name, args=args):
                o = out()
                if args:
                    call("tile_op_unary_args", b(tg), b(name), C.byref(tt(x)), (C.c_double * 3)(*args), len(args), C.byref(o))
                else:
                    call("tile_op_unary", b(tg), b(name), C.byref(tt(x)), C.byref(o))
                return to_np(o)

            R.check(name, "%s %s" % (dt, shape), fn, ref, odt, di)
    # clamp with scalar bounds (promotion with the bounds)
    if R.want("clamp"):
        for di, (dt, lo, hi) in enumerate([("float32", -0.5, 0.7), ("int32", -3, 4), ("int16", -2, None), ("float16", None, 0.25),
                                           ("bfloat16", -1.0, 1.0), ("float64", -0.3, 0.3), ("int64", 0.5, None), ("uint8", 2, 6), ("int8", -1, 1)]):
            x = rand((5, 7), dt)
            rt = dt
            for s in (lo, hi):
                if isinstance(s, float) and dt in INTS:
                    rt = "float32"
            r = f64(x)
            if lo is not None:
                r = np.maximum(r, lo)
            if hi is not None:
                r = np.minimum(r, hi)

            def fn(tg, x=x, lo=lo, hi=hi):
                o = out()
                call("tile_op_clamp", b(tg), C.byref(tt(x)), C.byref(scalar(lo)) if lo is not None else None,
                     C.byref(scalar(hi)) if hi is not None else None, C.byref(o))
                return to_np(o)

            R.check("clamp", "%s [%s, %s]" % (dt, lo, hi), fn, r if rt in TOL else r.astype(NP[rt]), rt, di)


BIN_SHAPES = [((3, 5, 7), (5, 7)), ((37,), (37,)), ((4, 1, 6), (1, 5, 1)), ((2, 3, 4, 5, 2), (3, 1, 5, 1)), ((0, 3), (3,)), ((1,), (6, 1)),
              ((7, 130), (7, 1))]


def binary_cases(R, ops):
    for name, fam, mask in ops:
        if fam != "binary" or not R.want(name):
            continue
        dts = [d for d in dtypes_of(mask) if d in ALL]
        for di, dt in enumerate(dts):
            sa, sb = BIN_SHAPES[di % len(BIN_SHAPES)]
            a = rand(sa, dt)
            bb = rand(sb, dt)
            if name in ("div_floor", "div_trunc", "remainder", "fmod") and (dt in INTS):
                bb = np.where(bb == 0, 3, bb).astype(bb.dtype)
            if name == "pow":
                if dt in FLOATS:
                    a = np.abs(a).astype(a.dtype) + NP[dt](0.25)
                else:
                    bb = (np.abs(bb.astype(np.int64)) % 4).astype(bb.dtype)
            odt, rt = bin_result(name, dt, dt)
            ref = ref_binary(name, a, bb, rt)
            if odt in ("float16", "bfloat16"):
                ref = round_to(ref, odt)
            if name in ("div_floor", "remainder") and dt in FLOATS:
                # floor and modulo are discontinuous: compare against the reference computed
                # from the operands as rounded (exact in f64), tolerance by the output dtype
                pass

            def fn(tg, a=a, bb=bb, name=name):
                o = out()
                call("tile_op_binary", b(tg), b(name), C.byref(tt(a)), C.byref(tt(bb)), C.byref(o))
                return to_np(o)

            R.check(name, "%s %s %s" % (dt, sa, sb), fn, ref, odt, di)
    # mixed dtypes and Python scalars (type promotion)
    mixed = [("add", "int32", "float16"), ("mul", "uint8", "int8"), ("sub", "bfloat16", "float16"), ("lt", "int64", "float32"),
             ("maximum", "bool", "int16"), ("div", "int32", "int64"), ("bitwise_or", "bool", "uint8")]
    for i, (name, da, db) in enumerate(mixed):
        if not R.want(name):
            continue
        a, bb = rand((4, 9), da), rand((9,), db)
        odt, rt = bin_result(name, da, db)
        ref = ref_binary(name, a, bb, rt)
        if odt in ("float16", "bfloat16"):
            ref = round_to(ref, odt)

        def fn(tg, a=a, bb=bb, name=name):
            o = out()
            call("tile_op_binary", b(tg), b(name), C.byref(tt(a)), C.byref(tt(bb)), C.byref(o))
            return to_np(o)

        R.check(name, "mixed %s %s" % (da, db), fn, ref, odt, 1)
    scal = [("mul", "float16", 0.1, False, "float16"), ("add", "int32", 2.5, False, "float32"), ("add", "int8", 3, False, "int8"),
            ("pow", "float32", 2, True, "float32"), ("remainder", "int32", 7, True, "int32"), ("gt", "float32", 0.0, False, "bool"),
            ("sub", "bfloat16", 1, True, "bfloat16"), ("div", "int16", 4, False, "float32")]
    for i, (name, dt, s, first, odt) in enumerate(scal):
        if not R.want(name):
            continue
        a = rand((3, 11), dt)
        if name == "remainder":
            a = np.where(a == 0, 5, a).astype(a.dtype)
        if name == "pow":
            a = np.abs(a).astype(a.dtype)
        sv = np.full((), s, np.float64)
        rt = odt if odt != "bool" else dt
        ref = ref_binary(name, sv if first else a, a if first else sv, rt)
        if odt in ("float16", "bfloat16"):
            ref = round_to(ref, odt)

        def fn(tg, a=a, s=s, first=first, name=name):
            o = out()
            call("tile_op_binary_scalar", b(tg), b(name), C.byref(tt(a)), scalar(s), int(first), C.byref(o))
            return to_np(o)

        R.check(name, "scalar %s %r first=%s" % (dt, s, first), fn, ref, odt, 1)
    if R.want("add"):
        a, bb = rand((6, 5), "float32"), rand((6, 5), "float32")

        def fn(tg, a=a, bb=bb):
            o = out()
            call("tile_op_add", b(tg), C.byref(tt(a)), C.byref(tt(bb)), scalar(-2.5), C.byref(o))
            return to_np(o)

        R.check("add", "alpha=-2.5", fn, f64(a) - 2.5 * f64(bb), "float32", 0)


def ternary_cases(R):
    if R.want("where"):
        for k, (dt, sc, sa, sb) in enumerate([("float32", (4, 1, 6), (5, 1), (6,)), ("int64", (9,), (9,), (1,)), ("bfloat16", (2, 3), (2, 3), (2, 3)),
                                              ("bool", (0, 2), (2,), (1, 2)), ("uint8", (3, 1), (1, 4), (3, 4))]):
            cnd, a, bb = rand(sc, "bool"), rand(sa, dt), rand(sb, dt)
            ref = np.where(cnd, a, bb)

            def fn(tg, cnd=cnd, a=a, bb=bb):
                o = out()
                call("tile_op_where", b(tg), C.byref(tt(cnd)), C.byref(tt(a)), C.byref(tt(bb)), C.byref(o))
                return to_np(o)

            R.check("where", "%s %s %s %s" % (dt, sc, sa, sb), fn, ref, dt, k)
    if R.want("clamp_tensor"):
        for k, dt in enumerate(["float32", "int32", "float16"]):
            x, lo, hi = rand((4, 7), dt), rand((7,), dt), rand((4, 1), dt)
            ref = np.minimum(np.maximum(f64(x), f64(lo)), f64(hi))

            def fn(tg, x=x, lo=lo, hi=hi):
                o = out()
                call("tile_op_clamp_tensor", b(tg), C.byref(tt(x)), C.byref(tt(lo)), C.byref(tt(hi)), C.byref(o))
                return to_np(o)

            R.check("clamp_tensor", dt, fn, ref if dt in TOL else ref.astype(NP[dt]), dt, k)


def reduce_cases(R, ops):
    plans = [((3, 5, 7), [1]), ((37,), []), ((4, 6, 5), [0, 2]), ((2, 3, 4, 5), [1, 3]), ((6, 1), [1]), ((0, 3), [1]), ((3, 20000), [1]),
             ((5, 4), [0])]
    for name, fam, mask in ops:
        if fam != "reduce" or not R.want(name):
            continue
        for di, dt in enumerate([d for d in dtypes_of(mask) if d in ALL]):
            shape, dims = plans[di % len(plans)]
            keep = di % 2 == 1
            x = rand(shape, dt)
            if name == "prod":
                x = rand(shape, dt, 0.7, 1.3) if dt in FLOATS else RNG.integers(-1, 2, shape).astype(NP[dt])
                if dt == "bool":
                    x = rand(shape, "bool")
            ax = tuple(dims) if dims else None
            fx = f64(x)
            with np.errstate(all="ignore"):
                if name == "sum":
                    ref, odt = fx.sum(axis=ax, keepdims=keep), ("int64" if dt in INTS or dt == "bool" else dt)
                elif name == "prod":
                    ref, odt = fx.prod(axis=ax, keepdims=keep), ("int64" if dt in INTS or dt == "bool" else dt)
                elif name == "mean":
                    ref, odt = fx.mean(axis=ax, keepdims=keep), dt
                elif name == "amax":
                    ref, odt = (fx.max(axis=ax, keepdims=keep) if x.size else None), dt
                elif name == "amin":
                    ref, odt = (fx.min(axis=ax, keepdims=keep) if x.size else None), dt
                elif name == "any":
                    ref, odt = (fx != 0).any(axis=ax, keepdims=keep), "bool"
                elif name == "all":
                    ref, odt = (fx != 0).all(axis=ax, keepdims=keep), "bool"
                elif name in ("var", "std"):
                    ref, odt = fx.var(axis=ax, keepdims=keep, ddof=1), dt
                    if name == "std":
                        ref = np.sqrt(ref)
            if ref is None:
                continue
            if odt in INTS or odt == "bool":
                ref = np.asarray(ref).astype(NP[odt])
            elif odt in ("float16", "bfloat16"):
                ref = round_to(ref, odt)

            def fn(tg, x=x, dims=dims, keep=keep, name=name):
                o = out()
                if name in ("var", "std"):
                    call("tile_op_var", b(tg), b(name), C.byref(tt(x)), ip(dims), len(dims), C.c_double(1.0), int(keep), C.byref(o))
                else:
                    call("tile_op_reduce", b(tg), b(name), C.byref(tt(x)), ip(dims), len(dims), int(keep), C.byref(o))
                return to_np(o)

            R.check(name, "%s %s dims=%s keep=%s" % (dt, shape, dims, keep), fn, np.asarray(ref), odt, di)
    for name in ("argmax", "argmin"):
        if not R.want(name):
            continue
        for di, (dt, shape, dim) in enumerate([("float32", (5, 7), 1), ("int32", (4, 6, 3), 0), ("bfloat16", (37,), None), ("float64", (3, 9000), 1),
                                               ("uint8", (2, 5), -1), ("int8", (6,), 0), ("int16", (3, 4), 0), ("int64", (2, 3), 1), ("float16", (4, 5), 1)]):
            x = rand(shape, dt)
            fx = f64(x)
            ref = (np.argmax if name == "argmax" else np.argmin)(fx, axis=dim)

            def fn(tg, x=x, dim=dim, name=name):
                o = out()
                call("tile_op_argmax", b(tg), b(name), C.byref(tt(x)), -1000 if dim is None else dim, 0, C.byref(o))
                return to_np(o)

            R.check(name, "%s %s dim=%s" % (dt, shape, dim), fn, np.asarray(ref).astype(np.int64), "int64", di)
            if dim is not None and di < 3:
                vref = (np.max if name == "argmax" else np.min)(fx, axis=dim)

                def fn2(tg, x=x, dim=dim, name=name):
                    v, i = out(), out()
                    call("tile_op_max_dim", b(tg), b("max" if name == "argmax" else "min"), C.byref(tt(x)), dim, 1, C.byref(v), C.byref(i))
                    return to_np(v), to_np(i)

                R.check(name, "max_dim %s %s" % (dt, shape), fn2, (np.expand_dims(vref, dim).astype(NP[dt]),
                                                                  np.expand_dims(np.asarray(ref), dim).astype(np.int64)), (dt, "int64"), di)


def scan_cases(R, ops):
    for name, fam, mask in ops:
        if fam != "scan" or not R.want(name):
            continue
        for di, dt in enumerate([d for d in dtypes_of(mask) if d in ALL]):
            shape, dim = [((5, 7), 1), ((40,), 0), ((3, 4, 5), 1), ((0, 3), 1), ((4, 3), 0)][di % 5]
            x = rand(shape, dt) if name == "cumsum" else (rand(shape, dt, 0.8, 1.2) if dt in FLOATS else RNG.integers(-1, 2, shape).astype(NP[dt]) if dt != "bool" else rand(shape, "bool"))
            fx = f64(x)
            ref = (np.cumsum if name == "cumsum" else np.cumprod)(fx, axis=dim)
            odt = "int64" if dt in INTS or dt == "bool" else dt
            if odt == "int64":
                ref = ref.astype(np.int64)

            def fn(tg, x=x, dim=dim, name=name):
                o = out()
                call("tile_op_cumsum", b(tg), b(name), C.byref(tt(x)), dim, C.byref(o))
                return to_np(o)

            R.check(name, "%s %s dim=%d" % (dt, shape, dim), fn, ref, odt, di)


COPY_DTS = ["float32", "int64", "bfloat16", "bool", "uint8", "float16", "int8", "int16", "int32", "float64", "float8_e4m3", "float8_e5m2"]


def copy_cases(R):
    def run(name, what, k, fn, ref, dt):
        R.check(name, what, fn, ref, dt, k)

    for k, dt in enumerate(COPY_DTS):
        x = rand((3, 4, 5, 2), dt if "float8" not in dt else "float32").astype(NP[dt])
        xe = rand((0, 3), dt if "float8" not in dt else "float32").astype(NP[dt])
        if R.want("permute"):
            run("permute", dt, k, lambda tg, x=x: _perm(tg, x, [2, 0, 3, 1]), np.transpose(x, [2, 0, 3, 1]), dt)
        if R.want("transpose"):
            run("transpose", dt, k, lambda tg, x=x: _call1("tile_op_transpose", tg, x, 1, -1), np.swapaxes(x, 1, -1), dt)
        if R.want("copy"):
            run("copy", dt, k, lambda tg, x=xe if k % 3 == 2 else x: _call1("tile_op_copy", tg, x), xe if k % 3 == 2 else x, dt)
        if R.want("reshape"):
            run("reshape", dt, k, lambda tg, x=x: _shape("tile_op_reshape", tg, x, [6, -1]), x.reshape(6, -1), dt)
        if R.want("expand"):
            y = x[:, :1]
            run("expand", dt, k, lambda tg, y=y: _shape("tile_op_expand", tg, y, [2, 3, 7, 5, 2]), np.broadcast_to(y, (2, 3, 7, 5, 2)), dt)
        if R.want("slice"):
            run("slice", dt, k, lambda tg, x=x: _call1("tile_op_slice", tg, x, 2, 1, 100, 2), x[:, :, 1::2], dt)
        if R.want("select"):
            run("select", dt, k, lambda tg, x=x: _call1("tile_op_select", tg, x, 1, -1), x[:, -1], dt)
        if R.want("flip"):
            run("flip", dt, k, lambda tg, x=x: _flip(tg, x, [0, 2]), x[::-1, :, ::-1], dt)
        if R.want("repeat"):
            y = x[0, :2, :3, 0]
            run("repeat", dt, k, lambda tg, y=y: _shape("tile_op_repeat", tg, y, [2, 3, 1]), np.tile(y, (2, 3, 1)), dt)
        if R.want("diagonal"):
            run("diagonal", dt, k, lambda tg, x=x: _call1("tile_op_diagonal", tg, x, 1, 1, 2), np.diagonal(x, 1, 1, 2), dt)
        if R.want("as_strided"):
            flat = x.reshape(-1)
            ref = flat[3 + 5 * np.arange(4)[:, None] + 2 * np.arange(3)[None, :]]
            run("as_strided", dt, k, lambda tg, x=x: _as_strided(tg, x, [4, 3], [5, 2], 3), ref, dt)
        if R.want("cat"):
            y = rand((3, 2, 5, 2), "float32").astype(NP[dt])
            run("cat", dt, k, lambda tg, x=x, y=y: _cat("tile_op_cat", tg, [x, y, x], 1), np.concatenate([x, y, x], 1), dt)
        if R.want("stack"):
            run("stack", dt, k, lambda tg, x=x: _cat("tile_op_stack", tg, [x, x], 2), np.stack([x, x], 2), dt)
        if R.want("split"):
            run("split", dt, k, lambda tg, x=x: _split(tg, x, [1, 3, 1], 2), tuple(np.split(x, [1, 4], 2)), (dt, dt, dt))
        if R.want("pad"):
            y = x[0, :, :, 0]
            ref = np.pad(y, ((2, 1), (0, 0)), constant_values=1.5 if dt not in INTS and dt != "bool" else 1)[:, 1:]
            run("pad", dt, k, lambda tg, y=y: _pad(tg, y, [-1, 0, 2, 1], 1.5 if dt not in INTS and dt != "bool" else 1), ref, dt)
        if R.want("slice_scatter"):
            src = rand((3, 4, 2, 2), "float32").astype(NP[dt])
            ref = x.copy()
            ref[:, :, 1:5:2] = src
            run("slice_scatter", dt, k, lambda tg, x=x, src=src: _scat("tile_op_slice_scatter", tg, x, src, 2, 1, 5, 2), ref, dt)
        if R.want("select_scatter"):
            src = rand((3, 5, 2), "float32").astype(NP[dt])
            ref = x.copy()
            ref[:, 2] = src
            run("select_scatter", dt, k, lambda tg, x=x, src=src: _scat("tile_op_select_scatter", tg, x, src, 1, 2), ref, dt)
        if R.want("cast"):
            to = COPY_DTS[(k + 3) % len(COPY_DTS)]
            xs = rand((7, 13), "float32", -3, 3)
            if to in INTS or to == "bool" or dt in INTS or dt == "bool":
                xs = np.trunc(xs)
            xs = xs.astype(NP[dt])
            ref = f64(xs)
            if to in INTS:
                ref = np.trunc(ref).astype(NP[to])
            elif to == "bool":
                ref = ref != 0
            else:
                ref = ref.astype(NP[to])
            run("cast", "%s->%s" % (dt, to), k, lambda tg, xs=xs, to=to: _cast(tg, xs, to), ref, to)
    if R.want("fill"):
        for k, (dt, v) in enumerate([("float32", 2.5), ("int64", -7), ("bool", True), ("bfloat16", -1.25), ("uint8", 200), ("float16", 0.1),
                                     ("int8", -3), ("int16", 300), ("int32", 5), ("float64", math.pi)]):
            def fn(tg, dt=dt, v=v):
                o = out()
                o.dtype = DT[dt]
                o.rank = 2
                o.shape[0], o.shape[1] = 3, 129
                call("tile_op_fill", b(tg), scalar(v), C.byref(o))
                return to_np(o)

            R.check("fill", "%s %r" % (dt, v), fn, np.full((3, 129), v, np.float64) if dt in TOL else np.full((3, 129), v).astype(NP[dt]), dt, k)
    if R.want("arange"):
        for k, (s, e, st, dt) in enumerate([(0, 10, 3, "int64"), (1.5, -2.0, -0.25, "float32"), (2, 300, 7, "int32"), (0.0, 1.0, 0.1, "float64"),
                                            (0, 0, 1, "int64"), (-3, 5, 2, "int8"), (0, 50, 1, "uint8"), (0, 9, 1, "int16"), (0.5, 4.5, 0.5, "float16"),
                                            (0, 8, 2, "bfloat16")]):
            ref = np.arange(s, e, st, dtype=np.float64)

            def fn(tg, s=s, e=e, st=st, dt=dt):
                o = out()
                call("tile_op_arange", b(tg), scalar(s), scalar(e), scalar(st), DT[dt], C.byref(o))
                return to_np(o)

            R.check("arange", "%r..%r by %r %s" % (s, e, st, dt), fn, ref if dt in TOL else ref.astype(NP[dt]), dt, k)


def _call1(fn_name, tg, x, *args):
    o = out()
    call(fn_name, b(tg), C.byref(tt(x)), *args, C.byref(o))
    return to_np(o)


def _perm(tg, x, p):
    return _call1("tile_op_permute", tg, x, ip(p))


def _shape(fn_name, tg, x, s):
    return _call1(fn_name, tg, x, lp(s), len(s))


def _flip(tg, x, dims):
    return _call1("tile_op_flip", tg, x, ip(dims), len(dims))


def _as_strided(tg, x, shape, strides, off):
    return _call1("tile_op_as_strided", tg, x, lp(shape), lp(strides), len(shape), C.c_int64(off))


def _cat(fn_name, tg, xs, dim):
    arr = (Tensor * len(xs))(*[tt(x) for x in xs])
    o = out()
    call(fn_name, b(tg), arr, len(xs), dim, C.byref(o))
    return to_np(o)


def _split(tg, x, sizes, dim):
    outs = (Tensor * len(sizes))()
    call("tile_op_split", b(tg), C.byref(tt(x)), lp(sizes), len(sizes), dim, outs)
    return tuple(to_np(outs[i]) for i in range(len(sizes)))


def _pad(tg, x, pad, v):
    return _call1("tile_op_pad", tg, x, lp(pad), len(pad), scalar(v))


def _scat(fn_name, tg, x, src, *args):
    o = out()
    call(fn_name, b(tg), C.byref(tt(x)), C.byref(tt(src)), *[C.c_int64(a) if i else a for i, a in enumerate(args)], C.byref(o))
    return to_np(o)


def _cast(tg, x, to):
    o = out()
    call("tile_op_cast", b(tg), C.byref(tt(x)), DT[to], C.byref(o))
    return to_np(o)


def index_cases(R):
    for k, dt in enumerate(COPY_DTS[:10]):
        x = rand((5, 7, 3), dt)
        idx = np.array([4, 0, 2, 2, 6], np.int64 if k % 2 else np.int32)
        if R.want("index_select"):
            R.check("index_select", dt, lambda tg, x=x, idx=idx: _idx("tile_op_index_select", tg, x, 1, idx), np.take(x, idx, 1), dt, k)
        if R.want("gather"):
            gi = RNG.integers(0, 7, (4, 9, 3)).astype(np.int64)
            ref = np.take_along_axis(x[:4], gi, 1)
            R.check("gather", dt, lambda tg, x=x, gi=gi: _idx("tile_op_gather", tg, x, 1, gi), ref, dt, k)
        if R.want("embedding"):
            w = rand((11, 6), dt)
            ii = RNG.integers(0, 11, (2, 5)).astype(np.int64)
            R.check("embedding", dt, lambda tg, w=w, ii=ii: _emb(tg, w, ii), w[ii], dt, k)
        if R.want("scatter") and dt != "bool":
            xi = rand((4, 6), dt)
            si = np.stack([RNG.permutation(6)[:3] for _ in range(4)]).astype(np.int64)
            src = rand((4, 3), dt)
            ref = xi.copy()
            np.put_along_axis(ref, si, src, 1)
            R.check("scatter", dt, lambda tg, xi=xi, si=si, src=src: _scatter(tg, xi, 1, si, src, None), ref, dt, k)
            if dt not in ("bool",):
                di = RNG.integers(0, 6, (4, 5)).astype(np.int64)
                s2 = rand((4, 5), dt)
                ref2 = f64(xi).copy()
                for r in range(4):
                    for j in range(5):
                        ref2[r, di[r, j]] += f64(s2)[r, j]
                if dt in INTS:
                    ref2 = ref2.astype(NP[dt])
                R.check("scatter", "add " + dt, lambda tg, xi=xi, di=di, s2=s2: _scatter(tg, xi, 1, di, s2, "add"), ref2, dt, k)


def more_cases(R):
    """padding modes, embedding backward, batch norm, random numbers"""
    for k, dt in enumerate(["float32", "int32", "bfloat16", "uint8", "float64", "bool", "int64", "float16", "int8", "int16"]):
        x = rand((2, 5, 6), dt)
        for name, mode, pad in (("pad_reflect", "reflect", [2, 3, 1, 4]), ("pad_replicate", "edge", [3, 1, 0, 2])):
            if not R.want(name):
                continue
            ref = np.pad(x, ((0, 0), (pad[2], pad[3]), (pad[0], pad[1])), mode=mode)
            R.check(name, "%s %s" % (dt, pad), lambda tg, x=x, pad=pad, name=name: _call1("tile_op_" + name, tg, x, lp(pad), len(pad)), ref, dt, k)
    if R.want("embedding_backward"):
        for k, dt in enumerate(FLOATS):
            idx = RNG.integers(0, 7, (3, 5)).astype(np.int64)
            g = rand((3, 5, 4), dt)
            ref = np.zeros((7, 4))
            for i, r in zip(idx.reshape(-1), f64(g).reshape(-1, 4)):
                ref[i] += r
            ref[2] = 0
            R.check("embedding_backward", dt, lambda tg, g=g, idx=idx: _embb(tg, g, idx, 7, 2), ref, dt, k)
    if R.want("batch_norm"):
        for k, (dt, training) in enumerate([("float32", 1), ("bfloat16", 0), ("float64", 1), ("float16", 0)]):
            x = rand((3, 4, 5, 2), dt)
            w, bb, rm, rv = rand((4,), "float32"), rand((4,), "float32"), rand((4,), "float32"), rand((4,), "float32", 0.5, 2)
            fx = f64(x)
            if training:
                mu = fx.mean((0, 2, 3))
                var = fx.var((0, 2, 3))
            else:
                mu, var = f64(rm), f64(rv)
            rs = 1 / np.sqrt(var + 1e-5)
            ref = (fx - mu[None, :, None, None]) * (rs * f64(w))[None, :, None, None] + f64(bb)[None, :, None, None]

            def fn(tg, x=x, w=w, bb=bb, rm=rm, rv=rv, training=training):
                o, sm, sr = out(), out(), out()
                call("tile_op_batch_norm", b(tg), C.byref(tt(x)), C.byref(tt(w)), C.byref(tt(bb)), C.byref(tt(rm)), C.byref(tt(rv)), training,
                     C.c_double(1e-5), C.byref(o), C.byref(sm), C.byref(sr))
                return to_np(o), to_np(sm), to_np(sr)

            R.check("batch_norm", "%s training=%d" % (dt, training), fn, (ref, mu, rs), (dt, "float32", "float32"), k)
    # random numbers: the same bits on every target (checked against the interpreter) and
    # the distribution's moments against their exact values (tolerances of 6 standard errors)
    for k, dt in enumerate(FLOATS):
        n = 20000
        for name in ("rand", "randn"):
            if not R.want(name):
                continue

            def fn(tg, dt=dt, name=name):
                o = out()
                o.dtype, o.rank, o.shape[0] = DT[dt], 1, n
                call("tile_op_" + name, b(tg), C.c_int64(11 + k), C.byref(o))
                return to_np(o)

            got = fn("interp")
            m, sd = (0.5, math.sqrt(1 / 12)) if name == "rand" else (0.0, 1.0)
            se = sd / math.sqrt(n)
            ok = abs(f64(got).mean() - m) < 6 * se and abs(f64(got).std() - sd) < 0.03 * sd + 6 * se
            ref = got if ok else np.full(n, np.nan)
            R.check(name, "%s moments (mean %.4f, std %.4f)" % (dt, f64(got).mean(), f64(got).std()), fn, ref, dt, k)
        if R.want("dropout"):
            x = rand((50, 41), dt)

            def fnd(tg, x=x):
                o, mk = out(), out()
                call("tile_op_dropout", b(tg), C.byref(tt(x)), C.c_double(0.3), C.c_int64(5), C.byref(o), C.byref(mk))
                return to_np(o), to_np(mk)

            o0, m0 = fnd("interp")
            frac = m0.mean()
            ref = f64(x) * m0 / 0.7
            se = math.sqrt(0.21 / m0.size)
            R.check("dropout", "%s keep fraction %.3f" % (dt, frac), fnd, (ref, m0 if abs(frac - 0.7) < 6 * se else ~m0), (dt, "bool"), k)


def _embb(tg, g, idx, n, pad):
    o = out()
    call("tile_op_embedding_backward", b(tg), C.byref(tt(g)), C.byref(tt(idx)), C.c_int64(n), C.c_int64(pad), C.byref(o))
    return to_np(o)


def _idx(fn_name, tg, x, dim, idx):
    o = out()
    call(fn_name, b(tg), C.byref(tt(x)), dim, C.byref(tt(idx)), C.byref(o))
    return to_np(o)


def _emb(tg, w, ii):
    o = out()
    call("tile_op_embedding", b(tg), C.byref(tt(w)), C.byref(tt(ii)), C.byref(o))
    return to_np(o)


def _scatter(tg, x, dim, idx, src, reduce):
    o = out()
    call("tile_op_scatter", b(tg), C.byref(tt(x)), dim, C.byref(tt(idx)), C.byref(tt(src)), b(reduce), C.byref(o))
    return to_np(o)


MM = ["float32", "float16", "bfloat16"]


def nn_cases(R):
    for k, dt in enumerate(MM):
        M, N = [(5, 300), (3, 4099), (1, 64)][k]
        x, w, r = rand((M, N), dt), rand((N,), dt), rand((M, N), dt)
        if R.want("rms_norm"):
            h = f64(x) + f64(r)
            h = f64(h.astype(NP[dt]))
            ref = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * f64(w)

            def fn(tg, x=x, w=w, r=r):
                y, ho = out(), out()
                call("tile_op_rms_norm", b(tg), C.byref(tt(x)), C.byref(tt(w)), C.byref(tt(r)), C.c_double(1e-6), C.byref(y), C.byref(ho))
                return to_np(y), to_np(ho)

            R.check("rms_norm", "%s residual [%d, %d]" % (dt, M, N), fn, (ref, h), (dt, dt), k)
            ref2 = f64(x) / np.sqrt((f64(x) ** 2).mean(-1, keepdims=True) + 1e-6) * f64(w)

            def fn2(tg, x=x, w=w):
                y = out()
                call("tile_op_rms_norm", b(tg), C.byref(tt(x)), C.byref(tt(w)), None, C.c_double(1e-6), C.byref(y), None)
                return to_np(y)

            R.check("rms_norm", "%s [%d, %d]" % (dt, M, N), fn2, ref2, dt, k + 1)
        if R.want("layer_norm"):
            bias = rand((N,), dt)
            fx = f64(x)
            mu = fx.mean(-1, keepdims=True)
            rs = 1 / np.sqrt(((fx - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
            ref = (fx - mu) * rs * f64(w) + f64(bias)

            def fn(tg, x=x, w=w, bias=bias):
                y, m, s = out(), out(), out()
                call("tile_op_layer_norm", b(tg), C.byref(tt(x)), C.byref(tt(w)), C.byref(tt(bias)), None, C.c_double(1e-5), C.byref(y), None,
                     C.byref(m), C.byref(s))
                return to_np(y), to_np(m), to_np(s)

            R.check("layer_norm", "%s [%d, %d]" % (dt, M, N), fn, (ref, mu[:, 0], rs[:, 0]), (dt, "float32", "float32"), k)
        if R.want("swiglu") or R.want("geglu") or R.want("geglu_tanh"):
            g, u = rand((M, N), dt), rand((M, N), dt)
            fg, fu = f64(g), f64(u)
            refs = {"swiglu": fg / (1 + np.exp(-fg)) * fu,
                    "geglu": 0.5 * fg * (1 + np.vectorize(math.erf)(fg / math.sqrt(2))) * fu,
                    "geglu_tanh": 0.5 * fg * (1 + np.tanh(math.sqrt(2 / math.pi) * (fg + 0.044715 * fg ** 3))) * fu}
            for name, ref in refs.items():
                if not R.want(name):
                    continue

                def fn(tg, g=g, u=u, name=name):
                    o = out()
                    call("tile_op_glu", b(tg), b(name), C.byref(tt(g)), C.byref(tt(u)), C.byref(o))
                    return to_np(o)

                R.check(name, "%s two tensors" % dt, fn, ref, dt, k)
                gu = np.concatenate([g, u], -1)

                def fn2(tg, gu=gu, name=name):
                    o = out()
                    call("tile_op_glu", b(tg), b(name), C.byref(tt(gu)), None, C.byref(o))
                    return to_np(o)

                R.check(name, "%s fused halves" % dt, fn2, ref, dt, k + 1)
    for k, dt in enumerate(FLOATS):
        for name in ("softmax", "log_softmax"):
            if not R.want(name):
                continue
            shape, dim = [((4, 1000), -1), ((3, 5, 7), 1), ((2, 3000), 1), ((1, 1), 0)][k]
            x = rand(shape, dt, -4, 4)
            fx = f64(x)
            e = np.exp(fx - fx.max(dim, keepdims=True))
            ref = e / e.sum(dim, keepdims=True)
            if name == "log_softmax":
                ref = np.log(ref)

            def fn(tg, x=x, dim=dim, name=name):
                o = out()
                call("tile_op_" + name, b(tg), C.byref(tt(x)), dim, C.byref(o))
                return to_np(o)

            R.check(name, "%s %s dim=%d" % (dt, shape, dim), fn, ref, dt, k)
    if R.want("rope"):
        for k, (dt, shape, inter, pos) in enumerate([("float32", (5, 3, 8), 0, False), ("bfloat16", (4, 2, 16), 1, True), ("float16", (3, 6), 0, True),
                                                     ("float64", (2, 1, 4), 1, False)]):
            x = rand(shape, dt)
            D = shape[-1]
            P = 9
            ang = np.arange(P)[:, None] * (10000.0 ** (-np.arange(D // 2) / (D // 2)))[None, :]
            cs, sn = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
            p = RNG.integers(0, P, shape[0]).astype(np.int64) if pos else np.arange(shape[0])
            fx = f64(x).reshape(shape[0], -1, D)
            c, s = f64(cs)[p][:, None, :], f64(sn)[p][:, None, :]
            if inter:
                x0, x1 = fx[..., 0::2], fx[..., 1::2]
                y = np.empty_like(fx)
                y[..., 0::2], y[..., 1::2] = x0 * c - x1 * s, x0 * s + x1 * c
            else:
                x0, x1 = fx[..., :D // 2], fx[..., D // 2:]
                y = np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c], -1)
            ref = y.reshape(shape)

            def fn(tg, x=x, cs=cs, sn=sn, p=p, pos=pos, inter=inter):
                o = out()
                call("tile_op_rope", b(tg), C.byref(tt(x)), C.byref(tt(cs)), C.byref(tt(sn)), C.byref(tt(p)) if pos else None, inter, C.byref(o))
                return to_np(o)

            R.check("rope", "%s %s interleaved=%d positions=%s" % (dt, shape, inter, pos), fn, ref, dt, k)
    if R.want("cross_entropy") or R.want("cross_entropy_backward"):
        for k, (dt, N, V, red) in enumerate([("float32", 6, 3001, "mean"), ("bfloat16", 4, 700, "none"), ("float16", 3, 50, "sum"), ("float64", 5, 1030, "mean")]):
            x = rand((N, V), dt, -3, 3)
            t = RNG.integers(0, V, N).astype(np.int64)
            t[1] = -100
            fx = f64(x)
            lse = np.log(np.exp(fx - fx.max(1, keepdims=True)).sum(1)) + fx.max(1)
            loss = np.where(t == -100, 0.0, lse - fx[np.arange(N), np.maximum(t, 0)])
            valid = (t != -100).sum()
            ref = loss if red == "none" else np.array(loss.sum() / (valid if red == "mean" else 1))

            def fn(tg, x=x, t=t, red=red):
                o, l = out(), out()
                call("tile_op_cross_entropy", b(tg), C.byref(tt(x)), C.byref(tt(t)), C.c_int64(-100), b(red), C.byref(o), C.byref(l))
                return to_np(o), to_np(l)

            R.check("cross_entropy", "%s [%d, %d] %s" % (dt, N, V, red), fn, (ref, lse), ("float32", "float32"), k)
            g = rand((N,), "float32") if red == "none" else np.array(0.7, np.float32)
            p = np.exp(fx - lse[:, None])
            onehot = np.zeros_like(p)
            onehot[np.arange(N), np.maximum(t, 0)] = 1
            gr = f64(g) if red == "none" else np.full(N, float(g) / (valid if red == "mean" else 1))
            gr = np.where(t == -100, 0.0, gr)
            lse32 = lse.astype(np.float32)
            # the gradient from the float32 lse the forward returned (what the kernel is given)
            p = np.exp(fx - f64(lse32)[:, None])
            dref = gr[:, None] * (p - onehot)

            def fnb(tg, x=x, t=t, red=red, g=g, lse32=lse32):
                o = out()
                call("tile_op_cross_entropy_backward", b(tg), C.byref(tt(x)), C.byref(tt(t)), C.byref(tt(lse32)), C.byref(tt(g)), C.c_int64(-100),
                     b(red), C.byref(o))
                return to_np(o)

            R.check("cross_entropy_backward", "%s [%d, %d] %s" % (dt, N, V, red), fnb, dref, dt, k)
    if R.want("quantize_fp8") or R.want("dequantize_fp8"):
        for k, (dt, q, blk, shape) in enumerate([("float32", "float8_e4m3", 128, (5, 300)), ("bfloat16", "float8_e5m2", 0, (3, 260)),
                                                 ("float16", "float8_e4m3", 0, (4, 128)), ("float32", "float8_e5m2", 128, (2, 129))]):
            x = rand(shape, dt, -5, 5)
            x[0, :] = 0
            fx = f64(x)
            fmax = 448.0 if q == "float8_e4m3" else 57344.0
            if blk:
                nb = (shape[1] + 127) // 128
                pad = np.zeros((shape[0], nb * 128))
                pad[:, :shape[1]] = np.abs(fx)
                amax = pad.reshape(shape[0], nb, 128).max(-1)
            else:
                amax = np.abs(fx).max(-1)
            scale = np.where(amax == 0, 1.0, amax / fmax).astype(np.float32)
            sfull = np.repeat(scale, 128, 1)[:, :shape[1]] if blk else scale[:, None]
            qref = (fx / f64(sfull)).astype(NP[q])

            def fn(tg, x=x, q=q, blk=blk):
                qo, so = out(), out()
                call("tile_op_quantize_fp8", b(tg), C.byref(tt(x)), DT[q], blk, C.byref(qo), C.byref(so))
                return to_np(qo), to_np(so)

            R.check("quantize_fp8", "%s -> %s block %d %s" % (dt, q, blk, shape), fn, (qref, scale), (q, "float32"), k)
            dref = f64(qref) * f64(sfull)

            def fnd(tg, qref=qref, scale=scale, blk=blk, dt=dt):
                o = out()
                call("tile_op_dequantize_fp8", b(tg), C.byref(tt(qref)), C.byref(tt(scale)), blk, DT[dt], C.byref(o))
                return to_np(o)

            R.check("dequantize_fp8", "%s block %d" % (q, blk), fnd, dref, dt, k)
    if R.want("gemm"):
        cases = [("float32", 70, 45, 33, 0, 0, "none", None, 1), ("float16", 64, 96, 40, 0, 1, "relu", "row", 1), ("bfloat16", 33, 17, 130, 1, 0, "gelu", "full", 2),
                 ("float32", 5, 130, 7, 1, 1, "silu", "row", 1), ("float16", 3, 20, 9, 0, 0, "gelu_tanh", None, 1)]
        for k, (dt, M, N, K, ta, tb, act, bias, batch) in enumerate(cases):
            a = rand((batch, K, M) if ta else (batch, M, K), dt, -1, 1)
            bb = rand((N, K) if tb else (K, N), dt, -1, 1)
            bi = rand((N,), dt) if bias == "row" else rand((M, N), dt) if bias == "full" else None
            fa = f64(a).transpose(0, 2, 1) if ta else f64(a)
            fb = f64(bb).T if tb else f64(bb)
            acc = 0.5 * (fa @ fb) + (0 if bi is None else 2.0 * f64(bi))
            ref = {"none": acc, "relu": np.maximum(acc, 0), "silu": acc / (1 + np.exp(-acc)),
                   "gelu": 0.5 * acc * (1 + np.vectorize(math.erf)(acc / math.sqrt(2))),
                   "gelu_tanh": 0.5 * acc * (1 + np.tanh(math.sqrt(2 / math.pi) * (acc + 0.044715 * acc ** 3)))}[act]
            if batch == 1:
                a, ref = a[0], ref[0]

            def fn(tg, a=a, bb=bb, bi=bi, ta=ta, tb=tb, act=act):
                o = out()
                opts = GemmOpts(ta, tb, b(act), 0.5, 2.0, -1)
                call("tile_op_gemm", b(tg), C.byref(tt(a)), C.byref(tt(bb)), C.byref(tt(bi)) if bi is not None else None, C.byref(opts), C.byref(o))
                return to_np(o)

            R.check("gemm", "%s M%d N%d K%d ta%d tb%d %s bias=%s batch=%d" % (dt, M, N, K, ta, tb, act, bias, batch), fn, ref, dt, k)


# ---------------------------------------------------------------------------------------
# quantised and grouped GEMM (qgemm.tl, grouped.tl): B stored N x K
def _qscale(kind, rows, K, rb):
    if kind == 0:
        return None
    if kind == 1:
        return RNG.uniform(0.5, 2.0, (1,)).astype(np.float32)
    if kind == 2:
        return RNG.uniform(0.5, 2.0, (rows,)).astype(np.float32)
    return RNG.uniform(0.5, 2.0, ((rows + rb - 1) // rb, (K + 127) // 128)).astype(np.float32)


def _qfull(s, kind, rows, K, rb):
    """a scale operand expanded to [rows, K]"""
    if kind == 0:
        return np.ones((rows, K))
    if kind == 1:
        return np.full((rows, K), f64(s)[0])
    if kind == 2:
        return np.repeat(f64(s)[:, None], K, 1)
    return np.repeat(np.repeat(f64(s), rb, 0), 128, 1)[:rows, :K]


def _ptr(a):
    return C.byref(tt(a)) if a is not None else None


def _e2m1(v):
    """float e2m1 values -> nibbles"""
    tab = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    mag = np.vectorize(lambda x: tab.index(abs(x)))(v)
    return (mag | np.where(np.signbit(v), 8, 0)).astype(np.uint8)


def qgemm_cases(R):
    if R.want("gemm_fp8"):
        cases = [("float8_e4m3", "float8_e4m3", 3, 3, "bfloat16", 37, 131, 300), ("float8_e4m3", "float8_e5m2", 1, 2, "float32", 70, 45, 33),
                 ("float8_e5m2", "float8_e5m2", 2, 1, "float16", 5, 29, 129), ("float8_e4m3", "float8_e4m3", 0, 0, "float32", 1, 7, 128),
                 ("float8_e4m3", "float8_e4m3", 3, 2, "bfloat16", 13, 200, 257), ("float8_e4m3", "float8_e4m3", 1, 3, "float32", 3, 257, 140)]
        for k, (adt, bdt, ka, kb, odt, M, N, K) in enumerate(cases):
            a = rand((M, K), adt, -3, 3)
            bb = rand((N, K), bdt, -3, 3)
            sa, sb = _qscale(ka, M, K, 1), _qscale(kb, N, K, 128)
            ref = (f64(a) * _qfull(sa, ka, M, K, 1)) @ (f64(bb) * _qfull(sb, kb, N, K, 128)).T

            def fn(tg, a=a, bb=bb, sa=sa, sb=sb, odt=odt):
                o = out()
                call("tile_op_gemm_fp8", b(tg), C.byref(tt(a)), _ptr(sa), C.byref(tt(bb)), _ptr(sb), DT[odt], C.byref(o))
                return to_np(o)

            R.check("gemm_fp8", "%s x %s scales %d/%d -> %s M%d N%d K%d" % (adt, bdt, ka, kb, odt, M, N, K), fn, ref, odt, k)
    if R.want("gemm_int8"):
        cases = [(0, 0, "int32", 37, 70, 131), (2, 2, "float32", 5, 129, 64), (1, 2, "bfloat16", 64, 3, 7), (2, 1, "float16", 1, 17, 300)]
        for k, (ka, kb, odt, M, N, K) in enumerate(cases):
            a = RNG.integers(-128, 128, (M, K)).astype(np.int8)
            bb = RNG.integers(-128, 128, (N, K)).astype(np.int8)
            sa, sb = _qscale(ka, M, K, 1), _qscale(kb, N, K, 1)
            if odt == "float16":
                sa = (sa * 1e-3).astype(np.float32)  # within float16's range
            acc = a.astype(np.int64) @ bb.astype(np.int64).T
            ref = acc.astype(np.int32) if odt == "int32" else f64(acc) * _qfull(sa, ka, M, 1, 1) * _qfull(sb, kb, N, 1, 1).T

            def fn(tg, a=a, bb=bb, sa=sa, sb=sb, odt=odt):
                o = out()
                call("tile_op_gemm_int8", b(tg), C.byref(tt(a)), _ptr(sa), C.byref(tt(bb)), _ptr(sb), DT[odt], C.byref(o))
                return to_np(o)

            R.check("gemm_int8", "scales %d/%d -> %s M%d N%d K%d" % (ka, kb, odt, M, N, K), fn, ref, odt, k)
    if R.want("gemm_fp4"):
        tab = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
        cases = [("bfloat16", "mx", 37, 70, 96), ("float16", "nv", 5, 131, 50), ("float32", "mx", 64, 3, 34), ("bfloat16", "nv", 1, 29, 130)]
        for k, (adt, fmt, M, N, K) in enumerate(cases):
            a = rand((M, K), adt, -1, 1)
            w = tab[RNG.integers(0, 8, (N, K))] * np.where(RNG.integers(0, 2, (N, K)) == 1, -1.0, 1.0)
            nib = _e2m1(w)
            packed = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
            bs = 32 if fmt == "mx" else 16
            ks = (K + bs - 1) // bs
            if fmt == "mx":
                sc = RNG.integers(120, 132, (N, ks)).astype(np.uint8)
                sval = 2.0 ** (f64(sc) - 127)
                gs = 1.0
            else:
                sc = RNG.uniform(0.1, 3.0, (N, ks)).astype(NP["float8_e4m3"])
                sval = f64(sc)
                gs = 0.37
            ref = gs * f64(a) @ (w * np.repeat(sval, bs, 1)[:, :K]).T

            def fn(tg, a=a, packed=packed, sc=sc, gs=gs):
                o = out()
                call("tile_op_gemm_fp4", b(tg), C.byref(tt(a)), C.byref(tt(packed)), C.byref(tt(sc)), C.c_double(gs), DT[adt], C.byref(o))
                return to_np(o)

            R.check("gemm_fp4", "%s %s M%d N%d K%d" % (adt, fmt, M, N, K), fn, ref, adt, k)
    if R.want("grouped_gemm"):
        # contiguous, per-row ids (with -1 padding rows) and per-group offsets (an empty group)
        cases = [("bfloat16", "ids", [37, 0, 70, 5], 45, 33), ("float32", "offs", [3, 0, 131], 17, 40), ("float16", "ids", [1], 7, 9),
                 ("float32", "masked", [37, 0, 64], 29, 70), ("bfloat16", "masked", [1, 3], 130, 17),
                 # every group a multiple of the row tile: each tile stored whole by one copy
                 ("float32", "offs", [64, 0, 128], 45, 40), ("bfloat16", "ids", [128, 64], 29, 33)]
        for k, (dt, lay, sizes, N, K) in enumerate(cases):
            G = len(sizes)
            bb = rand((G, N, K), dt, -1, 1)
            if lay == "masked":
                MM = max(sizes) + 3
                a = rand((G, MM, K), dt, -1, 1)
                cnt = np.array(sizes, np.int32)
                ref = np.zeros((G, MM, N))
                for g in range(G):
                    ref[g, :sizes[g]] = f64(a[g, :sizes[g]]) @ f64(bb[g]).T
                args = (None, None, cnt)
            else:
                rows = []
                for g, n in enumerate(sizes):
                    rows += [g] * n
                    if lay == "ids" and g == 0:
                        rows += [-1] * 4
                ids = np.array(rows, np.int32)
                M = len(rows)
                a = rand((M, K), dt, -1, 1)
                ref = np.zeros((M, N))
                for r in range(M):
                    if ids[r] >= 0:
                        ref[r] = f64(a[r]) @ f64(bb[ids[r]]).T
                args = (ids, None, None) if lay == "ids" else (None, np.cumsum(sizes).astype(np.int32), None)

            def fn(tg, a=a, bb=bb, args=args):
                o = out()
                call("tile_op_grouped_gemm", b(tg), C.byref(tt(a)), C.byref(tt(bb)), _ptr(args[0]), _ptr(args[1]), _ptr(args[2]), C.byref(o))
                return to_np(o)

            R.check("grouped_gemm", "%s %s groups %s N%d K%d" % (dt, lay, sizes, N, K), fn, ref, dt, k)


def qgemm_bad_argument_cases(R):
    E = R.expect_error
    e4 = rand((4, 256), "float8_e4m3")
    w4 = rand((6, 256), "float8_e4m3")
    f = lambda *s: RNG.uniform(0.5, 2, s).astype(np.float32)

    def fp8(a, sa, bb, sb, odt="bfloat16"):
        return lambda tg: call("tile_op_gemm_fp8", b(tg), C.byref(tt(a)), _ptr(sa), C.byref(tt(bb)), _ptr(sb), DT[odt], C.byref(out()))

    E("gemm_fp8", "K mismatch", fp8(e4, None, rand((6, 255), "float8_e4m3"), None), "b")
    E("gemm_fp8", "f16 operand", fp8(rand((4, 256), "float16"), None, w4, None), "a")
    E("gemm_fp8", "a_scale shape", fp8(e4, f(4, 3), w4, None), "a_scale")
    E("gemm_fp8", "b_scale shape", fp8(e4, None, w4, f(6, 2)), "b_scale")
    E("gemm_fp8", "a_scale dtype", fp8(e4, np.ones((4,), np.float16), w4, None), "a_scale")
    E("gemm_fp8", "out dtype", fp8(e4, None, w4, None, "int32"), "out_dtype")
    i8 = RNG.integers(-5, 5, (4, 8)).astype(np.int8)
    E("gemm_int8", "block scales", lambda tg: call("tile_op_gemm_int8", b(tg), C.byref(tt(i8)), C.byref(tt(f(4, 1))), C.byref(tt(i8)), None,
                                                   DT["float32"], C.byref(out())), "a_scale")
    E("gemm_int8", "int32 with scales", lambda tg: call("tile_op_gemm_int8", b(tg), C.byref(tt(i8)), C.byref(tt(f(4))), C.byref(tt(i8)), None,
                                                        DT["int32"], C.byref(out())), "out_dtype")
    E("gemm_int8", "uint8 operand", lambda tg: call("tile_op_gemm_int8", b(tg), C.byref(tt(i8.astype(np.uint8))), None, C.byref(tt(i8)), None,
                                                    -1, C.byref(out())), "a")
    a16 = rand((3, 64), "bfloat16")
    pk = np.zeros((5, 32), np.uint8)

    def fp4(bb, sc):
        return lambda tg: call("tile_op_gemm_fp4", b(tg), C.byref(tt(a16)), C.byref(tt(bb)), C.byref(tt(sc)), C.c_double(1.0), -1, C.byref(out()))

    E("gemm_fp4", "packed K", fp4(np.zeros((5, 64), np.uint8), np.zeros((5, 2), np.uint8)), "b")
    E("gemm_fp4", "MX scale shape", fp4(pk, np.zeros((5, 4), np.uint8)), "b_scale")
    E("gemm_fp4", "scale dtype", fp4(pk, np.zeros((5, 2), np.float32)), "b_scale")
    ga = rand((10, 8), "float32")
    gb = rand((3, 5, 8), "float32")

    def gg(a, bb, ids=None, offs=None, mm=None):
        return lambda tg: call("tile_op_grouped_gemm", b(tg), C.byref(tt(a)), C.byref(tt(bb)), _ptr(ids), _ptr(offs), _ptr(mm), C.byref(out()))

    E("grouped_gemm", "no layout", gg(ga, gb), "m_indices, offsets, masked_m")
    E("grouped_gemm", "group id out of range", gg(ga, gb, ids=np.array([0] * 9 + [3], np.int32)), "m_indices")
    E("grouped_gemm", "ids length", gg(ga, gb, ids=np.zeros(9, np.int32)), "m_indices")
    E("grouped_gemm", "offsets decreasing", gg(ga, gb, offs=np.array([4, 2, 10], np.int32)), "offsets")
    E("grouped_gemm", "offsets int64", gg(ga, gb, offs=np.array([4, 6, 10], np.int64)), "offsets")
    E("grouped_gemm", "K mismatch", gg(ga, rand((3, 5, 7), "float32"), ids=np.zeros(10, np.int32)), "b")
    E("grouped_gemm", "masked count", gg(rand((3, 4, 8), "float32"), gb, mm=np.array([1, 5, 0], np.int32)), "masked_m")
    E("grouped_gemm", "masked groups", gg(rand((2, 4, 8), "float32"), gb, mm=np.array([1, 1], np.int32)), "a")


# ---------------------------------------------------------------------------------------
# attention (attn.tl): scaled_dot_product_attention, attention_varlen, attention_decode
class AttnOpts(C.Structure):
    _fields_ = [("is_causal", C.c_int), ("scale", C.c_double), ("window", C.c_int64), ("softcap", C.c_double),
                ("sinks", C.POINTER(Tensor))]


def attn_opts(causal=False, scale=0.0, window=0, softcap=0.0, sinks=None):
    o = AttnOpts(int(causal), scale, window, softcap, None)
    if sinks is not None:
        t = tt(sinks)
        KEEP.append(t)
        o.sinks = C.pointer(t)
    return o


def attn_ref(q, k, v, causal=False, scale=0.0, window=0, softcap=0.0, sinks=None, bottom=False):
    """float64 attention of q [B, Hq, Sq, D] over k, v [B, Hkv, Skv, D] (KV head h // (Hq / Hkv)):
    (out, lse); rows without a visible key give 0 and lse -inf (the sink's logit with a sink)"""
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    kk = np.repeat(f64(k), g, axis=1)
    vv = np.repeat(f64(v), g, axis=1)
    sc = scale if scale else 1.0 / math.sqrt(D)
    z = np.einsum("bhqd,bhkd->bhqk", f64(q), kk) * sc
    if softcap:
        z = softcap * np.tanh(z / softcap)
    i = np.arange(Sq)[:, None]
    j = np.arange(Skv)[None, :]
    off = Skv - Sq if bottom else 0
    vis = np.ones((Sq, Skv), bool)
    if causal:
        vis &= j <= i + off
    if window:
        vis &= j >= i + off - (window - 1)
    z = np.where(vis, z, -np.inf)
    m = z.max(-1) if Skv else np.full((B, Hq, Sq), -np.inf)
    sk = None
    if sinks is not None:
        sk = np.broadcast_to(f64(sinks)[None, :, None], (B, Hq, Sq))
        m = np.maximum(m, sk)
    mu = np.where(np.isinf(m), 0.0, m)
    e = np.exp(z - mu[..., None])
    den = e.sum(-1)
    if sk is not None:
        den = den + np.exp(sk - mu)
    num = np.einsum("bhqk,bhkd->bhqd", e, vv)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den[..., None] > 0, num / np.where(den > 0, den, 1.0)[..., None], 0.0)
        lse = np.where(den > 0, mu + np.log(np.where(den > 0, den, 1.0)), -np.inf)
    return out, lse


def _sdpa(tg, q, k, v, opts, want_lse=True, out_arr=None):
    o = out() if out_arr is None else tt(out_arr)
    lo = out()
    call("tile_op_scaled_dot_product_attention", b(tg), C.byref(tt(q)), C.byref(tt(k)), C.byref(tt(v)), C.byref(opts), C.byref(o),
         C.byref(lo) if want_lse else None)
    return (to_np(o), to_np(lo)) if want_lse else to_np(o)


def _varlen(tg, q, k, v, cq, ck, opts):
    o, lo = out(), out()
    call("tile_op_attention_varlen", b(tg), C.byref(tt(q)), C.byref(tt(k)), C.byref(tt(v)), C.byref(tt(cq)), C.byref(tt(ck)), C.byref(opts),
         C.byref(o), C.byref(lo))
    return to_np(o), to_np(lo)


def _decode(tg, q, kc, vc, bt, sl, opts, splits):
    o, lo = out(), out()
    call("tile_op_attention_decode", b(tg), C.byref(tt(q)), C.byref(tt(kc)), C.byref(tt(vc)), C.byref(tt(bt)), C.byref(tt(sl)), C.byref(opts),
         C.c_int(splits), C.byref(o), C.byref(lo))
    return to_np(o), to_np(lo)


def attn_cases(R):
    if R.want("scaled_dot_product_attention"):
        # (dtype, B, Hq, Hkv, Sq, Skv, D, causal, window, softcap, scale, sinks dtype)
        cases = [("float32", 2, 4, 4, 37, 37, 64, False, 0, 0.0, 0.0, None),
                 ("float16", 1, 6, 2, 65, 130, 32, True, 0, 0.0, 0.0, None),           # GQA, Sq < Skv, top-left causal
                 ("bfloat16", 2, 3, 1, 1, 70, 40, True, 0, 0.0, 0.0, None),            # MQA, one query, odd head dim
                 ("float32", 1, 2, 2, 129, 67, 16, True, 17, 0.0, 0.0, None),          # Sq > Skv: rows with no key
                 ("bfloat16", 2, 8, 2, 50, 50, 64, False, 0, 0.0, 0.0, "float32"),     # sinks
                 ("float16", 1, 2, 1, 33, 33, 128, False, 0, 5.0, 0.3, None),          # softcap, explicit scale
                 ("float16", 1, 4, 2, 100, 100, 64, True, 20, 0.0, 0.0, "float16"),    # causal sliding window, sinks
                 ("float32", 1, 3, 3, 7, 5, 8, False, 3, 2.0, 0.0, "float32"),          # window without causal, all options
                 ("float32", 1, 1, 1, 5, 0, 8, False, 0, 0.0, 0.0, None),               # Skv = 0
                 ("float16", 1, 2, 2, 5, 0, 8, False, 0, 0.0, 0.0, "float32"),          # Skv = 0 with sinks
                 ("bfloat16", 0, 2, 1, 4, 4, 16, False, 0, 0.0, 0.0, None)]             # empty batch
        for k_, (dt, B, Hq, Hkv, Sq, Skv, D, causal, win, cap, scale, sdt) in enumerate(cases):
            q = rand((B, Hq, Sq, D), dt, -1.5, 1.5)
            k = rand((B, Hkv, Skv, D), dt, -1.5, 1.5)
            v = rand((B, Hkv, Skv, D), dt)
            sinks = rand((Hq,), sdt, -1, 2) if sdt else None
            ro, rl = attn_ref(q, k, v, causal, scale, win, cap, sinks)
            opts = attn_opts(causal, scale, win, cap, sinks)
            what = "%s B%d Hq%d Hkv%d Sq%d Skv%d D%d causal=%d window=%d softcap=%g scale=%g sinks=%s" % (
                dt, B, Hq, Hkv, Sq, Skv, D, causal, win, cap, scale, sdt)
            R.check("scaled_dot_product_attention", what, lambda tg, q=q, k=k, v=v, opts=opts: _sdpa(tg, q, k, v, opts), (round_to(ro, dt), rl),
                    (dt, "float32"), k_)
    if R.want("attention_varlen"):
        # (dtype, Hq, Hkv, D, q lengths, k lengths, causal, window, softcap, sinks)
        cases = [("float16", 4, 2, 64, [5, 0, 64, 1, 70], [5, 3, 64, 9, 70], True, 0, 0.0, None),
                 ("float32", 3, 3, 24, [17, 33], [40, 2], False, 0, 0.0, None),
                 ("bfloat16", 2, 1, 32, [9, 80, 3], [9, 80, 3], True, 16, 0.0, "float32"),
                 ("float32", 2, 2, 16, [6, 7], [13, 0], False, 0, 3.0, None)]
        for k_, (dt, Hq, Hkv, D, lq, lk, causal, win, cap, sdt) in enumerate(cases):
            cq = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
            ck = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
            q = rand((int(cq[-1]), Hq, D), dt, -1.5, 1.5)
            k = rand((int(ck[-1]), Hkv, D), dt, -1.5, 1.5)
            v = rand((int(ck[-1]), Hkv, D), dt)
            sinks = rand((Hq,), sdt, -1, 2) if sdt else None
            ro = np.zeros(q.shape)
            rl = np.zeros((Hq, q.shape[0]))
            for s in range(len(lq)):
                qs, ks = slice(cq[s], cq[s + 1]), slice(ck[s], ck[s + 1])
                o1, l1 = attn_ref(q[qs].transpose(1, 0, 2)[None], k[ks].transpose(1, 0, 2)[None], v[ks].transpose(1, 0, 2)[None], causal, 0.0,
                                  win, cap, sinks, bottom=True)
                ro[qs] = o1[0].transpose(1, 0, 2)
                rl[:, qs] = l1[0]
            opts = attn_opts(causal, 0.0, win, cap, sinks)
            what = "%s Hq%d Hkv%d D%d q%s k%s causal=%d window=%d softcap=%g sinks=%s" % (dt, Hq, Hkv, D, lq, lk, causal, win, cap, sdt)
            R.check("attention_varlen", what, lambda tg, q=q, k=k, v=v, cq=cq, ck=ck, opts=opts: _varlen(tg, q, k, v, cq, ck, opts),
                    (round_to(ro, dt), rl), (dt, "float32"), k_)
    if R.want("attention_decode"):
        # (dtype, Hq, Hkv, D, block size, seq lens, num_splits, window, softcap, sinks)
        cases = [("float16", 8, 2, 64, 16, [1, 37, 100], 0, 0, 0.0, None),
                 ("bfloat16", 4, 4, 32, 5, [23, 0, 11, 5], 3, 0, 0.0, "float32"),      # prime block size, an empty sequence
                 ("float32", 6, 1, 40, 8, [70, 9], 1, 0, 4.0, None),                  # MQA, one split, softcap
                 ("float16", 4, 2, 16, 16, [90, 31], 7, 24, 0.0, "float16"),          # sliding window, more splits than pages
                 ("float32", 2, 2, 8, 4, [0, 0], 0, 0, 0.0, None)]                    # no keys at all
        for k_, (dt, Hq, Hkv, D, P, lens, ns, win, cap, sdt) in enumerate(cases):
            B = len(lens)
            maxb = max(1, max((n + P - 1) // P for n in lens) + 1)
            nblk = B * maxb + 3
            perm = RNG.permutation(nblk).astype(np.int32)
            bt = np.full((B, maxb), -1, np.int32)  # entries past a sequence's pages are never read
            for s in range(B):
                bt[s, :(lens[s] + P - 1) // P] = perm[s * maxb:s * maxb + (lens[s] + P - 1) // P]
            kc = rand((nblk, P, Hkv, D), dt, -1.5, 1.5)
            vc = rand((nblk, P, Hkv, D), dt)
            q = rand((B, Hq, D), dt, -1.5, 1.5)
            sl = np.array(lens, np.int32)
            sinks = rand((Hq,), sdt, -1, 2) if sdt else None
            ro = np.zeros(q.shape)
            rl = np.zeros((B, Hq))
            for s in range(B):
                n = lens[s]
                pages = bt[s, :(n + P - 1) // P]
                ks = kc[pages].reshape(-1, Hkv, D)[:n].transpose(1, 0, 2)[None]
                vs = vc[pages].reshape(-1, Hkv, D)[:n].transpose(1, 0, 2)[None]
                o1, l1 = attn_ref(q[s][:, None, :][None], ks, vs, True, 0.0, win, cap, sinks, bottom=True)
                ro[s] = o1[0, :, 0]
                rl[s] = l1[0, :, 0]
            opts = attn_opts(False, 0.0, win, cap, sinks)
            what = "%s Hq%d Hkv%d D%d block %d lens %s splits %d window=%d softcap=%g sinks=%s" % (dt, Hq, Hkv, D, P, lens, ns, win, cap, sdt)
            R.check("attention_decode", what, lambda tg, q=q, kc=kc, vc=vc, bt=bt, sl=sl, opts=opts, ns=ns: _decode(tg, q, kc, vc, bt, sl, opts, ns),
                    (round_to(ro, dt), rl), (dt, "float32"), k_)


def attn_bwd_ref(q, k, v, do, causal=False, scale=0.0, window=0, softcap=0.0, sinks=None):
    """float64 gradients (dq, dk, dv) of attn_ref's out with respect to q, k, v given dout"""
    B, Hq, Sq, D = q.shape
    Hkv, Skv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    fq, kk, vv, fdo = f64(q), np.repeat(f64(k), g, axis=1), np.repeat(f64(v), g, axis=1), f64(do)
    sc = scale if scale else 1.0 / math.sqrt(D)
    raw = np.einsum("bhqd,bhkd->bhqk", fq, kk) * sc
    z = softcap * np.tanh(raw / softcap) if softcap else raw
    i, j = np.arange(Sq)[:, None], np.arange(Skv)[None, :]
    vis = np.ones((Sq, Skv), bool)
    if causal:
        vis &= j <= i
    if window:
        vis &= j >= i - (window - 1)
    _, lse = attn_ref(q, k, v, causal, scale, window, softcap, sinks)
    with np.errstate(invalid="ignore"):
        p = np.where(vis, np.exp(np.where(vis, z, 0.0) - np.where(np.isinf(lse), 0.0, lse)[..., None]), 0.0)
    dv = np.einsum("bhqk,bhqd->bhkd", p, fdo)
    dp = np.einsum("bhqd,bhkd->bhqk", fdo, vv)
    o = np.einsum("bhqk,bhkd->bhqd", p, vv)
    dz = p * (dp - (fdo * o).sum(-1, keepdims=True))
    draw = dz * ((1 - np.tanh(raw / softcap) ** 2) if softcap else 1.0) * sc
    dq = np.einsum("bhqk,bhkd->bhqd", draw, kk)
    dk = np.einsum("bhqk,bhqd->bhkd", draw, fq)
    red = lambda a: a.reshape(B, Hkv, g, Skv, D).sum(2)
    if sinks is None:
        return dq, red(dk), red(dv)
    # the sink's probability exp(sink - lse) times -Delta, summed over batch and queries
    ds = (-np.exp(f64(sinks)[None, :, None] - lse) * (fdo * o).sum(-1)).sum((0, 2))
    return dq, red(dk), red(dv), ds


def _sdpa_bwd(tg, q, k, v, o, do, lse, opts, want_dsinks=False):
    dq, dk, dv, ds = out(), out(), out(), out()
    call("tile_op_scaled_dot_product_attention_backward", b(tg), C.byref(tt(q)), C.byref(tt(k)), C.byref(tt(v)), C.byref(tt(o)), C.byref(tt(do)),
         C.byref(tt(lse)), C.byref(opts), C.byref(dq), C.byref(dk), C.byref(dv), C.byref(ds) if want_dsinks else None)
    return (to_np(dq), to_np(dk), to_np(dv)) + ((to_np(ds),) if want_dsinks else ())


def attn_bwd_cases(R):
    if not R.want("scaled_dot_product_attention_backward"):
        return
    # (dtype, B, Hq, Hkv, Sq, Skv, D, causal, window, softcap, sinks)
    cases = [("float32", 1, 2, 2, 37, 37, 32, False, 0, 0.0, None),
             ("float32", 2, 4, 2, 70, 45, 16, True, 0, 0.0, None),              # GQA, Sq > Skv (rows with no key), causal
             ("float16", 1, 3, 1, 65, 130, 64, True, 20, 0.0, None),            # MQA, Sq < Skv, sliding window
             ("float32", 1, 2, 1, 29, 31, 24, False, 0, 4.0, "float32"),        # softcap, sinks (through lse)
             ("bfloat16", 1, 2, 2, 40, 40, 64, True, 0, 0.0, None),
             ("float16", 2, 4, 2, 33, 50, 32, True, 0, 0.0, "float16"),         # sinks with dsinks, f16
             ("float32", 1, 2, 1, 6, 0, 8, False, 0, 0.0, None),                # Skv = 0
             ("float32", 1, 2, 2, 5, 0, 8, False, 0, 0.0, "float32")]           # Skv = 0 with sinks
    for k_, (dt, B, Hq, Hkv, Sq, Skv, D, causal, win, cap, sdt) in enumerate(cases):
        q = rand((B, Hq, Sq, D), dt, -1.5, 1.5)
        k = rand((B, Hkv, Skv, D), dt, -1.5, 1.5)
        v = rand((B, Hkv, Skv, D), dt)
        do = rand((B, Hq, Sq, D), dt)
        sinks = rand((Hq,), sdt, -1, 2) if sdt else None
        opts = attn_opts(causal, 0.0, win, cap, sinks)
        # the forward's out and lse as a caller has them: from the interpreter, in q's dtype
        o, lse = _sdpa("interp", q, k, v, opts)
        ref = attn_bwd_ref(q, k, v, do, causal, 0.0, win, cap, sinks)
        what = "%s B%d Hq%d Hkv%d Sq%d Skv%d D%d causal=%d window=%d softcap=%g sinks=%s" % (dt, B, Hq, Hkv, Sq, Skv, D, causal, win, cap, sdt)
        ws = sinks is not None  # dsinks (float32) is compared at the tolerance of dt, the dtype of the out it comes from
        R.check("scaled_dot_product_attention_backward", what,
                lambda tg, q=q, k=k, v=v, o=o, do=do, lse=lse, opts=opts, ws=ws: _sdpa_bwd(tg, q, k, v, o, do, lse, opts, ws),
                tuple(round_to(r, dt) for r in ref[:3]) + tuple(ref[3:]), (dt, dt, dt) + ((dt,) if ws else ()), k_)


def attn_bad_argument_cases(R):
    E = R.expect_error
    f = lambda *s: rand(s, "float32")
    none = attn_opts()
    E("scaled_dot_product_attention", "head count", lambda tg: _sdpa(tg, f(1, 32, 4, 8), f(1, 5, 4, 8), f(1, 5, 4, 8), none), "k")
    E("scaled_dot_product_attention", "v shape", lambda tg: _sdpa(tg, f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 5, 8), none), "v")
    E("scaled_dot_product_attention", "k dtype", lambda tg: _sdpa(tg, f(1, 2, 4, 8), rand((1, 2, 4, 8), "float16"), f(1, 2, 4, 8), none), "k")
    E("scaled_dot_product_attention", "integer q", lambda tg: _sdpa(tg, rand((1, 2, 4, 8), "int32"), f(1, 2, 4, 8), f(1, 2, 4, 8), none), "q")
    E("scaled_dot_product_attention", "q rank 3", lambda tg: _sdpa(tg, f(2, 4, 8), f(2, 4, 8), f(2, 4, 8), none), "q")
    E("scaled_dot_product_attention", "head dim", lambda tg: _sdpa(tg, f(1, 1, 2, 8), f(1, 1, 2, 9), f(1, 1, 2, 9), none), "k")
    E("scaled_dot_product_attention", "sinks shape", lambda tg: _sdpa(tg, f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8), attn_opts(sinks=f(3))), "sinks")
    E("scaled_dot_product_attention", "negative softcap", lambda tg: _sdpa(tg, f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8), attn_opts(softcap=-1.0)),
      "softcap")
    E("scaled_dot_product_attention", "out shape", lambda tg: _sdpa(tg, f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8), none, False,
                                                                    np.zeros((1, 2, 4, 9), np.float32)), "out")
    cq = np.array([0, 3, 5], np.int32)
    E("scaled_dot_product_attention_backward", "lse shape", lambda tg: _sdpa_bwd(tg, f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8),
                                                                               f(1, 2, 4, 8), f(1, 2, 5), none), "lse")
    E("scaled_dot_product_attention_backward", "dout shape", lambda tg: _sdpa_bwd(tg, f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8),
                                                                                f(1, 2, 3, 8), f(1, 2, 4), none), "dout")
    E("scaled_dot_product_attention_backward", "dsinks without sinks", lambda tg: _sdpa_bwd(tg, f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4, 8),
                                                                                         f(1, 2, 4, 8), f(1, 2, 4, 8), f(1, 2, 4), none, True), "dsinks")
    E("attention_varlen", "cu_seqlens_q end", lambda tg: _varlen(tg, f(6, 2, 8), f(5, 2, 8), f(5, 2, 8), cq, cq, none), "cu_seqlens_q")
    E("attention_varlen", "cu_seqlens_k dtype", lambda tg: _varlen(tg, f(5, 2, 8), f(5, 2, 8), f(5, 2, 8), cq, cq.astype(np.int64), none),
      "cu_seqlens_k")
    E("attention_varlen", "cu_seqlens_q decreasing", lambda tg: _varlen(tg, f(5, 2, 8), f(5, 2, 8), f(5, 2, 8), np.array([0, 6, 5], np.int32), cq,
                                                                        none), "cu_seqlens_q")
    kc = f(4, 8, 2, 16)
    q = f(2, 4, 16)
    bt = np.array([[0, 1], [2, 3]], np.int32)
    E("attention_decode", "block table entry", lambda tg: _decode(tg, q, kc, kc, np.array([[0, 9], [2, 3]], np.int32), np.array([10, 3], np.int32),
                                                                  none, 0), "block_table")
    E("attention_decode", "seq_lens too long", lambda tg: _decode(tg, q, kc, kc, bt, np.array([17, 3], np.int32), none, 0), "seq_lens")
    E("attention_decode", "num_splits", lambda tg: _decode(tg, q, kc, kc, bt, np.array([5, 3], np.int32), none, -1), "num_splits")
    E("attention_decode", "kv heads", lambda tg: _decode(tg, f(2, 3, 16), kc, kc, bt, np.array([5, 3], np.int32), none, 0), "k_cache")


def bad_argument_cases(R):
    f = rand((3, 4), "float32")
    i = rand((3, 4), "int32")
    E = R.expect_error
    E("add", "shape mismatch", lambda tg: _bin(tg, "add", f, rand((5,), "float32")), "b")
    E("exp", "wrong dtype out", lambda tg: _un_out(tg, "exp", f, np.zeros((3, 4), np.float16)), "out")
    E("exp", "wrong shape out", lambda tg: _un_out(tg, "exp", f, np.zeros((4, 3), np.float32)), "out")
    E("bitwise_and", "float operands", lambda tg: _bin(tg, "bitwise_and", f, f), "a, b")
    E("bitwise_not", "float input", lambda tg: _un(tg, "bitwise_not", f), "x")
    E("sub", "bool operands", lambda tg: _bin(tg, "sub", rand((3,), "bool"), rand((3,), "bool")), "a, b")
    E("mean", "integer input", lambda tg: _red(tg, "mean", i, [0]), "x")
    E("sum", "dims out of range", lambda tg: _red(tg, "sum", f, [2]), "dims")
    E("sum", "dims twice", lambda tg: _red(tg, "sum", f, [1, -1]), "dims")
    E("amax", "empty dim", lambda tg: _red(tg, "amax", np.zeros((0, 3), np.float32), [0]), "dims")
    E("rms_norm", "weight shape", lambda tg: _rms(tg, f, rand((5,), "float32")), "weight")
    E("rms_norm", "weight dtype", lambda tg: _rms(tg, f, rand((4,), "int32")), "weight")
    E("rms_norm", "x rank 0", lambda tg: _rms(tg, np.float32(1.0).reshape(()), rand((1,), "float32")), "x")
    E("gemm", "K mismatch", lambda tg: _gemm(tg, rand((3, 4), "float32"), rand((5, 6), "float32")), "b")
    E("gemm", "dtype mismatch", lambda tg: _gemm(tg, rand((3, 4), "float32"), rand((4, 6), "float16")), "b")
    E("gemm", "int8 operands", lambda tg: _gemm(tg, rand((3, 4), "int8"), rand((4, 6), "int8")), "a")
    E("embedding", "index out of range", lambda tg: _emb(tg, rand((5, 3), "float32"), np.array([1, 5], np.int64)), "indices")
    E("embedding", "float indices", lambda tg: _emb(tg, rand((5, 3), "float32"), np.array([1.0], np.float32)), "indices")
    E("index_select", "negative index", lambda tg: _idx("tile_op_index_select", tg, f, 0, np.array([-1], np.int64)), "index")
    E("gather", "index rank", lambda tg: _idx("tile_op_gather", tg, f, 1, np.array([0], np.int64)), "index")
    E("permute", "not a permutation", lambda tg: _perm(tg, f, [0, 0]), "perm")
    E("reshape", "element count", lambda tg: _shape("tile_op_reshape", tg, f, [5, 2]), "shape")
    E("expand", "non-1 dim", lambda tg: _shape("tile_op_expand", tg, f, [3, 8]), "shape")
    E("cat", "size mismatch", lambda tg: _cat("tile_op_cat", tg, [f, rand((2, 5), "float32")], 0), "xs[1]")
    E("split", "sizes", lambda tg: _split(tg, f, [1, 1], 1), "sizes")
    E("cross_entropy", "target out of range", lambda tg: _xent(tg, f, np.array([0, 4, 1], np.int64)), "targets")
    E("cross_entropy", "targets length", lambda tg: _xent(tg, f, np.array([0, 1], np.int64)), "targets")
    E("rope", "odd head dim", lambda tg: _rope(tg, rand((2, 3), "float32"), rand((2, 1), "float32")), "x")
    E("quantize_fp8", "block size", lambda tg: _quant(tg, f, 64), "block")
    E("softmax", "integer input", lambda tg: _call1("tile_op_softmax", tg, i, 1), "x")
    E("slice", "step 0", lambda tg: _call1("tile_op_slice", tg, f, 1, 0, 2, 0), "step")
    E("exp", "unknown target", lambda tg: _un("nosuch", "exp", f), "target")
    E("exp", "NULL data", lambda tg: _null_data(tg), "x")
    E("pad_reflect", "amount too large", lambda tg: _call1("tile_op_pad_reflect", tg, f, lp([4, 0]), 2), "pad")
    E("dropout", "p = 1", lambda tg: _drop(tg, f, 1.0), "p")
    E("batch_norm", "channel mismatch", lambda tg: _bn(tg, rand((2, 3, 4), "float32"), rand((4,), "float32")), "weight")


def _drop(tg, x, p):
    o = out()
    call("tile_op_dropout", b(tg), C.byref(tt(x)), C.c_double(p), C.c_int64(1), C.byref(o), None)


def _bn(tg, x, w):
    o = out()
    call("tile_op_batch_norm", b(tg), C.byref(tt(x)), C.byref(tt(w)), None, None, None, 1, C.c_double(1e-5), C.byref(o), None, None)


def _bin(tg, name, a, c):
    o = out()
    call("tile_op_binary", b(tg), b(name), C.byref(tt(a)), C.byref(tt(c)), C.byref(o))
    return to_np(o)


def _un(tg, name, x):
    o = out()
    call("tile_op_unary", b(tg), b(name), C.byref(tt(x)), C.byref(o))
    return to_np(o)


def _un_out(tg, name, x, o_arr):
    o = tt(o_arr)
    call("tile_op_unary", b(tg), b(name), C.byref(tt(x)), C.byref(o))


def _null_data(tg):
    t = Tensor()
    t.dtype, t.rank, t.shape[0] = DT["float32"], 1, 4
    o = out()
    call("tile_op_unary", b(tg), b("exp"), C.byref(t), C.byref(o))


def _red(tg, name, x, dims):
    o = out()
    call("tile_op_reduce", b(tg), b(name), C.byref(tt(x)), ip(dims), len(dims), 0, C.byref(o))
    return to_np(o)


def _rms(tg, x, w):
    y = out()
    call("tile_op_rms_norm", b(tg), C.byref(tt(x)), C.byref(tt(w)), None, C.c_double(1e-6), C.byref(y), None)
    return to_np(y)


def _gemm(tg, a, c):
    o = out()
    call("tile_op_gemm", b(tg), C.byref(tt(a)), C.byref(tt(c)), None, None, C.byref(o))
    return to_np(o)


def _xent(tg, x, t):
    o = out()
    call("tile_op_cross_entropy", b(tg), C.byref(tt(x)), C.byref(tt(t)), C.c_int64(-100), b("mean"), C.byref(o), None)
    return to_np(o)


def _rope(tg, x, cs):
    o = out()
    call("tile_op_rope", b(tg), C.byref(tt(x)), C.byref(tt(cs)), C.byref(tt(cs)), None, 0, C.byref(o))
    return to_np(o)


def _quant(tg, x, blk):
    q, s = out(), out()
    call("tile_op_quantize_fp8", b(tg), C.byref(tt(x)), DT["float8_e4m3"], blk, C.byref(q), C.byref(s))


def cache_case(R):
    """the second identical call finds its kernel compiled"""
    class Stats(C.Structure):
        _fields_ = [("kernels", C.c_int64), ("hits", C.c_int64), ("misses", C.c_int64), ("compile_s", C.c_double)]
    x = rand((17, 3), "float32")
    s0, s1 = Stats(), Stats()
    _un("interp", "exp", x)
    LIB.tile_op_cache_get_stats(C.byref(s0))
    _un("interp", "exp", rand((5, 11), "float32"))  # another shape, the same shape class (block bucket 64)
    LIB.tile_op_cache_get_stats(C.byref(s1))
    R.count += 1
    if not (s1.hits == s0.hits + 1 and s1.misses == s0.misses):
        R.fails.append("cache: a second call of one shape class compiled again (hits %d->%d, misses %d->%d)" % (s0.hits, s1.hits, s0.misses, s1.misses))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--targets", default="interp,cpu")
    ap.add_argument("--only", default="")
    ap.add_argument("--group", default="all", help="all | elementwise | reduce | shape | nn | qgemm | errors | attn")
    ap.add_argument("--opencl-every", type=int, default=3)
    args = ap.parse_args()
    load(args.lib)
    targets = [t for t in args.targets.split(",") if t]
    usable = ["interp"]
    for t in targets:
        if t == "interp":
            continue
        dev, why = C.c_char_p(), C.c_char_p()
        LIB.tile_target_info.argtypes = [C.c_char_p, C.POINTER(C.c_char_p), C.POINTER(C.c_char_p)]
        if LIB.tile_target_info(b(t), C.byref(dev), C.byref(why)) == 0:
            usable.append(t)
        else:
            print("note: target %s unavailable here (%s): skipped" % (t, why.value.decode() if why.value else "?"))
    if len(targets) > 1 and usable == ["interp"] and "interp" in targets and len([t for t in targets if t != "interp"]) > 0:
        print("SKIP: none of the compiled targets asked for (%s) is available here" % ",".join(t for t in targets if t != "interp"))
        return 77
    R = Runner(usable, set(args.only.split(",")) - {""}, os.environ.get("TILE_OPS_TEST_FULL") == "1", max(1, args.opencl_every))
    ops = registry()
    g = args.group
    if g in ("all", "elementwise"):
        unary_cases(R, ops)
        binary_cases(R, ops)
        ternary_cases(R)
    if g in ("all", "reduce"):
        reduce_cases(R, ops)
        scan_cases(R, ops)
    if g in ("all", "shape"):
        copy_cases(R)
        index_cases(R)
    if g in ("all", "nn"):
        nn_cases(R)
        more_cases(R)
    if g in ("all", "qgemm"):
        qgemm_cases(R)
    if g in ("all", "errors"):
        bad_argument_cases(R)
        qgemm_bad_argument_cases(R)
        cache_case(R)
    if g in ("all", "attn"):
        attn_cases(R)
        attn_bwd_cases(R)
        attn_bad_argument_cases(R)
    if g == "all" and not R.only:
        missing = [n for n, _, _ in ops if n not in R.op_seen]
        if missing:
            R.fails.append("operators without a conformance case: " + ", ".join(missing))
    for f in R.fails:
        print("FAIL " + f)
    print("%d passed, %d failed" % (R.count - len(R.fails) if R.count >= len(R.fails) else 0, len(R.fails)))
    return 1 if R.fails else 0


if __name__ == "__main__":
    sys.exit(main())
