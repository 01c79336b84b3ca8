#!/bin/sh
# expect_error.sh TILE TARGET PATTERN ARGS... — `TILE run ARGS --target TARGET` must fail with
# exit code 1 and print PATTERN (a grep -E pattern); exit 77 when TARGET is not available.
tile=$1; target=$2; pattern=$3
shift 3
line=$("$tile" devices 2>&1 | grep "^$target ")
case "$line" in
  *" available "*) ;;
  *) echo "SKIP: target $target is not available here: $line"; exit 77 ;;
esac
out=$("$tile" run "$@" --target "$target" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 1 ] || { echo "FAIL: exit code $rc, expected 1"; exit 1; }
echo "$out" | grep -Eq "$pattern" || { echo "FAIL: the message does not match /$pattern/"; exit 1; }
echo "ok: exit 1 with /$pattern/"
