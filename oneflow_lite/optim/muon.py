"""``flow.optim.Muon``: momentum orthogonalised by Newton-Schulz iterations, for 2-D parameters
(PyTorch 2.9+'s algorithm, defaults and state)."""

from __future__ import annotations

import math
import numbers

from oneflow_lite.framework import dtype as dtypes
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_bool,
    check_lr,
    check_number,
    eager_zeros_like,
    ema_,
    number,
    sub_scaled,
)

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def zeropower_via_newtonschulz(grad: Tensor, ns_coefficients, ns_steps: int, eps: float) -> Tensor:
    """An approximate orthogonalisation ``U V^T`` of the 2-D ``grad = U S V^T``: ``ns_steps`` quintic
    Newton-Schulz iterations ``X = a X + (b A + c A A) X`` with ``A = X X^T``, from ``X = G / ||G||``
    (taken on the wide orientation). PyTorch runs them in bfloat16; here in the gradient's dtype
    (float16 in float32): the result is close to PyTorch's, not bit-equal."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.float() if grad.dtype is dtypes.float16 else grad
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.T if tall else x


def adjusted_lr(lr, adjust_lr_fn, shape):
    """Muon's per-shape lr: ``lr * sqrt(max(1, A / B))`` ("original", the default) or
    ``lr * 0.2 * sqrt(max(A, B))`` ("match_rms_adamw") for an A x B parameter."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    r"""Muon, as ``torch.optim.Muon``: for the 2-D parameters of hidden layers (optimize biases,
    embeddings and other parameters with e.g. AdamW).

    For each parameter :math:`\theta` (A x B) with gradient :math:`g`::

        b = momentum * b + (1 - momentum) * g
        u = momentum * b + (1 - momentum) * g    if nesterov else b
        o = NewtonSchulz(u)                                    (zeropower_via_newtonschulz)
        theta = theta * (1 - lr * weight_decay) - adjusted_lr(lr, A x B) * o

    State per parameter: ``momentum_buffer`` (b). ``lr`` is a number or a 0-d tensor (Note [Optimizer
    steps in a graph]). The Newton-Schulz iterations run in the gradient's dtype, not bfloat16.
    """

    _PARAM_SHAPED_STATE = frozenset(("momentum_buffer",))

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=NS_COEFFICIENTS, eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("Muon", group["lr"], "Learning rate should be >= 0 but is: {}")
        for name in ("weight_decay", "momentum", "eps"):
            check_number("Muon", name, group[name])
        check_bool("Muon", "nesterov", group["nesterov"])
        steps = group["ns_steps"]
        if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
            raise TypeError(f"Muon: ns_steps must be an int, not {type(steps).__name__}")
        if not 0.0 <= group["momentum"]:
            raise ValueError(f"momentum should be >= 0 but is: {group['momentum']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"weight decay should be >= 0 but is: {group['weight_decay']}")
        if group["adjust_lr_fn"] is not None and group["adjust_lr_fn"] not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {group['adjust_lr_fn']} is not supported")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        lr, momentum = number(group["lr"], tensor_mode), number(group["momentum"], tensor_mode)
        for p, grad, state in self._params_with_grad(group):
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = eager_zeros_like(grad)
            buf = state["momentum_buffer"]
            ema_(buf, grad, momentum)
            update = buf
            if group["nesterov"]:  # grad + momentum * (buf - grad); a tensor momentum only meets the state
                update = buf.sub(grad).mul_(momentum).add_(grad) if isinstance(momentum, Tensor) else \
                    grad.lerp(buf, momentum)
            update = zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            if group["weight_decay"] != 0:
                p.mul_(1 - lr * group["weight_decay"])
            sub_scaled(p, update, adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
