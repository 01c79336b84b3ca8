"""Builds the wheel of the `tile` Python package: CMake builds libtile.so, libtilelink.so
and the `tile` CLI from this source tree, and they are copied into tile/lib and tile/bin.
The package itself is pure Python (ctypes); the wheel is tagged for the platform because it
carries these binaries. TILE_WHEEL_BUILD_DIR reuses a build folder; CMAKE_ARGS adds options."""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover
    bdist_wheel = None

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        build = os.environ.get("TILE_WHEEL_BUILD_DIR") or os.path.join(ROOT, "build-python")
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        cfg = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"] + gen + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call(cfg)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build, "--target", "tile", "tilelink", "tile_cli", "--parallel", jobs])
        pkg = os.path.join(self.build_lib, "tile")
        os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
        os.makedirs(os.path.join(pkg, "bin"), exist_ok=True)
        for name in ("libtile.so", "libtilelink.so"):
            shutil.copy2(os.path.join(build, name), os.path.join(pkg, "lib", name))
        shutil.copy2(os.path.join(build, "bin", "tile"), os.path.join(pkg, "bin", "tile"))


cmdclass = {"build_py": BuildWithCMake}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """py3-none-<platform>: any Python 3, this platform's binaries."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel

setup(cmdclass=cmdclass)
