#!/usr/bin/env bash
# tcp_wait_test.sh TOOL NETNS_SH PYTHONDIR — two test hosts (network namespaces, one rank each)
# on a 100 Mbit/s link (scripts/netns.sh --rate): the ranks' CPU time while their all-reduces
# wait for the link stays below 15 % of the wall time (tcp_wait_cpu.py; sleeping in epoll:
# about 6 %, polling and yielding: 23-39 %), i.e. a waiting rank sleeps instead of polling.
# Skips (77) without root, `ip`, tc's tbf, numpy, or when namespaces cannot be made. The namespaces are always removed.
set -u
TOOL=$1
NETNS=$2
PYDIR=$3
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! command -v ip >/dev/null 2>&1; then echo "SKIP: 'ip' not found"; exit 77; fi
if ! python3 -c 'import numpy' 2>/dev/null; then echo "SKIP: numpy not installed"; exit 77; fi
P="tlw$$"
T=$(mktemp -d /tmp/tile-tcpwait-test.XXXXXX)
cleanup() { bash "$NETNS" down -n 2 -p "$P" >/dev/null 2>&1; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! bash "$NETNS" up -n 2 -p "$P" -s 10.81.0 --rate 100mbit >"$T/up.out" 2>&1; then
    echo "SKIP: cannot create rate-limited network namespaces here:"; cat "$T/up.out"; exit 77
fi
export TLINK_TIMEOUT=60 PYTHONPATH="$PYDIR${PYTHONPATH:+:$PYTHONPATH}"
timeout 100 "$TOOL" launch --netns --hosts "${P}0:1,${P}1:1" -- \
    python3 "$(dirname "$0")/tcp_wait_cpu.py" 0.15 >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc -eq 0 ] && [ "$(grep -c '% of a core' "$T/out")" -eq 2 ] && { echo "ok   ranks sleep while the link drains"; exit 0; }
echo "FAIL tcp wait (rc $rc)"
exit 1
