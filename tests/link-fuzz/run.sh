#!/bin/sh
# run.sh SRC OUT NAME [SECONDS] — builds the harnesses if needed (once for both tests: a lock),
# then runs fuzz_NAME for SECONDS (60) on a copy of fuzz/corpus/link-NAME. Fails on a finding
# (the input is printed as base64 and kept in OUT/artifacts-NAME), skips (77) without clang.
src="$1"; out="$2"; name="$3"; secs="${4:-${TLINK_FUZZ_SECONDS:-60}}"
mkdir -p "$out"
if command -v flock >/dev/null 2>&1; then
    flock "$out/.lock" sh "$(dirname "$0")/build.sh" "$src" "$out"
else
    sh "$(dirname "$0")/build.sh" "$src" "$out"
fi
rc=$?
[ $rc -eq 0 ] || exit $rc
work="$out/corpus-$name"; art="$out/artifacts-$name"
rm -rf "$work"; mkdir -p "$work" "$art"
cp "$src/fuzz/corpus/link-$name"/* "$work"/
"$out/fuzz_$name" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=8192 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$art/" "$work" 2>"$out/fuzz-$name.log"
rc=$?
grep -E "^#[0-9]+ +DONE|stat::number_of_executed_units|cov:" "$out/fuzz-$name.log" | tail -3
if [ $rc -ne 0 ]; then
    grep -A30 -E "ERROR|runtime error|deadly signal" "$out/fuzz-$name.log" | head -60
    for f in "$art"/*; do [ -f "$f" ] && { echo "finding: $f"; base64 "$f"; }; done
    exit 1
fi
echo "fuzz_$name: no finding in $secs s"
