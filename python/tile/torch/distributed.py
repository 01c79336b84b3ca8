"""TileLink as the torch.distributed backend "tile", and DDP communication hooks.

    import tile.torch                                  # registers the backend
    torch.distributed.init_process_group("tile")       # torchrun: env:// or a TCPStore
    ddp = DistributedDataParallel(model)               # default group: backend "tile"
    ddp.register_comm_hook(None, tile.torch.comm_hook("sign1"))

The process group is a Python torch.distributed.ProcessGroup over a tile.link communicator.
Every operation of a group runs in issue order on the group's worker thread; a caller that
waits for an operation nobody has started yet runs it itself (no thread hand-off for blocking
calls). The library calls release the GIL (ctypes), so buckets are reduced while backward runs.
Bootstrap: rank 0 of the group starts a TileLink store on a free port and publishes its address
in torch's store; the others read it and join. CUDA tensors are staged through host memory.
A failed peer raises TileDistError naming the rank (TileLink's heartbeats and timeout). See
docs/pytorch.md."""
import collections
import ctypes
import datetime
import os
import threading

import torch
import torch.distributed as dist

from .. import link

__all__ = ["TileDistError", "TileProcessGroup", "comm_hook", "init_process_group", "BACKEND"]

BACKEND = "tile"

try:
    _ErrBase = dist.DistBackendError
except AttributeError:  # older torch
    _ErrBase = RuntimeError


class TileDistError(_ErrBase):
    """A collective of backend "tile" failed; .ranks lists the failed peers TileLink knows of."""

    def __init__(self, msg, ranks=()):
        super().__init__(msg)
        self.ranks = list(ranks)


# ---------------------------------------------------------------- bindings used here only
_L = link._lib
_P, _c_int, _c_size_t = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t


class _Config(ctypes.Structure):
    _fields_ = [("rank", _c_int), ("size", _c_int), ("from_env", _c_int), ("store_addr", ctypes.c_char_p),
                ("timeout_s", ctypes.c_double), ("key_prefix", ctypes.c_char_p), ("host_store", _c_int),
                ("transport", ctypes.c_char_p), ("reserved", _c_int * 16)]


_init_config = link._fn("tlink_comm_init_config", _c_int, ctypes.POINTER(_P), ctypes.POINTER(_Config))
_srv_start = link._fn("tlink_store_server_start", _c_int, ctypes.c_char_p, _c_int, ctypes.POINTER(_P))
_srv_port = link._fn("tlink_store_server_port", _c_int, _P)
_srv_stop = link._fn("tlink_store_server_stop", _c_int, _P)
_alltoallv = link._fn("tlink_alltoallv", _c_int, _P, _P, ctypes.POINTER(_c_size_t), ctypes.POINTER(_c_size_t), _P,
                      ctypes.POINTER(_c_size_t), ctypes.POINTER(_c_size_t), _c_int)
_abort = link._fn("tlink_comm_abort", _c_int, _P)
_U8 = link._DT["uint8"]


# ---------------------------------------------------------------- dtypes and reduction ops
_NATIVE = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8}
for _n in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _n):
        _NATIVE.add(getattr(torch, _n))
_WIDEN_INT = {torch.int8, torch.int16}
for _n in ("uint16", "uint32"):
    if hasattr(torch, _n):
        _WIDEN_INT.add(getattr(torch, _n))
_RO = dist.ReduceOp


def _op_name(op):
    for rop, name in ((_RO.SUM, "sum"), (_RO.AVG, "avg"), (_RO.PRODUCT, "prod"), (_RO.MIN, "min"), (_RO.MAX, "max")):
        if op == rop:
            return name
    raise ValueError("backend 'tile': reduce op %s is not supported (sum, avg, product, min, max)" % op)


def _reduce_plan(dtype, op):
    """(working dtype, tlink op name, complex?) for reducing dtype with op; raises for what has no
    meaning (complex min/max/product, uint64 min/max)."""
    if dtype in _NATIVE:
        return dtype, op, False
    if dtype == torch.bool:
        return torch.uint8, {"sum": "max", "max": "max", "avg": "max", "prod": "min", "min": "min"}[op], False
    if dtype in _WIDEN_INT:
        return torch.int64, op, False
    if getattr(torch, "uint64", None) == dtype:
        if op in ("min", "max"):
            raise TypeError("backend 'tile': %s of uint64 tensors is not supported" % op)
        return torch.int64, op, False
    if dtype.is_complex:
        if op not in ("sum", "avg"):
            raise TypeError("backend 'tile': %s of complex tensors is not defined (sum and avg are)" % op)
        return (torch.float32 if dtype == torch.complex64 else torch.float64), op, True
    if dtype.is_floating_point:
        return torch.float32, op, False
    raise TypeError("backend 'tile': cannot reduce tensors of dtype %s" % dtype)


