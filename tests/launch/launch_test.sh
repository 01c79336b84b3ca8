#!/usr/bin/env bash
# launch_test.sh LAUNCH_TOOL PROBE — behaviour of `tile launch` (see tilelink/src/launch.h).
# LAUNCH_TOOL is a program whose "launch" subcommand is `tile launch` (the real `tile`, or
# tests/launch/launch_main.c); PROBE is tests/launch/probe.c.
set -u
TOOL=$1
PROBE=$2
T=$(mktemp -d /tmp/tile-launch-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok()   { echo "ok   $*"; }
bad()  { echo "FAIL $*"; fails=$((fails + 1)); }
launch() { "$TOOL" launch "$@"; }

# every pid listed in the files DIR/pid.* must be gone (give the kernel a moment)
# is PID still running? (a zombie waiting for its reaper counts as gone)
running() {
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# every pid listed in the files DIR/pid.* must be gone within 2 s
check_gone() {
    local name=$1 dir=$2 alive p f
    for _ in $(seq 20); do
        alive=""
        for f in "$dir"/pid.*; do
            [ -e "$f" ] || continue
            p=$(cat "$f")
            running "$p" && alive="$alive $p"
        done
        [ -z "$alive" ] && break
        sleep 0.1
    done
    if [ -z "$alive" ]; then ok "$name: no process left"
    else bad "$name: processes left:$alive"; for p in $alive; do kill -9 "$p" 2>/dev/null; done; fi
}

wait_files() { # DIR COUNT: wait (up to 10 s) until COUNT pid files exist
    for _ in $(seq 100); do
        [ "$(ls "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# ---- 1. environment -------------------------------------------------------------------
OMPI_COMM_WORLD_RANK=5 launch -n 3 -- "$PROBE" env >"$T/env.out" 2>"$T/env.err"
rc=$?
[ $rc -eq 0 ] && ok "env: exit 0" || bad "env: exit $rc"
good=1
port=$(grep -m1 '^\[0\] rank 0: MASTER_PORT=' "$T/env.out" | sed 's/.*=//')
case "$port" in ''|*[!0-9]*) good=0 ;; esac
for r in 0 1 2; do
    for kv in "RANK=$r" WORLD_SIZE=3 "LOCAL_RANK=$r" LOCAL_WORLD_SIZE=3 GROUP_RANK=0 NODE_RANK=0 \
              MASTER_ADDR=127.0.0.1 "MASTER_PORT=$port" 'OMPI_COMM_WORLD_RANK=(unset)'; do
        grep -qxF "[$r] rank $r: $kv" "$T/env.out" || { good=0; echo "  missing: [$r] rank $r: $kv"; }
    done
done
[ $good -eq 1 ] && ok "env: torchrun variables set, free port $port, other launchers' unset" || bad "env"
[ "$(wc -l <"$T/env.out")" -eq 30 ] && ok "env: 30 lines" || bad "env: $(wc -l <"$T/env.out") lines"

# ---- 1b. the job secret -----------------------------------------------------------------
unset TLINK_SECRET TLINK_SECRET_FILE
launch -n 3 -- "$PROBE" secret >"$T/sec.out" 2>&1
launch -n 1 -- "$PROBE" secret >"$T/sec2.out" 2>&1
s0=$(sed -n 's/^\[0\] rank 0: TLINK_SECRET=//p' "$T/sec.out")
n_same=$(grep -c "TLINK_SECRET=$s0\$" "$T/sec.out")
s2=$(sed -n 's/^\[0\] rank 0: TLINK_SECRET=//p' "$T/sec2.out")
if echo "$s0" | grep -qE '^[0-9a-f]{64}$' && [ "$n_same" -eq 3 ] && [ "$s0" != "$s2" ]; then
    ok "secret: 32 random bytes for the job, the same on every rank, another for the next job"
else bad "secret: '$s0' on $n_same ranks, next job '$s2'"; fi
TLINK_SECRET=users-own-secret-123 launch -n 2 -- "$PROBE" secret >"$T/sec3.out" 2>&1
[ "$(grep -c 'TLINK_SECRET=users-own-secret-123$' "$T/sec3.out")" -eq 2 ] && ok "secret: a given TLINK_SECRET is passed on" \
    || bad "secret: given one"
launch --no-secret -n 2 -- "$PROBE" secret >"$T/sec4.out" 2>&1
[ "$(grep -c 'TLINK_SECRET=(unset)$' "$T/sec4.out")" -eq 2 ] && ok "secret: --no-secret" || bad "secret: --no-secret"

# ---- 2. host list ---------------------------------------------------------------------
launch --hosts localhost:2,127.0.0.1:1 --master-port 29555 -- "$PROBE" env >"$T/hosts.out" 2>&1
rc=$?
good=1
for kv in "[0] rank 0: LOCAL_RANK=0" "[1] rank 1: LOCAL_RANK=1" "[2] rank 2: LOCAL_RANK=0" \
          "[1] rank 1: LOCAL_WORLD_SIZE=2" "[2] rank 2: LOCAL_WORLD_SIZE=1" "[2] rank 2: GROUP_RANK=1" \
          "[2] rank 2: NODE_RANK=1" "[0] rank 0: GROUP_RANK=0" "[2] rank 2: WORLD_SIZE=3" \
          "[1] rank 1: MASTER_PORT=29555" "[2] rank 2: TLINK_LAUNCH_HOST=127.0.0.1"; do
    grep -qxF "$kv" "$T/hosts.out" || { good=0; echo "  missing: $kv"; }
done
[ $rc -eq 0 ] && [ $good -eq 1 ] && ok "hosts: local/group ranks from --hosts" || bad "hosts (rc $rc)"

# ---- 3. partial lines -----------------------------------------------------------------
launch -n 1 -- "$PROBE" partial >"$T/part.out" 2>"$T/part.err"
printf '[0] abc\n[0] def\n' | cmp -s - "$T/part.out" && ok "partial: stdout lines joined" \
    || { bad "partial stdout"; cat -A "$T/part.out"; }
printf '[0] err-no-newline\n' | cmp -s - "$T/part.err" && ok "partial: last partial line ended" \
    || { bad "partial stderr"; cat -A "$T/part.err"; }

# ---- 4. many lines from many ranks stay whole -----------------------------------------
launch -n 4 -- "$PROBE" lines 3000 >"$T/lines.out" 2>"$T/lines.err"
rc=$?
n_ok=$(grep -cE '^\[([0-3])\] line [0-9]+ of rank \1 x+ end$' "$T/lines.out")
e_ok=$(grep -cE '^\[([0-3])\] eline [0-9]+ of rank \1$' "$T/lines.err")
[ $rc -eq 0 ] && [ "$n_ok" -eq 12000 ] && [ "$(wc -l <"$T/lines.out")" -eq 12000 ] && [ "$e_ok" -eq 12000 ] \
    && ok "lines: 4x3000 stdout + stderr lines intact" || bad "lines: rc $rc, $n_ok stdout, $e_ok stderr ok"

# a line longer than the launcher's buffer comes out whole, prefixed once
launch -n 1 -- "$PROBE" longline 300000 >"$T/long.out"
[ "$(wc -l <"$T/long.out")" -eq 1 ] && [ "$(head -c 4 "$T/long.out")" = "[0] " ] \
    && [ "$(tr -d '\n' <"$T/long.out" | wc -c)" -eq 300004 ] && ok "long line: one line, one prefix" \
    || bad "long line: $(wc -lc <"$T/long.out")"

# ---- 5. first failing rank's status; the others are stopped ---------------------------
mkdir "$T/f"
start=$(date +%s.%N)
launch -n 4 --grace 2 -- "$PROBE" fail 2 7 "$T/f" >"$T/fail.out" 2>"$T/fail.err"
rc=$?
dur=$(echo "$(date +%s.%N) - $start" | bc)
[ $rc -eq 7 ] && ok "fail: exit 7 from rank 2" || bad "fail: exit $rc"
grep -q 'rank 2 exited with status 7' "$T/fail.err" && ok "fail: reported" || bad "fail: no report"
[ "$(echo "$dur < 5" | bc)" -eq 1 ] && ok "fail: others stopped (${dur}s)" || bad "fail: took ${dur}s"
check_gone fail "$T/f"

launch -n 3 -- "$PROBE" segv 1 >/dev/null 2>"$T/segv.err"
rc=$?
[ $rc -eq 139 ] && grep -q 'rank 1 was killed by signal 11' "$T/segv.err" && ok "segv: exit 128+11" || bad "segv: exit $rc"

launch -n 2 -- "$T/no-such-program" >"$T/nx.out" 2>"$T/nx.err"
rc=$?
[ $rc -eq 127 ] && grep -q "cannot run '$T/no-such-program'" "$T/nx.err" && ok "missing program: 127 + message" \
    || bad "missing program: exit $rc"

launch -n 2 -- true && ok "true: exit 0" || bad "true: nonzero"

# ---- 6. signal forwarding -------------------------------------------------------------
mkdir "$T/s"
"$TOOL" launch -n 3 -- "$PROBE" term "$T/s" >"$T/sig.out" 2>"$T/sig.err" &
lp=$!
if wait_files "$T/s" 3; then
    kill -TERM $lp
    wait $lp
    rc=$?
    [ $rc -eq 143 ] && ok "sigterm: launcher exits 128+15" || bad "sigterm: exit $rc"
    good=1
    for r in 0 1 2; do grep -qxF "[$r] rank $r got SIGTERM" "$T/sig.out" || good=0; done
    [ $good -eq 1 ] && ok "sigterm: every rank got it" || { bad "sigterm: not forwarded"; cat "$T/sig.out"; }
    check_gone sigterm "$T/s"
else
    bad "sigterm: ranks did not start"; kill -9 $lp
fi

mkdir "$T/i"
"$TOOL" launch -n 2 -- "$PROBE" term "$T/i" >"$T/int.out" 2>&1 &
lp=$!
if wait_files "$T/i" 2; then
    kill -INT $lp
    wait $lp
    rc=$?
    [ $rc -eq 130 ] && ok "sigint: launcher exits 128+2" || bad "sigint: exit $rc"
    check_gone sigint "$T/i"
else
    bad "sigint: ranks did not start"; kill -9 $lp
fi

# ---- 7. stubborn ranks: timeout, then SIGKILL after the grace period ------------------
mkdir "$T/k"
start=$(date +%s.%N)
launch -n 2 --timeout 1 --grace 0.5 -- "$PROBE" stubborn "$T/k" >/dev/null 2>"$T/stub.err"
rc=$?
dur=$(echo "$(date +%s.%N) - $start" | bc)
[ $rc -eq 124 ] && ok "timeout: exit 124" || bad "timeout: exit $rc"
grep -q 'sending SIGKILL' "$T/stub.err" && [ "$(echo "$dur < 4" | bc)" -eq 1 ] \
    && ok "timeout: SIGKILL after grace (${dur}s)" || bad "timeout: ${dur}s"
check_gone stubborn "$T/k"

# ---- 8. nothing a rank started outlives the job ---------------------------------------
mkdir "$T/g"
launch -n 2 -- "$PROBE" spawn "$T/g" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] && ok "spawn: exit 0" || bad "spawn: exit $rc"
wait_files "$T/g" 2 || true
check_gone spawn "$T/g"

# the launcher itself SIGKILLed: ranks die with it
mkdir "$T/d"
"$TOOL" launch -n 2 -- "$PROBE" stubborn "$T/d" >/dev/null 2>&1 &
lp=$!
if wait_files "$T/d" 2; then
    kill -9 $lp; wait $lp 2>/dev/null
    check_gone "launcher killed" "$T/d"
else
    bad "launcher killed: ranks did not start"; kill -9 $lp
fi

# ---- 9. usage errors: clear message, exit 2, nothing started --------------------------
err_case() { # NAME EXPECTED-TEXT ARGS...
    local name=$1 want=$2; shift 2
    launch "$@" >"$T/e.out" 2>"$T/e.err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$want" "$T/e.err"; then ok "error: $name"
    else bad "error: $name (rc $rc)"; cat "$T/e.err"; fi
}
err_case "no command" "no command given" -n 2
err_case "bad -n" "bad value 'x'" -n x -- true
err_case "bad count" "bad rank count '0'" --hosts localhost:0 -- true
err_case "mismatch" "-n 3 does not match the 2 ranks" -n 3 --hosts localhost:2 -- true
err_case "twice" "listed twice" --hosts localhost:1,localhost:1 -- true
err_case "remote" "remote launch (ssh) is not implemented" --hosts localhost:1,far.example.org:1 -- true
err_case "netns without hosts" "--netns needs --hosts" --netns -n 2 -- true
err_case "missing netns" "network namespace 'tile-no-such-ns' not found" --netns --hosts tile-no-such-ns:1 -- true
err_case "restarts" "--max-restarts: bad value '-1'" --max-restarts -1 -n 1 -- true

# elastic: rank 1 fails on its first run (killed by SIGKILL), its replacement succeeds
out=$(launch --max-restarts 2 -n 3 -- sh -c 'echo "run $TLINK_RESTART_COUNT of rank $RANK max $TLINK_MAX_RESTARTS store $MASTER_PORT"; if [ "$RANK" = 1 ] && [ "$TLINK_RESTART_COUNT" = 0 ]; then kill -9 $$; fi; exit 0' 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "rank 1 was killed by signal 9 (Killed): restarting it (restart 1 of 2)" <<<"$out" \
   && grep -q '^\[1\] run 1 of rank 1 max 2' <<<"$out" && [ "$(grep -c '^\[.\] run 0' <<<"$out")" -eq 3 ]; then
    ok "elastic: a killed rank is restarted and the job succeeds"
else bad "elastic restart (rc $rc)"; echo "$out"; fi
# --keep-going: a failed rank does not stop the others; the status is still the failure's
out=$(launch --keep-going -n 3 -- sh -c 'if [ "$RANK" = 1 ]; then exit 5; fi; sleep 0.5; echo "rank $RANK finished"' 2>&1)
rc=$?
if [ $rc -eq 5 ] && grep -q "the other 2 rank(s) continue" <<<"$out" && grep -q '^\[0\] rank 0 finished' <<<"$out" \
   && grep -q '^\[2\] rank 2 finished' <<<"$out"; then
    ok "keep-going: the others finish, the exit status is the failed rank's"
else bad "keep-going (rc $rc)"; echo "$out"; fi
# elastic mode hosts the store on MASTER_PORT: a client can use it while the ranks run
out=$(launch --max-restarts 1 -n 1 -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/$MASTER_PORT && echo "store reachable on $MASTER_PORT"' 2>&1)
rc=$?
[ $rc -eq 0 ] && grep -q "store reachable" <<<"$out" && ok "elastic: the launcher hosts the store" \
    || { bad "elastic store (rc $rc)"; echo "$out"; }
# the restarts run out: the job fails with the rank's status
out=$(launch --max-restarts 1 -n 2 -- sh -c 'if [ "$RANK" = 0 ]; then exit 3; fi; sleep 5' 2>&1)
rc=$?
if [ $rc -eq 3 ] && grep -q "restarting it (restart 1 of 1)" <<<"$out" && grep -q "rank 0 exited with status 3$" <<<"$out"; then
    ok "elastic: after K restarts the job fails with the rank's status"
else bad "elastic exhaustion (rc $rc)"; echo "$out"; fi
err_case "unknown option" "unknown option '--bogus'" --bogus -- true

echo "$fails failure(s)"
[ $fails -eq 0 ]
