"""``flow.optim.Adagrad`` (PyTorch's algorithm, defaults and state)."""

from __future__ import annotations

from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_at_least_zero,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_full_like,
    eager_scalar,
    number,
    sub_scaled,
)


class Adagrad(Optimizer):
    r"""Adagrad, as ``torch.optim.Adagrad``.

    At step :math:`t`, for each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``)::

        g = g + weight_decay * theta                          (if weight_decay != 0)
        s = s + g * g
        theta = theta - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)

    State per parameter, made when the parameter is added (as PyTorch does): ``step`` (a 0-d tensor)
    and ``sum`` (s, starting at ``initial_accumulator_value``). ``lr`` is a number or a 0-d tensor
    (Note [Optimizer steps in a graph]). ``foreach`` is accepted for PyTorch compatibility;
    ``differentiable`` and ``fused`` must stay off; sparse gradients are not provided.
    """

    _PARAM_SHAPED_STATE = frozenset(("sum",))

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("Adagrad", group["lr"])
        for name in ("lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            check_number("Adagrad", name, group[name])
        check_bool("Adagrad", "maximize", group["maximize"])
        check_unsupported("Adagrad", group)
        check_at_least_zero(group, "lr_decay", "lr_decay value")
        check_at_least_zero(group, "weight_decay", "weight_decay value")
        check_at_least_zero(group, "initial_accumulator_value", "initial_accumulator_value value")
        check_at_least_zero(group, "eps", "epsilon value")

    def add_param_group(self, param_group: dict) -> None:
        """Add a parameter group; its parameters' state starts now (``sum`` = initial_accumulator_value)."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self._init_state(p, group, self.state[p])

    @staticmethod
    def _init_state(p, group: dict, state: dict) -> None:
        if not state:
            state["step"] = eager_scalar(0.0)
            state["sum"] = eager_full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        lr = number(group["lr"], tensor_mode)
        lr_decay, eps, weight_decay = group["lr_decay"], group["eps"], group["weight_decay"]
        for p, grad, state in self._params_with_grad(group):
            self._init_state(p, group, state)  # a state dict loaded without this parameter's state
            step_t = state["step"]
            step_t.add_(1)
            if weight_decay != 0:
                grad = grad.add(p, alpha=weight_decay)
            state_sum = state["sum"]
            state_sum.addcmul_(grad, grad, value=1)
            std = state_sum.sqrt().add_(eps)
            if tensor_mode:
                clr = lr / ((step_t.double() - 1) * lr_decay + 1) if lr_decay != 0 else lr
                sub_scaled(p, grad.div(std), clr)
            else:
                clr = lr / (1 + (step_t.item() - 1) * lr_decay)
                p.addcdiv_(grad, std, value=-clr)
