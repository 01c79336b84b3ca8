#!/usr/bin/env python3
"""Interpreter tests of the example programs against independent float64 NumPy references.

Usage:
    run_tests.py [--tile PATH] NAME        run one test (what CTest does: programs.NAME)
    run_tests.py [--tile PATH] --all       run every test, print a summary
    run_tests.py --list                    list the test names
    run_tests.py --list-programs           list the program tests (those that run on any target)
    run_tests.py --target cpu NAME         run a program test on another target (default interp)

Each program test makes seeded random inputs (never all zeros), writes them as .npy files,
runs `tile run FILE --target interp --in ... --out ...` (or the target given with --target),
and compares the output with a
reference computed here in float64 from the exact values of the inputs (after they were
rounded to their storage dtype), never by the interpreter. The comparison is norm-wise:
    relerr = ||out - ref||_2 / ||ref||_2
with a bound justified per test in a comment. The CLI tests check the `tile run` contract
(exit codes, --check, --shape, -D, --seed, --out ret, ...).

Exit status: 0 pass, 1 fail, 77 skipped (NumPy, or ml_dtypes where a test needs it, is
missing; or no `tile` binary was found).

Storage of dtypes NumPy lacks (the CLI contract): bf16 as raw bits '<u2', fp8 as raw bits
'|u1', fp4 e2m1 as '|u1' one element per byte. A uint8 tensor that *holds* packed fp4
(gemm_fp4's B) is just a uint8 tensor.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")
DATA = os.path.join(HERE, "data")
TARGET = "interp"  # the target program tests run on (--target); CLI tests always use interp
RUN_TIMEOUT = 60  # seconds for one `tile` invocation; each test is meant to take < 20 s

try:
    import numpy as np
except ImportError:  # pragma: no cover - reported as a skip
    np = None
try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

# float32 unit roundoff, used in the bounds below.
U32 = 2.0 ** -24
U16 = 2.0 ** -11   # float16
UBF16 = 2.0 ** -8  # bfloat16 (8 significant bits: half an ulp is at most 2^-8 relative)


class Skip(Exception):
    pass


class Fail(Exception):
    pass


TESTS = {}


def test(fn):
    TESTS[fn.__name__[len("test_"):]] = fn
    return fn


def need_ml_dtypes():
    if ml_dtypes is None:
        raise Skip("ml_dtypes is not installed (pip install ml_dtypes)")


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
class Ctx:
    def __init__(self, tile, tmp, name):
        self.tile = tile
        self.tmp = tmp
        self.rng = np.random.default_rng(abs(hash_name(name)))
        self.log = []

    def path(self, name):
        return os.path.join(self.tmp, name)

    def save(self, name, arr):
        p = self.path(name + ".npy")
        np.save(p, arr)
        return p

    def tile_cmd(self, *args, timeout=RUN_TIMEOUT):
        cmd = [self.tile] + [str(a) for a in args]
        self.log.append(" ".join(cmd))
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail("timed out after %d s: %s" % (timeout, " ".join(cmd)))
        if r.returncode < 0:
            raise Fail("`%s` was killed by signal %d (a crash)\nstdout:\n%s\nstderr:\n%s"
                       % (" ".join(cmd), -r.returncode, r.stdout, r.stderr))
        return r

    def run_ok(self, *args):
        r = self.tile_cmd(*args)
        if r.returncode != 0:
            raise Fail("`%s` exited %d (expected 0)\nstdout:\n%s\nstderr:\n%s"
                       % (self.log[-1], r.returncode, r.stdout[-4000:], r.stderr[-4000:]))
        return r

    def run_program(self, example, defines=(), ins=(), outs=(), extra=()):
        """tile run EXAMPLE --target TARGET -D k=v... --in k=arr... --out k=...; returns
        {out name: np.ndarray as stored in the .npy file}."""
        args = ["run", example, "--target", TARGET]
        for k, v in defines:
            args += ["-D", "%s=%s" % (k, v)]
        for k, arr in ins:
            args += ["--in", "%s=%s" % (k, self.save("in_" + k, arr))]
        out_paths = {}
        for k in outs:
            out_paths[k] = self.path("out_" + k + ".npy")
            args += ["--out", "%s=%s" % (k, out_paths[k])]
        args += list(extra)
        self.run_ok(*args)
        res = {}
        for k, p in out_paths.items():
            if not os.path.exists(p):
                raise Fail("`%s` exited 0 but did not write --out %s" % (self.log[-1], k))
            res[k] = np.load(p)
        return res


def hash_name(name):
    h = 1469598103934665603
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) % (1 << 61)
    return h


def ex(name):
    return os.path.join(EXAMPLES, name)


def relerr(out, ref):
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise Fail("output shape %s, expected %s" % (out.shape, ref.shape))
    if not np.all(np.isfinite(out)):
        bad = np.argwhere(~np.isfinite(out))[0]
        raise Fail("output has a non-finite value at index %s: %r" % (tuple(bad), out[tuple(bad)]))
    nref = np.linalg.norm(ref.ravel())
    if nref == 0:
        raise Fail("reference is all zeros: the test inputs are wrong")
    return np.linalg.norm((out - ref).ravel()) / nref


def check_close(what, out, ref, bound):
    e = relerr(out, ref)
    print("  %-40s relerr %.3e (bound %.1e)" % (what, e, bound))
    if not e <= bound:
        diff = np.abs(np.asarray(out, np.float64) - ref)
        idx = tuple(np.unravel_index(np.argmax(diff), diff.shape))
        raise Fail("%s: norm-wise relative error %.3e exceeds %.1e; worst element %s: got %r, "
                   "expected %r" % (what, e, bound, idx, float(np.asarray(out)[idx]),
                                    float(ref[idx])))


def expect_descr(arr, kind_char, itemsize, what):
    if arr.dtype.kind != kind_char or arr.dtype.itemsize != itemsize:
        raise Fail("%s: .npy dtype is %s, expected kind '%s' size %d" % (what, arr.dtype,
                                                                         kind_char, itemsize))


def nonzero(arr):
    if not np.any(arr != 0):
        raise Fail("internal: random input is all zeros")
    return arr


# Random inputs: each returns (array to store in the .npy file, exact float64 values).
def rand_f32(ctx, shape, scale=1.0):
    a = (ctx.rng.standard_normal(shape) * scale).astype(np.float32)
    return nonzero(a), a.astype(np.float64)


def rand_f16(ctx, shape, scale=1.0):
    a = (ctx.rng.standard_normal(shape) * scale).astype(np.float16)
    return nonzero(a), a.astype(np.float64)


def rand_bf16(ctx, shape, scale=1.0):
    need_ml_dtypes()
    a = (ctx.rng.standard_normal(shape) * scale).astype(ml_dtypes.bfloat16)
    return nonzero(a.view(np.uint16)), a.astype(np.float64)


def rand_e4m3(ctx, shape, lim=4.0):
    need_ml_dtypes()
    a = ctx.rng.uniform(-lim, lim, shape).astype(ml_dtypes.float8_e4m3fn)
    return nonzero(a.view(np.uint8)), a.astype(np.float64)


def rand_dtype(ctx, dtype, shape, scale=1.0):
    return {"float32": rand_f32, "float16": rand_f16, "bfloat16": rand_bf16}[dtype](ctx, shape, scale)


def decode(arr, dtype):
    """Stored .npy array -> float64 values, checking the file's dtype follows the contract."""
    if dtype == "float32":
        expect_descr(arr, "f", 4, dtype)
        return arr.astype(np.float64)
    if dtype == "float16":
        expect_descr(arr, "f", 2, dtype)
        return arr.astype(np.float64)
    if dtype == "float64":
        expect_descr(arr, "f", 8, dtype)
        return arr.astype(np.float64)
    if dtype == "bfloat16":
        need_ml_dtypes()
        expect_descr(arr, "u", 2, dtype + " (raw bits '<u2')")
        return arr.view(ml_dtypes.bfloat16).astype(np.float64)
    raise AssertionError(dtype)


# e2m1 decoding table written out from the format definition (s e e m, bias 1), used to
# cross-check ml_dtypes in the fp4 tests.
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def e2m1_values(nibbles):
    need_ml_dtypes()
    table = np.array(E2M1, dtype=np.float64)
    via_table = table[nibbles]
    via_ml = nibbles.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    if not np.array_equal(via_table, via_ml):
        raise Fail("internal: e2m1 table disagrees with ml_dtypes")
    return via_table


