"""tile.torch: Tile kernels as PyTorch operators (eager, autograd, torch.compile, torch.export),
a torch.compile backend "tile", and TileLink as the torch.distributed backend "tile".

    import tile.torch                      # registers the backends named "tile"
    rms = tile.torch.op(kernel_factory, name="mylib::rms_norm", specialize=...)
    model = torch.compile(model, backend="tile")

See docs/pytorch.md. Importing this module imports PyTorch."""
from .ops import op, output_meta
from . import compile_backend
from .distributed import comm_hook, TileDistError  # noqa: E402,F401 (registers backend "tile")

compile_backend.register()
