#!/usr/bin/env bash
# install_test.sh BUILD_DIR SRC_DIR CMAKE CC — install, then build and run hello.c against the
# installed tree twice: with pkg-config, and as a CMake project using find_package(Tile).
set -euo pipefail
build=$1 src=$2 cmake=$3 cc=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/tile"
test -f "$work/prefix/include/tile.h" && test -f "$work/prefix/include/tlink.h"
libdir=$(ls -d "$work"/prefix/lib*/ | head -1)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$work/prefix/bin/tile" devices >/dev/null
# 1. pkg-config
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  "$cc" -std=c11 -o "$work/hello_pc" "$src/hello.c" $(pkg-config --cflags tile tilelink) $(pkg-config --libs tile tilelink) -lm
  "$work/hello_pc"
else
  echo "pkg-config is not installed: skipping its half"
fi
# 2. find_package(Tile)
mkdir -p "$work/proj"
cat > "$work/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(hello C)
find_package(Tile REQUIRED)
add_executable(hello $src/hello.c)
target_link_libraries(hello PRIVATE Tile::tile Tile::tilelink m)
CM
"$cmake" -S "$work/proj" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_C_COMPILER="$cc" >/dev/null
"$cmake" --build "$work/proj/build" >/dev/null
"$work/proj/build/hello"
echo "install test: ok"