# --------------------------------------------------------------------------------------
# seed programs (acceptance: M=N=K=64 in float32, relerr <= 1e-6)
# --------------------------------------------------------------------------------------
# Bound: the interpreter accumulates K float32 products sequentially; the rounding error of
# a length-K dot product grows like u*sqrt(K) for random data (about 4e-7 at K=64), well
# under the acceptance bar of 1e-6, which we apply at every size <= 64.
SEED_BOUND = 1e-6


def seed_return(ctx, example, M, N, K):
    A, A64 = rand_f32(ctx, (M, K))
    B, B64 = rand_f32(ctx, (K, N))
    res = ctx.run_program(ex(example), defines=[("M", M), ("N", N), ("K", K)],
                          ins=[("A", A), ("B", B)], outs=["ret"])
    check_close("%s %dx%dx%d ret" % (example, M, N, K), decode(res["ret"], "float32"),
                A64 @ B64, SEED_BOUND)


@test
def test_seed000_64(ctx):
    seed_return(ctx, "seed_matmul_000.tl", 64, 64, 64)


@test
def test_seed000_ragged(ctx):
    seed_return(ctx, "seed_matmul_000.tl", 61, 37, 53)


@test
def test_seed004_64(ctx):
    seed_return(ctx, "seed_matmul_004.tl", 64, 64, 64)


@test
def test_seed004_ragged(ctx):
    seed_return(ctx, "seed_matmul_004.tl", 29, 47, 59)


def seed002(ctx, M, N, K):
    A, A64 = rand_f32(ctx, (M, K))
    B, B64 = rand_f32(ctx, (K, N))
    # C is an unannotated parameter: its shape comes from --shape (it is written entirely).
    res = ctx.run_program(ex("seed_matmul_002.tl"), ins=[("A", A), ("B", B)], outs=["C"],
                          extra=["--shape", "C=%dx%d" % (M, N)])
    check_close("seed_matmul_002 %dx%dx%d C" % (M, N, K), decode(res["C"], "float32"),
                A64 @ B64, SEED_BOUND)


@test
def test_seed002_64(ctx):
    seed002(ctx, 64, 64, 64)


@test
def test_seed002_ragged(ctx):
    seed002(ctx, 43, 31, 61)


# --------------------------------------------------------------------------------------
# plain-form programs
# --------------------------------------------------------------------------------------
@test
def test_batched_matmul(ctx):
    Bt, M, N, K = 3, 17, 23, 29
    A, A64 = rand_f32(ctx, (Bt, M, K))
    W, W64 = rand_f32(ctx, (Bt, K, N))
    # Sizes bound from the shapes of the --in files (no -D).
    res = ctx.run_program(ex("batched_matmul.tl"), ins=[("A", A), ("W", W)], outs=["ret"])
    # Bound: f32 dot products of length 29 (see SEED_BOUND).
    check_close("batched_matmul", decode(res["ret"], "float32"), np.matmul(A64, W64), 1e-6)


@test
def test_matvec(ctx):
    M, N = 100, 67
    A, A64 = rand_f32(ctx, (M, N))
    x, x64 = rand_f32(ctx, (N,))
    b, b64 = rand_f32(ctx, (M,))
    y0, _ = rand_f32(ctx, (M,))  # y is an output parameter; its old contents must not matter
    res = ctx.run_program(ex("matvec.tl"), ins=[("A", A), ("x", x), ("bias", b), ("y", y0)],
                          outs=["y"])
    # Bound: f32 dot product of length 67 plus the bias: ~u*sqrt(N) = 5e-7.
    check_close("matvec", decode(res["y"], "float32"), A64 @ x64 + b64, 1e-6)


def softmax_ref(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


@test
def test_softmax_plain(ctx):
    M, N = 13, 100
    # scale 10: exp(x) alone would overflow nowhere in f32 here, but the max subtraction
    # matters for accuracy; the values spread over e^-60..1.
    X, X64 = rand_f32(ctx, (M, N), scale=10.0)
    res = ctx.run_program(ex("softmax_plain.tl"), ins=[("X", X)], outs=["ret"])
    # Bound: per element exp (~u), the division (~u) and an f32 sum of N=100 positive terms
    # (<= N*u = 6e-6 worst case, ~u*sqrt(N) typically).
    check_close("softmax_plain", decode(res["ret"], "float32"), softmax_ref(X64), 1e-5)


# --------------------------------------------------------------------------------------
# tile-form programs
# --------------------------------------------------------------------------------------
@test
def test_add_ragged(ctx):
    M, N = 100, 37  # ragged in both dimensions against 32x32 blocks
    A, A64 = rand_f32(ctx, (M, N))
    B, B64 = rand_f32(ctx, (M, N))
    C0, _ = rand_f32(ctx, (M, N))
    res = ctx.run_program(ex("add.tl"), defines=[("M", M), ("N", N)],
                          ins=[("A", A), ("B", B), ("C", C0)], outs=["C"])
    out = decode(res["C"], "float32")
    # Bound: one correctly rounded f32 addition per element: <= u relative.
    check_close("add f32 %dx%d" % (M, N), out, A64 + B64, U32)
    # and bit-exact: the sum of two floats rounded once to f32 (IEEE addition).
    exact = (A64 + B64).astype(np.float32)
    if not np.array_equal(res["C"], exact):
        bad = np.argwhere(res["C"] != exact)[0]
        raise Fail("add is not bit-exact at %s: got %r expected %r"
                   % (tuple(bad), res["C"][tuple(bad)], exact[tuple(bad)]))


@test
def test_add_f16(ctx):
    M, N = 45, 70
    A, A64 = rand_f16(ctx, (M, N))
    B, B64 = rand_f16(ctx, (M, N))
    res = ctx.run_program(ex("add.tl"), defines=[("M", M), ("N", N), ("dtype", "float16"),
                                                 ("block_M", 16), ("block_N", 64)],
                          ins=[("A", A), ("B", B)], outs=["C"])
    out = decode(res["C"], "float16")
    # f16 + f16 is exact in f32; the store rounds once to f16: bit-exact with NumPy's
    # rounding of the exact sum.
    exact = (A64 + B64).astype(np.float16)
    check_close("add f16 %dx%d" % (M, N), out, A64 + B64, U16)
    if not np.array_equal(res["C"], exact):
        bad = np.argwhere(res["C"] != exact)[0]
        raise Fail("f16 add is not bit-exact at %s: got %r expected %r"
                   % (tuple(bad), res["C"][tuple(bad)], exact[tuple(bad)]))


def gemm_case(ctx, M, N, K, dtype, out_dtype="float32", trans_B=False, defines=(), bound=None):
    A, A64 = rand_dtype(ctx, dtype, (M, K))
    Bshape = (N, K) if trans_B else (K, N)
    B, B64 = rand_dtype(ctx, dtype, Bshape)
    ref = A64 @ (B64.T if trans_B else B64)
    d = [("M", M), ("N", N), ("K", K), ("dtype", dtype), ("out_dtype", out_dtype),
         ("trans_B", "True" if trans_B else "False")] + list(defines)
    res = ctx.run_program(ex("gemm.tl"), defines=d, ins=[("A", A), ("B", B)], outs=["C"])
    out = decode(res["C"], out_dtype)
    check_close("gemm %s->%s %dx%dx%d%s" % (dtype, out_dtype, M, N, K, " NT" if trans_B else ""),
                out, ref, bound)


# GEMM bounds. Inputs are exact in their dtype and the reference uses those exact values,
# so input rounding is not an error. f16*f16 and bf16*bf16 products are exact in f32
# (11+11 and 8+8 significant bits <= 24), so the only error with an f32 output is the f32
# accumulation: ~u*sqrt(K) ~ 6e-7 for K <= 100; we allow 1e-5 since the block order of the
# sum is the implementation's choice. With a bf16 output each element is additionally
# rounded to 8 significant bits (<= 2^-8 relative; typically ~1.5e-3 norm-wise), so
# norm-wise <= 2^-8 ~ 3.9e-3: bound 4e-3.
GEMM_F32_BOUND = 1e-5
GEMM_BF16_OUT_BOUND = 4e-3


@test
def test_gemm_f32_64(ctx):
    gemm_case(ctx, 64, 64, 64, "float32", bound=GEMM_F32_BOUND)


@test
def test_gemm_f32_ragged(ctx):
    gemm_case(ctx, 100, 72, 52, "float32", bound=GEMM_F32_BOUND)


@test
def test_gemm_f32_small_blocks(ctx):
    # Non-default factory parameters bound with -D; primes everywhere.
    gemm_case(ctx, 37, 41, 43, "float32", bound=GEMM_F32_BOUND,
              defines=[("block_M", 16), ("block_N", 32), ("block_K", 8), ("num_stages", 3)])


@test
def test_gemm_f16_ragged(ctx):
    gemm_case(ctx, 100, 67, 83, "float16", bound=GEMM_F32_BOUND)


@test
def test_gemm_bf16(ctx):
    gemm_case(ctx, 64, 128, 96, "bfloat16", bound=GEMM_F32_BOUND)


@test
def test_gemm_bf16_nt_ragged(ctx):
    gemm_case(ctx, 97, 64, 100, "bfloat16", trans_B=True, bound=GEMM_F32_BOUND)


@test
def test_gemm_bf16_out_bf16(ctx):
    gemm_case(ctx, 70, 66, 64, "bfloat16", out_dtype="bfloat16", bound=GEMM_BF16_OUT_BOUND)


def gemm_fp8_case(ctx, M, N, K, out_dtype, bound):
    A, A64 = rand_e4m3(ctx, (M, K))
    B, B64 = rand_e4m3(ctx, (N, K))  # B stored N x K
    res = ctx.run_program(ex("gemm_fp8.tl"),
                          defines=[("M", M), ("N", N), ("K", K), ("out_dtype", out_dtype)],
                          ins=[("A", A), ("B", B)], outs=["C"])
    check_close("gemm_fp8 e4m3->%s %dx%dx%d" % (out_dtype, M, N, K),
                decode(res["C"], out_dtype), A64 @ B64.T, bound)


@test
def test_gemm_fp8(ctx):
    # e4m3 products (4+4 significant bits) are exact in f32; only the f32 accumulation
    # errs (~u*sqrt(K)): GEMM_F32_BOUND. K=160 is ragged against block_K=64.
    gemm_fp8_case(ctx, 100, 96, 160, "float32", GEMM_F32_BOUND)


@test
def test_gemm_fp8_out_bf16(ctx):
    gemm_fp8_case(ctx, 64, 70, 128, "bfloat16", GEMM_BF16_OUT_BOUND)


def fp4_inputs(ctx, M, N, K):
    A, A64 = rand_bf16(ctx, (M, K))
    nib = ctx.rng.integers(0, 16, size=(N, K)).astype(np.uint8)
    nib[0, :16] = np.arange(16)  # every code appears at least once
    packed = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)  # element 2i low nibble
    return A, A64, packed, e2m1_values(nib)


