"""Launch overhead of a cached kernel from Python on torch CUDA tensors (N=4096 f32 add):
Tile against Triton's launcher, TileLang (where importable: run in a child process, so that a
TileLang that cannot load is reported, not fatal) and a CUDA-graph replay of the same torch op.

Two figures per launcher:
  issue: host time per call of 500 back-to-back calls, the stream drained before and the
         final sync outside the timing (fewer calls than the launch queue holds, so nothing
         waits for the GPU): the launcher's own cost;
  loop:  wall time per call of 2000 calls followed by a sync: what a loop of tiny kernels
         gets, bounded below by the GPU's rate for back-to-back launches.
Each is the median of 7 rounds. Prints a Markdown table; writes it to argv[1] when given."""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from tiny_add import N, SRC  # the script's folder is on sys.path


def measure(fn, rounds=7):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    issue, loop = [], []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(500):
            fn()
        issue.append((time.perf_counter() - t0) / 500)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            fn()
        torch.cuda.synchronize()
        loop.append((time.perf_counter() - t0) / 2000)
    return statistics.median(issue), statistics.median(loop)


def tilelang_rows():
    """In a child: TileLang's @tilelang.jit kernel of the same add, in place and with out_idx."""
    import tilelang
    import tilelang.language as T
    if not getattr(tilelang, "__version__", None):
        raise ImportError("tilelang is Tile's alias, not TileLang")
    a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    c = torch.empty_like(a)
    rows = []
    for out_idx in (None, [-1]):
        @tilelang.jit(out_idx=out_idx)
        def tl_add(N, block=256):
            @T.prim_func
            def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
                with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
                    for i in T.Parallel(block):
                        C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
            return main

        k = tl_add(N)
        if out_idx is None:
            k(a, b, c)
            torch.testing.assert_close(c, a + b)
            rows.append(("TileLang %s (in place)" % tilelang.__version__,) + measure(lambda: k(a, b, c)))
        else:
            torch.testing.assert_close(k(a, b), a + b)
            rows.append(("TileLang %s (out_idx)" % tilelang.__version__,) + measure(lambda: k(a, b)))
    return rows


def main():
    if sys.argv[1:2] == ["--tilelang"]:
        print("ROWS " + json.dumps(tilelang_rows()))
        return
    import tile
    rows = []
    a = torch.randn(N, device="cuda")
    b = torch.randn(N, device="cuda")
    c = torch.empty_like(a)
    k = tile.compile(SRC, N=N, target="cuda")
    k(a, b, c)
    torch.testing.assert_close(c, a + b)
    path = "C path tile._fast" if tile._lib.fast is not None else "pure-Python path"
    rows.append(("tile Kernel.__call__ (in place, %s)" % path,) + measure(lambda: k(a, b, c)))
    ko = tile.compile(SRC, N=N, target="cuda", out_idx=[-1])
    torch.testing.assert_close(ko(a, b), a + b)
    rows.append(("tile Kernel.__call__ (output allocated, %s)" % path,) + measure(lambda: ko(a, b)))
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

        grid = (triton.cdiv(N, 256),)
        c.zero_()
        add_kernel[grid](a, b, c, N, BLOCK=256)
        torch.testing.assert_close(c, a + b)
        rows.append(("Triton %s launcher (in place)" % triton.__version__,) + measure(lambda: add_kernel[grid](a, b, c, N, BLOCK=256)))
    except Exception as e:  # noqa: BLE001
        rows.append(("Triton: not run (%s)" % str(e).split("\n")[0][:100], float("nan"), float("nan")))
    env = dict(os.environ)
    # the real TileLang must win over Tile's alias: drop Tile's python/ from the child's path
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if not p.rstrip("/").endswith("/python"))
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--tilelang"], capture_output=True, text=True, env=env, timeout=300)
        got = [l for l in r.stdout.splitlines() if l.startswith("ROWS ")]
        if got:
            rows += [tuple(x) for x in json.loads(got[-1][5:])]
        else:
            why = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
            rows.append(("TileLang: not run (%s)" % why[:160], float("nan"), float("nan")))
    except subprocess.TimeoutExpired:
        rows.append(("TileLang: not run (timed out after 300 s)", float("nan"), float("nan")))
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.add(a, b, out=c)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        torch.add(a, b, out=c)
    rows.append(("CUDA graph replay of torch.add",) + measure(g.replay))
    rows.append(("torch.add(out=) eager",) + measure(lambda: torch.add(a, b, out=c)))
    base_i, base_l = rows[0][1], rows[0][2]
    out = ["| launcher | issue us/call | loop us/call | issue vs tile | loop vs tile |", "|---|---|---|---|---|"]
    for name, ti, tl_ in rows:
        out.append("| %s | %.2f | %.2f | %.2f | %.2f |" % (name, ti * 1e6, tl_ * 1e6, ti / base_i, tl_ / base_l))
    text = "\n".join(out)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
