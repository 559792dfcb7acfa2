"""Type promotion for functors: the common dtype of a call and the ``cast`` ops that reach it.

Functors compute the common dtype (Note [Type promotion] in framework/dtype.py)
and cast their inputs to it, so kernels see one dtype (Note [Math ops take one
dtype] in ops/math.py). In-place calls compute in the common dtype and write the
result cast back to the tensor's dtype, which PyTorch allows unless it would turn
a float into an integer or a number into a bool.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.interpreters.op_interp_util import dispatch

_bool = dt.bool_
_int64 = dt.int64
_promote_types = dt.promote_types
_combine = dt.combine_categories
get_default_dtype = dt.get_default_dtype

# PyTorch's ScalarType names, used in its promotion error messages.
TORCH_NAMES = {dt.bool_: "Bool", dt.uint8: "Byte", dt.int8: "Char", dt.int16: "Short", dt.int32: "Int",
               dt.int64: "Long", dt.float16: "Half", dt.float32: "Float", dt.float64: "Double",
               dt.uint16: "UInt16", dt.uint32: "UInt32", dt.uint64: "UInt64"}
if getattr(dt, "bfloat16", None) is not None:
    TORCH_NAMES[dt.bfloat16] = "BFloat16"


def tensors_dtype(a, b) -> dt.dtype:
    """The common dtype of tensors ``a`` and ``b``: 0-d tensors count less than dimensioned ones."""
    ma, mb = a._meta, b._meta
    da, db = ma.dtype, mb.dtype
    if da is db:
        return da
    if (ma.ndim == 0) is (mb.ndim == 0):
        return _promote_types(da, db)
    if ma.ndim == 0:
        return _combine(db, da)
    return _combine(da, db)


def common_dtype(*tensors) -> dt.dtype:
    """The common dtype of several tensors (``tensors_dtype`` for any number)."""
    dims = zero = None
    for t in tensors:
        m = t._meta
        if m.ndim:
            dims = m.dtype if dims is None else _promote_types(dims, m.dtype)
        else:
            zero = m.dtype if zero is None else _promote_types(zero, m.dtype)
    return _combine(dims, zero)


def opmath_dtype(d: dt.dtype) -> dt.dtype:
    """The dtype PyTorch's kernels compute a ``d`` tensor in: float32 for float16 / bfloat16, ``d`` otherwise."""
    return dt.float32 if d in (dt.float16, dt.bfloat16) else d


def check_converts(op: str, arg: str, value, d: dt.dtype) -> None:
    """PyTorch's error for a Python number ``value`` (argument ``arg`` of ``op``) that ``d`` cannot take
    (``dt.converts``: the rule of scalar operands)."""
    if not dt.converts(d, value):
        raise RuntimeError(f"{op}: {arg} {value} cannot be converted to type {d.name} without overflow")


def scalar_dtype(d: dt.dtype, value) -> dt.dtype:
    """The common dtype of a ``d`` tensor and a Python scalar: the scalar raises only the category."""
    t = type(value)
    if t is float:
        return d if d.is_floating_point else get_default_dtype()
    if t is int and d is _bool:
        return _int64
    return d


def floating(d: dt.dtype) -> dt.dtype:
    """``d`` if floating, else the default float dtype (true division, exp, ...)."""
    return d if d.is_floating_point else get_default_dtype()


def can_cast(src: dt.dtype, dst: dt.dtype) -> bool:
    """PyTorch's ``can_cast``: no float to integer or bool, no number to bool."""
    if src.is_floating_point and not dst.is_floating_point:
        return False
    return dst is not _bool or src is _bool


def check_inplace_dtype(name: str, result: dt.dtype, out: dt.dtype) -> None:
    if result is not out and not can_cast(result, out):
        raise RuntimeError(f"{name}: result type {TORCH_NAMES[result]} can't be cast to the desired output "
                           f"type {TORCH_NAMES[out]}")


