# A kernel factory whose parameters have no default and no -D: `tile check` and `tile run`
# take them from the file's own test driver, as TileLang's jit would see them at the call.
#   batch, heads: from the shape of a torch tensor the driver makes (x.shape)
#   dim:          from a `**config` dict at the call
#   dtype:        from the first case of @pytest.mark.parametrize, passed down a helper
#   block, threads: from the first config of @tilelang.autotune(configs=...), built with
#                 itertools.product and list.append, on a branch on
#                 torch.cuda.get_device_name(), get_device_properties(0) and
#                 nvcc.get_cuda_version() compared as tuples (Tile answers for the
#                 reference GPU, an H200, and its CUDA 13.0)
# The body uses next_power_of_2 on a parameter, T.parallel, T.alloc_var without init and
# T.copy with src=/dst= keywords.
import itertools

import pytest
import torch
import tilelang
import tilelang.language as T
from tilelang.contrib import nvcc


def is_amd():
    return "Radeon" in torch.cuda.get_device_name().strip() or "AMD" in torch.cuda.get_device_name()


def get_configs():
    configs = []
    tilelang.disable_cache()
    props = torch.cuda.get_device_properties(0)
    if is_amd() or (props.major, props.minor) < (9, 0) or nvcc.get_cuda_version() < (12, 0) or props.multi_processor_count < 100:
        return [{"block": 32, "threads": 64}]
    for block, threads in itertools.product([64, 128], [128, 256]):
        configs.append({"block": block, "threads": threads})
    return configs


@tilelang.autotune(configs=get_configs())
@tilelang.jit(out_idx=[-1])
def center_heads(batch, heads, dim, dtype, block, threads):
    padded = tilelang.math.next_power_of_2(heads)

    @T.prim_func
    def main(X: T.Tensor((batch, heads, dim), dtype), Y: T.Tensor((batch, heads, dim), dtype)):
        with T.Kernel(T.ceildiv(dim, block), batch, threads=threads) as (bx, by):
            tile = T.alloc_fragment((padded, block), T.float32)
            colsum = T.alloc_fragment((block,), T.float32)
            out = T.alloc_fragment((heads, block), dtype)
            bias = T.alloc_var(T.float32)
            T.clear(tile)
            for h, j in T.Parallel(heads, block):
                tile[h, j] = X[by, h, bx * block + j]
            T.reduce_sum(tile, colsum, dim=0)
            for j in T.parallel(block):
                colsum[j] = colsum[j] / padded + bias
            for h, j in T.Parallel(heads, block):
                out[h, j] = tile[h, j] - colsum[j]
            T.copy(src=out, dst=Y[by, 0:heads, bx * block:(bx + 1) * block])

    return main


def run_center_heads(batch, dim, dtype):
    x = torch.randn((batch, 6, dim), dtype=torch.float32).contiguous()
    b, heads, d = x.shape
    config = {"dim": d}
    kernel = center_heads(b, heads, dtype=dtype, **config)
    y = kernel(x)
    ref = x - x.sum(dim=1, keepdim=True) / 8
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batch, dim, dtype", [(3, 256, "float32"), (2, 128, "float16")])
def test_center_heads(batch, dim, dtype):
    run_center_heads(batch, dim, dtype)
