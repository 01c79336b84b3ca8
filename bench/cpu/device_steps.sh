# bench/cpu/device_steps.sh — sourced by the device scripts (amxa_device.sh, pack_device.sh):
# every step of a run under a common deadline. Needs T0 (start, date +%s), DEADLINE (s) and L
# (the log file) set by the caller.
# tmo N: N seconds, or what is left before the deadline; 0 = no time left (skip the step)
tmo() {
  left=$((DEADLINE - ($(date +%s) - T0)))
  if [ "$left" -lt 5 ]; then echo 0; elif [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
step() { # NAME SECONDS CMD...: run CMD under the step's timeout, log its rc and duration
  name=$1; s=$(tmo "$2"); shift 2
  if [ "$s" = 0 ]; then echo "== $name: SKIPPED (deadline)" >> $L; return 1; fi
  t=$(date +%s)
  timeout "$s" "$@"
  rc=$?
  echo "== $name: rc=$rc in $(($(date +%s) - t)) s (timeout $s s)" >> $L
  return $rc
}
