#!/usr/bin/env bash
# bench/link/auth.sh — the cost of authentication (TLINK_SECRET) per connection, in one run:
#   1. the handshake's arithmetic alone (4 HMAC-SHA-256 and 2 nonces per connection);
#   2. store connections: connect, one request, close; without and with a secret;
#   3. communicator creation at RANKS (8) ranks over TCP (TLINK_TRANSPORT=tcp, 2 streams per
#      peer: 14 transport connections per rank, plus its store connections), against a
#      standalone `tile store`, without and with a secret, REPEAT (5) interleaved runs of
#      ITERS (10) creations each; per run the median creation time (slowest rank).
# Writes bench/results/link-auth-<date>.md. BUILD (build-bench-link), OUT.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-link}
RANKS=${RANKS:-8}
REPEAT=${REPEAT:-5}
ITERS=${ITERS:-10}
DATE=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/bench/results/link-auth-$DATE.md}
TMP=$(mktemp -d /tmp/tile-auth-bench.XXXXXX)
STORE_PID=
cleanup() { [ -n "$STORE_PID" ] && kill "$STORE_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
ninja -C "$BUILD" -j"${JOBS:-2}" tilelink_static tile_base tile_link_tool >&2
TILE="$BUILD/tests/link-net/tile_link_tool"
cc -O2 -I"$ROOT/include" -I"$ROOT/tilelink/src" -o "$BUILD/auth_bench" "$ROOT/bench/link/auth_bench.c" "$BUILD/libtilelink.a" "$BUILD/libtile_base.a" -lpthread -lm -lrt -ldl
B="$BUILD/auth_bench"
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$TMP/r"
"$B" hmac 5000 >>"$TMP/r"
for r in $(seq "$REPEAT"); do
    env -u TLINK_SECRET "$B" store 300 | sed "s/^RESULT /RESULT rep=$r /" >>"$TMP/r"
    TLINK_SECRET=$SECRET "$B" store 300 | sed "s/^RESULT /RESULT rep=$r /" >>"$TMP/r"
done
for mode in plain auth; do
    # one standalone store per mode (the secret is the store's too)
    if [ $mode = auth ]; then export TLINK_SECRET=$SECRET; else unset TLINK_SECRET; fi
    "$TILE" store --port 0 --port-file "$TMP/port.$mode" --bind 127.0.0.1 >/dev/null 2>&1 &
    eval "STORE_$mode=$!"
    for _ in $(seq 100); do [ -s "$TMP/port.$mode" ] && break; sleep 0.05; done
done
unset TLINK_SECRET
for r in $(seq "$REPEAT"); do
    for mode in plain auth; do
        sec=""; [ $mode = auth ] && sec="TLINK_SECRET=$SECRET"
        env $sec TLINK_STORE=127.0.0.1:$(cat "$TMP/port.$mode") TLINK_TRANSPORT=tcp TLINK_COST_MEASURE=0 \
            "$TILE" launch --no-secret -n "$RANKS" -- "$B" comm "$ITERS" | sed -n "s/^\[0\] RESULT /RESULT rep=$r /p" >>"$TMP/r"
    done
done
kill $STORE_plain $STORE_auth 2>/dev/null || true
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$TMP/r" "$RANKS" >"$TMP/rep.md" <<'PY'
import sys, statistics as st
R = [dict(x.split("=", 1) for x in l.split()[1:]) for l in open(sys.argv[1]) if l.startswith("RESULT")]
h = [r for r in R if r["mode"] == "hmac"][0]
print(f"- handshake arithmetic (hello, challenge, response, check; 4 HMAC-SHA-256, 2 nonces): median {float(h['median_us']):.1f} us, min {float(h['min_us']):.1f} us ({h['n']} exchanges)")
def med(rows, key): return st.median(float(r[key]) for r in rows)
sp = [r for r in R if r["mode"] == "store" and r["auth"] == "0"]
sa = [r for r in R if r["mode"] == "store" and r["auth"] == "1"]
print(f"- store connection (connect, one set, close; median of {len(sp)} runs' medians of 300): without a secret {med(sp, 'median_us'):.1f} us, with {med(sa, 'median_us'):.1f} us: {med(sa, 'median_us') - med(sp, 'median_us'):+.1f} us per connection (per-run deltas {', '.join('%+.0f' % (float(a['median_us']) - float(p['median_us'])) for p, a in zip(sp, sa))})")
cp = [r for r in R if r["mode"] == "comm" and r["auth"] == "0"]
ca = [r for r in R if r["mode"] == "comm" and r["auth"] == "1"]
if cp and ca:
    peers, streams = int(cp[0]["tcp_peers"]), int(cp[0]["streams"])
    conns = peers * streams
    d = med(ca, "median_ms") - med(cp, "median_ms")
    print(f"- communicator creation, {sys.argv[2]} ranks over TCP ({peers} peers x {streams} streams = {conns} transport connections per rank, plus the store's): median of {len(cp)} runs' medians: without a secret {med(cp, 'median_ms'):.2f} ms, with {med(ca, 'median_ms'):.2f} ms: {d:+.2f} ms per creation, {d / conns * 1e3:+.1f} us per transport connection (per-run medians without: {', '.join('%.2f' % float(r['median_ms']) for r in cp)}; with: {', '.join('%.2f' % float(r['median_ms']) for r in ca)} ms)")
PY
mkdir -p "$(dirname "$OUT")"
{
    echo "# TileLink authentication cost per connection — $DATE"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; load average before / after: $LOAD0 / $LOAD1 (shared with other jobs)"
    echo "- goal: < 1 ms added per connection"
    echo
    cat "$TMP/rep.md"
    echo
    echo "Commands: \`bench/link/auth.sh\` (RANKS=$RANKS REPEAT=$REPEAT ITERS=$ITERS): \`auth_bench hmac 5000\`, \`auth_bench store 300\` with and"
    echo "without TLINK_SECRET, \`TLINK_STORE=... TLINK_TRANSPORT=tcp TLINK_COST_MEASURE=0 tile launch --no-secret -n $RANKS -- auth_bench comm $ITERS\`"
    echo "against a \`tile store\` started with the same secret (or none)."
} >"$OUT"
cat "$OUT"