def _bytes(t):
    """A flat uint8 view of a contiguous CPU tensor."""
    return t.reshape(-1).view(torch.uint8)


def _host(t):
    """A contiguous CPU tensor holding t's data (t itself when it already is one)."""
    if t.device.type == "cpu" and t.is_contiguous():
        return t
    return t.detach().to("cpu").contiguous()


def _back(dst, src):
    if src is not dst:
        dst.copy_(src)


# ---------------------------------------------------------------- work and the worker thread
def _profiling():
    """Does a torch.profiler session run (on any thread)?"""
    return getattr(torch.autograd.profiler, "_is_profiler_enabled", True)


class _Op:
    __slots__ = ("fn", "result", "error", "done", "future", "name")

    def __init__(self, fn, result, name):
        self.fn, self.result, self.error, self.name = fn, result, None, name
        self.done = threading.Event()
        self.future = torch.futures.Future()


class _Engine:
    """Runs a group's operations one at a time in issue order: on the worker thread, or on the
    thread that waits for an operation that is next and not started (it steals it)."""

    def __init__(self, name):
        self._q = collections.deque()
        self._cv = threading.Condition()
        self._busy = False
        self._closed = False
        self._t = threading.Thread(target=self._loop, name="tile-pg-" + name, daemon=True)
        self._t.start()

    def submit(self, op):
        with self._cv:
            if self._closed:
                raise TileDistError("backend 'tile': the process group is destroyed")
            self._q.append(op)
            self._cv.notify()
        return op

    def run_now(self, op):
        """Run op on this thread when nothing is queued or running, else queue it and wait."""
        with self._cv:
            if self._closed:
                raise TileDistError("backend 'tile': the process group is destroyed")
            idle = not self._busy and not self._q
            if idle:
                self._busy = True
            else:
                self._q.append(op)
                self._cv.notify()
        if idle:
            self._run(op)
        return op

    def _run(self, op):
        try:
            # a range in torch.profiler's traces (bench/torch/ddp_step.py measures overlap with
            # it); only while a profiler runs: entering and leaving a range costs ~10 us a call
            if _profiling():
                with torch.autograd.profiler.record_function("tile::" + op.name):
                    op.fn()
            else:
                op.fn()
        except BaseException as e:  # noqa: BLE001 (handed to the waiter)
            op.error = e
        finally:
            with self._cv:
                self._busy = False
                # wake the worker only for queued work: waking it for nothing (after every
                # blocking call run here) costs two thread switches and a GIL hand-off, which
                # on a host with fewer cores than ranks delays the peers too
                if self._q:
                    self._cv.notify()
            # the future first: a caller that wait()ed must find it done (and its callbacks,
            # such as a DDP hook's, run) once the work reports completion
            if op.error is not None:
                op.future.set_exception(op.error)
            else:
                op.future.set_result(op.result)
            op.done.set()

    def _loop(self):
        while True:
            with self._cv:
                while (not self._q or self._busy) and not self._closed:
                    self._cv.wait()
                if not self._q:
                    return
                op = self._q.popleft()
                self._busy = True
            self._run(op)

    def wait(self, op, timeout=None):
        if not op.done.is_set():
            steal = False
            with self._cv:
                if not self._busy and self._q and self._q[0] is op:
                    self._q.popleft()
                    self._busy = steal = True
            if steal:
                self._run(op)
            elif not op.done.wait(timeout):
                raise TileDistError("backend 'tile': %s did not finish within %.1f s" % (op.name, timeout))
        if op.error is not None:
            raise op.error

    def close(self):
        with self._cv:
            self._closed = True
            self._cv.notify_all()


