"""``flow.optim.NAdam``: Adam with Nesterov momentum (PyTorch's algorithm, defaults and state)."""

from __future__ import annotations

from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_at_least_zero,
    check_betas,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_scalar,
    eager_step_counter,
    eager_zeros_like,
    ema_,
    number,
)


class NAdam(Optimizer):
    r"""NAdam, as ``torch.optim.NAdam``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        theta = theta * (1 - lr * weight_decay)              (decoupled_weight_decay)
        g = g + weight_decay * theta                          (otherwise, if weight_decay != 0)
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        P = P * mu_t                                          (the product of the mu's)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2 ** t)) + eps
        theta = theta - lr * (1 - mu_t) / (1 - P) * g / d - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / d

    State per parameter: ``step`` and ``mu_product`` (P; 0-d tensors of PyTorch's scalar dtype),
    ``exp_avg`` (m) and ``exp_avg_sq`` (v). ``lr`` is a number or a 0-d tensor; ``capturable=True``
    keeps the step count and P in tensors, as during an nn.Graph capture (Note [Optimizer steps in a
    graph]). ``foreach`` is accepted for PyTorch compatibility; ``differentiable`` must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("exp_avg", "exp_avg_sq"))

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("NAdam", group["lr"])
        for name in ("eps", "weight_decay", "momentum_decay"):
            check_number("NAdam", name, group[name])
        for name in ("decoupled_weight_decay", "maximize", "capturable"):
            check_bool("NAdam", name, group[name])
        check_unsupported("NAdam", group)
        check_at_least_zero(group, "eps", "epsilon value")
        check_betas("NAdam", group["betas"])
        check_at_least_zero(group, "weight_decay", "weight_decay value")
        check_at_least_zero(group, "momentum_decay", "momentum_decay value")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        tensor_mode = tensor_mode or group["capturable"]
        (beta1, beta2), weight_decay = group["betas"], group["weight_decay"]
        lr, beta1 = number(group["lr"], tensor_mode), number(beta1, tensor_mode)
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = eager_step_counter()
                state["mu_product"] = eager_scalar(1.0)
                state["exp_avg"] = eager_zeros_like(p)
                state["exp_avg_sq"] = eager_zeros_like(p)
            state["step"].add_(1)
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            ema_(exp_avg, grad, beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            self._apply(p, grad, state, group, lr, beta1, tensor_mode)

    @staticmethod
    def _apply(p, grad, state, group, lr, beta1, tensor_mode: bool) -> None:
        """The update of ``p`` from the new moments (mu_product updated here)."""
        beta2, eps, momentum_decay = group["betas"][1], group["eps"], group["momentum_decay"]
        step_t, mu_product, exp_avg = state["step"], state["mu_product"], state["exp_avg"]
        step = step_t.double() if tensor_mode else step_t.item()
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product.mul_(mu)
        denom = state["exp_avg_sq"].div(1 - beta2 ** step).sqrt_().add_(eps)
        if tensor_mode:
            mu_product_f = mu_product.double()
            p.sub_(grad.div(denom).mul_(lr * (1.0 - mu) / (1.0 - mu_product_f)))
            p.sub_(exp_avg.div(denom).mul_(lr * mu_next / (1.0 - mu_product_f * mu_next)))
        else:
            mu_product_f = mu_product.item()
            p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product_f))
            p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product_f * mu_next))
