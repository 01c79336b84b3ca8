#!/usr/bin/env bash
# bench/link/ab.sh REPS HOSTS "LINK-BENCH ARGS" VARIANT... — interleaved A/B of TileLink builds or
# settings against Open MPI: each repetition runs Open MPI, then every variant, back to back;
# prints per variant and size the median time and the median of the per-repetition ratios
# Open MPI time / TileLink time (higher is better), with every repetition's ratio.
#   HOSTS: shm:N (N ranks on this host) or namespaces ns0:k,ns1:k (made by scripts/netns.sh up)
#   VARIANT: environment assignments for TileLink ("X=1" for none); a leading BIN=/path/tool uses
#            that tile / tile_link_tool binary instead of $TILE; "MPI ARGS..." runs Open MPI
#            again with these mpirun arguments (shm:N only), e.g. its single-copy path off:
#            "MPI --mca btl_vader_single_copy_mechanism none"
# Environment: BUILD (default build-bench-link; holds mpi_allreduce and netns-agent.sh, as
# bench/link/run.sh leaves them), TILE (default $BUILD/tests/link-net/tile_link_tool), BIND (none:
# TileLink starts its own ranks, Open MPI --bind-to none; core: with shm:N both libraries are
# started by the same `mpirun --bind-to core --map-by core`, as bench/link/run.sh's BIND=core).
# Example (the before/after run of bench/results/link-allreduce-2026-11-29-s3.md):
#   bench/link/ab.sh 5 tcl0:1,tcl1:1 "-b 1M -e 64M -f 2 -w 2 -i 5" "BIN=/old/tile_link_tool X=1" "X=1"
set -u
R=$1; HOSTS=$2; ARGS=$3; shift 3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUILD:-$ROOT/build-bench-link}; T=${TILE:-$B/tests/link-net/tile_link_tool}
n=$(echo "$HOSTS" | tr ',' '\n' | awk -F: '{s+=$2} END {print s}')
ns0=$(echo "$HOSTS" | cut -d: -f1)
if [ "${BIND:-none}" = core ]; then MR="mpirun --allow-run-as-root --bind-to core --map-by core"
else MR="mpirun --allow-run-as-root --oversubscribe --bind-to none"; fi
O=$(mktemp -d /tmp/tile-link-ab.XXXXXX); trap 'rm -rf "$O"' EXIT
for r in $(seq $R); do
  if [ "${HOSTS%%:*}" = shm ]; then n=${HOSTS#shm:}
  $MR -n $n $B/mpi_allreduce $ARGS 2>/dev/null | awk -v r=$r '/^ +[0-9]+ +[0-9]+ /{print r, "mpi", $1, $6}' >> "$O/all"
  else
  ip netns exec $ns0 mpirun --allow-run-as-root --oversubscribe --bind-to none --mca plm_rsh_agent $B/netns-agent.sh --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --host $HOSTS -n $n $B/mpi_allreduce $ARGS 2>/dev/null | awk -v r=$r '/^ +[0-9]+ +[0-9]+ /{print r, "mpi", $1, $6}' >> "$O/all"
  fi
  i=0
  for v in "$@"; do i=$((i+1))
    TT=$T; case $v in BIN=*) TT=${v%% *}; TT=${TT#BIN=}; v=${v#* };; esac
    case $v in MPI\ *)  # another Open MPI configuration, e.g. "MPI --mca btl_vader_single_copy_mechanism none"
      [ "${HOSTS%%:*}" = shm ] && $MR ${v#MPI } -n ${HOSTS#shm:} $B/mpi_allreduce $ARGS 2>/dev/null | awk -v r=$r -v v=$i '/^ +[0-9]+ +[0-9]+ /{print r, "v" v, $1, $6, "mpi", $9}' >> "$O/all"
      continue;;
    esac
    if [ "${HOSTS%%:*}" = shm ] && [ "${BIND:-none}" = core ]; then L="$MR -n ${HOSTS#shm:} $TT link-bench"
    elif [ "${HOSTS%%:*}" = shm ]; then L="$TT link-bench -n ${HOSTS#shm:}"; else L="$TT launch --netns --hosts $HOSTS -- $TT link-bench"; fi
    env $v $L $ARGS 2>&1 | sed 's/^\[0\] //' | awk -v r=$r -v v=$i '/^ +[0-9]+ +[0-9]+ /{print r, "v" v, $1, $6, $10, $9}' >> "$O/all"
  done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
i=0; for v in "$@"; do i=$((i+1)); echo "v$i = $v"; done
awk '$2=="mpi"{m[$1" "$3]=$4} $2!="mpi"{k=$2" "$3; t[k]=t[k]" "$4; if(($1" "$3) in m) q[k]=q[k]" "m[$1" "$3]/$4; if ($6>0) bad[k]++}
 END{for(k in t) print k, t[k], "|", q[k], (bad[k]?"WRONG":"")}' $O/all | sort -k1,1 -k2,2n | awk '
 function med(s,  a,n,i,j,x){n=split(s,a," "); for(i=2;i<=n;i++){x=a[i];for(j=i-1;j>=1&&a[j]+0>x+0;j--)a[j+1]=a[j];a[j+1]=x} return n%2?a[(n+1)/2]:(a[n/2]+a[n/2+1])/2}
 {split($0,P,"|"); split(P[1],h," "); tt=P[1]; sub(/^[^ ]+ [^ ]+ /,"",tt); printf "%s %9s  time med %9.1f us  ratio(mpi/tl) med %.2f  [%s]\n", h[1], h[2], med(tt), med(P[2]), P[2]}'
awk '$2=="mpi"{t[$3]=t[$3]" "$4} END{for(k in t)print "mpi", k, t[k]}' $O/all | sort -k2,2n
