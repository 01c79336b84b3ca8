#!/usr/bin/env python3
"""Checks of the knob registry (src/base/knob_list.h), label "checks".

  env_check.py reads ROOT        fails on any environment read in src/, tilelink/ or tools/
                                 outside the registry (src/base/knobs.c): getenv,
                                 secure_getenv, environ, and the readers the registry
                                 replaced (tile_env*, tl_getenv, tl_env_*)
  env_check.py doc TILE DOC      fails when DOC (docs/knobs.md) differs from
                                 `TILE env --markdown`; prints the command that regenerates it
"""
import os
import re
import subprocess
import sys

# the only files that may touch the environment directly
ALLOWED = {"src/base/knobs.c"}
READS = re.compile(r"\b(getenv|secure_getenv|environ|tile_env|tile_env_long|tile_env_long_get|tl_getenv|tl_env_long|tl_env_double)\b")


def strip(text):
    """C/C++ text without comments and string / character literals (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def reads(root):
    bad = []
    for top in ("src", "tilelink", "tools"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".cu", ".cpp", ".cc")):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    code = strip(fh.read())
                for ln, line in enumerate(code.split("\n"), 1):
                    m = READS.search(line)
                    if m:
                        bad.append("%s:%d: %s: read environment variables through the registry "
                                   "(src/base/base.h: tb_knob_*, tb_env_raw; add a row to src/base/knob_list.h)"
                                   % (rel, ln, m.group(1)))
    for b in bad:
        print(b)
    print("env_check: %d environment reads outside the registry" % len(bad))
    return 1 if bad else 0


def doc(tile, path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILE_", "TLINK_"))}
    got = subprocess.run([tile, "env", "--markdown"], capture_output=True, text=True, env=env)
    if got.returncode != 0:
        print("tile env --markdown failed (%d):\n%s" % (got.returncode, got.stderr))
        return 1
    try:
        with open(path, encoding="utf-8") as fh:
            want = fh.read()
    except OSError as e:
        want = ""
        print("cannot read %s: %s" % (path, e))
    if got.stdout != want:
        import difflib
        sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.stdout.splitlines(True),
                                                   path, "tile env --markdown"))
        print("\n%s is stale: regenerate it with\n    ./build/bin/tile env --markdown > docs/knobs.md" % path)
        return 1
    print("%s matches tile env --markdown" % path)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "reads":
        sys.exit(reads(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "doc":
        sys.exit(doc(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
