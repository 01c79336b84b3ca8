#!/usr/bin/env bash
# bench/compress/run.sh — the bandwidth payoff of gradient compression: one all-reduce of a
# 100 MB f32 gradient between network namespaces joined by links limited to 1 Gbit/s (tc tbf
# on every namespace's eth0, scripts/netns.sh --rate), uncompressed (tlink_allreduce) against
# tlink_compressed_allreduce (1-bit, int4, int8, fp8, error feedback on), compression and
# decompression included, same run. One rank per namespace. Needs root and iproute2.
# Writes bench/results/link-compress-<date>.md.
#
# Environment knobs: BUILD (build dir, default build-bench-compress), MB (100), ITERS (3: the
# best and the median are reported), RANKS ("2 4": namespaces = ranks), RATE (1gbit),
# METHODS (sign1,int4,int8,fp8), OUT (the report file).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-compress}
MB=${MB:-100}
ITERS=${ITERS:-3}
RANKS=${RANKS:-"2 4"}
RATE=${RATE:-1gbit}
METHODS=${METHODS:-sign1,int4,int8,fp8}
DATE=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/bench/results/link-compress-$DATE.md}
NSP=tcb$$
TMP=$(mktemp -d /tmp/tile-compress-bench.XXXXXX)
NS_N=0
cleanup() {
    [ "$NS_N" -gt 0 ] && bash "$ROOT/scripts/netns.sh" down -p "$NSP" -n "$NS_N" >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { echo "run.sh: $*" >&2; }
if [ "$(id -u)" -ne 0 ]; then say "network namespaces need root"; exit 1; fi

# ---- build (Release): libtilelink, the launcher, the benchmark -----------------------------
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
ninja -C "$BUILD" -j2 tilelink_static tile_link_tool >&2
LAUNCH="$BUILD/tests/link-net/tile_link_tool launch"
cc -std=c11 -O2 -I "$ROOT/include" -o "$BUILD/compress_bench" "$ROOT/bench/compress/compress_bench.c" \
    "$BUILD/libtilelink.a" -lpthread -lm -lrt
BENCH="$BUILD/compress_bench"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

{
    echo "# Compressed all-reduce over rate-limited links — $DATE"
    echo
    echo "- machine: $(uname -n), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(uname -sr)"
    echo "- load average before the run: $LOAD0 (a shared machine: other jobs run at the same time)"
    echo "- command: \`MB=$MB ITERS=$ITERS RANKS=\"$RANKS\" RATE=$RATE bench/compress/run.sh\` (commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo "- setup: one rank per network namespace (scripts/netns.sh up --rate $RATE: a veth pair per"
    echo "  namespace into a bridge, tc tbf at $RATE, burst 64 KiB, on every namespace's eth0), TCP"
    echo "  between the ranks; Release build; each rank's gradient is $MB MB of f32 (MB = 10^6 bytes)"
    echo "- timing: every rank times the call between a barrier and its return; a call's time is the"
    echo "  slowest rank's; $ITERS rounds, each running every variant once (interleaved); best and median"
    echo "  per variant. The compressed calls include compression,"
    echo "  decompression and the error-feedback residual updates (tlink_compress_create, once per"
    echo "  buffer, is not timed). The f32 peer runs twice, with the algorithm libtilelink's cost model"
    echo "  picks and with the ring forced; the speed-up is against the faster of the two."
    echo "  \"MB sent per rank\": payload bytes each rank sends (f32 ring: 2 (N-1)/N x the buffer;"
    echo "  recursive doubling: log2 N x the buffer; compressed: 2 (N-1) x the compressed block)."
    echo "- error: largest |compressed result - f32 result| over the buffer on the first compressed call"
    echo "  (no residual yet); the largest |mean| element is about 0.5 (see the comment in each table)."
    echo
} >"$TMP/report.md"

for n in $RANKS; do
    say "namespaces: $n at $RATE"
    bash "$ROOT/scripts/netns.sh" up -n "$n" -p "$NSP" --rate "$RATE" >&2
    NS_N=$n
    hosts=$(seq 0 $((n - 1)) | sed "s/^/$NSP/; s/\$/:1/" | paste -sd,)
    cmd="$LAUNCH --netns --hosts $hosts -- $BENCH $MB $ITERS $METHODS"
    say "$cmd"
    if ! TLINK_TIMEOUT=300 $cmd >"$TMP/out.$n" 2>"$TMP/err.$n"; then
        say "the run with $n ranks failed:"; cat "$TMP/err.$n" "$TMP/out.$n" >&2; exit 1
    fi
    bash "$ROOT/scripts/netns.sh" down -n "$n" -p "$NSP" >&2
    NS_N=0
    {
        echo "## $n ranks, $n namespaces, $RATE links"
        echo
        sed -n 's/^\[0\] //p' "$TMP/out.$n"
        echo
    } >>"$TMP/report.md"
done
echo "- load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$TMP/report.md"
mkdir -p "$(dirname "$OUT")"
cp "$TMP/report.md" "$OUT"
say "wrote $OUT"
cat "$OUT"
