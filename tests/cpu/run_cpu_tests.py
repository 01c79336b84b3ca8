#!/usr/bin/env python3
"""Tests of the cpu backend through the `tile` CLI (label "cpu").

Usage:
    run_cpu_tests.py [--tile PATH] NAME     run one test (what CTest does: cpu.NAME)
    run_cpu_tests.py [--tile PATH] --all    run every test
    run_cpu_tests.py --list

What is checked:
  - every example program passes `tile run --target cpu --check` (compared with the
    interpreter within the tolerances of docs/cli.md);
  - the disk cache: a second run is a hit; a corrupt entry (truncated .so) and a stale one
    (another kernel's object under this key: stamp mismatch) are detected and rebuilt; two
    processes compiling the same kernel at once both succeed; TILE_CACHE_DIR is honoured;
  - the compiler: CC=clang and CC=gcc both give checked results; a failing compiler is an
    error that names it and shows its output; a missing one makes the target unavailable;
  - run-time errors in generated code (integer division by zero, assert) are messages
    with the source line, never crashes; TILE_CPU_CHECKS=1 reports out-of-bounds accesses;
  - TILE_NUM_THREADS=1 and =3 give the same results as the default pool;
  - row kernels (TileOpt's rowfuse): softmax (tile and plain form) and RMSNorm on ragged
    shapes, one row and many, N not a multiple of the vector width, bf16, checked builds,
    special values (-inf runs, NaN, inf) against the interpreter.
Needs only Python 3. Exit status 0 pass, 1 fail, 77 skip.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
EX = os.path.join(ROOT, "examples")
DATA = os.path.join(HERE, "data")
TIMEOUT = 120


class Fail(Exception):
    pass


class Skip(Exception):
    pass


TESTS = {}


def test(fn):
    TESTS[fn.__name__[len("test_"):]] = fn
    return fn


class Ctx:
    def __init__(self, tile, tmp, fresh):
        self.tile = tile
        self.tmp = tmp
        # the cache tests need an empty cache; the others may share TILE_CPU_TEST_CACHE
        shared = os.environ.get("TILE_CPU_TEST_CACHE")
        self.cache = shared if shared and not fresh else os.path.join(tmp, "cache")

    def env(self, **kw):
        e = dict(os.environ)
        e["TILE_CACHE_DIR"] = self.cache
        e.pop("TILE_LOG", None)
        for k, v in kw.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = str(v)
        return e

    def run(self, args, env=None, expect=0):
        cmd = [self.tile] + [str(a) for a in args]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env or self.env())
        except subprocess.TimeoutExpired:
            raise Fail("timed out: " + " ".join(cmd))
        if r.returncode < 0:
            raise Fail("`%s` crashed (signal %d)\n%s" % (" ".join(cmd), -r.returncode, r.stderr))
        if expect is not None and r.returncode != expect:
            raise Fail("`%s` exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s"
                       % (" ".join(cmd), r.returncode, expect, r.stdout[-3000:], r.stderr[-3000:]))
        return r

    def sos(self):
        return sorted(glob.glob(os.path.join(self.cache, "cpu-*.so")))


def check_ok(r, what):
    lines = [l for l in r.stdout.splitlines() if l.startswith("check ")]
    if not lines:
        raise Fail("%s: no check line in\n%s" % (what, r.stdout))
    for l in lines:
        if not l.rstrip().endswith(")") or ": ok (" not in l:
            raise Fail("%s: %s" % (what, l))
    print("  %-60s %s" % (what, lines[0][:110]))


# the example programs with small sizes (the interpreter computes the reference)
EXAMPLES = [
    ("add.tl", ["-D", "M=100", "-D", "N=37"]),
    ("batched_matmul.tl", ["-D", "Bt=3", "-D", "M=33", "-D", "N=20", "-D", "K=17"]),
    ("flash_attention.tl", ["-D", "batch=1", "-D", "heads=2", "-D", "seq_len=100", "-D", "dim=32",
                            "-D", "is_causal=True"]),
    ("gemm.tl", ["-D", "M=100", "-D", "N=72", "-D", "K=52"]),
    ("gemm.tl", ["-D", "M=70", "-D", "N=65", "-D", "K=40", "-D", "dtype=bfloat16", "-D", "trans_B=True"]),
    ("gemm_fp4.tl", ["-f", "matmul_fp4", "-D", "M=64", "-D", "N=64", "-D", "K=128"]),
    ("gemm_fp4.tl", ["-f", "matmul_fp4_mx", "-D", "M=64", "-D", "N=64", "-D", "K=128"]),
    ("gemm_fp8.tl", ["-D", "M=100", "-D", "N=96", "-D", "K=160", "-D", "out_dtype=bfloat16"]),
    ("matvec.tl", ["-D", "M=300", "-D", "N=129"]),
    ("rmsnorm.tl", ["-D", "M=100", "-D", "N=96", "-D", "dtype=bfloat16"]),
    ("seed_matmul_000.tl", ["-D", "M=31", "-D", "N=17", "-D", "K=23"]),
    ("seed_matmul_002.tl", ["--shape", "A=40x24", "--shape", "B=24x33", "--shape", "C=40x33"]),
    ("seed_matmul_004.tl", ["-D", "M=31", "-D", "N=17", "-D", "K=23"]),
    ("softmax.tl", ["-D", "M=100", "-D", "N=300"]),
    ("softmax_plain.tl", ["-D", "M=64", "-D", "N=100"]),
    ("softmax_row.tl", ["-D", "M=37", "-D", "N=301"]),
]


@test
def test_examples_check(ctx):
    """tile run --target cpu --check on every example program."""
    names = {os.path.basename(p) for p in glob.glob(os.path.join(EX, "*.tl"))}
    missing = names - {e for e, _ in EXAMPLES}
    if missing:
        raise Fail("examples without a cpu check here: %s" % " ".join(sorted(missing)))
    for ex, args in EXAMPLES:
        r = ctx.run(["run", os.path.join(EX, ex), "--target", "cpu", "--check", "--quiet"] + args)
        check_ok(r, "%s %s" % (ex, " ".join(args)))


def seed_args():
    return ["run", os.path.join(EX, "seed_matmul_000.tl"), "--target", "cpu", "-D", "M=8", "-D", "N=9",
            "-D", "K=10", "--quiet"]


@test
def test_cache_hit(ctx):
    r = ctx.run(seed_args(), env=ctx.env(TILE_LOG="info"))
    if "compiled" not in r.stderr:
        raise Fail("first run in an empty cache did not compile:\n" + r.stderr)
    if len(ctx.sos()) != 1:
        raise Fail("expected one shared object in TILE_CACHE_DIR, found %s" % ctx.sos())
    if not glob.glob(os.path.join(ctx.cache, "cpu-*.c")):
        raise Fail("the generated source is not kept next to the object")
    r = ctx.run(seed_args(), env=ctx.env(TILE_LOG="info"))
    if "cache hit" not in r.stderr:
        raise Fail("second run was not a cache hit:\n" + r.stderr)
    left = [f for f in os.listdir(ctx.cache) if f.startswith("tmp-")]
    if left:
        raise Fail("temporary files left in the cache: %s" % left)
    print("  compile then hit, no temporaries left")


@test
def test_cache_dir_env(ctx):
    """TILE_CACHE_DIR, else XDG_CACHE_HOME/tile."""
    ctx.run(seed_args())
    if not ctx.sos():
        raise Fail("nothing written to TILE_CACHE_DIR=%s" % ctx.cache)
    xdg = os.path.join(ctx.tmp, "xdg")
    ctx.run(seed_args(), env=ctx.env(TILE_CACHE_DIR=None, XDG_CACHE_HOME=xdg))
    if not glob.glob(os.path.join(xdg, "tile", "cpu-*.so")):
        raise Fail("nothing written to XDG_CACHE_HOME/tile")
    print("  TILE_CACHE_DIR and XDG_CACHE_HOME/tile honoured")


@test
def test_cache_corrupt(ctx):
    ctx.run(seed_args())
    (so,) = ctx.sos()
    with open(so, "r+b") as f:
        f.truncate(100)
    r = ctx.run(seed_args() + ["--check"], env=ctx.env(TILE_LOG="info"))
    if "corrupt or stale" not in r.stderr or "compiled" not in r.stderr:
        raise Fail("a truncated object was not detected and rebuilt:\n" + r.stderr)
    check_ok(r, "after rebuilding a truncated entry")
    with open(so, "wb") as f:
        f.write(b"garbage" * 10)
    r = ctx.run(seed_args() + ["--check"], env=ctx.env(TILE_LOG="info"))
    check_ok(r, "after rebuilding a garbage entry")


@test
def test_cache_stale(ctx):
    """Another kernel's object under this key: its stamp does not match."""
    ctx.run(seed_args())
    (so,) = ctx.sos()
    other = ["run", os.path.join(EX, "add.tl"), "--target", "cpu", "-D", "M=4", "-D", "N=4", "--quiet"]
    ctx.run(other)
    so2 = [s for s in ctx.sos() if s != so][0]
    shutil.copyfile(so2, so)
    r = ctx.run(seed_args() + ["--check"], env=ctx.env(TILE_LOG="info"))
    if "stamp mismatch" not in r.stderr:
        raise Fail("a stale entry was not detected:\n" + r.stderr)
    check_ok(r, "after rebuilding a stale entry")


