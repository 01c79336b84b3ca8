#!/usr/bin/env bash
# bench/link/churn_ab.sh LOOPS AB-ARGS... — bench/link/ab.sh under a synthetic load of the kind
# that hurt TileLink's small-message latency on the shared build machine (issue 6): LOOPS
# background loops, each starting short-lived shells that count to 300 and pausing 0-4 ms between
# them (compiler-like churn: many wake-ups and new processes, not a few steady spinners, which
# did not reproduce it). The loops run only while ab.sh runs and are stopped after it.
# Example (bench/results/link-wait-churn-2026-11-30-s4.md):
#   bench/link/churn_ab.sh 4 9 shm:2 "-b 8 -e 8 -w 200 -i 3000" "TLINK_COLOC_MOVE=0" "X=1"
set -u
L=$1; shift
pids=()
for k in $(seq "$L"); do
    bash -c 'while :; do sh -c "i=0; while [ \$i -lt 300 ]; do i=\$((i+1)); done"; sleep 0.00$((RANDOM % 5)); done' &
    pids+=($!)
done
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap stop EXIT
sleep 2
echo "churn: $L loops; load before $(cut -d' ' -f1-3 /proc/loadavg)"
"$(dirname "$0")/ab.sh" "$@"
