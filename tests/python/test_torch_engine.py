"""The "tile" process group's engine (python/tile/torch/distributed.py): blocking calls run on
the caller's thread without waking the worker; queued calls still run on the worker, in order;
torch.profiler sees the tile:: ranges only while it records."""
import threading

import pytest

torch = pytest.importorskip("torch")
td = pytest.importorskip("tile.torch.distributed")


class _CountingCondition:
    """A threading.Condition that counts notify calls."""

    def __init__(self):
        self._c = threading.Condition()
        self.notified = 0

    def __enter__(self):
        return self._c.__enter__()

    def __exit__(self, *a):
        return self._c.__exit__(*a)

    def wait(self, *a):
        return self._c.wait(*a)

    def notify(self, n=1):
        self.notified += 1
        self._c.notify(n)

    def notify_all(self):
        self.notified += 1
        self._c.notify_all()


def _engine():
    e = td._Engine.__new__(td._Engine)
    e._q, e._busy, e._closed = __import__("collections").deque(), False, False
    e._cv = _CountingCondition()
    e._t = threading.Thread(target=e._loop, daemon=True)
    e._t.start()
    return e


def test_blocking_calls_do_not_wake_the_worker():
    e = _engine()
    ran = []
    for i in range(50):
        op = td._Op(lambda i=i: ran.append((i, threading.current_thread())), None, "t")
        e.run_now(op)
        e.wait(op)
    assert [i for i, _ in ran] == list(range(50))
    assert all(t is threading.current_thread() for _, t in ran)
    assert e._cv.notified == 0  # nothing queued: the worker slept through all 50
    e.close()


def test_queued_calls_run_on_the_worker_in_order():
    e = _engine()
    ran = []
    gate = threading.Event()
    first = td._Op(lambda: (gate.wait(10), ran.append(0)), None, "t")
    e.submit(first)
    ops = [e.submit(td._Op(lambda i=i: ran.append(i), None, "t")) for i in range(1, 20)]
    gate.set()
    for op in ops:
        assert op.done.wait(10)
    assert ran == list(range(20))
    e.close()


def test_profiler_ranges_only_while_profiling():
    from torch.profiler import ProfilerActivity, profile
    e = _engine()
    assert not td._profiling()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        assert td._profiling()
        op = e.run_now(td._Op(lambda: None, None, "probe"))
        e.wait(op)
    assert any(ev.name == "tile::probe" for ev in prof.events())
    assert not td._profiling()
    e.close()