class _Work(dist._Work):
    def __init__(self, engine, op):
        super().__init__()
        self._engine, self._op = engine, op

    def wait(self, timeout=None):
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        if timeout is not None and timeout <= 0:
            timeout = None
        self._engine.wait(self._op, timeout)
        return True

    def is_completed(self):
        return self._op.done.is_set()

    def is_success(self):
        return self._op.done.is_set() and self._op.error is None

    def exception(self):
        return self._op.error

    def result(self):
        return self._op.result

    def get_future(self):
        return self._op.future

    def synchronize(self):
        self.wait()


# ---------------------------------------------------------------- the process group
def _underlying_tcp(store):
    seen = 0
    while store is not None and seen < 8:
        if isinstance(store, dist.TCPStore):
            return store
        store = getattr(store, "underlying_store", None)
        seen += 1
    return None


_pending_comm = None  # a tile.link Comm made by init_process_group() for the next group


class TileProcessGroup(dist.ProcessGroup):
    """torch.distributed process group over a tile.link communicator (backend "tile")."""

    def __init__(self, store, rank, size, timeout, comm=None):
        super().__init__(rank, size)
        self._timeout = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout or 300)
        self._server = None
        self.comm = comm if comm is not None else self._bootstrap(store, rank, size)
        self.comm.set_timeout(self._timeout)
        self._engine = _Engine("r%d" % rank)

    def _bootstrap(self, store, rank, size):
        key = "tile/store_addr"
        if rank == 0:
            local = os.environ.get("LOCAL_WORLD_SIZE") == str(size) or size == 1
            bind = "127.0.0.1" if local else "0.0.0.0"
            srv = _P()
            link._check(_srv_start(bind.encode(), 0, ctypes.byref(srv)), None, "tile store")
            self._server = srv
            host = "127.0.0.1" if local else (os.environ.get("MASTER_ADDR") or
                                              getattr(_underlying_tcp(store), "host", None) or "127.0.0.1")
            store.set(key, "%s:%d" % (host, _srv_port(srv)))
        addr = store.get(key).decode()
        cfg = _Config()
        cfg.rank, cfg.size, cfg.store_addr, cfg.timeout_s = rank, size, addr.encode(), self._timeout
        cfg.key_prefix, cfg.host_store = b"tpg", -1
        h = _P()
        link._check(_init_config(ctypes.byref(h), ctypes.byref(cfg)), None, "backend 'tile' (rank %d, store %s)" % (rank, addr))
        return link.Comm(_h=h)

    def getBackendName(self):
        return BACKEND

    def name(self):
        return BACKEND

    @property
    def supports_splitting(self):
        return False

    # -- plumbing
    def _submit(self, name, fn, result, opts=None):
        """Queue fn for the worker thread (async_op=True, and C++ callers such as DDP), or run it
        now on this thread (async_op=False: no thread hand-off)."""
        def run():
            try:
                fn()
            except link.LinkError as e:
                raise TileDistError("backend 'tile' rank %d: %s" % (self.rank(), e), self.comm.failed_ranks()) from None
        op = _Op(run, result, name)
        if opts is not None and not getattr(opts, "asyncOp", True):
            self._engine.run_now(op)
        else:
            self._engine.submit(op)
        return _Work(self._engine, op)

    def _h(self):
        if self.comm._h is None:
            raise TileDistError("backend 'tile': the process group is destroyed")
        return self.comm._h

    def _alltoallv_bytes(self, send, scounts, recv, rcounts):
        """tlink_alltoallv on flat uint8 CPU tensors with byte counts per rank."""
        n = self.size()
        sc, rc = (_c_size_t * n)(*scounts), (_c_size_t * n)(*rcounts)
        sd, rd = (_c_size_t * n)(), (_c_size_t * n)()
        o = 0
        for i in range(n):
            sd[i], o = o, o + scounts[i]
        o = 0
        for i in range(n):
            rd[i], o = o, o + rcounts[i]
        sp = send.data_ptr() if send.numel() else None
        rp = recv.data_ptr() if recv.numel() else None
        link._check(_alltoallv(self._h(), sp, sc, sd, rp, rc, rd, _U8), self._h(), "alltoall")

    def _reduce_into(self, t, op, fn):
        """Reduce tensor t (any device, any layout) in place with fn(buf, tlink_op) on a CPU buffer."""
        wd, top, cplx = _reduce_plan(t.dtype, op)
        if cplx:
            h = _host(t)
            buf = torch.view_as_real(h).contiguous() if h.is_contiguous() else torch.view_as_real(h.contiguous())
            fn(buf, top)
            _back(t, torch.view_as_complex(buf))
            return
        h = _host(t)
        buf = h if h.dtype == wd else h.to(wd)
        fn(buf, top)
        if buf is not t:
            t.copy_(buf.to(t.dtype) if buf.dtype != t.dtype else buf)

    # -- collectives
    def allreduce(self, tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else _RO.SUM)
        ts = list(tensors)

        def fn():
            for t in ts:
                self._reduce_into(t, op, lambda b, o: link.allreduce(self.comm, b, op=o))
        return self._submit("allreduce", fn, ts, opts)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts):
        op, root = _op_name(opts.reduceOp), opts.rootRank
        ts = list(tensors)

        def fn():
            for t in ts:
                self._reduce_into(t, op, lambda b, o: link.reduce(self.comm, b, out=b if self.rank() == root else None, op=o, root=root))
        return self._submit("reduce", fn, ts, opts)

    def broadcast(self, tensors, opts):
        root = opts.rootRank
        ts = list(tensors)

        def fn():
            for t in ts:
                h = _host(t)
                link.broadcast(self.comm, _bytes(h), root=root)
                _back(t, h)
        return self._submit("broadcast", fn, ts, opts)

    def _gather_flat(self, inp, out_flat):
        h = _host(inp)
        link.allgather(self.comm, _bytes(h), _bytes(out_flat))

    def allgather(self, output_tensors, input_tensors, opts=None):
        outs, ins = [list(o) for o in output_tensors], list(input_tensors)
        for o, i in zip(outs, ins):
            if len(o) != self.size() or any(x.numel() != i.numel() or x.dtype != i.dtype for x in o):
                raise ValueError("backend 'tile' all_gather: needs %d output tensors of the input's numel and dtype" % self.size())

        def fn():
            for o, i in zip(outs, ins):
                flat = torch.empty((self.size(), i.numel()), dtype=i.dtype)
                self._gather_flat(i, flat)
                for r, x in enumerate(o):
                    x.copy_(flat[r].view(x.shape))
        return self._submit("allgather", fn, outs, opts)

    def _allgather_base(self, output, input, opts=None):
        if output.numel() != input.numel() * self.size() or output.dtype != input.dtype:
            raise ValueError("backend 'tile' all_gather_into_tensor: output must hold world_size x input.numel() elements of the input's dtype")

        def fn():
            h = _host(output)
            self._gather_flat(input, h)
            _back(output, h)
        return self._submit("allgather_into_tensor", fn, [output], opts)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        works = [self._allgather_base(o, i, opts) for o, i in zip(outputs, inputs)]
        return works[-1] if works else self.barrier()

    def _rs(self, out, flat_in, op):
        """Reduce-scatter a contiguous input (size x out.numel()) into out."""
        wd, top, cplx = _reduce_plan(out.dtype, op)
        if cplx:
            src = torch.view_as_real(_host(flat_in)).contiguous()
            res = torch.empty(src.numel() // self.size(), dtype=wd)
            link.reduce_scatter(self.comm, src.view(-1), res, op=top)
            out.copy_(torch.view_as_complex(res.view(-1, 2)).view(out.shape))
            return
        src = _host(flat_in).to(wd).reshape(-1)
        res = torch.empty(out.numel(), dtype=wd)
        link.reduce_scatter(self.comm, src, res, op=top)
        out.copy_(res.view(out.shape).to(out.dtype))

    def reduce_scatter(self, output_tensors, input_tensors, opts):
        op = _op_name(opts.reduceOp)
        outs, ins = list(output_tensors), [list(i) for i in input_tensors]
        for o, i in zip(outs, ins):
            if len(i) != self.size() or any(x.numel() != o.numel() for x in i):
                raise ValueError("backend 'tile' reduce_scatter: needs %d input tensors of the output's numel" % self.size())

        def fn():
            for o, i in zip(outs, ins):
                self._rs(o, torch.cat([x.detach().to("cpu").reshape(-1) for x in i]), op)
        return self._submit("reduce_scatter", fn, outs, opts)

    def _reduce_scatter_base(self, output, input, opts):
        op = _op_name(opts.reduceOp)
        if input.numel() != output.numel() * self.size():
            raise ValueError("backend 'tile' reduce_scatter_tensor: input must hold world_size x output.numel() elements")
        return self._submit("reduce_scatter_tensor", lambda: self._rs(output, input, op), [output], opts)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts):
        works = [self._reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs)]
        return works[-1] if works else self.barrier()

    def alltoall(self, output_tensors, input_tensors, opts=None):
        outs, ins = list(output_tensors), list(input_tensors)
        if len(outs) != self.size() or len(ins) != self.size():
            raise ValueError("backend 'tile' all_to_all: needs %d input and output tensors" % self.size())

        def fn():
            send = torch.cat([_bytes(_host(x)) for x in ins]) if ins else torch.empty(0, dtype=torch.uint8)
            rc = [x.numel() * x.element_size() for x in outs]
            recv = torch.empty(sum(rc), dtype=torch.uint8)
            self._alltoallv_bytes(send, [x.numel() * x.element_size() for x in ins], recv, rc)
            o = 0
            for x, c in zip(outs, rc):
                x.copy_(recv[o:o + c].view(x.dtype).view(x.shape))
                o += c
        return self._submit("alltoall", fn, outs, opts)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        n = self.size()

        def splits(t, s, what):
            rows = t.shape[0] if t.dim() else 1
            if not s:
                if rows % n:
                    raise ValueError("backend 'tile' all_to_all_single: %s dim 0 (%d) is not divisible by world size %d" % (what, rows, n))
                s = [rows // n] * n
            if len(s) != n or sum(s) != rows:
                raise ValueError("backend 'tile' all_to_all_single: %s_split_sizes %s must have %d entries summing to %d" % (what, list(s), n, rows))
            row = (t.numel() // rows if rows else 0) * t.element_size()
            return [int(x) * row for x in s]

        sc = splits(input, list(input_split_sizes), "input")
        rc = splits(output, list(output_split_sizes), "output")

        def fn():
            hin, hout = _host(input), _host(output)
            self._alltoallv_bytes(_bytes(hin), sc, _bytes(hout), rc)
            _back(output, hout)
        return self._submit("alltoall_single", fn, [output], opts)

    def gather(self, output_tensors, input_tensors, opts):
        root, n, me = opts.rootRank, self.size(), self.rank()
        outs = [list(o) for o in output_tensors] if me == root else [[] for _ in input_tensors]
        ins = list(input_tensors)
        if me == root and any(len(o) != n for o in outs):
            raise ValueError("backend 'tile' gather: the root needs a gather_list of %d tensors" % n)

        def fn():
            for o, i in zip(outs, ins):
                nb = i.numel() * i.element_size()
                sc = [nb if r == root else 0 for r in range(n)]
                rc = [x.numel() * x.element_size() for x in o] if me == root else [0] * n
                recv = torch.empty(sum(rc), dtype=torch.uint8)
                self._alltoallv_bytes(_bytes(_host(i)), sc, recv, rc)
                off = 0
                for x, c in zip(o, rc):
                    x.copy_(recv[off:off + c].view(x.dtype).view(x.shape))
                    off += c
        return self._submit("gather", fn, outs, opts)

    def scatter(self, output_tensors, input_tensors, opts):
        root, n, me = opts.rootRank, self.size(), self.rank()
        outs = list(output_tensors)
        ins = [list(i) for i in input_tensors] if me == root else [[] for _ in outs]
        if me == root and any(len(i) != n for i in ins):
            raise ValueError("backend 'tile' scatter: the root needs a scatter_list of %d tensors" % n)

        def fn():
            for o, i in zip(outs, ins):
                nb = o.numel() * o.element_size()
                sc = [x.numel() * x.element_size() for x in i] if me == root else [0] * n
                send = torch.cat([_bytes(_host(x)) for x in i]) if i else torch.empty(0, dtype=torch.uint8)
                h = _host(o)
                self._alltoallv_bytes(send, sc, _bytes(h), [nb if r == root else 0 for r in range(n)])
                _back(o, h)
        return self._submit("scatter", fn, outs, opts)

    def barrier(self, opts=None):
        return self._submit("barrier", lambda: link.barrier(self.comm), [], opts)

    # -- point to point (matched in order per pair of ranks; tags are not matched)
    def send(self, tensors, dst, tag=0):
        ts = list(tensors)

        def fn():
            for t in ts:
                link.send(self.comm, _bytes(_host(t)), dst)
        return self._submit("send", fn, ts)

    def recv(self, tensors, src, tag=0):
        ts = list(tensors)

        def fn():
            for t in ts:
                h = _host(t)
                got = link.recv(self.comm, _bytes(h), src)
                if got != h.numel() * h.element_size():
                    raise TileDistError("backend 'tile' recv from rank %d: got %d bytes, the tensor holds %d" % (src, got, h.numel() * h.element_size()))
                _back(t, h)
        return self._submit("recv", fn, ts)

    def recv_anysource(self, tensors, tag=0):
        raise TileDistError("backend 'tile': recv without a source rank is not supported")

    # torch.distributed's Python layer calls these names; C++ callers use the ones above
    all_gather_single = _allgather_base
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single = _reduce_scatter_base
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced
    all_to_all_single = alltoall_base

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        return self.allgather(output_lists, input_list, opts)

    def gather_single(self, output, input, opts):
        """gather into one tensor at the root (world_size x input.numel() elements)."""
        n = self.size()
        outs = [list(output.reshape(-1).chunk(n))] if self.rank() == opts.rootRank else [[]]
        w = self.gather(outs if self.rank() == opts.rootRank else [], [input], opts)
        return w

    gather_into_tensor = gather_single

    # -- compressed all-reduce (the DDP hook)
    def _compressed(self, comp, buf, name):
        return self._submit(name, lambda: comp.allreduce(buf, op="avg"), buf)

    def abort(self):
        if self.comm._h:
            _abort(self.comm._h)

    def shutdown(self):
        self._engine.close()
        self.comm.close()
        if self._server:
            _srv_stop(self._server)
            self._server = None

    def __del__(self):
        try:
            self._engine.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


def _create(store, rank, size, timeout):
    global _pending_comm
    comm, _pending_comm = _pending_comm, None
    return TileProcessGroup(store, rank, size, timeout, comm=comm)


def init_process_group(timeout=None, **kw):
    """init_process_group("tile") from TileLink's own environment (tile launch, mpirun, srun,
    TLINK_*): the communicator comes from tlink_comm_init_env and torch gets a local store, so no
    MASTER_ADDR/RANK is needed. New groups (new_group) need init_process_group with a real store."""
    global _pending_comm
    if timeout is not None:
        os.environ.setdefault("TLINK_TIMEOUT", str(timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout))
    comm = link.Comm.from_env()
    _pending_comm = comm
    args = dict(backend=BACKEND, store=dist.HashStore(), rank=comm.rank, world_size=comm.size)
    if timeout is not None:
        args["timeout"] = timeout if isinstance(timeout, datetime.timedelta) else datetime.timedelta(seconds=timeout)
    args.update(kw)
    dist.init_process_group(**args)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])


