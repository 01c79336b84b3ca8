#!/bin/sh
# gated.sh TILE TARGET CMD ARGS... — run CMD ARGS if `TILE devices` says TARGET is available
# here; otherwise print the reason and exit 77 (CTest's SKIP_RETURN_CODE).
tile=$1
target=$2
shift 2
line=$("$tile" devices 2>&1 | grep "^$target ")
case "$line" in
  *" available "*) ;;
  *) echo "SKIP: target $target is not available here: $line"; exit 77 ;;
esac
exec "$@"
