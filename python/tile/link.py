"""tile.link: Python bindings of libtilelink (include/tlink.h) through ctypes.

    from tile import link
    comm = link.Comm.from_env()           # torchrun / mpirun / srun / tile launch conventions
    link.allreduce(comm, x)               # in place on a NumPy array or a torch CPU tensor

Collectives take contiguous NumPy arrays and torch CPU tensors (zero copy: their memory is
passed to the library). Errors raise LinkError with the library's message. libtilelink
writes each collective call (rank, count, dtype, bytes, algorithm, status) into libtile's
Chrome trace when tile tracing is on (tile.trace / TILE_TRACE)."""
import ctypes
import os

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
_compressed_allreduce = _fn("tlink_compressed_allreduce", c_int, P, P, P, c_size_t, c_int)

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
    (docs/tilelink-compression.md): Compressor(comm, "sign1", count)."""

    def __init__(self, comm, method, count, chunk=0, error_feedback=True):
        m = _compress_from_name(method.encode())
        if m < 0:
            raise LinkError("unknown compression method '%s'" % method)
        h = P()
        _check(_compress_create(comm._h, m, int(count), int(chunk), 1 if error_feedback else 0, ctypes.byref(h)), comm._h, "compress_create")
        self._h, self.comm, self.count = h, comm, int(count)

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
