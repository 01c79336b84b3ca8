"""tile.language: the names of TileLang's `T.` surface, so that a file written with
``import tilelang.language as T`` (or ``import tile.language as T``) loads in Python.

Tile compiles such files itself (tile.compile / @tile.jit read the source text); nothing
here computes anything. Decorators return the function unchanged, and every other name is a
placeholder that accepts any arguments, so module-level annotations like
``T.Tensor((M, K), "float16")`` evaluate without error. Calling a @T.prim_func in Python
raises TileError with a pointer to tile.compile."""
import functools as _functools

from ._core import TileError as _TileError


class _Placeholder:
    """Stands for any T.* value at load time: callable, subscriptable, usable in arithmetic
    and as a context manager; it never computes anything."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "T.%s" % self._name

    def __call__(self, *a, **k):
        return _Placeholder("%s(...)" % self._name)

    def __getitem__(self, k):
        return _Placeholder("%s[...]" % self._name)

    def __getattr__(self, k):
        if k.startswith("__"):
            raise AttributeError(k)
        return _Placeholder("%s.%s" % (self._name, k))

    def __enter__(self):
        return _Placeholder(self._name + " as ...")

    def __exit__(self, *a):
        return False

    def __iter__(self):
        return iter((_Placeholder(self._name + "[0]"), _Placeholder(self._name + "[1]"), _Placeholder(self._name + "[2]")))

    def _op(self, *a):
        return _Placeholder(self._name)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _op
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = _op


def prim_func(fn=None, **kw):
    """@T.prim_func: marks a kernel; the body is compiled by Tile, never run by Python."""
    def wrap(f):
        @_functools.wraps(f)
        def refuse(*a, **k):
            raise _TileError("%s is a TileLang kernel: compile it with tile.compile or @tile.jit, then call the Kernel" % f.__name__)
        refuse.__tile_prim_func__ = f
        return refuse
    return wrap(fn) if fn is not None else wrap


macro = prim_func


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Placeholder(name)
