"""tile.link: Python bindings of libtilelink (include/tlink.h) through ctypes.

    from tile import link
    comm = link.Comm.from_env()           # torchrun / mpirun / srun / tile launch conventions
    link.allreduce(comm, x)               # in place on a NumPy array or a torch CPU tensor

Collectives take contiguous NumPy arrays and torch CPU tensors (zero copy: their memory is
passed to the library). Errors raise LinkError with the library's message. libtilelink
writes each collective call (rank, count, dtype, bytes, algorithm, status) into libtile's
Chrome trace when tile tracing is on (tile.trace / TILE_TRACE).

Expert parallelism (tlink_moe_dispatch/combine):

    h = link.moe_dispatch(comm, x, topk_ids, topk_weights, num_experts=256)
    for e in range(h.num_local_experts):           # rows h.expert_offsets[e] .. [e + 1] of h.x
        out[h.expert_offsets[e]:h.expert_offsets[e + 1]] = expert(h.first_expert + e, ...)
    y = h.combine(out)

Hang diagnosis: comm.status() (one dict per rank), comm.status_report(), link.job_status(addr).
Authentication: the library reads TLINK_SECRET or TLINK_SECRET_FILE when a communicator is
created; set_secret() sets the first for this process, generate_secret() makes one."""
import ctypes
import os
import secrets as _secrets

from . import _lib as TL
from ._core import TileError, _torch

_dir = os.path.dirname(TL.library_path)
_lib = None
for _p in (os.environ.get("TLINK_LIBRARY"), os.path.join(_dir, "libtilelink.so")):
    if _p and os.path.exists(_p):
        _lib = ctypes.CDLL(_p)
        break
if _lib is None:
    raise ImportError("tile.link: cannot find libtilelink.so next to %s (or set TLINK_LIBRARY)" % TL.library_path)

P, c_int, c_size_t, c_double = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_double


def _fn(name, restype, *args, optional=False):
    try:
        f = getattr(_lib, name)
    except AttributeError:
        if optional:
            return None
        raise
    f.restype, f.argtypes = restype, list(args)
    return f


version = _fn("tlink_version", ctypes.c_char_p)().decode()
_last_error = _fn("tlink_last_error", ctypes.c_char_p, P)
_error_string = _fn("tlink_error_string", ctypes.c_char_p, c_int)
_init_env = _fn("tlink_comm_init_env", c_int, ctypes.POINTER(P))
_init = _fn("tlink_comm_init", c_int, ctypes.POINTER(P), c_int, c_int, ctypes.c_char_p)
_destroy = _fn("tlink_comm_destroy", c_int, P)
_rank = _fn("tlink_comm_rank", c_int, P)
_size = _fn("tlink_comm_size", c_int, P)
_local_rank = _fn("tlink_comm_local_rank", c_int, P)
_local_size = _fn("tlink_comm_local_size", c_int, P)
_host_count = _fn("tlink_comm_host_count", c_int, P)
_transport = _fn("tlink_comm_transport", ctypes.c_char_p, P, c_int)
_set_timeout = _fn("tlink_comm_set_timeout", c_int, P, c_double)
_allreduce = _fn("tlink_allreduce", c_int, P, P, P, c_size_t, c_int, c_int)
_reduce = _fn("tlink_reduce", c_int, P, P, P, c_size_t, c_int, c_int, c_int)
_broadcast = _fn("tlink_broadcast", c_int, P, P, c_size_t, c_int, c_int)
_allgather = _fn("tlink_allgather", c_int, P, P, P, c_size_t, c_int)
_reduce_scatter = _fn("tlink_reduce_scatter", c_int, P, P, P, c_size_t, c_int, c_int)
_alltoall = _fn("tlink_alltoall", c_int, P, P, P, c_size_t, c_int)
_barrier = _fn("tlink_barrier", c_int, P)
_send = _fn("tlink_send", c_int, P, P, c_size_t, c_int, c_int)
_recv = _fn("tlink_recv", c_int, P, P, c_size_t, c_int, c_int, ctypes.POINTER(c_size_t))
_last_algo = _fn("tlink_last_algo", ctypes.c_char_p, P)
_revoke = _fn("tlink_comm_revoke", c_int, P)
_is_revoked = _fn("tlink_comm_is_revoked", c_int, P)
_failed_ranks = _fn("tlink_comm_failed_ranks", c_int, P, ctypes.POINTER(c_int), c_int)
_shrink = _fn("tlink_comm_shrink", c_int, P, ctypes.POINTER(P))
_compress_from_name = _fn("tlink_compress_from_name", c_int, ctypes.c_char_p)
_compress_create = _fn("tlink_compress_create", c_int, P, c_int, c_size_t, c_size_t, c_int, ctypes.POINTER(P))
_compress_destroy = _fn("tlink_compress_destroy", None, P)
_compress_set_gather = _fn("tlink_compress_set_gather", c_int, P, c_int)
_compressed_allreduce = _fn("tlink_compressed_allreduce", c_int, P, P, P, c_size_t, c_int)