@test
def test_gemm_fp4(ctx):
    M, N, K = 100, 72, 96  # ragged in M, N and K against 64x64x64 blocks
    A, A64, Bp, W64 = fp4_inputs(ctx, M, N, K)
    res = ctx.run_program(ex("gemm_fp4.tl"), defines=[("M", M), ("N", N), ("K", K)],
                          ins=[("A", A), ("B", Bp)], outs=["C"], extra=["-f", "matmul_fp4"])
    # bf16 * e2m1 products (8+2 significant bits) are exact in f32; dequantisation to bf16
    # is exact; only the f32 accumulation errs.
    check_close("gemm_fp4 %dx%dx%d" % (M, N, K), decode(res["C"], "float32"), A64 @ W64.T,
                GEMM_F32_BOUND)


@test
def test_gemm_fp4_mx(ctx):
    M, N, K = 64, 50, 128
    A, A64, Bp, W64 = fp4_inputs(ctx, M, N, K)
    S = ctx.rng.integers(124, 131, size=(N, K // 32)).astype(np.uint8)  # 2^-3 .. 2^3
    scale = np.repeat(np.exp2(S.astype(np.float64) - 127.0), 32, axis=1)
    res = ctx.run_program(ex("gemm_fp4.tl"), defines=[("M", M), ("N", N), ("K", K)],
                          ins=[("A", A), ("B", Bp), ("Scale", S)], outs=["C"],
                          extra=["-f", "matmul_fp4_mx"])
    # Power-of-two scales keep the dequantised values exact: as test_gemm_fp4.
    check_close("gemm_fp4_mx %dx%dx%d" % (M, N, K), decode(res["C"], "float32"),
                A64 @ (W64 * scale).T, GEMM_F32_BOUND)


def softmax_case(ctx, M, N, dtype, bound, scale=1.0, defines=()):
    X, X64 = rand_dtype(ctx, dtype, (M, N), scale)
    res = ctx.run_program(ex("softmax.tl"),
                          defines=[("M", M), ("N", N), ("dtype", dtype)] + list(defines),
                          ins=[("X", X)], outs=["Y"])
    check_close("softmax %s %dx%d" % (dtype, M, N), decode(res["Y"], dtype), softmax_ref(X64),
                bound)


@test
def test_softmax_f32(ctx):
    # Ragged in M (20 vs block_M=8) and N (300 vs block_N=64); scale 20 makes the max
    # subtraction and the online rescaling matter (exp(x) alone overflows f32 at x > 88).
    # Bound: exp, the rescaling products, division and an f32 sum of 300 terms: a few u per
    # element, ~u*sqrt(N) from the sum: 1e-5.
    softmax_case(ctx, 20, 300, "float32", 1e-5, scale=20.0)


@test
def test_softmax_f32_prime(ctx):
    softmax_case(ctx, 7, 131, "float32", 1e-5, scale=3.0,
                 defines=[("block_M", 4), ("block_N", 32)])


@test
def test_softmax_bf16(ctx):
    # bf16 input (exact) computed in f32, output rounded to bf16: <= 2^-8 per element.
    softmax_case(ctx, 16, 200, "bfloat16", 4e-3, scale=4.0)


def rmsnorm_ref(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rmsnorm_case(ctx, M, N, dtype, bound):
    X, X64 = rand_dtype(ctx, dtype, (M, N))
    W, W64 = rand_dtype(ctx, dtype, (N,))
    res = ctx.run_program(ex("rmsnorm.tl"), defines=[("M", M), ("N", N), ("dtype", dtype)],
                          ins=[("X", X), ("W", W)], outs=["Y"])
    check_close("rmsnorm %s %dx%d" % (dtype, M, N), decode(res["Y"], dtype),
                rmsnorm_ref(X64, W64, 1e-6), bound)


@test
def test_rmsnorm_f32(ctx):
    # Bound: f32 sum of N squares (~u*sqrt(N)), rsqrt and two products: 1e-5.
    rmsnorm_case(ctx, 100, 96, "float32", 1e-5)


@test
def test_rmsnorm_bf16(ctx):
    # bf16 output rounding dominates: <= 2^-8 per element.
    rmsnorm_case(ctx, 37, 64, "bfloat16", 4e-3)


def attention_ref(q, k, v, causal):
    # q, k, v: [batch, seq, heads, dim] float64
    b, s, h, d = q.shape
    qh = q.transpose(0, 2, 1, 3)
    kh = k.transpose(0, 2, 1, 3)
    vh = v.transpose(0, 2, 1, 3)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(d)
    if causal:
        mask = np.triu(np.ones((s, s), dtype=bool), 1)
        scores = np.where(mask, -np.inf, scores)
    p = softmax_ref(scores)
    return (p @ vh).transpose(0, 2, 1, 3)


def attention_case(ctx, batch, heads, seq, dim, causal, dtype, bound, defines=()):
    shape = (batch, seq, heads, dim)
    Q, Q64 = rand_dtype(ctx, dtype, shape)
    Kt, K64 = rand_dtype(ctx, dtype, shape)
    V, V64 = rand_dtype(ctx, dtype, shape)
    d = [("batch", batch), ("heads", heads), ("seq_len", seq), ("dim", dim),
         ("is_causal", "True" if causal else "False"), ("dtype", dtype)] + list(defines)
    res = ctx.run_program(ex("flash_attention.tl"), defines=d,
                          ins=[("Q", Q), ("K", Kt), ("V", V)], outs=["Output"])
    check_close("flash_attention %s b%d h%d s%d d%d%s" % (dtype, batch, heads, seq, dim,
                                                         " causal" if causal else ""),
                decode(res["Output"], dtype), attention_ref(Q64, K64, V64, causal), bound)


# Flash-attention bounds. f16: the probabilities P are rounded to f16 before the second
# GEMM (<= 2^-11 relative each, errors of different signs partly cancel in P@V) and the
# output is rounded to f16 (<= 2^-11): at most ~2*2^-11 ~ 1e-3 norm-wise; bound 2e-3.
# bf16: the same with 2^-8: <= ~7.8e-3; bound 8e-3. f32: exp2/rescaling/f32 sums only: 1e-5.
@test
def test_flash_attention_f16(ctx):
    attention_case(ctx, 1, 2, 100, 32, False, "float16", 2e-3)


@test
def test_flash_attention_f16_causal(ctx):
    attention_case(ctx, 2, 1, 100, 32, True, "float16", 2e-3)


@test
def test_flash_attention_bf16_causal(ctx):
    attention_case(ctx, 1, 2, 128, 32, True, "bfloat16", 8e-3)


@test
def test_flash_attention_f32_causal_prime(ctx):
    attention_case(ctx, 1, 1, 67, 16, True, "float32", 1e-5,
                   defines=[("block_M", 32), ("block_N", 16)])


@test
def test_flash_attention_f32_prime(ctx):
    attention_case(ctx, 1, 2, 53, 16, False, "float32", 1e-5,
                   defines=[("block_M", 16), ("block_N", 32)])


# --------------------------------------------------------------------------------------
# language semantics: integer ops, math, reductions/atomics, jit outputs, several returns,
# control flow (small programs in tests/programs/data)
# --------------------------------------------------------------------------------------
def wrap32(v):
    return ((np.asarray(v, dtype=np.int64) + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


@test
def test_intops(ctx):
    # Python semantics on int32: // and % floor (sign of the divisor), >> arithmetic,
    # << and * wrap (two's complement), bitwise ops. Bit-exact.
    big = ctx.rng.integers(-2 ** 31, 2 ** 31, size=300, dtype=np.int64)
    small = ctx.rng.integers(-50, 51, size=300, dtype=np.int64)
    a = np.concatenate([big, small, [-7, 7, -7, 7, 0, -1, -2 ** 31, 2 ** 31 - 1, -2 ** 31]])
    bb = ctx.rng.integers(-2 ** 31, 2 ** 31, size=300, dtype=np.int64)
    bs = ctx.rng.integers(-9, 10, size=300, dtype=np.int64)
    b = np.concatenate([bb, bs, [2, 2, -2, -2, 5, 3, 7, -1, -1]])
    b[b == 0] = 3
    A, B = a.astype(np.int32), b.astype(np.int32)
    res = ctx.run_program(os.path.join(DATA, "intops.tl"), ins=[("A", A), ("B", B)], outs=["R"],
)
    a64, b64 = A.astype(np.int64), B.astype(np.int64)
    want = np.stack([wrap32(a64 // b64), wrap32(a64 % b64), A >> 3, wrap32(a64 << 4),
                     A & B, A | B, A ^ B, ~A, wrap32(a64 * b64 + 7)])
    names = ["//", "%", ">> 3", "<< 4", "&", "|", "^", "~", "* + 7"]
    R = res["R"]
    expect_descr(R, "i", 4, "R")
    bad = []
    for k, nm in enumerate(names):
        d = np.nonzero(R[k] != want[k])[0]
        print("  %-6s %d of %d differ" % (nm, d.size, a.size))
        if d.size:
            i = d[0]
            bad.append("%s: %d differ, e.g. a=%d b=%d got %d want %d"
                       % (nm, d.size, A[i], B[i], R[k, i], want[k, i]))
    if bad:
        raise Fail("; ".join(bad))


@test
def test_math(ctx):
    n = 200
    X = (ctx.rng.standard_normal(n) * 3).astype(np.float32)
    Y = (ctx.rng.standard_normal(n) * 3).astype(np.float32)
    X[:4] = [0.0, -0.0, 1.0, -2.5]
    Y[:4] = [0.0, 1.0, 1.0, -2.5]  # includes x == y for the if_then_else / max / min
    res = ctx.run_program(os.path.join(DATA, "mathops.tl"), defines=[("N", n)],
                          ins=[("X", X), ("Y", Y)], outs=["R"])
    R = res["R"].astype(np.float64)
    x, y = X.astype(np.float64), Y.astype(np.float64)
    f32 = np.float32
    # The arguments |x| + 0.5 and |x| + 0.25 are rounded to f32 by the program: the
    # reference takes them as the program computes them, then applies the exact function.
    a05 = (np.abs(X) + f32(0.5)).astype(np.float64)
    a025 = (np.abs(X) + f32(0.25)).astype(np.float64)
    ax = np.abs(x)
    rows = [
        ("exp", np.exp(x), 2.5e-7), ("exp2", np.exp2(x), 2.5e-7),
        ("log", np.log(a05), 2.5e-7), ("log2", np.log2(a05), 2.5e-7),
        ("sqrt", np.sqrt(ax), 2.5e-7), ("rsqrt", 1 / np.sqrt(a025), 2.5e-7),
        ("tanh", np.tanh(x), 2.5e-7),
        ("max", np.maximum(x, y), 0), ("min", np.minimum(x, y), 0),
        ("if_then_else", np.where(x > y, (X - Y).astype(np.float64), (Y * f32(2)).astype(np.float64)), 0),
        ("cast int32", np.trunc((X * f32(100)).astype(np.float64)), 0),
        ("astype f16", X.astype(np.float16).astype(np.float64), 0),
    ]
    # Bounds: the interpreter evaluates in double and rounds to f32, so each transcendental
    # is within 1 ulp (2^-23 relative) of the exact value, well within 2.5e-7 relative;
    # everything else is exact. 0.5 is added inside log so the argument stays > 0; the
    # exact rows are computed with float32 arithmetic where the program does (x - y, y*2,
    # x*100 round in f32).
    bad = []
    for k, (nm, want, tol) in enumerate(rows):
        rel = np.abs(R[k] - want) / np.maximum(np.abs(want), 1e-30)
        worst = int(np.argmax(rel))
        print("  %-14s max elementwise relerr %.2e (bound %.1e)" % (nm, rel[worst], tol))
        if not rel[worst] <= tol:
            bad.append("%s: x=%r y=%r got %r want %r" % (nm, X[worst], Y[worst], R[k, worst],
                                                         want[worst]))
    if bad:
        raise Fail("; ".join(bad))


@test
def test_reduce_atomic(ctx):
    M, N = 75, 70  # ragged against block_M = 16
    A, A64 = rand_f32(ctx, (M, N))
    C0, C064 = rand_f32(ctx, (N,))
    outs = ["Rmax", "Rmin", "Rsum", "Rmax15", "Rsum2", "Csum"]
    res = ctx.run_program(os.path.join(DATA, "reduce.tl"), defines=[("M", M), ("N", N)],
                          ins=[("A", A), ("Csum", C0)], outs=outs)
    # max/min are exact; sums are f32 sums of 70 (rows) or 5 partial sums of <= 16
    # (columns, in block order through atomics): ~u*sqrt(n), bound 1e-6.
    check_close("reduce_max dim=1", res["Rmax"], A64.max(1), 0)
    check_close("reduce_min dim=1", res["Rmin"], A64.min(1), 0)
    check_close("reduce_sum dim=1", res["Rsum"], A64.sum(1), 1e-6)
    check_close("reduce_max clear=False (1.5)", res["Rmax15"], np.maximum(A64.max(1), 1.5), 0)
    check_close("reduce_sum clear=False (2.0)", res["Rsum2"], A64.sum(1) + 2.0, 1e-6)
    check_close("reduce_sum dim=0 + atomic_add", res["Csum"], C064 + A64.sum(0), 1e-6)


@test
def test_jit_out_idx(ctx):
    # @tilelang.jit(out_idx=[-1]): B is an output the runtime allocates; --out ret gets it.
    M, N = 45, 24
    A, A64 = rand_f32(ctx, (M, N))
    res = ctx.run_program(os.path.join(DATA, "jit_scale.tl"), defines=[("M", M), ("N", N)],
                          ins=[("A", A)], outs=["ret"])
    # one f32 multiplication per element: bit-exact with NumPy's IEEE f32 product
    check_close("jit out_idx ret", res["ret"], (A * np.float32(2.5)).astype(np.float64), 0)
    res = ctx.run_program(os.path.join(DATA, "jit_scale.tl"),
                          defines=[("M", M), ("N", N), ("alpha", "-0.75")],
                          ins=[("A", A)], outs=["ret"])
    check_close("jit out_idx ret, -D alpha=-0.75", res["ret"],
                (A * np.float32(-0.75)).astype(np.float64), 0)


@test
def test_multiple_returns(ctx):
    X, X64 = rand_f32(ctx, (9, 13))
    res = ctx.run_program(os.path.join(DATA, "minmax.tl"), ins=[("X", X)], outs=["ret0", "ret1"])
    check_close("ret0 = row min", res["ret0"], X64.min(1), 0)
    check_close("ret1 = row max", res["ret1"], X64.max(1), 0)


@test
def test_control_flow(ctx):
    M, N = 31, 17
    X, X64 = rand_f32(ctx, (M, N), scale=1.2)
    X[3, :] = -5.0  # no element > 1: the while loop runs to the end
    X64 = X.astype(np.float64)
    res = ctx.run_program(os.path.join(DATA, "control.tl"), ins=[("X", X)], outs=["R"])
    want = np.zeros((M, 4))
    for i in range(M):
        j = 0
        while j < N and not X64[i, j] > 1.0:
            j += 1
        want[i, 0] = j
        want[i, 1] = sum(1 for k in range(N) if k % 3 != 2 and X64[i, k] < 0)
        x = X[i, 0]
        want[i, 2] = -1.0 if x < -1 else float(x * x) if x < 1 else float(np.float32(2) * x)
        want[i, 3] = X64[i, 1] if X64[i, 1] > X64[i, 2] else -X64[i, 2]
    check_close("control flow", res["R"], want, 0)


# --------------------------------------------------------------------------------------
# dtype conversions through a whole program (tests/programs/data/convert.tl): a T.copy and
# an element store, compared BIT FOR BIT with references written from docs/numbers.md
# (round to nearest even once; IEEE overflow -> inf; fp8/fp4 "satfinite": overflow and inf
# -> +-max; e2m1 NaN -> +6; float -> int truncates and saturates, NaN -> 0; -> bool is
# x != 0). NaN bits are not part of the contract: a NaN only has to stay a NaN.
# --------------------------------------------------------------------------------------
FMT_MAX = {"float8_e4m3": 448.0, "float8_e5m2": 57344.0, "float4_e2m1": 6.0}


def ml_type(fmt):
    return {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
            "float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
            "float4_e2m1": ml_dtypes.float4_e2m1fn, "float32": np.float32}[fmt]


def bits_dtype(fmt):
    return {"bfloat16": np.uint16, "float16": np.uint16, "float32": np.uint32}.get(fmt, np.uint8)


def all_values(fmt):
    """Every finite value of a small float format, sorted (negative zero dropped)."""
    n = 1 << (16 if fmt in ("bfloat16", "float16") else 8 if fmt.startswith("float8") else 4)
    v = np.arange(n, dtype=np.uint32).astype(bits_dtype(fmt)).view(ml_type(fmt)).astype(np.float64)
    return np.unique(v[np.isfinite(v)])


def conv_ref_from_f32(x32, dst):
    """Expected stored array for float32 values x32 converted to dst."""
    x = x32.astype(np.float64)
    with np.errstate(all="ignore"):
        if dst in ("int8", "uint8", "int32"):
            info = np.iinfo(dst)
            return np.where(np.isnan(x), 0, np.clip(np.trunc(np.nan_to_num(x, posinf=info.max,
                            neginf=info.min)), info.min, info.max)).astype(dst)
        if dst == "bool":
            return x != 0
        if dst == "float16":
            return x32.astype(np.float16)
        if dst == "bfloat16":
            return x32.astype(ml_dtypes.bfloat16).view(np.uint16)
        r = x32.astype(ml_type(dst)).astype(np.float64)  # ml_dtypes: RNE
        mx = FMT_MAX[dst]
        over = ~np.isnan(x) & (np.isinf(r) | np.isnan(r) | (np.abs(r) > mx))
        r = np.where(over, np.copysign(mx, x), r)
        if dst == "float4_e2m1":
            r = np.where(np.isnan(x), mx, r)  # no NaN in e2m1: +6 (NVIDIA's rule)
        return r.astype(ml_type(dst)).view(np.uint8)


def stored_is_nan(arr, fmt):
    if fmt in ("float16", "float32", "float64"):
        return np.isnan(arr)
    if fmt in ("bfloat16", "float8_e4m3", "float8_e5m2"):
        return np.isnan(arr.view(ml_type(fmt)).astype(np.float32))
    return np.zeros(arr.shape, bool)


def compare_bits(what, got, want, fmt):
    if got.dtype != want.dtype or got.shape != want.shape:
        raise Fail("%s: .npy is %s%s, expected %s%s" % (what, got.dtype, got.shape, want.dtype,
                                                         want.shape))
    gn, wn = stored_is_nan(got, fmt), stored_is_nan(want, fmt)
    if fmt in ("float16", "float32", "float64"):
        gb, wb = got.view(bits_dtype(fmt) if fmt != "float64" else np.uint64), \
            want.view(bits_dtype(fmt) if fmt != "float64" else np.uint64)
    else:
        gb, wb = got, want
    bad = np.nonzero((gn != wn) | (~wn & (gb != wb)))[0]
    print("  %-40s %d values, %d differ" % (what, got.size, bad.size))
    if bad.size:
        rows = ["    [%d] got %r want %r" % (i, got[i], want[i]) for i in bad[:8]]
        raise Fail("%s: %d of %d values differ, e.g.\n%s" % (what, bad.size, got.size,
                                                             "\n".join(rows)))


def f32_specials():
    v = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, 3.4028235e38, -3.4028235e38,
         1e-45, -1e-45, 1.17549435e-38, 65504.0, 65519.99, 65520.0, 65536.0, 448.0, 449.0,
         464.0, 465.0, 480.0, 57344.0, 61439.0, 61440.0, 1e6, 6.0, 6.5, 7.0, 0.25, 0.75, 2.5,
         5.0, -5.0, 127.9, -0.9, 300.0, 255.5, -128.5, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -10,
         2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -18, 2.0 ** -24, 2.0 ** -25, 2.0 ** -133,
         2.0 ** -134, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11]
    return np.array(v + [-a for a in v], dtype=np.float32)


def conv_inputs_f32(ctx, dst):
    parts = [f32_specials()]
    bits = ctx.rng.integers(0, 1 << 32, size=3000, dtype=np.uint64).astype(np.uint32)
    parts.append(bits.view(np.float32))                     # every exponent, NaNs included
    parts.append((ctx.rng.standard_normal(1000) * 10).astype(np.float32))
    if dst in ("bfloat16", "float16", "float8_e4m3", "float8_e5m2", "float4_e2m1"):
        v = all_values(dst)
        if v.size > 600:
            idx = np.sort(ctx.rng.choice(v.size - 1, 600, replace=False))
        else:
            idx = np.arange(v.size - 1)
        mid = ((v[idx] + v[idx + 1]) / 2).astype(np.float32)  # ties (exact in f32)
        parts += [mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf)),
                  (v[idx]).astype(np.float32)]
    return np.concatenate(parts).astype(np.float32)


def convert_case(ctx, src_arr, src, dst, want):
    n = src_arr.shape[0]
    res = ctx.run_program(os.path.join(DATA, "convert.tl"),
                          defines=[("N", n), ("src", src), ("dst", dst)],
                          ins=[("A", src_arr)], outs=["B", "C"])
    errs = []
    for key, how in (("B", "T.copy"), ("C", "element store")):
        try:
            compare_bits("%s -> %s by %s" % (src, dst, how), res[key], want, dst)
        except Fail as e:
            errs.append(str(e))
    if errs:
        raise Fail("\n".join(errs))


def conv_from_f32(ctx, dst):
    need_ml_dtypes()
    x = conv_inputs_f32(ctx, dst)
    convert_case(ctx, x, "float32", dst, conv_ref_from_f32(x, dst))


@test
def test_convert_f32_to_bf16(ctx):
    conv_from_f32(ctx, "bfloat16")


@test
def test_convert_f32_to_f16(ctx):
    conv_from_f32(ctx, "float16")


@test
def test_convert_f32_to_e4m3(ctx):
    conv_from_f32(ctx, "float8_e4m3")


@test
def test_convert_f32_to_e5m2(ctx):
    conv_from_f32(ctx, "float8_e5m2")


@test
def test_convert_f32_to_e2m1(ctx):
    conv_from_f32(ctx, "float4_e2m1")


@test
def test_convert_f32_to_int(ctx):
    for dst in ("int8", "uint8", "int32", "bool"):
        conv_from_f32(ctx, dst)


@test
def test_convert_decode_to_f32(ctx):
    # Every bit pattern of the small formats (a sample for the 16-bit ones) -> float32,
    # which is exact: the stored bits must equal ml_dtypes' decoding (NaN: any NaN).
    need_ml_dtypes()
    for fmt in ("float8_e4m3", "float8_e5m2", "float4_e2m1", "bfloat16", "float16"):
        if fmt in ("bfloat16", "float16"):
            bits = np.concatenate([np.arange(0, 1 << 16, 7), [0x7C00, 0xFC00, 0x7F80, 0xFF80,
                                                             0x0001, 0x8001, 0x7FFF]])
            bits = bits.astype(np.uint16)
        else:
            bits = np.arange(256 if fmt.startswith("float8") else 16, dtype=np.uint8)
        store = bits.view(np.float16) if fmt == "float16" else bits
        want = bits.view(ml_type(fmt)).astype(np.float32)
        convert_case(ctx, store, fmt, "float32", want)


def round_exact(x, p, emin):
    """x (a finite Python float) rounded once to nearest-even with p significant bits and
    normal exponent >= emin (no overflow handling: callers keep x in range)."""
    if x == 0:
        return x
    m, e = math.frexp(x)          # x = m * 2^e, 0.5 <= |m| < 1
    e = max(e, emin + 1)          # subnormals: fixed quantum 2^(emin + 1 - p)
    q = round(math.ldexp(x, p - e))  # exact scaling; round() is half-to-even on the exact value
    return math.ldexp(q, e - p)


@test
def test_convert_f64_single_rounding(ctx):
    # float64 -> narrow formats round ONCE from the exact double (rounding through float32
    # first would be wrong near midpoints: 1 + 2^-8 + 2^-30 -> bf16 must be 1 + 2^-7).
    need_ml_dtypes()
    fmts = {"bfloat16": (8, -126, 1e30), "float16": (11, -14, 60000.0),
            "float8_e4m3": (4, -6, 440.0), "float8_e5m2": (3, -14, 57000.0)}
    for fmt, (p, emin, lim) in fmts.items():
        half_ulp1 = 2.0 ** -p  # half an ulp at 1.0
        tricky = [1 + half_ulp1 + 2.0 ** -40, 1 + half_ulp1 - 2.0 ** -40, 1 + 3 * half_ulp1 + 2.0 ** -45,
                  1 + 3 * half_ulp1 - 2.0 ** -45, 1 + half_ulp1, 1 + 3 * half_ulp1]
        mags = np.exp2(ctx.rng.uniform(emin - p + 1, math.log2(lim), 2000))
        x = np.concatenate([tricky, [-t for t in tricky], mags * ctx.rng.choice([-1, 1], mags.size)])
        want = np.array([round_exact(float(v), p, emin) for v in x])
        want_st = want.astype(ml_type(fmt)) if fmt != "float16" else want.astype(np.float16)
        if not np.array_equal(want_st.astype(np.float64), want):
            raise Fail("internal: reference values are not representable in " + fmt)
        want_st = want_st.view(np.uint16 if fmt == "bfloat16" else np.uint8) \
            if fmt not in ("float16",) else want_st
        convert_case(ctx, x.astype(np.float64), "float64", fmt, want_st)


@test
def test_convert_i64_to_f32(ctx):
    # int64 -> float32 rounds once from the exact integer (through double it would round
    # twice: 2^60 + 2^36 + 1 must give 2^60 + 2^37).
    def exact(n):
        a = abs(int(n))
        if a.bit_length() > 24:
            sh = a.bit_length() - 24
            q, r = divmod(a, 1 << sh)
            half = 1 << (sh - 1)
            if r > half or (r == half and q & 1):
                q += 1
            a = q << sh
        return math.copysign(float(a), n) if n else 0.0
    vals = [2 ** 60 + 2 ** 36 + 1, 2 ** 60 + 2 ** 36, 2 ** 60 + 3 * 2 ** 36, 2 ** 63 - 1, -2 ** 63,
            2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 53 + 1), 1, -1, 0, 2 ** 40 + 2 ** 16 + 1]
    rnd = ctx.rng.integers(-(2 ** 62), 2 ** 62, size=1000, dtype=np.int64)
    shifts = ctx.rng.integers(0, 40, size=1000)
    x = np.array(vals + [int(v) >> int(s) for v, s in zip(rnd, shifts)], dtype=np.int64)
    want = np.array([exact(int(v)) for v in x], dtype=np.float64).astype(np.float32)
    convert_case(ctx, x, "int64", "float32", want)


# --------------------------------------------------------------------------------------
# the CLI contract
# --------------------------------------------------------------------------------------
FLOAT_RE = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"


def check_error_value(output):
    """Finds the line --check prints ("... relative error X ...") and returns X."""
    for line in output.splitlines():
        m = re.search(r"(?i)rel\w*\s+err\w*\s*[:=]?\s*(%s|nan|inf)" % FLOAT_RE, line)
        if m:
            return float(m.group(1)), line
    raise Fail("--check printed no 'relative error <number>' line; output:\n" + output)


@test
def test_cli_check_line(ctx):
    # Acceptance: the seed matmul with --check on the interpreter prints its error <= 1e-6.
    r = ctx.run_ok("run", ex("seed_matmul_000.tl"), "--target", "interp",
                   "-D", "M=64", "-D", "N=64", "-D", "K=64", "--check")
    val, line = check_error_value(r.stdout + r.stderr)
    print("  --check line: " + line.strip())
    if not (0 <= val <= 1e-6):
        raise Fail("--check reported %g for the seed matmul (acceptance bar 1e-6)" % val)


@test
def test_cli_check_fails(ctx):
    # A program whose f32 result is pure rounding noise ((x + 1e8) - 1e8 loses x entirely),
    # while its f64 re-execution is exact: --check must fail with exit code 2.
    r = ctx.tile_cmd("run", os.path.join(DATA, "cancellation.tl"), "--target", "interp",
                     "-D", "N=64", "--check")
    if r.returncode != 2:
        raise Fail("--check on a program with a 100%% relative error exited %d (expected 2)\n"
                   "stdout:\n%s\nstderr:\n%s" % (r.returncode, r.stdout, r.stderr))
    val, line = check_error_value(r.stdout + r.stderr)
    print("  --check line: " + line.strip())
    if not val > 0.1:
        raise Fail("--check failed but reported a small error %g" % val)


@test
def test_cli_shape(ctx):
    # --shape gives unannotated parameters their shape (and optionally dtype); inputs not
    # given with --in are seeded random data, which --out returns unchanged.
    outs = {k: ctx.path(k + ".npy") for k in "ABC"}
    ctx.run_ok("run", ex("seed_matmul_002.tl"), "--target", "interp",
               "--shape", "A=8x5", "--shape", "B=5x3", "--shape", "C=8x3",
               *sum((["--out", "%s=%s" % (k, p)] for k, p in outs.items()), []))
    A, B, C = (np.load(outs[k]) for k in "ABC")
    for k, arr, shp in (("A", A, (8, 5)), ("B", B, (5, 3)), ("C", C, (8, 3))):
        if arr.shape != shp:
            raise Fail("--out %s has shape %s, expected %s" % (k, arr.shape, shp))
        expect_descr(arr, "f", 4, k + " (unannotated tensors are float32)")
    if not np.any(A != 0) or not np.any(B != 0):
        raise Fail("random inputs are all zeros")
    check_close("seed_matmul_002 --shape 8x5x3", C, A.astype(np.float64) @ B.astype(np.float64),
                SEED_BOUND)


@test
def test_cli_shape_dtype(ctx):
    # --shape NAME=RxC:dtype gives an unannotated parameter its dtype too (they default to
    # float32): all three float64 -> the sum is done in f64.
    outs = {k: ctx.path(k + ".npy") for k in "ABC"}
    ctx.run_ok("run", ex("seed_matmul_002.tl"), "--target", "interp",
               "--shape", "A=6x4:float64", "--shape", "B=4x7:float64", "--shape", "C=6x7:float64",
               *sum((["--out", "%s=%s" % (k, p)] for k, p in outs.items()), []))
    A, B, C = (np.load(outs[k]) for k in "ABC")
    for k, arr in (("A", A), ("B", B), ("C", C)):
        expect_descr(arr, "f", 8, k + " (--shape ...:float64)")
    check_close("seed_matmul_002 --shape f64", C, A @ B, 1e-14)


@test
def test_cli_define_binding(ctx):
    # -D binds symbolic dimensions; with no --in the inputs are random of those shapes.
    pa, pb, pr = ctx.path("A.npy"), ctx.path("B.npy"), ctx.path("ret.npy")
    ctx.run_ok("run", ex("seed_matmul_000.tl"), "--target", "interp", "-D", "M=5", "-D", "N=3",
               "-D", "K=7", "--out", "A=" + pa, "--out", "B=" + pb, "--out", "ret=" + pr)
    A, B, R = np.load(pa), np.load(pb), np.load(pr)
    if A.shape != (5, 7) or B.shape != (7, 3) or R.shape != (5, 3):
        raise Fail("shapes A%s B%s ret%s, expected (5, 7) (7, 3) (5, 3)" % (A.shape, B.shape, R.shape))
    check_close("seed_matmul_000 -D 5x3x7", R, A.astype(np.float64) @ B.astype(np.float64),
                SEED_BOUND)
    # and a factory parameter changes the program: gemm.tl with trans_B=True takes B as NxK.
    pc = ctx.path("C.npy")
    ctx.run_ok("run", ex("gemm.tl"), "--target", "interp", "-D", "M=9", "-D", "N=10",
               "-D", "K=11", "-D", "dtype=float32", "-D", "trans_B=True",
               "--out", "B=" + pb, "--out", "A=" + pa, "--out", "C=" + pc)
    A, B, C = np.load(pa), np.load(pb), np.load(pc)
    if B.shape != (10, 11):
        raise Fail("gemm.tl -D trans_B=True: B has shape %s, expected (10, 11)" % (B.shape,))
    check_close("gemm.tl -D trans_B=True", C, A.astype(np.float64) @ B.astype(np.float64).T,
                GEMM_F32_BOUND)


@test
def test_cli_in_binding(ctx):
    # Symbolic dimensions bound from the shapes of --in files, no -D.
    A, A64 = rand_f32(ctx, (6, 9))
    B, B64 = rand_f32(ctx, (9, 4))
    res = ctx.run_program(ex("seed_matmul_004.tl"), ins=[("A", A), ("B", B)], outs=["ret"])
    if res["ret"].shape != (6, 4):
        raise Fail("ret has shape %s, expected (6, 4)" % (res["ret"].shape,))
    check_close("seed_matmul_004 sizes from --in", res["ret"], A64 @ B64, SEED_BOUND)


@test
def test_cli_shape_mismatch(ctx):
    # A is 5x7 and B is 6x3: K cannot be both 7 and 6 -> a user error (exit 1) saying so.
    pa = ctx.save("A", rand_f32(ctx, (5, 7))[0])
    pb = ctx.save("B", rand_f32(ctx, (6, 3))[0])
    r = ctx.tile_cmd("run", ex("seed_matmul_000.tl"), "--target", "interp",
                     "--in", "A=" + pa, "--in", "B=" + pb)
    if r.returncode != 1:
        raise Fail("inconsistent --in shapes exited %d (expected 1)\n%s%s"
                   % (r.returncode, r.stdout, r.stderr))
    msg = r.stderr + r.stdout
    if "K" not in msg and "shape" not in msg.lower():
        raise Fail("the message does not name the dimension K or the shapes:\n" + msg)
    # -D disagreeing with an --in shape is an error too.
    r = ctx.tile_cmd("run", ex("seed_matmul_000.tl"), "--target", "interp", "-D", "M=4",
                     "--in", "A=" + pa, "--in", "B=" + ctx.save("B2", rand_f32(ctx, (7, 3))[0]))
    if r.returncode != 1:
        raise Fail("-D M=4 with a 5x7 A exited %d (expected 1)\n%s%s"
                   % (r.returncode, r.stdout, r.stderr))


@test
def test_cli_seed(ctx):
    def run(seed, tag):
        pa, pr = ctx.path("A%s.npy" % tag), ctx.path("r%s.npy" % tag)
        ctx.run_ok("run", ex("seed_matmul_000.tl"), "--target", "interp", "-D", "M=8",
                   "-D", "N=8", "-D", "K=8", "--seed", str(seed), "--out", "A=" + pa,
                   "--out", "ret=" + pr)
        return open(pa, "rb").read(), open(pr, "rb").read()
    a1, r1 = run(7, "a")
    a2, r2 = run(7, "b")
    a3, _ = run(8, "c")
    if a1 != a2 or r1 != r2:
        raise Fail("--seed 7 twice gave different inputs or outputs")
    if a1 == a3:
        raise Fail("--seed 7 and --seed 8 gave the same random input")
    A = np.load(ctx.path("Aa.npy"))
    if not np.all(np.isfinite(A)) or np.all(A == 0) or len(np.unique(A)) < 32:
        raise Fail("seeded random input looks degenerate: %r" % A)


@test
def test_cli_out_errors(ctx):
    # --out of a name that is neither a parameter nor a returned tensor: exit 1.
    r = ctx.tile_cmd("run", ex("seed_matmul_000.tl"), "--target", "interp", "-D", "M=4",
                     "-D", "N=4", "-D", "K=4", "--out", "nosuch=" + ctx.path("x.npy"))
    if r.returncode != 1:
        raise Fail("--out nosuch=... exited %d (expected 1)\n%s%s" % (r.returncode, r.stdout, r.stderr))
    if "nosuch" not in r.stderr + r.stdout:
        raise Fail("the message does not name 'nosuch':\n" + r.stderr + r.stdout)
    # a program without a return value has no `ret`.
    r = ctx.tile_cmd("run", ex("matvec.tl"), "--target", "interp", "-D", "M=4", "-D", "N=4",
                     "--out", "ret=" + ctx.path("r.npy"))
    if r.returncode != 1:
        raise Fail("--out ret=... on a kernel without a return exited %d (expected 1)\n%s%s"
                   % (r.returncode, r.stdout, r.stderr))


@test
def test_cli_exit_codes(ctx):
    cases = [
        ("missing file", ["run", ctx.path("does_not_exist.tl")], 1),
        ("unknown option", ["run", ex("add.tl"), "--no-such-option"], 1),
        ("unknown command", ["frobnicate"], 1),
        ("check of a good file", ["check", ex("gemm.tl")], 0),
        ("check of a syntax error", ["check", os.path.join(DATA, "syntax_error.tl")], 1),
        ("unknown target", ["run", ex("seed_matmul_000.tl"), "-D", "M=2", "-D", "N=2", "-D", "K=2",
                            "--target", "bogus"], 1),
        ("unknown function", ["run", ex("gemm.tl"), "-f", "nosuch", "-D", "M=8", "-D", "N=8",
                              "-D", "K=8"], 1),
        ("bad -D", ["run", ex("seed_matmul_000.tl"), "-D", "M"], 1),
        ("bad --shape", ["run", ex("seed_matmul_002.tl"), "--shape", "A=3xq"], 1),
        ("missing --in file", ["run", ex("seed_matmul_000.tl"), "--in",
                               "A=" + ctx.path("nope.npy")], 1),
        ("factory parameter without value", ["run", ex("gemm.tl"), "--target", "interp",
                                             "-D", "M=8", "-D", "N=8"], 1),
    ]
    bad = []
    for what, args, want in cases:
        r = ctx.tile_cmd(*args)
        ok = r.returncode == want
        if ok and want == 1 and not r.stderr.strip():
            ok = False
            what += " (no message on stderr)"
        print("  %-34s exit %d (want %d)%s" % (what, r.returncode, want, "" if ok else "  <-- FAIL"))
        if not ok:
            bad.append("%s: exit %d, expected %d\n  stdout: %s\n  stderr: %s"
                       % (what, r.returncode, want, r.stdout.strip()[:500], r.stderr.strip()[:500]))
    # the syntax error names file:line:col
    r = ctx.tile_cmd("check", os.path.join(DATA, "syntax_error.tl"))
    if not re.search(r"syntax_error\.tl:4:\d+: error:", r.stderr + r.stdout):
        bad.append("tile check syntax_error.tl printed no 'syntax_error.tl:4:COL: error:'\n"
                   + r.stderr + r.stdout)
    r = ctx.tile_cmd("run", ex("gemm.tl"), "--target", "interp", "-D", "M=8", "-D", "N=8")
    if "K" not in r.stderr:
        bad.append("running gemm.tl without K does not name K:\n" + r.stderr)
    if bad:
        raise Fail("\n".join(bad))


@test
def test_cli_select_function(ctx):
    # -f picks one kernel; the other kernels of the file are not specialised, so values
    # that are invalid for them (N // 4 == 0) must not matter.
    po = ctx.path("A.npy")
    ctx.run_ok("run", os.path.join(DATA, "two_kernels.tl"), "--target", "interp", "-f", "good",
               "-D", "N=2", "--out", "A=" + po)
    A = np.load(po)
    if A.shape != (2,) or not np.all(A == 1.0):
        raise Fail("-f good: A = %r, expected [1, 1]" % A)


@test
def test_gemm_fp4_small_k(ctx):
    # K = 16 < 32: fine for matmul_fp4 (no scales); only matmul_fp4_mx needs K % 32 == 0.
    M, N, K = 8, 8, 16
    A, A64, Bp, W64 = fp4_inputs(ctx, M, N, K)
    res = ctx.run_program(ex("gemm_fp4.tl"), defines=[("M", M), ("N", N), ("K", K)],
                          ins=[("A", A), ("B", Bp)], outs=["C"], extra=["-f", "matmul_fp4"])
    check_close("gemm_fp4 %dx%dx%d" % (M, N, K), decode(res["C"], "float32"), A64 @ W64.T,
                GEMM_F32_BOUND)


@test
def test_cli_bad_inputs(ctx):
    # Bad input gives exit 1 and a message, never a crash or an abort.
    good_b = ctx.save("b", np.ones((5, 3), np.float32))
    bad_files = {
        "rank 3 for a rank-2 parameter": np.ones((4, 5, 2), np.float32),
        "Fortran order": np.asfortranarray(np.arange(20, dtype=np.float32).reshape(4, 5)),
    }
    cases = []
    for k, (what, arr) in enumerate(bad_files.items()):
        cases.append((what, ["run", ex("seed_matmul_000.tl"), "--in", "A=" + ctx.save("bad%d" % k, arr),
                             "--in", "B=" + good_b]))
    garbage = ctx.path("garbage.npy")
    with open(garbage, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + b"\xff" * 40)
    trunc = ctx.path("trunc.npy")
    with open(good_b, "rb") as f, open(trunc, "wb") as g:
        g.write(f.read()[:100])
    not_npy = ctx.path("text.npy")
    with open(not_npy, "w") as f:
        f.write("hello\n")
    for what, p in (("garbage header", garbage), ("truncated file", trunc), ("not an npy", not_npy)):
        cases.append((what, ["run", ex("seed_matmul_000.tl"), "--in", "A=" + p, "--in", "B=" + good_b]))
    seed = ["run", ex("seed_matmul_000.tl"), "--target", "interp"]
    cases += [
        ("-D beyond int32", seed + ["-D", "M=1000000000000", "-D", "N=2", "-D", "K=2"]),
        ("zero size", seed + ["-D", "M=0", "-D", "N=2", "-D", "K=2"]),
        # 2^50 bytes per tensor: more than any address space, so it cannot start running
        ("1 PiB tensors", seed + ["-D", "M=16777216", "-D", "N=16777216", "-D", "K=16777216"]),
        ("size overflowing 64 bits", ["run", ex("batched_matmul.tl"), "--target", "interp",
                                      "-D", "Bt=1048576", "-D", "M=2097152", "-D", "K=2097152",
                                      "-D", "N=1"]),
        ("-D of a non-number size", seed + ["-D", "M=abc", "-D", "N=2", "-D", "K=2"]),
    ]
    bad = []
    for what, args in cases:
        cmd = [ctx.tile] + args
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            rc = r.returncode
            msg = (r.stderr + r.stdout).strip()
        except subprocess.TimeoutExpired:
            rc, msg = "timeout", ""
        ok = rc == 1 and msg and "-727379968" not in msg
        print("  %-28s exit %s  %s" % (what, rc, msg.splitlines()[0][:90] if msg else ""))
        if not ok:
            bad.append("%s: exit %s (expected 1 with a message): %s\n    %s"
                       % (what, rc, msg[:300], " ".join(cmd)))
    if bad:
        raise Fail("\n".join(bad))


@test
def test_cli_devices(ctx):
    r = ctx.run_ok("devices")
    if "interp" not in r.stdout:
        raise Fail("`tile devices` does not list interp:\n" + r.stdout)


@test
def test_cli_target_not_built(ctx):
    # Targets other than interp may not be built or have no device here: either they run, or
    # they fail as a user error with a message naming the target.
    for target in ("cuda", "opencl"):
        r = ctx.tile_cmd("run", ex("seed_matmul_000.tl"), "-D", "M=4", "-D", "N=4", "-D", "K=4",
                         "--target", target)
        print("  --target %s: exit %d %s" % (target, r.returncode, r.stderr.strip()[:120]))
        if r.returncode not in (0, 1):
            raise Fail("--target %s exited %d\n%s" % (target, r.returncode, r.stderr))
        if r.returncode == 1 and target not in r.stderr.lower():
            raise Fail("--target %s failed without naming the target:\n%s" % (target, r.stderr))


@test
def test_cli_bench(ctx):
    r = ctx.run_ok("run", ex("seed_matmul_000.tl"), "--target", "interp", "-D", "M=16",
                   "-D", "N=16", "-D", "K=16", "--bench")
    out = (r.stdout + r.stderr).lower()
    if "median" not in out:
        raise Fail("--bench printed no median time:\n" + r.stdout + r.stderr)
    if "gflop" not in out:
        print("  note: --bench printed no GFLOP/s (flop count unknown for this program?)")


@test
def test_cli_ir(ctx):
    r = ctx.run_ok("ir", ex("gemm.tl"), "-D", "M=64", "-D", "N=64", "-D", "K=64")
    low = r.stdout.lower()
    for word in ("gemm", "a_shared", "c_local"):
        if word not in low:
            raise Fail("`tile ir gemm.tl` does not mention %s:\n%s" % (word, r.stdout[:3000]))


@test
def test_cli_out_inplace_param(ctx):
    # --out of an input parameter the program does not write gives back the input unchanged,
    # bit for bit (bf16 as raw '<u2' both ways).
    need_ml_dtypes()
    A, _ = rand_bf16(ctx, (20, 24))
    B, _ = rand_bf16(ctx, (24, 12))
    res = ctx.run_program(ex("gemm.tl"), defines=[("M", 20), ("N", 12), ("K", 24),
                                                  ("dtype", "bfloat16")],
                          ins=[("A", A), ("B", B)], outs=["A", "B"])
    for k, arr in (("A", A), ("B", B)):
        expect_descr(res[k], "u", 2, k + " bf16 raw bits")
        if not np.array_equal(res[k], arr):
            raise Fail("--out %s is not the --in %s bit for bit" % (k, k))


# --------------------------------------------------------------------------------------
def find_tile(arg):
    if arg:
        return arg
    if os.environ.get("TILE"):
        return os.environ["TILE"]
    for d in sorted(os.listdir(ROOT)):
        p = os.path.join(ROOT, d, "bin", "tile")
        if d.startswith("build") and os.access(p, os.X_OK):
            return p
    return None


def run_one(name, tile):
    fn = TESTS[name]
    with tempfile.TemporaryDirectory(prefix="tile-prog-") as tmp:
        ctx = Ctx(tile, tmp, name)
        try:
            fn(ctx)
        except Skip as e:
            print("SKIP %s: %s" % (name, e))
            return SKIP
        except Fail as e:
            print("FAIL %s: %s" % (name, e))
            if ctx.log:
                print("  last command: " + ctx.log[-1])
            return 1
    print("PASS %s" % name)
    return 0


def main():
    if np is not None:
        np.seterr(all="ignore")  # the conversion references make inf/NaN on purpose
    import warnings
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tile", help="path of the tile binary (default: $TILE or build*/bin/tile)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--list-programs", action="store_true",
                    help="list the program tests (not the CLI-contract tests)")
    ap.add_argument("--target", default="interp",
                    help="target the program tests run on (interp, cpu, ...; default interp)")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if a.list:
        print("\n".join(TESTS))
        return 0
    if a.list_programs:
        print("\n".join(n for n in TESTS if not n.startswith("cli_")))
        return 0
    global TARGET
    TARGET = a.target
    unknown = [n for n in a.names if n not in TESTS]
    if unknown:
        print("unknown test(s): %s (see --list)" % " ".join(unknown))
        return 1
    if np is None:
        print("SKIP: numpy is not installed (pip install numpy ml_dtypes)")
        return SKIP
    tile = find_tile(a.tile)
    if not tile or not os.access(tile, os.X_OK):
        print("SKIP: no tile binary (pass --tile PATH)")
        return SKIP
    names = list(TESTS) if a.all or not a.names else a.names
    results = {n: run_one(n, tile) for n in names}
    if len(names) > 1:
        passed = sum(1 for r in results.values() if r == 0)
        failed = [n for n, r in results.items() if r == 1]
        skipped = sum(1 for r in results.values() if r == SKIP)
        print("%d passed, %d failed, %d skipped" % (passed, len(failed), skipped))
        if failed:
            print("failed: " + " ".join(failed))
    codes = set(results.values())
    if 1 in codes:
        return 1
    if codes == {SKIP}:
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
