"""``import tile.tilelang_alias`` makes ``import tilelang`` and ``import tilelang.language as T``
resolve to Tile's shims when the real TileLang is not installed, so upstream example files
import unchanged: ``tilelang.jit`` is tile.jit, ``tilelang.compile`` tile.compile."""
import importlib.util
import sys
import types

from . import language as _language
from .kernel import compile as _compile, jit as _jit


def install(force=False):
    if not force and ("tilelang" in sys.modules or importlib.util.find_spec("tilelang") is not None):
        return False
    m = types.ModuleType("tilelang")
    m.__doc__ = "Tile's stand-in for TileLang (tile.tilelang_alias)"
    m.jit, m.compile, m.language = _jit, _compile, _language
    m.__path__ = []
    sys.modules["tilelang"] = m
    sys.modules["tilelang.language"] = _language
    return True


install()
