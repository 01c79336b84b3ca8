#!/bin/sh
# bench/link_gpu/run.sh — TileLink's device collectives against NCCL, same machine, same run.
#   bench/link_gpu/run.sh [BUILD_DIR] [OUT_DIR]      (on a machine with 2+ GPUs)
# Builds (Release), then for each collective runs `tile link-bench -n ${NP:-2} --device cuda` and
# NCCL through torch.distributed (bench/link_gpu/nccl_bench.py), NP ranks on NP GPUs (default 2), with the
# same sizes and iteration counts; writes the logs and a markdown table per collective with
# the ratios (compare.py) into OUT_DIR. NCCL_NVLS_ENABLE=0 (NVLink multicast stays off).
# Environment: NP (ranks, one per GPU; default 2), COLLS (allreduce allgather reduce_scatter alltoall broadcast), MAXSIZE (8G for
# allreduce, 1G for the others), ALGOS (extra forced allreduce algorithms: "oneshot twoshot ce"),
# FORCE (extra forced runs compared with NCCL: "allreduce:ring allgather:ring broadcast:chain"),
# NCCL_ONCE=1 (one torch.distributed launch for all COLLS, up to MAXSIZE: saves its start-up).
set -eu
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-rel}
out=${2:-$root/bench/results/link-gpu-raw}
mkdir -p "$out"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" -j16 tile_cli >/dev/null
tile=$build/bin/tile
{ date -u; hostname; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvidia-smi topo -m 2>/dev/null || true; } > "$out/machine.txt" 2>&1
colls=${COLLS:-allreduce allgather reduce_scatter alltoall broadcast}
if [ "${NCCL_ONCE:-0}" = 1 ]; then
  echo "== NCCL: $colls (8 B .. ${MAXSIZE:-1G})"
  timeout 300 python3 -m torch.distributed.run --nproc_per_node ${NP:-2} "$here/nccl_bench.py" -c "$(echo $colls | tr ' ' ',')" -o "$out" -b 8 -e ${MAXSIZE:-1G} -f 2 -w 5 -i 20 > "$out/nccl-all.log" 2>&1 || echo "nccl failed: $(tail -3 "$out/nccl-all.log")"
fi
for c in $colls; do
  e=${MAXSIZE:-}
  [ -n "$e" ] || { [ "$c" = allreduce ] && e=8G || e=${OTHERMAX:-1G}; }
  echo "== $c (8 B .. $e)"
  timeout 240 "$tile" link-bench -n ${NP:-2} --device cuda -c $c -b 8 -e $e -f 2 -w 5 -i 20 > "$out/ours-$c.log" 2>&1 || echo "ours $c failed: $(tail -3 "$out/ours-$c.log")"
  [ "${NCCL_ONCE:-0}" = 1 ] || timeout 240 python3 -m torch.distributed.run --nproc_per_node ${NP:-2} "$here/nccl_bench.py" -c $c -b 8 -e $e -f 2 -w 5 -i 20 > "$out/nccl-$c.log" 2>&1 || echo "nccl $c failed: $(tail -3 "$out/nccl-$c.log")"
  python3 "$here/compare.py" "$out/ours-$c.log" "$out/nccl-$c.log" > "$out/compare-$c.md" || true
  cat "$out/compare-$c.md"
done
for fa in ${FORCE:-}; do
  c=${fa%%:*} a=${fa#*:}
  echo "== $c forced $a"
  timeout 200 "$tile" link-bench -n ${NP:-2} --device cuda -c $c -a $a -b 8 -e ${MAXSIZE:-1G} -f 2 -w 5 -i 20 > "$out/ours-$c-$a.log" 2>&1 || echo "ours $c $a failed: $(tail -3 "$out/ours-$c-$a.log")"
  python3 "$here/compare.py" "$out/ours-$c-$a.log" "$out/nccl-$c.log" > "$out/compare-$c-$a.md" || true
  cat "$out/compare-$c-$a.md"
done
for a in ${ALGOS:-}; do
  echo "== allreduce forced $a"
  timeout 200 "$tile" link-bench -n ${NP:-2} --device cuda -c allreduce -a $a -b 8 -e ${MAXSIZE:-1G} -f 4 -w 5 -i 20 > "$out/ours-allreduce-$a.log" 2>&1 || echo "ours $a failed: $(tail -3 "$out/ours-allreduce-$a.log")"
  cat "$out/ours-allreduce-$a.log"
done
