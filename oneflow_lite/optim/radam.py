"""``flow.optim.RAdam``: rectified Adam (PyTorch's algorithm, defaults and state)."""

from __future__ import annotations

from oneflow_lite.functional import where
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
)


class RAdam(Optimizer):
    r"""RAdam, as ``torch.optim.RAdam``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        theta = theta * (1 - lr * weight_decay)              (decoupled_weight_decay)
        g = g + weight_decay * theta                          (otherwise, if weight_decay != 0)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1 ** t)
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2 ** t / (1 - beta2 ** t)
        if rho_t > 5:
            r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
            theta = theta - lr * m_hat * sqrt(1 - beta2 ** t) / (sqrt(v) + eps) * r
        else:
            theta = theta - lr * m_hat

    State per parameter: ``step`` (a 0-d tensor), ``exp_avg`` (m) and ``exp_avg_sq`` (v). ``lr`` is a
    number or a 0-d tensor; ``capturable=True`` keeps the step count in tensors and chooses the branch
    with ``where``, as during an nn.Graph capture (Note [Optimizer steps in a graph]). ``foreach`` is
    accepted for PyTorch compatibility; ``differentiable`` must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("exp_avg", "exp_avg_sq"))

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("RAdam", group["lr"])
        check_number("RAdam", "eps", group["eps"])
        check_number("RAdam", "weight_decay", group["weight_decay"])
        for name in ("decoupled_weight_decay", "maximize", "capturable"):
            check_bool("RAdam", name, group[name])
        check_unsupported("RAdam", group)
        check_at_least_zero(group, "eps", "epsilon value")
        check_betas("RAdam", group["betas"])
        check_at_least_zero(group, "weight_decay", "weight_decay value")

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
            step = state["step"].double() if tensor_mode else state["step"].item()
            bias_corrected_exp_avg = exp_avg / (1 - beta1 ** step)
            bias_correction2 = 1 - beta2 ** step
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            if tensor_mode:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / (rho_t * (rho_inf - 4) * (rho_inf - 2)))
                adaptive_lr = exp_avg_sq.sqrt().add_(group["eps"]).reciprocal_().mul_(bias_correction2.sqrt())
                update = where(rho_t > 5.0, adaptive_lr * rect.sqrt(), 1.0)
                p.sub_(bias_corrected_exp_avg * lr * update)
            elif rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                adaptive_lr = bias_correction2 ** 0.5 / exp_avg_sq.sqrt().add_(group["eps"])
                p.sub_(bias_corrected_exp_avg * lr * adaptive_lr * rect ** 0.5)
            else:
                p.sub_(bias_corrected_exp_avg * lr)
