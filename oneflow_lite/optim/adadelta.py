"""``flow.optim.Adadelta`` (PyTorch's algorithm, defaults and state)."""

from __future__ import annotations

from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_at_least_zero,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_step_counter,
    eager_zeros_like,
    number,
    sub_scaled,
)


class Adadelta(Optimizer):
    r"""Adadelta, as ``torch.optim.Adadelta``.

    For each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                          (if weight_decay != 0)
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        theta = theta - lr * delta

    State per parameter: ``step`` (a 0-d tensor), ``square_avg`` (v) and ``acc_delta`` (u). ``lr`` is a
    number or a 0-d tensor (Note [Optimizer steps in a graph]); ``foreach`` and ``capturable`` are
    accepted for PyTorch compatibility (no value of the step is read into Python); ``differentiable``
    must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("square_avg", "acc_delta"))

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("Adadelta", group["lr"])
        for name in ("rho", "eps", "weight_decay"):
            check_number("Adadelta", name, group[name])
        for name in ("capturable", "maximize"):
            check_bool("Adadelta", name, group[name])
        check_unsupported("Adadelta", group)
        if not 0.0 <= group["rho"] <= 1.0:
            raise ValueError(f"Invalid rho value: {group['rho']}")
        check_at_least_zero(group, "eps", "epsilon value")
        check_at_least_zero(group, "weight_decay", "weight_decay value")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        lr = number(group["lr"], tensor_mode or group["capturable"])
        rho, eps, weight_decay = group["rho"], group["eps"], group["weight_decay"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = eager_step_counter()
                state["square_avg"] = eager_zeros_like(p)
                state["acc_delta"] = eager_zeros_like(p)
            state["step"].add_(1)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
            acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            sub_scaled(p, delta, lr)
