#!/usr/bin/env bash
# bench/link/moe.sh — expert-parallel dispatch + combine: TileLink (tlink_moe_dispatch/combine)
# against the same exchange written with Open MPI's MPI_Alltoall/MPI_Alltoallv (moe_mpi.c) and
# with torch.distributed gloo's all_to_all_single (moe_gloo.py), in one run, interleaved. All
# three move the same tokens (the routing comes from one generator; the RESULT lines carry a
# checksum of the combined output, which must agree). Shared memory at RANKS ranks on this
# host, then across network namespaces (NAMESPACESxRANKS-PER-NAMESPACE, TCP; TileLink takes its
# hierarchical exchange where a namespace holds several ranks). Writes
# bench/results/link-moe-<date>.md.
#
# Sizes: DeepSeek-V3's hidden 7168, top-8 of 256 experts, bf16 (DTYPE=fp8: e4m3 with scales);
# TOKENS_<n> tokens per rank at n ranks (defaults 4096, 2048, 1024 for 2, 4, 8: the full 4096
# at 8 ranks needs ~13 GB with Open MPI's and gloo's staging on a 24 GB machine shared with others).
# Knobs: BUILD (build-bench-link), RANKS ("2 4 8"; empty: none), NS_LAYOUTS ("2x1 2x2 2x4"; NO_NS=1 skips),
# REPEAT (3), WARM (1), ITERS (3), LIBS ("tilelink mpi gloo"; also "tilelink-flat": the flat exchange forced), OUT, JOBS (2); gloo's run, minutes
# at full size on a small machine, can take fewer: GLOO_REPEAT (REPEAT), GLOO_WARM, GLOO_ITERS.
# TL_WARM (max(WARM, 10)): TileLink's (algo auto) warm-up across namespaces, where its first ten
# calls are the trials of the flat and hierarchical exchanges (docs/tilelink.md "MoE").
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-link}
RANKS=${RANKS-"2 4 8"}
NS_LAYOUTS=${NS_LAYOUTS:-"2x1 2x2 2x4"}
REPEAT=${REPEAT:-3}
WARM=${WARM:-1}
ITERS=${ITERS:-3}
LIBS=${LIBS:-"tilelink mpi gloo"}
GLOO_REPEAT=${GLOO_REPEAT:-$REPEAT}
GLOO_WARM=${GLOO_WARM:-$WARM}
GLOO_ITERS=${GLOO_ITERS:-$ITERS}
TL_WARM=${TL_WARM:-$((WARM > 10 ? WARM : 10))}
DTYPE=${DTYPE:-bf16}
HIDDEN=${HIDDEN:-7168}
EXPERTS=${EXPERTS:-256}
TOPK=${TOPK:-8}
DATE=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/bench/results/link-moe-$DATE.md}
NSP=tlm$$
TMP=$(mktemp -d /tmp/tile-moe-bench.XXXXXX)
cleanup() {
    [ -n "${NS_UP:-}" ] && bash "$ROOT/scripts/netns.sh" down -p "$NSP" -n 2 >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { echo "moe.sh: $*" >&2; }
tokens_for() { local v="TOKENS_$1"; local d=1024; [ "$1" -le 4 ] && d=2048; [ "$1" -le 2 ] && d=4096; echo "${!v:-$d}"; }

# ---- build -------------------------------------------------------------------------------
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
ninja -C "$BUILD" -j"${JOBS:-2}" tilelink_static tile_base tile_link_tool >&2
TILE="$BUILD/tests/link-net/tile_link_tool"
cc -O2 -I"$ROOT/include" -o "$BUILD/moe_bench" "$ROOT/bench/link/moe_bench.c" "$BUILD/libtilelink.a" "$BUILD/libtile_base.a" -lpthread -lm -lrt -ldl
HAVE_MPI=0
# the Open MPI program's weighted sums get the vector width TileLink's get (AVX2, no FMA: FMA
# would round differently and break the checksum comparison), so the ratio is not a compiler flag
MPI_CFLAGS="-O3"
grep -qw avx2 /proc/cpuinfo && MPI_CFLAGS="-O3 -mavx2 -ffp-contract=off"
if command -v mpicc >/dev/null 2>&1 && mpicc $MPI_CFLAGS -o "$BUILD/moe_mpi" "$ROOT/bench/link/moe_mpi.c" 2>"$TMP/mpicc.txt"; then HAVE_MPI=1; fi
HAVE_GLOO=0
python3 -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null && HAVE_GLOO=1
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
CMDS=()

# run LIB NAME CMD: appends the RESULT line (with rep and layout) to $TMP/results
run() {
    local lib=$1 name=$2 rep=$3; shift 3
    say "[$rep/$REPEAT] $name $lib (${SECONDS} s so far): $*"
    if "$@" >"$TMP/out" 2>&1; then
        sed -n 's/^\(\[0\] \)\{0,1\}RESULT /RESULT /p' "$TMP/out" | sed "s/^RESULT /RESULT rep=$rep layout=$name /; s/ lib=[^ ]*/ lib=$lib/" >>"$TMP/results"
    else
        say "$lib failed:"; tail -5 "$TMP/out" >&2
        echo "FAILED rep=$rep layout=$name lib=$lib" >>"$TMP/results"
    fi
    [ "$rep" = 1 ] && CMDS+=("$*")
    return 0
}
: >"$TMP/results"

# ---- shared memory -------------------------------------------------------------------------
for n in $RANKS; do
    T=$(tokens_for "$n")
    A="-t $T -H $HIDDEN -E $EXPERTS -k $TOPK -d $DTYPE -w $WARM -i $ITERS"
    AG="-t $T -H $HIDDEN -E $EXPERTS -k $TOPK -d $DTYPE -w $GLOO_WARM -i $GLOO_ITERS"
    for r in $(seq "$REPEAT"); do
        for lib in $LIBS; do
            [ "$lib" = gloo ] && [ "$r" -gt "$GLOO_REPEAT" ] && continue
            case $lib in
                tilelink) run tilelink "shm-$n" "$r" "$TILE" launch -n "$n" -- "$BUILD/moe_bench" $A ;;
                tilelink-flat) run tilelink-flat "shm-$n" "$r" "$TILE" launch -n "$n" -- "$BUILD/moe_bench" $A -a flat ;;
                mpi) [ $HAVE_MPI = 1 ] && run mpi "shm-$n" "$r" $MPIRUN -n "$n" "$BUILD/moe_mpi" $A ;;
                gloo) [ $HAVE_GLOO = 1 ] && run gloo "shm-$n" "$r" "$TILE" launch -n "$n" -- python3 "$ROOT/bench/link/moe_gloo.py" $AG ;;
            esac
        done
    done
