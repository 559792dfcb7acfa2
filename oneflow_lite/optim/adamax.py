"""``flow.optim.Adamax``: Adam with the infinity norm (PyTorch's algorithm, defaults and state)."""

from __future__ import annotations

from oneflow_lite.functional import maximum
from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_at_least_zero,
    check_betas,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_step_counter,
    eager_zeros_like,
    ema_,
    number,
    sub_scaled,
)


class Adamax(Optimizer):
    r"""Adamax, as ``torch.optim.Adamax``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                          (if weight_decay != 0)
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        theta = theta - lr / (1 - beta1 ** t) * m / u

    State per parameter: ``step`` (a 0-d tensor), ``exp_avg`` (m) and ``exp_inf`` (u). ``lr`` is a
    number or a 0-d tensor; ``capturable=True`` keeps the step count in tensors, as during an nn.Graph
    capture (Note [Optimizer steps in a graph]). ``foreach`` is accepted for PyTorch compatibility;
    ``differentiable`` must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("exp_avg", "exp_inf"))

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("Adamax", group["lr"])
        check_number("Adamax", "eps", group["eps"])
        check_number("Adamax", "weight_decay", group["weight_decay"])
        for name in ("maximize", "capturable"):
            check_bool("Adamax", name, group[name])
        check_unsupported("Adamax", group)
        check_at_least_zero(group, "eps", "epsilon value")
        check_betas("Adamax", group["betas"])
        check_at_least_zero(group, "weight_decay", "weight_decay value")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        tensor_mode = tensor_mode or group["capturable"]
        (beta1, beta2), eps, weight_decay = group["betas"], group["eps"], group["weight_decay"]
        lr, beta1 = number(group["lr"], tensor_mode), number(beta1, tensor_mode)
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = eager_step_counter()
                state["exp_avg"] = eager_zeros_like(p)
                state["exp_inf"] = eager_zeros_like(p)
            step_t, exp_avg, exp_inf = state["step"], state["exp_avg"], state["exp_inf"]
            step_t.add_(1)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            ema_(exp_avg, grad, beta1)
            exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
            if tensor_mode:
                sub_scaled(p, exp_avg.div(exp_inf), lr / (1 - beta1 ** step_t.double()))
            else:
                p.addcdiv_(exp_avg, exp_inf, value=-lr / (1 - beta1 ** step_t.item()))
