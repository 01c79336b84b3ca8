#!/usr/bin/env python3
"""Upstream TileLang programs through Tile, unchanged.

Reads every .py file under examples/ and testing/python/language/ of the upstream TileLang
repository (a git directory, default the read-only mirror) that contains a `T.Kernel`, at run
time (nothing of it is copied into this repository), and for each:

  1. `tile check FILE`: accepted or not, with the first diagnostic as the reason;
  2. for every kernel of an accepted file, where its sizes can be bound (symbolic sizes get
     SIZE, default 128, unless the kernel's own factory call gives them; scalar parameters
     SIZE for integers, 0.5 for floats), `tile run FILE -f K
     --target cpu --check`: the cpu target against the interpreter on the same seeded random
     inputs (the interpreter itself is checked against its float64 mode by the cuda and
     opencl suites), the generated C checking every element access (TILE_CPU_CHECKS=1); a
     kernel that takes longer than --timeout is reported as such. A run that fails with an
     out-of-bounds access is run again with every integer input in [0, 2) (`tile run
     --int-range 0:2`): random integers in [-8, 8) are not valid index tensors.

Prints accepted/total and the reason for each failure, and writes a Markdown results file.

    python3 bench/conformance/upstream.py --tile build/bin/tile [--repo DIR] [--out FILE]
           [--no-run] [--jobs N] [--timeout S]
"""
import argparse
import collections
import concurrent.futures as cf
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

MIRROR = "/work/.mirror/tile-ai+tilelang/repo"
ROOTS = ["examples", "testing/python/language"]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo] + list(args), capture_output=True, text=True, check=True).stdout


def upstream_files(repo):
    names = git(repo, "ls-tree", "-r", "--name-only", "HEAD", *ROOTS).split()
    out = []
    for n in names:
        if not n.endswith(".py"):
            continue
        text = git(repo, "show", "HEAD:" + n)
        if "T.Kernel" in text:
            out.append((n, text))
    return out


def first_error(text):
    for line in text.splitlines():
        m = re.search(r":\d+:\d+: error: (.*)$", line) or re.search(r"error: (.*)$", line)
        if m:
            return m.group(1).strip()
    return text.strip().splitlines()[-1] if text.strip() else "(no output)"


def kernels_of(check_out):
    m = re.search(r": ok \(\d+ kernels?: (.*)\)", check_out)
    return m.group(1).split() if m else []


def split_params(sig):
    # the parameters of `func NAME(a: float16[M, N], n: int32)`: top-level commas only
    out, depth, cur = [], 0, ""
    for ch in sig:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def sizes_of(tile, path, kernel, defines):
    # the symbolic sizes of the kernel and its scalar parameters (name, dtype): both need a
    # value for `tile run`
    r = subprocess.run([tile, "ir", path, "-f", kernel] + defines, capture_output=True, text=True, timeout=120)
    sizes, scalars = [], []
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("sizes:"):
            sizes = [s.strip() for s in line[len("sizes:"):].split(",") if s.strip()]
        m = re.match(r"^func [A-Za-z_][A-Za-z0-9_]*\((.*?)\)(?: ->|  #|$)", line)
        if m and not scalars:
            for p in split_params(m.group(1)):
                name, _, ty = p.partition(":")
                ty = ty.strip()
                if ty and "[" not in ty and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name.strip()):
                    scalars.append((name.strip(), ty))
    return sizes, scalars


