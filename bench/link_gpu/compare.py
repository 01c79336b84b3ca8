"""compare.py OURS.log NCCL.log — joins the two tables on size: time and busbw ratios (ours/NCCL)."""
import sys


def table(path, tcol, bcol):
    rows = {}
    for line in open(path):
        f = line.split()
        if not f or line.startswith("#") or not f[0].isdigit():
            continue
        rows[int(f[0])] = (float(f[tcol]), float(f[bcol]), f)
    return rows


ours = table(sys.argv[1], 5, 7)
nccl = table(sys.argv[2], 3, 5)
print("| size (B) | ours us | NCCL us | time ours/NCCL | ours busbw GB/s | NCCL busbw GB/s | busbw ours/NCCL | algo | #wrong |")
print("|---:|---:|---:|---:|---:|---:|---:|---|---:|")
for s in sorted(ours):
    if s not in nccl:
        continue
    ot, ob, f = ours[s]
    nt, nbw, _ = nccl[s]
    # same bytes on both sides: the busbw ratio is the inverse time ratio (exact, unlike the
    # rounded busbw columns at small sizes)
    print(f"| {s} | {ot:.2f} | {nt:.2f} | {ot / nt:.2f} | {ob:.1f} | {nbw:.1f} | {nt / ot:.2f} | {f[9]} | {f[8]} |")
