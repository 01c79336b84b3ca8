#!/usr/bin/env bash
# portability.sh — the portability table of every example program: `tile run --target all`
# (each available target from the same inputs, its error against the interpreter and its
# median time). Example arguments come from tests/opencl/examples.txt.
#   scripts/portability.sh [TILE] [OUT.md]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tile=${1:-$root/build/bin/tile}
out=${2:-/dev/stdout}
status=0
{
  echo "# Portability: every example on every target, $(date +%F)"
  echo
  echo "Command: \`scripts/portability.sh\` — for each example, \`tile run ARGS --target all --iters 3\`."
  echo "Targets here:"
  echo '```'
  "$tile" devices
  echo '```'
  while IFS='|' read -r name args; do
    case "$name" in \#*|"") continue ;; esac
    name=$(echo "$name" | tr -d ' ')
    echo
    echo "## $name"
    echo '```'
    # shellcheck disable=SC2086
    (cd "$root" && "$tile" run $args --target all --iters 3 2>&1) || status=1
    echo '```'
  done <"$root/tests/opencl/examples.txt"
} >"$out"
exit $status
