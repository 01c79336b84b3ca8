#!/usr/bin/env python3
"""Checks of the knob registry (src/base/knob_list.h), label "checks".

  env_check.py reads ROOT        fails on any environment read outside the registry
                                 (src/base/knobs.c): in the C/C++/CUDA sources of src/,
                                 tilelink/, tools/ and include/, getenv, secure_getenv,
                                 __secure_getenv, getenv_s, _dupenv_s, environ, __environ,
                                 _environ, the readers the registry replaced (tile_env*,
                                 tl_getenv, tl_env_*) and the text "getenv" (dlsym); in
                                 python/, os.environ / os.getenv of a TILE_* / TLINK_* name
                                 that is not a knob, and reads with a computed name outside
                                 python/tile/_lib.py
  env_check.py selftest          plants each kind of read in a scratch tree and fails unless
                                 `reads` catches every one (and passes the clean tree)
  env_check.py doc TILE DOC      fails when DOC (docs/knobs.md) differs from
                                 `TILE env --markdown`; prints the command that regenerates it
"""
import os
import re
import subprocess
import sys

# the only files that may touch the environment directly
ALLOWED = {"src/base/knobs.c"}
READS = re.compile(r"\b(getenv|secure_getenv|__secure_getenv|__libc_secure_getenv|getenv_s|_dupenv_s|environ|__environ|_environ|"
                   r"tile_env|tile_env_long|tile_env_long_get|tl_getenv|tl_env_long|tl_env_double)\b")
