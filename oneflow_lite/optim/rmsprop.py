"""``flow.optim.RMSprop`` (PyTorch's algorithm: smoothing constant alpha, weight decay, momentum,
the centered variant and maximize)."""

from __future__ import annotations

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_step_counter,
    eager_zeros_like,
    number,
    sub_scaled,
    update_exprs,
    update_in_place,
    use_fused_update,
    value_of,
)

_RMSPROP_UPDATE = update_exprs("rmsprop_update", ("model", "model_diff", "mean_square", "mean_gradient?",
                                                  "momentum_buffer?", "learning_rate?"))
_RMSPROP_ATTRS = ("learning_rate_val", "scale", "l2", "decay_rate", "epsilon", "centered", "momentum")
_rmsprop_attrs: dict = {}


class RMSprop(Optimizer):
    r"""RMSprop, as ``torch.optim.RMSprop``.

    For each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                   (if weight_decay != 0)
        v = alpha * v + (1 - alpha) * g * g
        a = alpha * a + (1 - alpha) * g                (centered)
        d = sqrt(v - a * a) + eps if centered else sqrt(v) + eps
        b = momentum * b + g / d; theta = theta - lr * b      (if momentum > 0)
        theta = theta - lr * g / d                            (otherwise)

    State per parameter: ``step`` (a 0-d tensor), ``square_avg`` (v), ``momentum_buffer`` (b, with
    momentum) and ``grad_avg`` (a, when centered). Each parameter is updated by one ``rmsprop_update``
    op (Note [Fused update ops] in optimizer.py). ``lr`` is a number or a 0-d tensor (Note [Optimizer
    steps in a graph]); ``foreach`` and ``capturable`` are accepted for PyTorch compatibility (no value
    here is read back into Python); ``differentiable`` must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("square_avg", "momentum_buffer", "grad_avg"))

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("RMSprop", group["lr"])
        for name in ("alpha", "eps", "weight_decay", "momentum"):
            check_number("RMSprop", name, group[name])
        for name in ("centered", "capturable", "maximize"):
            check_bool("RMSprop", name, group[name])
        check_unsupported("RMSprop", group)
        if not 0.0 <= group["eps"]:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        if not 0.0 <= group["momentum"]:
            raise ValueError(f"Invalid momentum value: {group['momentum']}")
        if not 0.0 <= group["weight_decay"]:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")
        if not 0.0 <= group["alpha"]:
            raise ValueError(f"Invalid alpha value: {group['alpha']}")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _state_of(self, p, uses_momentum: bool, centered: bool) -> dict:
        """The state of ``p``, made at its first step (the buffers also when turned on later); the step counted."""
        state = self.state[p]
        if not state:
            state["step"] = eager_step_counter()
            state["square_avg"] = eager_zeros_like(p)
        if uses_momentum and "momentum_buffer" not in state:
            state["momentum_buffer"] = eager_zeros_like(p)
        if centered and "grad_avg" not in state:
            state["grad_avg"] = eager_zeros_like(p)
        state["step"].add_(1)
        return state

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        lr, alpha, eps, weight_decay = group["lr"], group["alpha"], group["eps"], group["weight_decay"]
        momentum, centered, maximize = group["momentum"], group["centered"], group["maximize"]
        tensor_mode = tensor_mode or group["capturable"]
        lr, momentum = number(lr, tensor_mode), number(momentum, tensor_mode)
        uses_momentum = value_of(momentum) > 0
        if use_fused_update(group, alpha, eps, weight_decay, momentum):
            self._fused_update_group(group, lr, uses_momentum)
            return
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if maximize:
                grad = -grad
            state = self._state_of(p, uses_momentum, centered)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
            if centered:
                grad_avg = state["grad_avg"]
                grad_avg.lerp_(grad, 1 - alpha)
                avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg.add_(eps)
            if uses_momentum:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(grad, avg)
                sub_scaled(p, buf, lr)
            elif isinstance(lr, Tensor):
                p.sub_(grad.div(avg).mul_(lr))
            else:
                p.addcdiv_(grad, avg, value=-lr)

    def _fused_update_group(self, group: dict, lr, uses_momentum: bool) -> None:
        """Each parameter's step as one ``rmsprop_update`` (Note [Fused update ops] in optimizer.py)."""
        centered, tensor_lr = group["centered"], isinstance(lr, Tensor)
        expr = _RMSPROP_UPDATE[centered, uses_momentum, tensor_lr]
        attrs = cached_attrs(_rmsprop_attrs, _RMSPROP_ATTRS, (
            0.0 if tensor_lr else float(lr) + 0.0, -1.0 if group["maximize"] else 1.0,
            float(group["weight_decay"]) + 0.0, float(group["alpha"]) + 0.0, float(group["eps"]) + 0.0, centered,
            float(group["momentum"]) + 0.0 if uses_momentum else 0.0))
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            state = self._state_of(p, uses_momentum, centered)
            inputs = [grad, state["square_avg"]]
            if centered:
                inputs.append(state["grad_avg"])
            if uses_momentum:
                inputs.append(state["momentum_buffer"])
            if tensor_lr:
                inputs.append(lr)
            update_in_place(expr, p, tuple(inputs), attrs)
