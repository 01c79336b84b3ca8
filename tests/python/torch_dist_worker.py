"""One rank of the backend "tile" tests (tests/python/test_torch_dist.py starts it under
torchrun, tile launch or plain subprocesses).

    torch_dist_worker.py calls        every torch.distributed call, every dtype, tile vs gloo
    torch_dist_worker.py calls-env    the same under tile launch / mpirun (no torch store):
                                      tile vs references computed from every rank's inputs
    ... calls quick, calls-env quick  every call on a few dtypes (one of each kind), for the
                                      larger rank counts
    torch_dist_worker.py kill R       rank R exits in the middle of an all_reduce; the
                                      survivors must raise TileDistError naming R
    torch_dist_worker.py ddp          DDP on the digits set: gloo, tile, tile + sign1 hook
Prints "OK <mode>" at the end on success."""
import datetime
import gzip
import os
import sys
import time

import torch
import torch.distributed as dist

import tile.torch  # noqa: F401 (registers backend "tile")
from tile.torch import distributed as td

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int32,
          torch.int64, torch.uint8, torch.bool, torch.complex64, torch.complex128]
for _n in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
    if hasattr(torch, _n):
        DTYPES.append(getattr(torch, _n))
# one of each kind: float (f32, and bf16 with its own reduction), widened int, native int,
# bool, complex
QUICK = [torch.float32, torch.bfloat16, torch.int8, torch.int64, torch.bool, torch.complex64]
OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX,
       "product": dist.ReduceOp.PRODUCT}
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16}


def data(rank, shape, dtype, salt=0):
    """Rank-dependent values that every dtype holds exactly, and whose sums and products
    (<= 4 ranks) stay exact: integers in [-2, 2] ([0, 3] unsigned, {0,1} bool)."""
    g = torch.Generator().manual_seed(1000 * rank + salt + 7)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        return torch.complex(torch.randint(-2, 3, shape, generator=g).double(),
                             torch.randint(-2, 3, shape, generator=g).double()).to(dtype)
    unsigned = dtype in (torch.uint8,) or str(dtype).startswith("torch.uint")
    lo, hi = (0, 4) if unsigned else (-2, 3)
    return torch.randint(lo, hi, shape, generator=g).to(torch.float64).to(dtype)


def same(a, b, what):
    if a.dtype != b.dtype or a.shape != b.shape:
        raise AssertionError("%s: dtype/shape %s %s vs %s %s" % (what, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape)))
    x, y = a.to(torch.float64) if not a.is_complex() else a, b.to(torch.float64) if not b.is_complex() else b
    if not torch.equal(x, y):
        raise AssertionError("%s: results differ\n tile %s\n ref  %s" % (what, a.flatten()[:8], b.flatten()[:8]))


def ref_reduce(tensors, op, dtype):
    """Reference reduction of every rank's tensor, in float64 / int64, cast back."""
    if dtype.is_complex:
        acc = torch.view_as_real(torch.stack(tensors).to(torch.complex128).sum(0))  # exact: small integers
        acc = acc / len(tensors) if op == "avg" else acc  # each part divided, rounded once
        return torch.view_as_complex(acc.contiguous()).to(dtype)
    if dtype == torch.bool:
        s = torch.stack(tensors)
        return (s.any(0) if op in ("sum", "max", "avg") else s.all(0))
    wide = torch.float64 if (dtype.is_floating_point) else torch.int64
    s = torch.stack([t.to(wide) for t in tensors])
    r = {"sum": lambda: s.sum(0), "avg": lambda: s.sum(0) / len(tensors), "min": lambda: s.min(0).values,
         "max": lambda: s.max(0).values, "product": lambda: s.prod(0)}[op]()
    return r.to(dtype)


def try_gloo(fn):
    """Run fn on the gloo group; None where gloo refuses the arguments (dtypes or uneven
    shapes it lacks: the caller then compares with a reference instead)."""
    try:
        return fn()
    except (RuntimeError, ValueError, TypeError):
        return None


