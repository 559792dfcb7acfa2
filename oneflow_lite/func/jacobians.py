"""``flow.func.jacrev`` / ``jacfwd`` / ``hessian`` (PyTorch's ``torch.func``): Jacobians of a function with
respect to some of its arguments, built like ``grad`` (grad_transforms.py) from ``flow.autograd.grad``.

Note [Jacobians by rows]
``jacrev(f)(*args)`` calls ``f`` once on watched arguments and takes one reverse pass per output element
(``retain_graph``), stacking the gradients into ``output.shape + input.shape`` per (output leaf, input leaf).
``jacfwd`` gives the same values (PyTorch computes them in forward mode; here they come from the same reverse
passes). When an argument already requires grad (an outer transform differentiates through this one) the passes
build a graph, so ``hessian(f) = jacfwd(jacrev(f))`` works, and so does ``vmap(jacrev(f))``.
"""

from __future__ import annotations

import functools

from oneflow_lite.autograd.engine import grad as _autograd_grad
from oneflow_lite.autograd.grad_mode import enable_grad
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, Tensor
from oneflow_lite.func.grad_transforms import _call_watched
from oneflow_lite.func.pytree import tree_flatten, tree_unflatten

__all__ = ["hessian", "jacfwd", "jacrev"]


def _jacobian(func, argnums, has_aux, args, kwargs, fn):
    with enable_grad():
        groups, out, aux = _call_watched(func, argnums, has_aux, args, kwargs, fn)
        out_flat, out_spec = tree_flatten(out)
        for o in out_flat:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{fn}: expected f(*args) to return Tensors (or pytrees of them), got "
                                   f"{type(o).__name__}")
        flat_in = [t for flat, _, _ in groups for t in flat]
        create = any(nested for _, _, nested in groups)
        per_output = [_rows(o, flat_in, create) for o in out_flat]
    results = []
    for o, rows in zip(out_flat, per_output):
        grads, k = [], 0
        for flat, spec, _ in groups:
            part = [rows[k + j].reshape(*o.shape, *t.shape) for j, t in enumerate(flat)]
            k += len(flat)
            grads.append(tree_unflatten(part, spec))
        results.append(grads[0] if isinstance(argnums, int) else tuple(grads))
    jac = tree_unflatten(results, out_spec)
    return (jac, aux) if has_aux else jac


def _rows(out, inputs, create):
    """The Jacobian of ``out`` with respect to each of ``inputs``, as ``(out.numel(), *input.shape)`` tensors."""
    flat = out.reshape(-1)
    rows = [[] for _ in inputs]
    for k in range(flat.shape[0]):
        element = flat[k]
        grads = _autograd_grad(element, inputs, retain_graph=True, create_graph=create, allow_unused=True) \
            if element._key_set & AUTOGRAD_KEY_SET else (None,) * len(inputs)
        for j, (g, t) in enumerate(zip(grads, inputs)):
            rows[j].append(F.zeros_like(t) if g is None else g)
    return [F.stack(r, 0) if r else F.zeros((0, *t.shape), dtype=t.dtype, device=t.device)
            for r, t in zip(rows, inputs)]


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """``f`` -> the function computing the Jacobian of ``f(*args)`` w.r.t. ``args[argnums]`` (Note [Jacobians by
    rows])."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacobian(func, argnums, has_aux, args, kwargs, "jacrev")
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``f`` -> the function computing the Jacobian of ``f(*args)`` w.r.t. ``args[argnums]`` (the values of
    forward mode, from reverse passes: Note [Jacobians by rows])."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacobian(func, argnums, has_aux, args, kwargs, "jacfwd")
    return wrapper


def hessian(func, argnums=0):
    """``f`` -> the function computing the Hessian of the scalar ``f(*args)`` w.r.t. ``args[argnums]``."""
    return jacfwd(jacrev(func, argnums), argnums)
