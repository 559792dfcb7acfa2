"""``flow.optim.Adam`` (PyTorch's algorithm, with L2 weight decay, AMSGrad and maximize); ``AdamW``
(adamw.py) is the same step with decoupled weight decay."""

from __future__ import annotations

import math

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functional import maximum
from oneflow_lite.functors.shape import cached_attrs
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
    update_exprs,
    update_in_place,
    use_fused_update,
)

_ADAM_UPDATE = update_exprs("adam_update", ("model", "model_diff", "m", "v", "max_v?", "step", "learning_rate?"))
_ADAM_ATTRS = ("learning_rate_val", "scale", "l2", "beta1", "beta2", "epsilon", "weight_decay", "amsgrad",
               "do_bias_correction")
_adam_attrs: dict = {}


class Adam(Optimizer):
    r"""Adam, as ``torch.optim.Adam``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                       (if weight_decay != 0)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)                              (amsgrad; v_max replaces v below)
        theta = theta - lr / (1 - beta1 ** t) * m / (sqrt(v) / sqrt(1 - beta2 ** t) + eps)

    State per parameter: ``step`` (a 0-d tensor), ``exp_avg`` (m), ``exp_avg_sq`` (v) and, with
    amsgrad, ``max_exp_avg_sq``. Each parameter is updated by one ``adam_update`` op (Note [Fused
    update ops] in optimizer.py). ``lr`` is a number or a 0-d tensor; ``capturable=True`` keeps the
    step count and bias corrections in tensors, as during an nn.Graph capture (Note [Optimizer steps
    in a graph]). ``foreach`` is accepted for PyTorch compatibility; ``differentiable`` and ``fused``
    must stay off. ``decoupled_weight_decay=True`` is AdamW's step (PyTorch 2.x's option, a group key).
    """

    _PARAM_SHAPED_STATE = frozenset(("exp_avg", "exp_avg_sq", "max_exp_avg_sq"))
    _decoupled_weight_decay = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "foreach": foreach, "maximize": maximize, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay or self._decoupled_weight_decay}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        name = type(self).__name__
        check_lr(name, group["lr"])
        check_number(name, "eps", group["eps"])
        check_number(name, "weight_decay", group["weight_decay"])
        group.setdefault("decoupled_weight_decay", self._decoupled_weight_decay)  # a state dict saved without it
        for flag in ("amsgrad", "maximize", "capturable", "decoupled_weight_decay"):
            check_bool(name, flag, group[flag])
        check_unsupported(name, group)
        check_at_least_zero(group, "eps", "epsilon value")
        check_betas(name, group["betas"])
        check_at_least_zero(group, "weight_decay", "weight_decay value")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _state_of(self, p, amsgrad: bool) -> dict:
        """The state of ``p``, made at its first step (``max_exp_avg_sq`` also when amsgrad was turned on later)."""
        state = self.state[p]
        if not state:
            state["step"] = eager_step_counter()
            state["exp_avg"] = eager_zeros_like(p)
            state["exp_avg_sq"] = eager_zeros_like(p)
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = eager_zeros_like(p)
        return state

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        (beta1, beta2), eps, weight_decay = group["betas"], group["eps"], group["weight_decay"]
        if use_fused_update(group, beta1, beta2, eps, weight_decay):
            self._fused_update_group(group)
        else:
            self._unfused_update_group(group, tensor_mode)

    def _fused_update_group(self, group: dict) -> None:
        """Each parameter's step as one ``adam_update`` (Note [Fused update ops] in optimizer.py)."""
        lr, (beta1, beta2), amsgrad = group["lr"], group["betas"], group["amsgrad"]
        tensor_lr = isinstance(lr, Tensor)
        wd = float(group["weight_decay"]) + 0.0  # + 0.0: -0.0 becomes 0.0, equal keys of the attrs cache
        decoupled = group.get("decoupled_weight_decay", self._decoupled_weight_decay)
        attrs = cached_attrs(_adam_attrs, _ADAM_ATTRS, (
            0.0 if tensor_lr else float(lr) + 0.0, -1.0 if group["maximize"] else 1.0, 0.0 if decoupled else wd,
            float(beta1) + 0.0, float(beta2) + 0.0, float(group["eps"]) + 0.0, wd if decoupled else 0.0, amsgrad, True))
        expr, lr_input = _ADAM_UPDATE[amsgrad, tensor_lr], (lr,) if tensor_lr else ()
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            state = self._state_of(p, amsgrad)
            step_t = state["step"]
            step_t.add_(1)
            max_v = (state["max_exp_avg_sq"],) if amsgrad else ()
            update_in_place(expr, p, (grad, state["exp_avg"], state["exp_avg_sq"], *max_v, step_t, *lr_input), attrs)

    def _unfused_update_group(self, group: dict, tensor_mode: bool) -> None:
        """The reference step, op by op (Note [Fused update ops] in optimizer.py)."""
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
        tensor_mode = tensor_mode or group["capturable"]
        lr, beta1 = number(lr, tensor_mode), number(beta1, tensor_mode)
        decoupled = group.get("decoupled_weight_decay", self._decoupled_weight_decay)
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if maximize:
                grad = -grad
            state = self._state_of(p, amsgrad)
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
