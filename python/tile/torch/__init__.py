"""tile.torch: Tile kernels as PyTorch operators (eager, autograd, torch.compile, torch.export),
a torch.compile backend "tile", and TileLink as the torch.distributed backend "tile".

    import tile.torch                      # registers the distributed backend "tile"
    rms = tile.torch.op(kernel_factory, name="mylib::rms_norm")

See docs/pytorch.md. Importing this module imports PyTorch."""
from .distributed import comm_hook, TileDistError  # noqa: E402,F401 (registers backend "tile")
