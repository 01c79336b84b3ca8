#!/usr/bin/env bash
# bench/link/run.sh — TileLink all-reduce against Open MPI's MPI_Allreduce, same machine,
# same run: 2 and 4 ranks over shared memory (8 B .. 64 MiB), and across network
# namespaces over TCP (one rank per namespace; needs root and iproute2). Writes
# bench/results/link-allreduce-<date>.md with both tables and the ratios.
#
# Environment knobs: BUILD (build dir, default build-bench-link), MAXSIZE (64M),
# MAXSIZE_TCP (16M), WARM (3), ITERS (10), RANKS ("2 4"), REPEAT (2: each pair of runs is
# repeated, interleaved, and each size keeps its fastest time — a shared machine's noise only
# ever slows a run down), SMALL_MAX (64K), WARM_SMALL (20), ITERS_SMALL (200): sizes up to
# SMALL_MAX run with these iteration counts instead, NO_TCP=1 (skip namespaces), OUT (the report file).
# Installs openmpi-bin and libopenmpi-dev with apt-get if missing.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-link}
MAXSIZE=${MAXSIZE:-64M}
MAXSIZE_TCP=${MAXSIZE_TCP:-16M}
WARM=${WARM:-3}
ITERS=${ITERS:-10}
RANKS=${RANKS:-"2 4"}
REPEAT=${REPEAT:-2}
SMALL_MAX=${SMALL_MAX:-64K}
WARM_SMALL=${WARM_SMALL:-20}
ITERS_SMALL=${ITERS_SMALL:-200}
DATE=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/bench/results/link-allreduce-$DATE.md}
NSP=tlb$$
TMP=$(mktemp -d /tmp/tile-link-bench.XXXXXX)
cleanup() {
    [ -n "${NS_UP:-}" ] && bash "$ROOT/scripts/netns.sh" down -p "$NSP" -n 4 >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { echo "run.sh: $*" >&2; }

# ---- 1. Open MPI -------------------------------------------------------------------------
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    say "installing openmpi-bin libopenmpi-dev"
    if [ "$(id -u)" -ne 0 ]; then say "need root for apt-get (or install openmpi-bin libopenmpi-dev yourself)"; exit 1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev >&2; }
fi
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"

# ---- 2. build (Release) --------------------------------------------------------------------
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
if ninja -C "$BUILD" -j2 tile_cli >&2 && [ -x "$BUILD/bin/tile" ]; then
    TILE="$BUILD/bin/tile"
else
    say "the full tile CLI does not build right now; using the TileLink-only tool (same code)"
    ninja -C "$BUILD" -j2 tile_link_tool >&2
    TILE="$BUILD/tests/link-net/tile_link_tool"
fi
mpicc -O2 -o "$BUILD/mpi_allreduce" "$ROOT/bench/link/mpi_allreduce.c" -lm
MPIB="$BUILD/mpi_allreduce"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# best FILES... > OUT: the first file's header, then per size (ascending) the row with the
# smallest time (column 6)
best() {
    awk 'FNR == NR && /^#/ && !/Out of bounds|Avg bus/ { print }' "$@"
    awk '/^ +[0-9]+ +[0-9]+ / { if (!($1 in t) || $6 < t[$1]) { t[$1] = $6; row[$1] = $0 } }
         END { for (s in row) print row[s] }' "$@" | sort -n -k1,1
}

# pair NAME CMD1 CMD2 MAX: runs both REPEAT times, interleaved, each in two segments: small
# sizes (8 B .. SMALL_MAX) with WARM_SMALL/ITERS_SMALL iterations, so that one descheduling
# does not decide a latency, and the rest up to MAX with WARM/ITERS; keeps the best per size.
pair() {
    local name=$1 c1=$2 c2=$3 max=$4 r seg args
    for r in $(seq "$REPEAT"); do
        for seg in small large; do
            if [ $seg = small ]; then args="-b 8 -e $SMALL_MAX -f 2 -w $WARM_SMALL -i $ITERS_SMALL"
            else args="-b $((2 * $(numfmt --from=iec "$SMALL_MAX"))) -e $max -f 2 -w $WARM -i $ITERS"; fi
            say "[$r/$REPEAT] $c1 $args"; $c1 $args | sed 's/^\[0\] //' >"$TMP/tl-$name.$r.$seg" || say "TileLink run failed"
            say "[$r/$REPEAT] $c2 $args"; $c2 $args >"$TMP/mpi-$name.$r.$seg" || say "Open MPI run failed"
            [ "$r" = 1 ] && CMDS+=("$c1 $args" "$c2 $args")
        done
    done
    best "$TMP"/tl-"$name".* >"$TMP/tl-$name.txt"
    best "$TMP"/mpi-"$name".* >"$TMP/mpi-$name.txt"
}

# ---- 3. shared memory ---------------------------------------------------------------------
CMDS=()
for n in $RANKS; do
    pair "shm-$n" "$TILE link-bench -n $n" "$MPIRUN -n $n $MPIB" "$MAXSIZE"
done

# ---- 4. TCP across network namespaces -----------------------------------------------------
TCP_NOTE=""
if [ "${NO_TCP:-0}" = 1 ]; then
    TCP_NOTE="skipped (NO_TCP=1)"
