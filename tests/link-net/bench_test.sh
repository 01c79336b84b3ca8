#!/usr/bin/env bash
# bench_test.sh TOOL — `tile link-bench`, `tile link-topo --gather` and `tile store` on this
# host (shared memory). TOOL dispatches launch/link-bench/link-topo/store like `tile`.
set -u
TOOL=$1
T=$(mktemp -d /tmp/tile-link-bench-test.XXXXXX)
store_pid=
cleanup() { [ -n "$store_pid" ] && kill "$store_pid" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
export TLINK_TIMEOUT=60
fails=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# bench NAME EXPECTED-ROWS ARGS...: runs link-bench, checks status, the OK line and the rows
bench() {
    local name=$1 rows=$2; shift 2
    timeout 100 "$TOOL" link-bench "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$? n
    n=$(grep -cE '^ +[0-9]+ +[0-9]+ ' "$T/$name.out")
    if [ $rc -eq 0 ] && grep -q '^# Out of bounds values : 0 OK' "$T/$name.out" && [ "$n" -eq "$rows" ]; then
        ok "$name"
    else
        bad "$name (rc $rc, $n rows)"; cat "$T/$name.out" "$T/$name.err"
    fi
}

for c in allreduce allgather reduce_scatter broadcast alltoall reduce; do
    bench "$c-3" 3 -n 3 -c $c -b 24 -e 24K -f 32 -w 1 -i 2
done
bench "allreduce-4-bf16-max-ring" 2 -n 4 -c allreduce -d bf16 -o max -a ring -b 64 -e 64K -f 1024 -w 1 -i 2
grep -qE ' ring +[0-9.]+$' "$T/allreduce-4-bf16-max-ring.out" && ok "forced ring reported" || bad "forced ring not reported"
bench "allreduce-2-i32-prod-inplace" 2 -n 2 -d i32 -o prod -I -b 4 -e 4K -f 1024 -w 1 -i 2
bench "reduce-3-root2-u8" 1 -n 3 -c reduce -r 2 -d u8 -b 33 -e 33 -w 0 -i 1
bench "reduce_scatter-3-inplace" 2 -n 3 -c reduce_scatter -I -d f16 -o avg -b 96 -e 96K -f 1024 -w 1 -i 2
bench "allgather-2-fp8-inplace" 1 -n 2 -c allgather -d fp8_e4m3 -I -b 1K -e 1K -w 0 -i 1
bench "single-rank" 1 -b 8 -e 8 -w 0 -i 1

# the bus bandwidth formulas (nccl-tests): allreduce 2(n-1)/n, allgather (n-1)/n, broadcast 1
busbw_ok() { # FILE FACTOR
    # from the size (B) and time (us) columns; the printed values have 3 decimals
    awk -v f="$2" '/^ +[0-9]+ +[0-9]+ / { want = $1 / ($6 * 1e3) * f; d = $8 - want; if (d < 0) d = -d
                                          if (d > 0.0015 + 0.01 * want) bad = 1; n++ }
                   END { exit (n > 0 && !bad) ? 0 : 1 }' "$1"
}
# (a failure prints the table: busbw broadcast failed once in CI, 2026-12-02, and did not
# again in 70 runs here, 40 of them next to two busy loops)
for cf in allreduce:1.3333 allgather:0.6667 broadcast:1; do
    c=${cf%%:*}
    busbw_ok "$T/$c-3.out" "${cf#*:}" && ok "busbw $c" || { bad "busbw $c"; cat "$T/$c-3.out"; }
done

# under the launcher: rank 0 prints, prefixed
timeout 60 "$TOOL" launch -n 2 -- "$TOOL" link-bench -b 8 -e 8 -w 0 -i 1 >"$T/launched.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q '^\[0\] # Out of bounds values : 0 OK' "$T/launched.out" && ! grep -q '^\[1\]' "$T/launched.out" \
    && ok "link-bench under tile launch" || { bad "link-bench under tile launch (rc $rc)"; cat "$T/launched.out"; }

# usage errors
"$TOOL" link-bench -c allsum >/dev/null 2>"$T/e1" ; rc=$?
[ $rc -eq 2 ] && grep -q "unknown collective 'allsum'" "$T/e1" && ok "bad -c" || bad "bad -c (rc $rc)"
"$TOOL" link-bench -b 1M -e 1K >/dev/null 2>"$T/e2" ; rc=$?
[ $rc -eq 2 ] && grep -q "is larger than -e" "$T/e2" && ok "bad sizes" || bad "bad sizes (rc $rc)"
"$TOOL" link-bench -d f13 >/dev/null 2>"$T/e3" ; rc=$?
[ $rc -eq 2 ] && grep -q "unknown dtype 'f13'" "$T/e3" && ok "bad dtype" || bad "bad dtype (rc $rc)"

# the job's topology, gathered over the communicator
timeout 60 "$TOOL" launch -n 3 --no-prefix -- "$TOOL" link-topo --gather --write "$T/job.topo" >"$T/gather.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q 'topology (gathered): 1 host, 3 ranks' "$T/gather.out" && grep -q '^host .* ranks 0-2 ' "$T/job.topo" \
    && ok "link-topo --gather" || { bad "link-topo --gather (rc $rc)"; cat "$T/gather.out"; }
"$TOOL" link-topo --read "$T/job.topo" -q && ok "gathered topology reads back" || bad "gathered topology unreadable"

# the standalone store: ranks meet there instead of at rank 0; store and ranks share a secret
# (tile launch would otherwise generate one the store does not know)
export TLINK_SECRET=bench-test-secret-$$-$RANDOM$RANDOM
"$TOOL" store --port 0 --port-file "$T/port" >"$T/store.out" 2>&1 &
store_pid=$!
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
port=$(cat "$T/port" 2>/dev/null)
if [ -n "$port" ]; then
    TLINK_STORE=127.0.0.1:$port timeout 60 "$TOOL" launch -n 2 -- "$TOOL" link-bench -b 8 -e 8 -w 0 -i 1 >"$T/st.out" 2>&1
    rc=$?
    [ $rc -eq 0 ] && grep -q 'Out of bounds values : 0 OK' "$T/st.out" && ok "ranks meet at tile store :$port" \
        || { bad "ranks at tile store (rc $rc)"; cat "$T/st.out"; }
    # ranks with another secret are refused by the store, which logs their address
    TLINK_SECRET=another-secret-0123456789 TLINK_STORE=127.0.0.1:$port TLINK_TIMEOUT=5 timeout 60 \
        "$TOOL" launch -n 2 -- "$TOOL" link-bench -b 8 -e 8 -w 0 -i 1 >"$T/st2.out" 2>&1
    rc=$?
    [ $rc -ne 0 ] && grep -q 'authentication failed' "$T/st2.out" && grep -q 'refused the connection from 127.0.0.1:' "$T/store.out" \
        && ok "ranks with the wrong secret are refused" || { bad "wrong secret (rc $rc)"; cat "$T/st2.out" "$T/store.out"; }
    kill -TERM $store_pid; wait $store_pid; rc=$?
    store_pid=
    [ $rc -eq 0 ] && grep -q 'tile store: stopped' "$T/store.out" && ok "tile store stops on SIGTERM" || bad "tile store exit $rc"
else
    bad "tile store did not start"; cat "$T/store.out"
fi
unset TLINK_SECRET
"$TOOL" store >/dev/null 2>"$T/e4"; rc=$?
[ $rc -eq 2 ] && grep -q -- "--port P is required" "$T/e4" && ok "store usage" || bad "store usage (rc $rc)"

echo "$fails failure(s)"
[ $fails -eq 0 ]
