"""``flow.optim.Adam`` (PyTorch's algorithm, with L2 weight decay, AMSGrad and maximize); ``AdamW``
(adamw.py) is the same step with decoupled weight decay."""

from __future__ import annotations

import math

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
)


class Adam(Optimizer):
    r"""Adam, as ``torch.optim.Adam``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                       (if weight_decay != 0)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)                              (amsgrad; v_max replaces v below)
        theta = theta - lr / (1 - beta1 ** t) * m / (sqrt(v) / sqrt(1 - beta2 ** t) + eps)

    State per parameter: ``step`` (a 0-d tensor), ``exp_avg`` (m), ``exp_avg_sq`` (v) and, with
    amsgrad, ``max_exp_avg_sq``. ``lr`` is a number or a 0-d tensor; ``capturable=True`` keeps the
    step count and bias corrections in tensors, as during an nn.Graph capture (Note [Optimizer steps
    in a graph]). ``foreach`` is accepted for PyTorch compatibility; ``differentiable`` and ``fused``
    must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("exp_avg", "exp_avg_sq", "max_exp_avg_sq"))
    _decoupled_weight_decay = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "foreach": foreach, "maximize": maximize, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        name = type(self).__name__
        check_lr(name, group["lr"])
        check_number(name, "eps", group["eps"])
        check_number(name, "weight_decay", group["weight_decay"])
        for flag in ("amsgrad", "maximize", "capturable"):
            check_bool(name, flag, group[flag])
        check_unsupported(name, group)
        check_at_least_zero(group, "eps", "epsilon value")
        check_betas(name, group["betas"])
        check_at_least_zero(group, "weight_decay", "weight_decay value")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
        tensor_mode = tensor_mode or group["capturable"]
        lr, beta1 = number(lr, tensor_mode), number(beta1, tensor_mode)
        decoupled = self._decoupled_weight_decay
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if maximize:
                grad = -grad
            state = self.state[p]
            if not state:
                state["step"] = eager_step_counter()
                state["exp_avg"] = eager_zeros_like(p)
                state["exp_avg_sq"] = eager_zeros_like(p)
            if amsgrad and "max_exp_avg_sq" not in state:  # also when amsgrad was turned on later
                state["max_exp_avg_sq"] = eager_zeros_like(p)
            step_t, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
            step_t.add_(1)
            if weight_decay != 0:
                if decoupled:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            ema_(exp_avg, grad, beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            if amsgrad:
                max_exp_avg_sq = state["max_exp_avg_sq"]
                max_exp_avg_sq.copy_(maximum(max_exp_avg_sq, exp_avg_sq))
                exp_avg_sq = max_exp_avg_sq
            if tensor_mode:
                # theta += m / denom with the (negative) step size folded into denom: one in-place op on theta
                # the corrections in float64 whatever the (float32) step counter: as exact as the eager branch
                step_f = step_t.double()
                step_size_neg = (lr / (1 - beta1 ** step_f)).neg()
                bias_correction2_sqrt = (1 - beta2 ** step_f).sqrt()
                denom = (exp_avg_sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
                p.addcdiv_(exp_avg, denom)
            else:
                step = step_t.item()
                step_size = lr / (1 - beta1 ** step)
                denom = (exp_avg_sq.sqrt() / math.sqrt(1 - beta2 ** step)).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)