@test
def test_cache_concurrent(ctx):
    """Two processes compile the same kernel into an empty cache at once."""
    procs = []
    for i in range(3):
        procs.append(subprocess.Popen([ctx.tile] + seed_args()[0:] + ["--check"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=ctx.env()))
    for p in procs:
        out, err = p.communicate(timeout=TIMEOUT)
        if p.returncode != 0:
            raise Fail("a concurrent compile failed (exit %d):\n%s%s" % (p.returncode, out, err))
        check_ok(subprocess.CompletedProcess([], 0, out, err), "concurrent compile")
    if len(ctx.sos()) != 1:
        raise Fail("expected one object after concurrent compiles, found %s" % ctx.sos())
    left = [f for f in os.listdir(ctx.cache) if f.startswith("tmp-")]
    if left:
        raise Fail("temporary files left in the cache: %s" % left)


def have(cc):
    return shutil.which(cc) is not None


@test
def test_compilers(ctx):
    """CC=gcc and CC=clang both compile the generated code; results are checked."""
    ran = 0
    for cc in ("gcc", "clang"):
        if not have(cc):
            print("  %s: not installed, skipped" % cc)
            continue
        for ex, args in [("gemm.tl", ["-D", "M=70", "-D", "N=65", "-D", "K=40"]),
                         ("softmax.tl", ["-D", "M=10", "-D", "N=300", "-D", "dtype=bfloat16"]),
                         ("seed_matmul_000.tl", ["-D", "M=13", "-D", "N=7", "-D", "K=9"])]:
            r = ctx.run(["run", os.path.join(EX, ex), "--target", "cpu", "--check", "--quiet"] + args,
                        env=ctx.env(CC=cc))
            check_ok(r, "CC=%s %s" % (cc, ex))
        ran += 1
    if not ran:
        raise Skip("neither gcc nor clang is installed")
    if len(ctx.sos()) < 2 * ran:
        raise Fail("the compiler is not part of the cache key: %s" % ctx.sos())


@test
def test_compiler_error(ctx):
    fake = os.path.join(ctx.tmp, "fakecc")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'fakecc 1.0'; exit 0; fi\n"
                "echo 'fakecc: internal compiler error: nothing works' >&2\nexit 3\n")
    os.chmod(fake, 0o755)
    r = ctx.run(seed_args(), env=ctx.env(CC=fake), expect=1)
    for want in ("fakecc", "nothing works", "exit 3"):
        if want not in r.stderr:
            raise Fail("the compile error does not show %r:\n%s" % (want, r.stderr))
    print("  " + r.stderr.splitlines()[0][:150])
    r = ctx.run(seed_args(), env=ctx.env(CC="no-such-compiler-xyz"), expect=None)
    if r.returncode == 0 or "no-such-compiler-xyz" not in r.stderr:
        raise Fail("a missing compiler was not reported:\n%s" % r.stderr)
    r = ctx.run(["devices"], env=ctx.env(CC="no-such-compiler-xyz"))
    if "unavailable" not in r.stdout:
        raise Fail("tile devices does not say the cpu target is unavailable:\n" + r.stdout)
    print("  missing compiler: " + r.stderr.strip().splitlines()[0][:120] if r.stderr.strip() else "  missing compiler reported")


