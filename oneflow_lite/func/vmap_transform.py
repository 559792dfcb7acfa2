"""``flow.vmap`` / ``flow.func.vmap``: vectorising map (PyTorch's ``torch.vmap``).

``vmap(f, in_dims=0, out_dims=0)(*args)`` computes ``f`` on every sample of its mapped inputs at once:
each mapped input (``in_dims``: an int or None per argument, or a pytree prefix of the arguments) is
wrapped as a batched tensor whose logical shape is one sample's, ``f`` runs once on the batched tensors
(the batching interpreter turns each op into one op on the whole batch, interpreters/batched.py), and the
outputs are unwrapped with their batch dim at ``out_dims``. Nested vmaps map over several dims; with
``chunk_size`` the batch is processed that many samples at a time; ``randomness`` says what random ops do
inside ("error", "different" per sample or the "same" for all).

Gradients: ``vmap(grad(f))`` (or ``flow.autograd.grad`` inside the mapped function) gives per-sample
gradients (Note [Batching and autograd]); gradients also flow back through vmap's outputs into the mapped
inputs and the tensors the function closed over (PyTorch's ``grad(vmap(f))``, ``vmap(f)(x).sum().backward()``:
Note [Gradients through vmap's outputs] in func/vmap_autograd.py). ``backward()`` inside the mapped function
raises, as in PyTorch.
"""

from __future__ import annotations

import functools
import inspect

from oneflow_lite.framework.calls import F
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.func import vmap_autograd
from oneflow_lite.func.pytree import broadcast_prefix, leaf_paths, tree_flatten, tree_unflatten
from oneflow_lite.interpreters import batched as _batched

_RANDOMNESS = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over dim ``in_dims`` of its inputs (see the module docstring)."""
    if not callable(func):
        raise TypeError(f"vmap: func must be callable, got {type(func).__name__}")
    _check_dims_tree(in_dims, "in_dims")
    _check_dims_tree(out_dims, "out_dims")
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {', '.join(map(repr, _RANDOMNESS))}, got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or isinstance(chunk_size, bool)
                                   or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or a positive integer, got {chunk_size!r}")

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return vmapped


def _check_dims_tree(dims, what):
    leaves, _ = tree_flatten(dims)
    for d in leaves:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(f"vmap: {what} must be an int, None or a (nested) tuple / list / dict of them, got "
                             f"{dims!r}")


def _arg_names(func, n) -> list[str]:
    """A name per positional argument: the parameter's name when the signature tells it."""
    try:
        params = [p for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [f"'{params[i].name}' (argument {i})" if i < len(params) else f"argument {i}" for i in range(n)]


def _mapped_inputs(func, in_dims, args):
    """The flat args, their spec, the in_dim of each leaf (wrapped) and the batch size; errors name vmap
    and the argument."""
    if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
        raise ValueError(f"vmap: in_dims has {len(in_dims)} entries but the function was called with {len(args)} "
                         f"positional argument(s); in_dims must be an int, None, or have one entry per argument")
    leaves, spec = tree_flatten(tuple(args))
    dims = broadcast_prefix(tuple(in_dims) if isinstance(in_dims, list) else in_dims, spec, "vmap: in_dims") \
        if isinstance(in_dims, (tuple, list)) else [in_dims] * len(leaves)
    names = _arg_names(func, len(args))
    paths = leaf_paths(spec)
    size, first = None, None
    for i, (leaf, d, path) in enumerate(zip(leaves, dims, paths)):
        if d is None:
            continue
        where = _describe(names, path)
        if not isinstance(leaf, Tensor):
            raise ValueError(f"vmap: in_dim={d} for {where}, which is a {type(leaf).__name__}, not a Tensor: only "  # noqa: TRY004
                             f"tensors can be mapped; use None as its in_dim")
        ndim = leaf._meta.ndim
        if not -ndim <= d < ndim:
            raise ValueError(f"vmap: in_dim={d} for {where} is out of bounds for a tensor of {ndim} dimension(s)")
        d = dims[i] = d % ndim
        n = leaf._meta.shape[d]
        if size is None:
            size, first = n, (where, d)
        elif n != size:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got size "
                             f"{size} for {first[0]} (in_dim {first[1]}) and size {n} for {where} (in_dim {d})")
    if size is None:
        raise ValueError("vmap: at least one input must be mapped: in_dims is None for every tensor input")
    return leaves, spec, dims, size


