#!/usr/bin/env bash
# bench/train/run.sh — test accuracy of data-parallel training with each gradient
# compression method: examples/train_mlp.c (MLP 64-64-10 on scikit-learn's digits, 4 ranks
# under `tile launch`, shared memory), every method x SEEDS, same hyperparameters. Writes
# bench/results/train-<date>.md: final accuracy per seed, the mean, the gap to f32 in
# percentage points, bytes sent per rank, and the per-epoch test accuracy of the first seed.
#
# Environment knobs: BUILD (build dir, default build-bench-train), EPOCHS (30), SEEDS
# ("1 2 3"), RANKS (4), EXTRA (more train_mlp flags for every run), OUT (the report file).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench-train}
EPOCHS=${EPOCHS:-30}
SEEDS=${SEEDS:-"1 2 3"}
RANKS=${RANKS:-4}
EXTRA=${EXTRA:-}
DATE=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/bench/results/train-$DATE.md}
TMP=$(mktemp -d /tmp/tile-train-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
say() { echo "run.sh: $*" >&2; }

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
ninja -C "$BUILD" -j2 train_mlp tile_link_tool >&2
LAUNCH="$BUILD/tests/link-net/tile_link_tool launch"
DATA="$BUILD/data/digits.bin"
python3 "$ROOT/scripts/prepare_digits.py" "$DATA" >&2
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# name|flags
CONFIGS="none|--compress none
sign1|--compress sign1
sign1 (no error feedback)|--compress sign1 --no-ef
int4|--compress int4
int8|--compress int8
fp8|--compress fp8"

declare -A ACC
i=0
while IFS='|' read -r name flags; do
    for s in $SEEDS; do
        cmd="$LAUNCH -n $RANKS -- $BUILD/bin/train_mlp --data $DATA --epochs $EPOCHS --seed $s $flags $EXTRA"
        say "$cmd"
        TLINK_TIMEOUT=120 $cmd >"$TMP/run.$i.$s" 2>&1 || { say "failed:"; cat "$TMP/run.$i.$s" >&2; exit 1; }
        grep -q '^\[0\] params identical on all ranks: yes' "$TMP/run.$i.$s" || { say "ranks diverged"; exit 1; }
    done
    i=$((i + 1))
done <<<"$CONFIGS"

acc() { sed -n 's/^\[0\] final test_acc \([0-9.]*\) .*/\1/p' "$1"; }
field() { sed -n "s/^\[0\] final .* $2 \([0-9.]*\).*/\1/p" "$1"; }
first=${SEEDS%% *}
{
    echo "# Data-parallel training with compressed gradients — $DATE"
    echo
    echo "- machine: $(uname -n), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), load average before: $LOAD0"
    echo "- command: \`EPOCHS=$EPOCHS SEEDS=\"$SEEDS\" RANKS=$RANKS EXTRA=\"$EXTRA\" bench/train/run.sh\` (commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    echo "- each run: \`tile launch -n $RANKS -- train_mlp --epochs $EPOCHS --seed S --compress M\` (Release build),"
    echo "  $(sed -n 's/^\[0\] train_mlp: //p' "$TMP/run.0.$first" | sed 's/, compress.*//')"
    echo "- data: scikit-learn's digits (1797 samples), fixed split: every 5th sample is a test sample (360)"
    echo "- the seed sets the initial weights and the batch order (the same for every method)"
    echo "- \"MB sent per rank\": gradient payload bytes one rank sent over the whole run; ratio = what an"
    echo "  f32 ring all-reduce of the same tensors would send / that (none: tlink_allreduce itself,"
    echo "  counted with the ring formula)"
    echo
    printf '| method |'; for s in $SEEDS; do printf ' seed %s |' "$s"; done; echo ' mean | vs none (pp) | MB sent per rank | ratio | time s (seed '"$first"') |'
    printf '|---|'; for s in $SEEDS; do printf -- '---:|'; done; printf -- '---:|---:|---:|---:|---:|\n'
    i=0
    base=""
    while IFS='|' read -r name flags; do
        sum=0; k=0
        printf '| %s |' "$name"
        for s in $SEEDS; do
            a=$(acc "$TMP/run.$i.$s"); printf ' %.2f%% |' "$(awk -v a="$a" 'BEGIN{print a*100}')"
            sum=$(awk -v x="$sum" -v a="$a" 'BEGIN{print x+a}'); k=$((k + 1))
        done
        mean=$(awk -v x="$sum" -v k=$k 'BEGIN{printf "%.6f", x/k}')
        [ -z "$base" ] && base=$mean
        wire=$(field "$TMP/run.$i.$first" wire_bytes_per_rank)
        printf ' %.2f%% | %+.2f | %.2f | %s | %s |\n' "$(awk -v m="$mean" 'BEGIN{print m*100}')" \
            "$(awk -v m="$mean" -v b="$base" 'BEGIN{print (m-b)*100}')" "$(awk -v w="$wire" 'BEGIN{print w/1e6}')" \
            "$(field "$TMP/run.$i.$first" ratio)" "$(field "$TMP/run.$i.$first" time_s)"
        i=$((i + 1))
    done <<<"$CONFIGS"
    echo
    echo "## Test accuracy per epoch (seed $first)"
    echo
    printf '| epoch |'; while IFS='|' read -r name flags; do printf ' %s |' "$name"; done <<<"$CONFIGS"; echo
    printf '|---:|'; while IFS='|' read -r name flags; do printf -- '---:|'; done <<<"$CONFIGS"; echo
    for e in $(seq 1 "$EPOCHS"); do
        printf '| %d |' "$e"
        i=0
        while IFS='|' read -r name flags; do
            printf ' %s |' "$(sed -n "s/^\[0\] epoch $e test_acc \([0-9.]*\) .*/\1/p" "$TMP/run.$i.$first")"
            i=$((i + 1))
        done <<<"$CONFIGS"
        echo
    done
    echo
    echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$TMP/report.md"
mkdir -p "$(dirname "$OUT")"
cp "$TMP/report.md" "$OUT"
say "wrote $OUT"
cat "$OUT"
