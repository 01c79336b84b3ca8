#!/usr/bin/env python3
"""Compare Tile's dtype conversions (src/core/dtype.c, driven through the dtype_dump helper)
with independent references: NumPy (float16) and ml_dtypes (bfloat16, float8_e4m3fn,
float8_e5m2, float4_e2m1fn), plus an exact rational reference written here from the
definition (Python Fractions, round-half-even) where ml_dtypes cannot be used. Also checks
.npy interoperability with NumPy in both directions.

Usage: test_dtype_ref.py PATH/TO/dtype_dump
Exits 77 (ctest SKIP_RETURN_CODE) when numpy or ml_dtypes is not installed.

Differences between ml_dtypes and the project's rules that this script applies to the
reference side (docs/numbers.md explains them):
  * ml_dtypes converts float64 through float32 for bfloat16 and the fp8/fp4 types, which
    rounds twice; for doubles that float32 cannot hold exactly the exact rational
    reference is used instead.
  * fp8 e4m3: ml_dtypes gives NaN on overflow and for +-inf; Tile saturates to +-448.
  * fp8 e5m2: ml_dtypes gives +-inf on overflow; Tile saturates to +-57344.
  * NaN inputs: Tile gives the canonical NaN of each format, sign kept (f16 0x7E00,
    bf16 0x7FC0, e4m3 0x7F, e5m2 0x7F, with 0x80../0x8000 for negative NaN) and e2m1 0x7
    (+6, no NaN in the format); ml_dtypes keeps payload bits (e5m2 gives 0x7E) and its e2m1
    result for NaN is not meaningful, so the reference for NaN inputs is the rule itself.
"""
import math
import os
import warnings
import subprocess
import sys
import tempfile
from fractions import Fraction

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e.name} is not installed (pip install numpy ml_dtypes)")
    sys.exit(77)

HELPER = sys.argv[1] if len(sys.argv) > 1 else None
if not HELPER or not os.path.exists(HELPER):
    print("usage: test_dtype_ref.py PATH/TO/dtype_dump")
    sys.exit(2)

FAILS = []
CHECKS = [0]


def check(ok, msg):
    CHECKS[0] += 1
    if not ok:
        FAILS.append(msg)
        print("FAIL:", msg)


# name -> (numpy dtype, bits storage dtype, M, emin, max finite, saturating, canonical +NaN bits, NaN keeps sign)
FORMATS = {
    "f16": (np.dtype(np.float16), np.uint16, 10, -14, 65504.0, False, 0x7E00, True),
    "bf16": (np.dtype(ml_dtypes.bfloat16), np.uint16, 7, -126, float.fromhex("0x1.fep127"), False, 0x7FC0, True),
    "e4m3": (np.dtype(ml_dtypes.float8_e4m3fn), np.uint8, 3, -6, 448.0, True, 0x7F, True),
    "e5m2": (np.dtype(ml_dtypes.float8_e5m2), np.uint8, 2, -14, 57344.0, True, 0x7F, True),
    "e2m1": (np.dtype(ml_dtypes.float4_e2m1fn), np.uint8, 1, 0, 6.0, True, 0x7, False),
}
SIGN = {"f16": 0x8000, "bf16": 0x8000, "e4m3": 0x80, "e5m2": 0x80, "e2m1": 0x8}


