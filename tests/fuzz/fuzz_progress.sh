#!/bin/sh
# fuzz.cli_progress: the output format of `tile fuzz` (not its timing): the summary line on
# stdout, the progress lines on stderr (--progress 0: one after every program, consistent with
# the summary), none with --quiet, the --count form of the line, and on a terminal one line
# redrawn in place.
set -eu
tile="$1"; out="$2"
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out/stdout"; echo "--- stderr"; cat "$out/stderr"; exit 1; }
num='[0-9]+'
summary="^tile fuzz: ($num) programs generated \\($num plain, $num tile\\), ($num) run, $num generator rejects, [0-9]+\\.[0-9] s; interp: $num mismatches, $num failures; cpu: $num mismatches, $num failures\$"
progress="^tile fuzz: ($num) programs, ($num) run, $num rejects; interp: $num mismatches, $num failures; cpu: $num mismatches, $num failures; $num s, $num s left\$"

"$tile" fuzz --seconds 2 --seed 5 --targets interp,cpu --out "$out/r1" --progress 0 >"$out/stdout" 2>"$out/stderr" || fail "exit $?"
tail -1 "$out/stdout" | grep -Eq "$summary" || fail "summary line"
grep -Eq "$progress" "$out/stderr" || fail "no progress line"
grep -v "generator reject" "$out/stderr" | grep -Evq "$progress" && fail "a stderr line that is not a progress line"
n=$(tail -1 "$out/stdout" | sed -E "s/$summary/\\1 \\2/")
p=$(tail -1 "$out/stderr" | sed -E "s/$progress/\\1 \\2/")
[ "$n" = "$p" ] || fail "last progress line ($p) disagrees with the summary ($n)"
[ "$(grep -Ec "$progress" "$out/stderr")" = "${n%% *}" ] || fail "not one progress line per program"

"$tile" fuzz --count 2 --seed 5 --targets interp,cpu --out "$out/r2" --progress 0 >"$out/stdout" 2>"$out/stderr" || fail "exit $?"
grep -Eq "^tile fuzz: seed 5, targets interp,cpu, 2 programs\$" "$out/stdout" || fail "--count header"
tail -1 "$out/stderr" | grep -Eq "^tile fuzz: 2/2 programs, $num run, $num rejects; .*; $num s, ~0 s left\$" || fail "--count progress line"

"$tile" fuzz --count 1 --seed 5 --targets interp,cpu --out "$out/r3" --quiet >"$out/stdout" 2>"$out/stderr" || fail "exit $?"
[ ! -s "$out/stderr" ] || fail "--quiet printed on stderr"
tail -1 "$out/stdout" | grep -Eq "$summary" || fail "summary line with --quiet"

# on a terminal (util-linux `script` gives it one): the line is redrawn in place (carriage
# return, erase to the end of the line, no newline) and erased before the summary
if command -v script >/dev/null 2>&1; then
  script -qc "\"$tile\" fuzz --count 2 --seed 5 --targets interp,cpu --out \"$out/r4\"" /dev/null </dev/null >"$out/stdout" 2>&1 || fail "under script: exit $?"
  : >"$out/stderr"
  esc=$(printf '\033'); cr=$(printf '\r')
  grep -q "^${cr}tile fuzz: 1/2 programs, .* left${esc}\\[K${cr}tile fuzz: 2/2 programs, .* left${esc}\\[K${cr}${esc}\\[Ktile fuzz: 2 programs generated" \
    "$out/stdout" || fail "on a terminal: not one line redrawn in place, then erased before the summary"
else
  echo "note: util-linux script is not installed: the terminal form is not checked"
fi

"$tile" fuzz --seconds 1 --progress x >"$out/stdout" 2>"$out/stderr" && fail "--progress x accepted"
grep -q "bad value 'x' for --progress" "$out/stderr" || fail "--progress x: no error naming it"
echo "fuzz progress: ok"
