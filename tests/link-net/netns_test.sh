#!/usr/bin/env bash
# netns_test.sh TOOL NETNS_SH — three test hosts (network namespaces joined by a bridge, made
# by scripts/netns.sh), two ranks each: collectives over TCP between the hosts and shared
# memory inside them, the hierarchical algorithm forced and chosen. The namespaces are
# always removed (trap). Skips (exit 77) when not root, without `ip`, or when namespaces
# cannot be made here.
set -u
TOOL=$1
NETNS=$2
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: network namespaces need root"; exit 77; fi
if ! command -v ip >/dev/null 2>&1; then echo "SKIP: 'ip' not found (apt-get install iproute2)"; exit 77; fi
P="tln$$"
T=$(mktemp -d /tmp/tile-netns-test.XXXXXX)
cleanup() { bash "$NETNS" down -p "$P" >/dev/null 2>&1; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! bash "$NETNS" up -p "$P" >"$T/up.out" 2>&1; then
    echo "SKIP: cannot create network namespaces here:"; cat "$T/up.out"; exit 77
fi
export TLINK_TIMEOUT=60
fails=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
HOSTS="${P}0:2,${P}1:2,${P}2:2"

# ranks land in their namespace, with the right variables
timeout 60 "$TOOL" launch --netns --hosts "$HOSTS" -- sh -c \
    'echo "$RANK $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $TLINK_HOST_PER_NETNS $(ip -o -4 addr show dev eth0 | awk "{print \$4}")"' \
    >"$T/env.out" 2>&1
rc=$?
good=1
for r in 0 1 2 3 4 5; do
    g=$((r / 2))
    grep -qxF "[$r] $r $((r % 2)) 2 $g 10.77.0.1 1 10.77.0.$((g + 1))/24" "$T/env.out" || good=0
done
[ $rc -eq 0 ] && [ $good -eq 1 ] && ok "ranks run in their namespaces (MASTER_ADDR 10.77.0.1)" \
    || { bad "namespace placement (rc $rc)"; cat "$T/env.out"; }

# the collective program: hierarchical all-reduce across the hosts, data checked
bench() { # NAME ARGS...
    local name=$1; shift
    timeout 100 "$TOOL" launch --netns --hosts "$HOSTS" -- "$TOOL" link-bench "$@" >"$T/$name.out" 2>&1
    local rc=$?
    if [ $rc -eq 0 ] && grep -q '# Out of bounds values : 0 OK' "$T/$name.out" \
       && grep -q 'allreduce\|allgather\|broadcast\|reduce_scatter' "$T/$name.out"; then ok "$name"
    else bad "$name (rc $rc)"; cat "$T/$name.out"; fi
}
bench hier-allreduce -c allreduce -a hierarchical -b 8 -e 256K -f 32 -w 1 -i 3
grep -q '^\[0\] # tile link-bench: allreduce, 6 ranks on 3 hosts' "$T/hier-allreduce.out" && ok "3 hosts seen" || bad "not 3 hosts"
grep -q 'rank 0 reaches 1 peer over shm, 4 over tcp' "$T/hier-allreduce.out" && ok "shm inside a host, tcp between hosts" \
    || bad "transports"
rows=$(grep -cE '^\[0\] +[0-9]+ .* hierarchical +[0-9.]+$' "$T/hier-allreduce.out")
[ "$rows" -eq 4 ] && ok "hierarchical ran at every size" || bad "hierarchical rows: $rows"
bench hier-allreduce-i64-max -c allreduce -a hierarchical -d i64 -o max -b 1000 -e 1000 -w 0 -i 1
bench auto-allreduce-bf16 -c allreduce -d bf16 -b 2 -e 64K -f 256 -w 1 -i 2
bench ring-allgather -c allgather -a ring -b 48 -e 48K -f 1024 -w 1 -i 2
bench tree-broadcast -c broadcast -r 3 -b 8 -e 8K -f 1024 -w 1 -i 2
# large messages at odd sizes (counts not divisible by the ranks, the 128 KiB chunks or the
# streams): the flat ring over every rank (shm and TCP links in one ring), the striped
# hierarchical algorithm, and two ranks alone over TCP (one per namespace)
bench ring-allreduce-odd -c allreduce -a ring -b 4000012 -e 4000012 -w 0 -i 2
bench hier-allreduce-odd -c allreduce -a hierarchical -d f64 -b 8388616 -e 8388616 -w 0 -i 2
TLINK_DEBUG=info timeout 100 "$TOOL" launch --netns --hosts "${P}0:1,${P}1:1" -- "$TOOL" link-bench -c allreduce \
    -b 2097156 -e 16777248 -f 8 -w 0 -i 2 >"$T/tcp2.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '# Out of bounds values : 0 OK' "$T/tcp2.out" \
   && [ "$(grep -cE '^\[0\] +(2097156|16777248) ' "$T/tcp2.out")" -eq 2 ]; then ok "2 ranks over TCP, 2 MiB+4 and 16 MiB+32 bytes"
else bad "2 ranks over TCP (rc $rc)"; cat "$T/tcp2.out"; fi
# between namespaces of one machine the transport picks reno (TLINK_SOCKET_CC unset); a name
# the kernel does not know is a warning, and the system's default stays
grep -q 'tcp: congestion control reno to rank 1 (same machine)' "$T/tcp2.out" && ok "reno between namespaces of one machine" \
    || bad "congestion control not reported"
TLINK_SOCKET_CC=no_such_cc timeout 60 "$TOOL" launch --netns --hosts "${P}0:1,${P}1:1" -- "$TOOL" link-bench \
    -b 1048580 -e 1048580 -w 0 -i 1 >"$T/cc.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q '# Out of bounds values : 0 OK' "$T/cc.out" \
   && grep -q "TLINK_SOCKET_CC: cannot use TCP congestion control 'no_such_cc'" "$T/cc.out" \
   && ok "unknown TLINK_SOCKET_CC: warning, still correct" || { bad "TLINK_SOCKET_CC=no_such_cc (rc $rc)"; cat "$T/cc.out"; }

# the job's topology as gathered over TCP
timeout 60 "$TOOL" launch --netns --no-prefix --hosts "$HOSTS" -- "$TOOL" link-topo --gather >"$T/topo.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q 'topology (gathered): 3 hosts, 6 ranks' "$T/topo.out" && ok "link-topo --gather: 3 hosts" \
    || { bad "link-topo --gather (rc $rc)"; cat "$T/topo.out"; }

# a rank that dies on one host: the launcher stops the job and reports it, no hang
timeout 60 "$TOOL" launch --netns --grace 1 --hosts "$HOSTS" -- sh -c '[ "$RANK" = 4 ] && exit 5; sleep 30' \
    >"$T/die.out" 2>&1
rc=$?
[ $rc -eq 5 ] && grep -q 'rank 4 exited with status 5' "$T/die.out" && ok "failure on host 2 ends the job" || bad "failure (rc $rc)"

echo "$fails failure(s)"
[ $fails -eq 0 ]