def reduce_ok(dtype, op):
    if dtype.is_complex and op not in ("sum", "avg"):
        return False
    if op == "avg" and not (dtype in FLOATS or dtype.is_complex):
        return False  # integer avg truncates differently per backend; floats only
    if getattr(torch, "uint64", None) == dtype and op in ("min", "max"):
        return False
    if dtype in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)) and op == "product":
        return True
    return True


def check_calls(gloo, compare_gloo=True, dtypes=DTYPES):
    r, n = dist.get_rank(), dist.get_world_size()
    counted = {"gloo": 0, "ref": 0}

    def both(name, run, ref=None):
        """run(group) -> tensor (or list); compare tile's with gloo's, else with ref."""
        mine = run(None)
        other = try_gloo(lambda: run(gloo)) if (compare_gloo and gloo is not None) else None
        if other is None:
            other = ref() if ref is not None else None
            if other is None:
                return
            counted["ref"] += 1
        else:
            counted["gloo"] += 1
        if isinstance(mine, (list, tuple)):
            for i, (a, b) in enumerate(zip(mine, other)):
                same(a, b, "%s[%d]" % (name, i))
        else:
            same(mine, other, name)

    for dt in dtypes:
        tag = str(dt).replace("torch.", "")
        for opn, op in OPS.items():
            if not reduce_ok(dt, opn):
                continue

            def ar(g, dt=dt, op=op):
                x = data(r, (5, 3), dt, 1)
                dist.all_reduce(x, op=op, group=g)
                return x
            both("all_reduce %s %s" % (opn, tag), ar, lambda dt=dt, opn=opn: ref_reduce([data(q, (5, 3), dt, 1) for q in range(n)], opn, dt))

            def red(g, dt=dt, op=op):
                x = data(r, (7,), dt, 2)
                dist.reduce(x, dst=0, op=op, group=g)
                return x if r == 0 else torch.zeros(0, dtype=dt)
            both("reduce %s %s" % (opn, tag), red,
                 lambda dt=dt, opn=opn: ref_reduce([data(q, (7,), dt, 2) for q in range(n)], opn, dt) if r == 0 else torch.zeros(0, dtype=dt))

            if opn in ("sum", "max", "min"):
                def rst(g, dt=dt, op=op):
                    out = torch.zeros(4, dtype=dt)
                    dist.reduce_scatter_tensor(out, data(r, (4 * n,), dt, 3), op=op, group=g)
                    return out
                both("reduce_scatter_tensor %s %s" % (opn, tag), rst,
                     lambda dt=dt, opn=opn: ref_reduce([data(q, (4 * n,), dt, 3) for q in range(n)], opn, dt)[4 * r:4 * r + 4])

                def rsl(g, dt=dt, op=op):
                    out = torch.zeros(2, 3, dtype=dt)
                    dist.reduce_scatter(out, list(data(r, (n, 2, 3), dt, 4).unbind(0)), op=op, group=g)
                    return out
                both("reduce_scatter %s %s" % (opn, tag), rsl,
                     lambda dt=dt, opn=opn: ref_reduce([data(q, (n, 2, 3), dt, 4) for q in range(n)], opn, dt)[r])

        def bc(g, dt=dt):
            x = data(r, (6,), dt, 5)
            dist.broadcast(x, src=n - 1, group=g)
            return x
        both("broadcast " + tag, bc, lambda dt=dt: data(n - 1, (6,), dt, 5))

        def ag(g, dt=dt):
            outs = [torch.zeros(3, 2, dtype=dt) for _ in range(n)]
            dist.all_gather(outs, data(r, (3, 2), dt, 6), group=g)
            return outs
        both("all_gather " + tag, ag, lambda dt=dt: [data(q, (3, 2), dt, 6) for q in range(n)])

        def agt(g, dt=dt):
            out = torch.zeros(n * 5, dtype=dt)
            dist.all_gather_into_tensor(out, data(r, (5,), dt, 7), group=g)
            return out
        both("all_gather_into_tensor " + tag, agt, lambda dt=dt: torch.cat([data(q, (5,), dt, 7) for q in range(n)]))

        # uneven splits: rank r sends (q + r) % 3 rows of 2 to rank q
        def a2as(g, dt=dt):
            ins = [(q + r) % 3 for q in range(n)]
            outs = [(r + q) % 3 for q in range(n)]
            x = data(r, (sum(ins), 2), dt, 8)
            y = torch.zeros(sum(outs), 2, dtype=dt)
            dist.all_to_all_single(y, x, output_split_sizes=outs, input_split_sizes=ins, group=g)
            return y

        def a2as_ref(dt=dt):
            parts = []
            for q in range(n):
                ins = [(p + q) % 3 for p in range(n)]
                xq = data(q, (sum(ins), 2), dt, 8)
                parts.append(xq[sum(ins[:r]):sum(ins[:r]) + ins[r]])
            return torch.cat(parts)
        both("all_to_all_single uneven " + tag, a2as, a2as_ref)

        def a2ae(g, dt=dt):
            x = data(r, (2 * n, 3), dt, 9)
            y = torch.zeros(2 * n, 3, dtype=dt)
            dist.all_to_all_single(y, x, group=g)
            return y
        both("all_to_all_single " + tag, a2ae, lambda dt=dt: torch.cat([data(q, (2 * n, 3), dt, 9)[2 * r:2 * r + 2] for q in range(n)]))

        def a2a(g, dt=dt):
            ins = [data(r, (q + 1,), dt, 10 + q) for q in range(n)]
            outs = [torch.zeros(r + 1, dtype=dt) for _ in range(n)]
            dist.all_to_all(outs, ins, group=g)
            return outs
        both("all_to_all " + tag, a2a, lambda dt=dt: [data(q, (r + 1,), dt, 10 + r) for q in range(n)])

        root = 1 % n

        def ga(g, dt=dt):
            outs = [torch.zeros(4, dtype=dt) for _ in range(n)] if r == root else None
            dist.gather(data(r, (4,), dt, 11), outs, dst=root, group=g)
            return outs if r == root else []
        both("gather " + tag, ga, lambda dt=dt: [data(q, (4,), dt, 11) for q in range(n)] if r == root else [])

        def sc(g, dt=dt):
            out = torch.zeros(3, dtype=dt)
            dist.scatter(out, [data(0, (3,), dt, 12 + q) for q in range(n)] if r == 0 else None, src=0, group=g)
            return out
        both("scatter " + tag, sc, lambda dt=dt: data(0, (3,), dt, 12 + r))

        if n > 1:
            def p2p(g, dt=dt):
                x, y = data(r, (9,), dt, 13), torch.zeros(9, dtype=dt)
                nxt, prv = (r + 1) % n, (r - 1) % n
                if g is not None:
                    nxt, prv = dist.get_global_rank(g, nxt), dist.get_global_rank(g, prv)
                if r % 2 == 0:
                    dist.send(x, nxt, group=g)
                    dist.recv(y, prv, group=g)
                else:
                    dist.recv(y, prv, group=g)
                    dist.send(x, nxt, group=g)
                return y
            both("send/recv " + tag, p2p, lambda dt=dt: data((r - 1) % n, (9,), dt, 13))

    # async work, futures, barrier, timeouts on wait
    x = data(r, (1000,), torch.float32, 14)
    w = dist.all_reduce(x, async_op=True)
    y = data(r, (10,), torch.float64, 15)
    w2 = dist.broadcast(y, src=0, async_op=True)
    fut = w2.get_future()
    assert w.wait(timeout=datetime.timedelta(seconds=60)) and w2.wait()
    assert w.is_completed() and fut.done()
    same(x, ref_reduce([data(q, (1000,), torch.float32, 14) for q in range(n)], "sum", torch.float32), "async all_reduce")
    same(y, data(0, (10,), torch.float64, 15), "async broadcast")
    dist.barrier()
    # bad input: a clear error naming the argument, no hang
    try:
        dist.all_to_all_single(torch.zeros(3), torch.zeros(3), output_split_sizes=[1] * (n + 1), input_split_sizes=[3] + [0] * n)
        raise AssertionError("bad split sizes were accepted")
    except ValueError as e:
        assert "split_sizes" in str(e), e
    dist.barrier()
    print("rank %d compared %d calls with gloo, %d with references" % (r, counted["gloo"], counted["ref"]), flush=True)