# the function's name as text: dlsym(RTLD_DEFAULT, "getenv") and the like
READS_TEXT = re.compile(r"[\"'](secure_getenv|getenv|__secure_getenv)[\"']")
# python/: reads of the environment, and TILE_* / TLINK_* names
PY_READ = re.compile(r"\b(os\.environ|os\.getenv|environ\.get|getenv)\b")
PY_READ_LITERAL = re.compile(r"""(?:os\.environ(?:\.(?:get|pop|setdefault))?|os\.getenv|environ\.(?:get|pop|setdefault))\s*[\[(]\s*["']([A-Za-z0-9_]+)["']""")
PY_NAME = re.compile(r"""["']((?:TILE|TLINK)_[A-Z0-9_]+)["']""")
PY_ALLOWED = {"python/tile/_lib.py"}  # _candidates(name, env): env is one of the knobs below
C_EXT = (".c", ".h", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hpp", ".hh", ".inc")


def knob_names(root):
    with open(os.path.join(root, "src/base/knob_list.h"), encoding="utf-8") as fh:
        return set(re.findall(r"^\s*X\(([A-Za-z_][A-Za-z0-9_]*),\s*(?:BOOL|INT|SIZE|FLOAT|STR|ENUM)\b", fh.read(), re.M))


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


def reads(root, quiet=False):
    bad = []
    msg = "read environment variables through the registry (src/base/base.h: tb_knob_*, tb_env_raw; add a row to src/base/knob_list.h)"
    for top in ("src", "tilelink", "tools", "include"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(C_EXT):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    raw = fh.read()
                code = strip(raw)
                for ln, line in enumerate(code.split("\n"), 1):
                    m = READS.search(line)
                    if m:
                        bad.append("%s:%d: %s: %s" % (rel, ln, m.group(1), msg))
                for ln, line in enumerate(raw.split("\n"), 1):
                    m = READS_TEXT.search(line)
                    if m and not line.lstrip().startswith(("//", "*", "/*")):
                        bad.append("%s:%d: \"%s\" as text: %s" % (rel, ln, m.group(1), msg))
    knobs = knob_names(root)
    for d, _, files in os.walk(os.path.join(root, "python")):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().split("\n")
            for ln, line in enumerate(lines, 1):
                code = line.split("#", 1)[0]
                for name in PY_NAME.findall(code):
                    if name not in knobs:
                        bad.append("%s:%d: %s is not a knob: add a row to src/base/knob_list.h" % (rel, ln, name))
                if PY_READ.search(code):
                    lits = PY_READ_LITERAL.findall(code)
                    if not lits and rel not in PY_ALLOWED:
                        bad.append("%s:%d: an environment read with a computed name: read a knob by its name" % (rel, ln))
                    for name in lits:
                        if name not in knobs:
                            bad.append("%s:%d: %s is read but not a knob: add a row to src/base/knob_list.h" % (rel, ln, name))
    if not quiet:
        for b in bad:
            print(b)
        print("env_check: %d environment reads outside the registry" % len(bad))
    return 1 if bad else 0, bad


SELFTEST = [
    ("src/a.c", "#include <stdlib.h>\nconst char *f(void) { return getenv(\"TILE_X\"); }\n"),
    ("src/b.cpp", "#include <cstdlib>\nconst char *f() { return std::getenv(\"TILE_X\"); }\n"),
    ("src/c.c", "const char *f(void) { return secure_getenv(\"TILE_X\"); }\n"),
    ("src/d.c", "extern char **environ;\nchar **f(void) { return environ; }\n"),
    ("src/e.c", "extern char **__environ;\nchar **f(void) { return __environ; }\n"),
    ("tilelink/src/f.c", "void *f(void) { return dlsym(RTLD_DEFAULT, \"getenv\"); }\n"),
    ("tools/g.cu", "__host__ const char *f() { return getenv (\"TLINK_X\"); }\n"),
    ("src/h.h", "#define READ(n) tile_env(n)\n"),
    ("include/i.h", "static inline const char *f(void) { return getenv(\"TILE_X\"); }\n"),
    ("python/tile/j.py", "import os\nx = os.environ.get(\"TILE_NOT_A_KNOB\")\n"),
    ("python/tile/k.py", "import os\nx = os.environ[\"TILE_NOT_A_KNOB\"]\n"),
    ("python/tile/l.py", "import os\nname = 'TILE_' + 'X'\nx = os.getenv(name)\n"),
    ("python/tile/m.py", "from os import environ\nx = environ.get(\"TLINK_NOT_A_KNOB\")\n"),
    ("python/tile/n.py", "import os\nos.environ.pop(\"TLINK_NOT_A_KNOB\", None)\n"),
    ("python/tile/o.py", "import os\nos.environ.setdefault(\"TILE_NOT_A_KNOB\", \"1\")\n"),
]
CLEAN = [
    ("src/ok.c", "/* getenv in a comment */\nconst char *s = \"call getenv() here\";\nint tile_environment_size;\n"),
    ("python/tile/ok.py", "import os\nx = os.environ.get(\"TILE_LIBRARY\")  # a knob\nos.environ.pop(\"TLINK_SECRET\", None)\n"),
]


def selftest(root):
    import shutil
    import tempfile
    fails = 0
    with open(os.path.join(root, "src/base/knob_list.h"), encoding="utf-8") as fh:
        knob_list = fh.read()
    for case in [None] + SELFTEST:
        tmp = tempfile.mkdtemp(prefix="env_check.")
        try:
            os.makedirs(os.path.join(tmp, "src/base"))
            with open(os.path.join(tmp, "src/base/knob_list.h"), "w") as fh:
                fh.write(knob_list)
            for rel, text in CLEAN + ([case] if case else []):
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w") as fh:
                    fh.write(text)
            rc, bad = reads(tmp, quiet=True)
            if case is None and rc != 0:
                print("selftest: the clean tree was flagged: %s" % bad)
                fails += 1
            elif case is not None and (rc == 0 or not any(b.startswith(case[0] + ":") for b in bad)):
                print("selftest: %s was not caught: %r" % (case[0], case[1]))
                fails += 1
            elif case is not None:
                print("selftest: caught %s" % bad[0])
        finally:
            shutil.rmtree(tmp)
    print("env_check selftest: %d of %d planted reads caught, clean tree %s" %
          (len(SELFTEST) - fails, len(SELFTEST), "passed" if fails == 0 else "?"))
    return 1 if fails else 0


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
        sys.exit(reads(sys.argv[2])[0])
    if len(sys.argv) == 3 and sys.argv[1] == "selftest":
        sys.exit(selftest(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "doc":
        sys.exit(doc(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
