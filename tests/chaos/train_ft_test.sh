#!/usr/bin/env bash
# train_ft_test.sh TILE TRAIN_MLP PREPARE_DIGITS_PY DATA_FILE — the recovery demo on the real
# training example (label "chaos"): examples/train_mlp.c --ft on scikit-learn's digits,
# 4 ranks, kill -9 of a random rank at a random step:
#   - under tile launch --max-restarts 1 the job succeeds and its parameters are bit-identical
#     to a failure-free run (same hash, same accuracy);
#   - under tile launch --keep-going the 3 survivors shrink and finish with an accuracy within
#     1 point of the failure-free run;
# the time from the kill to the next completed step is reported (only a hang fails), nothing of the job is
# left running. Skips (77) without the digits data (scripts/setup.sh installs scikit-learn).
# CHAOS_SEED=N reproduces the kill schedule.
set -u
TILE=$1
TRAIN=$2
PREP=$3
DATA=$4
if [ ! -s "$DATA" ]; then
    mkdir -p "$(dirname "$DATA")"
    if ! python3 "$PREP" "$DATA"; then
        [ $? -eq 3 ] && { echo "SKIP: scikit-learn's digits data set is not installed"; exit 77; }
        echo "FAIL: prepare_digits.py"; exit 1
    fi
fi
SEED=${CHAOS_SEED:-$(( $(date +%s%N) % 32768 ))}
RANDOM=$SEED
echo "train_ft: seed $SEED"
T=$(mktemp -d /tmp/tile-train-ft.XXXXXX)
trap 'rm -rf "$T"' EXIT
export TLINK_TIMEOUT=20
fails=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
N=4
ARGS=(--data "$DATA" --epochs 30 --quiet --ft)
running() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1; [ -n "$st" ] && [ "$st" != Z ]; }
field() { sed -n "s/^\[[0-9]*\] $2/\1/p" "$T/$1.out" | head -1; }

REF_S=1   # wall time of the failure-free run, measured below; kills land inside it
run() { # NAME LAUNCH_ARGS... : runs to the end, killing a random rank at a random time unless NAME is ref
    local name=$1; shift
    local job victim delay tk t0 frac attempt
    frac=$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.1 + 0.4 * r / 32767 }')
    for attempt in 1 2 3; do
        rm -rf "${T:?}/$name"; mkdir -p "$T/$name"
        t0=$(date +%s.%N)
        "$TILE" launch --timeout 90 -n $N "$@" -- "$TRAIN" "${ARGS[@]}" --pid-dir "$T/$name" >"$T/$name.out" 2>&1 &
        job=$!
        [ "$name" = ref ] && break
        for _ in $(seq 200); do [ "$(ls "$T/$name"/rank*.pid 2>/dev/null | wc -l)" -ge $N ] && break; sleep 0.05; done
        # a random point in the first half of the run (the run's length is the reference's:
        # about 0.7 s on a quiet machine, several seconds under load)
        delay=$(awk -v f="$frac" -v s="$REF_S" 'BEGIN { printf "%.3f", f * s }')
        victim=$((RANDOM % N))
        sleep "$delay"
        tk=$(date +%s.%N)
        if kill -9 "$(cat "$T/$name/rank$victim.pid")" 2>/dev/null; then
            echo "     $name: kill -9 rank $victim at ${delay} s"
            break
        fi
        # the job ended before the kill (a fast machine): run it again, killing earlier
        echo "     $name: rank $victim had finished before the kill at ${delay} s; again, earlier"
        wait $job
        frac=$(awk -v f="$frac" 'BEGIN { printf "%.3f", f / 3 }')
        [ $attempt -eq 3 ] && { bad "$name: the job finished before every kill"; return; }
    done
    wait $job
    RC=$?
    if [ "$name" != ref ]; then
        local ts d
        ts=$(awk -v t="$tk" '$2 == "ft" && $3 > t && /step [0-9]+ done/ { print $3; exit }' "$T/$name.out")
        if [ -z "$ts" ]; then bad "$name: no completed step after the kill"; sed -n '1,40p' "$T/$name.out"
        else
            d=$(awk -v a="$ts" -v b="$tk" 'BEGIN { printf "%.3f", a - b }')
            awk -v d="$d" 'BEGIN { exit !(d < 60) }' && ok "$name: next step completed $d s after the kill" \
                || bad "$name: no step completed within 60 s of the kill (a hang)"
        fi
        grep ' ft .*\(detected\|rejoined\|shrunk\|restored\|replacement\)' "$T/$name.out" | head -12 | sed 's/^/     /'
    fi
    local left="" f p
    sleep 0.2
    for f in "$T/$name"/all.*; do
        [ -e "$f" ] || continue
        p=${f##*.}
        running "$p" && left="$left $p"
    done
    [ -z "$left" ] && ok "$name: no process left" || { bad "$name: processes left:$left"; kill -9 $left 2>/dev/null; }
}

t_ref=$(date +%s.%N)
run ref
REF_S=$(awk -v a="$(date +%s.%N)" -v b="$t_ref" 'BEGIN { printf "%.3f", a - b }')
echo "     reference run: $REF_S s"
REF_HASH=$(field ref 'params hash \([0-9a-f]*\)')
REF_ACC=$(field ref 'final test_acc \([0-9.]*\) .*')
[ $RC -eq 0 ] && [ -n "$REF_HASH" ] && ok "reference: test accuracy $REF_ACC, params hash $REF_HASH" \
    || { bad "reference run (rc $RC)"; cat "$T/ref.out"; }

run rejoin --max-restarts 1
h=$(field rejoin 'params hash \([0-9a-f]*\)')
a=$(field rejoin 'final test_acc \([0-9.]*\) .*')
[ $RC -eq 0 ] && [ "$h" = "$REF_HASH" ] && [ "$a" = "$REF_ACC" ] \
    && ok "rejoin: the job succeeded, parameters bit-identical to the reference (accuracy $a)" \
    || { bad "rejoin: rc $RC, hash '$h' accuracy '$a' (reference $REF_HASH $REF_ACC)"; cat "$T/rejoin.out"; }

run shrink --keep-going
a=$(field shrink 'final test_acc \([0-9.]*\) .*')
if [ $RC -eq 137 ] && [ -n "$a" ] && awk -v a="$a" -v r="$REF_ACC" 'BEGIN { d = a - r; exit !(d < 0.01 && d > -0.01) }' \
   && grep -q 'params identical on all ranks: yes' "$T/shrink.out"; then
    ok "shrink: 3 survivors finished with test accuracy $a (reference $REF_ACC)"
else bad "shrink: rc $RC, accuracy '$a' (reference $REF_ACC)"; cat "$T/shrink.out"; fi

echo "$fails failure(s)"
[ $fails -eq 0 ]