def _describe(names, path) -> str:
    """``'x' (argument 0)`` or ``'params' (argument 1) at ['w']``, from the path ``[1]['w']``."""
    index = int(path[1:path.index("]")])
    rest = path[path.index("]") + 1:]
    return names[index] + (f" at {rest}" if rest else "")


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    leaves, spec, dims, size = _mapped_inputs(func, in_dims, args)
    if chunk_size is not None and chunk_size < size:
        return _chunked(func, in_dims, out_dims, randomness, chunk_size, leaves, spec, dims, size, kwargs)
    refusal = vmap_autograd.refusing_backward()  # Note [backward() inside vmap]
    level, token = _batched.enter_level(size, randomness)
    try:
        wrapped = [leaf if d is None else vmap_autograd.wrap_mapped_input(_move_to_front(leaf, d), level)
                   for leaf, d in zip(leaves, dims)]
        out = func(*tree_unflatten(wrapped, spec), **kwargs)
        return _unwrap_outputs(out, out_dims, level, size, randomness)
    finally:
        _batched.leave_level(token)
        if refusal is not None:
            refusal.remove()


def _move_to_front(t, d):
    if d == 0:
        return t
    return F.ops.transpose(t, perm=(d, *(i for i in range(t._meta.ndim) if i != d)))


def _move_from_front(t, d):
    if d == 0:
        return t
    perm = list(range(1, t._meta.ndim))
    perm.insert(d, 0)
    return F.ops.transpose(t, perm=tuple(perm))


def _unwrap_outputs(out, out_dims, level, size, randomness):
    leaves, spec = tree_flatten(out)
    dims = broadcast_prefix(out_dims, spec, "vmap: out_dims")
    result = []
    for i, (leaf, d) in enumerate(zip(leaves, dims)):
        if not isinstance(leaf, Tensor):
            raise ValueError(  # noqa: TRY004  (PyTorch's exception)
                f"vmap: `func` must only return Tensors, got type {type(leaf).__name__} for output {i}")
        value, batched = _batched.unwrap(leaf, level)
        if d is None:
            if batched:
                raise ValueError(f"vmap: out_dims is None for output {i}, but it differs per sample (it depends on "
                                 f"a mapped input); only outputs that do not can have out_dims None")
            result.append(leaf)
            continue
        if not batched:
            value = F.ops.expand(leaf, expand_shape=(size, *leaf._meta.shape))
        ndim = value._meta.ndim
        if not -ndim <= d < ndim:
            raise ValueError(f"vmap: out_dims={d} for output {i} is out of bounds for a result of {ndim} dim(s)")
        result.append(_move_from_front(value, d % ndim))
    vmap_autograd.attach(result, leaves, dims, level, size, randomness)
    return tree_unflatten(result, spec)


def _chunked(func, in_dims, out_dims, randomness, chunk_size, leaves, spec, dims, size, kwargs):
    """``func`` vmapped over ``chunk_size`` samples at a time, the outputs concatenated."""
    results = []
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        chunk = [leaf if d is None else F.narrow(leaf, d, start, n) for leaf, d in zip(leaves, dims)]
        chunk_args = tree_unflatten(chunk, spec)
        results.append(vmap(func, in_dims, out_dims, randomness)(*chunk_args, **kwargs))
    flat = [tree_flatten(r) for r in results]
    out_spec = flat[0][1]
    out_d = broadcast_prefix(out_dims, out_spec, "vmap: out_dims")
    merged = []
    for i, d in enumerate(out_d):
        parts = [f[0][i] for f in flat]
        merged.append(parts[0] if d is None else F.cat(parts, d))
    return tree_unflatten(merged, out_spec)
