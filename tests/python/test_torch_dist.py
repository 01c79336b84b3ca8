"""Backend "tile" for torch.distributed (python/tile/torch/distributed.py): every call and
dtype against gloo under torchrun, a rank killed mid-all_reduce, DDP on the digits set.
Each test starts tests/python/torch_dist_worker.py on several processes."""
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "torch_dist_worker.py")


def _port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _torchrun(n, *args, timeout=240):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n), "--master-port", str(_port()), WORKER] + list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout[-4000:]
    return p.stdout


@pytest.mark.parametrize("n", [1, 2])
def test_every_call_matches_gloo(n):
    out = _torchrun(n, "calls")
    assert out.count("OK calls") == n, out[-2000:]


@pytest.mark.parametrize("n", [3, 4])
def test_every_call_matches_gloo_more_ranks(n):
    """Every call at 3 and 4 ranks (uneven splits, roots other than 0, odd rank counts), on one
    dtype of each kind to keep CI's time small (every dtype: the 1- and 2-rank tests)."""
    out = _torchrun(n, "calls", "quick")
    assert out.count("OK calls") == n, out[-2000:]


def _tile_bin():
    lib = os.environ.get("TILE_LIBRARY")
    b = os.path.join(os.path.dirname(lib), "bin", "tile") if lib else None
    return b if b and os.access(b, os.X_OK) else None


@pytest.mark.parametrize("n", [2, 3])
def test_calls_under_tile_launch(n):
    """init_process_group from TileLink's environment (tile.torch.distributed.init_process_group)
    under `tile launch`: every call, compared with references from every rank's inputs."""
    tile_bin = _tile_bin()
    if tile_bin is None:
        pytest.skip("the tile binary is not next to TILE_LIBRARY")
    p = subprocess.run([tile_bin, "launch", "-n", str(n), "--", sys.executable, WORKER, "calls-env", "quick"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    assert p.returncode == 0 and p.stdout.count("OK calls-env") == n, p.stdout[-4000:]


def test_ddp_digits_tile_equals_gloo():
    out = _torchrun(2, "ddp")
    assert out.count("OK ddp") == 2 or "SKIP ddp" in out, out[-2000:]


def test_killed_rank_raises_on_survivors():
    n, victim, port = 3, 2, _port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, WORKER, "kill", str(victim)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert procs[victim].returncode == 17
    for r in range(n):
        if r != victim:
            assert procs[r].returncode == 0 and "OK kill" in outs[r], outs[r][-2000:]
            assert "rank %d" % victim in outs[r]


def test_comm_hook_bad_arguments():
    import tile.torch
    with pytest.raises(ValueError, match="momentum must be in"):
        tile.torch.comm_hook("sign1", momentum=1.0)
    with pytest.raises(TypeError, match="momentum must be a number"):
        tile.torch.comm_hook("sign1", momentum="high")
    with pytest.raises(ValueError, match="gather='int3'"):
        tile.torch.comm_hook("sign1", gather="int3")
    with pytest.raises(ValueError, match="gather="):
        tile.torch.comm_hook(None, gather="int8")
    with pytest.raises(ValueError, match="unknown method"):
        tile.torch.comm_hook("sign2")
    with pytest.raises(ValueError, match="chunk must be"):
        tile.torch.comm_hook("sign1", chunk=-1)
    h = tile.torch.comm_hook("sign1", gather="int8", momentum=0.9, chunk=64)
    assert (h.method, h.gather, h.momentum, h.chunk) == ("sign1", "int8", 0.9, 64)
