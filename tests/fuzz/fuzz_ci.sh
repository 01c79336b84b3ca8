#!/bin/sh
# fuzz.ci: 60 s of `tile fuzz` against the interpreter and the cpu backend, plus opencl when
# `tile devices` lists it as available.
tile="$1"; out="$2"
targets=interp,cpu
if "$tile" devices 2>/dev/null | grep -q '^opencl *available'; then targets="$targets,opencl"; fi
rm -rf "$out"
exec "$tile" fuzz --seconds 60 --targets "$targets" --seed 1 --out "$out"
