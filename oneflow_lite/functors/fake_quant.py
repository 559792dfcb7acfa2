"""Fake quantization (PyTorch's ``fake_quantize_per_tensor_affine`` / ``fake_quantize_per_channel_affine``): dense
floating tensors rounded to the grid a quantized dtype would hold and back, as quantization-aware training uses.

Note [Fake quantization]
``out = (clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale``, with ``round``
to the nearest even integer (``nearbyint``), computed in ``x``'s dtype (float32 for float16 / bfloat16, as PyTorch's
kernel multiplies a half value by a float ``1 / scale``: a ``quant_max`` beyond float16's range is a bound there). The gradient is PyTorch's straight-through
estimate: ``dy`` where ``round(x / scale) + zero_point`` lies in ``[quant_min, quant_max]``, 0 where it was
clamped; it reaches ``x`` only (``scale`` and ``zero_point`` get none, as in PyTorch's non-learnable forms).
"""

from __future__ import annotations

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.promotion import opmath_dtype
from oneflow_lite.functors.registry import composite


def _check_range(name, quant_min, quant_max):
    if quant_min > quant_max:
        raise RuntimeError(f"{name}: `quant_min` should be less than or equal to `quant_max`.")


def _fake_quantize(x, scale, zero_point, quant_min, quant_max):
    """Note [Fake quantization], with ``scale`` and ``zero_point`` numbers or tensors broadcasting to ``x``."""
    q = F.add(F.round(F.div(F.cast(x.detach(), opmath_dtype(x._meta.dtype)), scale)), zero_point)
    value = F.mul(F.sub(F.clamp(q, quant_min, quant_max), zero_point), scale)
    value = F.cast(value, x._meta.dtype)
    if not x.requires_grad:
        return value
    kept = F.logical_and(F.ge(q, quant_min), F.le(q, quant_max))
    return F.add(value, F.where(kept, F.sub(x, x.detach()), 0.0))  # x - x.detach() carries dy, valued 0


def _floating_input(name, x):
    if not x._meta.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point input, got {x._meta.dtype.name}")


@composite("FakeQuantizePerTensorAffine")
def fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max):
    """One ``scale`` and ``zero_point`` (numbers, or one-element tensors) for the whole tensor."""
    name = "fake_quantize_per_tensor_affine"
    _floating_input(name, x)
    _check_range(name, quant_min, quant_max)
    if isinstance(scale, Tensor):
        for arg, t in (("scale", scale), ("zero_point", zero_point)):
            if not isinstance(t, Tensor) or t._meta.numel != 1:
                raise RuntimeError(f"{name}: `{arg}` must be a one-element tensor (or a number), got "
                                   f"{list(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
        scale, zero_point = float(scale.item()), int(zero_point.item())
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError(f"{name}: `zero_point` must be between `quant_min` and `quant_max`.")
    return _fake_quantize(x, scale, zero_point, quant_min, quant_max)


@composite("FakeQuantizePerChannelAffine")
def fake_quantize_per_channel_affine(x, scale, zero_point, axis, quant_min, quant_max):
    """A ``scale`` and ``zero_point`` per index of dim ``axis`` (1-d tensors of that length)."""
    name = "fake_quantize_per_channel_affine"
    _floating_input(name, x)
    _check_range(name, quant_min, quant_max)
    ndim = x._meta.ndim
    if not -ndim <= axis < ndim:
        raise RuntimeError(f"{name}: `axis` must be between 0 and number of dimensions of input, got {axis}")
    axis %= ndim
    for arg, t in (("scale", scale), ("zero_point", zero_point)):
        if t._meta.ndim != 1 or t._meta.shape[0] != x._meta.shape[axis]:
            raise RuntimeError(f"{name}: dimensions of {arg} and input must be equal: {arg} has shape "
                               f"{list(t._meta.shape)}, input has {x._meta.shape[axis]} channels on axis {axis}")
    if bool(F.any(F.logical_or(F.lt(zero_point, quant_min), F.gt(zero_point, quant_max)))):
        raise RuntimeError(f"{name}: `zero_point` must be between `quant_min` and `quant_max`.")
    shape = [1] * ndim
    shape[axis] = -1
    dtype = opmath_dtype(x._meta.dtype)
    return _fake_quantize(x, F.reshape(F.cast(scale, dtype), shape), F.reshape(F.cast(zero_point, dtype), shape),
                          quant_min, quant_max)