elif [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
    TCP_NOTE="skipped: needs root and iproute2"
elif ! bash "$ROOT/scripts/netns.sh" up -p "$NSP" -n 4 >"$TMP/ns.txt" 2>&1; then
    TCP_NOTE="skipped: cannot create network namespaces: $(tr '\n' ' ' <"$TMP/ns.txt")"
else
    NS_UP=1
    # mpirun reaches its "hosts" through this agent instead of ssh: run inside the namespace
    printf '#!/bin/sh\nh=$1; shift\nexec ip netns exec "$h" sh -c "$*"\n' >"$BUILD/netns-agent.sh"
    chmod +x "$BUILD/netns-agent.sh"
    for n in $RANKS; do
        hosts=""
        for i in $(seq 0 $((n - 1))); do hosts="$hosts${hosts:+,}$NSP$i:1"; done
        pair "tcp-$n" "$TILE launch --netns --hosts $hosts -- $TILE link-bench" \
            "ip netns exec ${NSP}0 $MPIRUN --mca plm_rsh_agent $BUILD/netns-agent.sh --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --host $hosts -n $n $MPIB" \
            "$MAXSIZE_TCP"
    done
fi
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- 5. report ----------------------------------------------------------------------------
# table TL MPI: size | ours time, busbw, algo | MPI time, busbw | busbw ratio, time ratio
table() {
    awk 'FNR == 1 { f++ }
         /^ +[0-9]+ +[0-9]+ / { if (f == 1) { t[$1] = $6; b[$1] = $8; a[$1] = $10; w[$1] = $9; order[++n] = $1 }
                                 else { mt[$1] = $6; mb[$1] = $8 } }
         END {
           print "| size (B) | TileLink time (us) | TileLink busbw (GB/s) | algorithm | #wrong | Open MPI time (us) | Open MPI busbw (GB/s) | busbw ratio | time ratio |"
           print "|---:|---:|---:|---|---:|---:|---:|---:|---:|"
           for (i = 1; i <= n; i++) { s = order[i]
             br = (mb[s] > 0) ? sprintf("%.2f", b[s] / mb[s]) : "-"
             tr = (mt[s] > 0) ? sprintf("%.2f", t[s] / mt[s]) : "-"
             printf "| %d | %.2f | %.3f | %s | %s | %s | %s | %s | %s |\n", s, t[s], b[s], a[s], w[s], (s in mt) ? mt[s] : "-", (s in mb) ? mb[s] : "-", br, tr }
         }' "$1" "$2"
}
# summary TL MPI: "8 B latency ratio X; busbw ratio at >= 1 MiB: min Y, geomean Z"
summary() {
    awk 'FNR == 1 { f++ }
         /^ +[0-9]+ +[0-9]+ / { if (f == 1) { t[$1] = $6; b[$1] = $8 } else { mt[$1] = $6; mb[$1] = $8 } }
         END {
           lat = (8 in t && mt[8] > 0) ? sprintf("%.2f (%.2f us vs %.2f us)", t[8] / mt[8], t[8], mt[8]) : "n/a"
           n = 0; lg = 0; mn = 1e9
           for (s in b) if (s + 0 >= 1048576 && mb[s] > 0) { r = b[s] / mb[s]; n++; lg += log(r); if (r < mn) mn = r }
           if (n) printf "8 B latency ratio (TileLink / Open MPI, target <= 1.2): %s; busbw ratio at >= 1 MiB (target >= 1.0): min %.2f, geometric mean %.2f over %d sizes\n", lat, mn, exp(lg / n), n
           else printf "8 B latency ratio (TileLink / Open MPI, target <= 1.2): %s; no sizes >= 1 MiB\n", lat
         }' "$1" "$2"
}

mkdir -p "$(dirname "$OUT")"
{
    echo "# TileLink all-reduce vs Open MPI MPI_Allreduce — $DATE"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores usable ($(grep -c ^processor /proc/cpuinfo) online)"
    echo "- Open MPI: $(mpirun --version 2>&1 | head -1)"
    echo "- load average before / after: $LOAD0 / $LOAD1 (the machine is shared: other jobs may run)"
    echo "- f32 sum, out of place; time = slowest rank's mean per call over $ITERS_SMALL iterations after $WARM_SMALL"
    echo "  warm-up (sizes up to $SMALL_MAX), $ITERS iterations after $WARM warm-up (larger sizes),"
    echo "  best of $REPEAT interleaved runs per size and library;"
    echo "  busbw = algbw x 2(n-1)/n (nccl-tests). Ratios: busbw TileLink / Open MPI (higher is better),"
    echo "  time TileLink / Open MPI (lower is better)."
    if [ "$(nproc)" -lt 4 ]; then
        echo "- note: only $(nproc) cores: 4 ranks oversubscribe the CPUs (both libraries alike; Open MPI"
        echo "  runs with --oversubscribe --bind-to none)."
    fi
    echo
    echo "## Commands"
    echo
    echo '```'
    for c in "${CMDS[@]}"; do echo "$c"; done
    echo '```'
    for n in $RANKS; do
        echo
        echo "## $n ranks, shared memory (one host)"
        echo
        echo "$(summary "$TMP/tl-shm-$n.txt" "$TMP/mpi-shm-$n.txt")"
        echo
        table "$TMP/tl-shm-$n.txt" "$TMP/mpi-shm-$n.txt"
    done
    for n in $RANKS; do
        echo
        echo "## $n ranks, TCP across $n network namespaces (one rank each, veth + bridge)"
        echo
        if [ -s "$TMP/tl-tcp-$n.txt" ] && [ -s "$TMP/mpi-tcp-$n.txt" ]; then
            echo "$(summary "$TMP/tl-tcp-$n.txt" "$TMP/mpi-tcp-$n.txt")"
            echo
            table "$TMP/tl-tcp-$n.txt" "$TMP/mpi-tcp-$n.txt"
        else
            echo "not run: ${TCP_NOTE:-no output}"
        fi
    done
} >"$OUT"
say "wrote $OUT"
cat "$OUT"
