"""``flow.optim.Adafactor``: Adam-like steps with a factored second moment (PyTorch 2.5+'s algorithm,
defaults and state)."""

from __future__ import annotations

import numpy as np

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functional import minimum, norm
from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_bool,
    check_lr,
    check_number,
    eager_scalar,
    eager_zeros,
    eager_zeros_like,
    number,
    sub_scaled,
)


class Adafactor(Optimizer):
    r"""Adafactor, as ``torch.optim.Adafactor``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        beta2_t = 1 - t ** beta2_decay;  rho_t = min(lr, 1 / sqrt(t))
        alpha = max(eps2, RMS(theta)) * rho_t
        theta = theta * (1 - lr * weight_decay)
        R = beta2_t R + (1 - beta2_t) mean(g * g, dim=-1);  C = beta2_t C + (1 - beta2_t) mean(g * g, dim=-2)
        V = R C / max(mean(R, dim=-2), eps1)                  (2-D and more: factored over the last two dims)
        V = beta2_t V + (1 - beta2_t) g * g                   (vectors and scalars)
        U = g / sqrt(max(V, eps1 * eps1))
        theta = theta - alpha * U / max(1, RMS(U) / d)

    ``eps = (eps1, eps2)``; ``eps1=None`` is the machine epsilon of the parameter's dtype. State per
    parameter: ``step`` (a 0-d tensor) and ``row_var`` / ``col_var`` (R, C) or ``variance`` (V).
    ``lr`` is a number or a 0-d tensor; in an nn.Graph capture the maxima and minima are tensor ops
    (Note [Optimizer steps in a graph]). ``foreach`` is accepted for PyTorch compatibility.
    """

    _PARAM_SHAPED_STATE = frozenset(("variance",))

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("Adafactor", group["lr"], "Learning rate should be >= 0 but is: {}")
        for name in ("beta2_decay", "d", "weight_decay"):
            check_number("Adafactor", name, group[name])
        eps = group["eps"]
        if not isinstance(eps, (tuple, list)) or len(eps) != 2:
            raise TypeError(f"Adafactor: eps must be a pair (eps1 or None, eps2), got {eps!r}")
        if eps[0] is not None:
            check_number("Adafactor", "eps[0]", eps[0])
        check_number("Adafactor", "eps[1]", eps[1])
        check_bool("Adafactor", "maximize", group["maximize"])
        check_bool("Adafactor", "foreach", group["foreach"], optional=True)
        if not 0.0 >= group["beta2_decay"]:
            raise ValueError(f"beta2_decay should be <= 0 but is: {group['beta2_decay']}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= group["d"]:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {group['d']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"weight_decay should be >= 0 but is: {group['weight_decay']}")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        lr, weight_decay, (eps1, eps2) = number(group["lr"], tensor_mode), group["weight_decay"], group["eps"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                self._init_state(p, grad, state)
            state["step"].add_(1)
            if eps1 is None:
                eps1 = float(np.finfo(p.dtype.np_dtype).eps)
            if tensor_mode:
                step = state["step"].double()
                beta2_complement = (step ** group["beta2_decay"]).to(p.dtype)  # a lerp weight of the state's dtype
                rho_t = _min(lr, step.rsqrt())
                alpha = (norm(p) / p.numel() ** 0.5).clamp(min=eps2) * rho_t
            else:
                step = state["step"].item()
                beta2_complement, rho_t = step ** group["beta2_decay"], min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, norm(p).item() / (p.numel() ** 0.5)) * rho_t
            if weight_decay != 0:
                p.mul_(1 - lr * weight_decay)
            update = _variance_estimate(grad, state, beta2_complement, eps1)
            update = update.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
            rms = norm(update) / (update.numel() ** 0.5 * group["d"])
            if tensor_mode:
                sub_scaled(p, update, alpha / rms.clamp(min=1.0))
            else:
                p.add_(update, alpha=-alpha / max(1.0, rms.item()))

    @staticmethod
    def _init_state(p, grad, state: dict) -> None:
        state["step"] = eager_scalar(0.0)
        if grad.dim() > 1:
            shape = list(p.shape)
            state["row_var"] = eager_zeros(shape[:-1] + [1], p)
            state["col_var"] = eager_zeros(shape[:-2] + [1, shape[-1]], p)
        else:
            state["variance"] = eager_zeros_like(p)


def _min(lr, value: Tensor) -> Tensor:
    return minimum(value, lr) if isinstance(lr, Tensor) else value.clamp(max=lr)


def _variance_estimate(grad: Tensor, state: dict, beta2_complement, eps1: float) -> Tensor:
    """Update the second-moment state with ``grad``; the (new) estimate of E[g * g]."""
    if grad.dim() > 1:
        row_var, col_var = state["row_var"], state["col_var"]
        row_var.lerp_(norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1)), beta2_complement)
        col_var.lerp_(norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2)), beta2_complement)
        estimate = row_var @ col_var
        return estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    variance = state["variance"]
    variance.lerp_(grad * grad, beta2_complement)
    return variance.clone()
