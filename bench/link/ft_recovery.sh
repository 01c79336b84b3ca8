#!/usr/bin/env bash
# bench/link/ft_recovery.sh — how fast training recovers from `kill -9` of a rank, measured on
# the training example examples/train_mlp.c --ft (scikit-learn's digits; WORKLOAD=train_mlp,
# the default) or on examples/ft_train.c (WORKLOAD=ft_train: synthetic data, a sleep per
# step), 4 ranks on one host, and compared, in the same run, with the restart people do
# without in-place recovery: the whole job is stopped and relaunched from its last on-disk
# checkpoint (torchrun-style).
#
# For each trial a random rank is killed at a random time (0.6..2.0 s into training):
#   rejoin    tile launch --max-restarts 1: the launcher restarts the rank, the survivors
#             tlink_comm_rejoin, buddy restore; the final model must equal the failure-free
#             run's bit for bit;
#   shrink    tile launch --keep-going: the survivors tlink_comm_shrink, buddy restore, go on
#             with 3 ranks;
#   restart   tile launch (the job dies with the rank) then a new tile launch that resumes
#             from the file written every 10 steps by rank 0 (tlink_ckpt_write_file).
# And, as root with network namespaces (NO_NETNS=1 skips it):
#   cut       3 namespace hosts x 2 ranks over TCP (tile launch --netns --keep-going); the
#             link of host 2 goes down at a random time (no RST, no FIN): the others find out
#             by heartbeats, shrink to 4 ranks and go on.
# Times are wall-clock, from the kill (taken by this script just before kill -9) to the
# first "detected" line and to the first completed step afterwards.
#
# Environment: BUILD (build dir with bin/tile, bin/train_mlp and tests/chaos/ft_train;
# default build), WORKLOAD, TRIALS (5), EPOCHS (train_mlp: 30), STEPS/STEPMS (ft_train: 400,
# 10), SEED, OUT (report file, default bench/results/link-ft-<date>.md).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TILE=$BUILD/bin/tile
WORKLOAD=${WORKLOAD:-train_mlp}
EPOCHS=${EPOCHS:-30}
TRIALS=${TRIALS:-5}
STEPS=${STEPS:-400}
STEPMS=${STEPMS:-10}
SEED=${SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
DATE=$(date +%Y-%m-%d)
OUT=${OUT:-$ROOT/bench/results/link-ft-$DATE.md}
DATA=$BUILD/data/digits.bin
case $WORKLOAD in
    train_mlp)
        FT=$BUILD/bin/train_mlp
        [ -s "$DATA" ] || python3 "$ROOT/scripts/prepare_digits.py" "$DATA" >&2
        FTARGS=(--data "$DATA" --epochs "$EPOCHS" --quiet --ft)
        DESC="examples/train_mlp.c --ft: MLP 64-64-10 on scikit-learn's digits (1437 train / 360 test), batch 64, $EPOCHS epochs (690 steps at 30), f32 ring all-reduce"
        ;;
    ft_train)
        FT=$BUILD/tests/chaos/ft_train
        FTARGS=(--steps "$STEPS" --step-ms "$STEPMS")
        DESC="examples/ft_train.c: MLP 32-32-4 on synthetic clusters, $STEPS steps with a ${STEPMS} ms sleep each (standing in for a longer forward/backward)"
        ;;
    *) echo "WORKLOAD is train_mlp or ft_train" >&2; exit 2 ;;
