"""``flow.func.stack_module_state`` (PyTorch's ``torch.func``): the parameters and buffers of several models of
one architecture stacked along a new leading dim, for ``vmap`` over ``functional_call`` (model ensembling)."""

from __future__ import annotations

from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.framework.calls import F

__all__ = ["stack_module_state"]


def stack_module_state(models) -> tuple[dict, dict]:
    """``(params, buffers)``: dicts by name of the models' tensors stacked on dim 0; the stacked parameters are new
    leaves requiring grad as the originals do."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if any(m.training != models[0].training for m in models):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = models[0]
    if any(type(m) is not type(first) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    named = [dict(m.named_parameters()) for m in models]
    with no_grad():
        params = {name: F.stack([n[name].detach() for n in named], 0).requires_grad_(p.requires_grad)
                  for name, p in named[0].items()}
        buffers = {name: F.stack([dict(m.named_buffers())[name] for m in models], 0)
                   for name, _ in first.named_buffers()}
    return params, buffers
