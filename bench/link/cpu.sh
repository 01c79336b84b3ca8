#!/usr/bin/env bash
# bench/link/cpu.sh HOSTS SIZE... — CPU time per all-reduce (task-clock of all threads of all
# ranks, from perf stat), TileLink as configured, TileLink with the system's TCP congestion
# control (TLINK_SOCKET_CC=default) and Open MPI, across network namespaces (HOSTS: ns0:k,ns1:k
# made by scripts/netns.sh up). The difference between a 25- and a 5-iteration run, divided by
# 20, so that start-up cancels. For a library that sleeps while it waits this is the CPU a call
# needs, nearly independent of the load; a busy-polling one (Open MPI) also counts its polling,
# which grows with the load. BUILD and TILE as in bench/link/ab.sh.
set -u
HOSTS=$1; shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUILD:-$ROOT/build-bench-link}; T=${TILE:-$B/tests/link-net/tile_link_tool}
W=$(mktemp -d /tmp/tile-link-cpu.XXXXXX); trap 'rm -rf "$W"' EXIT
n=$(echo "$HOSTS" | tr ',' '\n' | awk -F: '{s+=$2} END {print s}'); ns0=$(echo "$HOSTS" | cut -d: -f1)
printf '#!/bin/sh\nexec perf stat -x, -e task-clock -o %s/cpu.$$.$OMPI_COMM_WORLD_RANK %s "$@"\n' "$W" "$B/mpi_allreduce" >"$W/mpi_cpu.sh"; chmod +x "$W/mpi_cpu.sh"
tot() { cat "$W"/cpu.* 2>/dev/null | awk -F, '/task-clock/{t+=$1} END{print t+0}'; rm -f "$W"/cpu.*; }
for S in "$@"; do
  for v in tl tlbbr mpi; do
    for it in 5 25; do
      rm -f "$W"/cpu.*
      case $v in
        tl) $T launch --netns --hosts $HOSTS -- sh -c "exec perf stat -x, -e task-clock -o $W/cpu.\$\$ $T link-bench -b $S -e $S -w 1 -i $it -k 0" >/dev/null 2>&1 ;;
        tlbbr) TLINK_SOCKET_CC=default $T launch --netns --hosts $HOSTS -- sh -c "exec perf stat -x, -e task-clock -o $W/cpu.\$\$ $T link-bench -b $S -e $S -w 1 -i $it -k 0" >/dev/null 2>&1 ;;
        mpi) ip netns exec $ns0 mpirun --allow-run-as-root --oversubscribe --bind-to none --mca plm_rsh_agent $B/netns-agent.sh --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --host $HOSTS -n $n $W/mpi_cpu.sh -b $S -e $S -w 1 -i $it >/dev/null 2>&1 ;;
      esac
      eval "c$it=$(tot)"
    done
    awk -v s=$S -v v=$v -v a=$c5 -v b=$c25 'BEGIN{printf "%s %-6s cpu per all-reduce %.2f ms (all ranks)\n", s, v, (b-a)/20}'
  done
done
