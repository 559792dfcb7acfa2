"""``flow.optim.ASGD``: averaged stochastic gradient descent (PyTorch's algorithm, defaults and state)."""

from __future__ import annotations

from oneflow_lite.functional import maximum, ones_like
from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_at_least_zero,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_scalar,
    eager_step_counter,
    eager_zeros_like,
    number,
    value_of,
)


class ASGD(Optimizer):
    r"""ASGD, as ``torch.optim.ASGD``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                          (if weight_decay != 0)
        theta = theta * (1 - lambd * eta) - eta * g
        ax = ax + mu * (theta - ax)                           (ax = theta while mu == 1)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)

    State per parameter: ``step``, ``eta`` (starting at lr) and ``mu`` (starting at 1), 0-d tensors
    of PyTorch's scalar dtype, and ``ax``, the average of the iterates. ``lr`` is a number or a 0-d
    tensor; ``capturable=True`` keeps every scalar in tensors, as during an nn.Graph capture (Note
    [Optimizer steps in a graph]). ``foreach`` is accepted for PyTorch compatibility;
    ``differentiable`` must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("ax",))

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("ASGD", group["lr"])
        for name in ("lambd", "alpha", "t0", "weight_decay"):
            check_number("ASGD", name, group[name])
        for name in ("maximize", "capturable"):
            check_bool("ASGD", name, group[name])
        check_unsupported("ASGD", group)
        check_at_least_zero(group, "weight_decay", "weight_decay value")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        tensor_mode = tensor_mode or group["capturable"]
        lr, lambd, alpha, t0 = number(group["lr"], tensor_mode), group["lambd"], group["alpha"], group["t0"]
        weight_decay = group["weight_decay"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = eager_step_counter()
                state["eta"] = eager_scalar(value_of(group["lr"]))
                state["mu"] = eager_scalar(1.0)
                state["ax"] = eager_zeros_like(p)
            step_t, eta, mu, ax = state["step"], state["eta"], state["mu"], state["ax"]
            step_t.add_(1)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            if tensor_mode:
                eta_f = eta.double()  # the decay factor in float64, as the eager step computes it
                p.mul_(1 - lambd * eta_f).sub_(grad * eta_f)
                ax.add_(p.sub(ax).mul_(mu))
                step = step_t.double()
                eta.copy_(lr / ((lambd * lr * step + 1) ** alpha))
                mu.copy_(1 / maximum(step - t0, ones_like(step)))
                continue
            eta_value = eta.item()
            p.mul_(1 - lambd * eta_value).add_(grad, alpha=-eta_value)
            if mu.item() != 1:
                ax.add_(p.sub(ax).mul_(mu))
            else:
                ax.copy_(p)
            step = step_t.item()
            eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
            mu.fill_(1 / max(1, step - t0))
