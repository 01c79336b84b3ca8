#!/bin/sh
# bench/cpu/pool_ab.sh — interleaved A/B of two thread-pool sources with bench/cpu/pool_wake.c.
#   sh bench/cpu/pool_ab.sh OLD_THREADPOOL_C [rounds] [threads]
# OLD_THREADPOOL_C: the "before" src/runtime/threadpool.c (e.g. `git show main:src/runtime/threadpool.c > /tmp/old.c`);
# "after" is this checkout's. Each round runs every case once with A then B (alternating
# order between rounds); prints each run and the per-case medians (us per call).
set -e
OLD=$(readlink -f "$1"); R=${2:-5}; TH=${3:-}
CC=${CC:-cc}
D=${TMPDIR:-/tmp}/pool_ab.$$; mkdir -p $D
for v in A B; do
  src=src/runtime/threadpool.c; [ $v = A ] && src=$OLD
  $CC -std=gnu11 -O2 -Isrc -Isrc/runtime -Iinclude bench/cpu/pool_wake.c "$src" src/core/core.c -o $D/$v -lpthread -lm
done
[ -n "$TH" ] && export TILE_NUM_THREADS=$TH
echo "# pool_ab $(date -u +%FT%TZ) $(uname -n) nproc=$(nproc) threads=${TH:-all} load: $(cat /proc/loadavg)"
for r in $(seq 1 $R); do
  for c in "3000 0 0" "3000 20 0" "1000 20 30" "300 20 200"; do
    if [ $((r % 2)) = 1 ]; then o="A B"; else o="B A"; fi
    for v in $o; do echo "$v $c $($D/$v $c)"; done
  done
done | tee $D/log
echo "# medians (us per call), A = before, B = after"
awk '{k=$2" "$3" "$4; v=$(NF-6); a[$1" "k]=a[$1" "k]" "v} END {for (x in a) print x, a[x]}' $D/log | sort -k2,2n -k3,3n -k4,4n -k1,1 |
  while read v j w g rest; do
    m=$(echo $rest | tr ' ' '\n' | sort -g | awk '{x[NR]=$1} END {print (NR%2)?x[(NR+1)/2]:(x[NR/2]+x[NR/2+1])/2 " (" x[1] "-" x[NR] ")"}')
    echo "$v jobs=$j work=${w}us gap=${g}us: $m"
  done
echo "# load after: $(cat /proc/loadavg)"
rm -rf $D
