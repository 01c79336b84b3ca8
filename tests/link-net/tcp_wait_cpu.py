"""tcp_wait_cpu.py MAX_RATIO — run by tcp_wait_test.sh under `tile launch --netns`, one rank per
namespace on a rate-limited link: all-reduces of 4 MiB over TCP, where every rank mostly waits
for the link to drain. The rank's CPU time (user + system, all threads) over the wall time of
the timed calls must stay below MAX_RATIO: a rank that polls or yields while the link is slow
burns its core; one that sleeps in epoll until the socket moves does not. Data is checked."""
import resource
import sys
import time

import numpy as np

from tile import link


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    limit = float(sys.argv[1])
    comm = link.Comm.from_env()
    n, me = comm.size, comm.rank
    x = np.full(1 << 20, me + 1, dtype=np.float32)  # 4 MiB
    link.allreduce(comm, x)  # warm-up: connections, cost model
    c0, t0 = cpu(), time.perf_counter()
    for _ in range(4):
        x[:] = me + 1
        link.allreduce(comm, x)
    wall, used = time.perf_counter() - t0, cpu() - c0
    want = n * (n + 1) / 2
    if not np.all(x == want):
        print("rank %d: wrong result (%s, want %s)" % (me, x[:4], want))
        return 1
    ratio = used / wall
    print("rank %d: 4 all-reduces of 4 MiB in %.3f s wall, %.3f s CPU: %.1f %% of a core (limit %.0f %%)" % (
        me, wall, used, 100 * ratio, 100 * limit), flush=True)
    return 0 if ratio <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
