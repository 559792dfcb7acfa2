"""``flow.utils.checkpoint``: activation checkpointing (PyTorch's ``torch.utils.checkpoint``) — run a segment
of the forward without keeping its intermediate activations and run it again during backward.

Note [Activation checkpointing]
``checkpoint(function, *args)`` is an ``autograd.Function``: its forward calls ``function`` under ``no_grad``
(saving only the arguments and, with ``preserve_rng_state``, the random generator's state); its backward
restores that state, calls ``function`` again with grad mode on, on fresh leaves holding the saved arguments, and
runs ``autograd.backward`` from the recomputed outputs: the arguments' gradients are returned, and the parameters
the function used receive theirs as a nested backward pass accumulates them into ``.grad``. That is PyTorch's
reentrant variant. ``use_reentrant=False`` takes the same path, except that the segment is recorded even when no
argument requires grad (an empty leaf joins the inputs), so parameters inside it still get gradients, and keyword
arguments are passed to ``function``; unlike PyTorch's saved-tensor-hook implementation, ``autograd.grad`` with
respect to a parameter used only inside a checkpoint sees no path (its gradient goes to ``.grad``).
"""

from __future__ import annotations

import contextlib
import warnings

from oneflow_lite.autograd.engine import backward as _backward
from oneflow_lite.autograd.function import Function
from oneflow_lite.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functional import empty
from oneflow_lite.random import get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential"]


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, run, preserve_rng_state, context_fn, kwargs, *args):
        ctx.run, ctx.preserve, ctx.context_fn, ctx.kwargs = run, preserve_rng_state, context_fn, kwargs
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.tensor_index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_index])
        forward_context, _ = context_fn()
        with no_grad(), forward_context:
            return run(*args, **kwargs)

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.args)
        leaves = []
        for i, saved in zip(ctx.tensor_index, ctx.saved_tensors):
            leaf = saved.detach().requires_grad_(saved.requires_grad)
            args[i] = leaf
            leaves.append(leaf)
        _, recompute_context = ctx.context_fn()
        rng = get_rng_state() if ctx.preserve else None
        try:
            if ctx.preserve:
                set_rng_state(ctx.rng_state)
            with enable_grad(), recompute_context:
                outputs = ctx.run(*args, **ctx.kwargs)
        finally:
            if ctx.preserve:
                set_rng_state(rng)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        grads_of_args = [None] * len(args)
        for i, leaf in zip(ctx.tensor_index, leaves):
            grads_of_args[i] = leaf.grad if leaf.requires_grad else None
        return (None, None, None, None, *grads_of_args)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its activations: recomputed in backward (Note [Activation
    checkpointing])."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint: determinism_check should be 'default' or 'none', got {determinism_check!r}")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        return _Checkpoint.apply(function, preserve_rng_state, context_fn, {}, *args)
    if not is_grad_enabled():
        return function(*args, **kwargs)
    anchor = _anchor(args)  # Note [Activation checkpointing]: the segment is recorded whatever its arguments
    return _Checkpoint.apply(_drop_last(function), preserve_rng_state, context_fn, kwargs, *args, anchor)


def _anchor(args):
    """An empty leaf requiring grad, so that the segment is recorded whatever its arguments."""
    device = next((a.device for a in args if isinstance(a, Tensor)), None)
    return empty(0, device=device).requires_grad_()


class _drop_last:
    """``function`` called without the trailing anchor argument."""

    __slots__ = ("function",)

    def __init__(self, function):
        self.function = function

    def __call__(self, *args, **kwargs):
        return self.function(*args[:-1], **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run the modules (or functions) ``functions`` in sequence, in ``segments`` chunks of which all but the last
    are checkpointed."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", stacklevel=2)
        use_reentrant = True
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(_run_range(functions, start, end), input, use_reentrant=use_reentrant, **kwargs)
    return _run_range(functions, end + 1, len(functions) - 1)(input)


def _run_range(functions, start, end):
    def forward(x):
        for j in range(start, end + 1):
            x = functions[j](x)
        return x
    return forward