def run(*args):
    r = subprocess.run([HELPER, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"dtype_dump {' '.join(args)} failed ({r.returncode}): {r.stderr}{r.stdout}")
    return r.stdout


def c_decode(tmp, fmt):
    out = os.path.join(tmp, f"dec_{fmt}.bin")
    run("decode", fmt, out)
    return np.fromfile(out, dtype="<f8")


def c_encode(tmp, fmt, values, mode="encode"):
    src = os.path.join(tmp, "in.bin")
    out = os.path.join(tmp, "out.bin")
    values.tofile(src)
    run(mode, fmt, src, out)
    return np.fromfile(out, dtype=FORMATS[fmt][1])


def all_values(fmt):
    """Every bit pattern of fmt decoded by the reference, as float64."""
    dt, st = FORMATS[fmt][0], FORMATS[fmt][1]
    n = 1 << (4 if fmt == "e2m1" else dt.itemsize * 8)
    return np.arange(n, dtype=np.uint64).astype(st).view(dt).astype(np.float64)


def ml_encode(fmt, x):
    """ml_dtypes/numpy encoding of float64 array x, as bits (no rule adjustments)."""
    dt, st = FORMATS[fmt][0], FORMATS[fmt][1]
    with np.errstate(all="ignore"):
        b = x.astype(dt).view(np.uint8 if dt.itemsize == 1 else np.uint16).astype(st)
    if fmt == "e2m1":
        b = b & 0xF
    return b


def apply_rules(fmt, x, ref):
    """Adjust reference bits for Tile's saturation and NaN rules (see module docstring)."""
    _, st, _, _, mx, sat, nan_bits, nan_signed = FORMATS[fmt]
    neg = np.signbit(x)
    sgn = np.where(neg, SIGN[fmt], 0).astype(st)
    isn = np.isnan(x)
    ref = ref.copy()
    if sat:
        max_bits = int(ml_encode(fmt, np.array([mx]))[0])
        refv = decode_bits(fmt, ref)
        over = (~isn) & (np.isnan(refv) | np.isinf(refv) | (np.abs(np.nan_to_num(refv, nan=0.0)) > mx))
        # e2m1: ml_dtypes already saturates finite values and infinities; keep them as is
        ref[over] = (sgn[over] | max_bits).astype(st)
    ref[isn] = (sgn[isn] if nan_signed else np.zeros_like(sgn[isn])) | nan_bits
    return ref


def decode_bits(fmt, bits):
    dt = FORMATS[fmt][0]
    b = bits.astype(np.uint8 if dt.itemsize == 1 else np.uint16)
    return b.view(dt).astype(np.float64)


def exact_round(fmt, v):
    """Exact RNE of a Python float or int v to fmt, as a float (inf on non-saturating overflow).
    Independent of ml_dtypes: rational arithmetic and Python's round-half-even."""
    _, _, M, emin, mx, sat, _, _ = FORMATS[fmt]
    if isinstance(v, float):
        if math.isinf(v):
            return math.copysign(mx, v) if sat else v
        neg = math.copysign(1.0, v) < 0
    else:
        neg = v < 0
    a = abs(Fraction(v))
    if a == 0:
        return -0.0 if neg else 0.0
    E = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** E > a:
        E -= 1
    while Fraction(2) ** (E + 1) <= a:
        E += 1
    et = max(E, emin)
    q = Fraction(2) ** (et - M)
    r = round(a / q) * q  # round() on a Fraction rounds half to even
    if r > Fraction(mx):
        r = Fraction(mx) if sat else None
    val = math.inf if r is None else float(r)
    return -val if neg else val


def exact_ref_bits(fmt, values):
    rounded = np.array([exact_round(fmt, v) for v in values], dtype=np.float64)
    return ml_encode(fmt, rounded)  # exactly representable: ml_dtypes encodes it exactly


def compare_bits(what, got, want, inputs):
    bad = np.nonzero(got != want)[0]
    check(len(bad) == 0, f"{what}: {len(bad)} of {len(got)} differ" +
          "".join(f"\n    input {float(inputs[i])!r} ({np.float64(inputs[i]).view(np.uint64):#018x}) "
                  f"got {int(got[i]):#x} want {int(want[i]):#x}" for i in bad[:8]))


def test_decode(tmp):
    for fmt in FORMATS:
        got = c_decode(tmp, fmt)
        want = all_values(fmt)
        check(len(got) == len(want), f"decode {fmt}: {len(got)} values, want {len(want)}")
        gn, wn = np.isnan(got), np.isnan(want)
        check(np.array_equal(gn, wn), f"decode {fmt}: NaN positions differ: {np.nonzero(gn != wn)[0][:8]}")
        check(np.array_equal(np.signbit(got), np.signbit(want)), f"decode {fmt}: signs differ")
        ok = ~wn
        bad = np.nonzero(got[ok].view(np.uint64) != want[ok].view(np.uint64))[0]
        check(len(bad) == 0, f"decode {fmt}: {len(bad)} values differ, e.g. "
              + ", ".join(f"{int(np.nonzero(ok)[0][i]):#x}: {got[ok][i]!r} vs {want[ok][i]!r}" for i in bad[:5]))
        print(f"decode {fmt}: {len(got)} patterns")


def edge_inputs():
    """Values, midpoints between neighbours, and doubles right next to the midpoints, for
    every format; specials; subnormal boundaries of float64 itself."""
    xs = [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan,
          5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
          np.uint64(0x7FF0000000000001).view(np.float64),  # signalling NaN
          np.uint64(0xFFF4000000000123).view(np.float64)]  # negative NaN with payload
    near = []
    for fmt in FORMATS:
        pos = neighbours(fmt)
        mids = (pos[:-1] + pos[1:]) / 2  # exact in float64
        for m in np.concatenate([pos, mids]):
            near += [m, -m]
        for m in mids:
            for d in (np.nextafter(m, math.inf), np.nextafter(m, 0.0)):
                near += [d, -d]
    return np.array(xs + near, dtype=np.float64)


def f32_exact(x):
    with np.errstate(all="ignore"):
        back = x.astype(np.float32).astype(np.float64)
    return (back.view(np.uint64) == x.view(np.uint64)) | np.isnan(x)


def neighbours(fmt):
    """Positive finite values of fmt in order, plus the value the exponent range would give
    next above max (65536, 2^128, 480, 61440, 8): consecutive pairs bracket every midpoint."""
    v = all_values(fmt)
    pos = np.concatenate([[0.0], np.unique(v[np.isfinite(v) & (v > 0)])])  # +0.0, not -0.0
    return np.append(pos, 2 * pos[-1] - pos[-2])


def test_encode(tmp, rng):
    edges = edge_inputs()
    # random doubles: uniform over bit patterns, log-uniform over the interesting range, and
    # random float32 patterns
    r_bits = rng.integers(0, 2**64, size=100_000, dtype=np.uint64).view(np.float64)
    r_log = (rng.choice([-1.0, 1.0], 300_000) * np.exp2(rng.uniform(-30, 20, 300_000)))
    r_f32 = rng.integers(0, 2**32, size=300_000, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(np.float64)
    all_in = np.concatenate([edges, r_bits, r_log, r_f32])
    for fmt in FORMATS:
        _, _, _, _, mx, sat, _, _ = FORMATS[fmt]
        x = np.concatenate([all_values(fmt), all_values("f16"), all_values("bf16"), all_in])
        got = c_encode(tmp, fmt, x)
        exact32 = f32_exact(x)
        # (1) where ml_dtypes is single-rounding: float16 (numpy) always; others on float32 values
        use_ml = exact32 if fmt != "f16" else np.ones_like(exact32)
        want = apply_rules(fmt, x[use_ml], ml_encode(fmt, x[use_ml]))
        compare_bits(f"encode {fmt} vs {'numpy' if fmt == 'f16' else 'ml_dtypes'}", got[use_ml], want, x[use_ml])

        # (2) the doubles right next to each midpoint of fmt round to the nearer neighbour
        # (these are not float32 values, so ml_dtypes cannot judge them)
        pos = neighbours(fmt)
        lo, hi = pos[:-1], pos[1:]
        mid = (lo + hi) / 2
        up, down = np.nextafter(mid, np.inf), np.nextafter(mid, 0.0)
        hi_r = np.where(hi > mx, mx if sat else np.inf, hi)
        xin = np.concatenate([up, down, -up, -down])
        exp_v = np.concatenate([hi_r, lo, -hi_r, -lo])
        got2 = c_encode(tmp, fmt, xin)
        compare_bits(f"encode {fmt} next to midpoints", got2, ml_encode(fmt, exp_v), xin)

        # (3) a sample of the rest against the exact rational reference
        rest = np.nonzero(~use_ml & ~np.isnan(x))[0]
        idx = rng.choice(rest, size=min(len(rest), 12_000), replace=False) if len(rest) else rest
        xs = np.concatenate([x[idx], rng.choice(x[~np.isnan(x)], 3_000, replace=False)])
        want = exact_ref_bits(fmt, [float(v) for v in xs])
        got3 = c_encode(tmp, fmt, xs)
        compare_bits(f"encode {fmt} vs exact reference", got3, want, xs)
        print(f"encode {fmt}: {len(x)} inputs ({int(use_ml.sum())} vs {'numpy' if fmt == 'f16' else 'ml_dtypes'}), "
              f"{len(xin)} next to midpoints, {len(xs)} vs the exact reference")


def test_encode32(tmp, rng):
    x = np.concatenate([all_values("f16"), all_values("bf16"), edge_inputs()]).astype(np.float32)
    x = np.concatenate([x, rng.integers(0, 2**32, size=500_000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    x64 = x.astype(np.float64)
    for fmt in ("f16", "bf16"):
        got = c_encode(tmp, fmt, x, mode="encode32")
        want = apply_rules(fmt, x64, ml_encode(fmt, x64))
        compare_bits(f"encode32 {fmt}", got, want, x64)
        print(f"encode32 {fmt}: {len(x)} inputs")


def test_encode_int(tmp, rng):
    edges = [0, 1, -1, 2**53, 2**53 + 1, 2**53 + 3, -(2**53) - 1, 2**63 - 1, -(2**63), 2**62 + 2**38 + 1,
             65504, 65519, 65520, 65535, -65520, 448, 464, 465, 57344, 61439, 61440, 6, 7, 5, 3, 2049, -2049]
    vals = edges + [int(v) for v in rng.integers(-(2**63), 2**63 - 1, size=3000, dtype=np.int64)]
    vals += [int(v) for v in rng.integers(-(2**20), 2**20, size=3000)]
    for e in range(1, 63):  # around powers of two and the rounding points of every format
        for d in (-3, -2, -1, 0, 1, 2, 3):
            vals += [2**e + d * 2 ** max(0, e - 12), -(2**e) - d * 2 ** max(0, e - 12), 2**e + 2 ** max(0, e - 9) + d]
    vals = [v for v in vals if -(2**63) <= v < 2**63]
    x = np.array(vals, dtype=np.int64)
    for fmt in FORMATS:
        got = c_encode(tmp, fmt, x, mode="encodei")
        want = exact_ref_bits(fmt, vals)
        compare_bits(f"encodei {fmt} vs exact reference", got, want, x.astype(np.float64))
    print(f"encodei: {len(vals)} int64 inputs x {len(FORMATS)} formats")


def test_npy(tmp):
    descrs = ["|b1", "|i1", "|u1", "<i2", "<i4", "<i8", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"]
    for d in descrs:
        # C writes, NumPy reads
        p = os.path.join(tmp, "c.npy")
        run("npy-write", d, p)
        a = np.load(p)
        check(a.dtype == np.dtype(d) and a.shape == (2, 3), f"npy {d}: numpy read {a.dtype} {a.shape}")
        check(np.array_equal(a.reshape(-1).astype(np.float64), np.array([0, 1, 1, 1, 1, 1] if d == "|b1" else range(6), dtype=np.float64)),
              f"npy {d}: values {a}")
        with open(p, "rb") as f:
            head = f.read(10)
            hlen = head[8] | head[9] << 8
        check((10 + hlen) % 64 == 0, f"npy {d}: header not 64-byte aligned")
        # NumPy writes, C reads (several shapes, and format 2.0)
        for shape in [(), (5,), (2, 3), (2, 0, 4), (1, 1, 1, 1, 1, 1, 1, 2)]:
            n = int(np.prod(shape)) if shape else 1
            arr = (np.arange(n) % 7).astype(d).reshape(shape)
            for version in [(1, 0), (2, 0), (3, 0)]:
                q = os.path.join(tmp, "n.npy")
                with open(q, "wb") as f:
                    np.lib.format.write_array(f, arr, version=version)
                out = run("npy-read", q).split()
                exp_shape = "(" + ", ".join(str(s) for s in shape) + ")"
                got_descr, rest = out[0], " ".join(out[1:])
                check(got_descr == arr.dtype.str, f"npy read {d} {shape} v{version}: descr {got_descr}")
                check(rest.startswith(exp_shape), f"npy read {d} {shape} v{version}: {rest[:60]}")
                vals = [float(t) for t in rest[len(exp_shape):].split()]
                check(vals == [float(v) for v in arr.reshape(-1).astype(np.float64)],
                      f"npy read {d} {shape} v{version}: values {vals[:8]}")
    # Fortran order is refused with a clear message
    q = os.path.join(tmp, "f.npy")
    np.save(q, np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
    out = subprocess.run([HELPER, "npy-read", q], capture_output=True, text=True).stdout
    check("fortran_order" in out and q in out, f"fortran npy: {out!r}")
    # big-endian is refused
    np.save(q, np.ones(3, dtype=">f4"))
    out = subprocess.run([HELPER, "npy-read", q], capture_output=True, text=True).stdout
    check("big-endian" in out, f"big-endian npy: {out!r}")
    print(f"npy: {len(descrs)} descrs both ways")


def main():
    warnings.simplefilter("ignore", RuntimeWarning)  # NaN/overflow casts are intended here
    rng = np.random.default_rng(20240601)
    with tempfile.TemporaryDirectory() as tmp:
        test_decode(tmp)
        test_encode(tmp, rng)
        test_encode32(tmp, rng)
        test_encode_int(tmp, rng)
        test_npy(tmp)
    print(f"{CHECKS[0] - len(FAILS)} passed, {len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
