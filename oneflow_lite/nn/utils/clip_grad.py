"""``clip_grad_norm_`` and ``clip_grad_value_``: rescale or clamp the ``.grad`` of parameters in place.

They compute with tensor ops under ``no_grad`` (no value is read back unless
``error_if_nonfinite``), so an ``nn.Graph`` captures them with the training step.
"""

from __future__ import annotations

import functools
import math

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.framework.dtype import promote_types
from oneflow_lite.framework.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(name, parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    try:
        parameters = list(parameters)
    except TypeError:
        raise TypeError(f"{name}: parameters must be a Tensor or an iterable of Tensors, got "
                        f"{type(parameters).__name__}") from None
    for p in parameters:
        if not isinstance(p, Tensor):
            raise TypeError(f"{name}: parameters must be Tensors, got an element of type {type(p).__name__}")
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total ``norm_type``-norm (the norm of
    the per-gradient norms; ``inf``: the largest absolute value) is at most ``max_norm``: each is multiplied
    by ``min(1, max_norm / (total + 1e-6))``. Returns the total norm (before clipping). ``foreach`` is
    accepted for PyTorch compatibility (there is one implementation)."""
    grads = _grads("clip_grad_norm_", parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return F.zeros(())
    dtype = functools.reduce(promote_types, [g.dtype for g in grads])
    with no_grad():
        if norm_type == math.inf:
            norms = [F.cast(F.amax(F.abs(g)), dtype) for g in grads]
            total = F.amax(F.stack(norms))
        else:
            norms = [F.cast(F.norm(g, norm_type), dtype) for g in grads]
            total = F.norm(F.stack(norms), norm_type)
        if error_if_nonfinite and not bool(F.isfinite(total)):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               f"so it cannot be clipped. To disable this error and scale the gradients by the "
                               f"non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = F.clamp(F.div(max_norm, F.add(total, 1e-6)), max=1.0)
        for g in grads:
            g.mul_(F.cast(coef, g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp the gradients of ``parameters`` in place to [-clip_value, clip_value] (``foreach`` as in
    :func:`clip_grad_norm_`)."""
    grads = _grads("clip_grad_value_", parameters)
    clip_value = float(clip_value)
    with no_grad():
        for g in grads:
            g.clamp_(-clip_value, clip_value)
