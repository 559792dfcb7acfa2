"""``flow.compile``: PyTorch 2's ``torch.compile``, accepted so that scripts written for it run unchanged."""

from __future__ import annotations

__all__ = ["compile"]


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None, options=None,
            disable: bool = False):
    """Returns ``model`` itself (also as a decorator, ``@flow.compile`` or ``@flow.compile(...)``): oneflow_lite
    has no just-in-time compiler behind this name, and running the model as it is gives the same results.
    For a captured, optimised graph use ``flow.nn.Graph``."""
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise TypeError(f"flow.compile: expected a module or a function, got {type(model).__name__}")
    return model
