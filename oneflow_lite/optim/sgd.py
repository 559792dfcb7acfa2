"""``flow.optim.SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum,
weight decay and maximize (PyTorch's algorithm and defaults)."""

from __future__ import annotations

from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.shape import cached_attrs
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_zeros_like,
    number,
    update_exprs,
    update_in_place,
    use_fused_update,
    value_of,
)

_SGD_UPDATE = OpBuilder("sgd_update").input("model").input("model_diff").output("out").build()
_SGD_UPDATE_LR = OpBuilder("sgd_update").input("model").input("model_diff").input("learning_rate").output("out").build()
_SGD_ATTRS = ("learning_rate_val", "scale", "weight_decay")
_sgd_attrs: dict = {}
_MOMENTUM_UPDATE = update_exprs("momentum_update", ("model", "model_diff", "momentum", "learning_rate?"))
_MOMENTUM_ATTRS = ("learning_rate_val", "scale", "l2", "beta", "dampening", "nesterov")
_momentum_attrs: dict = {}


def sgd_update(p: Tensor, grad: Tensor, lr, scale: float = 1.0, weight_decay=0.0) -> None:
    """``p -= lr * (scale * grad + weight_decay * p)`` in place, as one ``sgd_update`` op (OneFlow's eager
    SGD); ``lr`` a number or a 1-element tensor, read when the op runs (Note [Optimizer steps in a graph]);
    ``scale`` 1.0 or -1.0 (maximize)."""
    # + 0.0 makes a -0.0 (a valid lr or weight decay) 0.0: the cache's keys compare them equal
    wd = float(weight_decay) + 0.0
    if isinstance(lr, Tensor):
        dispatch(_SGD_UPDATE_LR, (p, grad, lr), cached_attrs(_sgd_attrs, _SGD_ATTRS, (0.0, scale, wd)), (p,))
    else:
        attrs = cached_attrs(_sgd_attrs, _SGD_ATTRS, (float(lr) + 0.0, scale, wd))
        dispatch(_SGD_UPDATE, (p, grad), attrs, (p,))


class SGD(Optimizer):
    r"""Stochastic gradient descent (optionally with momentum), as ``torch.optim.SGD``.

    For each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                      (if weight_decay != 0)
        b = g                         at the first step   (if momentum != 0)
        b = momentum * b + (1 - dampening) * g   later
        g = g + momentum * b if nesterov else b
        theta = theta - lr * g

    Each parameter's update is one in-place op, as OneFlow's eager SGD: ``sgd_update`` without momentum,
    ``momentum_update`` with it (Note [Fused update ops] in optimizer.py), maximize and weight decay
    folded in.
    ``lr`` is a number or a 0-d tensor (Note [Optimizer steps in a graph]). ``foreach`` is accepted
    for PyTorch compatibility (parameters are updated one at a time either way); ``differentiable``
    and ``fused`` must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("momentum_buffer",))

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("SGD", group["lr"])
        for name in ("momentum", "dampening", "weight_decay"):
            check_number("SGD", name, group[name])
        for name in ("nesterov", "maximize"):
            check_bool("SGD", name, group[name])
        check_unsupported("SGD", group)
        if group["momentum"] < 0.0:
            raise ValueError(f"Invalid momentum value: {group['momentum']}")
        if group["weight_decay"] < 0.0:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        lr, momentum = number(lr, tensor_mode), number(momentum, tensor_mode)
        uses_momentum = value_of(momentum) != 0
        if tensor_mode and uses_momentum and dampening != 0 and any(
                p.grad is not None and "momentum_buffer" not in self.state.get(p, ()) for p in group["params"]):
            raise NotImplementedError(
                "SGD: the first step of momentum with dampening != 0 cannot be captured in an nn.Graph (it sets "
                "the buffer to the gradient, later steps damp it); take one eager step before capturing, or use "
                "dampening=0")
        if uses_momentum and use_fused_update(group, momentum, dampening, weight_decay):
            self._momentum_updates(group, lr, momentum)
            return
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if not uses_momentum:
                sgd_update(p, grad, lr, -1.0 if maximize else 1.0, weight_decay)
                continue
            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None and not tensor_mode:
                buf = state["momentum_buffer"] = grad.clone()
            else:
                if buf is None:  # captured first step: a zero buffer, then b = g (dampening is 0, see above)
                    buf = state["momentum_buffer"] = eager_zeros_like(p)
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            if nesterov:
                grad = grad + buf * momentum if isinstance(momentum, Tensor) else grad.add(buf, alpha=momentum)
            sgd_update(p, grad if nesterov else buf, lr)

    def _momentum_updates(self, group: dict, lr, momentum) -> None:
        """Each parameter's step as one ``momentum_update`` (Note [Fused update ops] in optimizer.py); a first step
        sets the buffer to the gradient: a zero buffer updated without dampening."""
        tensor_lr = isinstance(lr, Tensor)
        expr, lr_input = _MOMENTUM_UPDATE[(tensor_lr,)], (lr,) if tensor_lr else ()
        values = [0.0 if tensor_lr else float(lr) + 0.0, -1.0 if group["maximize"] else 1.0,
                  float(group["weight_decay"]) + 0.0, float(momentum) + 0.0, float(group["dampening"]) + 0.0,
                  group["nesterov"]]
        attrs = cached_attrs(_momentum_attrs, _MOMENTUM_ATTRS, tuple(values))
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = eager_zeros_like(p)
                first = cached_attrs(_momentum_attrs, _MOMENTUM_ATTRS, (*values[:4], 0.0, values[5]))
                update_in_place(expr, p, (grad, buf, *lr_input), first)
            else:
                update_in_place(expr, p, (grad, buf, *lr_input), attrs)
