#!/bin/bash
# status_test.sh TOOL DEMO — `tile link-status` on a running job (tile launch, 3 ranks) whose
# rank 1 stalls in its own code while the others wait in an all-reduce: asked with --pid of a
# rank (store address and the secret tile launch generated come from its environment), it
# names rank 1 as behind and the collective; without the secret the store refuses it.
TOOL="$1"; DEMO="$2"
T=$(mktemp -d)
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
unset TLINK_SECRET TLINK_SECRET_FILE
TLINK_DEMO_MARK="$T/mark" TLINK_SOFT_TIMEOUT=0 timeout 60 "$TOOL" launch -n 3 -- "$DEMO" demo 1 4 >"$T/job.out" 2>&1 &
job=$!
for _ in $(seq 200); do [ -s "$T/mark" ] && break; sleep 0.05; done
pid=$(cat "$T/mark" 2>/dev/null)
if [ -z "$pid" ]; then
    bad "the demo job did not reach its stall"; cat "$T/job.out"
else
    sleep 0.5
    "$TOOL" link-status --pid "$pid" -t 5 >"$T/st.out" 2>&1; rc=$?
    cat "$T/st.out"
    [ $rc -eq 1 ] && grep -q "rank 1 is behind: its last call is allreduce #3" "$T/st.out" \
        && grep -q "the others are in allreduce #4" "$T/st.out" && grep -q "^rank 0 (pid .*): in allreduce #4" "$T/st.out" \
        && ok "link-status --pid names the stalled rank and the collective" || bad "link-status --pid (rc $rc)"
    # the same store without the job's secret: refused
    port=$(tr '\0' '\n' < /proc/$pid/environ | sed -n 's/^MASTER_PORT=//p')
    "$TOOL" link-status --store 127.0.0.1:$port -t 2 >"$T/st2.out" 2>&1; rc=$?
    [ $rc -eq 3 ] && grep -q "TLINK_SECRET" "$T/st2.out" && ok "without the secret: refused (rc 3)" \
        || { bad "without the secret (rc $rc)"; cat "$T/st2.out"; }
fi
wait $job; rc=$?
[ $rc -eq 0 ] && ok "the job completes after the stall" || { bad "job rc $rc"; cat "$T/job.out"; }
"$TOOL" link-status --bogus >/dev/null 2>&1; [ $? -eq 2 ] && ok "usage error" || bad "usage error"
rm -rf "$T"
echo "$fails failure(s)"
[ $fails -eq 0 ]
