#!/usr/bin/env python3
"""Runs one of the deliberately wrong programs in tests/checks/cases and checks the message.

Usage:
    run_checks.py [--tile PATH] NAME      run cases/NAME.tl (what CTest does: checks.NAME)
    run_checks.py [--tile PATH] --all     run every case, print a summary
    run_checks.py --list

Each case file carries its expectations in comment lines at the top:
    # RUN: run -D M=40 -D N=32    `tile run FILE --target interp --seed 1 <args>`
    # RUN: check                  `tile check FILE <args>`
    # EXIT: 1                     the expected exit code
    # EXPECT: a | b               the diagnostic text must contain a or b (case and
                                  whitespace are ignored; one EXPECT line per requirement)
and every source line that ends with the comment `# <- error` must be named by a
diagnostic `FILE:LINE:COL: error:`. EXPECT is matched against the text of the diagnostics
only (what follows `error:` / `note:`), not against the echoed source line or the path.
The exact wording is the interpreter's and the checker's; only keywords, the buffer name,
the indices and the line are fixed here.

Needs only Python 3 (no NumPy). Exit status 0 pass, 1 fail, 77 skip (no tile binary).
"""
import argparse
import os
import re
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CASES = os.path.join(HERE, "cases")
MARK = "# <- error"


def cases():
    return sorted(f[:-3] for f in os.listdir(CASES) if f.endswith(".tl"))


def norm(s):
    return re.sub(r"\s+", "", s).lower()


def parse(path):
    spec = {"run": None, "exit": None, "expect": [], "lines": []}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            m = re.match(r"#\s*(RUN|EXIT|EXPECT):\s*(.*)$", s)
            if m:
                key, val = m.group(1).lower(), m.group(2).strip()
                if key == "run":
                    spec["run"] = val.split()
                elif key == "exit":
                    spec["exit"] = int(val)
                else:
                    spec["expect"].append([a.strip() for a in val.split(" | ") if a.strip()])
            if line.rstrip().endswith(MARK):
                spec["lines"].append(n)
    if not spec["run"] or spec["run"][0] not in ("run", "check") or spec["exit"] is None:
        raise ValueError("%s: needs '# RUN: run|check ...' and '# EXIT: N'" % path)
    return spec


def run_case(name, tile):
    path = os.path.join(CASES, name + ".tl")
    spec = parse(path)
    sub, args = spec["run"][0], spec["run"][1:]
    cmd = [tile, sub, path]
    if sub == "run":
        cmd += ["--target", "interp", "--seed", "1"]
    cmd += args
    print("$ " + " ".join(cmd))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print("FAIL %s: timed out" % name)
        return 1
    out = r.stdout + r.stderr
    print(out.rstrip())
    problems = []
    if r.returncode < 0:
        problems.append("killed by signal %d (a crash)" % -r.returncode)
    elif r.returncode != spec["exit"]:
        problems.append("exit code %d, expected %d" % (r.returncode, spec["exit"]))
    if "Sanitizer" in out or "runtime error:" in out:
        problems.append("sanitizer report in the output")
    base = re.escape(os.path.basename(path))
    for line in spec["lines"]:
        if not re.search(r"%s:%d:\d+: error:" % (base, line), out):
            problems.append("no diagnostic '%s:%d:COL: error:'" % (os.path.basename(path), line))
    # the text of the diagnostics: what follows "error:" / "note:" on their lines
    msgs = " ".join(m.group(1) for m in re.finditer(r"(?:error|note):(.*)", out))
    for alts in spec["expect"]:
        if not any(norm(a) in norm(msgs) for a in alts):
            problems.append("no diagnostic mentions %s" % " or ".join(repr(a) for a in alts))
    if problems:
        print("FAIL %s:\n  - %s" % (name, "\n  - ".join(problems)))
        return 1
    print("PASS %s" % name)
    return 0


def find_tile(arg):
    if arg:
        return arg
    if os.environ.get("TILE"):
        return os.environ["TILE"]
    for d in sorted(os.listdir(ROOT)):
        p = os.path.join(ROOT, d, "bin", "tile")
        if d.startswith("build") and os.access(p, os.X_OK):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tile")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if a.list:
        print("\n".join(cases()))
        return 0
    known = cases()
    unknown = [n for n in a.names if n not in known]
    if unknown:
        print("unknown case(s): %s" % " ".join(unknown))
        return 1
    tile = find_tile(a.tile)
    if not tile or not os.access(tile, os.X_OK):
        print("SKIP: no tile binary (pass --tile PATH)")
        return SKIP
    names = known if a.all or not a.names else a.names
    res = {n: run_case(n, tile) for n in names}
    if len(names) > 1:
        failed = [n for n, r in res.items() if r]
        print("%d passed, %d failed" % (len(names) - len(failed), len(failed)))
        if failed:
            print("failed: " + " ".join(failed))
    return 1 if any(res.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
