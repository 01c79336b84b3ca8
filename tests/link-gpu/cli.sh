#!/bin/sh
# cli.sh TILE TEST_GPU — `tile link-bench --device` argument errors (any machine), and without a
# GPU a clear error instead of a crash; with a GPU a tiny checked run.
tile=$1
gpu=$2
out=$("$tile" link-bench --device bogus 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "expected cuda or cpu" || { echo "--device bogus: rc $rc: $out"; exit 1; }
out=$("$tile" link-bench --device cuda --check-max x 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "check-max" || { echo "--check-max x: rc $rc: $out"; exit 1; }
out=$("$tile" link-bench --device cuda -b 8 -e 4K -f 8 2>&1); rc=$?
if echo "$out" | grep -q "no CUDA driver\|shows no GPU\|cuInit failed"; then
  [ $rc -eq 1 ] || { echo "no GPU: expected exit 1, got $rc: $out"; exit 1; }
  echo "no GPU: $out"
  exit 0
fi
[ $rc -eq 0 ] && echo "$out" | grep -q "Out of bounds values : 0 OK" || { echo "with a GPU: rc $rc: $out"; exit 1; }
echo "$out"
