#!/usr/bin/env bash
# wheel_test.sh PYTHON SRC_DIR BUILD_DIR — builds the `tile` wheel from SRC_DIR with
# `pip wheel` (reusing BUILD_DIR's CMake build, so only tile._fast is compiled), installs it
# into a temporary folder and checks the installed package: once as built here, where
# tile._fast must be in the wheel, imported from the installed package, be what the package
# uses (tile._lib.fast) and launch a call; once with a C compiler that fails (CC=false), where
# the build must note why, tag the wheel py3-none and the installed package run the
# pure-Python path. Exit 77 (skip) where pip, setuptools or wheel are missing.
set -euo pipefail
py=$1 src=$2 build=$3
if ! "$py" -c "import setuptools, wheel, pip" 2>/dev/null; then
  echo "SKIP: pip, setuptools or wheel is not installed for $py"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TILE_WHEEL_BUILD_DIR=$build PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_ROOT_USER_ACTION=ignore
unset TILE_LIBRARY TLINK_LIBRARY PYTHONPATH TILE_PY_FAST

# wheel NAME [ENV...]: build into $work/NAME, install into $work/NAME/site
wheel() {
  local name=$1; shift
  mkdir -p "$work/$name"
  if ! (cd "$src" && env "$@" "$py" -m pip wheel -v --no-deps --no-build-isolation --no-index -w "$work/$name" .) \
        >"$work/$name.log" 2>&1; then
    tail -40 "$work/$name.log"; echo "FAIL: pip wheel ($name)"; exit 1
  fi
  "$py" -m pip install -q --no-deps --no-index --target "$work/$name/site" "$work/$name"/*.whl
}

check() {  # check NAME EXPECT_FAST(0|1)
  local site=$1/site
  PYTHONPATH="$site" TILE_CACHE_DIR="$work/cache" "$py" - "$site" "$2" <<'PY'
import os, sys
site, want_fast = os.path.realpath(sys.argv[1]), sys.argv[2] == "1"
import numpy as np
import tile
from tile import _lib, kernel
def inside(p):
    return os.path.realpath(p).startswith(site + os.sep)
assert inside(tile.__file__), tile.__file__
assert inside(_lib.library_path), "libtile from %s, not the wheel" % _lib.library_path
if want_fast:
    import tile._fast
    assert inside(tile._fast.__file__), "tile._fast from %s" % tile._fast.__file__
    assert _lib.fast is tile._fast, "the package does not use the installed tile._fast"
else:
    assert _lib.fast is None, "tile._fast %s in a wheel built without it" % _lib.fast
    try:
        import tile._fast
        raise AssertionError("tile._fast imports from %s" % tile._fast.__file__)
    except ImportError:
        pass
k = tile.compile("""
@tile_op
def axpb(A: Tensor[(M, N)], B: Tensor[(M, N)]) -> Tensor[(M, N)]:
    C = allocate((M, N), dtype=A.dtype)
    for i in range(M):
        for j in range(N):
            C[i, j] = A[i, j] * 2.0 + B[i, j]
    return C
""", target="cpu")
a, b = np.arange(12, dtype=np.float32).reshape(3, 4), np.ones((3, 4), np.float32)
for _ in range(3):  # the second and third calls take the launcher of the seen signature
    c = k(a, b)
    assert np.array_equal(c, a * 2 + b), c
launcher = type(k._last_fast).__name__
assert (launcher == "Launcher") == want_fast, "launcher %s" % launcher
print("wheel ok: tile._fast %s, launcher %s" % ("in use" if want_fast else "absent", launcher))
PY
  test -x "$site/bin/tile"
  PYTHONPATH="$site" "$site/bin/tile" --version >/dev/null
}

wheel fast
ls "$work/fast"/*.whl | grep -q -- "-cp3[0-9]*-cp3[0-9]*[a-z]*-linux" || { ls "$work/fast"; echo "FAIL: the wheel with tile._fast is not tagged for this interpreter"; exit 1; }
check "$work/fast" 1

wheel pure CC=false
grep -q "tile: note: building the wheel without tile._fast" "$work/pure.log" || { tail -20 "$work/pure.log"; echo "FAIL: no note on the missing tile._fast"; exit 1; }
ls "$work/pure"/*.whl | grep -q -- "-py3-none-linux" || { ls "$work/pure"; echo "FAIL: the wheel without tile._fast is not tagged py3-none"; exit 1; }
check "$work/pure" 0
echo "wheel test: ok"