def check_inplace_shape(name: str, out_shape, result_shape) -> None:
    if result_shape != out_shape:
        raise RuntimeError(f"{name}: output with shape {list(out_shape)} doesn't match the broadcast shape "
                           f"{list(result_shape)}")


# One cast expr per target dtype, its ``dtype`` attr set at build time; built on first use
# the cast op is defined in ops/conversion.py.
_cast_ops: dict = {}
_lock = threading.Lock()


def _cast_expr(d: dt.dtype):
    with _lock:
        op = _cast_ops.get(d)
        if op is None:
            op = _cast_ops[d] = OpBuilder("cast").input("in").output("out").attr("dtype", d).build()
    return op


def cast(x, d: dt.dtype):
    """``x`` as dtype ``d`` (``x`` itself when it has it already)."""
    if x._meta.dtype is d:
        return x
    return dispatch(_cast_ops.get(d) or _cast_expr(d), (x,))[0]


_NARROW_FLOATS = (dt.float16, dt.bfloat16, dt.float32)


def overflowed_narrow(x, y) -> bool:
    """Whether ``y``, computed elementwise from a float16 / bfloat16 / float32 ``x``, is Inf or NaN where ``x`` is
    finite: an intermediate (``x ** 2``, ``x ** p``) overflowed, and the caller computes again in float64, where
    the result is finite. False for other dtypes and for tensors without values (meta, lazy)."""
    if x._meta.dtype not in _NARROW_FLOATS or not x._meta.device.device_type.has_storage or x.is_lazy:
        return False
    return bool(F.any(F.logical_and(F.isfinite(x), F.logical_not(F.isfinite(y)))).item())


def integer_mask(mask):
    """An integer mask (OneFlow's int8 / int32 / int64 / uint8 masks) as a bool one (nonzero is True); other
    masks as they are, for the caller's check (Note [Integer masks])."""
    d = mask._meta.dtype
    if d is _bool or d.is_floating_point or d.is_complex:
        return mask
    return cast(mask, _bool)


# Note [Integer masks]
# OneFlow's masked_fill / masked_select / where take an integer mask or condition (nonzero is True; real OneFlow
# code passes int32 masks), where PyTorch raises for every mask but a bool one (``where`` still takes a
# deprecated uint8 condition). oneflow_lite follows OneFlow: integer masks are cast to bool; float and complex
# masks keep PyTorch's errors. Listed as a deviation from PyTorch in README's "Running PyTorch code".


_FLOAT_MAX = {d: float(np.finfo(d.np_dtype).max) for d in (dt.float16, dt.float32)}


def _fit(value, d: dt.dtype):
    """``value`` as a ``d`` would hold it: integers wrap, floats beyond float16 / float32 become inf."""
    if d is _bool:
        return bool(value)
    if not d.is_floating_point:
        bits = d.itemsize * 8
        low = -(2 ** (bits - 1)) if d.is_signed else 0
        return (int(value) - low) % 2**bits + low
    value = float(value)
    limit = _FLOAT_MAX.get(d)
    if limit is not None and not -limit <= value <= limit and not math.isnan(value):
        return math.copysign(math.inf, value)
    return value


def wrap_scalar(value, d: dt.dtype, device):
    """A Python scalar as a 0-d ``d`` tensor on ``device``: PyTorch's wrapped number, for the calls that
    have no scalar-operand op (``2 % t``, ``t & 1``, ``where(c, t, 0.0)``). ``d`` is the call's common
    dtype (``scalar_dtype``), so the wrapped tensor never changes it; the value must fit in int64."""
    return get_functor("Full")((), _fit(value, d), d, device)


def cast_into(src, out):
    """Write ``src`` cast to ``out``'s dtype into ``out``; returns ``out``."""
    d = out._meta.dtype
    return dispatch(_cast_ops.get(d) or _cast_expr(d), (src,), None, (out,))[0]