esac
[ -x "$TILE" ] && [ -x "$FT" ] || { echo "build first: $TILE and $FT are needed" >&2; exit 1; }
final_of() { grep -h 'final' "$@" | grep -v 'ft [0-9]' | tail -1 | sed 's/^\[[0-9]*\] //' || true; }
sum_of() { grep -h 'checksum\|params hash' "$@" | tail -1 | sed -n 's/.*\(checksum\|params hash\) \([0-9a-f]*\).*/\2/p' || true; }
acc_of() { final_of "$@" | sed -n 's/.*accuracy \([0-9.]*\)%.*/\1%/p; s/.*test_acc \([0-9.]*\) .*/\1/p'; }
ranks_of() { # the size of the communicator that finished: "on N ranks", or the last "(N ranks)"
    local r
    r=$(final_of "$@" | sed -n 's/.*on \([0-9]*\) ranks.*/\1/p')
    [ -z "$r" ] && r=$(grep -ho '([0-9]* ranks)' "$@" | tail -1 | tr -dc 0-9)
    echo "${r:-4}"
}
T=$(mktemp -d /tmp/tile-ft-bench.XXXXXX)
NSP=""
cleanup() { [ -n "$NSP" ] && bash "$ROOT/scripts/netns.sh" down -p "$NSP" >/dev/null 2>&1; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
N=4
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
after() { # FILE T PATTERN: time of the first timeline line after T matching PATTERN
    awk -v t="$2" -v pat="$3" '$2 == "ft" && $3 > t && $0 ~ pat { print $3; exit }' "$1"
}
CMDS=""
run_cmd() { CMDS="$CMDS$*"$'\n'; }

# failure-free reference
"$TILE" launch -n $N -- "$FT" "${FTARGS[@]}" >"$T/ref.out" 2>&1
REF="$(final_of "$T/ref.out") (params $(sum_of "$T/ref.out"))"
REF_SUM=$(sum_of "$T/ref.out")
run_cmd "$TILE launch -n $N -- $FT ${FTARGS[*]}"
echo "reference: $REF" >&2

rows=""
declare -A SUMS
trial() { # MODE I
    local mode=$1 i=$2 d="$T/$1.$2"
    mkdir -p "$d"
    local args=() ftargs=("${FTARGS[@]}" --pid-dir "$d")
    local n=$N
    case $mode in
        rejoin) args=(-n $N --max-restarts 1) ;;
        shrink) args=(-n $N --keep-going) ;;
        restart) args=(-n $N); ftargs+=(--ckpt-file "$d/model.ckpt") ;;
        cut) n=6; args=(--netns --hosts "${NSP}0:2,${NSP}1:2,${NSP}2:2" --keep-going) ;;
    esac
    "$TILE" launch --timeout 120 "${args[@]}" -- "$FT" "${ftargs[@]}" >"$d/out" 2>&1 &
    local job=$!
    for _ in $(seq 200); do [ "$(ls "$d"/rank*.pid 2>/dev/null | wc -l)" -ge $n ] && break; sleep 0.05; done
    local delay victim pid tk
    delay=$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.6 + 1.4 * r / 32767 }')
    victim=$((RANDOM % N))
    sleep "$delay"
    if [ "$mode" = cut ]; then
        victim="host 2 (ranks 4, 5)"
        tk=$(now)
        ip netns exec "${NSP}2" ip link set eth0 down
    else
        pid=$(cat "$d/rank$victim.pid")
        tk=$(now)
        kill -9 "$pid"
    fi
    local rc=0
    wait $job || rc=$?
    if [ "$mode" = restart ]; then
        # the job is gone: relaunch it at once; it resumes from the file
        "$TILE" launch --timeout 120 -n $N -- "$FT" "${ftargs[@]}" >"$d/out2" 2>&1 || rc=$?
        cat "$d/out2" >>"$d/out"
    fi
    local td ts det rec final sum
    td=$(after "$d/out" "$tk" "detected")
    if [ "$mode" = restart ]; then
        # only the relaunched job counts (the first one's ranks may still step before the
        # launcher's SIGTERM reaches them)
        ts=$(after "$d/out2" "$tk" "step [0-9]+ done")
        td=""
    else
        ts=$(after "$d/out" "$tk" "step [0-9]+ done")
    fi
    det=$([ -n "$td" ] && sub "$td" "$tk" || echo "-")
    rec=$([ -n "$ts" ] && sub "$ts" "$tk" || echo "FAILED")
    final=$(final_of "$d/out")
    sum=$(sum_of "$d/out")
    local same="no"
    [ "$sum" = "$REF_SUM" ] && same="yes"
    local step
    step=$(grep -m1 -o 'detected at step [0-9]*' "$d/out" | awk '{ print $4 }' || true)
    if [ "$mode" = restart ]; then
        # where the killed job was (its survivors' "detected at step", when they got to say
        # it before the launcher stopped them) and where the relaunch resumed
        local fstep
        fstep=$(grep -m1 -o 'loaded step [0-9]*' "$d/out2" | awk '{ print $3 }' || true)
        step="${step:-?} (file: ${fstep:-?})"
    fi
    echo "$mode $i: rank $victim killed at ${delay}s (step ${step:-?}): detected after $det s, next step after $rec s; $final" >&2
    rows="$rows| $mode | $i | $victim | ${step:-?} | $det | $rec | $(acc_of "$d/out") | $(ranks_of "$d/out") | $same |"$'\n'
    echo "$mode $rec" >>"$T/rec"
    if [ "$i" = 1 ]; then
        run_cmd "$TILE launch --timeout 120 ${args[*]} -- $FT ${ftargs[*]}   # then kill -9 of a random rank's pid (cut: ip link set eth0 down in host 2)"
        if [ "$mode" = restart ]; then run_cmd "$TILE launch --timeout 120 -n $N -- $FT ${ftargs[*]}   # relaunch: resumes from the file"; fi
    fi
}
MODES="rejoin shrink restart"
if [ -z "${NO_NETNS:-}" ] && [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null 2>&1; then
    NSP=tlf$$
    if bash "$ROOT/scripts/netns.sh" up -p "$NSP" >"$T/up.out" 2>&1; then
        MODES="$MODES cut"
        # the cut trials run with the library defaults except a short timeout, so that the
        # ranks of the cut host give up soon (they cannot reach the store)
    else NSP=""; echo "no network namespaces here: no cut trials" >&2; fi
fi
for i in $(seq "$TRIALS"); do
    for mode in $MODES; do
        if [ "$mode" = cut ]; then
            TLINK_TIMEOUT=8 trial cut "$i"
            ip netns exec "${NSP}2" ip link set eth0 up
        else trial $mode "$i"; fi
    done
done

stat() { # MODE -> "median max"
    awk -v m="$1" '$1 == m && $2 != "FAILED" { v[n++] = $2 } END {
        if (!n) { print "- -"; exit }
        for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        printf "%.3f %.3f", (n % 2 ? v[int(n/2)] : (v[n/2-1] + v[n/2]) / 2), v[n-1] }' "$T/rec"
}
read -r rj_med rj_max <<<"$(stat rejoin)"
read -r sh_med sh_max <<<"$(stat shrink)"
read -r rs_med rs_max <<<"$(stat restart)"
read -r ct_med ct_max <<<"$(stat cut)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'; }
{
    echo "# TileLink fault tolerance: recovery after kill -9 — $DATE"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores usable"
    echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg) (shared machine)"
    echo "- workload: $DESC; $N ranks on one host (shared memory)"
    echo "  (cut: 6 ranks on 3 namespace hosts); buddy checkpoint (tlink_ckpt_save) after every step;"
    echo "  restart mode: rank 0 writes a file checkpoint every 10 steps. $TRIALS trials per mode,"
    echo "  random victim and kill time, seed $SEED."
    echo "- reference (no failure): $REF"
    echo
    echo "## Summary: time from kill -9 to the next completed training step"
    echo
    echo "| mode | median s | max s | whole-job restart / this (median) |"
    echo "|---|---|---|---|"
    echo "| rejoin (launcher restarts the rank) | $rj_med | $rj_max | $(ratio "$rs_med" "$rj_med")x |"
    echo "| shrink (survivors go on) | $sh_med | $sh_max | $(ratio "$rs_med" "$sh_med")x |"
    echo "| restart (whole job, from the file) | $rs_med | $rs_max | 1.0x |"
    if [ -n "$NSP" ]; then
        echo "| cut: host 2 of 3 loses its link (6 ranks, TCP between namespaces; heartbeats) | $ct_med | $ct_max | - |"
    fi
    echo
    echo "Restart is timed to the first step the relaunched job completes; it then redoes the"
    echo "steps since its file checkpoint (\"killed at step\" vs \"file\" below), which the times"
    echo "above do not include. Detection in the in-place modes is the shared-memory liveness"
    echo "check (the victim's /proc entry, polled every 25 ms while waiting)."
    echo
    echo "These small jobs start in ~0.1 s (a 0.1 MB data set, no model build, no GPU context), so a"
    echo "whole-job restart costs little here; in a real job the restart pays all of that again"
    echo "(seconds to minutes), while in-place recovery's cost does not depend on it. The cut rows"
    echo "run without netem (the kernel here has no sch_netem); their time is the heartbeat timeout"
    echo "(1.5 s) plus the shrink and one step."
    echo
    echo "## Trials"
    echo
    echo "| mode | trial | victim | killed at step | detected after s | next step after s | final accuracy | final ranks | model = reference |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf "%s" "$rows"
    echo
    echo "## Commands"
    echo
    echo '```'
    echo "bench/link/ft_recovery.sh   # WORKLOAD=$WORKLOAD TRIALS=$TRIALS SEED=$SEED (EPOCHS=$EPOCHS | STEPS=$STEPS STEPMS=$STEPMS)"
    printf "%s" "$CMDS"
    echo '```'
} >"$OUT"
echo "wrote $OUT" >&2