@test
def test_runtime_errors(ctx):
    r = ctx.run(["run", os.path.join(ROOT, "tests", "checks", "cases", "int_div_zero.tl"), "--target", "cpu",
                 "-D", "N=8"], expect=1)
    if "division by zero" not in r.stderr or "int_div_zero.tl:9:" not in r.stderr:
        raise Fail("integer division by zero: unclear message:\n" + r.stderr)
    print("  " + r.stderr.splitlines()[0])
    r = ctx.run(["run", os.path.join(DATA, "oob.tl"), "--target", "cpu", "-D", "N=8"],
                env=ctx.env(TILE_CPU_CHECKS=1), expect=1)
    if "out-of-bounds" not in r.stderr or "oob.tl:" not in r.stderr:
        raise Fail("TILE_CPU_CHECKS=1 did not report the out-of-bounds write:\n" + r.stderr)
    print("  " + r.stderr.splitlines()[0])
    r = ctx.run(["run", os.path.join(DATA, "assert.tl"), "--target", "cpu", "-D", "N=8"], expect=1)
    if "assertion failed" not in r.stderr:
        raise Fail("a failed assert: unclear message:\n" + r.stderr)
    print("  " + r.stderr.splitlines()[0])


@test
def test_threads(ctx):
    """TILE_NUM_THREADS=1 and 3 give the same (checked) results."""
    for n in ("1", "3"):
        for ex, args in [("gemm.tl", ["-D", "M=130", "-D", "N=65", "-D", "K=40", "-D", "block_M=32"]),
                         ("add.tl", ["-D", "M=100", "-D", "N=37"]),
                         ("flash_attention.tl", ["-D", "batch=1", "-D", "heads=3", "-D", "seq_len=70", "-D", "dim=16"])]:
            r = ctx.run(["run", os.path.join(EX, ex), "--target", "cpu", "--check", "--quiet"] + args,
                        env=ctx.env(TILE_NUM_THREADS=n))
            check_ok(r, "TILE_NUM_THREADS=%s %s" % (n, ex))
    r = ctx.run(["devices"], env=ctx.env(TILE_NUM_THREADS="3"))
    if "TILE_NUM_THREADS=3" not in r.stdout:
        raise Fail("tile devices does not mention TILE_NUM_THREADS:\n" + r.stdout)


def _np():
    try:
        import numpy
        return numpy
    except ImportError:
        raise Skip("numpy is not installed")


def _run_both(ctx, prog, x, out):
    """Run tests/cpu/data/<prog> on cpu and on the interpreter with input X=x; the outputs."""
    np = _np()
    xin = os.path.join(ctx.tmp, "x.npy")
    np.save(xin, x)
    res = []
    for tgt in ("cpu", "interp"):
        y = os.path.join(ctx.tmp, "y_%s.npy" % tgt)
        ctx.run(["run", os.path.join(DATA, prog), "--target", tgt, "--in", "X=" + xin, "--out", "%s=%s" % (out, y), "-q"])
        res.append(np.load(y))
    return res


@test
def test_expf(ctx):
    """f32 exp (the prelude's vectorised tile_expf) is within 1 ulp of the interpreter's
    correctly rounded exp over [-110, 100] (overflow, subnormal results, underflow), and
    exact on inf, -inf, NaN, 0."""
    np = _np()
    x = np.linspace(-110, 100, 40009).astype(np.float32)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72283, 88.7229, -87.33655, -103.97, -104.0, 1e-30,
                        100.5, 1000.0, 8388608.0, 3e38, np.finfo(np.float32).max, -np.finfo(np.float32).max, -1e30],
                       dtype=np.float32)  # past 100: the integer clamp of n (prelude.h) must still give +inf
    x = np.concatenate([x, special])
    c, i = _run_both(ctx, "expf.tl", x, "ret")
    if not (np.isnan(c) == np.isnan(i)).all():
        raise Fail("NaN where the interpreter has none (or the reverse)")
    m = ~np.isnan(c)
    ulp = np.abs(c[m].view(np.int32).astype(np.int64) - i[m].view(np.int32).astype(np.int64)).max()
    if ulp > 1:
        k = int(np.argmax(np.abs(c.view(np.int32).astype(np.int64) - i.view(np.int32).astype(np.int64))))
        raise Fail("exp differs by %d ulp at x = %r (%r vs %r)" % (ulp, float(x[k]), float(c[k]), float(i[k])))
    tail = c[-len(special):]
    if not (tail[0] == np.inf and tail[1] == 0 and np.isnan(tail[2]) and tail[3] == 1 and tail[4] == 1):
        raise Fail("exp of inf, -inf, NaN, 0, -0: %r" % tail[:5])
    print("  exp: %d values, at most %d ulp from the interpreter" % (len(x), ulp))


