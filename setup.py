"""Builds the wheel of the `tile` Python package: CMake builds libtile.so, libtilelink.so
and the `tile` CLI from this source tree, and they are copied into tile/lib and tile/bin;
setuptools builds tile._fast (python/tile/_fast.c, the C form of Kernel's per-call path) for
the interpreter running the build.

tile._fast is optional: where it cannot be built (no Python headers, no working C compiler,
Python older than 3.9) the build prints a one-line note and the wheel carries the pure-Python
call path only, tagged py3-none-<platform> (any Python 3, this platform's binaries); with it
the wheel is tagged for this interpreter (cpXY-cpXY-<platform>).

TILE_WHEEL_BUILD_DIR names the CMake build folder (default build-python); one that is already
configured is reused as it is (only its targets are brought up to date) unless CMAKE_ARGS,
which adds configure options, is set. setuptools' own build files go in its setuptools/ folder."""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover
    try:
        from setuptools.command.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("TILE_WHEEL_BUILD_DIR") or os.path.join(ROOT, "build-python"))


def note(msg):
    sys.stderr.write("tile: note: %s\n" % msg)
    sys.stderr.flush()


class BuildWithCMake(build_py):
    def run(self):
        # a reused build folder: start the package's tree afresh so no file of an earlier
        # build (a removed module, an extension built elsewhere) reaches the wheel
        shutil.rmtree(os.path.join(self.build_lib, "tile"), ignore_errors=True)
        super().run()
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        extra = shlex.split(os.environ.get("CMAKE_ARGS", ""))
        if extra or not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", BUILD, "-DCMAKE_BUILD_TYPE=Release"] + gen + extra)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", BUILD, "--target", "tile", "tilelink", "tile_cli", "--parallel", jobs])
        pkg = os.path.join(self.build_lib, "tile")
        os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
        os.makedirs(os.path.join(pkg, "bin"), exist_ok=True)
        for name in ("libtile.so", "libtilelink.so"):
            shutil.copy2(os.path.join(BUILD, name), os.path.join(pkg, "lib", name))
        shutil.copy2(os.path.join(BUILD, "bin", "tile"), os.path.join(pkg, "bin", "tile"))


def fast_unavailable():
    """Why tile._fast cannot be built for this interpreter, or None."""
    if sys.implementation.name != "cpython":
        return "tile._fast is CPython's C API; this is %s" % sys.implementation.name
    if sys.version_info < (3, 9):
        return "tile._fast needs Python 3.9 or later; this is %d.%d" % sys.version_info[:2]
    inc = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(inc, "Python.h")):
        return "Python's development headers are missing (no Python.h in %s; install python3-dev)" % (inc or "?")
    return None


class OptionalFast(build_ext):
    """Builds tile._fast where it can; elsewhere notes why and leaves it out (the package then
    runs its pure-Python call path). `built` says which happened, for the wheel's tag."""

    built = False

    def finalize_options(self):
        super().finalize_options()
        self.force = True  # one small file: always compiled, so no output of another setup is reused

    def _drop(self, why):
        for ext in self.extensions:  # an output of an earlier build must not reach the wheel
            p = self.get_ext_fullpath(ext.name)
            if os.path.exists(p):
                os.remove(p)
        note("building the wheel without tile._fast (Kernel calls run the pure-Python path): " + why)
        self.built = False

    def run(self):
        why = fast_unavailable()
        if why:
            self._drop(why)
            return
        try:
            super().run()
        except Exception as e:  # a missing or failing compiler, a header that does not parse
            last = (str(e).strip().splitlines() or ["?"])[-1]
            self._drop("compiling python/tile/_fast.c failed (%s: %s)" % (type(e).__name__, last if len(last) < 100 else "..." + last[-80:]))
            return
        self.built = all(os.path.exists(self.get_ext_fullpath(x.name)) for x in self.extensions)

    def get_outputs(self):
        return super().get_outputs() if self.built else []


fast_ext = Extension("tile._fast", sources=["python/tile/_fast.c"], include_dirs=["include"],
                     depends=["include/tile_dlpack.h"], extra_compile_args=["-Wno-missing-field-initializers"])

cmdclass = {"build_py": BuildWithCMake, "build_ext": OptionalFast}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """cpXY-cpXY-<platform> with tile._fast; py3-none-<platform> without it."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            tag = super().get_tag()
            if self.distribution.get_command_obj("build_ext").built:
                return tag
            return "py3", "none", tag[2]

    cmdclass["bdist_wheel"] = PlatformWheel

setup(cmdclass=cmdclass, ext_modules=[fast_ext],
      options={"build": {"build_base": os.path.join(BUILD, "setuptools")}})