done

# ---- network namespaces ----------------------------------------------------------------------
NS_NOTE=""
if [ "${NO_NS:-0}" = 1 ]; then NS_NOTE="skipped (NO_NS=1)"
elif [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then NS_NOTE="skipped: needs root and iproute2"
elif ! bash "$ROOT/scripts/netns.sh" up -p "$NSP" -n 2 >"$TMP/ns.txt" 2>&1; then
    NS_NOTE="skipped: cannot create network namespaces: $(tr '\n' ' ' <"$TMP/ns.txt")"
else
    NS_UP=1
    printf '#!/bin/sh\nh=$1; shift\nexec ip netns exec "$h" sh -c "$*"\n' >"$BUILD/netns-agent.sh"
    chmod +x "$BUILD/netns-agent.sh"
    for lay in $NS_LAYOUTS; do
        nns=${lay%x*}; per=${lay#*x}; n=$((nns * per))
        hosts=""
        for i in $(seq 0 $((nns - 1))); do hosts="$hosts${hosts:+,}$NSP$i:$per"; done
        T=$(tokens_for "$n")
        A="-t $T -H $HIDDEN -E $EXPERTS -k $TOPK -d $DTYPE -w $WARM -i $ITERS"
        AG="-t $T -H $HIDDEN -E $EXPERTS -k $TOPK -d $DTYPE -w $GLOO_WARM -i $GLOO_ITERS"
        AT="-t $T -H $HIDDEN -E $EXPERTS -k $TOPK -d $DTYPE -w $TL_WARM -i $ITERS"
        for r in $(seq "$REPEAT"); do
            for lib in $LIBS; do
                [ "$lib" = gloo ] && [ "$r" -gt "$GLOO_REPEAT" ] && continue
                case $lib in
                    tilelink) run tilelink "ns-$lay" "$r" "$TILE" launch --netns --hosts "$hosts" -- "$BUILD/moe_bench" $AT ;;
                    tilelink-flat) run tilelink-flat "ns-$lay" "$r" "$TILE" launch --netns --hosts "$hosts" -- "$BUILD/moe_bench" $A -a flat ;;
                    # Open MPI over TCP everywhere (its shared-memory BTL does not survive being
                    # launched into namespaces: bench/link/run.sh)
                    mpi) [ $HAVE_MPI = 1 ] && run mpi "ns-$lay" "$r" ip netns exec "${NSP}0" $MPIRUN --mca plm_rsh_agent "$BUILD/netns-agent.sh" \
                             --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --host "$hosts" -n "$n" \
                             "$BUILD/moe_mpi" $A ;;
                    # gloo binds to the host name's address (loopback here): its namespace's eth0 instead
                    gloo) [ $HAVE_GLOO = 1 ] && run gloo "ns-$lay" "$r" env GLOO_SOCKET_IFNAME=eth0 "$TILE" launch --netns --hosts "$hosts" -- \
                              python3 "$ROOT/bench/link/moe_gloo.py" $AG ;;
                esac
            done
        done
    done
fi
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report -------------------------------------------------------------------------------
# per layout and library: the median over repetitions of dispatch, combine and their sum;
# GB/s of token data = token bytes between ranks (dispatch + combine, all ranks) / ranks /
# time; ratios per repetition (same moment), median and spread
python3 - "$TMP/results" >"$TMP/report.md" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("RESULT")]
fails = [l.strip() for l in open(sys.argv[1]) if l.startswith("FAILED")]
def kv(r): return dict(x.split("=", 1) for x in r[1:])
data = {}
for r in rows:
    d = kv(r)
    data.setdefault(d["layout"], {}).setdefault(d["lib"], {})[int(d["rep"])] = d
