#!/bin/sh
# fuzz.ci: 60 s of `tile fuzz` against the interpreter and the cpu backend, plus opencl when
# `tile devices` (here: the library's device report, through the fuzz driver's sibling
# `tile` binary if built) lists it as available.
drv="$1"; out="$2"
targets=interp,cpu
tile="$(dirname "$drv")/tile"
if [ -x "$tile" ] && "$tile" devices 2>/dev/null | grep -q '^opencl *available'; then targets="$targets,opencl"; fi
rm -rf "$out"
exec "$drv" fuzz --seconds 60 --targets "$targets" --seed 1 --out "$out"
