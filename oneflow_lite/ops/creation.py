"""Creation ops: source ops without tensor inputs.

Each has a ``device`` attr: ``OpInterpUtil.dispatch`` picks the backend from it and
the default device inference puts the output there. Every attr that decides the
values (shape, dtype, fill value, range, distribution parameters) is a real op
attr, so a captured graph records it.
"""

from __future__ import annotations

import math

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.op_registry import register_user_op


def _shape(ctx):
    shape = ctx.attrs["shape"]
    negative = next((d for d in shape if d < 0), None)
    if negative is not None:
        raise ctx.error(f"Trying to create tensor with negative dimension {negative}: {list(shape)}")
    return shape


def _float_dtype(ctx):
    dtype = ctx.attrs["dtype"]
    if not dtype.is_floating_point:
        raise ctx.error(f"expected a floating point dtype (float16, float32 or float64), got {dtype.name}")
    return dtype


_SOURCE_ATTRS = {"shape": ("shape", ()), "dtype": ("data_type", dt.float32), "device": ("device", "cpu")}


def _constant_dtype(ctx):
    """The dtype attr; a fill value that does not fit it is an error (PyTorch's overflow check)."""
    attrs = ctx.attrs
    dtype = attrs["dtype"]
    value = attrs["floating_value"] if attrs["is_floating_value"] else attrs["integer_value"]
    if dtype is dt.bool_:
        fits = True
    elif dtype.is_floating_point:
        fits = not math.isfinite(value) or abs(value) <= float(np.finfo(dtype.np_dtype).max)
    else:
        info = np.iinfo(dtype.np_dtype)
        fits = math.isfinite(value) and info.min <= math.trunc(value) <= info.max
    if not fits:
        raise ctx.error(f"value {value} cannot be converted to type {dtype.name} without overflow")
    return dtype


register_user_op("constant", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "floating_value": ("double", 0.0), "integer_value": ("int64", 0),
                        "is_floating_value": ("bool", False)},
                 infer_shape=_shape, infer_dtype=_constant_dtype)


def _arange_shape(ctx):
    """``ceil((limit - start) / delta)`` elements, with PyTorch's checks."""
    a = ctx.attrs
    if a["is_floating_range"]:
        start, limit, delta = a["float_start"], a["float_limit"], a["float_delta"]
        if not (math.isfinite(start) and math.isfinite(limit)):
            raise ctx.error(f"unsupported range: {start} -> {limit}")
        if not math.isfinite(delta):
            raise ctx.error(f"unsupported step: {delta}")
    else:
        start, limit, delta = a["integer_start"], a["integer_limit"], a["integer_delta"]
    if delta == 0:
        raise ctx.error("step must be nonzero")
    if (delta > 0 and limit < start) or (delta < 0 and limit > start):
        raise ctx.error("upper bound and larger bound inconsistent with step sign")
    size = math.ceil((limit - start) / delta) if a["is_floating_range"] else -((start - limit) // delta)
    if size >= 2**63:
        raise ctx.error(f"invalid size {size}, possible overflow?")
    return (size,)


def _arange_dtype(ctx):
    dtype = ctx.attrs["dtype"]
    if dtype is dt.bool_:
        raise ctx.error("not implemented for dtype bool")
    return dtype


register_user_op("arange", outputs=["out"], no_grad=True,
                 attrs={"dtype": ("data_type", dt.int64), "device": ("device", "cpu"),
                        "integer_start": ("int64", 0), "integer_limit": ("int64", 0), "integer_delta": ("int64", 1),
                        "float_start": ("double", 0.0), "float_limit": ("double", 0.0), "float_delta": ("double", 1.0),
                        "is_floating_range": ("bool", False)},
                 infer_shape=_arange_shape, infer_dtype=_arange_dtype)

register_user_op("uniform", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "from": ("double", 0.0), "to": ("double", 1.0)},
                 infer_shape=_shape, infer_dtype=_float_dtype)

register_user_op("normal", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "mean": ("double", 0.0), "std": ("double", 1.0)},
                 infer_shape=_shape, infer_dtype=_float_dtype)