class _MoeConfig(ctypes.Structure):
    _fields_ = [("num_experts", c_int), ("top_k", c_int), ("hidden", c_size_t), ("dtype", c_int), ("algo", c_int),
                ("reserved", c_int * 8)]


class _MoeRecv(ctypes.Structure):
    _fields_ = [("num_local_experts", c_int), ("first_expert", c_int), ("nrows", c_size_t),
                ("expert_offsets", ctypes.POINTER(c_size_t)), ("expert_counts", ctypes.POINTER(c_size_t)),
                ("x", P), ("scales", ctypes.POINTER(ctypes.c_float)), ("weights", ctypes.POINTER(ctypes.c_float)),
                ("src_rank", ctypes.POINTER(ctypes.c_int32)), ("src_token", ctypes.POINTER(ctypes.c_int32)),
                ("nunique", c_size_t)]


class _RankStatus(ctypes.Structure):
    _fields_ = [("rank", c_int), ("answered", c_int), ("pid", c_int), ("host", ctypes.c_char * 64), ("in_call", c_int),
                ("call", ctypes.c_char * 32), ("seq", ctypes.c_uint64), ("algo", ctypes.c_char * 32), ("step", c_int),
                ("peer", c_int), ("sending", c_int), ("bytes_done", ctypes.c_uint64), ("bytes_total", ctypes.c_uint64),
                ("wait_s", c_double), ("call_s", c_double)]


_moe_dispatch = _fn("tlink_moe_dispatch", c_int, P, ctypes.POINTER(_MoeConfig), c_size_t, P, P, P, P, ctypes.POINTER(P),
                    optional=True)
_moe_get_recv = _fn("tlink_moe_get_recv", c_int, P, ctypes.POINTER(_MoeRecv), optional=True)
_moe_combine = _fn("tlink_moe_combine", c_int, P, P, c_int, P, optional=True)
_moe_algo = _fn("tlink_moe_algo", ctypes.c_char_p, P, optional=True)
_moe_free = _fn("tlink_moe_free", None, P, optional=True)
_comm_status = _fn("tlink_comm_status", c_int, P, c_double, ctypes.POINTER(_RankStatus), c_int, ctypes.POINTER(c_int),
                   optional=True)
_job_status = _fn("tlink_job_status", c_int, ctypes.c_char_p, ctypes.c_char_p, c_double, ctypes.POINTER(_RankStatus), c_int,
                  ctypes.POINTER(c_int), ctypes.c_char_p, c_size_t, optional=True)
_status_report = _fn("tlink_status_report", c_size_t, ctypes.POINTER(_RankStatus), c_int, ctypes.c_char_p, c_size_t,
                     optional=True)

_DT = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int32": 4, "int64": 5, "uint8": 6,
       "float8_e4m3fn": 7, "float8_e5m2": 8}
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "avg": 4}


class LinkError(TileError):
    pass


def _check(st, comm=None, what="tilelink"):
    if st != 0:
        msg = _last_error(comm).decode() if _last_error(comm) else ""
        raise LinkError("%s: %s%s" % (what, _error_string(st).decode(), (": " + msg) if msg else ""), st)


