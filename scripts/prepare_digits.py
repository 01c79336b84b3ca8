#!/usr/bin/env python3
"""prepare_digits.py — turn scikit-learn's bundled digits data set into the file that
examples/train_mlp.c reads. No download: the data ships inside the scikit-learn package
(sklearn/datasets/data/digits.csv.gz: 1797 handwritten digits, 8x8 pixels of 0..16, and the
label). Only the standard library is used (sklearn itself is not imported), so it works with
Debian's python3-sklearn (/usr/lib/python3/dist-packages) from any python3.

    scripts/prepare_digits.py OUT.bin [--src digits.csv.gz]
    scripts/prepare_digits.py --find

OUT.bin: the 8-byte magic "TILEDIG1", then little-endian uint32 count and uint32 features
(64), then count records of features + 1 bytes (pixels, then the label 0..9), in the order of
the CSV. Exit status 3 (and a message) when the CSV cannot be found."""
import argparse
import glob
import gzip
import importlib.util
import os
import struct
import sys

REL = os.path.join("sklearn", "datasets", "data", "digits.csv.gz")


def find_csv():
    roots = []
    try:
        spec = importlib.util.find_spec("sklearn")  # locates without importing it
        if spec and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                roots.append(os.path.dirname(loc))
    except (ImportError, ValueError):
        pass
    roots += sys.path
    roots += ["/usr/lib/python3/dist-packages"]
    roots += glob.glob("/usr/lib/python3*/dist-packages") + glob.glob("/usr/local/lib/python3*/*-packages")
    for r in roots:
        p = os.path.join(r or ".", REL)
        if os.path.isfile(p):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--find", action="store_true", help="only print where digits.csv.gz is (exit 3 if nowhere)")
    ap.add_argument("--src", help="digits.csv.gz (default: found in the installed scikit-learn)")
    a = ap.parse_args()
    src = a.src or find_csv()
    if not src or not os.path.isfile(src):
        print("prepare_digits: scikit-learn's digits.csv.gz not found "
              "(run scripts/setup.sh: it installs python3-sklearn)", file=sys.stderr)
        return 3
    if a.find:
        print(src)
        return 0
    if not a.out:
        ap.error("OUT is required")
    rows = []
    with gzip.open(src, "rt") as f:
        for ln, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            vals = [int(float(v)) for v in line.split(",")]
            if len(vals) != 65 or not all(0 <= v <= 16 for v in vals[:64]) or not 0 <= vals[64] <= 9:
                print(f"prepare_digits: {src}:{ln}: expected 64 pixels in 0..16 and a label 0..9", file=sys.stderr)
                return 1
            rows.append(bytes(vals))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"TILEDIG1" + struct.pack("<II", len(rows), 64))
        for r in rows:
            f.write(r)
    os.replace(tmp, a.out)
    print(f"prepare_digits: {len(rows)} samples from {src} -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
