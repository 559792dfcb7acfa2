"""``flow.func.grad`` / ``grad_and_value`` / ``vjp`` / ``functional_call`` (PyTorch's ``torch.func``).

They are written with ``flow.autograd.grad``, so they compose with ``flow.vmap``: ``vmap(grad(f))`` gives
per-sample gradients (Note [Batching and autograd] in interpreters/batched.py)::

    def loss(params, x, y):
        return F.cross_entropy(flow.func.functional_call(model, params, (x[None],)), y[None])

    per_sample = flow.vmap(flow.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)

An argument that already requires grad (an outer ``grad`` differentiates through this one) is used as it
is and the gradient is made with ``create_graph=True``, so ``grad(grad(f))`` works.
"""

from __future__ import annotations

import functools

from oneflow_lite.autograd.engine import grad as _autograd_grad
from oneflow_lite.autograd.grad_mode import enable_grad
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import AUTOGRAD_KEY_SET, Tensor
from oneflow_lite.func.pytree import tree_flatten, tree_unflatten


def _argnums(argnums, n, fn):
    nums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else argnums
    if not isinstance(nums, tuple) or not nums or not all(isinstance(a, int) and not isinstance(a, bool)
                                                          for a in nums):
        raise TypeError(f"{fn}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    out = []
    for a in nums:
        if not -n <= a < n:
            raise ValueError(f"{fn}: argnums {a} is out of range for a function called with {n} positional "
                             f"argument(s)")
        out.append(a % n)
    return out


def _watch(tree, fn):
    """``tree`` with each floating tensor leaf made a tensor that requires grad (a detached leaf, or the tensor
    itself when it already requires grad); returns (tree, flat leaves, whether to create a graph)."""
    leaves, spec = tree_flatten(tree)
    watched, nested = [], False
    for i, t in enumerate(leaves):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}: the differentiated arguments must be tensors (or pytrees of them), got "
                            f"{type(t).__name__}")
        if not t._meta.dtype.is_floating_point:
            raise TypeError(f"{fn}: only floating point tensors can be differentiated, got {t._meta.dtype.name}")
        if t._key_set & AUTOGRAD_KEY_SET:
            nested = True
            watched.append(t)
        else:
            watched.append(t.detach().requires_grad_())
    return tree_unflatten(watched, spec), watched, spec, nested


def _scalar_output(out, fn):
    if not isinstance(out, Tensor):
        raise RuntimeError(f"{fn}: expected f(*args) to return a Tensor, got {type(out).__name__}")  # noqa: TRY004
    if out._meta.numel != 1:
        raise RuntimeError(f"{fn}: expected f(*args) to return a scalar Tensor, got tensor with "
                           f"{out._meta.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")


def _call_watched(func, argnums, has_aux, args, kwargs, fn):
    """``func(*args, **kwargs)`` with ``args[argnums]`` watched (call it under ``enable_grad``): (groups, output,
    aux), a group ``(flat leaves, spec, nested)`` per differentiated argument."""
    args = list(args)
    groups = []
    for a in _argnums(argnums, len(args), fn):
        args[a], flat, spec, nested = _watch(args[a], fn)
        groups.append((flat, spec, nested))
    out = func(*args, **kwargs)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(f"{fn}(f, has_aux=True): f must return a (output, aux) tuple")
        out, aux = out
    return groups, out, aux


def _grad_and_value(func, argnums, has_aux, args, kwargs, fn):
    with enable_grad():
        groups, out, aux = _call_watched(func, argnums, has_aux, args, kwargs, fn)
        _scalar_output(out, fn)
        flat_all = [t for flat, _, _ in groups for t in flat]
        create = any(nested for _, _, nested in groups)
        if out._key_set & AUTOGRAD_KEY_SET:
            captured = _autograd_grad(out, flat_all, create_graph=create, allow_unused=True)
        else:
            captured = (None,) * len(flat_all)
    grads, k = [], 0
    for flat, spec, _ in groups:
        part = [F.zeros_like(t) if g is None else g for t, g in zip(flat, captured[k:k + len(flat)])]
        k += len(flat)
        grads.append(tree_unflatten(part, spec))
    g = grads[0] if isinstance(argnums, int) else tuple(grads)
    value = out if create else out.detach()
    return g, ((value, aux) if has_aux else value)


def grad_and_value(func, argnums=0, has_aux=False):
    """``f`` -> a function returning ``(gradient of f w.r.t. args[argnums], f(*args))``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs, "grad_and_value")
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``f`` -> the function computing the gradient of the scalar ``f(*args)`` w.r.t. ``args[argnums]``
    (with ``has_aux``: ``(gradient, aux)``)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs, "grad")
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the vector-Jacobian product per primal."""
    with enable_grad():
        watched = []
        specs = []
        args = []
        for p in primals:
            tree, flat, spec, _ = _watch(p, "vjp")
            args.append(tree)
            watched.append(flat)
            specs.append(spec)
        out = func(*args)
    aux = None
    if has_aux:
        out, aux = out
    out_flat, out_spec = tree_flatten(out)
    flat_in = [t for flat in watched for t in flat]

    def vjp_fn(cotangents):
        ct_flat, _ = tree_flatten(cotangents)
        if len(ct_flat) != len(out_flat):
            raise RuntimeError(f"vjp: expected {len(out_flat)} cotangent(s) (one per output), got {len(ct_flat)}")
        pairs = [(o, c) for o, c in zip(out_flat, ct_flat) if o._key_set & AUTOGRAD_KEY_SET]
        captured = _autograd_grad([o for o, _ in pairs], flat_in, [c for _, c in pairs], retain_graph=True,
                                  allow_unused=True) if pairs else (None,) * len(flat_in)
        result, k = [], 0
        for flat, spec in zip(watched, specs):
            part = [F.zeros_like(t) if g is None else g for t, g in zip(flat, captured[k:k + len(flat)])]
            k += len(flat)
            result.append(tree_unflatten(part, spec))
        return tuple(result)

    detached = tree_unflatten([o.detach() for o in out_flat], out_spec)
    return (detached, vjp_fn, aux) if has_aux else (detached, vjp_fn)


def functional_call(module, parameters_and_buffers, args=(), kwargs=None, *, strict: bool = False):
    """``module(*args, **kwargs)`` with its parameters and buffers named in ``parameters_and_buffers`` (a dict,
    or a tuple of dicts) replaced by the given tensors for the call (PyTorch's ``torch.func.functional_call``)."""
    if isinstance(parameters_and_buffers, (tuple, list)):
        merged = {}
        for d in parameters_and_buffers:
            merged.update(d)
        parameters_and_buffers = merged
    if not isinstance(args, tuple):
        args = (args,)
    slots = dict(module.named_parameters(remove_duplicate=False))
    slots.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = sorted(set(slots) - set(parameters_and_buffers))
        if missing:
            raise RuntimeError(f"functional_call: missing key(s) {missing} (strict=True)")
    saved = []
    try:
        for name, value in parameters_and_buffers.items():
            owner_path, _, leaf = name.rpartition(".")
            owner = module.get_submodule(owner_path) if owner_path else module
            store = owner._parameters if leaf in owner._parameters else owner._buffers if leaf in owner._buffers \
                else None
            if store is None:
                raise AttributeError(f"functional_call: the module has no parameter or buffer '{name}'")
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for store, leaf, old in reversed(saved):
            store[leaf] = old
