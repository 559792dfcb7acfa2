"""``flow.cond``: PyTorch's ``torch.cond(pred, true_fn, false_fn, operands=())`` structured conditional.

Eagerly (as PyTorch runs it outside ``torch.compile``/``torch.export``) it calls the branch ``pred`` selects
with ``*operands`` and returns what the branch returns; autograd records the ops of that branch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oneflow_lite.framework.tensor import Tensor

__all__ = ["cond"]


def _predicate(pred) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"cond(): Expected pred to be bool or single-element tensor, but got a tensor of "
                               f"shape {list(pred.shape)}.")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    raise RuntimeError(f"cond(): Expected pred to be bool or tensor, but got {pred!r}.")


def cond(pred: bool | int | float | Tensor, true_fn: Callable, false_fn: Callable,
         operands: tuple | list = ()) -> Any:
    """``true_fn(*operands)`` if ``pred`` (a bool or a one-element tensor) holds, else ``false_fn(*operands)``."""
    for name, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(fn):
            raise RuntimeError(f"cond(): Expect {name} to be callable, but got {fn!r}.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond(): Expect operands to be a tuple or list of tensors, but got "
                           f"{type(operands).__name__}.")
    return (true_fn if _predicate(pred) else false_fn)(*operands)