def _buf(x):
    """(pointer, element count, tlink dtype) of a contiguous NumPy array or torch CPU tensor."""
    t, _ = _torch()
    if t is not None and isinstance(x, t.Tensor):
        if x.device.type != "cpu":
            raise LinkError("tile.link collectives take CPU tensors (this one is on %s)" % x.device)
        if not x.is_contiguous():
            raise LinkError("tile.link: the tensor must be contiguous")
        name = str(x.dtype).replace("torch.", "")
        if name not in _DT:
            raise LinkError("tile.link: dtype %s is not one TileLink reduces" % x.dtype)
        return x.data_ptr(), x.numel(), _DT[name]
    ai = getattr(x, "__array_interface__", None)
    if ai is None:
        raise LinkError("tile.link: expected a NumPy array or a torch CPU tensor, got %s" % type(x).__name__)
    if not x.flags.c_contiguous:
        raise LinkError("tile.link: the array must be C-contiguous")
    if x.dtype.name not in _DT:
        raise LinkError("tile.link: dtype %s is not one TileLink reduces" % x.dtype)
    return ai["data"][0], x.size, _DT[x.dtype.name]


class Comm:
    """A communicator. Comm.from_env() reads the launcher's variables (RANK/WORLD_SIZE/
    MASTER_ADDR, OMPI_COMM_WORLD_*, PMI_*, SLURM_*, tile launch); Comm(rank, size, addr)
    joins the store at addr ("host:port")."""

    def __init__(self, rank=None, size=None, store=None, _h=None):
        if _h is None:
            h = P()
            _check(_init(ctypes.byref(h), int(rank), int(size), store.encode() if store else None), None, "tlink_comm_init")
            _h = h
        self._h = _h

    @classmethod
    def from_env(cls):
        h = P()
        _check(_init_env(ctypes.byref(h)), None, "tlink_comm_init_env")
        return cls(_h=h)

    rank = property(lambda self: _rank(self._h))
    size = property(lambda self: _size(self._h))
    local_rank = property(lambda self: _local_rank(self._h))
    local_size = property(lambda self: _local_size(self._h))
    host_count = property(lambda self: _host_count(self._h))

    def transport(self, peer):
        s = _transport(self._h, int(peer))
        return s.decode() if s else None

    def set_timeout(self, seconds):
        _check(_set_timeout(self._h, float(seconds)), self._h, "set_timeout")

    def last_algo(self):
        s = _last_algo(self._h)
        return s.decode() if s else None

    # fault tolerance
    def revoke(self):
        _check(_revoke(self._h), self._h, "revoke")

    @property
    def revoked(self):
        return bool(_is_revoked(self._h))

    def failed_ranks(self):
        arr = (c_int * 1024)()
        n = _failed_ranks(self._h, arr, 1024)
        return list(arr[:max(0, min(n, 1024))])

    # hang diagnosis
    def status(self, timeout=5.0):
        """What every rank of this communicator is doing (thread-safe: may be called while
        another thread is stuck in a call): one dict per rank, see tlink_rank_status."""
        arr, n = _status_call(lambda a, m, pn: _comm_status(self._h, float(timeout), a, m, pn), self._h, "comm_status")
        return _status_dicts(arr, n)

    def status_report(self, timeout=5.0):
        """The same as a report: a line per rank and the diagnosis (`tile link-status`)."""
        arr, n = _status_call(lambda a, m, pn: _comm_status(self._h, float(timeout), a, m, pn), self._h, "comm_status")
        return _report(arr, n)

    def shrink(self):
        h = P()
        _check(_shrink(self._h, ctypes.byref(h)), self._h, "shrink")
        return Comm(_h=h)

    def close(self):
        if self._h:
            _destroy(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


def allreduce(comm, x, op="sum", out=None):
    """Reduce x over all ranks into out (default: in place)."""
    p, n, dt = _buf(x)
    q = _buf(out)[0] if out is not None else p
    _check(_allreduce(comm._h, p, q, n, dt, OPS[op]), comm._h, "allreduce")
    return out if out is not None else x


def reduce(comm, x, out=None, op="sum", root=0):
    p, n, dt = _buf(x)
    q = _buf(out)[0] if out is not None else None
    _check(_reduce(comm._h, p, q, n, dt, OPS[op], int(root)), comm._h, "reduce")
    return out


def broadcast(comm, x, root=0):
    p, n, dt = _buf(x)
    _check(_broadcast(comm._h, p, n, dt, int(root)), comm._h, "broadcast")
    return x


def allgather(comm, x, out):
    p, n, dt = _buf(x)
    q, m, _ = _buf(out)
    if m != n * comm.size:
        raise LinkError("allgather: out holds %d elements, needs %d (size x count)" % (m, n * comm.size))
    _check(_allgather(comm._h, p, q, n, dt), comm._h, "allgather")
    return out


def reduce_scatter(comm, x, out, op="sum"):
    p, n, dt = _buf(x)
    q, m, _ = _buf(out)
    if n != m * comm.size:
        raise LinkError("reduce_scatter: x holds %d elements, needs %d (size x out)" % (n, m * comm.size))
    _check(_reduce_scatter(comm._h, p, q, m, dt, OPS[op]), comm._h, "reduce_scatter")
    return out


def alltoall(comm, x, out):
    p, n, dt = _buf(x)
    q, m, _ = _buf(out)
    if n != m or n % comm.size:
        raise LinkError("alltoall: x and out must hold the same multiple of size elements")
    _check(_alltoall(comm._h, p, q, n // comm.size, dt), comm._h, "alltoall")
    return out


def barrier(comm):
    _check(_barrier(comm._h), comm._h, "barrier")


def send(comm, x, peer, tag=0):
    p, n, dt = _buf(x)
    _check(_send(comm._h, p, n, dt, int(peer)), comm._h, "send")


def recv(comm, x, peer):
    p, n, dt = _buf(x)
    got = c_size_t()
    _check(_recv(comm._h, p, n, dt, int(peer), ctypes.byref(got)), comm._h, "recv")
    return got.value


class Compressor:
    """Compressed all-reduce of an f32 gradient buffer with error feedback
    (docs/tilelink-compression.md): Compressor(comm, "sign1", count). gather: the method of
    the all-gathered reduced blocks (phase 2), by default method itself."""

    def __init__(self, comm, method, count, chunk=0, error_feedback=True, gather=None):
        m = _compress_from_name(method.encode())
        if m < 0:
            raise LinkError("unknown compression method '%s'" % method)
        m2 = m if gather is None else _compress_from_name(gather.encode())
        if m2 < 0:
            raise LinkError("unknown compression method '%s' (gather)" % gather)
        h = P()
        _check(_compress_create(comm._h, m, int(count), int(chunk), 1 if error_feedback else 0, ctypes.byref(h)), comm._h, "compress_create")
        self._h, self.comm, self.count = h, comm, int(count)
        if m2 != m:
            _check(_compress_set_gather(h, m2), comm._h, "compress_set_gather")

    def allreduce(self, x, op="avg", out=None):
        p, n, dt = _buf(x)
        if dt != 0 or n != self.count:
            raise LinkError("compressed allreduce takes float32 buffers of %d elements" % self.count)
        q = _buf(out)[0] if out is not None else p
        _check(_compressed_allreduce(self._h, p, q, n, OPS[op]), self.comm._h,
               "compressed_allreduce")
        return out if out is not None else x

    def __del__(self):
        if getattr(self, "_h", None):
            _compress_destroy(self._h)
            self._h = None


# ---------- authentication ----------
def set_secret(secret):
    """Sets this process's job secret (TLINK_SECRET) for the communicators and store
    connections it creates from now on; every rank of a job needs the same one. None unsets it."""
    if secret is None:
        os.environ.pop("TLINK_SECRET", None)
        return
    if isinstance(secret, bytes):
        secret = secret.decode()
    if not isinstance(secret, str) or not secret:
        raise LinkError("set_secret: secret must be a non-empty string")
    if "\0" in secret:
        raise LinkError("set_secret: secret contains a NUL character")
    os.environ["TLINK_SECRET"] = secret


def generate_secret(nbytes=32):
    """A random secret (hex of nbytes random bytes, as `tile launch` makes): hand it to every
    rank, e.g. through TLINK_SECRET in their environment or set_secret()."""
    return _secrets.token_hex(int(nbytes))


# ---------- hang diagnosis ----------
_MAX_STATUS = 4096


def _status_call(call, comm_h, what):
    if _comm_status is None:
        raise LinkError("%s: this libtilelink has no status API" % what)
    arr = (_RankStatus * _MAX_STATUS)()
    n = c_int(0)
    _check(call(arr, _MAX_STATUS, ctypes.byref(n)), comm_h, what)
    return arr, min(n.value, _MAX_STATUS)


def _status_dicts(arr, n):
    out = []
    for i in range(n):
        r = arr[i]
        out.append({"rank": r.rank, "answered": bool(r.answered), "pid": r.pid, "host": r.host.decode(errors="replace"),
                    "in_call": bool(r.in_call), "call": r.call.decode(errors="replace"), "seq": r.seq,
                    "algo": r.algo.decode(errors="replace"), "step": r.step, "peer": r.peer, "sending": bool(r.sending),
                    "bytes_done": r.bytes_done, "bytes_total": r.bytes_total, "wait_s": r.wait_s, "call_s": r.call_s})
    return out


def _report(arr, n):
    need = _status_report(arr, n, None, 0)
    buf = ctypes.create_string_buffer(need + 1)
    _status_report(arr, n, buf, need + 1)
    return buf.value.decode(errors="replace")


def job_status(store, prefix=None, timeout=5.0, report=False):
    """Asks a running job from outside it: store is its store's "host:port", prefix a key
    namespace or a communicator's prefix ("tlink/3"; None: the newest communicator of the
    default namespace). Returns (prefix asked, list of per-rank dicts), or the report string
    with report=True. Authenticates with TLINK_SECRET like the ranks."""
    pbuf = ctypes.create_string_buffer(256)
    arr, n = _status_call(lambda a, m, pn: _job_status(store.encode(), prefix.encode() if prefix else None, float(timeout), a, m,
                                                       pn, pbuf, 256), None, "job_status")
    if report:
        return _report(arr, n)
    return pbuf.value.decode(), _status_dicts(arr, n)


# ---------- expert parallelism ----------
_MOE_DT = {"bfloat16": 3, "float8_e4m3fn": 7}
_ALGO = {"auto": 0, "flat": 1, "hierarchical": 2}


def _np():
    import numpy
    return numpy


def _as_c(x, np_dtype, name, shape=None):
    """x (NumPy array or torch CPU tensor) as a C-contiguous NumPy array of np_dtype (a copy
    only where the dtype or layout differ)"""
    np = _np()
    t, _ = _torch()
    if t is not None and isinstance(x, t.Tensor):
        if x.device.type != "cpu":
            raise LinkError("moe: %s must be on the CPU (it is on %s)" % (name, x.device))
        x = x.detach().contiguous().numpy()
    a = np.ascontiguousarray(x, dtype=np_dtype)
    if shape is not None and a.shape != shape:
        raise LinkError("moe: %s has shape %s, expected %s" % (name, tuple(a.shape), shape))
    return a


def _rows_in(x, dtype, name):
    """(NumPy array of the raw rows, tlink dtype, element size, was torch) of a token matrix:
    torch bfloat16 / float8_e4m3fn tensors, or NumPy uint16 (bf16 bits) / uint8 (fp8 codes)
    arrays with dtype= naming the format"""
    np = _np()
    t, _ = _torch()
    if t is not None and isinstance(x, t.Tensor):
        if x.device.type != "cpu":
            raise LinkError("moe: %s must be on the CPU (it is on %s)" % (name, x.device))
        name_dt = str(x.dtype).replace("torch.", "")
        if name_dt not in _MOE_DT:
            raise LinkError("moe: %s is %s: bfloat16 or float8_e4m3fn" % (name, x.dtype))
        if x.dim() != 2:
            raise LinkError("moe: %s must be [tokens, hidden] (it has %d dimensions)" % (name, x.dim()))
        raw = x.contiguous().view(t.int16 if name_dt == "bfloat16" else t.uint8).numpy()
        return raw, _MOE_DT[name_dt], raw.itemsize, True
    if getattr(x, "__array_interface__", None) is None:
        raise LinkError("moe: %s must be a NumPy array or a torch CPU tensor, got %s" % (name, type(x).__name__))
    if x.ndim != 2:
        raise LinkError("moe: %s must be [tokens, hidden] (it has %d dimensions)" % (name, x.ndim))
    if dtype is None:
        dtype = {"uint16": "bfloat16", "int16": "bfloat16", "uint8": "float8_e4m3fn"}.get(x.dtype.name)
    if dtype not in _MOE_DT:
        raise LinkError("moe: %s is a NumPy %s array: pass dtype='bfloat16' (uint16 bits) or 'float8_e4m3fn' (uint8 codes)"
                        % (name, x.dtype))
    want = np.uint8 if dtype == "float8_e4m3fn" else np.uint16
    if x.dtype.itemsize != np.dtype(want).itemsize:
        raise LinkError("moe: %s holds %s elements; %s needs %d-byte elements" % (name, x.dtype, dtype, np.dtype(want).itemsize))
    return np.ascontiguousarray(x), _MOE_DT[dtype], x.dtype.itemsize, False


def _view(handle, ptr, count, np_dtype):
    """a NumPy view of count elements at ptr, inside the handle's memory; the view keeps the
    handle (and so the memory) alive"""
    np = _np()
    if not count or not ptr:
        return np.zeros(0, np_dtype)
    buf = (ctypes.c_char * (count * np.dtype(np_dtype).itemsize)).from_address(ptr)
    buf.owner = handle
    return np.frombuffer(buf, dtype=np_dtype, count=count)


class MoeHandle:
    """The result of moe_dispatch: the received rows grouped per local expert and what
    combine needs to route the outputs back. Arrays (x, weights, src_rank, src_token,
    scales) are views of the library's memory: they keep it alive, and free() (or leaving a
    with block) releases it at once, after which they must not be used."""

    def __init__(self, comm, h, hidden, ntokens, torch_out):
        np = _np()
        self.comm, self._h, self.hidden, self._ntok, self._torch = comm, h, int(hidden), int(ntokens), torch_out
        r = _MoeRecv()
        _check(_moe_get_recv(h, ctypes.byref(r)), comm._h, "moe_get_recv")
        self.num_local_experts, self.first_expert = r.num_local_experts, r.first_expert
        self.nrows, self.nunique = r.nrows, r.nunique
        self.algo = _moe_algo(h).decode()
        L, n = self.num_local_experts, self.nrows
        self.expert_offsets = np.ctypeslib.as_array(r.expert_offsets, shape=(L + 1,)).astype(np.int64) if L else np.zeros(1, np.int64)
        self.expert_counts = np.ctypeslib.as_array(r.expert_counts, shape=(L,)).astype(np.int64) if L else np.zeros(0, np.int64)
        self._fp8 = bool(r.scales)
        addr = lambda p: ctypes.cast(p, ctypes.c_void_p).value
        self.weights = _view(self, addr(r.weights), n, np.float32)
        self.src_rank = _view(self, addr(r.src_rank), n, np.int32)
        self.src_token = _view(self, addr(r.src_token), n, np.int32)
        self.scales = _view(self, addr(r.scales), n, np.float32) if self._fp8 else None
        raw = _view(self, r.x, n * self.hidden, np.uint8 if self._fp8 else np.int16).reshape(n, self.hidden)
        t, _ = _torch()
        if torch_out and t is not None:
            self.x = t.from_numpy(raw).view(t.float8_e4m3fn if self._fp8 else t.bfloat16)
        else:
            self.x = raw.view(np.uint8 if self._fp8 else np.uint16)

    def combine(self, expert_out, out=None):
        """Sends the experts' outputs ([nrows, hidden], in the row order of x: bf16 or f32;
        NumPy: uint16 bf16 bits or float32) back and returns y [tokens, hidden] of the same
        dtype: the routing-weighted sum per token (collective: every rank calls it)."""
        if not self._h:
            raise LinkError("moe combine: the handle was freed")
        np = _np()
        t, _ = _torch()
        shape = (self.nrows, self.hidden)
        if t is not None and isinstance(expert_out, t.Tensor):
            if expert_out.device.type != "cpu":
                raise LinkError("moe combine: expert_out must be on the CPU (it is on %s)" % expert_out.device)
            if expert_out.dtype not in (t.bfloat16, t.float32):
                raise LinkError("moe combine: expert_out is %s: bfloat16 or float32" % expert_out.dtype)
            if tuple(expert_out.shape) != shape:
                raise LinkError("moe combine: expert_out has shape %s, expected %s" % (tuple(expert_out.shape), shape))
            eo = expert_out.contiguous()
            dt = 3 if eo.dtype == t.bfloat16 else 0
            y = out if out is not None else t.empty((self._ntok, self.hidden), dtype=eo.dtype)
            if y.dtype != eo.dtype or tuple(y.shape) != (self._ntok, self.hidden) or not y.is_contiguous():
                raise LinkError("moe combine: out must be a contiguous %s tensor of shape %s" % (eo.dtype, (self._ntok, self.hidden)))
            eptr, yptr = eo.data_ptr(), y.data_ptr()
        else:
            a = np.asarray(expert_out)
            if a.dtype == np.float32:
                dt = 0
            elif a.dtype in (np.uint16, np.int16):
                dt = 3
            else:
                raise LinkError("moe combine: expert_out is a NumPy %s array: uint16 (bf16 bits) or float32" % a.dtype)
            if a.shape != shape:
                raise LinkError("moe combine: expert_out has shape %s, expected %s" % (a.shape, shape))
            eo = np.ascontiguousarray(a)
            y = out if out is not None else np.empty((self._ntok, self.hidden), dtype=eo.dtype)
            if y.dtype != eo.dtype or y.shape != (self._ntok, self.hidden) or not y.flags.c_contiguous:
                raise LinkError("moe combine: out must be a C-contiguous %s array of shape %s" % (eo.dtype, (self._ntok, self.hidden)))
            eptr, yptr = eo.ctypes.data, y.ctypes.data
        _check(_moe_combine(self._h, eptr, dt, yptr), self.comm._h, "moe_combine")
        return y

    def free(self):
        if getattr(self, "_h", None):
            _moe_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.free()

    def __del__(self):
        try:
            self.free()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


def moe_dispatch(comm, x, topk_ids, topk_weights, num_experts, scales=None, dtype=None, algo="auto"):
    """Sends every token's row of x [tokens, hidden] to the ranks owning its top-k experts
    (rank r owns experts [r E/W, (r+1) E/W)) and returns a MoeHandle with the received rows
    grouped per local expert. x: a torch bfloat16 / float8_e4m3fn CPU tensor, or a NumPy
    uint16 (bf16 bits) / uint8 (fp8 e4m3 codes; dtype= may say which) array; fp8 needs scales
    [tokens] f32. topk_ids [tokens, k] (int, -1: slot unused), topk_weights [tokens, k] (f32).
    algo: auto, flat or hierarchical. Collective: every rank calls it."""
    if _moe_dispatch is None:
        raise LinkError("moe_dispatch: this libtilelink has no MoE API")
    np = _np()
    raw, dt, _, was_torch = _rows_in(x, dtype, "x")
    T, H = raw.shape
    ids = _as_c(topk_ids, np.int32, "topk_ids")
    if ids.ndim != 2 or ids.shape[0] != T:
        raise LinkError("moe: topk_ids has shape %s, expected (%d, top_k)" % (tuple(ids.shape), T))
    K = ids.shape[1]
    w = _as_c(topk_weights, np.float32, "topk_weights", (T, K))
    sc = None
    if dt == 7:
        if scales is None:
            raise LinkError("moe: fp8 tokens need scales [tokens] (float32)")
        sc = _as_c(scales, np.float32, "scales", (T,))
    elif scales is not None:
        raise LinkError("moe: scales are for fp8 tokens only")
    if algo not in _ALGO:
        raise LinkError("moe: algo '%s': one of auto, flat, hierarchical" % algo)
    cfg = _MoeConfig(num_experts=int(num_experts), top_k=int(K), hidden=int(H), dtype=dt, algo=_ALGO[algo])
    h = P()
    _check(_moe_dispatch(comm._h, ctypes.byref(cfg), T, raw.ctypes.data, sc.ctypes.data if sc is not None else None,
                         ids.ctypes.data, w.ctypes.data, ctypes.byref(h)), comm._h, "moe_dispatch")
    return MoeHandle(comm, h, H, T, was_torch)
