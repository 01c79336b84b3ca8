#!/usr/bin/env bash
# mpirun_test.sh TOOL — a libtilelink program (TOOL link-bench) runs unchanged under Open
# MPI's mpirun with 2 and 4 ranks: the bootstrap reads OMPI_COMM_WORLD_*. Skips (77) when
# openmpi-bin is not installed.
set -u
TOOL=$1
if ! command -v mpirun >/dev/null 2>&1; then echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; fi
if ! mpirun --version 2>&1 | grep -q 'Open MPI'; then echo "SKIP: mpirun is not Open MPI"; exit 77; fi
T=$(mktemp -d /tmp/tile-mpirun-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
export TLINK_TIMEOUT=60
fails=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# no torchrun variables from the caller: only Open MPI's may be read
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT TLINK_STORE TLINK_RANK TLINK_SIZE

run() { # NAME N ARGS...
    local name=$1 n=$2; shift 2
    timeout 100 mpirun --allow-run-as-root --oversubscribe -n "$n" "$TOOL" link-bench "$@" >"$T/$name.out" 2>&1
    local rc=$?
    if [ $rc -eq 0 ] && grep -q "^# tile link-bench: [a-z_]*, $n ranks on 1 host" "$T/$name.out" \
       && grep -q '^# Out of bounds values : 0 OK' "$T/$name.out"; then ok "$name"
    else bad "$name (rc $rc)"; cat "$T/$name.out"; fi
}
run "mpirun -n 2 allreduce" 2 -b 8 -e 64K -f 64 -w 1 -i 2
run "mpirun -n 4 allreduce" 4 -b 8 -e 64K -f 64 -w 1 -i 2
run "mpirun -n 4 allgather" 4 -c allgather -b 64 -e 64K -f 1024 -w 1 -i 2
run "mpirun -n 3 reduce_scatter" 3 -c reduce_scatter -d f64 -b 48 -e 48K -f 1024 -w 1 -i 2
echo "$fails failure(s)"
[ $fails -eq 0 ]