_register()


# ---------------------------------------------------------------- DDP communication hooks
class comm_hook:
    """A DDP communication hook over backend "tile": the bucket is averaged with TileLink's
    compressed all-reduce ("sign1", "int4", "int8", "fp8"; error feedback keeps per-bucket
    residuals) or exactly (method None). ddp.register_comm_hook(None, comm_hook("sign1")).
    The state argument DDP passes may be a tile process group; None means the default group.
    chunk: elements per scale (0: TileLink's default, 1024). gather: the method of the
    all-reduce's second phase (the averaged blocks), by default method itself; "int8" keeps
    a second 1-bit compression from adding its error to the first.

    momentum=beta (the optimiser's SGD momentum, dampening 0): compress each rank's own
    momentum m = beta m + g instead of its gradient, and hand the optimiser M_t - beta M_{t-1}
    where M_t is the all-reduced compressed momentum, so that the optimiser's momentum buffer
    equals M_t. The error that compression leaves for later steps then reaches the parameters
    once, not amplified 1/(1 - beta) times by the optimiser's momentum (EF-SGD with momentum:
    docs/pytorch.md). Without compression the result is the same as momentum 0."""

    def __init__(self, method="sign1", error_feedback=True, process_group=None, chunk=0, momentum=0.0, gather=None):
        if method is not None and link._compress_from_name(method.encode()) < 0:
            raise ValueError("comm_hook: unknown method %r (sign1, int4, int8, fp8 or None)" % (method,))
        if gather is not None and (method is None or link._compress_from_name(gather.encode()) < 0):
            raise ValueError("comm_hook: gather=%r needs a compression method and one of none, sign1, int4, int8, fp8" % (gather,))
        try:
            momentum = float(momentum)
        except (TypeError, ValueError):
            raise TypeError("comm_hook: momentum must be a number in [0, 1) (got %r)" % (momentum,)) from None
        if not 0.0 <= momentum < 1.0:
            raise ValueError("comm_hook: momentum must be in [0, 1) (got %r)" % (momentum,))
        if int(chunk) < 0:
            raise ValueError("comm_hook: chunk must be >= 0 (got %r)" % (chunk,))
        self.method, self.error_feedback, self.group, self.chunk = method, bool(error_feedback), process_group, int(chunk)
        self.momentum, self.gather = momentum, gather
        self._state = {}
        self._mom = {}  # id(parameter) -> [local momentum, last all-reduced momentum] (flat views)
        self.__name__ = self.__qualname__ = "tile_comm_hook_%s" % method

    def _pg(self, state):
        pg = state if isinstance(state, dist.ProcessGroup) else (self.group or dist.distributed_c10d._get_default_group())
        if not isinstance(pg, TileProcessGroup):
            raise TypeError("comm_hook: the process group must be backend 'tile' (got %s)" % type(pg).__name__)
        return pg

    def _momentum_in(self, bucket, buf):
        """m = beta m + g per parameter (state kept per parameter, so DDP's bucket rebuild keeps
        it); returns the bucket's new momentum (flat) and the previous all-reduced one."""
        params = bucket.parameters()
        if sum(p.numel() for p in params) != buf.numel():
            raise RuntimeError("comm_hook: bucket %d holds %d elements, its parameters %d" %
                               (bucket.index(), buf.numel(), sum(p.numel() for p in params)))
        zero = None
        ms, Ms = [], []
        for p in params:
            st = self._mom.get(id(p))
            if st is None or st[0].numel() != p.numel():
                zero = zero if zero is not None and zero.numel() >= p.numel() else torch.zeros(max(p.numel(), 1))
                st = [zero[:p.numel()], zero[:p.numel()]]
            ms.append(st[0])
            Ms.append(st[1])
        m = torch.cat(ms) if len(ms) > 1 else ms[0].clone()
        m.mul_(self.momentum).add_(buf)
        prev = torch.cat(Ms) if len(Ms) > 1 else Ms[0]
        return params, m, prev

    def _momentum_out(self, params, m, M, prev):
        """Keep m and M (views per parameter); return M - beta prev for the optimiser."""
        o = 0
        for p in params:
            k = p.numel()
            self._mom[id(p)] = [m[o:o + k], M[o:o + k]]
            o += k
        return M - self.momentum * prev

    def __call__(self, state, bucket):
        pg = self._pg(state)
        grad = bucket.buffer()
        if self.method is None:
            fut = dist.all_reduce(grad, op=dist.ReduceOp.AVG, group=pg, async_op=True).get_future()
            return fut.then(lambda f: f.value()[0])
        buf = grad if (grad.dtype == torch.float32 and grad.device.type == "cpu" and grad.is_contiguous()) else grad.detach().to("cpu", torch.float32).contiguous()
        # the bucket's layout: DDP rebuilds its buckets after the first step (same index and
        # size, other parameter order), and residuals belong to elements, not offsets
        key = (bucket.index(), buf.numel(), tuple(id(p) for p in bucket.parameters()))
        comp = self._state.get(key)
        if comp is None:
            comp = self._state[key] = link.Compressor(pg.comm, self.method, buf.numel(), chunk=self.chunk,
                                                          error_feedback=self.error_feedback, gather=self.gather)
        if self.momentum:
            params, m, prev = self._momentum_in(bucket, buf)
            M = m.clone()
            work = pg._compressed(comp, M, "compressed_allreduce_" + self.method)

            def mom_back(f):
                grad.copy_(self._momentum_out(params, m, f.value(), prev))
                return grad
            return work.get_future().then(mom_back)
        work = pg._compressed(comp, buf, "compressed_allreduce_" + self.method)
        if buf is grad:
            return work.get_future()

        def back(f):
            grad.copy_(f.value())
            return grad
        return work.get_future().then(back)