libs = ["tilelink", "tilelink-flat", "mpi", "gloo"]
names = {"tilelink": "TileLink", "tilelink-flat": "TileLink (flat forced)", "mpi": "Open MPI", "gloo": "gloo"}
print("| layout | ranks | tokens/rank | library | algorithm | dispatch (ms) | combine (ms) | total (ms) | GB/s of token data | checksum |")
print("|---|---:|---:|---|---|---:|---:|---:|---:|---|")
ratio_lines = []
for lay in data:
    for lib in libs:
        reps = data[lay].get(lib)
        if not reps: continue
        d0 = next(iter(reps.values()))
        disp = st.median(float(v["dispatch_ms"]) for v in reps.values())
        comb = st.median(float(v["combine_ms"]) for v in reps.values())
        tot = st.median(float(v["dispatch_ms"]) + float(v["combine_ms"]) for v in reps.values())
        nb = float(d0["disp_bytes"]) + float(d0["comb_bytes"])
        gbs = nb / int(d0["ranks"]) / (tot * 1e-3) / 1e9
        cks = sorted(set(v["checksum"] for v in reps.values()))
        print(f"| {lay} | {d0['ranks']} | {d0['tokens']} | {names[lib]} | {d0['algo']} | {disp:.1f} | {comb:.1f} | {tot:.1f} | {gbs:.3f} | {','.join(cks)} |")
    for mine, other in (("tilelink", "mpi"), ("tilelink", "gloo"), ("tilelink-flat", "mpi")):
        t = data[lay].get(mine, {})
        o = data[lay].get(other, {})
        common = sorted(set(t) & set(o))
        if not common: continue
        rs = [(float(o[r]["dispatch_ms"]) + float(o[r]["combine_ms"])) / (float(t[r]["dispatch_ms"]) + float(t[r]["combine_ms"])) for r in common]
        rd = [float(o[r]["dispatch_ms"]) / float(t[r]["dispatch_ms"]) for r in common]
        rc = [float(o[r]["combine_ms"]) / float(t[r]["combine_ms"]) for r in common]
        same = all(t[r]["checksum"] == o[r]["checksum"] for r in common)
        hier = any(t[r]["algo"] == "hierarchical" for r in common)
        ratio_lines.append(f"| {lay} | {names[mine]} | {names[other]} | {st.median(rs):.2f} | {min(rs):.2f}-{max(rs):.2f} | {st.median(rd):.2f} | {st.median(rc):.2f} | {len(common)} | {'yes' if same else 'no (hierarchical: rounded per host)' if hier else 'NO'} |")
print()
print("Throughput ratio TileLink / other (= other's time / TileLink's; higher is better), per")
print("repetition (the libraries of one repetition ran one after another), dispatch + combine:")
print()
print("| layout | TileLink run | against | ratio, median | spread (min-max) | dispatch ratio | combine ratio | repetitions | same checksum |")
print("|---|---|---|---:|---:|---:|---:|---:|---|")
for l in ratio_lines: print(l)
if fails:
    print()
    print("Failed runs: " + "; ".join(fails))
PY
mkdir -p "$(dirname "$OUT")"
{
    echo "# MoE dispatch + combine: TileLink vs Open MPI MPI_Alltoallv vs gloo all_to_all_single — $DATE"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);"
    echo "  load average before / after: $LOAD0 / $LOAD1 (shared with other jobs)"
    echo "- Open MPI: $(mpirun --version 2>&1 | head -1), moe_mpi.c built with mpicc $MPI_CFLAGS; torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo absent) (gloo)"
    echo "- sizes: hidden $HIDDEN, top-$TOPK of $EXPERTS experts, $DTYPE tokens (combine in bf16); tokens per rank in the"
    echo "  table (DeepSeek-V3 has 4096; scaled down at 4 and 8 ranks for memory: see moe.sh)"
    echo "- each run: $WARM warm-up and $ITERS timed iterations of (barrier, dispatch, barrier, combine) (gloo: $GLOO_WARM and $GLOO_ITERS; TileLink auto across namespaces: $TL_WARM warm-ups); per iteration the"
    echo "  slowest rank's time, the mean over iterations; $REPEAT repetitions interleaved TileLink, Open MPI, gloo (gloo in the first $GLOO_REPEAT); the table gives the median"
    echo "- GB/s of token data: the token bytes that go between ranks (a token once per destination rank other than its"
    echo "  own, dispatch + combine, all ranks) / ranks / (dispatch + combine time)"
    echo "- namespaces: ${NS_NOTE:-$NS_LAYOUTS (NAMESPACESxRANKS-PER-NAMESPACE, TCP between them; Open MPI TCP also inside one)}"
    echo
    cat "$TMP/report.md"
    echo
    echo "Commands (first repetition):"
    echo
    for c in "${CMDS[@]}"; do echo "    $c"; done
} >"$OUT"
say "wrote $OUT"
cat "$OUT"
