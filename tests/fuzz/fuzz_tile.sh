#!/bin/sh
# fuzz.tile: the tile-form generator (GPU-shaped GEMM kernels among the others).
#   1. 20 s of `tile fuzz --form tile` on interp,cpu find nothing;
#   2. a planted bug is found: the test target interp-bug:ktail runs the programs with the
#      ragged tail of every GEMM kernel's K loop dropped (K // bk iterations);
#   3. the CUDA C of generated programs compiles with NVRTC for sm_90a (skipped when
#      NVRTC_CHECK is empty or NVRTC cannot be loaded).
set -u
tile="$1"; out="$2"; nvrtc="${3:-}"
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

"$tile" fuzz --form tile --seconds 20 --targets interp,cpu --seed 11 --out "$out/clean" --quiet > "$out/clean.log" 2>&1
rc=$?
cat "$out/clean.log"
[ $rc = 0 ] || fail "tile-form fuzzing on interp,cpu found something (exit $rc)"
grep -q "0 generator rejects" "$out/clean.log" || fail "generator rejects"

"$tile" fuzz --form tile --count 25 --targets interp-bug:ktail --seed 11 --shrink-seconds 5 --out "$out/bug" --quiet > "$out/bug.log" 2>&1
rc=$?
grep "mismatch on" "$out/bug.log" | head -3
[ $rc = 1 ] || fail "the planted K-tail bug was not found (exit $rc)"
grep -q "mismatch on interp-bug:ktail" "$out/bug.log" || fail "no mismatch reported for the planted bug"

[ -n "$nvrtc" ] || { echo "no nvrtc_check: NVRTC part skipped"; exit 0; }
n=0
for s in 4 12 21 33 47 58; do
    "$tile" fuzz --form tile --seed $s --count 1 --print > "$out/p$s.tl" || fail "print seed $s"
    grep -q "T.gemm" "$out/p$s.tl" || continue
    TILE_CUDA_ARCH=sm_90a "$tile" emit "$out/p$s.tl" --target cuda > "$out/p$s.cu" || fail "tile emit --target cuda of seed $s"
    "$nvrtc" "$out/p$s.cu" sm_90a
    rc=$?
    [ $rc = 77 ] && { echo "NVRTC not available: NVRTC part skipped"; exit 0; }
    [ $rc = 0 ] || fail "NVRTC rejects the CUDA C of program seed $s ($out/p$s.tl)"
    n=$((n + 1))
done
[ $n -ge 3 ] || fail "only $n of the seeds had a T.gemm"
echo "ok: $n programs compiled for sm_90a"
