#!/usr/bin/env python3
"""Per-kernel compile options (include/tile.h: tile_module_set_option; `--option`), label
"checks": an option changes the emitted code and the compile cache entry, the environment
gives the default, the option beats it, a bad name or value is an error naming it, and the
source's pass_configs reach the kernel.

  options_check.py TILE EXAMPLES_DIR
"""
import os
import subprocess
import sys
import tempfile

fails = 0


def run(tile, args, env_extra=None, expect=0):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TILE_", "TLINK_"))}
    env.update(env_extra or {})
    p = subprocess.run([tile] + args, capture_output=True, text=True, env=env)
    if p.returncode != expect:
        fail("tile %s: exit %d, expected %d\n%s" % (" ".join(args), p.returncode, expect, p.stderr))
    return p


def fail(msg):
    global fails
    fails += 1
    print("FAIL:", msg)


def main(tile, ex):
    add = os.path.join(ex, "add.tl")
    D = ["-D", "M=100", "-D", "N=37"]
    base = run(tile, ["emit", add] + D + ["--target", "cpu"]).stdout
    chk = run(tile, ["emit", add] + D + ["--target", "cpu", "--option", "cpu_checks=1"]).stdout
    env_chk = run(tile, ["emit", add] + D + ["--target", "cpu"], {"TILE_CPU_CHECKS": "1"}).stdout
    over = run(tile, ["emit", add] + D + ["--target", "cpu", "--option", "cpu_checks=0"], {"TILE_CPU_CHECKS": "1"}).stdout
    if not base or base == chk:
        fail("--option cpu_checks=1 left the generated C as it was")
    if env_chk != chk:
        fail("TILE_CPU_CHECKS=1 (the option's default) and --option cpu_checks=1 emit different code")
    if over != base:
        fail("--option cpu_checks=0 did not override TILE_CPU_CHECKS=1")
    # the GPU generators read the options too (no device needed to emit)
    cu = run(tile, ["emit", add] + D + ["--target", "cuda"]).stdout
    cu0 = run(tile, ["emit", add] + D + ["--target", "cuda", "--option", "gpu_checks=0"]).stdout
    if not cu or cu == cu0:
        fail("--option gpu_checks=0 left the CUDA C as it was")
    # errors name the option / the value
    p = run(tile, ["emit", add] + D + ["--target", "cpu", "--option", "no_such_option=1"], expect=1)
    if "no_such_option" not in p.stderr or "cpu_checks" not in p.stderr:
        fail("an unknown option's message should name it and list the options: %r" % p.stderr)
    p = run(tile, ["emit", add] + D + ["--target", "cpu", "--option", "sm90_group=0"], expect=1)
    if "sm90_group" not in p.stderr or "'0'" not in p.stderr:
        fail("an out-of-range value's message should name the option and the value: %r" % p.stderr)
    # a TileLang pass_configs key is accepted as a name
    run(tile, ["emit", add] + D + ["--target", "cuda", "--option", "tl.disable_tma_lower=True"])
    # the cache: the same source with another option is another entry
    with tempfile.TemporaryDirectory() as cache:
        env = {"TILE_CACHE_DIR": cache}
        args = ["run", add] + D + ["--target", "cpu", "--quiet"]
        if run(tile, ["devices"]).stdout.find("cpu") < 0:
            print("no cpu target: cache part skipped")
        else:
            run(tile, args, env)
            n1 = len([f for f in os.listdir(cache) if f.startswith("cpu-") and f.endswith(".so")])
            run(tile, args, env)
            n2 = len([f for f in os.listdir(cache) if f.startswith("cpu-") and f.endswith(".so")])
            run(tile, args + ["--option", "cpu_cflags=-O1"], env)
            n3 = len([f for f in os.listdir(cache) if f.startswith("cpu-") and f.endswith(".so")])
            if not (n1 == 1 and n2 == 1 and n3 == 2):
                fail("cache entries: %d after a run, %d after the same run, %d after one with cpu_cflags=-O1 (expected 1, 1, 2)" % (n1, n2, n3))
    print("options_check: %s" % ("ok" if not fails else "%d failures" % fails))
    return 1 if fails else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