@test
def test_expf_sweep(ctx):
    """tile_expf on every 509th float of [-104, 89] (both signs' bit patterns: ~4.4 million
    values, subnormal results included) is within 1 ulp of exp computed in double and
    rounded to f32 (numpy; the interpreter would take minutes on this many)."""
    np = _np()
    pos = np.arange(0, 0x42B20000 + 1, 509, dtype=np.uint32)            # +0 .. 89
    neg = np.arange(0x80000000, 0xC2D00000 + 1, 509, dtype=np.uint32)   # -0 .. -104
    x = np.concatenate([pos, neg]).view(np.float32)
    xin = os.path.join(ctx.tmp, "xs.npy")
    y = os.path.join(ctx.tmp, "ys.npy")
    np.save(xin, x)
    ctx.run(["run", os.path.join(DATA, "expf.tl"), "--target", "cpu", "--in", "X=" + xin, "--out", "ret=" + y, "-q"])
    c = np.load(y)
    with np.errstate(over="ignore"):  # exp(89) rounds to +inf in f32, as it should
        ref = np.exp(x.astype(np.float64)).astype(np.float32)
    d = np.abs(c.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    if np.isnan(c).any() or d.max() > 1:
        k = int(np.argmax(d))
        raise Fail("exp differs by %d ulp at x = %r (%r vs %r)" % (int(d.max()), float(x[k]), float(c[k]), float(ref[k])))
    print("  exp sweep: %d values, at most %d ulp, %d exact" % (len(x), int(d.max()), int((d == 0).sum())))


@test
def test_row_reductions(ctx):
    """Plain-form max/min/sum loops become `omp simd` reductions on cpu: max and min are
    bit-identical to the interpreter's fmax/fmin (NaN elements skipped, an all-NaN row NaN,
    a NaN first element, -inf rows), sums within the f32 tolerance."""
    np = _np()
    r = ctx.run(["emit", os.path.join(DATA, "rowred.tl"), "--target", "cpu", "-D", "M=4", "-D", "N=100"])
    for want in ("reduction(tile_fmax:", "reduction(tile_fmin:", "reduction(+:"):
        if want not in r.stdout:
            raise Fail("the emitted C has no `omp simd %s` loop" % want)
    if not re.search(r"v\d+ = tile_row_maxf\(b\d+ \+ ", r.stdout):
        raise Fail("the max loop over a contiguous f32 row is not a tile_row_maxf call (c.c, grow_read)")
    if not re.search(r"reduction\(tile_fmin:a\d+_0_3\)", r.stdout):
        raise Fail("the min loop is not split into four streams (c.c, gfor_minmax)")
    rng = np.random.default_rng(5)
    # short rows: fewer elements than streams, and each tail length past 4 quarters
    for n in (2, 3, 6, 8, 9):
        x = rng.uniform(-3, 3, (9, n)).astype(np.float32)
        x[1, :] = np.nan
        x[2, n - 1] = np.nan
        x[3, -1] = 7.0
        c, i = _run_both(ctx, "rowred.tl", x, "ret")
        if not (c[:, :2].view(np.int32) == i[:, :2].view(np.int32)).all():
            raise Fail("N=%d: max/min differ: %r vs %r" % (n, c[:, :2], i[:, :2]))
    x = rng.uniform(-3, 3, (37, 203)).astype(np.float32)
    x[rng.random(x.shape) < 0.05] = np.nan
    x[3, 0] = np.nan
    x[4, :] = np.nan
    x[5, :] = -np.inf
    x[6, :] = 0
    x[6, 7] = -0.0
    x[7, 0] = -0.0
    x[8, 1:] = np.nan              # tile_row_maxf: no element but the first counts
    x[9, 0] = np.nan               # ... and every element -inf or NaN, the first NaN
    x[9, 1:] = -np.inf
    x[9, 50] = np.nan
    x[10, 1:] = -np.inf            # ... -inf and one finite value in the masked tail
    x[10, 200] = -5.0
    c, i = _run_both(ctx, "rowred.tl", x, "ret")
    if not (c[:, :2].view(np.int32) == i[:, :2].view(np.int32)).all():
        bad = np.argwhere(c[:, :2].view(np.int32) != i[:, :2].view(np.int32))[0]
        raise Fail("max/min differ at %r: %r vs %r" % (tuple(bad), c[tuple(bad)], i[tuple(bad)]))
    sc, si = c[:, 2], i[:, 2]
    if not (np.isnan(sc) == np.isnan(si)).all():
        raise Fail("sum: NaN pattern differs")
    # the sums' values on NaN-free rows (with 5% NaN elements almost no row above has one)
    x = rng.uniform(-3, 3, (37, 203)).astype(np.float32)
    x[5, :] = 0
    c, i = _run_both(ctx, "rowred.tl", x, "ret")
    sc, si = c[:, 2], i[:, 2]
    err = np.linalg.norm(sc - si) / np.linalg.norm(si)
    if not np.isfinite(err) or err > 1e-5:
        raise Fail("sum: relative error %g" % err)
    print("  max/min bit-identical, sum relative error %.2g" % err)


@test
def test_row_helpers(ctx):
    """A plain max loop and a `s += exp(x - m)` loop over contiguous f32 rows (logsumexp.tl)
    run as the prelude's tile_row_maxf / tile_row_expsumf (no row buffer: NULL), not in
    checked builds; results within the f32 tolerance of the interpreter for row lengths
    around the 16-lane vector and the 32-element step (masked tails), and the interpreter's
    NaN pattern and values with NaN, inf and -inf elements."""
    f = os.path.join(DATA, "logsumexp.tl")
    r = ctx.run(["emit", f, "--target", "cpu", "-D", "M=4", "-D", "N=100"])
    if not re.search(r"= tile_row_maxf\(b\d+ \+ ", r.stdout) or not re.search(r"= tile_row_expsumf\(b\d+ \+ .*, NULL, ", r.stdout):
        raise Fail("logsumexp's loops are not tile_row_maxf / tile_row_expsumf(..., NULL, ...) calls")
    r = ctx.run(["emit", f, "--target", "cpu", "-D", "M=4", "-D", "N=100"], env=ctx.env(TILE_CPU_CHECKS=1))
    if "= tile_row_maxf(b" in r.stdout or "= tile_row_expsumf(b" in r.stdout:
        raise Fail("a checked build calls the row helpers (its loops check bounds)")
    for n in (1, 5, 15, 16, 17, 31, 32, 33, 48, 100, 2049):
        check_ok(ctx.run(["run", f, "--target", "cpu", "--check", "--quiet", "-D", "M=5", "-D", "N=%d" % n]), "logsumexp N=%d" % n)
    np = _np()
    rng = np.random.default_rng(11)
    x = rng.uniform(-20, 20, (7, 70)).astype(np.float32)
    x[1, 33] = np.nan       # NaN in a full vector: NaN
    x[2, 68] = np.nan       # NaN in the masked tail: NaN
    x[3, :] = -np.inf       # all -inf: m = -inf, exp(-inf - -inf) = NaN, as the interpreter
    x[4, 5] = np.inf        # +inf: NaN
    x[5, 1:] = -np.inf      # one finite element
    x[6, :40] = -200.0      # exp underflows to 0 there
    c, i = _run_both(ctx, "logsumexp.tl", x, "ret")
    if not (np.isnan(c) == np.isnan(i)).all():
        raise Fail("NaN pattern differs: %r vs %r" % (c, i))
    ok = ~np.isnan(i)
    if not (np.isinf(c[ok]) == np.isinf(i[ok])).all() or np.abs(c[ok & np.isfinite(i)] - i[ok & np.isfinite(i)]).max() > 1e-5 * np.abs(i[ok & np.isfinite(i)]).max():
        raise Fail("values differ: %r vs %r" % (c, i))
    print("  logsumexp: row helpers, %d lengths and special values as the interpreter" % 11)


@test
def test_fused_reduce(ctx):
    """With TILE_FUSE_REDUCE=1, a T.Parallel nest followed by T.reduce_sum of the fragment it
    wrote is one loop per row on cpu (two such pairs in fusedred.tl; a nest that reads the
    reduce's destination is not fused); off by default. Results within the f32 tolerance of
    the interpreter, fused with and without TILE_CPU_CHECKS, and unfused."""
    f = os.path.join(DATA, "fusedred.tl")
    r = ctx.run(["emit", f, "--target", "cpu", "-D", "M=10", "-D", "N=100"], env=ctx.env(TILE_FUSE_REDUCE=1))
    n = r.stdout.count("fused with the reduce after it")
    if n != 2:
        raise Fail("expected 2 fused nest+reduce pairs in the emitted C, found %d" % n)
    r = ctx.run(["emit", f, "--target", "cpu", "-D", "M=10", "-D", "N=100"], env=ctx.env(TILE_FUSE_REDUCE=None))
    if "fused with the reduce" in r.stdout:
        raise Fail("fused without TILE_FUSE_REDUCE=1")
    for extra in ({"TILE_FUSE_REDUCE": 1}, {"TILE_FUSE_REDUCE": 1, "TILE_CPU_CHECKS": 1}, {"TILE_FUSE_REDUCE": None}):
        for mn in (("M=10", "N=100"), ("M=7", "N=48"), ("M=13", "N=1")):
            r = ctx.run(["run", f, "--target", "cpu", "--check", "--quiet", "-D", mn[0], "-D", mn[1]], env=ctx.env(**extra))
            check_ok(r, "fusedred %s %s %s" % (mn[0], mn[1], " ".join("%s=%s" % kv for kv in extra.items() if kv[1] is not None)))


@test
def test_place_like(ctx):
    """The softmax's kept exponentials sit at the output's address modulo 64 (ir_buffer.align_to):
    `tile ir` says `aligned like Y` for an f32 Y (not for bf16, whose elements differ in size),
    the emitted C places the scratch with tile_place_like, and tile_place_like itself (compiled
    from the emitted source with a test main) gives, for every offset of the allocation and of
    the reference within a line and every element size, an address that is the reference's
    modulo 64 (whole elements), not below the allocation and within its 128 spare bytes."""
    sm = os.path.join(EX, "softmax.tl")
    r = ctx.run(["ir", sm, "--target", "cpu", "-D", "N=4096"])
    if "alloc rf_exp: float32[2, 4096] global aligned like Y" not in r.stdout:
        raise Fail("the pipelined softmax's rf_exp is not placed like Y:\n" + r.stdout)
    r = ctx.run(["ir", sm, "--target", "cpu", "-D", "N=4096", "-D", "dtype=bfloat16"])
    if "rf_exp" not in r.stdout or "aligned like" in r.stdout:
        raise Fail("a bf16 softmax's f32 rf_exp is placed like its bf16 Y (no common alignment):\n" + r.stdout)
    src = ctx.run(["emit", sm, "--target", "cpu", "-D", "N=4096", "-D", "M=64"]).stdout
    if not re.search(r"b\d+ = \(float \*\)tile_place_like\(b\d+_stk, b\d+, 4\);", src):
        raise Fail("the emitted softmax does not place rf_exp with tile_place_like")
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("cc")
    if not cc:
        raise Skip("no C compiler to build the tile_place_like check")
    main = r"""
#include <stdio.h>
int main(void) {
    static unsigned char mem[1024] __attribute__((aligned(64)));
    int bad = 0;
    for (int es = 1; es <= 8; es *= 2)
        for (int po = 0; po < 64; po += es)
            for (int ro = 0; ro < 64; ro++) {
                unsigned char *p = mem + 64 + po, *ref = mem + 512 + ro;
                unsigned char *q = (unsigned char *)tile_place_like(p, ref, (size_t)es);
                const unsigned want = (unsigned)(ro & ~(es - 1));
                if (((uintptr_t)q & 63) != want || q < p || q > p + 128 - es) {
                    if (bad++ < 5) printf("es %d, allocation +%d, reference +%d: got +%u\n", es, po, ro, (unsigned)((uintptr_t)q & 63));
                }
            }
    printf("%d bad placements\n", bad);
    return bad != 0;
}
"""
    c_path = os.path.join(ctx.tmp, "place_like.c")
    with open(c_path, "w") as f:
        f.write(src + main)
    exe = os.path.join(ctx.tmp, "place_like")
    b = subprocess.run([cc, "-O1", "-w", "-std=gnu11", c_path, "-o", exe, "-lm"], capture_output=True, text=True, timeout=TIMEOUT)
    if b.returncode != 0:
        raise Fail("building the tile_place_like check failed:\n" + b.stderr[-2000:])
    r2 = subprocess.run([exe], capture_output=True, text=True, timeout=TIMEOUT)
    if r2.returncode != 0:
        raise Fail("tile_place_like: " + r2.stdout)
    print("  tile_place_like: " + r2.stdout.strip())


# (program, -D arguments) of the row-kernel test: one row and many, ragged M (the tile form's
# last block), N below / above / not a multiple of the 16-lane vector, the 2048-element chunk
# of the read pass and the 1024-element streaming-store threshold, bf16 tensors
ROW_CASES = [
    ("softmax.tl", ["M=1", "N=1"]),
    ("softmax.tl", ["M=1", "N=5000"]),
    ("softmax.tl", ["M=11", "N=4111"]),
    ("softmax.tl", ["M=3", "N=2048"]),
    ("softmax.tl", ["M=9", "N=17"]),
    ("softmax.tl", ["M=5", "N=3001", "dtype=bfloat16"]),
    ("softmax_plain.tl", ["M=1", "N=1"]),
    ("softmax_plain.tl", ["M=7", "N=4099"]),
    ("softmax_plain.tl", ["M=2", "N=2049"]),
    ("rmsnorm.tl", ["M=1", "N=40"]),
    ("rmsnorm.tl", ["M=13", "N=1029"]),
    ("rmsnorm.tl", ["M=5", "N=2050", "dtype=bfloat16"]),
    # the pipelined row loop (blocks of clamp(M // 32, 1, 16) rows): blocks of 16 with a
    # ragged last block, of 3 with one row left, of 2; misaligned rows (N not a multiple of 16)
    ("softmax.tl", ["M=600", "N=300"]),
    ("softmax.tl", ["M=100", "N=4111"]),
    ("softmax.tl", ["M=100", "N=3001", "dtype=bfloat16"]),
    ("softmax_plain.tl", ["M=77", "N=2049"]),
    ("rmsnorm.tl", ["M=100", "N=2100"]),
    ("rmsnorm.tl", ["M=70", "N=2048"]),
    ("rmsnorm.tl", ["M=100", "N=3000", "dtype=bfloat16"]),
]


@test
def test_row_kernels(ctx):
    """TileOpt's rowfuse pass on cpu: the tile-form softmax and RMSNorm kernels and the plain
    softmax become rows over the pool (`tile ir`: no kernel left; TILE_NO_ROWFUSE=1 keeps it),
    the softmax's read pass runs as the prelude's row helpers, RMSNorm's as an omp simd
    reduction, the write pass with streaming stores (`tile emit`); results within the tolerance of the interpreter on ragged shapes, with
    TILE_CPU_CHECKS=1 and TILE_NUM_THREADS=3; special values give the interpreter's NaN
    pattern (a leading run of -inf longer than a chunk, an all -inf row, NaN, inf)."""
    sm = os.path.join(EX, "softmax.tl")
    r = ctx.run(["ir", sm, "--target", "cpu", "-D", "N=300"])
    if "kernel" in r.stdout or "for rf_blk in parallel" not in r.stdout or "for rf_row in serial" not in r.stdout:
        raise Fail("rowfuse did not rewrite the softmax kernel into the pipelined row loop:\n" + r.stdout)
    # rows longer than 65536: the online form (no kept exponentials, rows one after the
    # other); a symbolic N decides at run time; TILE_ROWFUSE_PIPE=0: rows one after the other
    r = ctx.run(["ir", sm, "--target", "cpu", "-D", "N=70000"])
    if "rf_exp" in r.stdout or "for rf_row in parallel" not in r.stdout:
        raise Fail("a row of 70000 columns is not in the online form:\n" + r.stdout)
    r = ctx.run(["ir", sm, "--target", "cpu"])
    if "if N <= 65536:" not in r.stdout or "for rf_blk in parallel" not in r.stdout or "for rf_row in parallel" not in r.stdout:
        raise Fail("a symbolic N does not choose the form at run time:\n" + r.stdout)
    r = ctx.run(["ir", sm, "--target", "cpu", "-D", "N=300"], env=ctx.env(TILE_ROWFUSE_PIPE=0))
    if "rf_blk" in r.stdout or "for rf_row in parallel" not in r.stdout or "rf_exp" not in r.stdout:
        raise Fail("TILE_ROWFUSE_PIPE=0 did not give the unpipelined one-exp loop:\n" + r.stdout)
    r = ctx.run(["ir", sm, "--target", "cpu", "-D", "N=300"], env=ctx.env(TILE_NO_ROWFUSE=1))
    if "kernel grid" not in r.stdout:
        raise Fail("TILE_NO_ROWFUSE=1 did not keep the kernel")
    r = ctx.run(["emit", sm, "--target", "cpu", "-D", "N=4096"])
    body = r.stdout[r.stdout.index("static int tile_fn0("):]
    # the steady state: the previous row's write rides along in the exponentials' loop;
    # a block's first and last steps: the read helpers and the streaming write loop alone
    for want in ("= tile_row_maxf(b", "= tile_row_expsumf(b", "= tile_row_expsum_wrf(b", "tile_stream_f32v(b", "tile_sfence();"):
        if want not in body:
            raise Fail("the emitted softmax lacks %s" % want)
    if "__builtin_prefetch(" in body:
        raise Fail("the softmax's write loop prefetches the next row (its read pass prefetches ahead)")
    # the RMSNorm's default is unpipelined (it measured faster there); TILE_ROWFUSE_PIPE=1
    r = ctx.run(["emit", os.path.join(EX, "rmsnorm.tl"), "--target", "cpu", "-D", "N=4096"])
    if "+ TILE_ROW_AHEAD, 0, 3);" in r.stdout:
        raise Fail("the RMSNorm is pipelined by default")
    r = ctx.run(["emit", os.path.join(EX, "rmsnorm.tl"), "--target", "cpu", "-D", "N=4096"], env=ctx.env(TILE_ROWFUSE_PIPE=1))
    body = r.stdout[r.stdout.index("static int tile_fn0("):]
    for want in ("reduction(+:", "tile_stream_f32v(b", "+ TILE_ROW_AHEAD, 0, 3);", "for (int k_ = 0; k_ < TILE_NT_W; k_++) v"):
        if want not in body:
            raise Fail("the emitted RMSNorm lacks %s" % want)
    r = ctx.run(["emit", os.path.join(EX, "rmsnorm.tl"), "--target", "cpu", "-D", "N=4096"], env=ctx.env(TILE_CPU_CHECKS=1, TILE_ROWFUSE_PIPE=1))
    if "+ TILE_ROW_AHEAD, 0, 3);" in r.stdout or "tile_row_expsum_wrf(b" in r.stdout:
        raise Fail("a checked build runs the fused sum-and-write loop")
    # the plain-form rewrite is on by default (TILE_ROWFUSE_PLAIN=0 turns it off): plain
    # cases run both ways
    plain_off = ctx.env(TILE_ROWFUSE_PLAIN=0)
    r = ctx.run(["ir", os.path.join(EX, "softmax_plain.tl"), "--target", "cpu"])
    if "rf_row" not in r.stdout and "rf_c" not in r.stdout:
        raise Fail("rowfuse did not rewrite the plain softmax by default:\n" + r.stdout)
    r = ctx.run(["ir", os.path.join(EX, "softmax_plain.tl"), "--target", "cpu"], env=plain_off)
    if "rf_row" in r.stdout or "rf_c" in r.stdout:
        raise Fail("TILE_ROWFUSE_PLAIN=0 still rewrote the plain softmax:\n" + r.stdout)
    for ex, defs in ROW_CASES:
        args = ["run", os.path.join(EX, ex), "--target", "cpu", "--check", "--quiet"]
        for d in defs:
            args += ["-D", d]
        check_ok(ctx.run(args), "%s %s" % (ex, " ".join(defs)))
        if ex == "softmax_plain.tl":
            check_ok(ctx.run(args, env=plain_off), "%s %s TILE_ROWFUSE_PLAIN=0" % (ex, " ".join(defs)))
    # symbolic sizes (no -D): the rewrite keeps M and N as run-time sizes
    check_ok(ctx.run(["run", sm, "--target", "cpu", "--check", "--quiet", "--shape", "X=7x3333", "--shape", "Y=7x3333"]),
             "softmax.tl --shape X=7x3333 (symbolic M, N)")
    check_ok(ctx.run(["run", sm, "--target", "cpu", "--check", "--quiet", "--shape", "X=70x1000", "--shape", "Y=70x1000"]),
             "softmax.tl --shape X=70x1000 (symbolic M, N: pipelined)")
    check_ok(ctx.run(["run", sm, "--target", "cpu", "--check", "--quiet", "--shape", "X=3x66000", "--shape", "Y=3x66000"]),
             "softmax.tl --shape X=3x66000 (symbolic N past 65536: the online form)")
    check_ok(ctx.run(["run", os.path.join(EX, "softmax_plain.tl"), "--target", "cpu", "--check", "--quiet", "-D", "M=2", "-D", "N=70000"]),
             "softmax_plain.tl M=2 N=70000 (the online form)")
    for extra in ({"TILE_CPU_CHECKS": 1}, {"TILE_NUM_THREADS": 3}, {"TILE_ROWFUSE_PIPE": 0}, {"TILE_ROWFUSE_PIPE": 1}):
        for ex, defs in (ROW_CASES[2], ROW_CASES[7], ROW_CASES[10], ROW_CASES[13], ROW_CASES[16]):
            args = ["run", os.path.join(EX, ex), "--target", "cpu", "--check", "--quiet"]
            for d in defs:
                args += ["-D", d]
            check_ok(ctx.run(args, env=ctx.env(**extra)), "%s %s %s" % (ex, " ".join(defs), extra))
    # special values: plain softmax (the rewrite keeps the source's results exactly in kind)
    # and the tile form (-inf away from the first tile)
    np = _np()
    rng = np.random.default_rng(7)
    # 64 rows: blocks of 2 in the pipelined loop, so every row is read or written in a step
    # that does both (the fused loops)
    x = rng.uniform(-4, 4, (64, 4500)).astype(np.float32)
    x[0, :2100] = -np.inf          # a whole first chunk of -inf, then finite values
    x[1, :] = -np.inf              # all -inf: NaN
    x[2, 3000] = np.nan            # NaN: the row is NaN
    x[3, 10] = np.inf              # inf: NaN
    x[4, 100:300] = -np.inf        # -inf inside: exp gives 0
    x[5, :] = 1e30                 # huge, equal
    x[33, :] = -np.inf             # the same kinds on odd rows (read in a fused step)
    x[35, 4000] = np.nan
    x[37, 2050:] = -np.inf
    xin = os.path.join(ctx.tmp, "xs.npy")
    np.save(xin, x)
    for ex, out, rows, env in (("softmax_plain.tl", "ret", range(64), None), ("softmax_plain.tl", "ret", range(64), plain_off),
                               ("softmax.tl", "Y", range(1, 64), None), ("softmax.tl", "Y", range(1, 64), ctx.env(TILE_ROWFUSE_PIPE=0))):
        res = []
        for tgt in ("cpu", "interp"):
            y = os.path.join(ctx.tmp, "ys_%s.npy" % tgt)
            args = ["run", os.path.join(EX, ex), "--target", tgt, "--in", "X=" + xin, "--out", "%s=%s" % (out, y), "-q"]
            if ex == "softmax.tl":
                args += ["-D", "M=64", "-D", "N=4500"]
            ctx.run(args, env=env) if env else ctx.run(args)
            res.append(np.load(y))
        c, i = res
        for row in rows:
            if not (np.isnan(c[row]) == np.isnan(i[row])).all():
                raise Fail("%s row %d: NaN pattern differs from the interpreter" % (ex, row))
            f = ~np.isnan(i[row])
            if f.any():
                err = np.abs(c[row][f] - i[row][f]).max() / max(np.abs(i[row][f]).max(), 1e-30)
                if err > 1e-5:
                    raise Fail("%s row %d: relative error %g" % (ex, row, err))
        print("  %-60s special values: NaN pattern and values as the interpreter" % ex)


@test
def test_emit(ctx):
    """tile emit --target cpu prints a translation unit that compiles warning-free at -Wall."""
    r = ctx.run(["emit", os.path.join(EX, "gemm.tl"), "--target", "cpu", "-D", "M=64", "-D", "N=64", "-D", "K=64"])
    src = r.stdout
    for want in ("tile_entry", "tile_gemm_rgn", "tcv_f32_to_bf16_bits", "TILE_LOAD_STATE"):
        if want not in src:
            raise Fail("emitted C lacks %s" % want)
    path = os.path.join(ctx.tmp, "k.c")
    with open(path, "w") as f:
        f.write(src)
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler")
    p = subprocess.run([cc, "-std=gnu11", "-O1", "-fopenmp-simd", "-fsyntax-only", "-Wall", "-Wno-unused-function",
                        "-Wno-unused-variable", "-Wno-unused-label", "-Wno-unused-but-set-variable", path],
                       capture_output=True, text=True)
    if p.returncode != 0 or "warning" in p.stderr:
        raise Fail("the emitted C does not compile cleanly:\n" + p.stderr[-3000:])
    print("  %d lines, compiles with -Wall" % src.count("\n"))


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
    with tempfile.TemporaryDirectory(prefix="tile-cpu-") as tmp:
        try:
            TESTS[name](Ctx(tile, tmp, name.startswith("cache_") or name == "compilers"))
        except Skip as e:
            print("SKIP %s: %s" % (name, e))
            return SKIP
        except Fail as e:
            print("FAIL %s: %s" % (name, e))
            return 1
    print("PASS %s" % name)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if a.list:
        print("\n".join(TESTS))
        return 0
    tile = find_tile(a.tile)
    if not tile:
        print("SKIP: no tile binary")
        return SKIP
    names = list(TESTS) if a.all or not a.names else a.names
    res = [run_one(n, tile) for n in names]
    if 1 in res:
        return 1
    return SKIP if set(res) == {SKIP} else 0


if __name__ == "__main__":
    sys.exit(main())