def run_one(tile, path, kernel, extra, timeout, cache):
    cmd = [tile, "run", path, "-f", kernel, "--target", "cpu", "--check", "--quiet"] + extra
    # element checks in the generated C: a program with an out-of-bounds element access
    # (valid TileLang guards nothing) gets the access named instead of corrupting the heap
    env = dict(os.environ, TILE_CACHE_DIR=cache, TILE_CPU_CHECKS="1")
    t0 = time.time()
    note = ""
    for attempt in range(2):
        left = timeout - (time.time() - t0)
        if left <= 0:
            return "timeout", "longer than %ds" % timeout
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=left, env=env)
        except subprocess.TimeoutExpired:
            return "timeout", "longer than %ds" % timeout + note
        out = r.stdout + r.stderr
        # random integer inputs in [-8, 8) send index tensors (block indices, offsets,
        # gathers) out of bounds; the file's own driver builds them in range: run again
        # with every integer input in [0, 2), the range any index into a dimension of 2
        # or more is in
        if attempt == 0 and r.returncode not in (0, 2) and "out-of-bounds" in out:
            cmd = cmd + ["--int-range", "0:2"]
            note = ", integer inputs in [0, 2)"
            continue
        break
    if r.returncode == 0:
        return "match", note[2:]
    if r.returncode == 2:
        return "mismatch", (" ".join(l for l in out.splitlines() if l.startswith("check"))[:200]) + note
    return "error", first_error(out) + note


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile", required=True)
    ap.add_argument("--repo", default=MIRROR)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-run", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--size", type=int, default=128)
    a = ap.parse_args()
    tile = os.path.abspath(a.tile)
    files = upstream_files(a.repo)
    head = git(a.repo, "rev-parse", "HEAD").strip()
    tmp = tempfile.mkdtemp(prefix="tile-upstream-")
    cache = os.path.join(tmp, "cache")
    results = []
    t0 = last = time.time()
    for n_checked, (name, text) in enumerate(files):
        if time.time() - last >= 10:  # progress of the check phase, on stderr
            last = time.time()
            print("checked %d/%d files (%.0f s)" % (n_checked, len(files), last - t0), file=sys.stderr, flush=True)
        path = os.path.join(tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([tile, "check", path], capture_output=True, text=True, timeout=120)
        out = r.stdout + r.stderr
        results.append({"file": name, "path": path, "ok": r.returncode == 0, "why": "" if r.returncode == 0 else first_error(out),
                        "kernels": kernels_of(out), "runs": {}})
    accepted = [x for x in results if x["ok"]]
    by_dir = collections.defaultdict(lambda: [0, 0])
    for x in results:
        d = x["file"].split("/")[0] if x["file"].startswith("examples") else "testing/python/language"
        by_dir[d][1] += 1
        by_dir[d][0] += x["ok"]
    # runs
    if not a.no_run:
        jobs = []
        with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
            for x in accepted:
                for k in x["kernels"]:
                    sizes, scalars = sizes_of(tile, x["path"], k, [])
                    extra = []
                    for s in sizes:
                        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", s):
                            extra += ["-D", "%s=%d" % (s, a.size)]
                    # scalar parameters: integers SIZE (lengths, counts), floats 0.5, bools 1
                    for name, ty in scalars:
                        v = "0.5" if ty.startswith(("float", "bfloat")) else "1" if ty == "bool" else str(a.size)
                        extra += ["-D", "%s=%s" % (name, v)]
                    jobs.append((x, k, ex.submit(run_one, tile, x["path"], k, extra, a.timeout, cache)))
            t0 = time.time()
            for i, (x, k, fut) in enumerate(jobs):
                x["runs"][k] = fut.result()
                el = time.time() - t0
                print("  run [%d/%d, %.0f s, ~%.0f s left] %s %s: %s" % (i + 1, len(jobs), el, el / (i + 1) * (len(jobs) - i - 1), x["file"], k,
                                                                      x["runs"][k][0]), flush=True)
    # report
    lines = []
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines.append("# Upstream TileLang programs through Tile (%s)" % now)
    lines.append("")
    lines.append("Upstream: tile-ai/tilelang at %s; files under %s with a `T.Kernel`: %d." % (head[:12], " and ".join(ROOTS), len(files)))
    lines.append("Machine: %s, %d cores. Command: `python3 bench/conformance/upstream.py --tile %s%s`." %
                 (platform.node(), os.cpu_count(), a.tile,
                  " --no-run" if a.no_run else " --jobs %d --timeout %d --size %d" % (a.jobs, a.timeout, a.size)))
    lines.append("")
    lines.append("## Accepted by `tile check` (unchanged, no -D)")
    lines.append("")
    lines.append("| folder | accepted | files |")
    lines.append("|---|---|---|")
    for d, (ok, n) in sorted(by_dir.items()):
        lines.append("| %s | %d | %d |" % (d, ok, n))
    lines.append("| **all** | **%d** | **%d** |" % (len(accepted), len(results)))
    lines.append("")
    if not a.no_run:
        counts = collections.Counter(v[0] for x in accepted for v in x["runs"].values())
        nk = sum(len(x["runs"]) for x in accepted)
        lines.append("## Kernels of accepted files run on cpu against the interpreter (`tile run --target cpu --check`, sizes %d)" % a.size)
        lines.append("")
        lines.append("| result | kernels |")
        lines.append("|---|---|")
        for key in ("match", "mismatch", "error", "timeout"):
            lines.append("| %s | %d |" % (key, counts.get(key, 0)))
        lines.append("| all | %d |" % nk)
        lines.append("")
    reasons = collections.Counter(x["why"] for x in results if not x["ok"])
    lines.append("## Reasons files are not accepted (first diagnostic)")
    lines.append("")
    lines.append("| files | reason |")
    lines.append("|---|---|")
    for why, n in reasons.most_common():
        lines.append("| %d | %s |" % (n, why.replace("|", "\\|")))
    lines.append("")
    lines.append("## Every file")
    lines.append("")
    lines.append("| file | check | runs (cpu vs interpreter) |")
    lines.append("|---|---|---|")
    for x in results:
        runs = ", ".join("%s: %s%s" % (k, v[0], (" (" + v[1] + ")") if v[1] else "") for k, v in x["runs"].items())
        lines.append("| %s | %s | %s |" % (x["file"], "ok" if x["ok"] else x["why"].replace("|", "\\|"), runs.replace("|", "\\|")))
    text = "\n".join(lines) + "\n"
    print("accepted %d/%d" % (len(accepted), len(results)))
    for x in results:
        if not x["ok"]:
            print("  %s: %s" % (x["file"], x["why"]))
    if not a.no_run:
        for x in accepted:
            for k, v in x["runs"].items():
                print("  run %s %s: %s %s" % (x["file"], k, v[0], v[1]))
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)
        print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
