"""Launch overhead of a cached kernel from Python on torch CUDA tensors: median time per call
of a tiny kernel in a loop (host time per call, the stream kept busy-free by syncing every
100 calls), Tile against Triton's launcher, TileLang (where installed) and a CUDA-graph
replay of the same torch op. Prints a Markdown table; writes it to argv[1] when given."""
import os
import statistics
import sys
import time

import torch

import tile

N = 4096
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def per_call(fn, iters=2000, rounds=7):
    """Median over rounds of (wall time of `iters` calls, synced at the end) / iters."""
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for i in range(iters):
            fn()
        torch.cuda.synchronize()
        res.append((time.perf_counter() - t0) / iters)
    return statistics.median(res)


def main():
    rows = []
    a = torch.randn(N, device="cuda")
    b = torch.randn(N, device="cuda")
    c = torch.empty_like(a)
    src = """
import tilelang.language as T
def add(N, block=256):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return main
"""
    k = tile.compile(src, N=N, target="cuda")
    k(a, b, c)
    torch.testing.assert_close(c, a + b)
    rows.append(("tile Kernel.__call__ (torch CUDA, in place)", per_call(lambda: k(a, b, c))))
    ko = tile.compile(src, N=N, target="cuda", out_idx=[-1])
    rows.append(("tile Kernel.__call__ (torch CUDA, output allocated)", per_call(lambda: ko(a, b))))
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
        add_kernel[grid](a, b, c, N, BLOCK=256)
        torch.testing.assert_close(c, a + b)
        rows.append(("Triton %s launcher" % triton.__version__, per_call(lambda: add_kernel[grid](a, b, c, N, BLOCK=256))))
    except Exception as e:  # noqa: BLE001
        rows.append(("Triton: not run (%s)" % e, float("nan")))
    try:
        import tilelang
        import tilelang.language as T
        if not getattr(tilelang, "__version__", None):
            raise ImportError("tilelang is Tile's alias, not TileLang")

        @tilelang.jit(out_idx=[-1])
        def tl_add(N, block=256):
            @T.prim_func
            def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
                with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
                    for i in T.Parallel(block):
                        C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
            return main

        kt = tl_add(N)
        rows.append(("TileLang %s (out_idx)" % tilelang.__version__, per_call(lambda: kt(a, b))))
    except Exception as e:  # noqa: BLE001
        rows.append(("TileLang: not run (%s)" % str(e).split("\n")[0][:80], float("nan")))
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.add(a, b, out=c)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        torch.add(a, b, out=c)
    rows.append(("CUDA graph replay of torch.add", per_call(g.replay)))
    rows.append(("torch.add(out=) eager", per_call(lambda: torch.add(a, b, out=c))))
    base = rows[0][1]
    out = ["| launcher | us per call | vs tile |", "|---|---|---|"]
    for name, t in rows:
        out.append("| %s | %.2f | %.2f |" % (name, t * 1e6, t / base if t == t else float("nan")))
    text = "\n".join(out)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
