"""``flow.optim.Rprop``: resilient backpropagation (PyTorch's algorithm, defaults and state)."""

from __future__ import annotations

from oneflow_lite.functional import full_like, where, zeros_like
from oneflow_lite.optim.optimizer import (
    Optimizer,
    check_bool,
    check_lr,
    check_number,
    check_unsupported,
    eager_full_like,
    eager_step_counter,
    eager_zeros_like,
    value_of,
)


def _check_pair(name: str, value) -> None:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"Rprop: {name} must be a pair of numbers, got {value!r}")
    check_number("Rprop", f"{name}[0]", value[0])
    check_number("Rprop", f"{name}[1]", value[1])


class Rprop(Optimizer):
    r"""Rprop, as ``torch.optim.Rprop``.

    For each parameter :math:`\theta` with gradient :math:`g` (negated with ``maximize``), elementwise::

        s = g * g_prev
        eta = etaplus if s > 0, etaminus if s < 0, 1 otherwise
        step_size = clamp(step_size * eta, step_size_min, step_size_max)
        g = 0 where s < 0
        theta = theta - sign(g) * step_size;  g_prev = g

    State per parameter: ``step`` (a 0-d tensor), ``prev`` (g_prev) and ``step_size`` (starting at
    ``lr``; later changes of ``lr`` have no effect, as in PyTorch). ``foreach`` and ``capturable`` are
    accepted for PyTorch compatibility (no value is read into Python); ``differentiable`` must stay off.
    """

    _PARAM_SHAPED_STATE = frozenset(("prev", "step_size"))

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        check_lr("Rprop", group["lr"])
        _check_pair("etas", group["etas"])
        _check_pair("step_sizes", group["step_sizes"])
        for name in ("maximize", "capturable"):
            check_bool("Rprop", name, group[name])
        check_unsupported("Rprop", group)
        etaminus, etaplus = group["etas"]
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"Invalid eta values: {etaminus}, {etaplus}")

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step(closure, self._update_group)

    def _update_group(self, group: dict, tensor_mode: bool) -> None:
        (etaminus, etaplus), (step_size_min, step_size_max) = group["etas"], group["step_sizes"]
        for p, grad, state in self._params_with_grad(group):
            if not state:
                state["step"] = eager_step_counter()
                state["prev"] = eager_zeros_like(p)
                state["step_size"] = eager_full_like(grad, value_of(group["lr"]))
            state["step"].add_(1)
            prev, step_size = state["prev"], state["step_size"]
            sign = grad.mul(prev).sign()
            negative = sign.lt(0)
            factor = where(sign.gt(0), etaplus, where(negative, etaminus, full_like(sign, 1.0)))
            step_size.mul_(factor).clamp_(step_size_min, step_size_max)
            grad = where(negative, zeros_like(grad), grad)
            p.addcmul_(grad.sign(), step_size, value=-1)
            prev.copy_(grad)