def kill(victim):
    r, n = dist.get_rank(), dist.get_world_size()
    x = torch.ones(1 << 20)
    for i in range(1000):
        if r == victim and i == 3:
            os._exit(17)
        t0 = time.time()
        try:
            dist.all_reduce(x)
        except td.TileDistError as e:
            msg = str(e)
            assert ("rank %d" % victim) in msg, msg
            print("rank %d raised after %.1f s: %s" % (r, time.time() - t0, msg.splitlines()[0]), flush=True)
            print("OK kill", flush=True)
            os._exit(0)
        x.fill_(1.0)
    raise AssertionError("rank %d: no error although rank %d exited" % (r, victim))


def digits():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "scripts"))
    import prepare_digits
    path = prepare_digits.find_csv()
    if not path:
        return None
    rows = [list(map(int, line.split(b","))) for line in gzip.open(path).read().split(b"\n") if line.strip()]
    t = torch.tensor(rows, dtype=torch.float32)
    return t[:, :64] / 16.0, t[:, 64].long()


def ddp():
    from torch.nn.parallel import DistributedDataParallel as DDP
    r, n = dist.get_rank(), dist.get_world_size()
    d = digits()
    if d is None:
        print("SKIP ddp: the digits CSV (scikit-learn) is not installed", flush=True)
        return
    X, Y = d
    perm = torch.randperm(len(X), generator=torch.Generator().manual_seed(0))
    X, Y = X[perm], Y[perm]
    ntest = 397
    Xte, Yte, Xtr, Ytr = X[:ntest], Y[:ntest], X[ntest:], Y[ntest:]
    gloo = dist.new_group(backend="gloo")
    results = {}
    lr, beta = 0.1, 0.9
    # sign1: the averaged blocks all-gathered in int8, each rank's momentum compressed (the
    # hook's momentum=, the optimiser's value); int4m: int4 in both phases, momentum
    # compressed (docs/pytorch.md's choice where accuracy must match); int8: the gradient
    sign1 = dict(gather="int8", momentum=beta)
    runs = (("gloo", gloo, None), ("tile", None, None), ("tile+sign1", None, ("sign1", sign1)),
            ("tile+int4m", None, ("int4", dict(momentum=beta))), ("tile+int8", None, ("int8", {})))
    for name, group, hook in runs:
        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
        m = DDP(model, process_group=group, bucket_cap_mb=0.01)
        if hook:
            m.register_comm_hook(None, tile.torch.comm_hook(hook[0], **hook[1]))
        opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=beta)
        bs = 32
        for epoch in range(6):
            for step in range(len(Xtr) // (n * bs)):  # the same number of steps on every rank
                i = (step * n + r) * bs
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(m(Xtr[i:i + bs]), Ytr[i:i + bs])
                loss.backward()
                opt.step()
        with torch.no_grad():
            acc = (model(Xte).argmax(1) == Yte).float().mean().item() * 100
        results[name] = acc
    print("rank %d accuracy %s" % (r, " ".join("%s=%.2f" % kv for kv in results.items())), flush=True)
    assert abs(results["tile"] - results["gloo"]) <= 0.5, results
    assert abs(results["tile+int8"] - results["tile"]) <= 1.0, results
    assert abs(results["tile+sign1"] - results["tile"]) <= 1.0, results
    assert abs(results["tile+int4m"] - results["tile"]) <= 1.0, results
    assert results["tile"] > 85, results


def main():
    mode = sys.argv[1]
    dtypes = QUICK if sys.argv[2:3] == ["quick"] else DTYPES
    if mode == "calls-env":
        td.init_process_group(timeout=datetime.timedelta(seconds=60))
        check_calls(None, compare_gloo=False, dtypes=dtypes)
    elif mode == "kill":
        dist.init_process_group("tile", timeout=datetime.timedelta(seconds=30))
        kill(int(sys.argv[2]))
    else:
        dist.init_process_group("tile", timeout=datetime.timedelta(seconds=60))
        if mode == "calls":
            check_calls(dist.new_group(backend="gloo"), dtypes=dtypes)
        elif mode == "ddp":
            ddp()
    dist.barrier()
    dist.destroy_process_group()
    print("OK " + mode, flush=True)


if __name__ == "__main__":
    main()
