"""cpu kernels of creation ops; random ones draw from ``current_generator(ctx.device)``."""

import numpy as np

from oneflow_lite.framework.generator import current_generator
from oneflow_lite.kernels.registration import cpu_kernel

_float16 = np.dtype(np.float16)
_float64 = np.dtype(np.float64)
_int64 = np.dtype(np.int64)


@cpu_kernel("constant")
def constant_cpu(ctx):
    attrs = ctx.attrs
    value = attrs["floating_value"] if attrs["is_floating_value"] else attrs["integer_value"]
    meta = ctx.out_metas[0]
    if value == 0:
        return np.zeros(meta.shape, meta.np_dtype)
    return np.full(meta.shape, value, meta.np_dtype)


@cpu_kernel("arange")
def arange_cpu(ctx):
    a = ctx.attrs
    meta = ctx.out_metas[0]
    if a["is_floating_range"]:
        values = np.arange(meta.shape[0], dtype=_float64) * a["float_delta"] + a["float_start"]
    else:
        values = np.arange(meta.shape[0], dtype=_int64) * a["integer_delta"] + a["integer_start"]
    with np.errstate(invalid="ignore", over="ignore"):
        return values.astype(meta.np_dtype, copy=False)


# Note [Uniform float16]
# NumPy draws no float16; rounding a float32 draw can give exactly 1.0, outside
# [0, 1). As PyTorch does, a float16 draw takes 11 random bits times 2**-11.
@cpu_kernel("uniform")
def uniform_cpu(ctx):
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    if meta.np_dtype == _float16:
        x = (gen.integers(0, 2048, meta.shape, dtype=np.int16) * (1.0 / 2048)).astype(_float16)
    else:
        x = gen.random(meta.shape, dtype=meta.np_dtype)
    low, high = ctx.attrs["from"], ctx.attrs["to"]
    if low != 0.0 or high != 1.0:
        x = (x * (high - low) + low).astype(meta.np_dtype, copy=False)
    return x


@cpu_kernel("normal")
def normal_cpu(ctx):
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    if meta.np_dtype == _float16:
        x = gen.standard_normal(meta.shape, dtype=np.float32).astype(_float16)
    else:
        x = gen.standard_normal(meta.shape, dtype=meta.np_dtype)
    mean, std = ctx.attrs["mean"], ctx.attrs["std"]
    if mean != 0.0 or std != 1.0:
        x = (x * std + mean).astype(meta.np_dtype, copy=False)
    return x
