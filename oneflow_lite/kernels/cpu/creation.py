"""cpu kernels of creation ops; random ones draw from ``current_generator(ctx.device)``."""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in, output_dtype_in
from oneflow_lite.framework.dtype import FLOATING_DTYPES, NUMERIC_DTYPES
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


@cpu_kernel("eye")
def eye_cpu(ctx):
    meta = ctx.out_metas[0]
    return np.eye(*meta.shape, dtype=meta.np_dtype)


def _as_output(values, np_dtype):
    """float64 ``values`` in ``np_dtype``: integers truncate toward zero (through int64, so they wrap)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if np_dtype.kind in "iu":
            return values.astype(_int64).astype(np_dtype, copy=False)
        return values.astype(np_dtype)


def _linspace(ctx):
    """PyTorch's symmetric linspace in float64: the first half counts up from start, the rest down from end."""
    a = ctx.attrs
    start, end, steps = a["start"], a["end"], a["steps"]
    if steps == 1:
        return np.array([start], _float64)
    i = np.arange(steps, dtype=_float64)
    with np.errstate(invalid="ignore", over="ignore"):
        step = (end - start) / (steps - 1)
        return np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


_NUMERIC_OUT = output_dtype_in("out", *NUMERIC_DTYPES)


@cpu_kernel("linspace", _NUMERIC_OUT)
def linspace_cpu(ctx):
    return _as_output(_linspace(ctx), ctx.out_metas[0].np_dtype)


@cpu_kernel("logspace", _NUMERIC_OUT)
def logspace_cpu(ctx):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        values = np.power(ctx.attrs["base"], _linspace(ctx))
    return _as_output(values, ctx.out_metas[0].np_dtype)


@cpu_kernel("randint")
def randint_cpu(ctx):
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    return gen.integers(ctx.attrs["low"], ctx.attrs["high"], meta.shape, dtype=_int64).astype(meta.np_dtype)


@cpu_kernel("randperm", _NUMERIC_OUT)
def randperm_cpu(ctx):
    meta = ctx.out_metas[0]
    return current_generator(ctx.device).numpy.permutation(ctx.attrs["n"]).astype(meta.np_dtype)


@cpu_kernel("normal_tensor", dtype_in("mean", *FLOATING_DTYPES))
def normal_tensor_cpu(ctx, mean, std):
    if std.size and not (std >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    z = gen.standard_normal(meta.shape, dtype=np.float32 if meta.np_dtype == _float16 else meta.np_dtype)
    return (z * std + mean).astype(meta.np_dtype, copy=False)
