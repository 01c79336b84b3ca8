#!/usr/bin/env bash
# setup.sh — install what building and testing Tile needs, on a fresh Debian machine.
# Idempotent and quick when everything is there already. Run as root (or with sudo).
#   Debian: cmake ninja-build gcc clang python3 (pip) iproute2 openmpi-bin libopenmpi-dev
#           pocl-opencl-icd ocl-icd-opencl-dev (OpenCL), python3-sklearn (digits data set)
#   PyPI:   numpy ml_dtypes (independent references for the tests), pytest, torch (CPU),
#           and this repository's own Python package (pip install .)
set -euo pipefail

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v cc >/dev/null || need_apt+=(gcc)
command -v clang >/dev/null || need_apt+=(clang)
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
command -v ip >/dev/null || need_apt+=(iproute2)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)  # tests/install
command -v mpirun >/dev/null || need_apt+=(openmpi-bin libopenmpi-dev)
# OpenCL: the ICD loader and PoCL (an OpenCL device on any CPU) for the opencl target's tests
[ -e /etc/OpenCL/vendors/pocl.icd ] || need_apt+=(pocl-opencl-icd)
ldconfig -p 2>/dev/null | grep -q "libOpenCL.so " || need_apt+=(ocl-icd-opencl-dev)
# scikit-learn's bundled digits data set for examples/train_mlp.c (read by scripts/prepare_digits.py)
command -v python3 >/dev/null && python3 "$(dirname "$0")/prepare_digits.py" --find >/dev/null 2>&1 ||
  need_apt+=(python3-sklearn)

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! python3 -c "import numpy, ml_dtypes" 2>/dev/null; then
  echo "setup: installing Python packages: numpy ml_dtypes"
  python3 -m pip install -q --disable-pip-version-check numpy ml_dtypes 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages numpy ml_dtypes
fi

# The Python package's tests: pytest always; PyTorch from PyPI (the torch tests skip where it
# cannot be installed); then the package itself, once (pip install . builds the
# libraries with CMake: minutes on 2 cores)
if ! python3 -c "import pytest" 2>/dev/null; then
  echo "setup: installing Python packages: pytest"
  python3 -m pip install -q --disable-pip-version-check pytest 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages pytest
fi
if ! python3 -c "import torch" 2>/dev/null; then
  echo "setup: installing PyTorch"
  python3 -m pip install -q --disable-pip-version-check torch 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages torch ||
    echo "setup: PyTorch could not be installed: the torch tests will skip"
fi
if ! (cd / && python3 -c "import tile" 2>/dev/null); then
  echo "setup: installing the tile Python package (pip install .)"
  (cd "$(dirname "$0")/.." && python3 -m pip install -q --disable-pip-version-check . 2>/dev/null ||
     python3 -m pip install -q --disable-pip-version-check --break-system-packages .) ||
    echo "setup: pip install . failed: the tests use python/ from the source tree"
fi
